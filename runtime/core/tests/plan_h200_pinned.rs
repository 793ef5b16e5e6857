//! Zero-copy plans from the profiles of six H200s recorded on 2026-11-22, against the
//! scoped sweeps the benchmark measured on each of those machines. Unscoped passes over
//! 64-256 MiB of pinned memory ran 0-8% slower there than passes kept within the first
//! pinned TLB level's reach (24-60 MiB), which the probe's flat curve does not show: the
//! TLB-reach bet (docs/planners.md).

use memtune_core::plan::grouping::{self, Approach, GroupingPlan, GroupingWorkload};
use memtune_core::plan::sampling::{self, SamplingPlan, SamplingWorkload};
use memtune_core::profile::{MemoryKind, Profile, Section};
use memtune_core::store::load_path;
use serde_json::Value;
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;

/// (profile, the benchmark's sampling JSON) of each machine (two more H200s, `9f7d556a` and
/// `d1f5cc0f`, are `a_profile_without_a_first_pinned_level_bets_nothing`).
const MACHINES: [(&str, &str); 6] = [
    (
        "GPU-e7a919e5-af96-f04b-bf90-0f50e59d1451.json",
        "bench-sampling-e7a919e5.json",
    ),
    (
        "GPU-31a92612-4ba4-ebad-172e-9bcefcd10d9c.json",
        "bench-sampling-31a92612.json",
    ),
    (
        "GPU-2eda6f3a-a5da-b9f5-67af-3fce4c31008e.json",
        "bench-sampling-2eda6f3a.json",
    ),
    (
        "GPU-af2e01be-eaf5-74a0-c6a7-847748079011.json",
        "bench-sampling-af2e01be.json",
    ),
    (
        "GPU-6ddbbc16-1cfd-6565-82f7-fd898073301e.json",
        "bench-sampling-6ddbbc16.json",
    ),
    (
        "GPU-78df8647-bae4-4977-6093-661cf5a2df50.json",
        "bench-sampling-78df8647.json",
    ),
];

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/h200")
        .join(path)
}

/// The benchmark's zero-copy workload: 16 reads a thread.
fn plan(p: &Profile, region_bytes: u64) -> SamplingPlan {
    let w = SamplingWorkload {
        region_bytes,
        memory: MemoryKind::Pinned,
        reads_per_thread: 16,
    };
    sampling::plan(p, &w).unwrap()
}

fn first_pinned_reach(p: &Profile) -> u64 {
    let Section::Measured(tlb) = &p.tlb.pinned else {
        panic!("the recorded profiles have pinned TLB levels");
    };
    tlb.levels.iter().map(|l| l.reach_bytes).min().unwrap()
}

/// The benchmark's label of a plan, as its JSON writes configurations.
fn label(plan: &SamplingPlan) -> String {
    if plan.passes == 1 {
        return "1 pass".to_string();
    }
    let scope = plan.scope_bytes;
    let size = if scope % (1 << 30) == 0 {
        format!("{} GiB", scope >> 30)
    } else {
        format!("{} MiB", scope >> 20)
    };
    format!("{} passes x {size}", plan.passes)
}

#[test]
fn regions_over_the_first_pinned_tlb_reach_are_split_near_it() {
    // Every region over the first reach is weighed; from twice the reach (half the pages
    // missing) on, the bet pays on all these profiles, in scopes about the reach: past it,
    // a split saves less, and the passes of smaller scopes cost more than they save.
    for (profile, _) in MACHINES {
        let p = load_path(&fixture(profile)).unwrap();
        let reach = first_pinned_reach(&p);
        for region in [64 * MIB, 128 * MIB, 256 * MIB] {
            let plan = plan(&p, region);
            if region <= reach {
                assert_eq!(plan.passes, 1, "{profile}: {plan:#?}");
                continue;
            }
            assert!(
                plan.reasons
                    .iter()
                    .any(|r| r.contains("the reach of the fastest TLB level")),
                "{plan:#?}"
            );
            if region >= 2 * reach {
                let scope = plan.scope_bytes as f64;
                assert!(
                    plan.passes >= 2 && scope <= 1.1 * reach as f64 && scope >= 0.5 * reach as f64,
                    "{profile}: {plan:#?}"
                );
            }
        }
    }
}

#[test]
fn without_a_miss_penalty_nothing_is_bet_on_the_reach() {
    // The bet is priced by the levels' penalties: with none, scoping 128 MiB gains nothing.
    let (profile, _) = MACHINES[1];
    let mut p = load_path(&fixture(profile)).unwrap();
    let Section::Measured(tlb) = &mut p.tlb.pinned else {
        panic!("the recorded profiles have pinned TLB levels");
    };
    for level in &mut tlb.levels {
        level.miss_penalty_cycles = 0.0;
    }
    let plan = plan(&p, 128 * MIB);
    assert_eq!(plan.passes, 1, "{plan:#?}");
}

#[test]
fn plans_are_within_5_percent_of_each_machines_swept_best() {
    let mut compared = 0;
    for (profile, bench) in MACHINES {
        let p = load_path(&fixture(profile)).unwrap();
        let text = std::fs::read_to_string(fixture(bench)).unwrap();
        let json: Value = serde_json::from_str(&text).unwrap();
        let rows = json["rows"].as_array().unwrap();
        for row in rows
            .iter()
            .filter(|r| r["case"].as_str().unwrap().starts_with("pinned"))
        {
            let sweep = row["sweep"].as_array().unwrap();
            let ms = |s: &Value| s["median_ms"].as_f64().unwrap();
            let best = sweep.iter().map(ms).fold(f64::INFINITY, f64::min);
            let plan = plan(&p, row["size_bytes"].as_u64().unwrap());
            let name = label(&plan);
            // Plans between the sweep's powers of two were not measured there.
            let Some(measured) = sweep.iter().find(|s| s["config"] == name.as_str()) else {
                continue;
            };
            let ratio = ms(measured) / best;
            assert!(
                ratio <= 1.05,
                "{bench}, {}: planned {name}, {ratio:.3}x the best",
                row["case"]
            );
            compared += 1;
        }
    }
    // Most plans are configurations the sweeps measured (the bet's scopes about a reach
    // often fall between the sweeps' powers of two).
    assert!(compared >= 20, "only {compared} plans were in the sweeps");
}

/// The benchmark's pinned-table workload at 256 MiB: 16 Mi keys read from pinned memory.
fn grouping_256(p: &Profile) -> GroupingPlan {
    let w = GroupingWorkload {
        table_bytes: 256 * MIB,
        table_memory: MemoryKind::Pinned,
        input_memory: MemoryKind::Pinned,
        input_bytes: Some(16 << 22),
    };
    grouping::plan(p, &w).unwrap()
}

#[test]
fn a_pinned_table_is_scoped_within_the_first_reach_when_the_bet_pays() {
    // `31a92612`: its sweep had copy 8 x 32 MiB within 0.1% of the best (92.5 ms), one pass
    // 1.4% over it. `af2e01be`: one pass 118.6 ms, copy 16 x 16 MiB 93.5 ms, the best.
    let (profile, _) = MACHINES[1];
    let mut p = load_path(&fixture(profile)).unwrap();
    let plan = grouping_256(&p);
    assert_eq!(plan.approach, Approach::Copy, "{plan:#?}");
    assert!(plan.scope_bytes <= first_pinned_reach(&p), "{plan:#?}");
    assert!(
        plan.reasons.iter().any(|r| r.contains("(taken:")),
        "{plan:#?}"
    );
    // Without pinned TLB levels there is no reach to bet on: one pass, as before the bet.
    p.tlb.pinned = Section::NotMeasured {
        reason: "test".into(),
    };
    assert_eq!(grouping_256(&p).passes, 1);
}

#[test]
fn a_profile_without_a_first_pinned_level_bets_nothing() {
    // `9f7d556a` and `d1f5cc0f`: the fastest pinned level their probes found reaches 480 MiB
    // (960 x 512 KiB) and 1648 MiB (206 x 8 MiB), so at 64-256 MiB there is no reach to keep
    // scopes within. Their sweeps had 16-64 MiB scopes 5-10% faster than one pass where one
    // pass stayed (the 1.106 and 1.061 misses).
    for profile in [
        "GPU-9f7d556a-89da-7079-66f0-e8a5e9cdd775.json",
        "GPU-d1f5cc0f-ebae-3c68-3dc3-8d46e86e791b.json",
    ] {
        let p = load_path(&fixture(profile)).unwrap();
        assert!(first_pinned_reach(&p) > 256 * MIB);
        for region in [64 * MIB, 128 * MIB, 256 * MIB] {
            let plan = plan(&p, region);
            assert!(
                !plan.reasons.iter().any(|r| r.contains("TLB reach of")),
                "{plan:#?}"
            );
        }
        assert_eq!(plan(&p, 64 * MIB).passes, 1);
    }
}

#[test]
fn a_region_at_the_zero_copy_knee_is_split() {
    // `1af0ae31` and `c600d2e3`: the probes' own buffers read 512 MiB nearly as fast as 256
    // MiB (their knee), and the plans kept one pass, 1.21x and 1.29x the best in the
    // benchmark. At the knee, pinned memory is priced one doubling on.
    for run in [
        "GPU-1af0ae31-3cc5-a484-61f6-bebcef2e2e82.json",
        "GPU-c600d2e3-6bce-ea4a-4015-42a04aa838c0.json",
    ] {
        let p = load_path(&fixture(run)).unwrap();
        let plan = plan(&p, 512 * MIB);
        assert!(plan.passes >= 2, "{run}: {plan:#?}");
        assert!(plan.scope_bytes <= 256 * MIB, "{run}: {plan:#?}");
        // Past the knee the curve already fell; the 1 GiB plan keeps within it too.
        assert!(self::plan(&p, 1 << 30).scope_bytes < 512 * MIB, "{run}");
    }
}

/// The H200 `661d3e91`'s profile and benchmark sweeps (sampling or grouping).
fn h200_661d3e91(bench: &str) -> (Profile, Vec<Value>) {
    let p = load_path(&fixture("GPU-661d3e91-2159-b4db-99fb-7836e312516d.json")).unwrap();
    let text = std::fs::read_to_string(fixture(&format!("bench-{bench}-661d3e91.json"))).unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    (p, json["rows"].as_array().unwrap().clone())
}

/// A configuration's median over the best of the row's sweep.
fn over_best(row: &Value, config: &str) -> f64 {
    let sweep = row["sweep"].as_array().unwrap();
    let ms = |s: &Value| s["median_ms"].as_f64().unwrap();
    let best = sweep.iter().map(ms).fold(f64::INFINITY, f64::min);
    let measured = sweep.iter().find(|s| s["config"] == config).unwrap();
    ms(measured) / best
}

#[test]
fn a_bet_too_costly_within_the_first_reach_takes_a_safe_split_over_it() {
    // `661d3e91`: the first pinned level reached only 5.3 MiB (1367 x 4 KiB). One pass
    // over 256 MiB ran 1.062x the best there, as the 49 passes within that reach were too
    // costly a bet (and the curve read 128 MiB 3% slower than 256 MiB). Every split of
    // 16-128 MiB ran within 2% of the best.
    let (p, rows) = h200_661d3e91("sampling");
    let plan = plan(&p, 256 * MIB);
    assert!(
        (2..=32).contains(&plan.passes) && plan.scope_bytes > first_pinned_reach(&p),
        "{plan:#?}"
    );
    let bet = plan
        .reasons
        .iter()
        .find(|r| r.contains("the reach of the fastest TLB level"))
        .unwrap();
    assert!(
        bet.contains("(over the reach") && bet.contains("(taken:"),
        "{bet}"
    );
    let row = rows.iter().find(|r| r["case"] == "pinned 256 MiB").unwrap();
    assert!(over_best(row, "1 pass") > 1.05);
}

#[test]
fn a_pinned_table_is_not_scoped_at_the_knee() {
    // `661d3e91`: naive 2 x 512 MiB, scopes at the zero-copy knee (512 MiB), ran 1.066x
    // the best (copy 8 x 128 MiB) into a 1 GiB pinned table. Priced one doubling on, 512
    // MiB scopes lose to smaller ones.
    let (p, rows) = h200_661d3e91("grouping");
    let w = GroupingWorkload {
        table_bytes: 1 << 30,
        table_memory: MemoryKind::Pinned,
        input_memory: MemoryKind::Pinned,
        input_bytes: Some(256 * MIB),
    };
    let plan = grouping::plan(&p, &w).unwrap();
    assert!(plan.passes > 2 && plan.scope_bytes < 512 * MIB, "{plan:#?}");
    // Every plan of 512 MiB scopes was over 1.05x the best there; the new one is between
    // the sweep's powers of two (3 x 341 MiB, naive 4 x 256 MiB was 1.024x).
    let row = rows
        .iter()
        .find(|r| r["case"] == "table 1 GiB (pinned), 67108864 keys pinned")
        .unwrap();
    for config in ["naive 2 x 512 MiB", "copy 2 x 512 MiB"] {
        assert!(over_best(row, config) > 1.05, "{config}");
    }
}
