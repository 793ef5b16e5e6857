//! The autotuner replayed on recorded sweeps: for every sampling and grouping row that
//! `cargo tune bench` measured on an H100 or H200 (each configuration of an exhaustive sweep
//! timed on the GPU, `benchmarks/results/`), the candidates come from that machine's
//! profile, the session runs with the real rules, and each candidate's time is the sweep's,
//! interpolated in log2(passes) between measured pass counts (the nearest end outside
//! them). Interpolation is a model of the kernel, not a measurement: a pass count between
//! two measured ones is priced on the line between them. Sampling is also replayed with
//! kernels whose best split has another number of passes (the recorded curve stretched),
//! as a user's kernel would. Every session keeps to 5 candidates and 20 untuned launches
//! and never picks a plan slower than untuned.

use memtune_core::plan::{
    Approach, GroupingPlan, GroupingWorkload, SamplingPlan, SamplingWorkload,
};
use memtune_core::profile::{MemoryKind, Profile};
use memtune_core::store::load_path;
use memtune_core::tune::session::{run_trials, Budget, Stats, Trials};
use memtune_core::tune::{Candidate, Tunable, MAX_CANDIDATES};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// (bench JSON, the machine's profile) of every recorded run with a sampling sweep.
const RUNS: [(&str, &str); 6] = [
    (
        "benchmarks/results/h100/2026-11-26-e4ca9cc1-user-kernels/bench/bench-sampling.json",
        "benchmarks/results/h100/2026-11-26-e4ca9cc1-user-kernels/profile-GPU-e4ca9cc1-9894-07ce-6614-7f62bef2b3f2.json",
    ),
    (
        "benchmarks/results/h100/2026-11-26-57090dfd/bench-sampling.json",
        "benchmarks/results/h100/2026-11-26-57090dfd/profile-GPU-57090dfd-6d8e-e4a5-7281-b6a771708cfa.json",
    ),
    (
        "benchmarks/results/h100/2026-11-25-a0c8e126/bench-sampling.json",
        "benchmarks/results/h100/2026-11-25-a0c8e126/profile-GPU-a0c8e126-4152-9b33-7f87-3a79ad4282da.json",
    ),
    (
        "benchmarks/results/h100/2026-11-25-b9cd8c3b/bench-sampling.json",
        "benchmarks/results/h100/2026-11-25-b9cd8c3b/profile-GPU-b9cd8c3b-46b0-8568-1f4e-2b6244305dff.json",
    ),
    (
        "benchmarks/results/h200/2026-11-22-c9f64bde/bench/bench-sampling.json",
        "benchmarks/results/h200/2026-11-22-c9f64bde/profiles/GPU-c9f64bde-1a33-a799-a0e2-48ad3a5b26aa.json",
    ),
    (
        "benchmarks/results/h200/2026-11-22-2f0122bd/bench/bench-sampling.json",
        "benchmarks/results/h200/2026-11-22-2f0122bd/profiles/GPU-2f0122bd-39ab-bf54-3486-d0d5344992cb.json",
    ),
];

/// One recorded row: the workload and the measured (passes, median ms) points.
struct Recorded {
    case: String,
    work: SamplingWorkload,
    points: Vec<(u32, f64)>,
}

fn passes_of(config: &str) -> Option<u32> {
    config.split_whitespace().next()?.parse().ok()
}

fn rows(bench: &str) -> Vec<Recorded> {
    let text =
        std::fs::read_to_string(root().join(bench)).unwrap_or_else(|e| panic!("{bench}: {e}"));
    let doc: serde_json::Value = serde_json::from_str(&text).expect("bench JSON");
    let mut out = Vec::new();
    for row in doc["rows"].as_array().expect("rows") {
        let case = row["case"].as_str().expect("case").to_string();
        let memory = if case.starts_with("pinned") {
            MemoryKind::Pinned
        } else {
            MemoryKind::Device
        };
        // "device 2 GiB, 1024 reads"; older runs name no reads: the bench's defaults.
        let reads = case
            .split(", ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next()?.parse().ok())
            .unwrap_or(if memory == MemoryKind::Pinned {
                16
            } else {
                1024
            });
        let measured = row["sweep"]
            .as_array()
            .expect("sweep")
            .iter()
            .chain([&row["untuned"], &row["tuned"]]);
        let mut points: Vec<(u32, f64)> = measured
            .filter_map(|m| Some((passes_of(m["config"].as_str()?)?, m["median_ms"].as_f64()?)))
            .collect();
        points.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
        points.dedup_by_key(|p| p.0);
        out.push(Recorded {
            case,
            work: SamplingWorkload {
                region_bytes: row["size_bytes"].as_u64().expect("size_bytes"),
                memory,
                reads_per_thread: reads,
            },
            points,
        });
    }
    out
}

/// The recorded time at `passes`, linear in log2(passes) between measured counts.
fn interpolated(points: &[(u32, f64)], passes: f64) -> f64 {
    let x = passes.log2();
    let at = |i: usize| (f64::from(points[i].0).log2(), points[i].1);
    match points.iter().position(|p| f64::from(p.0) >= passes) {
        Some(0) => points[0].1,
        None => points[points.len() - 1].1,
        Some(i) => {
            let ((x0, y0), (x1, y1)) = (at(i - 1), at(i));
            y0 + (y1 - y0) * (x - x0) / (x1 - x0)
        }
    }
}

/// A kernel like the recorded one whose best pass count is `1 / shift` times as many: its
/// time at p passes is the recorded time at `p * shift` (one pass stays one pass).
fn kernel(points: &[(u32, f64)], shift: f64, passes: u32) -> f64 {
    if passes <= 1 {
        points[0].1
    } else {
        interpolated(points, (f64::from(passes) * shift).max(1.0))
    }
}

/// A session on recorded times: `time` prices each candidate the session launches.
struct Replay<'a, W: Tunable, T> {
    work: &'a W,
    time: T,
    candidates: Vec<Candidate<W::Plan>>,
}

impl<W: Tunable, T: Fn(&W::Plan) -> f64> Trials for &mut Replay<'_, W, T> {
    fn time(&mut self, i: usize) -> Result<f64, String> {
        Ok((self.time)(&self.candidates[i].plan))
    }
    fn refine(&mut self, stats: &[Stats]) -> bool {
        match self.work.next_candidate(&self.candidates, stats) {
            Some(c) => {
                self.candidates.push(c);
                true
            }
            None => false,
        }
    }
}

/// What a replayed session chose, every plan it tried, and its cost in untuned launches,
/// after checking the limits every session must keep.
fn replay<W: Tunable>(
    work: &W,
    profile: &Profile,
    time: impl Fn(&W::Plan) -> f64,
) -> (W::Plan, Vec<W::Plan>) {
    let first = work.candidates(profile).expect("candidates");
    let mut r = Replay {
        work,
        time,
        candidates: first.clone(),
    };
    let session = run_trials(first.len(), &Budget::default(), &mut r);
    let tried: Vec<W::Plan> = r.candidates.iter().map(|c| c.plan.clone()).collect();
    assert!(tried.len() <= MAX_CANDIDATES, "{tried:?}");
    let cost = session.cost_in_untuned.unwrap_or(0.0);
    assert!(cost <= 20.0, "cost {cost}: {tried:?}");
    let chosen = tried[session.chosen].clone();
    assert!(
        (r.time)(&chosen) <= (r.time)(&tried[0]),
        "slower than untuned: {tried:?}"
    );
    (chosen, tried)
}

/// Replays the recorded rows with a kernel shifted by `shift`: (picked / best, a line
/// saying what was tried), checking the limits every session must keep.
fn replay_all(shift: f64) -> Vec<(f64, String)> {
    let mut out = Vec::new();
    for (bench, profile) in RUNS {
        let profile: Profile =
            load_path(&root().join(profile)).unwrap_or_else(|e| panic!("{profile}: {e}"));
        // A TLB cliff is the hardware's, not the kernel's: only device rows, whose best
        // split the kernel decides, are shifted.
        let rows = rows(bench).into_iter();
        for r in rows.filter(|r| shift == 1.0 || r.work.memory == MemoryKind::Device) {
            let time = |p: u32| kernel(&r.points, shift, p);
            let (chosen, tried) = replay(&r.work, &profile, |p: &SamplingPlan| time(p.passes));
            let best = (1..=1024).map(time).fold(f64::INFINITY, f64::min);
            let tried: Vec<u32> = tried.iter().map(|p| p.passes).collect();
            let ratio = time(chosen.passes) / best;
            let line = format!(
                "{bench}: {}, kernel shifted {shift}x: picked {} of {tried:?}, {ratio:.3}x the best",
                r.case, chosen.passes
            );
            out.push((ratio, line));
        }
    }
    out
}

#[test]
fn the_autotuner_replayed_on_recorded_sweeps_lands_near_the_best() {
    let summary = |shift: f64| {
        let mut r = replay_all(shift);
        r.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mean = r.iter().map(|x| x.0).sum::<f64>() / r.len() as f64;
        let over = r.iter().filter(|x| x.0 > 1.05).count();
        let worst = r.last().cloned().unwrap_or_default();
        eprintln!(
            "shift {shift}: {} rows, mean {mean:.4}, {over} over 1.05, worst {}",
            r.len(),
            worst.1
        );
        (r.len(), mean, over, worst)
    };
    // The recorded kernels themselves: every row within 3.5% (the sweeps' own spread on
    // zero-copy rows is up to 7%). The worst, H100 57090dfd's device 384 MiB with 1024 reads,
    // wants 8 passes between the candidates' 6 and 12, and the refinement goes past 12 (the
    // curve still falls from 6 to 12): 1.030 here, and 1.030 measured by its bench.
    let (rows, mean, _, worst) = summary(1.0);
    assert!(rows >= 100, "{rows} rows replayed");
    assert!(
        mean <= 1.005 && worst.0 <= 1.035,
        "mean {mean}: {}",
        worst.1
    );
    // Kernels whose best split has fewer passes than the model's, as every kernel measured
    // beside memtune's so far (examples/user-gather, issue 18's gathers).
    for shift in [1.4, 2.0, 3.0, 4.0] {
        let (rows, mean, over, worst) = summary(shift);
        assert!(
            mean <= 1.01 && over * 25 <= rows,
            "shift {shift}: {}",
            worst.1
        );
    }
    // A kernel that wants a few more passes than the model's.
    let (rows, mean, over, worst) = summary(0.7);
    assert!(mean <= 1.015 && over * 15 <= rows, "shift 0.7: {}", worst.1);
}

/// (bench JSON, the machine's profile) of every recorded run with a grouping sweep.
const GROUPING_RUNS: [(&str, &str); 4] = [
    (
        "benchmarks/results/h100/2026-11-26-57090dfd/bench-grouping-pinned.json",
        "benchmarks/results/h100/2026-11-26-57090dfd/profile-GPU-57090dfd-6d8e-e4a5-7281-b6a771708cfa.json",
    ),
    (
        "benchmarks/results/h100/2026-11-25-b9cd8c3b/bench-grouping.json",
        "benchmarks/results/h100/2026-11-25-b9cd8c3b/profile-GPU-b9cd8c3b-46b0-8568-1f4e-2b6244305dff.json",
    ),
    (
        "benchmarks/results/h200/2026-11-22-c9f64bde/bench/bench-grouping.json",
        "benchmarks/results/h200/2026-11-22-c9f64bde/profiles/GPU-c9f64bde-1a33-a799-a0e2-48ad3a5b26aa.json",
    ),
    (
        "benchmarks/results/h200/2026-11-22-2f0122bd/bench/bench-grouping.json",
        "benchmarks/results/h200/2026-11-22-2f0122bd/profiles/GPU-2f0122bd-39ab-bf54-3486-d0d5344992cb.json",
    ),
];

/// `1 pass` or `naive|copy N x SIZE`: the approach and passes.
fn grouping_config(config: &str) -> Option<(Approach, u32)> {
    let mut words = config.split_whitespace();
    match words.next()? {
        "naive" => Some((Approach::Naive, words.next()?.parse().ok()?)),
        "copy" => Some((Approach::Copy, words.next()?.parse().ok()?)),
        _ => Some((Approach::Unscoped, passes_of(config)?)),
    }
}

#[test]
fn the_grouping_autotuner_replayed_on_recorded_sweeps_lands_near_the_best() {
    let mut worst = (0.0f64, String::new());
    let mut replayed = 0;
    for (bench, profile) in GROUPING_RUNS {
        let profile: Profile =
            load_path(&root().join(profile)).unwrap_or_else(|e| panic!("{profile}: {e}"));
        let text = std::fs::read_to_string(root().join(bench)).expect("bench JSON");
        let doc: serde_json::Value = serde_json::from_str(&text).expect("bench JSON");
        for row in doc["rows"].as_array().expect("rows") {
            // "table 256 MiB (pinned), 16777216 keys pinned"
            let case = row["case"].as_str().expect("case");
            let keys: u64 = case
                .split(", ")
                .nth(1)
                .and_then(|k| k.split_whitespace().next()?.parse().ok())
                .expect("keys");
            let work = GroupingWorkload {
                table_bytes: row["size_bytes"].as_u64().expect("size_bytes"),
                table_memory: if case.contains("(pinned)") {
                    MemoryKind::Pinned
                } else {
                    MemoryKind::Device
                },
                input_memory: MemoryKind::Pinned,
                input_bytes: Some(keys * 4),
            };
            let measured = row["sweep"].as_array().expect("sweep").iter();
            let all: Vec<(Approach, u32, f64)> = measured
                .chain([&row["untuned"], &row["tuned"]])
                .filter_map(|m| {
                    let (a, p) = grouping_config(m["config"].as_str()?)?;
                    Some((a, p, m["median_ms"].as_f64()?))
                })
                .collect();
            // Each approach's curve starts at the unscoped pass.
            let curve = |a: Approach| {
                let mut pts: Vec<(u32, f64)> = all
                    .iter()
                    .filter(|x| x.0 == a || x.0 == Approach::Unscoped)
                    .map(|x| (x.1, x.2))
                    .collect();
                pts.sort_by(|x, y| x.0.cmp(&y.0).then(x.1.total_cmp(&y.1)));
                pts.dedup_by_key(|x| x.0);
                pts
            };
            let (naive, copy) = (curve(Approach::Naive), curve(Approach::Copy));
            let time = |p: &GroupingPlan| {
                let pts = if p.approach == Approach::Copy {
                    &copy
                } else {
                    &naive
                };
                interpolated(pts, f64::from(p.passes))
            };
            let (chosen, tried) = replay(&work, &profile, time);
            let best = all.iter().map(|x| x.2).fold(f64::INFINITY, f64::min);
            let ratio = time(&chosen) / best;
            let labels: Vec<String> = tried.iter().map(GroupingWorkload::label).collect();
            let line = format!(
                "{bench}: {case}: picked {} of {labels:?}, {ratio:.3}x the best",
                GroupingWorkload::label(&chosen)
            );
            eprintln!("{line}");
            if ratio > worst.0 {
                worst = (ratio, line);
            }
            replayed += 1;
        }
    }
    assert!(replayed >= 20, "{replayed} rows replayed");
    assert!(worst.0 <= 1.025, "{}", worst.1);
}
