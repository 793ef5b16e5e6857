//! One row of `cargo tune bench`: each version's measurement, the ratios, and the checks
//! against the targets for the untimed plan.

use super::sweep::{BANDWIDTH_SHARE, BEST_MARGIN};
use serde::Serialize;

/// One version's measurement: median and spread (slowest minus fastest) of the runs.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Measured {
    pub config: String,
    /// The median of its best round (the only one when there is one).
    pub median_ms: f64,
    /// Slowest minus fastest run of that round.
    pub spread_ms: f64,
    /// Every run, round after round.
    pub runs_ms: Vec<f64>,
    /// Each round's median.
    pub round_medians_ms: Vec<f64>,
    /// The result, printed (a sum, a grouping digest, an output digest): equal across
    /// versions when they computed the same thing.
    pub result: String,
}

/// One workload size: the three versions, the whole sweep, and their ratios.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Row {
    pub case: String,
    /// Region, table or input bytes (the plot's x axis).
    pub size_bytes: u64,
    pub untuned: Measured,
    pub tuned: Measured,
    /// The fastest of the sweep, the untuned and the tuned version.
    pub best: Measured,
    pub sweep: Vec<Measured>,
    /// Sweep configurations that could not run here (e.g. too little memory), and why.
    pub skipped: Vec<String>,
    /// Every version and sweep entry gave the same result.
    pub results_match: bool,
    pub tuned_over_best: f64,
    pub untuned_over_tuned: f64,
    /// Stencil only: effective bandwidth of the tuned version, cells read once and written
    /// once, in GB/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tuned_gb_per_s: Option<f64>,
    /// The workload tuned on this kernel by the autotuner, when it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub autotuned: Option<super::autotuned::Autotuned>,
    /// Why the autotuner gave no plan for this row.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub autotune_error: Option<String>,
    /// Untuned against the untimed plan in back-to-back pairs (ratio untuned/plan; absent
    /// when the plan is untuned).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paired_plan_untuned: Option<super::autotuned::Paired>,
    /// The untimed plan against the row's best in back-to-back pairs (ratio plan/best;
    /// absent when the plan is the best).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paired_plan_best: Option<super::autotuned::Paired>,
}

impl Row {
    /// Whether the row's region or table is in pinned host memory.
    pub fn pinned(&self) -> bool {
        self.case.contains("(pinned)") || self.case.starts_with("pinned")
    }

    /// Builds a row; `best` is the fastest of `sweep`, `untuned` and `tuned`.
    pub fn new(
        case: String,
        size_bytes: u64,
        untuned: Measured,
        tuned: Measured,
        sweep: Vec<Measured>,
        skipped: Vec<String>,
    ) -> Row {
        let best = sweep
            .iter()
            .chain([&untuned, &tuned])
            .min_by(|a, b| a.median_ms.total_cmp(&b.median_ms))
            .cloned()
            .expect("untuned and tuned are always there");
        let results_match = sweep
            .iter()
            .chain([&tuned])
            .all(|m| m.result == untuned.result);
        Row {
            case,
            size_bytes,
            tuned_over_best: ratio(tuned.median_ms, best.median_ms),
            untuned_over_tuned: ratio(untuned.median_ms, tuned.median_ms),
            untuned,
            tuned,
            best,
            sweep,
            skipped,
            results_match,
            tuned_gb_per_s: None,
            autotuned: None,
            autotune_error: None,
            paired_plan_untuned: None,
            paired_plan_best: None,
        }
    }

    /// Untuned over the untimed plan: paired where measured so (drift between rounds moves
    /// zero-copy times 2-8%), else the rounds' medians.
    pub fn untuned_over_plan(&self) -> f64 {
        self.paired_plan_untuned
            .as_ref()
            .map_or(ratio(self.untuned.median_ms, self.tuned.median_ms), |p| {
                p.ratio
            })
    }

    /// The untimed plan over the best: paired where measured so, else the rounds' medians.
    pub fn plan_over_best(&self) -> f64 {
        self.paired_plan_best
            .as_ref()
            .map_or(ratio(self.tuned.median_ms, self.best.median_ms), |p| {
                p.ratio
            })
    }

    /// The row's measurement of a configuration: median, spread and result.
    pub fn known(&self, config: &str) -> Option<(f64, f64, String)> {
        self.sweep
            .iter()
            .chain([&self.untuned, &self.tuned])
            .find(|m| m.config == config)
            .map(|m| (m.median_ms, m.spread_ms, m.result.clone()))
    }

    /// The tuned version is slower than the untuned one by more than the noise: the larger
    /// spread of the two measurements.
    pub fn tuned_slower_than_untuned(&self) -> bool {
        let noise = self.tuned.spread_ms.max(self.untuned.spread_ms);
        self.tuned.median_ms > self.untuned.median_ms + noise
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        f64::NAN
    }
}

/// One of the targets: met or not, and the rows that miss it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Check {
    pub target: String,
    pub met: bool,
    pub detail: String,
    pub misses: Vec<String>,
}

/// "Tuned within 5% of the exhaustive best" over `rows`.
pub fn check_within_best(rows: &[Row]) -> Check {
    let misses: Vec<String> = rows
        .iter()
        .filter(|r| r.plan_over_best().is_nan() || r.plan_over_best() > BEST_MARGIN)
        .map(|r| {
            format!(
                "{}: tuned {} is {:.1}% slower than {}",
                r.case,
                r.tuned.config,
                (r.plan_over_best() - 1.0) * 100.0,
                r.best.config
            )
        })
        .collect();
    let worst = rows
        .iter()
        .map(Row::plan_over_best)
        .fold(f64::NAN, f64::max);
    Check {
        target: "tuned within 5% of the exhaustive best".into(),
        met: misses.is_empty() && !rows.is_empty(),
        detail: format!("worst tuned/best {worst:.3} over {} sizes", rows.len()),
        misses,
    }
}

/// "Tuned never slower than untuned beyond measured noise" over `rows`.
pub fn check_not_slower(rows: &[Row]) -> Check {
    let misses: Vec<String> = rows
        .iter()
        .filter(|r| r.tuned_slower_than_untuned())
        .map(|r| {
            format!(
                "{}: tuned {:.3} ms, untuned {:.3} ms (noise {:.3} ms)",
                r.case,
                r.tuned.median_ms,
                r.untuned.median_ms,
                r.tuned.spread_ms.max(r.untuned.spread_ms)
            )
        })
        .collect();
    let worst = rows
        .iter()
        .map(|r| r.untuned_over_tuned)
        .fold(f64::NAN, f64::min);
    Check {
        target: "tuned never slower than untuned beyond noise".into(),
        met: misses.is_empty() && !rows.is_empty(),
        detail: format!("lowest untuned/tuned {worst:.3}"),
        misses,
    }
}

/// "The stencil reaching at least 80% of the device copy bandwidth at 512^3 fp32": the
/// row named `case`, against `copy_gb_per_s`.
pub fn check_bandwidth(rows: &[Row], case: &str, copy_gb_per_s: f64) -> Check {
    let target = format!("{case}: tuned stencil at least 80% of the device copy bandwidth");
    let Some(got) = rows
        .iter()
        .find(|r| r.case == case)
        .and_then(|r| r.tuned_gb_per_s)
    else {
        return Check {
            target,
            met: false,
            detail: format!("no {case} row was measured"),
            misses: vec![case.to_string()],
        };
    };
    let share = got / copy_gb_per_s;
    let met = share >= BANDWIDTH_SHARE;
    Check {
        target,
        met,
        detail: format!(
            "{got:.0} GB/s of {copy_gb_per_s:.0} GB/s copy bandwidth: {:.1}%",
            share * 100.0
        ),
        misses: if met {
            vec![]
        } else {
            vec![format!(
                "{case}: {:.1}% short of 80%",
                (BANDWIDTH_SHARE - share) * 100.0
            )]
        },
    }
}
