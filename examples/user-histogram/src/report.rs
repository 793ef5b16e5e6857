//! The bench's rows: a text table and the JSON document of `--json`.

use memtune::core::size::format_bytes;
use memtune::MemoryKind;
use memtune_example_support::report::{self as support, Timings, RATIO_COLUMNS, TUNING_COLUMNS};
use serde_json::{json, Value};

use crate::Digest;

pub use memtune_example_support::bench::DecisionSummary;
pub use memtune_example_support::report::Timed;

/// One variant and size of the bench.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub variant: String,
    /// Where the table lives.
    pub memory: MemoryKind,
    pub input_memory: MemoryKind,
    /// Bytes of the table.
    pub bytes: u64,
    pub rows: u64,
    pub timings: Timings,
    /// The table every plan built, digested.
    pub digest: Digest,
}

impl Row {
    /// The row as `--json` writes it: exactly these fields.
    pub fn json(&self) -> Value {
        let memory = self.memory.to_string();
        let own = json!({
            "input_memory": self.input_memory.to_string(),
            "rows": self.rows,
        });
        let t = &self.timings;
        t.json("grouping", &self.variant, &memory, self.bytes, own)
    }
}

/// The table, one line per row and a line of detail under it.
pub fn table(rows: &[Row]) -> String {
    let lead = ["variant", "table", "input", "rows"];
    let ratios = [&RATIO_COLUMNS[..], &["untuned/plan"]].concat();
    let header = support::header(&lead, &ratios, &TUNING_COLUMNS);
    let cells = |r: &Row| {
        let t = &r.timings;
        let [a, b, c] = t.ratios();
        let table = format!("{} {}", r.memory, format_bytes(r.bytes));
        let lead = [
            r.variant.clone(),
            table,
            r.input_memory.to_string(),
            r.rows.to_string(),
        ];
        t.cells(lead, &[a, b, c, t.untuned_over_plan()], t.tuning_cells())
    };
    let details = |r: &Row| {
        let t = &r.timings;
        let tuning = t.tuning_summary();
        format!("{}    table: {}; {tuning}\n", t.runs_line("best"), r.digest)
    };
    support::table(&header, &[0, 1, 2, 8], rows, cells, details)
}

#[cfg(test)]
mod tests {
    use super::*;
    use memtune_example_support::testing::{assert_contains, assert_row, timings};

    fn row() -> Row {
        let plan = "copy 4 passes of 256 MiB";
        Row {
            variant: "work 0".into(),
            memory: MemoryKind::Device,
            input_memory: MemoryKind::Pinned,
            bytes: 1 << 30,
            rows: 32 << 20,
            timings: timings([3.0, 3.0, 2.0, 2.0], ["1 pass", plan, plan]),
            digest: Digest::default(),
        }
    }

    #[test]
    fn json_rows_have_exactly_the_fields() {
        let v = row().json();
        assert_row(&v, &["input_memory", "rows"], "grouping", "device", 1 << 30);
        assert_eq!(v["input_memory"], "pinned");
    }

    #[test]
    fn the_table_has_ratios() {
        let t = table(&[row()]);
        assert!(t.starts_with("variant"), "{t}");
        let wants = [
            "untuned/autotuned",
            "1.500",
            "4 of 5",
            "untuned/plan",
            "timed nothing",
        ];
        assert_contains(&t, &wants);
    }
}
