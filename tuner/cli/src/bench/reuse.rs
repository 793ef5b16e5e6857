//! `cargo tune bench reuse`: every reuse-distance mode on one generated trace, in one run,
//! against the targets docs/reuse.md lists. The trace (`--refs` references, the first `--distinct` of
//! them each item once, the rest uniform over those items: no locality, the hardest case
//! for the merges) is held in host memory; `exact-cpu` (one thread) gives the reference
//! histogram and time; `exact-gpu` and `hp-rda-gpu` run [`GPU_RUNS`] times each, from the
//! trace in host memory to the histogram, where a GPU answers; `hp-rda` on every core and
//! `sampled` at a 1% rate run once. Every histogram is compared with the reference.

use super::steps::Steps;
use super::BenchArgs;
use crate::exit::{CliError, Exit};
use memtune::reuse::hprda as gpu_hprda;
use memtune::reuse::{self as gpu_reuse, GpuReuseError};
use memtune_core::reuse::hprda::{Adjust, HpRdaConfig};
use memtune_core::reuse::{exact, Histogram, HpRdaAnalyzer, ShardsAnalyzer};
use memtune_core::time;
use memtune_core::userio::WriteOptions;
use serde::Serialize;
use serde_json::json;
use std::time::Instant;

/// References and distinct items of the trace.
const REFS: u64 = 100_000_000;
const DISTINCT: u64 = 10_000_000;
/// `--quick`: a tenth of each.
const QUICK_REFS: u64 = 10_000_000;
const QUICK_DISTINCT: u64 = 1_000_000;
/// The most references: the GPU modes' bound (the trace's positions are 32-bit).
const MAX_REFS: u64 = (1 << 31) - 1;
/// Timed runs of each GPU mode (the first compiles nothing: kernels are compiled before
/// the seconds start).
const GPU_RUNS: usize = 3;
/// The sampled mode's rate, and the miss-ratio capacities its error is read at.
const SAMPLE_RATE: f64 = 0.01;
const MRC_POINTS: u64 = 100;

/// HP-RDA's adjustments the bench runs: the seed's formula 2 and the overlap correction.
const ADJUSTMENTS: [Adjust; 2] = [Adjust::Overlap, Adjust::Seed];

/// The targets (docs/reuse.md), scaled to the trace where they name a time.
const EXACT_CPU_MIN_RATE: f64 = 6e6;
const EXACT_GPU_MIN_SPEEDUP: f64 = 100.0;
const EXACT_GPU_SECONDS_PER_1E8: f64 = 0.15;
const EXACT_GPU_MIN_ON_GPU_RATE: f64 = 1e9;
const HP_RDA_MAX_ERROR: f64 = 0.01;
const HP_RDA_MIN_SPEEDUP: f64 = 20.0;
const SAMPLED_MAX_MAE: f64 = 0.01;

/// One mode's result.
#[derive(Debug, Clone, Serialize)]
struct ModeRow {
    mode: String,
    /// Seconds of each run, from the trace in host memory to the histogram.
    runs_seconds: Vec<f64>,
    median_seconds: f64,
    references_per_second: f64,
    /// exact-cpu's seconds over this mode's median.
    speedup_vs_exact_cpu: f64,
    /// On the GPU alone (the upload and the histogram on the CPU left out), the median.
    #[serde(skip_serializing_if = "Option::is_none")]
    on_gpu_seconds: Option<f64>,
    /// HP-RDA's error by the seed's metric, or sampled's miss-ratio mean absolute error.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<f64>,
    /// Whether its histogram equals the one it must equal (exact-cpu's for the exact
    /// modes, hp-rda's for hp-rda-gpu).
    #[serde(skip_serializing_if = "Option::is_none")]
    equal: Option<bool>,
    /// The GPU modes: where each run's seconds went.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    runs_parts: Vec<serde_json::Value>,
}

/// A target, what was measured and whether it holds.
#[derive(Debug, Clone, Serialize)]
struct Target {
    name: String,
    /// `references/s`, `x` (a speed-up), `seconds` or `fraction`.
    unit: &'static str,
    measured: f64,
    bound: f64,
    met: bool,
}

fn target(name: &str, unit: &'static str, measured: f64, bound: f64, at_least: bool) -> Target {
    let met = measured.is_finite()
        && if at_least {
            measured >= bound
        } else {
            measured <= bound
        };
    Target {
        name: name.to_string(),
        unit,
        measured,
        bound,
        met,
    }
}

/// The trace: the first `d` references use items `0..d` once each, the rest are uniform
/// over them (xorshift64*), so exactly `d` items are distinct.
fn trace(n: u64, d: u64) -> Vec<u64> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..n)
        .map(|i| {
            if i < d {
                return i;
            }
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            x.wrapping_mul(0x2545_f491_4f6c_dd1d) % d
        })
        .collect()
}

fn median(v: &[f64]) -> f64 {
    memtune_core::stats::median(v).unwrap_or(f64::NAN)
}

fn row(mode: &str, runs: Vec<f64>, n: u64, reference_seconds: f64) -> ModeRow {
    let m = median(&runs);
    ModeRow {
        mode: mode.to_string(),
        runs_seconds: runs,
        median_seconds: m,
        references_per_second: n as f64 / m,
        speedup_vs_exact_cpu: reference_seconds / m,
        on_gpu_seconds: None,
        error: None,
        equal: None,
        runs_parts: Vec::new(),
    }
}

/// `capacity` points spread log-uniformly over `1..=max`.
fn capacities(max: u64) -> Vec<u64> {
    let top = (max.max(2) as f64).ln();
    let mut c: Vec<u64> = (0..MRC_POINTS)
        .map(|i| (top * i as f64 / (MRC_POINTS - 1) as f64).exp().round() as u64)
        .collect();
    c.dedup();
    c
}

/// Whether a GPU error means there is no GPU to run on (the mode is skipped).
fn no_gpu(e: &memtune::gpu::Error) -> bool {
    matches!(e, memtune::gpu::Error::Device(_))
}

pub(super) fn run(
    args: &BenchArgs,
    json_out: bool,
    quiet: bool,
    write: WriteOptions,
) -> Result<Exit, CliError> {
    let usage = |m: String| CliError::new(Exit::Usage, m);
    let (n, d) = if args.quick {
        (QUICK_REFS, QUICK_DISTINCT)
    } else {
        (REFS, DISTINCT)
    };
    let n = args.refs.unwrap_or(n);
    let d = args.distinct.unwrap_or(d.min(n));
    if n == 0 || n > MAX_REFS {
        return Err(usage(format!("--refs {n}: give 1 to {MAX_REFS}")));
    }
    if d == 0 || d > n {
        return Err(usage(format!(
            "--distinct {d}: give 1 to the references ({n})"
        )));
    }
    let host = super::host_memory_bytes();
    // The trace, exact-cpu's last-use table, HP-RDA's launch buffers and a copy for the GPU
    // modes: about 40 bytes a reference at the peak.
    if n.saturating_mul(40) > host / 2 {
        return Err(usage(format!(
            "--refs {n}: needs about {} GiB of host memory, more than half of this machine's {} GiB",
            (n * 40) >> 30,
            host >> 30
        )));
    }
    let out = args
        .out
        .as_deref()
        .map(|dir| crate::files::output_dir(dir, write))
        .transpose()?;
    let steps = Steps::new(quiet);
    let ordinal = crate::env::gpu_ordinal(args.gpu)?;
    let total = 5;
    steps.case(
        "reuse",
        0,
        total,
        &format!("trace of {n} references over {d} items"),
    );
    let items = trace(n, d);

    steps.case("reuse", 1, total, "exact-cpu (one thread)");
    let t = Instant::now();
    let reference = exact::histogram(&items).map_err(crate::cli::reuse::reuse_error)?;
    let cpu_seconds = t.elapsed().as_secs_f64();
    let mut rows = vec![row("exact-cpu", vec![cpu_seconds], n, cpu_seconds)];
    let mut notes = Vec::new();

    steps.case("reuse", 2, total, "hp-rda (every core), each adjustment");
    let workers = std::thread::available_parallelism().map_or(1, |p| p.get());
    let mut hp = Vec::new();
    for adjust in ADJUSTMENTS {
        let config = HpRdaConfig {
            adjust,
            ..HpRdaConfig::default()
        };
        let t = Instant::now();
        let h = HpRdaAnalyzer::new(config, workers)
            .and_then(|mut a| a.push(&items).and_then(|()| a.finish()))
            .map_err(crate::cli::reuse::reuse_error)?;
        let mut r = row(
            &hp_rda_name("hp-rda", adjust),
            vec![t.elapsed().as_secs_f64()],
            n,
            cpu_seconds,
        );
        r.error = Some(h.average_bin_error(&reference));
        rows.push(r);
        hp.push((config, h));
    }

    steps.case("reuse", 3, total, "sampled (1%)");
    let t = Instant::now();
    let mut sampler =
        ShardsAnalyzer::with_rate(SAMPLE_RATE).map_err(crate::cli::reuse::reuse_error)?;
    sampler.push(&items);
    let held = sampler.held();
    let sampled = sampler.finish();
    let mut r = row("sampled", vec![t.elapsed().as_secs_f64()], n, cpu_seconds);
    r.error = Some(sampled.mean_absolute_error(&reference, &capacities(d)));
    rows.push(r);

    steps.case("reuse", 4, total, "exact-gpu and hp-rda-gpu");
    match gpu_rows(&items, ordinal, &reference, &hp, cpu_seconds) {
        Ok(mut g) => rows.append(&mut g),
        Err(GpuSkip::NoGpu(m)) => notes.push(format!("GPU modes skipped: {m}")),
        Err(GpuSkip::Failed(e)) => return Err(e),
    }
    steps.finish("done");

    let targets = targets(&rows, n);
    let doc = json!({
        "workload": "reuse",
        "command": std::env::args().collect::<Vec<_>>().join(" "),
        "date": time::now_rfc3339(),
        "references": n,
        "distinct": reference.distinct,
        "cold": reference.cold,
        "trace": "the first `distinct` references each item once, the rest uniform over them",
        "sampled_held_items": held,
        "host_threads": workers,
        "host_cpu": host_cpu(),
        "rows": rows,
        "targets": targets,
        "notes": notes,
    });
    if let Some(dir) = &out {
        let path = dir.join("bench-reuse.json");
        crate::files::write_file(&path, format!("{doc:#}\n").as_bytes(), write)?;
        steps.note(&format!("wrote {}", path.display()));
    }
    if json_out {
        println!("{doc:#}");
    } else {
        print(&rows, &targets, &notes, n, reference.distinct);
    }
    let disagree = rows.iter().any(|r| r.equal == Some(false));
    if disagree {
        eprintln!("error: a mode's histogram differs from the one it must equal (see above)");
        return Ok(Exit::Internal);
    }
    Ok(Exit::Ok)
}

/// The host CPU's model name, as /proc/cpuinfo gives it (exact-cpu's speed depends on it).
fn host_cpu() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("model name"))?;
    Some(line.split_once(':')?.1.trim().to_string())
}

enum GpuSkip {
    NoGpu(String),
    Failed(CliError),
}

/// exact-gpu, then hp-rda-gpu with each adjustment of `hp` (its CPU form's histograms),
/// [`GPU_RUNS`] each; no GPU skips them all.
fn gpu_rows(
    items: &[u64],
    ordinal: usize,
    reference: &Histogram,
    hp: &[(HpRdaConfig, Histogram)],
    cpu_seconds: f64,
) -> Result<Vec<ModeRow>, GpuSkip> {
    let n = items.len() as u64;
    let failed = |m: String| GpuSkip::Failed(CliError::new(Exit::Internal, m));
    let (mut runs, mut on_gpu, mut equal, mut parts) = (Vec::new(), Vec::new(), true, Vec::new());
    for _ in 0..GPU_RUNS {
        match gpu_reuse::analyze(items, &[ordinal]) {
            Ok(a) => {
                runs.push(a.seconds + a.histogram_seconds);
                let upload: f64 = a.parts.iter().map(|p| p.upload_seconds).sum();
                on_gpu.push(a.seconds - upload);
                equal &= a.histogram == *reference;
                parts.push(json!({
                    "seconds": a.seconds,
                    "upload_seconds": upload,
                    "phase_seconds": a.parts.first().map(|p| p.phase_seconds),
                    "radix_passes": a.parts.first().map(|p| p.radix_passes),
                    "histogram_seconds": a.histogram_seconds,
                }));
            }
            Err(GpuReuseError::Gpu { source, .. }) if no_gpu(&source) => {
                return Err(GpuSkip::NoGpu(source.to_string()))
            }
            Err(e) => return Err(failed(format!("exact-gpu: {e}"))),
        }
    }
    let mut exact_row = row("exact-gpu", runs, n, cpu_seconds);
    exact_row.on_gpu_seconds = Some(median(&on_gpu));
    exact_row.equal = Some(equal);
    exact_row.runs_parts = parts;
    let mut rows = vec![exact_row];
    for (config, cpu_form) in hp {
        rows.push(hp_rda_gpu_row(
            items,
            ordinal,
            *config,
            reference,
            cpu_form,
            cpu_seconds,
        )?);
    }
    Ok(rows)
}

/// hp-rda-gpu with `config`, [`GPU_RUNS`] times; its histogram must equal `cpu_form`.
fn hp_rda_gpu_row(
    items: &[u64],
    ordinal: usize,
    config: HpRdaConfig,
    reference: &Histogram,
    cpu_form: &Histogram,
    cpu_seconds: f64,
) -> Result<ModeRow, GpuSkip> {
    let n = items.len() as u64;
    let failed = |m: String| GpuSkip::Failed(CliError::new(Exit::Internal, m));
    let (mut runs, mut on_gpu, mut same, mut parts) = (Vec::new(), Vec::new(), true, Vec::new());
    let mut error = 0.0;
    for _ in 0..GPU_RUNS {
        let r = gpu_hprda::analyze(items, config, ordinal)
            .map_err(|e| failed(format!("hp-rda-gpu: {e}")))?;
        runs.push(r.seconds + r.histogram_seconds);
        on_gpu.push(r.seconds - r.upload_seconds - r.read_seconds);
        same &= r.histogram == *cpu_form;
        error = r.histogram.average_bin_error(reference);
        parts.push(json!({
            "seconds": r.seconds,
            "upload_seconds": r.upload_seconds,
            "preprocess_seconds": r.preprocess_seconds,
            "thread_seconds": r.thread_seconds,
            "merge_seconds": r.merge_seconds,
            "read_seconds": r.read_seconds,
            "histogram_seconds": r.histogram_seconds,
            "launches": r.launches,
            "kept": r.kept,
        }));
    }
    let mut hp_row = row(
        &hp_rda_name("hp-rda-gpu", config.adjust),
        runs,
        n,
        cpu_seconds,
    );
    hp_row.on_gpu_seconds = Some(median(&on_gpu));
    hp_row.equal = Some(same);
    hp_row.error = Some(error);
    hp_row.runs_parts = parts;
    Ok(hp_row)
}

/// `mode`, with ` --adjust NAME` for an adjustment other than the seed's.
fn hp_rda_name(mode: &str, adjust: Adjust) -> String {
    if adjust == Adjust::default() {
        mode.to_string()
    } else {
        format!("{mode} --adjust {}", adjust.name())
    }
}

fn targets(rows: &[ModeRow], n: u64) -> Vec<Target> {
    let get = |m: &str| rows.iter().find(|r| r.mode == m);
    let mut t = Vec::new();
    if let Some(r) = get("exact-cpu") {
        t.push(target(
            "exact-cpu references/s (one thread)",
            "references/s",
            r.references_per_second,
            EXACT_CPU_MIN_RATE,
            true,
        ));
    }
    if let Some(r) = get("exact-gpu") {
        t.push(target(
            "exact-gpu speed-up over exact-cpu, end to end",
            "x",
            r.speedup_vs_exact_cpu,
            EXACT_GPU_MIN_SPEEDUP,
            true,
        ));
        t.push(target(
            "exact-gpu seconds, end to end",
            "seconds",
            r.median_seconds,
            EXACT_GPU_SECONDS_PER_1E8 * n as f64 / 1e8,
            false,
        ));
        let on_gpu = r.on_gpu_seconds.map_or(f64::NAN, |s| n as f64 / s);
        t.push(target(
            "exact-gpu references/s on the GPU",
            "references/s",
            on_gpu,
            EXACT_GPU_MIN_ON_GPU_RATE,
            true,
        ));
    }
    let gpu = get("hp-rda-gpu").is_some();
    for r in rows.iter().filter(|r| {
        r.mode
            .starts_with(if gpu { "hp-rda-gpu" } else { "hp-rda" })
            && !r.mode.ends_with("none")
    }) {
        t.push(target(
            &format!("{} error (seed's metric)", r.mode),
            "fraction",
            r.error.unwrap_or(f64::NAN),
            HP_RDA_MAX_ERROR,
            false,
        ));
        t.push(target(
            &format!("{} speed-up over exact-cpu", r.mode),
            "x",
            r.speedup_vs_exact_cpu,
            HP_RDA_MIN_SPEEDUP,
            true,
        ));
    }
    if let Some(r) = get("sampled") {
        t.push(target(
            "sampled miss-ratio error at 1%",
            "fraction",
            r.error.unwrap_or(f64::NAN),
            SAMPLED_MAX_MAE,
            false,
        ));
    }
    t
}

/// A target's figure in its unit.
fn figure(v: f64, unit: &str) -> String {
    match unit {
        "references/s" => format!("{:.1} M/s", v / 1e6),
        "fraction" => format!("{:.3}%", v * 100.0),
        "x" => format!("{v:.1}x"),
        _ => format!("{v:.3} s"),
    }
}

fn print(rows: &[ModeRow], targets: &[Target], notes: &[String], n: u64, distinct: u64) {
    println!("reuse: {n} references over {distinct} distinct items");
    println!(
        "{:<26} {:>10} {:>12} {:>10} {:>10} {:>9}  equal",
        "mode", "seconds", "M refs/s", "vs cpu", "on GPU s", "error"
    );
    for r in rows {
        let opt = |v: Option<f64>, p: usize| v.map_or("-".to_string(), |v| format!("{v:.p$}"));
        println!(
            "{:<26} {:>10.3} {:>12.1} {:>9.1}x {:>10} {:>9}  {}",
            r.mode,
            r.median_seconds,
            r.references_per_second / 1e6,
            r.speedup_vs_exact_cpu,
            opt(r.on_gpu_seconds, 3),
            r.error
                .map_or("-".to_string(), |e| format!("{:.3}%", e * 100.0)),
            r.equal.map_or("-", |e| if e { "yes" } else { "NO" })
        );
    }
    for t in targets {
        let mark = if t.met { "met" } else { "MISSED" };
        println!(
            "target {}: {} against {}: {mark}",
            t.name,
            figure(t.measured, t.unit),
            figure(t.bound, t.unit)
        );
    }
    for m in notes {
        println!("note: {m}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_uses_exactly_the_distinct_items() {
        let t = trace(10_000, 700);
        let mut s = t.clone();
        s.sort_unstable();
        s.dedup();
        assert_eq!(s.len(), 700);
        assert_eq!(t.len(), 10_000);
        assert!(t.iter().all(|&x| x < 700));
    }

    #[test]
    fn targets_read_the_rows() {
        let mut cpu = row("exact-cpu", vec![2.0], 10_000_000, 2.0);
        cpu.references_per_second = 5e6;
        let mut s = row("sampled", vec![0.1], 10_000_000, 2.0);
        s.error = Some(0.02);
        let t = targets(&[cpu, s], 10_000_000);
        assert_eq!(t.len(), 2);
        assert!(!t[0].met, "5 M/s is under the 6 M/s target");
        assert!(!t[1].met, "a 0.02 error is over 0.01");
    }

    #[test]
    fn capacities_span_one_to_max() {
        let c = capacities(1_000_000);
        assert_eq!(c.first(), Some(&1));
        assert_eq!(c.last(), Some(&1_000_000));
        assert!(c.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn median_of_even_and_odd() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
