//! Hash grouping priced by the atomic curve (`random_access.device.atomic_points`): inserts
//! are atomics that execute at L2, so a scope that L2 holds keeps them there. The atomic
//! curves here are made by hand in the shape an H200 is expected to show (contended on a
//! few words, fast while L2 holds the region, falling through the L2 capacity); they are
//! not measurements.

mod common;

use common::profile;
use memtune_core::default::builtin;
use memtune_core::plan::{grouping, Approach, GroupingPlan, GroupingWorkload};
use memtune_core::profile::{
    Bandwidth, MemoryKind, Profile, RandomAccessCurve, RandomAccessPoint, Section, TlbKind,
};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

fn points(values: &[(u64, f64)]) -> Vec<RandomAccessPoint> {
    values
        .iter()
        .map(|&(region_bytes, g)| RandomAccessPoint {
            region_bytes,
            reads_per_second: g * 1e9,
        })
        .collect()
}

fn device_curve(p: &mut Profile) -> &mut RandomAccessCurve {
    match &mut p.random_access.device {
        Section::Measured(c) => c,
        other => panic!("no measured device curve: {other:?}"),
    }
}

/// G atomics/s: contended on the few words of 64 KiB, fast from 1 MiB while L2 holds the
/// region, falling from 32 MiB through the 60 MB L2, flat from 512 MiB.
const H200_LIKE_ATOMICS: &[(u64, f64)] = &[
    (64 * KIB, 4.0),
    (256 * KIB, 12.0),
    (MIB, 30.0),
    (4 * MIB, 30.0),
    (16 * MIB, 30.0),
    (32 * MIB, 30.0),
    (64 * MIB, 20.0),
    (128 * MIB, 14.0),
    (256 * MIB, 11.0),
    (512 * MIB, 10.0),
    (4 * GIB, 10.0),
    (64 * GIB, 10.0),
];

/// The H200 profile recorded on 2026-11-22
/// (`tests/fixtures/h200/GPU-7f83d1da-1dd5-b9a0-d254-cdc000fc2131.json`: TLB, read curve,
/// bandwidths), with `atomics` as its device atomic curve.
fn recorded_h200(atomics: &[(u64, f64)]) -> Profile {
    let mut p = profile("tests/fixtures/h200/GPU-7f83d1da-1dd5-b9a0-d254-cdc000fc2131.json");
    let curve = device_curve(&mut p);
    assert!(curve.atomic_points.is_empty(), "recorded before atomics");
    curve.atomic_points = points(atomics);
    p
}

/// A made-up GPU whose device memory shows no TLB miss and a flat read curve, so that only
/// the atomic curve has a boundary; zero-copy input at 50 GB/s, device copy at 4 TB/s.
fn flat_reads(atomics: &[(u64, f64)]) -> Profile {
    let mut p = builtin();
    p.device.sm_count = 132;
    p.device.global_memory_bytes = 140 * GIB;
    p.tlb.device = Section::Measured(TlbKind {
        levels: vec![],
        swept_up_to_bytes: 64 * GIB,
        base_latency_cycles: 280.0,
        curves: vec![],
        notes: vec![],
        unstable_levels: vec![],
    });
    let reads: Vec<(u64, f64)> = (0..=16).map(|i| (MIB << i, 50.0)).collect();
    p.random_access.device = Section::Measured(RandomAccessCurve {
        points: points(&reads),
        knee_bytes: None,
        draw_cost_relative: None,
        atomic_points: points(atomics),
    });
    p.bandwidth = Section::Measured(Bandwidth {
        device_to_device: 4e12,
        host_to_device: 50e9,
        device_to_host: 50e9,
        zero_copy_read: [("grid_stride".to_string(), 50e9)].into_iter().collect(),
        l2_read: None,
    });
    p
}

/// The table in device memory, `keys` 4-byte keys in device memory: the inserts, not the
/// input's read, bound every pass.
fn grouping_of(table_bytes: u64, keys: Option<u64>) -> GroupingWorkload {
    GroupingWorkload {
        table_bytes,
        table_memory: MemoryKind::Device,
        input_memory: MemoryKind::Device,
        input_bytes: keys.map(|k| k * 4),
    }
}

/// The bench's workload: the keys in pinned memory, read across the host link.
fn from_pinned(table_bytes: u64, keys: u64) -> GroupingWorkload {
    GroupingWorkload {
        input_memory: MemoryKind::Pinned,
        ..grouping_of(table_bytes, Some(keys))
    }
}

fn has_reason(plan: &GroupingPlan, needle: &str) -> bool {
    plan.reasons.iter().any(|r| r.contains(needle))
}

/// The atomic curve's first fall of at least 10%: the regions before and after it.
fn first_atomic_fall(atomics: &[(u64, f64)]) -> (u64, u64) {
    atomics
        .windows(2)
        .find(|w| w[0].1 >= 1.1 * w[1].1)
        .map(|w| (w[0].0, w[1].0))
        .unwrap()
}

#[test]
fn h200_tables_beyond_l2_copy_into_scopes_l2_holds_unless_the_input_read_bounds_them() {
    // Scopes are whole 32 MiB pages (the TLB's), so they may end one region past the fall.
    let (fall, after) = first_atomic_fall(H200_LIKE_ATOMICS);
    let with = recorded_h200(H200_LIKE_ATOMICS);
    let without = recorded_h200(&[]);
    // The bench's tables beyond L2, 64 Mi keys drawn from capacity/2 values.
    for table in [128 * MIB, 256 * MIB, 512 * MIB] {
        let w = grouping_of(table, Some(64 << 20));
        let plan = grouping::plan(&with, &w).unwrap();
        // Keys in device memory: re-reading them is cheap, naive and copy both fit.
        assert_ne!(plan.approach, Approach::Unscoped, "{table}: {plan:#?}");
        assert!(plan.passes > 1 && plan.scope_bytes <= after, "{plan:#?}");
        assert!(
            has_reason(&plan, "random atomic update of device memory"),
            "{plan:#?}"
        );
        assert!(has_reason(&plan, "each key repeats at least"), "{plan:#?}");
        assert!(
            has_reason(&plan, &format!("atomic fall at {} MiB", fall / MIB)),
            "{plan:#?}"
        );
        // Priced as reads, the bench's workload stays whole, as before: the read curve's
        // fall through L2 is too shallow to pay for another pass over the link.
        let plan = grouping::plan(&without, &from_pinned(table, 64 << 20)).unwrap();
        assert_eq!(plan.approach, Approach::Unscoped, "{plan:#?}");
        assert!(has_reason(&plan, "priced as one random read"), "{plan:#?}");
        // The bench's keys in pinned memory: the 50 GB/s read bounds a pass that overlaps
        // its inserts with it (4 bytes a key take longer than an insert even beyond L2),
        // so passes cannot gain and one pass it is.
        let plan = grouping::plan(&with, &from_pinned(table, 64 << 20)).unwrap();
        assert_eq!(plan.approach, Approach::Unscoped, "{plan:#?}");
    }
    // Inserts slower than the link's 50 GB/s (a GPU whose atomics beyond L2 run at 5 G/s):
    // scoping pays again with pinned input.
    let slow: Vec<(u64, f64)> = H200_LIKE_ATOMICS
        .iter()
        .map(|&(r, g)| (r, if r > 32 * MIB { g / 4.0 } else { g }))
        .collect();
    let plan = grouping::plan(&recorded_h200(&slow), &from_pinned(512 * MIB, 64 << 20)).unwrap();
    assert_eq!(plan.approach, Approach::Copy, "{plan:#?}");
    // A table L2 holds stays whole.
    let plan = grouping::plan(&with, &grouping_of(fall, Some(64 << 20))).unwrap();
    assert_eq!(plan.approach, Approach::Unscoped, "{plan:#?}");
}

#[test]
fn an_atomic_fall_alone_is_a_boundary() {
    let (fall, after) = first_atomic_fall(H200_LIKE_ATOMICS);
    let w = grouping_of(256 * MIB, None);
    let plan = grouping::plan(&flat_reads(H200_LIKE_ATOMICS), &w).unwrap();
    assert_ne!(plan.approach, Approach::Unscoped, "{plan:#?}");
    // Inside the fall's first doubling: fewer passes there can outweigh a slower insert.
    assert!(plan.scope_bytes < after, "{plan:#?}");
    assert!(
        has_reason(&plan, &format!("atomic fall at {} MiB", fall / MIB)),
        "{plan:#?}"
    );
    assert!(
        has_reason(&plan, "contention on repeated keys not weighed"),
        "{plan:#?}"
    );
    // Without the atomic curve nothing falls below the table: not scoped, as before.
    let plan = grouping::plan(&flat_reads(&[]), &w).unwrap();
    assert_eq!(plan.approach, Approach::Unscoped, "{plan:#?}");
    assert!(has_reason(&plan, "nor a fall of the curve"), "{plan:#?}");
}

#[test]
fn scopes_whose_count_words_contend_do_not_pay() {
    // A small L2: atomics are fast from 1 to 2 MiB only, contended below, slow beyond.
    let atomics: &[(u64, f64)] = &[
        (64 * KIB, 2.0),
        (256 * KIB, 3.0),
        (512 * KIB, 4.0),
        (MIB, 30.0),
        (2 * MIB, 30.0),
        (4 * MIB, 15.0),
        (8 * MIB, 10.0),
        (GIB, 10.0),
    ];
    let p = flat_reads(atomics);
    let table = 16 * MIB;
    // Not knowing the input, the plan takes the fast 2 MiB scopes.
    let blind = grouping::plan(&p, &grouping_of(table, None)).unwrap();
    assert_ne!(blind.approach, Approach::Unscoped, "{blind:#?}");
    assert!(
        blind.scope_bytes <= first_atomic_fall(atomics).0,
        "{blind:#?}"
    );
    // 64 Mi keys into at most 1 Mi groups (half the 2 Mi buckets): 64 repeats each. A
    // 2 MiB scope's 128 Ki groups, 512 KiB of count words, contend as the curve does
    // below 1 MiB: larger scopes, or none, are cheaper.
    let informed = grouping::plan(&p, &grouping_of(table, Some(64 << 20))).unwrap();
    assert!(informed.scope_bytes > blind.scope_bytes, "{informed:#?}");
    assert!(
        has_reason(&informed, "each key repeats at least 64.0 times"),
        "{informed:#?}"
    );
    // Keys that repeat little leave the 2 MiB scopes alone.
    let few = grouping::plan(&p, &grouping_of(table, Some(1 << 20))).unwrap();
    assert_eq!(
        (few.approach, few.scope_bytes),
        (blind.approach, blind.scope_bytes),
        "{few:#?}"
    );
}
