//! `cargo tune infer FILE...`: TLB levels inferred from pointer-chase curves another tool
//! measured: the CSV files of seed 000's TLB benchmark (several files of one GPU, each a
//! footprint window, merged), or `kind,stride_bytes,footprint_bytes,cycles` rows. The same
//! inference as the probe's (`memtune_probe::infer_tlb_in`), each file's window with its
//! own noise. Prints the levels as `cargo tune show` does, and what the merged curves cover;
//! `--plot DIR` draws them.

use super::render::bytes;
use crate::exit::{CliError, Exit};
use crate::files::input_error;
use crate::plot;
use crate::progress::Bar;
use clap::{Args, ValueEnum};
use memtune_core::profile::{MemoryKind, TlbKind};
use memtune_core::userio::WriteOptions;
use memtune_probe::import::{self, Format, ImportError, Imported, KindCurves};
use memtune_probe::infer_tlb_in;
use serde_json::{json, Value};
use std::fmt::Write;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CurveFormat {
    /// The seed tool's CSV: a `#<GPU name>` line, `#,<stride KiB>,...`, then rows
    /// `<footprint MiB>,<cycles>,...` (empty cells allowed).
    Seed,
    /// `kind,stride_bytes,footprint_bytes,cycles`, one point per row.
    Long,
}

#[derive(Debug, Args)]
pub struct InferArgs {
    /// Curve files (`-`: stdin); several files of one GPU are merged.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The layout of the files (default: each file's own, from its first line).
    #[arg(long, value_enum)]
    pub format: Option<CurveFormat>,
    /// The memory the seed tool's files measured (default device); for long files, only
    /// this kind's rows (default: every kind in them).
    #[arg(long)]
    pub kind: Option<MemoryKind>,
    /// The GPU's SM clock, to give miss penalties in ns too.
    #[arg(long, value_name = "MHZ")]
    pub clock_mhz: Option<f64>,
    /// Write `tlb-<kind>.svg` per kind into DIR: the merged curves with the inferred
    /// levels marked, as `cargo tune show --plot` draws a profile's.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
}

/// An import error as an exit code: content that is not curves is an invalid input (4), as
/// an invalid profile is; reading errors as for every verb's inputs.
fn import_error(e: ImportError) -> CliError {
    match e {
        ImportError::Read(e) => input_error(e),
        e @ ImportError::Invalid { .. } => CliError::new(Exit::InvalidProfile, e.to_string()),
    }
}

pub fn run(
    args: &InferArgs,
    (json_out, quiet): (bool, bool),
    write: WriteOptions,
) -> Result<Exit, CliError> {
    let clock_mhz = match args.clock_mhz {
        Some(c) if !(c.is_finite() && c > 0.0) => {
            return Err(CliError::new(
                Exit::Usage,
                format!("--clock-mhz must be a number of MHz above 0 (got {c})"),
            ))
        }
        c => c.unwrap_or(0.0),
    };
    let format = args.format.map(|f| match f {
        CurveFormat::Seed => Format::Seed,
        CurveFormat::Long => Format::Long,
    });
    // Reading large files and inferring several kinds can take seconds.
    let mut bar = Bar::new("infer", quiet || json_out);
    bar.update(0.0, "reading the curves");
    let imported = import::import_files(&args.files, format, args.kind).map_err(import_error)?;
    let kinds = imported.kinds.len().max(1);
    let inferred: Vec<(MemoryKind, &KindCurves, TlbKind)> = imported
        .kinds
        .iter()
        .enumerate()
        .map(|(i, (&kind, curves))| {
            bar.update(
                0.2 + 0.8 * i as f64 / kinds as f64,
                &format!("{kind} memory"),
            );
            let tlb = infer_tlb_in(
                curves.curves.clone(),
                &curves.ranges(),
                curves.swept_up_to_bytes(),
                clock_mhz,
            );
            (kind, curves, tlb)
        })
        .collect();
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    bar.finish(&format!(
        "{} read, {} inferred",
        plural(imported.files.len(), "file"),
        plural(inferred.len(), "memory kind")
    ));
    if let Some(dir) = &args.plot {
        // Checked before anything is written, as every verb's outputs are.
        let dir = crate::files::output_dir(dir, write)?;
        let name = imported.gpu.as_deref().unwrap_or("curves");
        for (kind, _, tlb) in &inferred {
            let svg = plot::tlb_chart(name, *kind, tlb).to_svg();
            crate::files::write_file(&dir.join(format!("tlb-{kind}.svg")), svg.as_bytes(), write)?;
        }
    }
    if json_out {
        println!("{:#}", to_json(&imported, &inferred));
    } else {
        print!("{}", render(&imported, &inferred, clock_mhz > 0.0));
    }
    Ok(Exit::Ok)
}

fn to_json(imported: &Imported, inferred: &[(MemoryKind, &KindCurves, TlbKind)]) -> Value {
    let kinds: serde_json::Map<String, Value> = inferred
        .iter()
        .map(|(kind, curves, tlb)| {
            let windows: Vec<Value> = curves
                .windows
                .iter()
                .map(|w| {
                    json!({
                        "from_bytes": w.from_bytes,
                        "to_bytes": w.to_bytes,
                        "strides_bytes": w.strides,
                        "points": w.points,
                    })
                })
                .collect();
            let value = json!({
                "levels": tlb.levels,
                "base_latency_cycles": tlb.base_latency_cycles,
                "swept_up_to_bytes": tlb.swept_up_to_bytes,
                "windows": windows,
                "points": curves.points(),
                "curves": curves.curves,
            });
            (kind.as_str().to_string(), value)
        })
        .collect();
    json!({
        "files": imported.files.iter().map(|p| p.to_string_lossy()).collect::<Vec<_>>(),
        "gpu": imported.gpu,
        "kinds": kinds,
    })
}

fn render(
    imported: &Imported,
    inferred: &[(MemoryKind, &KindCurves, TlbKind)],
    with_ns: bool,
) -> String {
    let mut s = String::new();
    let files = imported.files.len();
    let _ = writeln!(
        s,
        "{} ({files} file{})",
        imported.gpu.as_deref().unwrap_or("curves"),
        if files == 1 { "" } else { "s" }
    );
    for (kind, curves, tlb) in inferred {
        let strides: Vec<String> = curves
            .curves
            .iter()
            .map(|c| bytes(c.stride_bytes))
            .collect();
        let _ = writeln!(
            s,
            "{kind} memory: {} points, strides {}, {} footprint window{}",
            curves.points(),
            strides.join(", "),
            curves.windows.len(),
            if curves.windows.len() == 1 { "" } else { "s" }
        );
        for w in &curves.windows {
            let strides: Vec<String> = w.strides.iter().map(|&b| bytes(b)).collect();
            let _ = writeln!(
                s,
                "  {} - {}: {} points at {}",
                footprint(w.from_bytes),
                footprint(w.to_bytes),
                w.points,
                strides.join(", ")
            );
        }
        let _ = writeln!(
            s,
            "TLB, {kind} memory: base latency {:.0} cycles",
            tlb.base_latency_cycles
        );
        if tlb.levels.is_empty() {
            let _ = writeln!(
                s,
                "  no TLB level up to {}",
                footprint(tlb.swept_up_to_bytes)
            );
            continue;
        }
        let _ = writeln!(
            s,
            "  {:<6} {:>8} {:>10} {:>10} {:>12} {:>10} {:>6}",
            "level", "entries", "page", "reach", "miss cycles", "miss ns", "conf"
        );
        for (i, l) in tlb.levels.iter().enumerate() {
            let ns = if with_ns {
                format!("{:.1}", l.miss_penalty_ns)
            } else {
                "-".to_string()
            };
            let _ = writeln!(
                s,
                "  L{:<5} {:>8} {:>10} {:>10} {:>12.0} {:>10} {:>6.2}",
                i + 1,
                l.entries,
                bytes(l.page_bytes),
                bytes(l.reach_bytes),
                l.miss_penalty_cycles,
                ns,
                l.confidence
            );
        }
    }
    s
}

/// A footprint in MiB (to two decimals where not whole), as the seed tool writes them.
fn footprint(b: u64) -> String {
    let mib = b as f64 / (1u64 << 20) as f64;
    if mib >= 1.0 && mib.fract() == 0.0 {
        format!("{mib:.0} MiB")
    } else if mib >= 1.0 {
        format!("{mib:.2} MiB")
    } else {
        bytes(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn footprints_read_in_mib() {
        assert_eq!(footprint(1500 << 20), "1500 MiB");
        assert_eq!(footprint((1 << 20) + (1 << 18)), "1.25 MiB");
        assert_eq!(footprint(64 << 10), "64 KiB");
    }
}
