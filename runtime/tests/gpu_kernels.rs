//! The runtime's tuned launches against the CPU references in
//! `memtune_kernels::reference`: sampling sums and grouping counts exactly, stencil
//! results bit for bit. GPU tests: they run only with `MEMTUNE_GPU_TESTS=1`.

use memtune::core::plan::{Approach, Dtype, GroupingPlan, SamplingPlan, StencilPlan, Variant};
use memtune::launch::{grouping_capacity, Runtime, StencilSweep};
use memtune::MemoryKind;
use memtune_kernels::params::{scopes, SamplingParams, StencilParams, EMPTY_KEY};
use memtune_kernels::reference::{grouping, sampling, stencil};

/// xorshift64: reproducible, never zero from a non-zero seed.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn word(&mut self) -> u32 {
        (self.next() >> 32) as u32
    }
}

fn open() -> Runtime {
    match Runtime::open(0) {
        Ok(rt) => rt,
        Err(e) => panic!("opening GPU 0: {e}"),
    }
}

fn sampling_plan(scope_bytes: u64, passes: u32) -> SamplingPlan {
    SamplingPlan {
        scope_bytes,
        passes,
        predicted_speedup: 1.0,
        reasons: vec![],
    }
}

#[test]
fn sampling_sums_match_the_cpu_reference() {
    if !memtune_tests::gpu_tests_enabled("sampling_sums_match_the_cpu_reference") {
        return;
    }
    const REGION_BYTES: u64 = 64 << 20;
    const READS: u32 = 16;
    const SEED: u64 = 0x00c0_ffee_1234_5678;
    let n_words = REGION_BYTES / 4;
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let data: Vec<u32> = (0..n_words).map(|_| rng.word()).collect();
    assert!(data.iter().any(|&w| w != 0));

    let mut rt = open();
    let threads = rt.sampling_threads();
    let params = SamplingParams::new(n_words, READS, SEED).expect("valid sampling params");
    let word = |i: u64| data[i as usize];
    let expected = sampling::pass_sum(&params, threads, word);
    assert_ne!(expected, 0);

    // Scopes in bytes; 4 x 4194305 words and 7 x 2396746 words do not divide 2^24 words.
    let plans = [
        ("unscoped", sampling_plan(REGION_BYTES, 1)),
        ("4 even", sampling_plan(REGION_BYTES / 4, 4)),
        ("4 uneven", sampling_plan((n_words / 4 + 1) * 4, 4)),
        ("7 uneven", sampling_plan(n_words.div_ceil(7) * 4, 7)),
    ];
    // The reference's own scoped model over the 7 uneven scopes: the same sum.
    let seven = scopes(n_words, n_words.div_ceil(7)).expect("scopes");
    assert_eq!(seven.len(), 7);
    assert_eq!(
        sampling::scoped_sum(&params, threads, &seven, word),
        Ok(expected)
    );

    for memory in [MemoryKind::Device, MemoryKind::Pinned] {
        for (name, plan) in &plans {
            let got = rt.sampling(&data, READS, SEED, plan, memory);
            match got {
                Ok(sum) => assert_eq!(
                    sum, expected,
                    "{name} ({} passes) over {memory} memory",
                    plan.passes
                ),
                Err(e) => panic!("{name} over {memory} memory: {e}"),
            }
        }
    }
}

#[test]
fn grouping_counts_match_the_cpu_reference() {
    if !memtune_tests::gpu_tests_enabled("grouping_counts_match_the_cpu_reference") {
        return;
    }
    const N_KEYS: usize = 1 << 20;
    const DISTINCT: usize = 50_000;
    let mut rng = XorShift(0x1234_5678_9abc_def1);
    // 49 999 random values other than the sentinel, plus the sentinel a few times.
    let mut values: Vec<u32> = Vec::with_capacity(DISTINCT);
    let mut seen = std::collections::HashSet::new();
    while values.len() < DISTINCT - 1 {
        let v = rng.word();
        if v != EMPTY_KEY && seen.insert(v) {
            values.push(v);
        }
    }
    let mut keys: Vec<u32> = (0..N_KEYS)
        .map(|_| values[(rng.next() % values.len() as u64) as usize])
        .collect();
    for i in [0, 17, 4_099, N_KEYS / 2, N_KEYS - 1] {
        keys[i] = EMPTY_KEY;
    }
    let expected: Vec<(u32, u64)> = grouping::group_counts(&keys).into_iter().collect();
    assert_eq!(expected.len(), DISTINCT);

    let distinct = Some(DISTINCT as u64);
    let capacity = grouping_capacity(N_KEYS as u64, distinct).expect("capacity");
    let scoped = |approach| GroupingPlan {
        // 3 scopes, the last one shorter: 131072 = 43691 + 43691 + 43690 buckets.
        scope_bytes: capacity.div_ceil(3) * 8,
        passes: 3,
        approach,
        reasons: vec![],
    };
    let plans = [
        GroupingPlan {
            scope_bytes: capacity * 8,
            passes: 1,
            approach: Approach::Unscoped,
            reasons: vec![],
        },
        scoped(Approach::Naive),
        scoped(Approach::Copy),
    ];

    let mut rt = open();
    for input in [MemoryKind::Device, MemoryKind::Pinned] {
        for plan in &plans {
            let got = rt.grouping(&keys, distinct, plan, MemoryKind::Device, input);
            match got {
                Ok(groups) => assert!(
                    groups == expected,
                    "{:?} ({} passes), input in {input} memory: {} groups, {} expected",
                    plan.approach,
                    plan.passes,
                    groups.len(),
                    expected.len()
                ),
                Err(e) => panic!("{:?}, input in {input} memory: {e}", plan.approach),
            }
        }
    }
}

fn stencil_plans() -> Vec<StencilPlan> {
    let plan = |variant, block| StencilPlan {
        variant,
        block,
        staging: variant != Variant::Plain,
        reasons: vec![],
    };
    // One block per variant that divides 64 x 48 x 40, one that does not (streaming: lanes
    // past the row's end stay idle).
    vec![
        plan(Variant::Plain, [32, 4, 2]),
        plan(Variant::Plain, [24, 5, 3]),
        plan(Variant::Staged, [32, 4, 4]),
        plan(Variant::Staged, [16, 6, 3]),
        // Thinner than the halo of radius 2 along y: each thread loads two halo rows.
        plan(Variant::Staged, [32, 1, 2]),
        plan(Variant::Streaming, [32, 4, 1]),
        plan(Variant::Streaming, [64, 5, 1]),
    ]
}

const DIMS: [u32; 3] = [64, 48, 40];

/// Every plan of [`stencil_plans`] at radius 1 and 2, 1 and 6 repeats, against the CPU
/// reference, bit for bit.
fn check_stencil<T: stencil::Element + memtune::launch::StencilElement>(
    rt: &mut Runtime,
    name: &str,
    input: &[T],
) {
    for (repeats, radius) in [(1, 1), (6, 1), (1, 2), (6, 2)] {
        let params = StencilParams::new(DIMS[0], DIMS[1], DIMS[2], repeats)
            .and_then(|p| p.with_radius(radius))
            .expect("params");
        let expected = stencil::sweep(input, &params).expect("reference");
        for plan in stencil_plans() {
            let what = format!(
                "{name} {:?} {:?} x{repeats} radius {radius}",
                plan.variant, plan.block
            );
            let got = match rt.stencil_star(input, DIMS, repeats, radius, &plan) {
                Ok(out) => out,
                Err(e) => panic!("{what}: {e}"),
            };
            if let Some(i) = stencil::first_difference(&expected, &got) {
                let (x, y, z) = (i % 64, (i / 64) % 48, i / (64 * 48));
                panic!(
                    "{what}: cell {i} ({x}, {y}, {z}) is {:?}, the reference {:?}",
                    got.get(i),
                    expected.get(i)
                );
            }
        }
    }
}

#[test]
fn stencil_results_are_bitwise_equal_to_the_cpu_reference() {
    if !memtune_tests::gpu_tests_enabled("stencil_results_are_bitwise_equal_to_the_cpu_reference") {
        return;
    }
    let cells = DIMS.iter().map(|&d| d as usize).product::<usize>();
    let mut rng = XorShift(0x5eed_0000_0003);
    // Uniform in [-1, 1): mixed signs, so additions round.
    let unit = |rng: &mut XorShift| (rng.next() >> 11) as f64 / (1u64 << 52) as f64 - 1.0;
    let f64s: Vec<f64> = (0..cells).map(|_| unit(&mut rng)).collect();
    let f32s: Vec<f32> = (0..cells).map(|_| unit(&mut rng) as f32).collect();

    let mut rt = open();
    check_stencil(&mut rt, "f32", &f32s);
    check_stencil(&mut rt, "f64", &f64s);
    // The 7-point entry points are radius 1.
    let plan = &stencil_plans()[0];
    let star = rt.stencil_star(&f32s, DIMS, 1, 1, plan).expect("radius 1");
    assert_eq!(rt.stencil_f32(&f32s, DIMS, 1, plan).ok(), Some(star));
}

#[test]
fn bad_arguments_fail_before_any_gpu_work() {
    // No GPU needed: the same checks Runtime's methods make first.
    use memtune::launch::{sampling_scopes, stencil_launch, LaunchError};
    let plan = StencilPlan {
        variant: Variant::Plain,
        block: [32, 4, 2],
        staging: false,
        reasons: vec![],
    };
    assert!(matches!(
        stencil_launch(DIMS, 10, 1, &plan, 4, 1),
        Err(LaunchError::BadSize(_))
    ));
    assert!(matches!(
        sampling_scopes(1 << 20, &sampling_plan(1 << 20, 0)),
        Err(LaunchError::BadPlan(_))
    ));
}

/// The timed stencil's digest is computed on the GPU: it must equal the CPU digest of the
/// reference output's bits (and so tell outputs apart as a readback would).
#[test]
fn timed_stencil_digest_matches_the_cpu_digest_of_the_reference() {
    if !memtune_tests::gpu_tests_enabled(
        "timed_stencil_digest_matches_the_cpu_digest_of_the_reference",
    ) {
        return;
    }
    let cells = DIMS.iter().map(|&d| d as usize).product::<usize>();
    let mut rng = XorShift(0x5eed_0000_0004);
    let input: Vec<f32> = (0..cells).map(|_| rng.word() as f32 / 4e9 + 0.5).collect();
    let mut rt = open();
    let resident = rt.resident_f32(&input).expect("upload");
    for (repeats, radius) in [(1, 1), (6, 1), (1, 2)] {
        let params = StencilParams::new(DIMS[0], DIMS[1], DIMS[2], repeats)
            .and_then(|p| p.with_radius(radius))
            .expect("params");
        let expected = stencil::sweep(&input, &params).expect("reference");
        let words: Vec<u32> = expected.iter().map(|v| v.to_bits()).collect();
        let want = memtune_kernels::digest::words(&words);
        for plan in stencil_plans() {
            let sweep = StencilSweep {
                dims: DIMS,
                repeats,
                radius,
            };
            let (got, _) = rt
                .time_stencil(&resident, Dtype::F32, sweep, &plan, 1)
                .unwrap_or_else(|e| panic!("{:?} {:?}: {e}", plan.variant, plan.block));
            assert_eq!(
                got, want,
                "{:?} {:?} x{repeats} radius {radius}: GPU digest differs from the reference's",
                plan.variant, plan.block
            );
        }
    }
}
