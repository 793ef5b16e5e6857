//! `cargo tune trace KERNEL`: writes the global-memory address stream of one of memtune's
//! kernels (sampling, grouping, stencil) as a trace `cargo tune reuse` reads, emulated on
//! the CPU by `memtune_kernels::reference::access` (see there for layout and order).
//!
//! The stream is generated as it is written, so memory stays small (the grouping table
//! aside, bounded by `--max-buckets`); `--max-references` bounds the output, checked before
//! anything is written where the length is known, and as it goes for grouping.

use crate::exit::{CliError, Exit};
use crate::size;
use clap::{Args, Subcommand, ValueEnum};
use memtune_core::userio::WriteOptions;
use memtune_kernels::params::{ParamsError, SamplingParams, StencilParams};
use memtune_kernels::reference::access::{
    GroupingDrive, GroupingStream, SamplingStream, StencilStream, Stream,
};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Default bound on the references written: 2 GiB of `u64`.
pub const DEFAULT_MAX_REFERENCES: u64 = 1 << 28;
/// Default bound on the emulated grouping table: 2^26 buckets (256 MiB of keys).
const DEFAULT_MAX_BUCKETS: u64 = 1 << 26;

#[derive(Debug, Args)]
pub struct TraceArgs {
    #[command(subcommand)]
    pub kernel: Kernel,
    /// Where the trace goes (`-`: stdout).
    #[arg(long, short, global = true, default_value = "-")]
    pub output: PathBuf,
    /// u64: raw little-endian addresses; text: one `0x` hex address per line.
    #[arg(long, value_enum, global = true, default_value = "u64")]
    pub format: OutFormat,
    /// Most references written; a longer stream exits 4 (before writing where its length
    /// is known).
    #[arg(long, value_name = "N", global = true, default_value_t = DEFAULT_MAX_REFERENCES)]
    pub max_references: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutFormat {
    U64,
    Text,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Drive {
    /// One pass per scope, each reading all keys.
    Naive,
    /// The first pass spills the other scopes' keys; later passes read the spill.
    Copy,
}

#[derive(Debug, Subcommand)]
pub enum Kernel {
    /// memtune_sampling: each thread's LCG draws over a region of 4-byte words, one pass
    /// per scope.
    Sampling {
        /// Region in bytes (4-byte words).
        #[arg(long, value_parser = size::parse, default_value = "64MiB")]
        region: u64,
        /// Threads of the launch (grid × block).
        #[arg(long, default_value_t = 8192)]
        threads: u64,
        /// Draws per thread.
        #[arg(long, default_value_t = 16)]
        reads: u32,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Scope in bytes: one pass per scope (default: the region, unscoped).
        #[arg(long, value_parser = size::parse)]
        scope: Option<u64>,
        /// Threads running in lockstep (resident at once).
        #[arg(long, default_value_t = 2048)]
        wave: u64,
    },
    /// The grouping kernels: keys read in order, each in-scope key's linear probe.
    Grouping {
        #[arg(long, default_value_t = 1 << 20)]
        keys: u64,
        /// Distinct key values (uniform); the table has 2 × this, rounded up to a power
        /// of two, 8-byte buckets.
        #[arg(long, default_value_t = 1 << 16)]
        distinct: u64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Scope in bytes of table (default: the table, unscoped).
        #[arg(long, value_parser = size::parse)]
        scope: Option<u64>,
        #[arg(long, value_enum, default_value = "naive")]
        drive: Drive,
        /// Most table buckets emulated (memory: 4 bytes each).
        #[arg(long, default_value_t = DEFAULT_MAX_BUCKETS)]
        max_buckets: u64,
    },
    /// memtune_stencil_plain: six neighbours per repeat of every interior cell.
    Stencil {
        #[arg(long, default_value_t = 64)]
        nx: u32,
        #[arg(long, default_value_t = 64)]
        ny: u32,
        #[arg(long, default_value_t = 64)]
        nz: u32,
        #[arg(long, default_value_t = 1)]
        repeats: u32,
        /// Bytes per cell: 4 (f32) or 8 (f64).
        #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(4..=8))]
        element_bytes: u64,
    },
}

fn params_error(e: ParamsError) -> CliError {
    CliError::new(Exit::Usage, e.to_string())
}

/// The kernel's stream as `args` ask.
pub fn stream(kernel: &Kernel) -> Result<Box<dyn Stream>, CliError> {
    Ok(match *kernel {
        Kernel::Sampling {
            region,
            threads,
            reads,
            seed,
            scope,
            wave,
        } => {
            let words = region / 4;
            let p = SamplingParams::new(words, reads, seed).map_err(params_error)?;
            let scope_words = scope.map_or(words, |s| (s / 4).max(1));
            Box::new(SamplingStream::new(&p, threads, scope_words, wave).map_err(params_error)?)
        }
        Kernel::Grouping {
            keys,
            distinct,
            seed,
            scope,
            drive,
            max_buckets,
        } => {
            let drive = match drive {
                Drive::Naive => GroupingDrive::Naive,
                Drive::Copy => GroupingDrive::Copy,
            };
            let scope_buckets = scope.map_or(u64::MAX, |s| (s / 8).max(1));
            Box::new(
                GroupingStream::new(keys, distinct, seed, drive, scope_buckets, max_buckets)
                    .map_err(|e| {
                        CliError::new(
                            Exit::Usage,
                            format!("{e} (the emulated table holds at most --max-buckets {max_buckets})"),
                        )
                    })?,
            )
        }
        Kernel::Stencil {
            nx,
            ny,
            nz,
            repeats,
            element_bytes,
        } => {
            let p = StencilParams::new(nx, ny, nz, repeats).map_err(params_error)?;
            Box::new(StencilStream::new(&p, element_bytes).map_err(params_error)?)
        }
    })
}

fn too_long(max: u64) -> CliError {
    CliError::new(
        Exit::InvalidProfile,
        format!("the stream has more than --max-references {max} references; raise it or shrink the kernel"),
    )
}

pub fn run(args: &TraceArgs, quiet: bool, write: WriteOptions) -> Result<Exit, CliError> {
    let mut s = stream(&args.kernel)?;
    if s.exact_len().is_some_and(|n| n > args.max_references) {
        return Err(too_long(args.max_references));
    }
    let written = if memtune_core::userio::is_stdout(&args.output) {
        let stdout = std::io::stdout();
        emit(&mut *s, &mut BufWriter::new(stdout.lock()), args)
            .map_err(|e| e.into_cli(&args.output))?
    } else {
        to_file(&mut *s, &args.output, args, write)?
    };
    if !quiet {
        let regions: Vec<String> = s
            .regions()
            .iter()
            .map(|(n, r)| format!("{n} {:#x}..{:#x}", r.start, r.end))
            .collect();
        eprintln!("{written} references ({})", regions.join(", "));
    }
    Ok(Exit::Ok)
}

/// Why writing stopped.
enum EmitError {
    Io(std::io::Error),
    TooLong(u64),
}

impl EmitError {
    fn into_cli(self, path: &Path) -> CliError {
        match self {
            EmitError::Io(e) => CliError::new(Exit::Io, format!("{}: {e}", path.display())),
            EmitError::TooLong(max) => too_long(max),
        }
    }
}

/// Writes the stream; returns the references written.
fn emit(s: &mut dyn Stream, out: &mut impl Write, args: &TraceArgs) -> Result<u64, EmitError> {
    let mut n = 0u64;
    for a in s {
        n += 1;
        if n > args.max_references {
            return Err(EmitError::TooLong(args.max_references));
        }
        match args.format {
            OutFormat::U64 => out.write_all(&a.to_le_bytes()),
            OutFormat::Text => writeln!(out, "{a:#x}"),
        }
        .map_err(EmitError::Io)?;
    }
    out.flush().map_err(EmitError::Io)?;
    Ok(n)
}

/// Streams into a temporary file beside `path`, renamed over it at the end: a stopped run
/// leaves no partial trace, and the file is never held in memory.
fn to_file(
    s: &mut dyn Stream,
    path: &Path,
    args: &TraceArgs,
    write: WriteOptions,
) -> Result<u64, CliError> {
    crate::files::check_output(path, write)?;
    let io = |e: std::io::Error| CliError::new(Exit::Io, format!("{}: {e}", path.display()));
    let name = path
        .file_name()
        .ok_or_else(|| CliError::new(Exit::Usage, format!("{} names no file", path.display())))?;
    let tmp = path.with_file_name(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let file = std::fs::File::create_new(&tmp).map_err(io)?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let result = emit(s, &mut out, args)
        .map_err(|e| e.into_cli(path))
        .and_then(|n| {
            let file = out.into_inner().map_err(|e| io(e.into_error()))?;
            file.sync_all().map_err(io)?;
            std::fs::rename(&tmp, path).map_err(io)?;
            Ok(n)
        });
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
