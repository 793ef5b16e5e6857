//! The bench's rows: a text table and the JSON document of `--json`.

use memtune::core::size::format_bytes;
use memtune_example_support::report::{self as support, columns, ratio, second_run};
use serde_json::{json, Value};

pub use memtune_example_support::bench::DecisionSummary;
pub use memtune_example_support::report::Timed;

/// One case of the bench.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The case: `f32 200x200x200` (the dtype, the dims, ` xN` for N repeats).
    pub variant: String,
    pub dims: [u32; 3],
    /// Bytes of one volume.
    pub bytes: u64,
    pub untuned: Timed,
    pub plan_config: String,
    pub plan: Timed,
    pub autotuned_config: String,
    pub autotuned: Timed,
    pub best_config: String,
    pub best: Timed,
    /// The device copy of the volume (input to output).
    pub copy: Timed,
    /// Distinct plans timed for the best (the sweep and the autotuner's candidates).
    pub plans_timed: usize,
    /// The autotuner's decision, from the first (tuning) call.
    pub tuning: DecisionSummary,
    pub second_run_timed: bool,
}

/// GB/s of a sweep that reads and writes each of `bytes` once in `ms`.
pub fn gb_per_s(bytes: u64, ms: f64) -> f64 {
    ratio(2.0 * bytes as f64, ms * 1e6)
}

impl Row {
    pub fn autotuned_over_best(&self) -> f64 {
        ratio(self.autotuned.median_ms, self.best.median_ms)
    }
    pub fn untuned_over_autotuned(&self) -> f64 {
        ratio(self.untuned.median_ms, self.autotuned.median_ms)
    }
    pub fn untuned_over_plan(&self) -> f64 {
        ratio(self.untuned.median_ms, self.plan.median_ms)
    }
    /// The fraction of the device copy's bandwidth a time reaches.
    pub fn of_copy(&self, t: &Timed) -> f64 {
        ratio(self.copy.median_ms, t.median_ms)
    }

    /// The row as `--json` writes it: exactly these fields.
    pub fn json(&self) -> Value {
        json!({
            "workload": "stencil",
            "variant": self.variant,
            "memory": "device",
            "bytes": self.bytes,
            "untuned_ms": self.untuned.median_ms,
            "plan_ms": self.plan.median_ms,
            "autotuned_ms": self.autotuned.median_ms,
            "best_ms": self.best.median_ms,
            "best_config": self.best_config,
            "candidates_timed": self.tuning.candidates_timed,
            "tuning_ms": self.tuning.tuning_ms,
            "plan_config": self.plan_config,
            "autotuned_config": self.autotuned_config,
            "copy_ms": self.copy.median_ms,
            "plans_timed": self.plans_timed,
            "cost_in_untuned": self.tuning.cost_in_untuned,
            "second_run_timed": self.second_run_timed,
        })
    }
}

/// The `--json` document.
pub fn document(device: &str, uuid: &str, profile: &str, rows: &[Row], errors: &[String]) -> Value {
    support::document(
        device,
        uuid,
        profile,
        rows.iter().map(Row::json).collect(),
        errors,
    )
}

const HEADER: [&str; 13] = [
    "case",
    "size",
    "untuned_ms",
    "plan_ms",
    "autotuned_ms",
    "best_ms",
    "best_config",
    "autotuned/best",
    "untuned/autotuned",
    "untuned/plan",
    "best_GB/s",
    "best/copy",
    "candidates_timed",
];

/// The table, one line per row and lines of detail under it.
pub fn table(rows: &[Row]) -> String {
    let cells: Vec<[String; 13]> = rows
        .iter()
        .map(|r| {
            [
                r.variant.clone(),
                format_bytes(r.bytes),
                format!("{:.3}", r.untuned.median_ms),
                format!("{:.3}", r.plan.median_ms),
                format!("{:.3}", r.autotuned.median_ms),
                format!("{:.3}", r.best.median_ms),
                r.best_config.clone(),
                format!("{:.3}", r.autotuned_over_best()),
                format!("{:.3}", r.untuned_over_autotuned()),
                format!("{:.3}", r.untuned_over_plan()),
                format!("{:.0}", gb_per_s(r.bytes, r.best.median_ms)),
                format!("{:.1}%", 100.0 * r.of_copy(&r.best)),
                format!("{} of {}", r.tuning.candidates_timed, r.tuning.candidates),
            ]
        })
        .collect();
    let lines = columns(HEADER, &cells, &[0, 1, 6]);
    let mut out = lines[0].clone();
    out.push('\n');
    for (r, line) in rows.iter().zip(&lines[1..]) {
        out.push_str(line);
        out.push('\n');
        out.push_str(&format!(
            "    untuned {} | plan {}: {} | autotuned {}: {} | best of {} plans {}\n",
            r.untuned.show(),
            r.plan_config,
            r.plan.show(),
            r.autotuned_config,
            r.autotuned.show(),
            r.plans_timed,
            r.best.show(),
        ));
        out.push_str(&format!(
            "    device copy {} = {:.0} GB/s; untuned {:.1}%, autotuned {:.1}% of it\n",
            r.copy.show(),
            gb_per_s(r.bytes, r.copy.median_ms),
            100.0 * r.of_copy(&r.untuned),
            100.0 * r.of_copy(&r.autotuned),
        ));
        out.push_str(&format!(
            "    tuning: {} launches, {:.1} ms{}, {}; second run with the stored decision timed {}\n",
            r.tuning.launches,
            r.tuning.tuning_ms,
            r.tuning.cost_in_untuned
                .map_or(String::new(), |c| format!(" ({c:.1} untuned launches)")),
            r.tuning.why,
            second_run(r.second_run_timed)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timed(ms: f64) -> Timed {
        Timed {
            median_ms: ms,
            min_ms: ms * 0.99,
            max_ms: ms * 1.01,
        }
    }

    fn row() -> Row {
        Row {
            variant: "f32 200x200x200".into(),
            dims: [200, 200, 200],
            bytes: 32_000_000,
            untuned: timed(3.0),
            plan_config: "plain 32x8x1".into(),
            plan: timed(2.5),
            autotuned_config: "streaming 32x4x1".into(),
            autotuned: timed(2.0),
            best_config: "streaming 64x4x1".into(),
            best: timed(1.6),
            copy: timed(0.04),
            plans_timed: 90,
            tuning: DecisionSummary {
                candidates_timed: 4,
                candidates: 5,
                tuning_ms: 60.0,
                launches: 20,
                cost_in_untuned: Some(20.0),
                why: "fastest median".into(),
            },
            second_run_timed: false,
        }
    }

    #[test]
    fn json_rows_have_the_fields() {
        let v = row().json();
        let mut keys: Vec<&str> = v
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        let mut want = vec![
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
            "plan_config",
            "autotuned_config",
            "copy_ms",
            "plans_timed",
            "cost_in_untuned",
            "second_run_timed",
        ];
        want.sort_unstable();
        assert_eq!(keys, want);
        assert_eq!(v["workload"], "stencil");
        assert_eq!(v["memory"], "device");
        assert_eq!(v["variant"], "f32 200x200x200");
        let doc = document("NVIDIA H100", "GPU-x", "cache", &[row()], &[]);
        assert_eq!(doc["uuid"], "GPU-x");
        assert_eq!(doc["rows"][0]["bytes"], 32_000_000);
    }

    #[test]
    fn the_table_has_ratios_and_bandwidth() {
        let r = row();
        assert_eq!(r.autotuned_over_best(), 1.25);
        assert_eq!(r.untuned_over_autotuned(), 1.5);
        assert_eq!(r.untuned_over_plan(), 1.2);
        // 64 MB moved in 1.6 ms: 40 GB/s; the copy moves it in 0.04 ms.
        assert!((gb_per_s(r.bytes, 1.6) - 40.0).abs() < 1e-9);
        let t = table(&[r]);
        assert!(t.starts_with("case"), "{t}");
        for want in [
            "autotuned/best",
            "1.250",
            "1.500",
            "1.200",
            "2.5%",
            "4 of 5",
            "timed nothing",
        ] {
            assert!(t.contains(want), "{want}: {t}");
        }
    }
}
