//! exact-gpu against the sequential CPU analysis: the same histogram for traces of every
//! shape the kernels treat apart (one radix or sort tile, part tiles, tiles and a few
//! entries, many merge levels, one item, no reuse, items differing in every bit, only in
//! high or low bits, in two far fields), on one GPU and cut into parts (GPU 0 twice stands
//! for two GPUs; every visible GPU too), and traces long enough to go up through the
//! pinned buffers in several chunks, the last one part full, packed as 32-bit offsets or
//! not. Each part's radix passes are
//! those the CPU model takes for its items. GPU tests: they run only with
//! `MEMTUNE_GPU_TESTS=1`.

use memtune::core::reuse::nextuse::part_bounds;
use memtune::core::reuse::radix::{digit_shifts, varying_bits};
use memtune::core::reuse::{analyze_slice, Histogram, Mode, Options};
use memtune::reuse::{analyze, GpuAnalysis};

fn xorshift(seed: u64, n: usize, items: u64) -> Vec<u64> {
    memtune_tests::xorshift64(seed)
        .take(n)
        // Addresses 64 bytes apart, as a trace at line granularity looks.
        .map(|x| (x % items) * 64 + 0x7f00_0000_0000)
        .collect()
}

fn exact(trace: &[u64]) -> Histogram {
    match analyze_slice(trace, Mode::ExactCpu, &Options::default()) {
        Ok(h) => h,
        Err(e) => panic!("exact-cpu: {e}"),
    }
}

fn traces() -> Vec<(String, Vec<u64>)> {
    let mut out = vec![
        ("one reference".to_string(), vec![7]),
        ("one item".to_string(), vec![7; 5000]),
        ("no reuse".to_string(), (0..3000u64).collect()),
    ];
    for (n, items) in [
        (1024, 100),
        (1000, 10),
        (3333, 3000),
        (200_000, 1 << 12),
        (1 << 20, 1 << 18),
    ] {
        out.push((
            format!("{n} refs over {items} items"),
            xorshift(n as u64 + 1, n, items),
        ));
    }
    // A loop: every reuse at distance items - 1.
    out.push((
        "cyclic".to_string(),
        (0..100_000u64).map(|i| i % 777).collect(),
    ));
    // Around a tile of the radix sort and of the shared-memory sort of next uses (4096),
    // and over several of them.
    for n in [4095, 4096, 4097, 3 * 4096 + 5, 8191, 8193] {
        out.push((
            format!("{n} refs, tile edges"),
            xorshift(n as u64 + 7, n, 1500),
        ));
    }
    let random = |seed, n, items| -> Vec<u64> {
        xorshift(seed, n, items)
            .into_iter()
            .map(|x| x.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .collect()
    };
    // Items differing in all 64 bits: eight radix passes, many merge levels.
    out.push((
        "random 64-bit items".to_string(),
        random(3, 300_000, 50_000),
    ));
    out.push((
        "only the top bits differ".to_string(),
        xorshift(4, 50_000, 1 << 20)
            .into_iter()
            .map(|x| (((x >> 6) % 5) << 61) | 0x1234)
            .collect(),
    ));
    out.push((
        "only the low bits differ".to_string(),
        xorshift(5, 20_000, 1 << 20)
            .into_iter()
            .map(|x| 0xffff_0000_0000_0000 | ((x >> 6) % 13))
            .collect(),
    ));
    out.push((
        "two far fields".to_string(),
        xorshift(6, 70_000, 1 << 20)
            .into_iter()
            .map(|x| (((x >> 6) % 7) << 50) | ((x >> 12) % 300))
            .collect(),
    ));
    out.push(("one item, many tiles".to_string(), vec![0xabc; 20_000]));
    out
}

/// Each part's radix passes are those of the CPU model for its items.
fn check_passes(trace: &[u64], got: &GpuAnalysis, what: &str) {
    let bounds = part_bounds(trace.len(), got.parts.len());
    assert_eq!(bounds.len(), got.parts.len(), "{what}: parts");
    for (part, range) in got.parts.iter().zip(bounds) {
        let want = digit_shifts(varying_bits(&trace[range])).len();
        assert_eq!(part.radix_passes, want, "{what}: radix passes");
    }
}

#[test]
fn exact_gpu_equals_exact_cpu_on_one_gpu_and_in_parts() {
    if !memtune_tests::gpu_tests_enabled("exact_gpu_equals_exact_cpu_on_one_gpu_and_in_parts") {
        return;
    }
    let all: Vec<usize> = match memtune::device::list() {
        Ok(ids) => (0..ids.len()).collect(),
        Err(e) => panic!("listing GPUs: {e}"),
    };
    for (name, trace) in traces() {
        let want = exact(&trace);
        for ordinals in [vec![0], vec![0, 0], vec![0, 0, 0], all.clone()] {
            match analyze(&trace, &ordinals) {
                Ok(got) => {
                    assert_eq!(got.histogram, want, "{name} on {ordinals:?}");
                    check_passes(&trace, &got, &format!("{name} on {ordinals:?}"));
                }
                Err(e) => panic!("{name} on {ordinals:?}: {e}"),
            }
        }
    }
}

#[test]
fn exact_gpu_equals_exact_cpu_through_the_pinned_upload() {
    if !memtune_tests::gpu_tests_enabled("exact_gpu_equals_exact_cpu_through_the_pinned_upload") {
        return;
    }
    // Two 32 MiB chunks of references and part of a third: one GPU takes the ring; as two
    // parts each still does. Chunks whose items lie within 2^31 of the first go up as
    // 32-bit offsets and are widened on the GPU; one item 2^60 away sends its chunk, and
    // every chunk after it, as it is: in the last chunk, then in the first. The differing
    // bits are reduced chunk by chunk, so that item adds a pass. The counts come back
    // through the ring too.
    for far in [(9 << 20) + 118, 100] {
        let mut trace = xorshift(11 + far as u64, (9 << 20) + 123, 1 << 21);
        trace[far] |= 1 << 60;
        let want = exact(&trace);
        for ordinals in [vec![0], vec![0, 0]] {
            let what = format!("item {far} far, on {ordinals:?}");
            match analyze(&trace, &ordinals) {
                Ok(got) => {
                    assert_eq!(got.histogram, want, "{what}");
                    check_passes(&trace, &got, &what);
                }
                Err(e) => panic!("{what}: {e}"),
            }
        }
    }
    // A loop over 9 Mi items, twice: every reuse at distance 9 Mi - 1, so the counts
    // coming back (one word a distance) fill more than one 32 MiB buffer of the ring.
    let items = 9u64 << 20;
    let cycle: Vec<u64> = (0..2 * items).map(|i| (i % items) * 64).collect();
    let want = exact(&cycle);
    match analyze(&cycle, &[0]) {
        Ok(got) => assert_eq!(got.histogram, want, "a loop over 9 Mi items"),
        Err(e) => panic!("a loop over 9 Mi items: {e}"),
    }
}

#[test]
fn exact_gpu_refuses_a_missing_gpu_with_a_named_error() {
    if !memtune_tests::gpu_tests_enabled("exact_gpu_refuses_a_missing_gpu_with_a_named_error") {
        return;
    }
    let err = analyze(&[1, 2, 1], &[0, 999]).err().map(|e| e.to_string());
    assert!(
        err.as_deref().is_some_and(|e| e.contains("GPU 999")),
        "{err:?}"
    );
}

#[test]
fn the_gpu_replay_is_fast_on_a_cached_loop_and_slow_on_random_gigabytes() {
    if !memtune_tests::gpu_tests_enabled(
        "the_gpu_replay_is_fast_on_a_cached_loop_and_slow_on_random_gigabytes",
    ) {
        return;
    }
    use memtune::reuse::replay::replay;
    // 64 lines of one 8 KiB region, 1000 times: L1 hits after the first round.
    let hot: Vec<u64> = (0..1000)
        .flat_map(|_| (0..64u64).map(|i| 0x1000 + 128 * i))
        .collect();
    // 200 000 words drawn over 1 GiB: almost every load misses the caches.
    let cold = xorshift(7, 200_000, (1 << 30) / 64);
    let (h, c) = match (replay(0, &hot), replay(0, &cold)) {
        (Ok(h), Ok(c)) => (h, c),
        (h, c) => panic!("replay: {:?} {:?}", h.err(), c.err()),
    };
    assert_eq!(h.loads, 64_000);
    assert!(
        h.mean_cycles > 0.0 && h.mean_cycles < 100.0,
        "L1-resident loop: {h:?}"
    );
    assert!(
        c.mean_cycles > 3.0 * h.mean_cycles,
        "random over 1 GiB: {c:?} against {h:?}"
    );
}
