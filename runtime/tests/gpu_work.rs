//! The kernels' work knobs (`memtune_sampling_params::work`, `memtune_grouping_params::work`),
//! which `cargo tune bench` uses for its compute-heavy variants: a sampling sum with work
//! equals the CPU reference in every split, and a grouping with a heavier hash builds the
//! same groups as the plain one. GPU tests: they run only with `MEMTUNE_GPU_TESTS=1`.

use memtune::core::plan::{Approach, GroupingPlan, SamplingPlan};
use memtune::launch::Runtime;
use memtune::MemoryKind;
use memtune_kernels::params::SamplingParams;
use memtune_kernels::reference::sampling;

fn open() -> Runtime {
    match Runtime::open(0) {
        Ok(rt) => rt,
        Err(e) => panic!("opening GPU 0: {e}"),
    }
}

/// Reproducible words, never all zero.
fn words(n: usize, seed: u64) -> Vec<u32> {
    memtune_tests::xorshift64(seed)
        .take(n)
        .map(|x| (x >> 32) as u32)
        .collect()
}

#[test]
fn sampling_with_work_matches_the_cpu_reference_in_every_split() {
    if !memtune_tests::gpu_tests_enabled(
        "sampling_with_work_matches_the_cpu_reference_in_every_split",
    ) {
        return;
    }
    const N_WORDS: u64 = 3 << 20;
    let data = words(N_WORDS as usize, 0x51ed);
    let mut rt = open();
    let threads = rt.sampling_threads();
    for memory in [MemoryKind::Device, MemoryKind::Pinned] {
        let region = match rt.resident_words(memory, N_WORDS, &data) {
            Ok(r) => r,
            Err(e) => panic!("{memory} region: {e}"),
        };
        for work in [0, 3, 64] {
            let Ok(params) = SamplingParams::new(N_WORDS, 32, 0xfeed) else {
                panic!("valid params");
            };
            let params = params.with_work(work);
            let expected = sampling::pass_sum(&params, threads, |i| data[i as usize]);
            for passes in [1u32, 3, 8] {
                let plan = SamplingPlan {
                    scope_bytes: (N_WORDS * 4).div_ceil(u64::from(passes)),
                    passes,
                    predicted_speedup: 1.0,
                    reasons: vec![],
                };
                match rt.time_sampling(&region, params, &plan, 1) {
                    Ok((sum, _)) => {
                        assert_eq!(sum, expected, "{memory}, work {work}, {passes} passes")
                    }
                    Err(e) => panic!("{memory}, work {work}, {passes} passes: {e}"),
                }
            }
        }
    }
}

#[test]
fn grouping_with_a_heavier_hash_builds_the_same_groups() {
    if !memtune_tests::gpu_tests_enabled("grouping_with_a_heavier_hash_builds_the_same_groups") {
        return;
    }
    const N_KEYS: u64 = 1 << 20;
    const CAPACITY: u64 = 1 << 18;
    let keys: Vec<u32> = words(N_KEYS as usize, 0x9e37)
        .into_iter()
        .map(|k| k % (CAPACITY as u32 / 2))
        .collect();
    let mut rt = open();
    let input = match rt.resident_words(MemoryKind::Pinned, N_KEYS, &keys) {
        Ok(r) => r,
        Err(e) => panic!("input: {e}"),
    };
    let table = CAPACITY * 8;
    let plans = [
        (Approach::Unscoped, 1u32),
        (Approach::Naive, 4),
        (Approach::Copy, 4),
    ];
    let mut digests = Vec::new();
    for memory in [MemoryKind::Device, MemoryKind::Pinned] {
        for work in [0u32, 16] {
            for &(approach, passes) in &plans {
                let plan = GroupingPlan {
                    scope_bytes: table / u64::from(passes),
                    passes,
                    approach,
                    reasons: vec![],
                };
                match rt.time_grouping(&input, CAPACITY, &plan, memory, work, 1) {
                    Ok((d, _)) => digests.push((d.groups, d.keys, d.hash)),
                    Err(e) => panic!("{memory}, work {work}, {approach:?}: {e}"),
                }
            }
        }
    }
    // The GPU's digest of the table equals the CPU's digest of the reference groups.
    let mut counts = std::collections::HashMap::<u32, u64>::new();
    for &k in &keys {
        *counts.entry(k).or_default() += 1;
    }
    let hash = counts.iter().fold(0u64, |h, (&k, &c)| {
        h.wrapping_add(memtune_kernels::digest::mix64(u64::from(k)).wrapping_mul(c))
    });
    assert_eq!(digests[0], (counts.len() as u64, N_KEYS, hash));
    assert!(digests.iter().all(|d| *d == digests[0]), "{digests:?}");
}
