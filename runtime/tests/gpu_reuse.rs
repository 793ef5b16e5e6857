//! exact-gpu against the sequential CPU analysis: the same histogram for traces of every
//! shape the kernels treat apart (one tile, part tiles, many merge levels, one item, no
//! reuse), on one GPU and cut into parts (GPU 0 twice stands for two GPUs; every visible
//! GPU too), and a trace long enough to go up through the pinned buffers in several chunks,
//! the last one part full. GPU tests: they run only with `MEMTUNE_GPU_TESTS=1`.

use memtune::core::reuse::{analyze_slice, Histogram, Mode, Options};
use memtune::reuse::analyze;

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
    out
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
                Ok(got) => assert_eq!(got.histogram, want, "{name} on {ordinals:?}"),
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
    // parts each still does.
    let trace = xorshift(11, (9 << 20) + 123, 1 << 21);
    let want = exact(&trace);
    for ordinals in [vec![0], vec![0, 0]] {
        match analyze(&trace, &ordinals) {
            Ok(got) => assert_eq!(got.histogram, want, "on {ordinals:?}"),
            Err(e) => panic!("on {ordinals:?}: {e}"),
        }
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
