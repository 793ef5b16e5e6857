//! The bench's rows: a text table and the JSON document of `--json`.

use memtune::core::size::format_bytes;
use memtune::MemoryKind;
use memtune_example_support::report::{self as support, Timings, RATIO_COLUMNS, TUNING_COLUMNS};
use serde_json::{json, Value};

pub use memtune_example_support::bench::DecisionSummary;
pub use memtune_example_support::report::Timed;

/// One variant and size of the bench.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub variant: String,
    pub memory: MemoryKind,
    pub bytes: u64,
    pub timings: Timings,
    /// The sum every plan gave (fixed point).
    pub sum: u64,
}

impl Row {
    /// The row as `--json` writes it: exactly these fields.
    pub fn json(&self) -> Value {
        let memory = self.memory.to_string();
        let t = &self.timings;
        t.json("sampling", &self.variant, &memory, self.bytes, json!({}))
    }
}

/// The table, one line per row and a line of detail under it.
pub fn table(rows: &[Row]) -> String {
    let header = support::header(&["variant", "size"], &RATIO_COLUMNS, &TUNING_COLUMNS);
    let cells = |r: &Row| {
        let t = &r.timings;
        let size = format!("{} {}", r.memory, format_bytes(r.bytes));
        t.cells([r.variant.clone(), size], &t.ratios(), t.tuning_cells())
    };
    let details = |r: &Row| {
        let t = &r.timings;
        format!("{}    {}\n", t.runs_line("best"), t.tuning_summary())
    };
    support::table(&header, &[0, 1, 6], rows, cells, details)
}

#[cfg(test)]
mod tests {
    use super::*;
    use memtune_example_support::testing::{assert_contains, assert_row, timings};

    fn row() -> Row {
        let plan = "4 passes of 96 MiB";
        Row {
            variant: "reads 64".into(),
            memory: MemoryKind::Device,
            bytes: 384 << 20,
            timings: timings([3.0, 3.0, 2.0, 2.0], ["1 pass", plan, plan]),
            sum: 1,
        }
    }

    #[test]
    fn json_rows_have_exactly_the_fields() {
        assert_row(&row().json(), &[], "sampling", "device", 384 << 20);
    }

    #[test]
    fn the_table_has_ratios() {
        let t = table(&[row()]);
        assert!(t.starts_with("variant"), "{t}");
        assert_contains(
            &t,
            &["untuned/autotuned", "1.500", "4 of 5", "timed nothing"],
        );
    }
}
