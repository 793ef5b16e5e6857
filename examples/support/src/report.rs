//! The bench's text table and the JSON document of `--json`, without the columns: each
//! example chooses its own.

use std::path::Path;

use serde_json::{json, Value};

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

/// A table's lines: `header` then each row of `cells`, columns two spaces apart and padded
/// to their widest cell, left-aligned where `left` holds their index, else right-aligned;
/// trailing spaces cut.
pub fn columns<const N: usize>(
    header: [&str; N],
    cells: &[[String; N]],
    left: &[usize],
) -> Vec<String> {
    let mut widths = header.map(str::len);
    for row in cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cols: &[String]| {
        let padded: Vec<String> = cols
            .iter()
            .zip(widths)
            .enumerate()
            .map(|(i, (c, w))| {
                if left.contains(&i) {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect();
        padded.join("  ").trim_end().to_string()
    };
    std::iter::once(line(&header.map(String::from)))
        .chain(cells.iter().map(|c| line(c)))
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
            ["name", "ms"],
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
