//! Planners on profiles that lack data or show no boundary, bad workloads, and the plans'
//! JSON form.

mod common;

use common::{grouping_of, sampling_of};
use memtune_core::default::builtin;
use memtune_core::plan::{
    grouping, sampling, stencil, Approach, Dtype, PlanError, StencilWorkload, Variant,
};
use memtune_core::{
    MemoryKind, Profile, RandomAccessCurve, RandomAccessPoint, Section, TlbKind, TlbLevel,
};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

fn curve(points: &[(u64, f64)], knee_bytes: Option<u64>) -> RandomAccessCurve {
    RandomAccessCurve {
        points: points
            .iter()
            .map(|&(region_bytes, reads_per_second)| RandomAccessPoint {
                region_bytes,
                reads_per_second,
            })
            .collect(),
        knee_bytes,
        draw_cost_relative: None,
        atomic_points: vec![],
    }
}

fn no_levels(swept_up_to_bytes: u64) -> Section<TlbKind> {
    Section::Measured(TlbKind {
        levels: vec![],
        swept_up_to_bytes,
        base_latency_cycles: 280.0,
        curves: vec![],
        notes: vec![],
        unstable_levels: vec![],
    })
}

/// The NVIDIA H200 measured on 2026-11-21
/// (`git show 2317edf:benchmarks/results/2026-11-21-h200-explore/`): device memory shows no
/// TLB miss up to 64 GiB and random reads fall only with the L2 cache (56 → 27 G reads/s by
/// 1 GiB, flat to 64 GiB); zero-copy pinned reads fall 13x beyond 512 MiB.
fn h200() -> Profile {
    let mut p = builtin();
    p.device.global_memory_bytes = 150_109_880_320;
    p.tlb.device = no_levels(64 * GIB);
    let device: Vec<(u64, f64)> = [
        56.226, 55.982, 56.168, 56.005, 55.855, 53.258, 42.680, 36.701, 31.808, 28.987, 27.809,
        27.445, 27.423, 27.213, 26.830, 27.007, 26.708,
    ]
    .iter()
    .enumerate()
    .map(|(i, g)| (MIB << i, g * 1e9))
    .collect();
    p.random_access.device = Section::Measured(curve(&device, Some(32 * MIB)));
    let pinned: Vec<(u64, f64)> = [
        0.589, 0.596, 0.595, 0.598, 0.593, 0.596, 0.565, 0.601, 0.618, 0.552, 0.112, 0.059, 0.049,
        0.043,
    ]
    .iter()
    .enumerate()
    .map(|(i, g)| (MIB << i, g * 1e9))
    .collect();
    p.random_access.pinned = Section::Measured(curve(&pinned, Some(512 * MIB)));
    p
}

#[test]
fn h200_device_memory_has_no_boundary_and_is_not_scoped() {
    let p = h200();
    for region in [GIB, 8 * GIB, 32 * GIB, 64 * GIB] {
        let plan = sampling::plan(&p, &sampling_of(region, MemoryKind::Device)).unwrap();
        assert_eq!(
            (plan.passes, plan.scope_bytes, plan.predicted_speedup),
            (1, region, 1.0),
            "{plan:#?}"
        );
    }
    let plan = grouping::plan(&p, &grouping_of(32 * GIB)).unwrap();
    assert_eq!(
        (plan.approach, plan.passes),
        (Approach::Unscoped, 1),
        "{plan:#?}"
    );
}

#[test]
fn h200_pinned_memory_is_scoped_below_its_knee() {
    let plan = sampling::plan(&h200(), &sampling_of(8 * GIB, MemoryKind::Pinned)).unwrap();
    assert!(
        plan.passes > 1 && plan.scope_bytes <= 512 * MIB,
        "{plan:#?}"
    );
    assert!(plan.predicted_speedup > 5.0, "{plan:#?}");
}

#[test]
fn no_boundary_in_the_range_is_not_scoped() {
    // "No TLB miss up to 16 GiB" and a curve with no fall-off.
    let mut p = builtin();
    p.tlb.device = no_levels(16 * GIB);
    let flat: Vec<(u64, f64)> = (0..15).map(|i| (MIB << i, 3e10 - i as f64 * 1e8)).collect();
    p.random_access.device = Section::Measured(curve(&flat, None));
    let plan = sampling::plan(&p, &sampling_of(16 * GIB, MemoryKind::Device)).unwrap();
    assert_eq!(plan.passes, 1, "{plan:#?}");
    assert!(
        plan.reasons
            .iter()
            .any(|r| r.contains("no TLB reach or random-access knee below")),
        "{plan:#?}"
    );
    assert!(
        plan.reasons[0].contains("no TLB miss up to 16 GiB"),
        "{plan:#?}"
    );

    // A level whose reach is beyond the region is no boundary either.
    p.tlb.device = Section::Measured(TlbKind {
        levels: vec![TlbLevel {
            entries: 16,
            page_bytes: 2 * GIB,
            reach_bytes: 32 * GIB,
            miss_penalty_cycles: 90.0,
            miss_penalty_ns: 45.0,
            confidence: 0.8,
            shared_by_sms: None,
        }],
        swept_up_to_bytes: 64 * GIB,
        base_latency_cycles: 280.0,
        curves: vec![],
        notes: vec![],
        unstable_levels: vec![],
    });
    let plan = sampling::plan(&p, &sampling_of(16 * GIB, MemoryKind::Device)).unwrap();
    assert_eq!(plan.passes, 1, "{plan:#?}");
}

#[test]
fn unmeasured_profile_gives_conservative_plans_naming_cargo_tune() {
    let p = builtin();
    for kind in MemoryKind::ALL {
        let plan = sampling::plan(&p, &sampling_of(8 * GIB, kind)).unwrap();
        assert_eq!((plan.passes, plan.scope_bytes), (1, 8 * GIB));
        assert!(
            plan.reasons.iter().any(|r| r.contains("`cargo tune`")),
            "{plan:#?}"
        );
    }
    let plan = grouping::plan(&p, &grouping_of(8 * GIB)).unwrap();
    assert_eq!(
        (plan.approach, plan.passes, plan.scope_bytes),
        (Approach::Unscoped, 1, 8 * GIB)
    );
    assert!(
        plan.reasons.iter().any(|r| r.contains("`cargo tune`")),
        "{plan:#?}"
    );
    let w = StencilWorkload {
        dims: [400, 400, 400],
        dtype: Dtype::F64,
        repeats: 6,
    };
    let plan = stencil::plan(&p, &w).unwrap();
    assert_eq!(
        (plan.variant, plan.block, plan.staging),
        (Variant::Plain, stencil::DEFAULT_BLOCK, false)
    );
    assert!(
        plan.reasons
            .iter()
            .any(|r| r.contains("no staging data") && r.contains("`cargo tune`")),
        "{plan:#?}"
    );
}

#[test]
fn failed_sections_are_reported_and_not_scoped() {
    let mut p = builtin();
    p.tlb.device = Section::failed("cuMemAlloc: out of memory");
    p.random_access.device = Section::failed("cuMemAlloc: out of memory");
    let plan = sampling::plan(&p, &sampling_of(8 * GIB, MemoryKind::Device)).unwrap();
    assert_eq!(plan.passes, 1);
    assert!(
        plan.reasons[0].contains("failed: cuMemAlloc: out of memory"),
        "{plan:#?}"
    );
    assert!(
        plan.reasons.iter().any(|r| r.contains("`cargo tune`")),
        "{plan:#?}"
    );
}

#[test]
fn grouping_needs_a_curve_to_weigh_passes() {
    // TLB levels alone give no absolute insert cost to set against re-reading the input.
    let mut p = builtin();
    p.tlb.device = Section::Measured(TlbKind {
        levels: vec![TlbLevel {
            entries: 65,
            page_bytes: 32 * MIB,
            reach_bytes: 2080 * MIB,
            miss_penalty_cycles: 110.0,
            miss_penalty_ns: 74.0,
            confidence: 1.0,
            shared_by_sms: None,
        }],
        swept_up_to_bytes: 16 * GIB,
        base_latency_cycles: 293.0,
        curves: vec![],
        notes: vec![],
        unstable_levels: vec![],
    });
    let plan = grouping::plan(&p, &grouping_of(8 * GIB)).unwrap();
    assert_eq!(plan.approach, Approach::Unscoped);
    assert!(plan
        .reasons
        .iter()
        .any(|r| r.contains("no usable random-access curve") && r.contains("`cargo tune`")));
}

#[test]
fn bad_sizes_are_errors_naming_the_argument_and_the_fix() {
    let mut p = builtin();
    p.device.global_memory_bytes = 16 * GIB;
    let err = |e: PlanError| e.to_string();

    let e = sampling::plan(&p, &sampling_of(0, MemoryKind::Device)).unwrap_err();
    assert!(
        matches!(
            e,
            PlanError::Zero {
                argument: "region_bytes",
                ..
            }
        ),
        "{e}"
    );
    let e = sampling::plan(&p, &sampling_of(3, MemoryKind::Device)).unwrap_err();
    assert!(
        err(e.clone()).contains("`region_bytes` is 3 bytes, less than one sampled value (4 bytes)"),
        "{e}"
    );
    let mut w = sampling_of(GIB, MemoryKind::Device);
    w.reads_per_thread = 0;
    let e = sampling::plan(&p, &w).unwrap_err();
    assert!(
        err(e.clone()).contains("`reads_per_thread` is 0; pass how many"),
        "{e}"
    );
    let e = sampling::plan(&p, &sampling_of(17 * GIB, MemoryKind::Device)).unwrap_err();
    assert!(
        matches!(
            e,
            PlanError::TooLarge {
                argument: "region_bytes",
                ..
            }
        ),
        "{e}"
    );
    assert!(err(e).contains("pass a smaller `region_bytes`, or use managed memory"));
    // Managed memory may exceed device memory.
    assert!(sampling::plan(&p, &sampling_of(17 * GIB, MemoryKind::Managed)).is_ok());

    let e = grouping::plan(&p, &grouping_of(0)).unwrap_err();
    assert!(err(e).contains("`table_bytes` is 0; pass the hash table's size in bytes"));
    let e = grouping::plan(&p, &grouping_of(4)).unwrap_err();
    assert!(err(e).contains("less than one bucket"));
    let e = grouping::plan(&p, &grouping_of(20 * GIB)).unwrap_err();
    assert!(
        matches!(
            e,
            PlanError::TooLarge {
                argument: "table_bytes",
                ..
            }
        ),
        "{e}"
    );
    let mut w = grouping_of(GIB);
    w.input_bytes = Some(0);
    let e = grouping::plan(&p, &w).unwrap_err();
    assert!(err(e).contains("`input_bytes` is 0; pass the input's size in bytes, or `None`"));

    let w = StencilWorkload {
        dims: [64, 0, 64],
        dtype: Dtype::F32,
        repeats: 1,
    };
    let e = stencil::plan(&p, &w).unwrap_err();
    assert!(err(e).contains("`dims[1]` is 0; pass the volume's size"));
    let w = StencilWorkload {
        dims: [64, 64, 64],
        dtype: Dtype::F32,
        repeats: 0,
    };
    let e = stencil::plan(&p, &w).unwrap_err();
    assert!(
        matches!(
            e,
            PlanError::Zero {
                argument: "repeats",
                ..
            }
        ),
        "{e}"
    );
    let w = StencilWorkload {
        dims: [64, u32::MAX, 64],
        dtype: Dtype::F32,
        repeats: 1,
    };
    let e = stencil::plan(&p, &w).unwrap_err();
    assert!(err(e).contains("`dims[1]` is 4294967295: 1073741824 blocks of 4 along that axis exceed CUDA's grid limit of 65535; split the volume"));
}

#[test]
fn plans_serialise_with_the_documented_field_names() {
    let p = h200();
    let plan = sampling::plan(&p, &sampling_of(8 * GIB, MemoryKind::Pinned)).unwrap();
    let v = serde_json::to_value(&plan).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        ["passes", "predicted_speedup", "reasons", "scope_bytes"]
    );
    assert_eq!(
        serde_json::from_value::<sampling::SamplingPlan>(v).unwrap(),
        plan
    );

    let plan = grouping::plan(&builtin(), &grouping_of(GIB)).unwrap();
    let v = serde_json::to_value(&plan).unwrap();
    assert_eq!(v["approach"], "unscoped");
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["approach", "passes", "reasons", "scope_bytes"]);
    for (a, name) in [
        (Approach::Unscoped, "unscoped"),
        (Approach::Naive, "naive"),
        (Approach::Copy, "copy"),
    ] {
        assert_eq!(serde_json::to_value(a).unwrap(), name);
    }

    let w = StencilWorkload {
        dims: [400, 400, 400],
        dtype: Dtype::F32,
        repeats: 6,
    };
    let plan = stencil::plan(&builtin(), &w).unwrap();
    let v = serde_json::to_value(&plan).unwrap();
    assert_eq!(v["variant"], "plain");
    assert_eq!(v["block"], serde_json::json!([32, 4, 2]));
    assert_eq!(v["staging"], false);
    for (variant, name) in [
        (Variant::Plain, "plain"),
        (Variant::Staged, "staged"),
        (Variant::Streaming, "streaming"),
    ] {
        assert_eq!(serde_json::to_value(variant).unwrap(), name);
    }
    assert_eq!(serde_json::to_value(Dtype::F64).unwrap(), "f64");
}
