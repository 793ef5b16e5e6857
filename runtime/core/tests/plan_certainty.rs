//! Sure or a bet, on a recorded H100 profile (`tests/fixtures/h100.json`, docs/calibration.md)
//! and the simulated seed-000 GPUs: untimed plans keep the scopes that avoid a measured
//! TLB cliff (zero-copy past its first level, the P100's L2 TLB) and leave device-memory
//! scopes on a flat-TLB GPU to the autotuner.

mod common;

use common::profile;
use memtune_core::plan::{self, Approach, Certainty, GroupingWorkload, SamplingWorkload};
use memtune_core::profile::{MemoryKind, Profile};

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;

fn h100() -> Profile {
    profile("tests/fixtures/h100.json")
}

fn sampling(region: u64, memory: MemoryKind, reads: u32) -> SamplingWorkload {
    SamplingWorkload {
        region_bytes: region,
        memory,
        reads_per_thread: reads,
    }
}

/// The model's pick, its judgement and the untimed plan's passes.
fn judged(p: &Profile, w: &SamplingWorkload) -> (u32, Certainty, u32) {
    let m = plan::sampling::plan(p, w).unwrap();
    let j = plan::judge_scope(p, w.memory, w.region_bytes, m.scope_bytes, m.passes);
    let u = plan::sampling_untimed(p, w).unwrap();
    (m.passes, j.certainty, u.passes)
}

#[test]
fn device_scopes_on_a_flat_tlb_are_bets_left_untimed() {
    let p = h100();
    // The sizes an H100 ran 0.36-0.96x of untuned with the model's scopes (64 and 1024
    // reads per thread): untimed, they run in one pass.
    for (region, reads) in [
        (96 * MIB, 64),
        (384 * MIB, 1024),
        (1536 * MIB, 1024),
        (3 * GIB, 1024),
    ] {
        let (model, certainty, untimed) = judged(&p, &sampling(region, MemoryKind::Device, reads));
        assert!(model > 1, "{region}: the model scopes");
        assert_eq!((certainty, untimed), (Certainty::Bet, 1), "{region}");
    }
    let u = plan::sampling_untimed(&p, &sampling(96 * MIB, MemoryKind::Device, 64)).unwrap();
    assert!(
        u.reasons
            .iter()
            .any(|r| r.contains("left to the autotuner")),
        "{:?}",
        u.reasons
    );
}

#[test]
fn zero_copy_past_its_first_level_is_sure() {
    let p = h100();
    for region in [2 * GIB, 8 * GIB, 16 * GIB, 32 * GIB] {
        let (model, certainty, untimed) = judged(&p, &sampling(region, MemoryKind::Pinned, 64));
        assert_eq!((certainty, untimed), (Certainty::Sure, model), "{region}");
        assert!(model > 1, "{region}");
    }
}

/// A second H100 (`tests/fixtures/h100-b.json`) whose pinned levels past the first were
/// read with confidence 0.12-0.37: the zero-copy fall of its curve alone makes the scopes
/// sure, and its device scopes stay bets.
#[test]
fn a_steep_zero_copy_fall_is_sure_without_a_confident_level() {
    let p = profile("tests/fixtures/h100-b.json");
    for region in [1 << 30, 2 * GIB, 4 * GIB, 8 * GIB] {
        let (model, certainty, untimed) = judged(&p, &sampling(region, MemoryKind::Pinned, 16));
        assert_eq!((certainty, untimed), (Certainty::Sure, model), "{region}");
        assert!(model > 1, "{region}");
    }
    for region in [96 * MIB, 384 * MIB, 1536 * MIB] {
        let (model, certainty, untimed) = judged(&p, &sampling(region, MemoryKind::Device, 64));
        assert!(model > 1, "{region}");
        assert_eq!((certainty, untimed), (Certainty::Bet, 1), "{region}");
    }
}

#[test]
fn the_simulated_p100s_l2_tlb_cliff_is_sure() {
    let p = profile("tests/fixtures/p100.json");
    let (model, certainty, untimed) = judged(&p, &sampling(4 * GIB, MemoryKind::Device, 1024));
    assert!(model > 1);
    assert_eq!((certainty, untimed), (Certainty::Sure, model));
}

#[test]
fn one_pass_is_always_sure() {
    let p = h100();
    let j = plan::judge_scope(&p, MemoryKind::Device, GIB, GIB, 1);
    assert_eq!(j.certainty, Certainty::Sure);
}

/// The H100 `a0c8e126` (`tests/fixtures/h100/bench-sampling-a0c8e126.json`), whose benchmark
/// ran one pass over 512 MiB of zero-copy memory, the curve's knee, 1.077x slower than two
/// passes of 256 MiB: untimed, that region takes that small bet; regions of 64-256 MiB
/// below the knee take the zero-copy hedge (2 to 4 passes of 32-64 MiB), 384 MiB runs in
/// one pass, and device memory never bets.
#[test]
fn zero_copy_at_the_knee_takes_a_small_bet() {
    let p = profile("tests/fixtures/h100/GPU-a0c8e126-4152-9b33-7f87-3a79ad4282da.json");
    for reads in [16, 64, 1024] {
        for (region, passes) in [
            (64 * MIB, 2),
            (128 * MIB, 4),
            (256 * MIB, 4),
            (384 * MIB, 1),
        ] {
            let u = plan::sampling_untimed(&p, &sampling(region, MemoryKind::Pinned, reads));
            let u = u.unwrap();
            assert_eq!(
                u.passes, passes,
                "{region} B, {reads} reads: {:?}",
                u.reasons
            );
            assert_eq!(u.scope_bytes, region / u64::from(passes), "{region} B");
        }
        let u =
            plan::sampling_untimed(&p, &sampling(512 * MIB, MemoryKind::Pinned, reads)).unwrap();
        assert_eq!((u.passes, u.scope_bytes), (2, 256 * MIB), "{:?}", u.reasons);
        assert!(
            u.reasons.iter().any(|r| r.contains("small bet")),
            "{:?}",
            u.reasons
        );
        for region in [64 * MIB, 384 * MIB, 512 * MIB, 1536 * MIB, 3 * GIB] {
            let d = plan::sampling_untimed(&p, &sampling(region, MemoryKind::Device, reads));
            assert_eq!(d.unwrap().passes, 1, "device {region} B, {reads} reads");
        }
    }
}

/// The H100 `b9cd8c3b` (`tests/fixtures/h100-b.json`) ran a 256 MiB grouping table in pinned
/// memory unscoped 1.226x slower than its best split (copy 16 x 16 MiB), whose gain the
/// profile does not make sure: untimed, it takes a small bet on the copy approach, which
/// re-reads only a device buffer per pass; device tables stay unscoped.
#[test]
fn a_pinned_grouping_table_takes_a_small_bet_on_copy() {
    let p = profile("tests/fixtures/h100-b.json");
    let w = |table_bytes, table_memory| GroupingWorkload {
        table_bytes,
        table_memory,
        input_memory: MemoryKind::Pinned,
        input_bytes: Some(64 * MIB),
    };
    let u = plan::grouping_untimed(&p, &w(256 * MIB, MemoryKind::Pinned)).unwrap();
    assert_eq!(u.approach, Approach::Copy, "{:?}", u.reasons);
    assert!(u.passes >= 2, "{:?}", u.reasons);
    assert!(
        u.reasons.iter().any(|r| r.contains("small bet")),
        "{:?}",
        u.reasons
    );
    for table in [256 * MIB, GIB, 4 * GIB] {
        let d = plan::grouping_untimed(&p, &w(table, MemoryKind::Device)).unwrap();
        assert_eq!((d.approach, d.passes), (Approach::Unscoped, 1), "{table}");
    }
}

#[test]
fn stencil_variants_are_bets_left_untimed() {
    use memtune_core::plan::{Dtype, StencilWorkload, Variant};
    let w = StencilWorkload {
        dims: [512, 512, 512],
        dtype: Dtype::F32,
        repeats: 1,
    };
    let p = h100();
    let model = plan::stencil::plan(&p, &w).unwrap();
    assert_ne!(
        model.variant,
        Variant::Plain,
        "the H100 measured staging paying"
    );
    let u = plan::stencil_untimed(&p, &w).unwrap();
    assert_eq!(
        (u.variant, u.block, u.staging),
        (Variant::Plain, [32, 4, 2], false)
    );
    assert!(u.reasons.last().is_some_and(|r| r.starts_with("bet:")));
    // A grid smaller than the default block: clamped, as the untuned plan is.
    let small = StencilWorkload {
        dims: [20, 3, 1],
        ..w
    };
    let u = plan::stencil_untimed(&p, &small).unwrap();
    assert_eq!(u.block, [20, 3, 1]);
    // Without staging data the model's pick is the untuned plain block itself.
    let mut bare = p.clone();
    bare.shared_memory_staging = memtune_core::profile::Section::not_measured("skipped");
    assert_eq!(
        plan::stencil_untimed(&bare, &w).unwrap(),
        plan::stencil::plan(&bare, &w).unwrap()
    );
}

/// Every recorded H100 and H200 profile: a zero-copy region of 64-256 MiB that the model
/// leaves in one pass is run untimed in 2-4 passes of 32-64 MiB, at most 2% slower at
/// worst, where the recorded sweeps put one pass up to 1.23x off the best
/// (`docs/calibration.md`); device memory of those sizes stays in one pass.
#[test]
fn small_zero_copy_regions_hedge_on_every_recorded_profile() {
    let mut seen = 0;
    for dir in ["tests/fixtures/h100", "tests/fixtures/h200"] {
        for p in common::profiles_in(dir) {
            for region in [64 * MIB, 128 * MIB, 256 * MIB] {
                let w = sampling(region, MemoryKind::Pinned, 16);
                let u = plan::sampling_untimed(&p, &w).unwrap();
                let hedged = u
                    .reasons
                    .iter()
                    .any(|r| r.contains("zero-copy memory, whose gain"));
                if hedged {
                    seen += 1;
                    let scope = u.scope_bytes;
                    assert!((32 * MIB..=64 * MIB).contains(&scope), "{scope}");
                    assert_eq!(u64::from(u.passes) * scope, region);
                }
                let d = plan::sampling_untimed(&p, &sampling(region, MemoryKind::Device, 16));
                assert_eq!(d.unwrap().passes, 1, "device {region} B");
            }
        }
    }
    assert!(seen >= 40, "the hedge was taken {seen} times");
}
