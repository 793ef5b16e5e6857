//! The long CSV layout: one point per row, any tool can write it.
//!
//! ```text
//! kind,stride_bytes,footprint_bytes,cycles
//! device,2097152,134217728,248.5
//! ```
//!
//! The header names the four columns, in any order; `kind` is `device`, `pinned` or
//! `managed`; strides and footprints are whole bytes, the footprint at least the stride;
//! cycles per load are a number above 0. Lines starting with `#` are comments; several rows
//! of one footprint are repeats.

use super::{lines, parse_cycles, FileCurves, ImportError, RawPoint};
use memtune_core::profile::{ChaseCurve, MemoryKind};
use std::fmt::Write;
use std::path::Path;

/// The columns, in the order `write_long` writes them.
const COLUMNS: [&str; 4] = ["kind", "stride_bytes", "footprint_bytes", "cycles"];

/// Parses one file of the long layout.
pub fn parse_long(text: &str, path: &Path) -> Result<FileCurves, ImportError> {
    // Where each of COLUMNS is in the file, and how many columns a row has.
    let mut layout: Option<([usize; 4], usize)> = None;
    let mut points = Vec::new();
    for line in lines(text, path) {
        let (number, line) = line?;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let cells: Vec<&str> = trimmed.split(',').map(str::trim).collect();
        let Some((at, width)) = layout else {
            layout = Some((header(&cells, path, number)?, cells.len()));
            continue;
        };
        if cells.len() != width {
            return Err(ImportError::at(
                path,
                number,
                format!("{} columns, but the header has {width}", cells.len()),
            ));
        }
        let cell = |i: usize| cells[at[i]];
        let column = |i: usize| at[i] + 1;
        let kind: MemoryKind = cell(0).parse().map_err(|m: String| {
            ImportError::at(path, number, format!("column {}: {m}", column(0)))
        })?;
        let bytes = |i: usize| -> Result<u64, ImportError> {
            match cell(i).parse::<u64>() {
                Ok(b) if b > 0 => Ok(b),
                _ => Err(ImportError::at(
                    path,
                    number,
                    format!(
                        "column {}: {} `{}` is not a whole number of bytes above 0",
                        column(i),
                        COLUMNS[i],
                        cell(i)
                    ),
                )),
            }
        };
        let (stride_bytes, footprint_bytes) = (bytes(1)?, bytes(2)?);
        if footprint_bytes < stride_bytes {
            return Err(ImportError::at(
                path,
                number,
                format!(
                    "footprint_bytes {footprint_bytes} is smaller than stride_bytes {stride_bytes}"
                ),
            ));
        }
        let cycles = parse_cycles(cell(3))
            .map_err(|m| ImportError::at(path, number, format!("column {}: {m}", column(3))))?;
        points.push(RawPoint {
            kind,
            stride_bytes,
            footprint_bytes,
            cycles,
        });
    }
    if layout.is_none() {
        return Err(ImportError::file(
            path,
            format!("empty: no `{}` header", COLUMNS.join(",")),
        ));
    }
    if points.is_empty() {
        return Err(ImportError::file(
            path,
            "no measurements: a header but no rows",
        ));
    }
    Ok(FileCurves {
        path: path.to_path_buf(),
        gpu: None,
        points,
    })
}

/// Where each of `COLUMNS` is in the header `cells`.
fn header(cells: &[&str], path: &Path, number: usize) -> Result<[usize; 4], ImportError> {
    let mut at = [usize::MAX; 4];
    for (i, cell) in cells.iter().enumerate() {
        match COLUMNS.iter().position(|c| c == cell) {
            Some(c) if at[c] == usize::MAX => at[c] = i,
            Some(_) => {
                return Err(ImportError::at(
                    path,
                    number,
                    format!("column {}: `{cell}` is named twice", i + 1),
                ))
            }
            None => {
                return Err(ImportError::at(
                    path,
                    number,
                    format!(
                        "column {}: unknown column `{cell}`; the header is `{}` (any order)",
                        i + 1,
                        COLUMNS.join(",")
                    ),
                ))
            }
        }
    }
    if let Some(missing) = (0..4).find(|&c| at[c] == usize::MAX) {
        return Err(ImportError::at(
            path,
            number,
            format!(
                "the header lacks `{}`; it is `{}` (any order)",
                COLUMNS[missing],
                COLUMNS.join(",")
            ),
        ));
    }
    Ok(at)
}

/// Writes curves of `kind` in the long layout, every point (repeats included) a row.
pub fn write_long(kind: MemoryKind, curves: &[ChaseCurve]) -> String {
    let mut out = COLUMNS.join(",");
    out.push('\n');
    for c in curves {
        for p in &c.points {
            let _ = writeln!(
                out,
                "{kind},{},{},{}",
                c.stride_bytes, p.footprint_bytes, p.cycles_per_load
            );
        }
    }
    out
}
