//! The `cargo tune` command line.

mod check;
mod commands;
mod decisions;
mod infer;

mod plan;
mod probe;
mod profiles;
mod raw;
mod render;
mod report;
pub(crate) mod reuse;
mod reuse_gpu;
mod reuse_replay;
mod stage_times;
mod trace;
mod tune;
mod tune_gpus;
mod tune_workers;

pub use crate::exit::{CliError, Exit};

use crate::size;
use clap::{Args, Parser, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "cargo tune",
    bin_name = "cargo tune",
    version,
    about = "Measure the GPU's memory system once; keep the profile; tune kernels from it",
    after_help = "Exit codes: 0 ok, 1 internal error, 2 usage, 3 no GPU/driver, 4 invalid profile, 5 I/O error, 6 not found, 7 probe partly failed, 8 check found bad profiles, 130 interrupted (Ctrl-C)"
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(flatten)]
    pub tune: TuneArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Args)]
pub struct Global {
    /// Machine-readable JSON on stdout instead of human output.
    #[arg(long, global = true)]
    pub json: bool,
    /// No progress or notes on stderr (errors are still printed).
    #[arg(long, short, global = true)]
    pub quiet: bool,
    /// Write outputs (-o, --plot, --out) through a symbolic link to its target instead of
    /// refusing the link.
    #[arg(long, global = true)]
    pub follow_symlinks: bool,
}

/// Options of the bare `cargo tune` (probe every visible GPU and store its profile).
#[derive(Debug, Args)]
pub struct TuneArgs {
    #[command(flatten)]
    pub probe: probe::ProbeArgs,
    /// Write into the project's `.memtune/` (for committing) instead of the user cache.
    #[arg(long)]
    pub project: bool,
    /// Probe only the GPU with this ordinal (default: the GPU that MEMTUNE_DEVICE=UUID
    /// names, else every visible GPU).
    #[arg(long, value_name = "ORDINAL")]
    pub device: Option<usize>,
    /// Probe the GPUs one after another instead of all at once (one worker process each),
    /// e.g. for sections that must not share the host link.
    #[arg(long)]
    pub one_at_a_time: bool,
    /// Internal: this process is one of the workers of a parallel `cargo tune`; it probes
    /// the GPU of `--device`, stores its profile and prints a one-line JSON result.
    #[arg(long, hide = true, requires_all = ["device", "parallel_with"], conflicts_with = "one_at_a_time")]
    pub worker: bool,
    /// Internal, with `--worker`: how many GPUs are probed at once.
    #[arg(long, hide = true, value_name = "N", requires = "worker",
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub parallel_with: Option<usize>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the visible GPUs and whether each has a stored profile.
    Devices,
    /// List stored profiles (project `.memtune/` and user cache).
    List,
    /// Print a profile: by UUID, by file, or the one the lookup chain picks for GPU 0.
    Show {
        /// The GPU's UUID (`GPU-...`).
        uuid: Option<String>,
        /// A profile file to show instead.
        #[arg(long, value_name = "FILE", conflicts_with = "uuid")]
        path: Option<PathBuf>,
        /// Also write SVG charts of the measured curves into DIR.
        #[arg(long, value_name = "DIR")]
        plot: Option<PathBuf>,
    },
    /// Probe one GPU, or a simulated one, and write the profile to a file (never stored).
    Probe {
        /// Simulate instead: a memtune-sim/1 JSON file (`-`: stdin), or a built-in (k80,
        /// p100, gt200).
        #[arg(long, value_name = "FILE|k80|p100|gt200")]
        simulate: Option<OsString>,
        /// Where to write the profile (`-`: stdout).
        #[arg(short, long, value_name = "PROFILE")]
        output: PathBuf,
        /// GPU ordinal (without --simulate; default: the GPU that MEMTUNE_DEVICE=UUID
        /// names, else 0).
        #[arg(long = "gpu")]
        gpu: Option<usize>,
        #[command(flatten)]
        probe: probe::ProbeArgs,
    },
    /// Print where profiles are looked up and stored.
    Path,
    /// Check profile files: JSON, schema, digest, identity. Exit 4 if any is invalid.
    Verify {
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
    },
    /// Validate every profile committed in `.memtune/` (or DIR), for CI: JSON, schema,
    /// digest, file name = UUID, not simulated. Exit 8 if any fails.
    Check {
        /// The directory to check (default: the project's `.memtune/`).
        #[arg(value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Accept simulated profiles (e.g. fixtures for tests).
        #[arg(long)]
        allow_simulated: bool,
    },
    /// Copy a stored profile to a file, e.g. to ship it with a binary.
    Export {
        uuid: String,
        /// Where to write it (`-`: stdout).
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
    },
    /// Validate a profile file and store it (user cache, or `.memtune/` with --project).
    Import {
        file: PathBuf,
        #[arg(long)]
        project: bool,
    },
    /// What the planners decide for a workload, and why (any profile; default: the lookup
    /// chain's for GPU 0).
    #[command(subcommand)]
    Plan(plan::PlanCommand),
    /// Raw pointer-chase latency on the GPU (cycles per load), strides x footprints.
    Chase(RawArgs),
    /// Raw random-sampling throughput on the GPU (reads/s, or atomics/s with --atomic)
    /// over growing regions.
    Sample(RawArgs),
    /// Time untuned, tuned and exhaustive-best kernels on the GPU, with their ratios.
    Bench(crate::bench::BenchArgs),
    /// The autotuner's stored decisions: list, show, clear (user cache only), export.
    #[command(subcommand)]
    Decisions(decisions::DecisionsCommand),
    /// Reuse distances of an access trace: histogram, miss-ratio curve, and with
    /// `--profile` the hit ratio at each measured level and the scope that fixes a TLB level.
    Reuse(reuse::ReuseArgs),
    /// The address stream of memtune's sampling, grouping or stencil kernel, emulated on
    /// the CPU, as a trace for `cargo tune reuse` (u64 or text, to stdout or -o FILE).
    Trace(trace::TraceArgs),
    /// One self-contained HTML page: the device, every section of a profile as tables and
    /// plots, the planners' decisions for typical workloads, the stored autotuner decisions
    /// and, with --bench DIR, benchmark results with their targets.
    Report(report::ReportArgs),
    /// TLB levels inferred from pointer-chase curves another tool measured: the seed tool's
    /// CSV files (several files of one GPU merge) or `kind,stride_bytes,footprint_bytes,cycles`
    /// rows.
    Infer(infer::InferArgs),
}

/// A raw sweep over one memory kind, geometric footprints from `--from` to `--to`.
#[derive(Debug, Args)]
pub struct RawArgs {
    /// device, pinned or managed.
    #[arg(long, default_value = "device")]
    pub kind: memtune_core::MemoryKind,
    /// Chase strides, comma-separated (chase only).
    #[arg(long, value_delimiter = ',', value_parser = size::parse, default_value = "2MiB")]
    pub strides: Vec<u64>,
    /// Smallest footprint or region.
    #[arg(long, value_parser = size::parse, default_value = "1MiB")]
    pub from: u64,
    /// Largest footprint or region (default: the probe's limit for the kind).
    #[arg(long, value_parser = size::parse)]
    pub to: Option<u64>,
    /// Growth factor between footprints.
    #[arg(long, default_value_t = 2.0)]
    pub factor: f64,
    /// SM to run the chase on (TLB chases; cache chases run on whichever SM takes block 0).
    #[arg(long, default_value_t = 0)]
    pub sm: u32,
    /// Chase device memory through this cache path instead (chase only): l1 (ld.global.ca),
    /// l2 (ld.global.cg) or constant (footprints up to 64 KiB).
    #[arg(long, value_enum)]
    pub path: Option<CachePath>,
    /// L1/shared-memory split for `--path l1`.
    #[arg(long, value_enum, default_value = "default")]
    pub carveout: CarveoutArg,
    /// Random atomic increments instead of reads (sample only; device or pinned memory): how
    /// a hash-grouping insert's count update runs.
    #[arg(long)]
    pub atomic: bool,
    /// GPU ordinal (default: the GPU that MEMTUNE_DEVICE=UUID names, else 0).
    #[arg(long = "gpu")]
    pub gpu: Option<usize>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum CachePath {
    L1,
    L2,
    Constant,
    ReadOnly,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum CarveoutArg {
    Default,
    MaxL1,
}

/// Runs the command line and returns the process exit code.
pub fn run<I: IntoIterator<Item = OsString>>(args: I) -> i32 {
    let mut args: Vec<OsString> = args.into_iter().collect();
    // `cargo tune x` runs `cargo-tune tune x`.
    if args.get(1).is_some_and(|a| a == "tune") {
        args.remove(1);
    }
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                Exit::Usage
            } else {
                Exit::Ok
            };
            let _ = e.print();
            return code as i32;
        }
    };
    let json = cli.global.json;
    match commands::dispatch(cli) {
        Ok(exit) => exit as i32,
        Err(e) => {
            eprintln!("error: {}", e.message);
            if json {
                let doc = serde_json::json!({
                    "error": { "exit_code": e.exit as i32, "kind": e.kind(), "message": e.message }
                });
                println!("{doc:#}");
            }
            e.exit as i32
        }
    }
}
