//! The gated event timer: host time spent while enqueueing does not count, and work that
//! waits on its own stream opens the gate at its limit rather than hanging. GPU tests:
//! they run only with `MEMTUNE_GPU_TESTS=1`.

use std::io::Write;
use std::time::{Duration, Instant};

use cudarc::driver::result;
use memtune::gpu::{self, Buffer, Context, GATE_LIMIT};
use memtune::MemoryKind;

const BYTES: usize = 64 << 20;
const HOST_DELAY: Duration = Duration::from_millis(5);

/// Enqueues a 64 MiB memset on `ctx`'s stream after `delay` of host time.
fn memset_after(ctx: &Context, buffer: &Buffer, delay: Duration) -> Result<(), gpu::Error> {
    std::thread::sleep(delay);
    // SAFETY: the buffer holds BYTES bytes and outlives the timing's synchronisation.
    unsafe { result::memset_d8_async(buffer.dptr(), 7, BYTES, ctx.stream().cu_stream()) }
        .map_err(gpu::cuda("cuMemsetD8Async"))
}

#[test]
fn the_gate_keeps_host_time_out_of_the_timing() {
    if !memtune_tests::gpu_tests_enabled("the_gate_keeps_host_time_out_of_the_timing") {
        return;
    }
    let ctx = Context::open(0).expect("open GPU 0");
    let buffer = Buffer::allocate(MemoryKind::Device, BYTES).expect("allocate");
    let _ = gpu::time_ms(ctx.stream(), || memset_after(&ctx, &buffer, Duration::ZERO));
    let plain = gpu::time_ms(ctx.stream(), || memset_after(&ctx, &buffer, HOST_DELAY))
        .expect("plain timing");
    let gated = gpu::time_gated_ms(ctx.stream(), || memset_after(&ctx, &buffer, HOST_DELAY))
        .expect("gated timing");
    let alone = gpu::time_gated_ms(ctx.stream(), || memset_after(&ctx, &buffer, Duration::ZERO))
        .expect("gated timing without delay");
    say(&format!(
        "64 MiB memset after 5 ms on the host: plain {plain:.3} ms, gated {:.3} ms; gated without the delay {:.3} ms",
        gated.ms, alone.ms
    ));
    assert!(gated.held && alone.held);
    assert!(
        plain >= 4.5,
        "the ungated time counts the host's 5 ms: {plain}"
    );
    assert!(
        gated.ms < 0.5 * plain,
        "the gated time {} counts the host's delay",
        gated.ms
    );
    assert!(
        gated.ms < 3.0 * alone.ms + 0.05,
        "{} against {}",
        gated.ms,
        alone.ms
    );
}

#[test]
fn work_waiting_on_its_own_stream_opens_the_gate_at_its_limit() {
    if !memtune_tests::gpu_tests_enabled(
        "work_waiting_on_its_own_stream_opens_the_gate_at_its_limit",
    ) {
        return;
    }
    let ctx = Context::open(0).expect("open GPU 0");
    let buffer = Buffer::allocate(MemoryKind::Device, BYTES).expect("allocate");
    let started = Instant::now();
    // A synchronous copy waits for the legacy stream, which the gate holds.
    let t = gpu::time_gated_ms(ctx.stream(), || {
        buffer.write(&[1u32; 1024])?;
        memset_after(&ctx, &buffer, Duration::ZERO)
    })
    .expect("a timing despite the wait");
    let took = started.elapsed();
    assert!(
        !t.held,
        "the gate cannot have been held through a synchronous copy"
    );
    assert!(
        took >= GATE_LIMIT && took < GATE_LIMIT * 20,
        "took {took:?}"
    );
    assert!(t.ms.is_finite() && t.ms > 0.0);
}

/// Written past libtest's capture, as the skip notices are, so the numbers show.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}
