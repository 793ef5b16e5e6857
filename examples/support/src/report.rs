//! The bench's text table and the JSON document of `--json`: the timings every row has,
//! the columns and fields they give, and the layout. Each example adds its own columns
//! and fields.

use std::path::Path;

use serde_json::{json, Value};

use crate::bench::DecisionSummary;

/// A median of timed runs and their spread.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timed {
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
}

impl Timed {
    /// `None` without finite runs.
    pub fn of(runs: &[f64]) -> Option<Timed> {
        let mut v: Vec<f64> = runs.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        // The middle run; the mean of the two middle ones for an even count.
        let n = v.len();
        let median_ms = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Timed {
            median_ms,
            min_ms: v[0],
            max_ms: v[n - 1],
        })
    }

    /// `3.449 (3.401..3.512)`.
    pub fn show(&self) -> String {
        format!(
            "{:.3} ({:.3}..{:.3})",
            self.median_ms, self.min_ms, self.max_ms
        )
    }
}

/// `a / b`; NaN when `b` is not positive.
pub fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        f64::NAN
    }
}

/// How the detail line words whether the second run (stored decision) timed anything.
pub fn second_run(timed: bool) -> &'static str {
    if timed {
        "SOMETHING"
    } else {
        "nothing"
    }
}

/// The `--json` document: the device, the profile used, the rows and the failed rows.
pub fn document(
    device: &str,
    uuid: &str,
    profile: &str,
    rows: Vec<Value>,
    errors: &[String],
) -> Value {
    json!({
        "device": device,
        "uuid": uuid,
        "profile": profile,
        "rows": rows,
        "errors": errors,
    })
}

/// Writes `doc` pretty-printed to `path`, with a final newline.
pub fn write_json(path: &Path, doc: &Value) -> Result<(), String> {
    let text = serde_json::to_string_pretty(doc).map_err(|e| e.to_string())?;
    std::fs::write(path, text + "\n").map_err(|e| format!("writing {}: {e}", path.display()))
}

/// What every bench row times: the untuned plan, the model's plan, the autotuned plan and
/// the best one, with the tuning decision behind the autotuned plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Timings {
    pub untuned: Timed,
    pub plan_config: String,
    pub plan: Timed,
    pub autotuned_config: String,
    pub autotuned: Timed,
    pub best_config: String,
    pub best: Timed,
    /// The autotuner's decision, from the first (tuning) call.
    pub tuning: DecisionSummary,
    pub second_run_timed: bool,
}

/// The columns of [`Timings::time_cells`].
pub const TIME_COLUMNS: [&str; 5] = [
    "untuned_ms",
    "plan_ms",
    "autotuned_ms",
    "best_ms",
    "best_config",
];

/// The columns of [`Timings::tuning_cells`].
pub const TUNING_COLUMNS: [&str; 3] = ["candidates_timed", "tuning_ms", "cost_in_untuned"];

/// The columns of [`Timings::ratios`].
pub const RATIO_COLUMNS: [&str; 3] = ["untuned/autotuned", "autotuned/best", "plan/best"];

/// A bench table's header: the example's `lead` columns, [`TIME_COLUMNS`], its `ratios`
/// columns, then `tail` (the columns of [`Timings::cells`]).
pub fn header<'a>(lead: &[&'a str], ratios: &[&'a str], tail: &[&'a str]) -> Vec<&'a str> {
    [lead, &TIME_COLUMNS, ratios, tail].concat()
}

/// The fields of [`Timings::json`] besides the example's own.
pub const ROW_FIELDS: [&str; 13] = [
    "workload",
    "variant",
    "memory",
    "bytes",
    "untuned_ms",
    "plan_ms",
    "autotuned_ms",
    "best_ms",
    "best_config",
    "candidates_timed",
    "tuning_ms",
    "cost_in_untuned",
    "second_run_timed",
];

impl Timings {
    pub fn untuned_over_autotuned(&self) -> f64 {
        ratio(self.untuned.median_ms, self.autotuned.median_ms)
    }
    pub fn autotuned_over_best(&self) -> f64 {
        ratio(self.autotuned.median_ms, self.best.median_ms)
    }
    pub fn plan_over_best(&self) -> f64 {
        ratio(self.plan.median_ms, self.best.median_ms)
    }
    pub fn untuned_over_plan(&self) -> f64 {
        ratio(self.untuned.median_ms, self.plan.median_ms)
    }

    /// The values of [`RATIO_COLUMNS`].
    pub fn ratios(&self) -> [f64; 3] {
        [
            self.untuned_over_autotuned(),
            self.autotuned_over_best(),
            self.plan_over_best(),
        ]
    }

    /// A table line under a [`header`]: the `lead` cells, the [`Timings::time_cells`], the
    /// `ratios` to three decimals, then the `tail` cells.
    pub fn cells(
        &self,
        lead: impl IntoIterator<Item = String>,
        ratios: &[f64],
        tail: impl IntoIterator<Item = String>,
    ) -> Vec<String> {
        lead.into_iter()
            .chain(self.time_cells())
            .chain(ratios.iter().map(|x| format!("{x:.3}")))
            .chain(tail)
            .collect()
    }

    /// The cells of [`TIME_COLUMNS`]: the four medians, then the best plan.
    pub fn time_cells(&self) -> [String; 5] {
        [
            format!("{:.3}", self.untuned.median_ms),
            format!("{:.3}", self.plan.median_ms),
            format!("{:.3}", self.autotuned.median_ms),
            format!("{:.3}", self.best.median_ms),
            self.best_config.clone(),
        ]
    }

    /// `4 of 5`: the candidates timed, of all.
    pub fn candidates_cell(&self) -> String {
        format!(
            "{} of {}",
            self.tuning.candidates_timed, self.tuning.candidates
        )
    }

    /// The cells of [`TUNING_COLUMNS`].
    pub fn tuning_cells(&self) -> [String; 3] {
        [
            self.candidates_cell(),
            format!("{:.1}", self.tuning.tuning_ms),
            self.tuning
                .cost_in_untuned
                .map_or_else(|| "-".to_string(), |c| format!("{c:.1}")),
        ]
    }

    /// The detail line of every plan's runs; `best` names the best plan (`best`, `best of
    /// 90 plans`).
    pub fn runs_line(&self, best: &str) -> String {
        format!(
            "    untuned {} | plan {}: {} | autotuned {}: {} | {best} {}\n",
            self.untuned.show(),
            self.plan_config,
            self.plan.show(),
            self.autotuned_config,
            self.autotuned.show(),
            self.best.show(),
        )
    }

    /// `tuning: 20 launches, WHY; second run with the stored decision timed nothing`.
    pub fn tuning_summary(&self) -> String {
        format!(
            "tuning: {} launches, {}; second run with the stored decision timed {}",
            self.tuning.launches,
            self.tuning.why,
            second_run(self.second_run_timed)
        )
    }

    /// A row as `--json` writes it: the [`ROW_FIELDS`], then the fields of `own` (an
    /// object) that are the example's.
    pub fn json(
        &self,
        workload: &str,
        variant: &str,
        memory: &str,
        bytes: u64,
        own: Value,
    ) -> Value {
        let mut row = json!({
            "workload": workload,
            "variant": variant,
            "memory": memory,
            "bytes": bytes,
            "untuned_ms": self.untuned.median_ms,
            "plan_ms": self.plan.median_ms,
            "autotuned_ms": self.autotuned.median_ms,
            "best_ms": self.best.median_ms,
            "best_config": self.best_config,
            "candidates_timed": self.tuning.candidates_timed,
            "tuning_ms": self.tuning.tuning_ms,
            "cost_in_untuned": self.tuning.cost_in_untuned,
            "second_run_timed": self.second_run_timed,
        });
        if let (Some(fields), Value::Object(own)) = (row.as_object_mut(), own) {
            fields.extend(own);
        }
        row
    }
}

/// The bench's table: `header`, then per row a line of its `cells` (see [`columns`]:
/// left-aligned where `left` holds the index) and its `details` (whole lines).
pub fn table<R>(
    header: &[&str],
    left: &[usize],
    rows: &[R],
    cells: impl Fn(&R) -> Vec<String>,
    details: impl Fn(&R) -> String,
) -> String {
    let cells: Vec<Vec<String>> = rows.iter().map(cells).collect();
    let lines = columns(header, &cells, left);
    let mut out = lines[0].clone();
    out.push('\n');
    for (r, line) in rows.iter().zip(&lines[1..]) {
        out.push_str(line);
        out.push('\n');
        out.push_str(&details(r));
    }
    out
}

/// A table's lines: `header` then each row of `cells`, columns two spaces apart and padded
/// to their widest cell, left-aligned where `left` holds their index, else right-aligned;
/// trailing spaces cut.
pub fn columns<C: AsRef<[String]>>(header: &[&str], cells: &[C], left: &[usize]) -> Vec<String> {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in cells {
        for (w, c) in widths.iter_mut().zip(row.as_ref()) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cols: &[String]| {
        let padded: Vec<String> = cols
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, &w))| {
                if left.contains(&i) {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect();
        padded.join("  ").trim_end().to_string()
    };
    let header: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    std::iter::once(line(&header))
        .chain(cells.iter().map(|c| line(c.as_ref())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_spreads() {
        let t = Timed::of(&[3.0, 1.0, 2.0, 5.0, 4.0]).expect("runs");
        assert_eq!((t.median_ms, t.min_ms, t.max_ms), (3.0, 1.0, 5.0));
        assert_eq!(Timed::of(&[1.0, 2.0]).map(|t| t.median_ms), Some(1.5));
        assert_eq!(Timed::of(&[f64::NAN]), None);
        assert_eq!(Timed::of(&[]), None);
        assert_eq!(t.show(), "3.000 (1.000..5.000)");
        assert!(ratio(1.0, 0.0).is_nan());
        assert_eq!(second_run(false), "nothing");
    }

    #[test]
    fn columns_pad_and_align() {
        let lines = columns(
            &["name", "ms"],
            &[["a".into(), "1.5".into()], ["long".into(), "10.25".into()]],
            &[0],
        );
        assert_eq!(lines, ["name     ms", "a       1.5", "long  10.25"]);
    }

    #[test]
    fn documents_have_the_fields() {
        let doc = document(
            "NVIDIA H100",
            "GPU-x",
            "cache",
            vec![json!({"bytes": 1})],
            &[],
        );
        assert_eq!(doc["uuid"], "GPU-x");
        assert_eq!(doc["rows"][0]["bytes"], 1);
        assert_eq!(doc["errors"], json!([]));
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("x.json");
        write_json(&path, &doc).expect("writes");
        let text = std::fs::read_to_string(&path).expect("reads");
        assert!(text.ends_with("}\n"), "{text}");
    }
}
