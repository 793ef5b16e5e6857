//! The autotuner's targets over a workload's rows: autotuned within 2% of the exhaustive
//! best, never below 0.98 of untuned (both ratios from back-to-back pairs of launches where
//! the configurations differ, `rounds::paired`), at most 5 candidates and 20 untuned launches of
//! tuning, and a second lookup that times nothing. Also each row as one flat JSON record.

use super::autotuned::{AUTOTUNE_MARGIN, MAX_COST, NOT_SLOWER};
use super::sweep::{Check, Row};
use memtune_core::tune::MAX_CANDIDATES;
use serde_json::{json, Value};

fn check(
    target: &str,
    rows: &[Row],
    miss: impl Fn(&Row) -> Option<String>,
    detail: String,
) -> Check {
    let misses: Vec<String> = rows.iter().filter_map(miss).collect();
    Check {
        target: target.into(),
        met: misses.is_empty() && !rows.is_empty(),
        detail,
        misses,
    }
}

fn worst(rows: &[Row], f: impl Fn(&Row) -> Option<f64>, max: bool) -> f64 {
    let v = rows.iter().filter_map(f);
    if max {
        v.fold(f64::NAN, f64::max)
    } else {
        v.fold(f64::NAN, f64::min)
    }
}

/// Autotuned over best: paired where they were compared in pairs.
fn over_best(r: &Row) -> Option<f64> {
    Some(r.autotuned.as_ref()?.over_best(r.best.median_ms))
}

/// Untuned over autotuned: paired where they were compared in pairs.
fn untuned_over(r: &Row) -> Option<f64> {
    Some(r.autotuned.as_ref()?.untuned_over(r.untuned.median_ms))
}

/// The autotuner's targets over `rows`; a row without an autotuned plan misses them all.
pub fn autotune_checks(rows: &[Row]) -> Vec<Check> {
    let missing = |r: &Row| {
        r.autotuned.is_none().then(|| {
            format!(
                "{}: not autotuned: {}",
                r.case,
                r.autotune_error.as_deref().unwrap_or("?")
            )
        })
    };
    vec![
        check(
            "autotuned within 2% of the exhaustive best",
            rows,
            |r| {
                missing(r).or_else(|| {
                    let x = over_best(r)?;
                    (x > AUTOTUNE_MARGIN).then(|| format!("{}: autotuned/best {x:.3}", r.case))
                })
            },
            format!("worst autotuned/best {:.3}", worst(rows, over_best, true)),
        ),
        check(
            "autotuned never slower than untuned (untuned/autotuned >= 0.98)",
            rows,
            |r| {
                missing(r).or_else(|| {
                    let x = untuned_over(r)?;
                    (x < NOT_SLOWER).then(|| format!("{}: untuned/autotuned {x:.3}", r.case))
                })
            },
            format!(
                "lowest untuned/autotuned {:.3}",
                worst(rows, untuned_over, false)
            ),
        ),
        check(
            "at most 5 candidates and 20 untuned launches of tuning; a second run times nothing",
            rows,
            |r| {
                missing(r).or_else(|| {
                    let a = r.autotuned.as_ref()?;
                    let cost = a.cost_in_untuned.unwrap_or(f64::INFINITY);
                    (a.candidates.len() > MAX_CANDIDATES || cost > MAX_COST || a.second_run_timed)
                        .then(|| {
                            format!(
                                "{}: {} candidates, cost {cost:.1} untuned launches, second run timed: {}",
                                r.case,
                                a.candidates.len(),
                                a.second_run_timed
                            )
                        })
                })
            },
            format!(
                "highest cost {:.1} untuned launches",
                worst(rows, |r| r.autotuned.as_ref()?.cost_in_untuned, true)
            ),
        ),
    ]
}

/// "A plan made without timing never makes a kernel much slower than untuned":
/// untuned/plan at least this on every row.
pub const PLAN_NOT_SLOWER: f64 = 0.97;

/// The untimed plan's target over `rows`: untuned/plan at least [`PLAN_NOT_SLOWER`].
pub fn plan_check(rows: &[Row]) -> Check {
    let ratio = |r: &Row| Some(r.untuned_over_plan());
    check(
        "untimed plan never much slower than untuned (untuned/plan >= 0.97)",
        rows,
        |r| {
            let x = ratio(r)?;
            (x < PLAN_NOT_SLOWER).then(|| format!("{}: untuned/plan {x:.3}", r.case))
        },
        format!("lowest untuned/plan {:.3}", worst(rows, ratio, false)),
    )
}

/// The gain pinned memory's keys must keep: untuned over autotuned at least `ratio` on the
/// pinned rows of `min_bytes..=max_bytes` (sampling regions, grouping tables).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PinnedGain {
    pub min_bytes: u64,
    pub max_bytes: u64,
    pub ratio: f64,
}

/// The pinned gain `workload` is held to: sampling at least 9x at 2-16 GiB, grouping at
/// least 6x at 2-12 GiB tables; none for the others.
pub fn pinned_gain(workload: &str) -> Option<PinnedGain> {
    let (max_gib, ratio) = match workload {
        "sampling" => (16, 9.0),
        "grouping" => (12, 6.0),
        _ => return None,
    };
    Some(PinnedGain {
        min_bytes: 2 << 30,
        max_bytes: max_gib << 30,
        ratio,
    })
}

/// Untuned over autotuned by the rounds' medians (each configuration's best round of runs
/// of its own). The back-to-back pairs are for gaps of a few percent, where drift between
/// rounds matters; a gain of 6-9x is not such a gap, and a few pairs can catch a passing
/// disturbance whole (an H100's 2 GiB zero-copy pick ran 4.6-5.0 ms in four pairs, then
/// 3.5, as in every round).
fn gain_by_medians(r: &Row) -> Option<f64> {
    let a = r.autotuned.as_ref()?;
    (a.median_ms > 0.0).then(|| r.untuned.median_ms / a.median_ms)
}

/// The pinned gain check over `rows`, or `None` where the workload has no such target or
/// no row is in its range (a quick run, or `--sizes` without those sizes).
pub fn gain_check(workload: &str, rows: &[Row]) -> Option<Check> {
    let g = pinned_gain(workload)?;
    let in_range: Vec<Row> = rows
        .iter()
        .filter(|r| r.pinned() && (g.min_bytes..=g.max_bytes).contains(&r.size_bytes))
        .cloned()
        .collect();
    if in_range.is_empty() {
        return None;
    }
    Some(check(
        &format!(
            "pinned {workload} keeps its gain (untuned/autotuned >= {:.0}x at {}-{} GiB)",
            g.ratio,
            g.min_bytes >> 30,
            g.max_bytes >> 30
        ),
        &in_range,
        |r| match gain_by_medians(r) {
            None => Some(format!(
                "{}: not autotuned: {}",
                r.case,
                r.autotune_error.as_deref().unwrap_or("?")
            )),
            Some(x) if x < g.ratio => Some(format!("{}: untuned/autotuned {x:.2}x", r.case)),
            Some(_) => None,
        },
        format!(
            "lowest untuned/autotuned {:.2}x by the rounds' medians",
            worst(&in_range, gain_by_medians, false)
        ),
    ))
}

/// One row as the flat record the bench JSON's `table` holds.
pub fn flat(workload: &str, r: &Row) -> Value {
    let a = r.autotuned.as_ref();
    json!({
        "workload": workload,
        "variant": r.case,
        "memory": if r.pinned() { "pinned" } else { "device" },
        "bytes": r.size_bytes,
        "untuned_ms": r.untuned.median_ms,
        "plan_ms": r.tuned.median_ms,
        "plan_config": r.tuned.config,
        "autotuned_ms": a.map(|a| a.median_ms),
        "autotuned_config": a.map(|a| a.config.clone()),
        "best_ms": r.best.median_ms,
        "best_config": r.best.config,
        "candidates_timed": a.map(|a| a.candidates_timed),
        "tuning_ms": a.map(|a| a.tuning_ms),
        "tuning_cost_untuned_launches": a.and_then(|a| a.cost_in_untuned),
        "second_run_timed": a.map(|a| a.second_run_timed),
        "untuned_over_plan": r.untuned_over_plan(),
        "plan_over_best": r.plan_over_best(),
        "untuned_over_autotuned": untuned_over(r),
        "autotuned_over_best": over_best(r),
        "autotune_error": r.autotune_error,
    })
}
