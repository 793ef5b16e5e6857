//! The bench's rows: a text table and the JSON document of `--json`.

use memtune::core::size::format_bytes;
use memtune_example_support::report::{self as support, ratio, Timings};
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
    pub timings: Timings,
    /// The device copy of the volume (input to output).
    pub copy: Timed,
    /// Distinct plans timed for the best (the sweep and the autotuner's candidates).
    pub plans_timed: usize,
}

/// GB/s of a sweep that reads and writes each of `bytes` once in `ms`.
pub fn gb_per_s(bytes: u64, ms: f64) -> f64 {
    ratio(2.0 * bytes as f64, ms * 1e6)
}

impl Row {
    /// The fraction of the device copy's bandwidth a time reaches.
    pub fn of_copy(&self, t: &Timed) -> f64 {
        ratio(self.copy.median_ms, t.median_ms)
    }

    /// The row as `--json` writes it: exactly these fields.
    pub fn json(&self) -> Value {
        let t = &self.timings;
        let own = json!({
            "plan_config": t.plan_config,
            "autotuned_config": t.autotuned_config,
            "copy_ms": self.copy.median_ms,
            "plans_timed": self.plans_timed,
        });
        t.json("stencil", &self.variant, "device", self.bytes, own)
    }
}

/// The table, one line per row and lines of detail under it.
pub fn table(rows: &[Row]) -> String {
    let header = support::header(
        &["case", "size"],
        &["autotuned/best", "untuned/autotuned", "untuned/plan"],
        &["best_GB/s", "best/copy", "candidates_timed"],
    );
    let cells = |r: &Row| {
        let t = &r.timings;
        let ratios = [
            t.autotuned_over_best(),
            t.untuned_over_autotuned(),
            t.untuned_over_plan(),
        ];
        let tail = [
            format!("{:.0}", gb_per_s(r.bytes, t.best.median_ms)),
            format!("{:.1}%", 100.0 * r.of_copy(&t.best)),
            t.candidates_cell(),
        ];
        t.cells([r.variant.clone(), format_bytes(r.bytes)], &ratios, tail)
    };
    let details = |r: &Row| {
        let t = &r.timings;
        let runs = t.runs_line(&format!("best of {} plans", r.plans_timed));
        let copy = format!(
            "    device copy {} = {:.0} GB/s; untuned {:.1}%, autotuned {:.1}% of it\n",
            r.copy.show(),
            gb_per_s(r.bytes, r.copy.median_ms),
            100.0 * r.of_copy(&t.untuned),
            100.0 * r.of_copy(&t.autotuned),
        );
        let tuning = format!(
            "    tuning: {} launches, {:.1} ms{}, {}; second run with the stored decision timed {}\n",
            t.tuning.launches,
            t.tuning.tuning_ms,
            t.tuning.cost_in_untuned
                .map_or(String::new(), |c| format!(" ({c:.1} untuned launches)")),
            t.tuning.why,
            support::second_run(t.second_run_timed)
        );
        runs + &copy + &tuning
    };
    support::table(&header, &[0, 1, 6], rows, cells, details)
}

#[cfg(test)]
mod tests {
    use super::*;
    use memtune_example_support::testing::{assert_contains, assert_row, timed, timings};

    fn row() -> Row {
        let configs = ["plain 32x8x1", "streaming 32x4x1", "streaming 64x4x1"];
        Row {
            variant: "f32 200x200x200".into(),
            dims: [200, 200, 200],
            bytes: 32_000_000,
            timings: timings([3.0, 2.5, 2.0, 1.6], configs),
            copy: timed(0.04),
            plans_timed: 90,
        }
    }

    #[test]
    fn json_rows_have_the_fields() {
        let v = row().json();
        let own = ["plan_config", "autotuned_config", "copy_ms", "plans_timed"];
        assert_row(&v, &own, "stencil", "device", 32_000_000);
        assert_eq!(v["variant"], "f32 200x200x200");
    }

    #[test]
    fn the_table_has_ratios_and_bandwidth() {
        let r = row();
        assert_eq!(r.timings.autotuned_over_best(), 1.25);
        assert_eq!(r.timings.untuned_over_autotuned(), 1.5);
        assert_eq!(r.timings.untuned_over_plan(), 1.2);
        // 64 MB moved in 1.6 ms: 40 GB/s; the copy moves it in 0.04 ms.
        assert!((gb_per_s(r.bytes, 1.6) - 40.0).abs() < 1e-9);
        let t = table(&[r]);
        assert!(t.starts_with("case"), "{t}");
        let wants = ["autotuned/best", "1.250", "1.500", "1.200", "2.5%"];
        assert_contains(&t, &wants);
        assert_contains(&t, &["4 of 5", "timed nothing"]);
    }
}
