//! The planners on profiles the real probe measures from the simulated P100 and K80, against
//! what seed 000 (Karnagel et al., DaMoN'17) §6 found worked on those GPUs. The statements
//! and quotes mirror `runtime/core/tests/plan_seed000.rs`, which checks them on hand-built
//! profiles; here the TLB levels and the random-access curve come from `probe_tlb` on
//! `Simulator::new(SimConfig::builtin(..))`, put into a profile as `cargo tune --simulate`
//! does (`tuner/cli/src/cli/probe.rs::apply`, `tuner/cli/src/cli/commands.rs::simulated_identity`).

use memtune_core::plan::{grouping, sampling, Approach, GroupingWorkload, SamplingWorkload};
use memtune_core::profile::{MemoryKind, Profile, Provenance, Section};
use memtune_probe::sim::{KindConfig, SimConfig, Simulator, TlbLevelConfig};
use memtune_probe::{probe_tlb, NoProgress, ProbeOptions};
use std::collections::BTreeMap;
use std::sync::OnceLock;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// Probes `config` with the default options (noise as the file gives it) and builds the
/// profile the CLI would write.
fn profile_of(config: SimConfig) -> Profile {
    let mut sim = Simulator::new(config);
    let result = probe_tlb(&mut sim, &ProbeOptions::default(), &mut NoProgress);
    let provenance = Provenance {
        memtune_version: "test".to_string(),
        probe_version: 1,
        created_at: "2017-05-15T00:00:00Z".to_string(),
        duration_seconds: 0.0,
        options: BTreeMap::new(),
        simulator: Some(sim.config().name.clone()),
    };
    let mut profile = Profile::identity_only(sim.identity(), provenance);
    profile.tlb = result.tlb_sections();
    profile.random_access = result.random_access_sections();
    assert!(
        matches!(profile.tlb.device, Section::Measured(_))
            && matches!(profile.random_access.device, Section::Measured(_)),
        "{:#?}",
        result
    );
    profile
}

fn p100() -> &'static Profile {
    static P: OnceLock<Profile> = OnceLock::new();
    P.get_or_init(|| profile_of(SimConfig::builtin("p100").unwrap()))
}

/// The P100 without measurement noise: for the one statement whose number the noise moves
/// (see `p100_sixteen_gb_in_two_gb_scopes_is_twice_as_fast`).
fn quiet_p100() -> &'static Profile {
    static P: OnceLock<Profile> = OnceLock::new();
    P.get_or_init(|| {
        let mut config = SimConfig::builtin("p100").unwrap();
        config.noise = Default::default();
        profile_of(config)
    })
}

fn k80() -> &'static Profile {
    static P: OnceLock<Profile> = OnceLock::new();
    P.get_or_init(|| profile_of(SimConfig::builtin("k80").unwrap()))
}

fn sample(profile: &Profile, region_bytes: u64) -> sampling::SamplingPlan {
    let w = SamplingWorkload {
        region_bytes,
        memory: MemoryKind::Device,
        reads_per_thread: 1024,
    };
    sampling::plan(profile, &w).unwrap()
}

/// §2.2: the input column "is divided into 128MB chunks, which are stored in CPU pinned main
/// memory and accessed from the GPU using zero-copy"; the table is on the GPU.
fn group(profile: &Profile, table_bytes: u64, input_memory: MemoryKind) -> grouping::GroupingPlan {
    let w = GroupingWorkload {
        table_bytes,
        table_memory: MemoryKind::Device,
        input_memory,
        input_bytes: Some(128_000_000),
    };
    grouping::plan(profile, &w).unwrap()
}

/// Reach of the level the file describes at `index` (device memory).
fn reach(name: &str, index: usize) -> u64 {
    let config = SimConfig::builtin(name).unwrap();
    let level = &config.memory_kinds[&MemoryKind::Device].tlb[index];
    level.entries * level.page_bytes
}

/// Largest over smallest-region throughput of the measured device curve.
fn measured_slowdown(profile: &Profile) -> f64 {
    let curve = profile.random_access.device.measured().unwrap();
    let first = curve.points.first().unwrap().reads_per_second;
    let last = curve.points.last().unwrap().reads_per_second;
    first / last
}

#[test]
fn simulated_curves_fall_as_seed_000_measured() {
    // §2.3, P100: "the slowdown for memory accesses >2GB is still significant with factors
    // of 4.3x for random sampling"; §1: "≈13.3x runtime decrease". The built-ins'
    // walks_in_flight are calibrated on these (noise of 2% per sample allowed).
    let p = measured_slowdown(p100());
    assert!((4.0..4.6).contains(&p), "P100 {p}");
    let k = measured_slowdown(k80());
    assert!((12.4..14.2).contains(&k), "K80 {k}");
}

#[test]
fn p100_sixteen_gb_in_two_gb_scopes_is_twice_as_fast() {
    // §6.1, P100: "Even in this case, a speedup of 2x can be achieved for accesses of 16GB."
    // The plan holds on the noisy profile; the predicted speedup is checked on the noise-free
    // one (2.25x): with the built-in noise (seed 7) the single 16 GiB sample lands 5.5% low
    // and the fastest sample, the planner's unit, 2% high, so the prediction reads 2.42x.
    for profile in [p100(), quiet_p100()] {
        let plan = sample(profile, 16 * GIB);
        assert_eq!((plan.passes, plan.scope_bytes), (8, 2 * GIB), "{plan:#?}");
        assert!(
            plan.reasons.iter().any(|r| r.contains("avoids L2")),
            "{plan:#?}"
        );
    }
    let plan = sample(quiet_p100(), 16 * GIB);
    assert!((1.8..2.3).contains(&plan.predicted_speedup), "{plan:#?}");
}

#[test]
fn p100_is_not_scoped_within_the_l2_reach() {
    // §6: "smaller TLB scopes were also tested, in order to avoid L1 TLB misses. However, the
    // large amount of necessary passes, combined with the small delay of an L1 TLB miss,
    // prevent performance improvement in those cases."
    for region in [64 * MIB, 256 * MIB, GIB, 2 * GIB] {
        let plan = sample(p100(), region);
        assert_eq!((plan.passes, plan.scope_bytes), (1, region), "{plan:#?}");
    }
}

#[test]
fn p100_never_uses_128_mb_scopes() {
    // §6.1, P100: "128MB TLB scopes are not beneficial due to their pass overhead and due to
    // not avoiding L1 TLB misses."
    for region in (8..=34).map(|k| 1u64 << (k / 2 + 11) << 10 >> (k % 2)) {
        let plan = sample(p100(), region.min(16 * GIB));
        assert!(
            plan.passes == 1 || plan.scope_bytes > 128 * MIB,
            "{plan:#?}"
        );
    }
}

#[test]
fn p100_second_pass_pays_only_once_the_region_grows() {
    // §6.1, P100: "with every new pass, the performance first decreases, mostly due to memory
    // accesses being in the first pass while adding the computational overhead of the second
    // pass (e.g., around 2GB). When accessing a wider memory range, data accesses are equally
    // divided between the passes, hiding the pass overhead and leading to better performance
    // again (e.g., around 4GB)."
    let just_over = sample(p100(), 2100 * MIB);
    assert_eq!(just_over.passes, 1, "{just_over:#?}");
    let four = sample(p100(), 4 * GIB);
    assert_eq!((four.passes, four.scope_bytes), (2, 2 * GIB), "{four:#?}");
    assert!(four.predicted_speedup > 1.5, "{four:#?}");
}

#[test]
fn p100_large_regions_take_the_fewest_scopes_that_fit_l2() {
    // §6: "2GB, potentially avoiding ... L2 TLB misses on the P100."
    for gib in [4, 6, 8, 10, 12, 14, 16] {
        let plan = sample(p100(), gib * GIB);
        assert_eq!(
            (plan.passes, plan.scope_bytes),
            (gib as u32 / 2, 2 * GIB),
            "{plan:#?}"
        );
    }
}

#[test]
fn k80_beyond_l3_reach_takes_two_gb_scopes() {
    // §6.1, K80: "For 2GB TLB scopes, the pass overhead is not significant due to the lower
    // number of necessary passes, and the avoidance of L3 TLB misses outweighs the
    // additional overhead."
    let (l2_reach, l3_reach) = (reach("k80", 1), reach("k80", 2));
    for region in [4 * GIB, 8 * GIB, 12 * GIB] {
        let plan = sample(k80(), region);
        assert!(
            plan.scope_bytes <= l3_reach && plan.scope_bytes > l2_reach,
            "{plan:#?}"
        );
        assert_eq!(
            u64::from(plan.passes),
            region.div_ceil(l3_reach),
            "{plan:#?}"
        );
        assert!(plan.predicted_speedup > 3.0, "{plan:#?}");
    }
}

#[test]
fn k80_within_l3_reach_gains_little_from_128_mb_scopes() {
    // §6.1, K80: "A minor improvement is seen for data sizes between 130MB and 1GB, as 128MB
    // scopes avoid L2 TLB misses as well as L3 TLB misses. However, with more than 8 passes,
    // the speedup disappears due to the additional pass overhead."
    for region in [256 * MIB, 512 * MIB, GIB, 1536 * MIB, 2 * GIB] {
        let plan = sample(k80(), region);
        assert!(
            plan.passes <= 8 && plan.predicted_speedup < 1.25,
            "{plan:#?}"
        );
    }
}

#[test]
fn passes_pay_off_less_on_the_p100_than_on_the_k80() {
    // §6.1: "For the P100, the overhead of multiple passes is more significant, as the delay
    // of an L2 TLB miss is smaller than L3 TLB misses on the K80."
    let (k, p) = (sample(k80(), 8 * GIB), sample(p100(), 8 * GIB));
    assert!(k.predicted_speedup > p.predicted_speedup, "{k:#?}\n{p:#?}");
}

#[test]
fn p100_grouping_copies_with_scopes_that_fit_l2() {
    // §6.2, P100: "We see a significant difference in the two approaches for 2GB scopes, as
    // the execution is limited by PCIe transfers for three passes or more. Without the
    // additional transfers (copy approach), we achieve a final speedup of 2.5x."
    let l2_reach = reach("p100", 1);
    for table in [3 * GIB, 8 * GIB, 12 * GIB] {
        let plan = group(p100(), table, MemoryKind::Pinned);
        assert_eq!(plan.approach, Approach::Copy, "{plan:#?}");
        assert!(plan.scope_bytes <= l2_reach, "{plan:#?}");
        assert_eq!(
            u64::from(plan.passes),
            table.div_ceil(l2_reach),
            "{plan:#?}"
        );
    }
}

#[test]
fn p100_grouping_never_uses_128_mb_scopes() {
    // §6.2, P100: "Either version with 128MB scopes is slower than the original version, as
    // multiple passes over the data are too time consuming, even when using our copy
    // approach."
    for table in [256 * MIB, GIB, 2 * GIB, 4 * GIB, 16 * GIB] {
        let plan = group(p100(), table, MemoryKind::Pinned);
        assert!(
            plan.passes == 1 || plan.scope_bytes > 128 * MIB,
            "{plan:#?}"
        );
        if table <= 2 * GIB {
            assert_eq!(
                (plan.approach, plan.passes),
                (Approach::Unscoped, 1),
                "{plan:#?}"
            );
        }
    }
}

#[test]
fn k80_grouping_copies_in_scopes_that_fit_l3() {
    // §6.2, K80: "We test hash tables sizes up to 11.2GB ... For 2GB TLB scopes, the copy
    // approach is also better than the naive approach."
    let (l2_reach, l3_reach) = (reach("k80", 1), reach("k80", 2));
    let table = 11 * GIB + GIB / 5;
    let plan = group(k80(), table, MemoryKind::Pinned);
    assert_eq!(plan.approach, Approach::Copy, "{plan:#?}");
    assert!(
        plan.scope_bytes <= l3_reach && plan.scope_bytes > l2_reach,
        "{plan:#?}"
    );
    assert_eq!(
        u64::from(plan.passes),
        table.div_ceil(l3_reach),
        "{plan:#?}"
    );
}

#[test]
fn k80_grouping_without_room_for_the_copy_buffer_stays_naive() {
    // §5.3: "Storing the input data on the GPU is only a small space overhead, as our
    // grouping operator natively works on 128MB strides of input data at one time." Given the
    // whole 6 GB column at once, the buffer does not fit beside an 11.2 GB table in 12 GB.
    let w = GroupingWorkload {
        table_bytes: 11 * GIB + GIB / 5,
        table_memory: MemoryKind::Device,
        input_memory: MemoryKind::Pinned,
        input_bytes: Some(6_000_000_000),
    };
    let plan = grouping::plan(k80(), &w).unwrap();
    assert_eq!(plan.approach, Approach::Naive, "{plan:#?}");
    assert!(
        plan.reasons
            .iter()
            .any(|r| r.contains("does not fit") && r.contains("chunks")),
        "{plan:#?}"
    );
}

#[test]
fn no_boundary_in_range_is_not_scoped() {
    // A GPU of our own whose only level reaches beyond its memory: the probe finds no level,
    // and sampling the whole memory is not scoped.
    let mut config = SimConfig::builtin("p100").unwrap();
    config.name = "no-boundary".to_string();
    config.memory_kinds.insert(
        MemoryKind::Device,
        KindConfig {
            size_bytes: 4 * GIB,
            extra_cycles: 0.0,
            tlb: vec![TlbLevelConfig {
                entries: 16,
                page_bytes: GIB,
                miss_cycles: 100.0,
                ways: None,
                shared_by_sms: 1,
                walks_in_flight: Some(10.0),
            }],
        },
    );
    let profile = profile_of(config);
    let tlb = profile.tlb.device.measured().unwrap();
    assert!(tlb.levels.is_empty(), "{tlb:#?}");
    for region in [256 * MIB, GIB, 4 * GIB] {
        let plan = sample(&profile, region);
        assert_eq!((plan.passes, plan.scope_bytes), (1, region), "{plan:#?}");
    }
}
