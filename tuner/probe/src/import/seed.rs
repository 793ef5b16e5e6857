//! The seed tool's CSV layout (seed 000's TLB benchmark writes it; tools like it too):
//!
//! ```text
//! #Tesla K80: cuda 3.7
//! #,64,128,256,
//! 1,239,239,238,
//! 1.0625,240,,,
//! ```
//!
//! A `#` line naming the GPU (up to the first `:`), a header `#,` followed by the strides in
//! KiB, then one row per footprint in MiB (binary units, as the tool allocates) with the
//! cycles per load of each stride; an empty cell is a stride not measured at that footprint
//! (the tool measures a stride only at multiples of it). Rows end in a comma. Other `#`
//! lines are comments. A footprint is a whole number of strides: the tool prints footprints
//! to six significant digits, so a value within 0.01% of a multiple of the stride is taken
//! as that multiple.

use super::{lines, parse_cycles, FileCurves, ImportError, RawPoint};
use memtune_core::profile::{ChaseCurve, MemoryKind};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

const KIB: u64 = 1 << 10;
const MIB: f64 = (1u64 << 20) as f64;
/// How far a printed footprint may be from a multiple of its stride and still be one.
const SNAP: f64 = 1e-4;

/// Parses one file of the seed tool's layout; its points are labelled `kind`.
pub fn parse_seed(text: &str, path: &Path, kind: MemoryKind) -> Result<FileCurves, ImportError> {
    let mut gpu: Option<String> = None;
    let mut strides: Option<(usize, Vec<u64>)> = None;
    let mut points = Vec::new();
    for line in lines(text, path) {
        let (number, line) = line?;
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        if let Some(rest) = trimmed.strip_prefix("#,") {
            if let Some((first, _)) = &strides {
                return Err(ImportError::at(
                    path,
                    number,
                    format!(
                        "a second `#,<stride KiB>,...` header (the first is on line {first}); \
                         one file holds one sweep: split it into files"
                    ),
                ));
            }
            strides = Some((number, header(rest, path, number)?));
            continue;
        }
        if let Some(comment) = trimmed.strip_prefix('#') {
            if gpu.is_none() && strides.is_none() {
                let name = comment.split(':').next().unwrap_or("").trim();
                if !name.is_empty() {
                    gpu = Some(name.to_string());
                }
            }
            continue;
        }
        let Some((_, strides)) = &strides else {
            return Err(ImportError::at(
                path,
                number,
                "a data row before the `#,<stride KiB>,<stride KiB>,...` header; the seed \
                 layout names its strides first",
            ));
        };
        row(trimmed, strides, kind, path, number, &mut points)?;
    }
    if strides.is_none() {
        return Err(ImportError::file(
            path,
            "no `#,<stride KiB>,<stride KiB>,...` header: not a file of the seed layout \
             (for `kind,stride_bytes,footprint_bytes,cycles` rows use --format long)",
        ));
    }
    if points.is_empty() {
        return Err(ImportError::file(
            path,
            "no measurements: every row is empty",
        ));
    }
    Ok(FileCurves {
        path: path.to_path_buf(),
        gpu,
        points,
    })
}

/// The strides of a header (`rest` follows its `#,`), in bytes.
fn header(rest: &str, path: &Path, number: usize) -> Result<Vec<u64>, ImportError> {
    let mut cells: Vec<&str> = rest.split(',').map(str::trim).collect();
    // The tool ends every line with a comma.
    if cells.last() == Some(&"") {
        cells.pop();
    }
    if cells.is_empty() {
        return Err(ImportError::at(path, number, "the header names no stride"));
    }
    let mut strides: Vec<u64> = Vec::with_capacity(cells.len());
    for (i, cell) in cells.iter().enumerate() {
        let column = i + 2;
        let kib = match cell.parse::<u64>() {
            Ok(k) if k > 0 => k,
            _ => {
                return Err(ImportError::at(
                    path,
                    number,
                    format!(
                        "column {column}: stride `{cell}` is not a whole number of KiB above 0"
                    ),
                ))
            }
        };
        let bytes = kib.checked_mul(KIB).ok_or_else(|| {
            ImportError::at(
                path,
                number,
                format!("column {column}: stride {kib} KiB is too large"),
            )
        })?;
        if strides.contains(&bytes) {
            return Err(ImportError::at(
                path,
                number,
                format!("column {column}: stride {kib} KiB is named twice"),
            ));
        }
        strides.push(bytes);
    }
    Ok(strides)
}

/// The points of one data row.
fn row(
    line: &str,
    strides: &[u64],
    kind: MemoryKind,
    path: &Path,
    number: usize,
    points: &mut Vec<RawPoint>,
) -> Result<(), ImportError> {
    let mut cells = line.split(',').map(str::trim);
    let first = cells.next().unwrap_or("");
    let mib = match first.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v * MIB < u64::MAX as f64 => v,
        _ => {
            return Err(ImportError::at(
                path,
                number,
                format!("column 1: footprint `{first}` is not a number of MiB above 0"),
            ))
        }
    };
    let bytes = mib * MIB;
    for (i, cell) in cells.enumerate() {
        let column = i + 2;
        if cell.is_empty() {
            continue;
        }
        let Some(&stride) = strides.get(i) else {
            return Err(ImportError::at(
                path,
                number,
                format!(
                    "column {column} holds `{cell}`, but the header names {} strides",
                    strides.len()
                ),
            ));
        };
        let cycles = parse_cycles(cell).map_err(|m| {
            ImportError::at(
                path,
                number,
                format!("column {column} (stride {} KiB): {m}", stride / KIB),
            )
        })?;
        let loads = (bytes / stride as f64).round();
        let footprint_bytes =
            if loads >= 1.0 && (loads * stride as f64 - bytes).abs() <= SNAP * bytes {
                loads as u64 * stride
            } else {
                bytes.round() as u64
            };
        if footprint_bytes < stride {
            return Err(ImportError::at(
                path,
                number,
                format!(
                    "column {column}: footprint {first} MiB is smaller than the stride {} KiB",
                    stride / KIB
                ),
            ));
        }
        points.push(RawPoint {
            kind,
            stride_bytes: stride,
            footprint_bytes,
            cycles,
        });
    }
    Ok(())
}

/// Writes curves in the seed layout: `gpu` on the `#` line, the curves' strides (whole KiB)
/// across, every footprint any curve has down (in MiB), cells empty where a curve has no
/// point. A curve's repeats at one footprint are written as their mean.
pub fn write_seed(gpu: &str, curves: &[ChaseCurve]) -> String {
    let mut strides: Vec<u64> = curves.iter().map(|c| c.stride_bytes).collect();
    strides.sort_unstable();
    strides.dedup();
    let mut rows: BTreeMap<u64, Vec<Option<(f64, usize)>>> = BTreeMap::new();
    for c in curves {
        let column = strides.binary_search(&c.stride_bytes).unwrap_or(0);
        for p in &c.points {
            let cell = &mut rows
                .entry(p.footprint_bytes)
                .or_insert_with(|| vec![None; strides.len()])[column];
            let (sum, n) = cell.unwrap_or((0.0, 0));
            *cell = Some((sum + p.cycles_per_load, n + 1));
        }
    }
    let mut out = format!("#{gpu}\n#,");
    for s in &strides {
        let _ = write!(out, "{},", s / KIB);
    }
    out.push('\n');
    for (footprint, cells) in rows {
        let _ = write!(out, "{},", footprint as f64 / MIB);
        for cell in cells {
            if let Some((sum, n)) = cell {
                let _ = write!(out, "{}", sum / n as f64);
            }
            out.push(',');
        }
        out.push('\n');
    }
    out
}
