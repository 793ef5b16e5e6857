//! The bench's rows: a text table and the JSON document of `--json`.

use memtune::core::size::format_bytes;
use memtune::MemoryKind;
use memtune_example_support::report::{self as support, columns, ratio, second_run};
use serde_json::{json, Value};

pub use memtune_example_support::bench::DecisionSummary;
pub use memtune_example_support::report::Timed;

/// One variant and size of the bench.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub variant: String,
    pub memory: MemoryKind,
    pub bytes: u64,
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
    /// The sum every plan gave (fixed point).
    pub sum: u64,
}

impl Row {
    pub fn untuned_over_autotuned(&self) -> f64 {
        ratio(self.untuned.median_ms, self.autotuned.median_ms)
    }
    pub fn autotuned_over_best(&self) -> f64 {
        ratio(self.autotuned.median_ms, self.best.median_ms)
    }
    pub fn plan_over_best(&self) -> f64 {
        ratio(self.plan.median_ms, self.best.median_ms)
    }

    /// The row as `--json` writes it: exactly these fields.
    pub fn json(&self) -> Value {
        json!({
            "workload": "sampling",
            "variant": self.variant,
            "memory": self.memory.to_string(),
            "bytes": self.bytes,
            "untuned_ms": self.untuned.median_ms,
            "plan_ms": self.plan.median_ms,
            "autotuned_ms": self.autotuned.median_ms,
            "best_ms": self.best.median_ms,
            "best_config": self.best_config,
            "candidates_timed": self.tuning.candidates_timed,
            "tuning_ms": self.tuning.tuning_ms,
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
    "variant",
    "size",
    "untuned_ms",
    "plan_ms",
    "autotuned_ms",
    "best_ms",
    "best_config",
    "untuned/autotuned",
    "autotuned/best",
    "plan/best",
    "candidates_timed",
    "tuning_ms",
    "cost_in_untuned",
];

/// The table, one line per row and a line of detail under it.
pub fn table(rows: &[Row]) -> String {
    let cells: Vec<[String; 13]> = rows
        .iter()
        .map(|r| {
            [
                r.variant.clone(),
                format!("{} {}", r.memory, format_bytes(r.bytes)),
                format!("{:.3}", r.untuned.median_ms),
                format!("{:.3}", r.plan.median_ms),
                format!("{:.3}", r.autotuned.median_ms),
                format!("{:.3}", r.best.median_ms),
                r.best_config.clone(),
                format!("{:.3}", r.untuned_over_autotuned()),
                format!("{:.3}", r.autotuned_over_best()),
                format!("{:.3}", r.plan_over_best()),
                format!("{} of {}", r.tuning.candidates_timed, r.tuning.candidates),
                format!("{:.1}", r.tuning.tuning_ms),
                r.tuning
                    .cost_in_untuned
                    .map_or_else(|| "-".to_string(), |c| format!("{c:.1}")),
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
            "    untuned {} | plan {}: {} | autotuned {}: {} | best {}\n",
            r.untuned.show(),
            r.plan_config,
            r.plan.show(),
            r.autotuned_config,
            r.autotuned.show(),
            r.best.show(),
        ));
        out.push_str(&format!(
            "    tuning: {} launches, {}; second run with the stored decision timed {}\n",
            r.tuning.launches,
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
            variant: "reads 64".into(),
            memory: MemoryKind::Device,
            bytes: 384 << 20,
            untuned: timed(3.0),
            plan_config: "1 pass".into(),
            plan: timed(3.0),
            autotuned_config: "4 passes of 96 MiB".into(),
            autotuned: timed(2.0),
            best_config: "4 passes of 96 MiB".into(),
            best: timed(2.0),
            tuning: DecisionSummary {
                candidates_timed: 4,
                candidates: 5,
                tuning_ms: 60.0,
                launches: 20,
                cost_in_untuned: Some(20.0),
                why: "fastest median".into(),
            },
            second_run_timed: false,
            sum: 1,
        }
    }

    #[test]
    fn json_rows_have_exactly_the_fields() {
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
            "cost_in_untuned",
            "second_run_timed",
        ];
        want.sort_unstable();
        assert_eq!(keys, want);
        assert_eq!(v["workload"], "sampling");
        assert_eq!(v["memory"], "device");
        assert_eq!(v["second_run_timed"], false);
        let doc = document("NVIDIA H100", "GPU-x", "cache", &[row()], &[]);
        assert_eq!(doc["uuid"], "GPU-x");
        assert_eq!(doc["rows"][0]["bytes"], 384 << 20);
    }

    #[test]
    fn the_table_has_ratios() {
        let t = table(&[row()]);
        assert!(t.starts_with("variant"), "{t}");
        assert!(t.contains("untuned/autotuned"), "{t}");
        assert!(t.contains("1.500"), "{t}");
        assert!(t.contains("4 of 5"), "{t}");
        assert!(t.contains("timed nothing"), "{t}");
    }
}
