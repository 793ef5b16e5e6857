//! The NVIDIA H200 profile recorded on 2026-11-22
//! (`tests/fixtures/h200/GPU-2eda6f3a-a5da-b9f5-67af-3fce4c31008e.json`), whose
//! random-access curve was measured with the shipped sampling kernel: L1 hits (about 600 G
//! reads/s at 64-128 KiB), L2 hits (150 G/s up to 16 MiB), the L2's fall to 37 G/s, and the
//! TLB cliff past 64 GiB. The scoped sweeps of that machine
//! (`tests/fixtures/h200/bench-sampling-2eda6f3a.json`) are what these plans are checked
//! against.

mod common;

use common::profile;
use memtune_core::plan::sampling::{self, SamplingWorkload};
use memtune_core::profile::{MemoryKind, Profile, Section};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

fn h200() -> Profile {
    profile("tests/fixtures/h200/GPU-2eda6f3a-a5da-b9f5-67af-3fce4c31008e.json")
}

/// The benchmark's workloads: 1024 reads a thread on device memory, 16 zero-copy.
fn plan(p: &Profile, memory: MemoryKind, region_bytes: u64) -> sampling::SamplingPlan {
    let reads_per_thread = if memory == MemoryKind::Pinned {
        16
    } else {
        1024
    };
    let w = SamplingWorkload {
        region_bytes,
        memory,
        reads_per_thread,
    };
    sampling::plan(p, &w).unwrap()
}

#[test]
fn device_scopes_are_the_swept_best_in_the_l2_range() {
    // Best of that machine's sweep: 64 MiB in 4 x 16 MiB (0.907 ms, 1 pass 1.833), 128 MiB
    // in 4 x 32 MiB, 256 MiB in 8 x 32 MiB, 512 MiB in 8 x 64 MiB.
    let p = h200();
    for (region, passes, scope) in [
        (64 * MIB, 4, 16 * MIB),
        (128 * MIB, 4, 32 * MIB),
        (256 * MIB, 8, 32 * MIB),
        (512 * MIB, 8, 64 * MIB),
    ] {
        let plan = plan(&p, MemoryKind::Device, region);
        assert_eq!(
            (plan.passes, plan.scope_bytes),
            (passes, scope),
            "{plan:#?}"
        );
    }
}

#[test]
fn scopes_below_every_tlb_reach_need_not_be_whole_large_pages() {
    // The device L2 TLB translates 32 MiB pages and reaches 64 GiB: a 64 MiB region
    // overflows no level, so its 16 MiB scopes (which fit the L2 cache) are allowed.
    let p = h200();
    let Section::Measured(tlb) = &p.tlb.device else {
        panic!("the recorded profile has device TLB levels");
    };
    assert!(tlb.levels.iter().any(|l| l.page_bytes == 32 * MIB));
    assert!(tlb.levels.iter().all(|l| l.reach_bytes >= 64 * MIB));
    let plan = plan(&p, MemoryKind::Device, 64 * MIB);
    assert_eq!(plan.scope_bytes % (32 * MIB), 16 * MIB, "{plan:#?}");
}

#[test]
fn sparse_zero_copy_reads_are_not_priced_as_cache_hits() {
    // 16 reads a thread read each 32-byte sector of 64 MiB about once: the curve's L1
    // hits (5.4 G/s at 64 KiB against 0.7 G/s) are not there for a pass to use. Measured:
    // 1 pass 3.28 ms, the best scope 3.05 ms (4 x 16 MiB); priced as hits, 64 KiB-scale
    // scopes (hundreds of passes) looked 1.9x faster.
    let p = h200();
    for region in [64 * MIB, 128 * MIB, 256 * MIB] {
        let plan = plan(&p, MemoryKind::Pinned, region);
        assert!(plan.scope_bytes >= 16 * MIB, "{plan:#?}");
        assert!(
            plan.reasons
                .iter()
                .any(|r| r.contains("find their sector cold")),
            "{plan:#?}"
        );
    }
    // Without cache sizes, every read is priced by the curve: the tiny scopes come back.
    let mut blind = p.clone();
    blind.caches = Section::NotMeasured {
        reason: "test".into(),
    };
    let plan = plan(&blind, MemoryKind::Pinned, 64 * MIB);
    assert!(plan.scope_bytes < MIB, "{plan:#?}");
}

#[test]
fn zero_copy_past_the_knee_is_scoped_below_it() {
    // The pinned curve falls 5x from 512 MiB to 1 GiB; that sweep's best 1 GiB run was
    // 32 x 32 MiB (3.24 ms) against 20.3 ms unscoped.
    let p = h200();
    for region in [GIB, 2 * GIB, 4 * GIB] {
        let plan = plan(&p, MemoryKind::Pinned, region);
        assert!(plan.scope_bytes <= 512 * MIB, "{plan:#?}");
        assert!(plan.predicted_speedup > 4.0, "{plan:#?}");
    }
}
