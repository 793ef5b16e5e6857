//! The macros' compile-time plans: for the simulated K80 and P100 profiles of
//! `tests/fixtures/` they differ, and each equals the untimed plan (what `cargo tune plan`
//! decides without timing) for that profile; the stamp names the profile; raw values are the profile's.

use memtune::core::plan::grouping::Approach;
use memtune::core::plan::stencil;
use memtune::core::store;
use memtune::{GroupingConsts, ProfileStamp, SamplingConsts, StencilConsts};
use std::path::PathBuf;

const K80_SAMPLE: SamplingConsts =
    memtune::sampling_plan!(region = 8 GiB, memory = device, profile = "fixtures/k80.json");
const P100_SAMPLE: SamplingConsts = memtune::sampling_plan!(
    region = 8GiB,
    memory = device,
    profile = "fixtures/p100.json"
);
const K80_GROUP: GroupingConsts = memtune::grouping_plan!(
    table = 8 GiB,
    table_memory = device,
    input_memory = pinned,
    profile = "fixtures/k80.json"
);
const P100_GROUP: GroupingConsts = memtune::grouping_plan!(
    table_memory = device,
    input_memory = pinned,
    table = 8192 MiB,
    profile = "fixtures/p100.json"
);
const K80_STENCIL: StencilConsts = memtune::stencil_plan!(
    dims = 512x512x512,
    dtype = f32,
    repeats = 6,
    profile = "fixtures/k80.json"
);
const K80_STAMP: ProfileStamp = memtune::profile_stamp!(profile = "fixtures/k80.json");

fn fixture(name: &str) -> (PathBuf, memtune::Profile) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name);
    let profile = store::load_path(&path).expect("fixture profile");
    (path, profile)
}

#[test]
fn sampling_constants_are_the_planners_decision_for_each_profile() {
    let (_, k80) = fixture("k80.json");
    let (_, p100) = fixture("p100.json");
    assert_eq!(K80_SAMPLE.workload.region_bytes, 8 << 30);
    assert_eq!(K80_SAMPLE.workload.reads_per_thread, 64);
    let k80_plan = memtune::core::plan::sampling_untimed(&k80, &K80_SAMPLE.workload).unwrap();
    let p100_plan = memtune::core::plan::sampling_untimed(&p100, &P100_SAMPLE.workload).unwrap();
    assert!(K80_SAMPLE == k80_plan, "{K80_SAMPLE:?} vs {k80_plan:?}");
    assert!(P100_SAMPLE == p100_plan, "{P100_SAMPLE:?} vs {p100_plan:?}");
    assert_eq!(K80_SAMPLE.reasons, k80_plan.reasons.as_slice());
    // The two GPUs' TLBs differ: so do the predicted gains of scoping.
    assert_ne!(K80_SAMPLE.predicted_speedup, P100_SAMPLE.predicted_speedup);
    assert!(K80_SAMPLE != p100_plan);
}

#[test]
fn grouping_constants_differ_between_k80_and_p100() {
    let (_, k80) = fixture("k80.json");
    let (_, p100) = fixture("p100.json");
    assert_eq!(K80_GROUP.workload, P100_GROUP.workload);
    assert!(K80_GROUP == memtune::core::plan::grouping_untimed(&k80, &K80_GROUP.workload).unwrap());
    assert!(
        P100_GROUP == memtune::core::plan::grouping_untimed(&p100, &P100_GROUP.workload).unwrap()
    );
    assert_ne!(
        (K80_GROUP.passes, K80_GROUP.approach),
        (P100_GROUP.passes, P100_GROUP.approach)
    );
    assert!(K80_GROUP.passes > 1 && K80_GROUP.approach != Approach::Unscoped);
}

#[test]
fn stencil_constants_and_stamp() {
    let (path, k80) = fixture("k80.json");
    assert!(K80_STENCIL == stencil::plan(&k80, &K80_STENCIL.workload).unwrap());
    assert_eq!(K80_STENCIL.workload.dims, [512, 512, 512]);
    assert_eq!(K80_STAMP, K80_SAMPLE.profile);
    assert_eq!(K80_STAMP.uuid, k80.device.uuid);
    assert_eq!(K80_STAMP.digest, k80.digest);
    assert_eq!(K80_STAMP.name, k80.device.name);
    assert_eq!(K80_STAMP.sm_count, k80.device.sm_count);
    assert_eq!(K80_STAMP.source, "argument");
    let stamp = K80_STAMP;
    assert!(stamp.simulated, "the fixture is simulated: {stamp}");
    assert!(K80_STAMP.is(&k80));
    let stamped = PathBuf::from(K80_STAMP.path.expect("a file"));
    assert_eq!(stamped, path.canonicalize().unwrap());
    assert_ne!(P100_SAMPLE.profile.digest, K80_STAMP.digest);
}

#[test]
fn raw_values_are_the_profiles() {
    let (_, k80) = fixture("k80.json");
    const REACH: u64 = memtune::profile_value!(
        tlb_reach,
        memory = device,
        level = 1,
        profile = "fixtures/k80.json"
    );
    const PAGE: u64 = memtune::profile_value!(
        tlb_page,
        memory = device,
        level = 2,
        profile = "fixtures/k80.json"
    );
    const LEVELS: u32 =
        memtune::profile_value!(tlb_levels, memory = device, profile = "fixtures/k80.json");
    const MEMORY: u64 = memtune::profile_value!(global_memory_bytes, profile = "fixtures/k80.json");
    let tlb = k80
        .tlb
        .device
        .measured()
        .expect("the simulator measures device TLBs");
    assert_eq!(REACH, tlb.levels[0].reach_bytes);
    assert_eq!(PAGE, tlb.levels[1].page_bytes);
    assert_eq!(LEVELS as usize, tlb.levels.len());
    assert_eq!(MEMORY, k80.device.global_memory_bytes);
}

#[test]
fn measured_cache_sizes_are_the_largest_level_of_each_path() {
    // The H100 probed on 2026-11-22: L1 238 KiB at the largest carveout, whole L2 48 MiB.
    const L1: u64 = memtune::profile_value!(
        measured_l1_bytes,
        profile = "fixtures/h100/GPU-f4206410-7d8e-7295-3161-88483002f40c.json"
    );
    const L2: u64 = memtune::profile_value!(
        measured_l2_bytes,
        profile = "fixtures/h100/GPU-f4206410-7d8e-7295-3161-88483002f40c.json"
    );
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/h100/GPU-f4206410-7d8e-7295-3161-88483002f40c.json");
    let profile = store::load_path(&path).expect("the committed H100 profile");
    let caches = profile.caches.measured().expect("caches measured");
    use memtune::core::profile::CachePath;
    let largest = |path: CachePath| {
        caches
            .levels
            .iter()
            .filter(|l| l.path == path)
            .map(|l| l.size_bytes)
            .max()
    };
    assert_eq!(Some(L1), largest(CachePath::L1));
    assert_eq!(Some(L2), largest(CachePath::L2));
    assert!(L1 < L2 && L2 < profile.device.l2_bytes * 2, "{L1} {L2}");
}

/// `embedded_decisions!()` of a crate without `.memtune/decisions/` embeds nothing, and the
/// store built on it finds nothing.
#[test]
fn embedded_decisions_of_a_crate_without_any_are_empty() {
    let files: &[(&str, &str)] = memtune::embedded_decisions!();
    assert!(files.is_empty());
    let store = memtune::core::tune::DecisionStore::default().with_embedded(files.iter().copied());
    assert!(store.list().is_empty());
}
