//! Pointer-chase curves measured by other tools, read into the probe's own curve types for
//! [`infer_tlb_in`](crate::infer_tlb_in) (`cargo tune infer`).
//!
//! Two layouts (one file per format module):
//!
//! - `seed`: what the TLB benchmark of seed 000 (and tools like it) writes: a `#<GPU name>`
//!   line, a `#,<stride KiB>,<stride KiB>,...` header, then rows `<footprint MiB>,<cycles>,...`
//!   whose empty cells are strides not measured at that footprint. Each file sweeps one
//!   footprint window; several files of one GPU are merged.
//! - `long`: a plain CSV with the header `kind,stride_bytes,footprint_bytes,cycles` (columns
//!   in any order) and one point per row.
//!
//! Files are merged into one curve per (memory kind, stride), ascending by footprint, one
//! point per footprint: where several files (or rows) measured the same footprint, the
//! median of their values. Each file's footprints are its window (split at gaps, see
//! [`gaps`]); the inference gives each window its own noise. Inputs are bounded: files through
//! [`read_text`](memtune_core::userio::read_text) (64 MiB at most, regular files or stdin),
//! lines of at most [`MAX_LINE_BYTES`], at most [`MAX_POINTS`] points in all. Every error
//! names the file, the line and what is wrong.

mod long;
mod seed;

/// Where a file's footprints have a gap between two windows.
pub use crate::infer_tlb_windows::{gaps, GAP_RATIO, GAP_SPACINGS};
pub use long::{parse_long, write_long};
pub use seed::{parse_seed, write_seed};

use memtune_core::profile::{ChaseCurve, ChasePoint, MemoryKind};
use memtune_core::userio::{self, InputKind, UserIoError};
use memtune_core::ErrorClass;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// The longest line accepted, in bytes.
pub const MAX_LINE_BYTES: usize = 64 << 10;
/// The most points accepted over all files of one import.
pub const MAX_POINTS: usize = 1_000_000;

/// The layout of a curve file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The seed tool's wide CSV (footprints in MiB down, strides in KiB across).
    Seed,
    /// `kind,stride_bytes,footprint_bytes,cycles`, one point per row.
    Long,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Seed => "seed",
            Format::Long => "long",
        }
    }

    /// The layout `text` is in, from its first line that is not blank: a `#` line is the
    /// seed tool's, a header naming `stride_bytes` the long one.
    pub fn detect(text: &str) -> Option<Format> {
        let first = text.lines().map(str::trim).find(|l| !l.is_empty())?;
        if first.starts_with('#') {
            Some(Format::Seed)
        } else if first.split(',').any(|c| c.trim() == "stride_bytes") {
            Some(Format::Long)
        } else {
            None
        }
    }
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "seed" => Ok(Format::Seed),
            "long" => Ok(Format::Long),
            _ => Err(format!(
                "unknown curve format `{s}` (expected seed or long)"
            )),
        }
    }
}

/// Why curves could not be imported.
#[derive(Debug)]
pub enum ImportError {
    /// The file could not be read (missing, not a regular file, too large, not UTF-8).
    Read(UserIoError),
    /// The file was read but its content is not curves of the format.
    Invalid {
        path: PathBuf,
        /// 1-based; `None` for what concerns the whole file.
        line: Option<usize>,
        message: String,
    },
}

impl ImportError {
    pub(crate) fn at(path: &Path, line: usize, message: impl Into<String>) -> ImportError {
        ImportError::Invalid {
            path: path.to_path_buf(),
            line: Some(line),
            message: message.into(),
        }
    }

    pub(crate) fn file(path: &Path, message: impl Into<String>) -> ImportError {
        ImportError::Invalid {
            path: path.to_path_buf(),
            line: None,
            message: message.into(),
        }
    }

    /// The broad class, for exit codes: bad content is invalid input.
    pub fn class(&self) -> ErrorClass {
        match self {
            ImportError::Read(e) => e.class(),
            ImportError::Invalid { .. } => ErrorClass::Invalid,
        }
    }
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImportError::Read(e) => write!(f, "{e}"),
            ImportError::Invalid {
                path,
                line: Some(line),
                message,
            } => write!(f, "{}:{line}: {message}", path.display()),
            ImportError::Invalid {
                path,
                line: None,
                message,
            } => write!(f, "{}: {message}", path.display()),
        }
    }
}

impl std::error::Error for ImportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ImportError::Read(e) => Some(e),
            ImportError::Invalid { .. } => None,
        }
    }
}

/// One measurement as a file gave it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RawPoint {
    pub kind: MemoryKind,
    pub stride_bytes: u64,
    pub footprint_bytes: u64,
    pub cycles: f64,
}

/// What one file holds.
#[derive(Debug, Clone, PartialEq)]
pub struct FileCurves {
    pub path: PathBuf,
    /// The GPU the file names (the seed layout's `#` line), if any.
    pub gpu: Option<String>,
    pub points: Vec<RawPoint>,
}

/// A footprint range measured without a gap, and the strides measured in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    pub from_bytes: u64,
    pub to_bytes: u64,
    pub strides: Vec<u64>,
    pub points: usize,
}

/// The merged curves of one memory kind.
#[derive(Debug, Clone, PartialEq)]
pub struct KindCurves {
    /// One per stride, ascending; points ascending by footprint, one per footprint.
    pub curves: Vec<ChaseCurve>,
    /// The footprint windows all strides together cover, ascending: what each file swept
    /// (split where it has gaps), overlaps joined.
    pub windows: Vec<Window>,
}

impl KindCurves {
    /// The windows as `(from, to)` bytes, as [`infer_tlb_in`](crate::infer_tlb_in) takes them.
    pub fn ranges(&self) -> Vec<(u64, u64)> {
        self.windows
            .iter()
            .map(|w| (w.from_bytes, w.to_bytes))
            .collect()
    }

    pub fn points(&self) -> usize {
        self.curves.iter().map(|c| c.points.len()).sum()
    }

    /// The largest footprint measured.
    pub fn swept_up_to_bytes(&self) -> u64 {
        self.curves
            .iter()
            .flat_map(|c| c.points.iter().map(|p| p.footprint_bytes))
            .max()
            .unwrap_or(0)
    }
}

/// Everything imported from a set of files.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    pub files: Vec<PathBuf>,
    pub gpu: Option<String>,
    pub kinds: BTreeMap<MemoryKind, KindCurves>,
}

/// Parses `text` (read from `path`) in `format`; `kind` labels seed files, whose layout
/// does not say which memory they measured.
pub fn parse(
    text: &str,
    path: &Path,
    format: Format,
    kind: MemoryKind,
) -> Result<FileCurves, ImportError> {
    match format {
        Format::Seed => parse_seed(text, path, kind),
        Format::Long => parse_long(text, path),
    }
}

/// Reads, parses and merges `paths`. `format` forces a layout (else each file's is
/// detected); `kind` labels seed files and, when given, keeps only that kind of long files.
pub fn import_files(
    paths: &[PathBuf],
    format: Option<Format>,
    kind: Option<MemoryKind>,
) -> Result<Imported, ImportError> {
    let mut files = Vec::with_capacity(paths.len());
    let mut total = 0usize;
    for path in paths {
        let text = userio::read_text(path, InputKind::Curves).map_err(ImportError::Read)?;
        let format =
            match format.or_else(|| Format::detect(&text)) {
                Some(f) => f,
                None => return Err(ImportError::at(
                    path,
                    first_content_line(&text),
                    "neither layout: a seed-tool file starts with a `#<GPU name>` line, a long \
                     one with the header `kind,stride_bytes,footprint_bytes,cycles`; name it \
                     with --format seed|long",
                )),
            };
        let file = parse(&text, path, format, kind.unwrap_or(MemoryKind::Device))?;
        total += file.points.len();
        if total > MAX_POINTS {
            return Err(ImportError::file(
                path,
                format!("more than {MAX_POINTS} points in all; import fewer or thinner files"),
            ));
        }
        files.push(file);
    }
    merge(files, kind)
}

/// Merges files into curves: one per (kind, stride), one point per footprint (the median
/// where several measured it). Files naming different GPUs are refused; `kind` keeps only
/// that kind's points.
pub fn merge(files: Vec<FileCurves>, kind: Option<MemoryKind>) -> Result<Imported, ImportError> {
    let mut gpu: Option<(String, &Path)> = None;
    for f in &files {
        if let Some(name) = &f.gpu {
            match &gpu {
                Some((other, first)) if other != name => {
                    return Err(ImportError::file(
                        &f.path,
                        format!(
                            "measured `{name}`, but {} measured `{other}`; curves of different \
                             GPUs cannot be merged: infer each GPU's files on their own",
                            first.display()
                        ),
                    ))
                }
                Some(_) => {}
                None => gpu = Some((name.clone(), &f.path)),
            }
        }
    }
    let gpu = gpu.map(|(name, _)| name);
    type Key = (MemoryKind, u64);
    let mut by_curve: BTreeMap<Key, BTreeMap<u64, Vec<f64>>> = BTreeMap::new();
    for p in files.iter().flat_map(|f| &f.points) {
        if kind.is_none_or(|k| k == p.kind) {
            by_curve
                .entry((p.kind, p.stride_bytes))
                .or_default()
                .entry(p.footprint_bytes)
                .or_default()
                .push(p.cycles);
        }
    }
    let paths: Vec<PathBuf> = files.iter().map(|f| f.path.clone()).collect();
    if by_curve.is_empty() {
        let what = kind.map_or(String::new(), |k| format!(" of {k} memory"));
        let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        return Err(ImportError::file(
            Path::new(&names.join(", ")),
            format!("no measurements{what}"),
        ));
    }
    let mut kinds: BTreeMap<MemoryKind, KindCurves> = BTreeMap::new();
    for ((k, stride), footprints) in by_curve {
        let points = footprints
            .into_iter()
            .map(|(footprint, values)| ChasePoint {
                footprint_bytes: footprint,
                cycles_per_load: crate::robust::median(&values),
            })
            .collect();
        kinds
            .entry(k)
            .or_insert_with(|| KindCurves {
                curves: Vec::new(),
                windows: Vec::new(),
            })
            .curves
            .push(ChaseCurve {
                stride_bytes: stride,
                points,
            });
    }
    for (&k, curves) in kinds.iter_mut() {
        curves.windows = kind_windows(&files, k, &curves.curves);
    }
    Ok(Imported {
        files: paths,
        gpu,
        kinds,
    })
}

/// The footprint windows of `kind` in `files`: each file's footprints split at their gaps
/// (a file of the long layout may hold several windows), overlapping ranges joined; with
/// the strides and the merged points of `curves` in each.
fn kind_windows(files: &[FileCurves], kind: MemoryKind, curves: &[ChaseCurve]) -> Vec<Window> {
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    for f in files {
        let mut footprints: Vec<u64> = f
            .points
            .iter()
            .filter(|p| p.kind == kind)
            .map(|p| p.footprint_bytes)
            .collect();
        footprints.sort_unstable();
        footprints.dedup();
        let mut start = 0;
        for end in gaps(&footprints)
            .into_iter()
            .chain(footprints.len().checked_sub(1))
        {
            ranges.push((footprints[start], footprints[end]));
            start = end + 1;
        }
    }
    ranges.sort_unstable();
    let mut joined: Vec<(u64, u64)> = Vec::new();
    for (from, to) in ranges {
        match joined.last_mut() {
            Some(last) if from <= last.1 => last.1 = last.1.max(to),
            _ => joined.push((from, to)),
        }
    }
    joined
        .into_iter()
        .map(|(from, to)| {
            let inside = |c: &ChaseCurve| {
                c.points
                    .iter()
                    .filter(|p| (from..=to).contains(&p.footprint_bytes))
                    .count()
            };
            Window {
                from_bytes: from,
                to_bytes: to,
                strides: curves
                    .iter()
                    .filter(|c| inside(c) > 0)
                    .map(|c| c.stride_bytes)
                    .collect(),
                points: curves.iter().map(inside).sum(),
            }
        })
        .collect()
}

/// The lines of `text`, numbered from 1, each at most [`MAX_LINE_BYTES`] (a `\r` before the
/// newline dropped).
pub(crate) fn lines<'a>(
    text: &'a str,
    path: &'a Path,
) -> impl Iterator<Item = Result<(usize, &'a str), ImportError>> + 'a {
    text.split('\n').enumerate().map(move |(i, line)| {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.len() > MAX_LINE_BYTES {
            Err(ImportError::at(
                path,
                i + 1,
                format!(
                    "a line of {} bytes, longer than the {MAX_LINE_BYTES} a curve file may have; \
                     this is not a curve CSV: check the path",
                    line.len()
                ),
            ))
        } else {
            Ok((i + 1, line))
        }
    })
}

/// The number of the first line of `text` that is not blank (1 when there is none).
fn first_content_line(text: &str) -> usize {
    text.split('\n')
        .position(|l| !l.trim().is_empty())
        .map_or(1, |i| i + 1)
}

/// A cycles value: a finite number above zero.
pub(crate) fn parse_cycles(cell: &str) -> Result<f64, String> {
    match cell.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        Ok(v) => Err(format!("cycles `{v}` must be a finite number above 0")),
        Err(_) => Err(format!("cycles `{cell}` is not a number")),
    }
}

#[cfg(test)]
mod tests;
