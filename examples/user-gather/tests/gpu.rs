//! GPU tests of the gather: they run only with `MEMTUNE_GPU_TESTS=1`.

use memtune::MemoryKind;
use memtune_example_support::testing::{assert_stored_decision_times_nothing, gpu0_or_skip};
use user_gather::bench::{run_once, split, tune_checked, SLOTS};
use user_gather::gpu::Gpu;
use user_gather::{reference, Variant, SEED};

#[test]
fn gpu_sums_equal_the_cpu_reference_in_1_and_3_passes() {
    let Some(gpu) = gpu0_or_skip(
        "gpu_sums_equal_the_cpu_reference_in_1_and_3_passes",
        Gpu::new,
    ) else {
        return;
    };
    let mut sums = gpu.sums(SLOTS).expect("result slots");
    // An odd word count: the last of 3 scopes is shorter.
    let n_words = 1_000_003;
    for memory in [MemoryKind::Device, MemoryKind::Pinned] {
        let region = gpu.region(memory, 4 << 20).expect("a region");
        for variant in [
            Variant { reads: 64, work: 0 },
            Variant { reads: 16, work: 5 },
        ] {
            let cpu = reference::unscoped_sum(gpu.threads(), n_words, SEED, variant);
            for passes in [1, 3] {
                let plan = split(n_words, passes);
                assert_eq!(plan.passes, passes);
                let sum = run_once(&gpu, &region, n_words, &plan, variant, &mut sums)
                    .expect("the launch runs");
                assert_eq!(sum, cpu, "{memory} {variant:?}, {passes} passes");
            }
        }
    }
}

#[test]
fn a_stored_decision_times_nothing() {
    let Some(gpu) = gpu0_or_skip("a_stored_decision_times_nothing", Gpu::new) else {
        return;
    };
    let mut sums = gpu.sums(SLOTS).expect("result slots");
    let region = gpu.region(MemoryKind::Device, 64 << 20).expect("a region");
    let n_words = region.words();
    let variant = Variant { reads: 32, work: 2 };
    let untuned = split(n_words, 1);
    let expected = run_once(&gpu, &region, n_words, &untuned, variant, &mut sums).expect("runs");
    let uuid = gpu.identity().uuid.clone();
    let tunes = "tunes, every launch summing as untuned";
    assert_stored_decision_times_nothing(&uuid, tunes, |tuner| {
        tune_checked(tuner, &gpu, &region, n_words, variant, &mut sums, expected)
    });
}
