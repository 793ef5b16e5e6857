//! `cargo tune reuse TRACE`: the reuse-distance histogram of an access trace, its
//! miss-ratio curve, and with `--profile`, the hit ratio the trace would see at each level
//! the profile measured and the scope that fixes a miss-heavy TLB level.
//!
//! The trace streams: text (`0x` hex or decimal, one per line), raw little-endian `u64`, or
//! valgrind lackey output; `.gz` and `.zst` files are decompressed as they are read; `-`
//! reads stdin, and a named pipe streams too. Devices and sockets are refused, and a trace
//! of more than `--max-records` records is an error, so an endless input ends. One pass
//! feeds one analyzer per granularity the output needs, and with `--compare-exact` an
//! exact one beside the chosen mode, for its error by HP-RDA's metric. `--mode exact-gpu`
//! and `--mode hp-rda-gpu` hold the trace and analyze it on GPUs (`reuse_gpu.rs`).

use super::render::bytes;
use super::reuse_gpu::{self, GpuReport, Method};
use super::reuse_replay as replay;
use crate::exit::{CliError, Exit};
use crate::progress::Bar;
use crate::size;
use clap::{Args, ValueEnum};
use memtune_core::reuse::hprda::{Adjust, BLOCKS_RANGE, SUB_TRACE_RANGE, THREADS_PER_BLOCK_RANGE};
use memtune_core::reuse::levels::{self, Prediction};
use memtune_core::reuse::sectored::SectoredAnalyzer;
use memtune_core::reuse::trace::DEFAULT_MAX_RECORDS;
use memtune_core::reuse::{
    AddressSource, Format, Granularity, Histogram, Mode, Options, ReuseError, Sampling, TraceReader,
};
use memtune_core::userio::WriteOptions;
use memtune_core::{store, userio, ErrorClass, MemoryKind};
use memtune_probe::sim::Replay;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// References read per batch.
const BATCH: usize = 1 << 16;
/// Miss-ratio curve points printed in the table (log2-spaced capacities).
const CURVE_POINTS: u32 = 24;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TraceFormat {
    /// One address per line, `0x` hex or decimal.
    Text,
    /// Raw little-endian u64 addresses.
    U64,
    /// valgrind --tool=lackey --trace-mem=yes output.
    Lackey,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReuseMode {
    /// Sequential exact analysis (the reference).
    ExactCpu,
    /// Exact on every core; the same histogram as exact-cpu.
    ExactCpuParallel,
    /// SHARDS spatial sampling (`--rate` or `--budget`): bounded memory, an estimate.
    Sampled,
    /// HP-RDA (Cui et al.): sub-traces merged by formula and adjusted; an approximation
    /// with the GPU algorithm's structure, run on every core.
    HpRda,
    /// Exact on the GPUs of `--gpus`; the same histogram as exact-cpu.
    ExactGpu,
    /// HP-RDA on one GPU (MEMTUNE_DEVICE's, else 0): the same histogram as hp-rda.
    HpRdaGpu,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Bins {
    Log2,
    Exact,
}

#[derive(Debug, Args)]
pub struct ReuseArgs {
    /// The trace file (`-`: stdin); `.gz` and `.zst` are decompressed.
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    #[arg(long, value_enum, default_value = "text")]
    pub format: TraceFormat,
    /// Lackey traces: data records only (drop instruction fetches).
    #[arg(long)]
    pub data_only: bool,
    /// Bytes per item: addresses in one granule are one item.
    #[arg(long, value_parser = size::parse, default_value = "1")]
    pub granularity: u64,
    #[arg(long, value_enum, default_value = "exact-cpu")]
    pub mode: ReuseMode,
    /// Sampled: the fixed sampling rate in (0, 1].
    #[arg(long)]
    pub rate: Option<f64>,
    /// Sampled: the most sampled items held (memory bound) instead of a rate.
    #[arg(long)]
    pub budget: Option<usize>,
    /// HP-RDA: references per thread-local sub-trace (ST).
    #[arg(long, value_name = "ST", value_parser = ranged(SUB_TRACE_RANGE))]
    pub sub_trace: Option<u64>,
    /// HP-RDA: sub-traces per block (NB).
    #[arg(long, value_name = "NB", value_parser = ranged(THREADS_PER_BLOCK_RANGE))]
    pub threads_per_block: Option<u64>,
    /// HP-RDA: blocks per launch (NTB); a launch buffers NTB × NB × ST references.
    #[arg(long, value_name = "NTB", value_parser = ranged(BLOCKS_RANGE))]
    pub blocks: Option<u64>,
    /// HP-RDA: the adjustment of merged distances: `overlap` (the default: each merged
    /// distance less the expected number of items the sub-traces in between share), `seed`
    /// (the seed's formula 2 as written), `none`.
    #[arg(long, value_name = "seed|overlap|none", value_parser = reuse_gpu::parse_adjust, conflicts_with = "no_adjust")]
    pub adjust: Option<Adjust>,
    /// HP-RDA: leave out the adjustment of merged distances (`--adjust none`).
    #[arg(long)]
    pub no_adjust: bool,
    /// Also run exact-cpu and print the mode's error against it (HP-RDA's metric: mean
    /// over log2 bins of the difference in share of references; JSON `error_vs_exact`).
    #[arg(long)]
    pub compare_exact: bool,
    /// exact-gpu: the GPUs, `all` or ordinals separated by commas (default: the GPU of
    /// MEMTUNE_DEVICE, else 0); the trace is cut into one part per GPU.
    #[arg(long, value_name = "LIST")]
    pub gpus: Option<String>,
    /// exact-gpu on several GPUs: also analyze on the first GPU alone, check that the
    /// histograms are identical and print the speed-up.
    #[arg(long)]
    pub speedup: bool,
    /// Histogram bins printed and in the JSON.
    #[arg(long, value_enum, default_value = "log2")]
    pub bins: Bins,
    /// Predict each level of this profile: caches at their line, TLB levels at their page.
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// The memory kind whose TLB levels are predicted.
    #[arg(long, default_value = "device")]
    pub memory: MemoryKind,
    /// Most records read (lines of a text or lackey trace, addresses of a u64 one; 2^32 by
    /// default): more is an error, so an endless stream ends. Raise it for longer traces.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_RECORDS)]
    pub max_records: u64,
    /// Write `reuse-cdf.svg` (the CDF, the profile's levels marked) and `reuse-mrc.svg`
    /// (the miss-ratio curve) into this folder, created if missing.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    /// Replay the trace through this simulator's set-associative caches and `--memory` TLB
    /// levels (a memtune-sim/1 file or a built-in: k80, p100, gt200) and compare each
    /// level's hit ratio with the prediction from the histogram.
    #[arg(long, value_name = "SIM")]
    pub replay: Option<OsString>,
    /// With --profile: replay the trace on the GPU (device memory, one thread, each load
    /// waiting for the one before) and set its mean latency beside the one the profile's
    /// levels predict (at most 4 Mi references; the GPU of MEMTUNE_DEVICE, else 0).
    #[arg(long, requires = "profile")]
    pub gpu_replay: bool,
}

/// A clap parser for a `usize` range of the core's bounds.
fn ranged(r: std::ops::RangeInclusive<usize>) -> clap::builder::RangedU64ValueParser<u64> {
    clap::value_parser!(u64).range(*r.start() as u64..=*r.end() as u64)
}

pub(crate) fn reuse_error(e: ReuseError) -> CliError {
    let exit = match e.class() {
        ErrorClass::Invalid => Exit::InvalidProfile,
        ErrorClass::Io => Exit::Io,
        ErrorClass::NotFound => Exit::NotFound,
    };
    CliError::new(exit, e.to_string())
}

fn method_of(args: &ReuseArgs) -> Result<Method, CliError> {
    let usage = |m: &str| CliError::new(Exit::Usage, m.to_string());
    if args.mode != ReuseMode::ExactGpu && (args.gpus.is_some() || args.speedup) {
        return Err(usage("--gpus and --speedup are for --mode exact-gpu"));
    }
    let hp_flags = args.sub_trace.is_some()
        || args.threads_per_block.is_some()
        || args.blocks.is_some()
        || args.adjust.is_some()
        || args.no_adjust;
    if hp_flags && !matches!(args.mode, ReuseMode::HpRda | ReuseMode::HpRdaGpu) {
        return Err(usage(
            "--sub-trace, --threads-per-block, --blocks, --adjust and --no-adjust are for \
             --mode hp-rda and hp-rda-gpu",
        ));
    }
    if matches!(args.mode, ReuseMode::ExactGpu | ReuseMode::HpRdaGpu) {
        if args.rate.is_some() || args.budget.is_some() {
            return Err(usage("--rate and --budget are for --mode sampled"));
        }
        if args.mode == ReuseMode::HpRdaGpu {
            let config = reuse_gpu::hp_rda_config(args)?;
            let ordinal = crate::env::gpu_ordinal(None)?;
            return Ok(Method::HpRdaGpu { config, ordinal });
        }
        return Ok(Method::Gpu(reuse_gpu::parse_gpus(args.gpus.as_deref())?));
    }
    mode_of(args).map(Method::Cpu)
}

fn mode_of(args: &ReuseArgs) -> Result<Mode, CliError> {
    let usage = |m: &str| CliError::new(Exit::Usage, m.to_string());
    match (args.mode, args.rate, args.budget) {
        (ReuseMode::Sampled, Some(r), None) => Ok(Mode::Sampled(Sampling::Rate(r))),
        (ReuseMode::Sampled, None, Some(n)) => Ok(Mode::Sampled(Sampling::Budget(n))),
        (ReuseMode::Sampled, None, None) => Ok(Mode::Sampled(Sampling::Rate(0.01))),
        (ReuseMode::Sampled, Some(_), Some(_)) => Err(usage("give --rate or --budget, not both")),
        (ReuseMode::HpRda, None, None) => Ok(Mode::HpRda(reuse_gpu::hp_rda_config(args)?)),
        (_, None, None) => Ok(match args.mode {
            ReuseMode::ExactCpu => Mode::ExactCpu,
            _ => Mode::ExactCpuParallel,
        }),
        _ => Err(usage("--rate and --budget are for --mode sampled")),
    }
}

/// Opens the trace as a byte stream: stdin, a regular file, or a named pipe (what
/// `cargo tune reuse <(zcat t.gz)` passes), decompressed by its extension. A device or a
/// socket is refused: `/dev/zero` would never end, and no trace lives in one.
fn open(path: &Path) -> Result<Box<dyn BufRead>, CliError> {
    let io = |e: std::io::Error| CliError::new(Exit::Io, format!("{}: {e}", path.display()));
    if path.as_os_str() == "-" {
        return Ok(Box::new(BufReader::with_capacity(
            1 << 16,
            std::io::stdin(),
        )));
    }
    let meta = std::fs::metadata(path).map_err(|e| {
        let exit = if e.kind() == std::io::ErrorKind::NotFound {
            Exit::NotFound
        } else {
            Exit::Io
        };
        CliError::new(exit, format!("{}: {e}", path.display()))
    })?;
    if meta.is_dir() {
        return Err(CliError::new(
            Exit::Usage,
            format!("{} is a directory; give a trace file", path.display()),
        ));
    }
    if !meta.is_file() && !is_fifo(&meta) {
        return Err(CliError::new(
            Exit::InvalidProfile,
            format!(
                "{} is {}; a trace is read from a regular file, a pipe, or stdin (`-`)",
                path.display(),
                userio::describe(meta.file_type())
            ),
        ));
    }
    let file = std::fs::File::open(path).map_err(io)?;
    let raw: Box<dyn Read> = match path.extension().and_then(|e| e.to_str()) {
        Some("gz") => Box::new(flate2::read::MultiGzDecoder::new(file)),
        Some("zst") => Box::new(ruzstd::decoding::StreamingDecoder::new(file).map_err(|e| {
            CliError::new(
                Exit::InvalidProfile,
                format!("{}: not a zstd stream: {e}", path.display()),
            )
        })?),
        _ => Box::new(file),
    };
    Ok(Box::new(BufReader::with_capacity(1 << 16, raw)))
}

#[cfg(unix)]
fn is_fifo(meta: &std::fs::Metadata) -> bool {
    std::os::unix::fs::FileTypeExt::is_fifo(&meta.file_type())
}

#[cfg(not(unix))]
fn is_fifo(_: &std::fs::Metadata) -> bool {
    false
}

/// Histograms by granularity, the sectored ones by `(fill, line)`, the exact one at
/// `--granularity` with `--compare-exact`, and what the GPUs did at `--granularity`.
type Analyzed = (
    BTreeMap<u64, Histogram>,
    BTreeMap<(u64, u64), Histogram>,
    Option<Histogram>,
    Option<GpuReport>,
);

/// One analyzer per granularity (and an exact one to compare with) and one sectored
/// analysis per `(fill, line)` of a sectored level (always exact: its distances are no
/// plain histogram's), fed from one pass over the trace.
fn analyze(
    args: &ReuseArgs,
    method: &Method,
    granularities: &[u64],
    grains: &[(u64, u64)],
    mut replay: Option<&mut Replay>,
    mut gpu_replay: Option<&mut reuse_gpu::GpuReplay>,
    bar: &mut Bar,
) -> Result<Analyzed, CliError> {
    let format = match args.format {
        TraceFormat::Text => Format::Text,
        TraceFormat::U64 => Format::U64,
        TraceFormat::Lackey => Format::Lackey {
            data_only: args.data_only,
        },
    };
    let total_bytes = std::fs::metadata(&args.trace)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.len());
    let mut reader =
        TraceReader::new(open(&args.trace)?, format).with_max_records(args.max_records);
    let reference = args
        .compare_exact
        .then_some((args.granularity, Method::Cpu(Mode::ExactCpu)));
    let mut analyzers = granularities
        .iter()
        .map(|&g| (g, method.clone()))
        .chain(reference.clone())
        .map(|(g, method)| {
            let options = Options {
                granularity: g,
                ..Options::default()
            };
            Ok((
                g,
                Granularity::new(g)?,
                reuse_gpu::engine(&method, &options)?,
            ))
        })
        .collect::<Result<Vec<_>, ReuseError>>()
        .map_err(reuse_error)?;
    let exact = reference.map(|_| analyzers.len() - 1);
    let mut sectored = grains
        .iter()
        .map(|&(fill, line)| Ok(((fill, line), SectoredAnalyzer::new(fill, line)?)))
        .collect::<Result<Vec<_>, ReuseError>>()
        .map_err(reuse_error)?;
    let (mut batch, mut items) = (Vec::with_capacity(BATCH), Vec::with_capacity(BATCH));
    let mut read = 0u64;
    loop {
        batch.clear();
        let n = reader.read_into(&mut batch, BATCH).map_err(reuse_error)?;
        if n == 0 {
            break;
        }
        read += n as u64;
        if let Some(r) = replay.as_deref_mut() {
            r.push(&batch);
        }
        if let Some(r) = gpu_replay.as_deref_mut() {
            r.push(&batch)?;
        }
        for (_, a) in sectored.iter_mut() {
            a.push(&batch);
        }
        for (_, granularity, analyzer) in analyzers.iter_mut() {
            items.clear();
            items.extend_from_slice(&batch);
            granularity.apply(&mut items);
            analyzer.push(&items)?;
        }
        let fraction = total_bytes.map_or(0.0, |t| reader.bytes() as f64 / t.max(1) as f64);
        bar.update(fraction, &format!("{read} references"));
    }
    let mut histograms = BTreeMap::new();
    let (mut reference, mut report) = (None, None);
    for (i, (g, _, a)) in analyzers.into_iter().enumerate() {
        let main = g == args.granularity && Some(i) != exact;
        if a.on_gpu() {
            bar.update(1.0, &format!("{read} references; on the GPUs"));
        }
        let (h, r) = a.finish(main && args.speedup)?;
        if Some(i) == exact {
            reference = Some(h);
        } else {
            if main {
                report = r;
            }
            histograms.insert(g, h);
        }
    }
    let sectored = sectored.into_iter().map(|(g, a)| (g, a.finish())).collect();
    Ok((histograms, sectored, reference, report))
}

pub fn run(
    args: &ReuseArgs,
    json_out: bool,
    quiet: bool,
    write: WriteOptions,
) -> Result<Exit, CliError> {
    if args.granularity == 0 {
        return Err(CliError::new(
            Exit::Usage,
            "--granularity must be at least 1 byte",
        ));
    }
    let method = method_of(args)?;
    let profile = args.profile.as_deref().map(store::load_path).transpose()?;
    let profile_levels = profile
        .as_ref()
        .map_or_else(Vec::new, |p| levels::levels(p, args.memory));
    let mut gpu_replay = reuse_gpu::GpuReplay::new(args.gpu_replay, args.memory)?;
    let mut replay = args
        .replay
        .as_deref()
        .map(|sim| replay::open(sim, args.memory))
        .transpose()?;
    let replay_levels = replay.as_ref().map(replay::levels).unwrap_or_default();
    let mut granularities = levels::granularities(&profile_levels);
    granularities.extend(levels::granularities(&replay_levels));
    granularities.push(args.granularity);
    granularities.sort_unstable();
    granularities.dedup();
    let mut bar = Bar::new("reuse", quiet || json_out);
    let (histograms, sectored, reference, report) = analyze(
        args,
        &method,
        &granularities,
        &levels::sectored_grains(&profile_levels),
        replay.as_mut(),
        gpu_replay.as_mut(),
        &mut bar,
    )?;
    let main = histograms
        .get(&args.granularity)
        .ok_or_else(|| CliError::new(Exit::Internal, "no histogram at the asked granularity"))?;
    let error = reference.as_ref().map(|r| main.average_bin_error(r));
    let predictions = levels::predict(&profile_levels, |l| {
        if l.sectored() {
            sectored.get(&(l.granularity, l.line_bytes))
        } else {
            histograms.get(&l.granularity)
        }
    });
    let replayed = gpu_replay
        .map(|r| r.run(profile.as_ref(), &predictions))
        .transpose()?;
    let checks = replay
        .as_ref()
        .map(|r| {
            replay::compare(
                r,
                &levels::predict(&replay_levels, |l| histograms.get(&l.granularity)),
            )
        })
        .unwrap_or_default();
    bar.finish(&format!("{} references", main.references));
    if let Some(dir) = &args.plot {
        let dir = crate::files::output_dir(dir, write)?;
        let title = args.trace.file_name().map_or_else(
            || args.trace.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        for (file, svg) in crate::plot::reuse_svgs(&title, &histograms, &predictions) {
            crate::files::write_file(&dir.join(file), svg.as_bytes(), write)?;
        }
    }
    if json_out {
        let mut doc = to_json(args, &method, main, &predictions);
        if let (Value::Object(map), Some(e)) = (&mut doc, error) {
            map.insert("error_vs_exact".into(), json!(e));
        }
        if let (Value::Object(map), Some(r)) = (&mut doc, &report) {
            map.insert("gpu".into(), r.to_json());
        }
        if let (Value::Object(map), Some(r)) = (&mut doc, &replayed) {
            map.insert("gpu_replay".into(), r.to_json());
        }
        if let (Value::Object(map), Some(sim)) = (&mut doc, &args.replay) {
            map.insert("replay".into(), replay::to_json(sim, &checks));
        }
        super::commands::print_json(&doc);
    } else {
        print_table(args, &method, main, &predictions);
        if let Some(r) = &report {
            r.print();
        }
        if let Some(r) = &replayed {
            r.print();
        }
        if let Some(e) = error {
            println!(
                "\nerror vs exact-cpu: {:.4}% (mean over log2 bins of |share difference|)",
                100.0 * e
            );
        }
        if let Some(sim) = &args.replay {
            replay::print(sim, args.memory, &checks);
        }
    }
    if report.as_ref().and_then(GpuReport::agrees) == Some(false) {
        return Err(CliError::new(
            Exit::Internal,
            "exact-gpu: the one-GPU and the all-GPU histograms differ; please report this",
        ));
    }
    Ok(Exit::Ok)
}

fn to_json(args: &ReuseArgs, method: &Method, h: &Histogram, predictions: &[Prediction]) -> Value {
    let mut doc = serde_json::to_value(h).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut doc {
        if args.bins == Bins::Log2 {
            map.remove("histogram");
            map.insert("log2_bins".into(), json!(h.log2_bins()));
        }
        map.insert("mode".into(), json!(method.name()));
        if let Some(c) = method.hp_rda() {
            let hp = json!({
                "sub_trace": c.sub_trace,
                "threads_per_block": c.threads_per_block,
                "blocks": c.blocks,
                "adjust": c.adjust != Adjust::None,
                "adjustment": c.adjust.name(),
            });
            map.insert("hp_rda".into(), hp);
        }
        map.insert("granularity".into(), json!(args.granularity));
        map.insert("miss_ratio_curve".into(), json!(curve(h)));
        if args.profile.is_some() {
            map.insert("memory".into(), json!(args.memory.as_str()));
            map.insert("levels".into(), json!(predictions));
        }
    }
    doc
}

/// The miss ratio at log2-spaced capacities up to the distinct items.
fn curve(h: &Histogram) -> Vec<(u64, f64)> {
    (0..CURVE_POINTS)
        .map(|k| 1u64 << (2 * k).min(62))
        .take_while(|&c| c <= h.distinct.max(1).saturating_mul(2))
        .map(|c| (c, h.miss_ratio(c)))
        .collect()
}

fn print_table(args: &ReuseArgs, method: &Method, h: &Histogram, predictions: &[Prediction]) {
    println!(
        "{} references, {} distinct items of {} ({}), {} cold",
        h.references,
        h.distinct,
        bytes(args.granularity),
        method.name(),
        h.cold
    );
    if let Some(s) = &h.sample {
        println!(
            "sampled: rate {:.4}, {} of {} references analyzed (counts scaled by 1/rate)",
            s.rate, s.sampled_references, s.trace_references
        );
    }
    println!("\n{:>24}  {:>14}  {:>8}", "distance", "references", "share");
    let share = |c: u64| 100.0 * c as f64 / h.references.max(1) as f64;
    match args.bins {
        Bins::Log2 => {
            for b in h.log2_bins() {
                println!(
                    "{:>24}  {:>14}  {:>7.2}%",
                    format!("{}..{}", b.lo, b.hi),
                    b.count,
                    share(b.count)
                );
            }
        }
        Bins::Exact => {
            for &(d, c) in &h.exact {
                println!("{d:>24}  {c:>14}  {:>7.2}%", share(c));
            }
        }
    }
    println!("{:>24}  {:>14}  {:>7.2}%", "cold", h.cold, share(h.cold));
    println!("\nmiss ratio of a fully associative LRU cache of N items:");
    for (c, m) in curve(h) {
        println!("{c:>24}  {m:>14.4}");
    }
    if args.profile.is_some() {
        println!("\npredicted per level ({} memory):", args.memory);
        for p in predictions {
            let l = &p.level;
            let scope = p.scope_bytes.map_or(String::new(), |s| {
                format!("  miss-heavy: scope passes to at most {}", bytes(s))
            });
            println!(
                "  {:<28} {} x {}{}: hit ratio {:.4}{scope}",
                l.name,
                l.capacity,
                bytes(l.granularity),
                if l.assumed_granularity {
                    " (line assumed)"
                } else {
                    ""
                },
                p.hit_ratio
            );
        }
        if predictions.is_empty() {
            println!(
                "  the profile measured no cache or {} TLB level",
                args.memory
            );
        }
    }
}
