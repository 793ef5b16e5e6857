//! GPU tests of the gather: they run only with `MEMTUNE_GPU_TESTS=1`.

use memtune::autotune::{Autotuner, Mode};
use memtune::core::tune::DecisionStore;
use memtune::{MemoryKind, PlanSource};
use memtune_example_support::testing::{gpu0, gpu_tests};
use user_gather::bench::{run_once, split, tune_checked, SLOTS};
use user_gather::gpu::Gpu;
use user_gather::{reference, Variant, SEED};

fn open() -> Gpu {
    let (identity, stream) = gpu0();
    Gpu::new(identity, stream).expect("the kernel compiles and loads")
}

#[test]
fn gpu_sums_equal_the_cpu_reference_in_1_and_3_passes() {
    if !gpu_tests("gpu_sums_equal_the_cpu_reference_in_1_and_3_passes") {
        return;
    }
    let gpu = open();
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
    if !gpu_tests("a_stored_decision_times_nothing") {
        return;
    }
    let gpu = open();
    let mut sums = gpu.sums(SLOTS).expect("result slots");
    let region = gpu.region(MemoryKind::Device, 64 << 20).expect("a region");
    let n_words = region.words();
    let variant = Variant { reads: 32, work: 2 };
    let untuned = split(n_words, 1);
    let expected = run_once(&gpu, &region, n_words, &untuned, variant, &mut sums).expect("runs");
    let dir = tempfile::tempdir().expect("a temporary folder");
    let store = DecisionStore::new(Some(dir.path().to_path_buf()), None);
    let profile = memtune::core::default::builtin();
    let uuid = gpu.identity().uuid.clone();
    let tuner = |mode| Autotuner::new(profile.clone(), &uuid, store.clone(), mode);
    let first = tune_checked(
        &tuner(Mode::Always),
        &gpu,
        &region,
        n_words,
        variant,
        &mut sums,
        expected,
    )
    .expect("tunes, every launch summing as untuned");
    assert!(first.launches > 0);
    assert_eq!(first.tuned.source, PlanSource::Tuned);
    let second = tune_checked(
        &tuner(Mode::Auto),
        &gpu,
        &region,
        n_words,
        variant,
        &mut sums,
        expected,
    )
    .expect("finds the decision");
    assert_eq!(second.launches, 0);
    assert!(
        matches!(second.tuned.source, PlanSource::Stored(_)),
        "{}",
        second.tuned.source
    );
    assert_eq!(second.tuned.plan, first.tuned.plan);
}
