//! `cargo tune bench sampling|grouping|stencil|all`: on a GPU, for each workload size, the
//! untuned kernel, the tuned one (the planner's choice for the profile) and the best of an
//! exhaustive sweep, timed in the same run with CUDA events (kernel work only, inputs
//! resident, median of 5 runs after a warm-up; sampling's configurations in two rounds of 5,
//! taken in turn, each timed by its better round), with every version's result checked
//! against the others' before its time is reported.

pub mod sweep;

use crate::cli::{CliError, Exit};
use crate::plot::{Chart, Series};
use clap::{Args, ValueEnum};
use memtune::launch::{grouping_capacity, LaunchError, Timing};
use memtune::Runtime;
use memtune_core::lookup::{self, LookupConfig, Wanted};
use memtune_core::plan::{grouping, sampling, stencil, Dtype};
use memtune_core::plan::{GroupingWorkload, SamplingWorkload, StencilWorkload};
use memtune_core::{store, time, MemoryKind, Profile};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use sweep::{Check, Measured, Row};

/// Timed runs after the warm-up.
const RUNS: usize = 5;
/// Rounds of [`RUNS`] for sampling: its zero-copy configurations differ by a few percent,
/// as much as one configuration's time wandered over seconds on an H200 (2-5%, session 5's
/// zero-copy exploration), so every configuration is timed once a round, in turn.
const SAMPLING_ROUNDS: usize = 2;
/// Bytes of the device-to-device copy that gives the reference bandwidth.
const COPY_BYTES: u64 = 1 << 30;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Workload {
    Sampling,
    Grouping,
    Stencil,
    All,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Which workload to benchmark.
    #[arg(value_enum)]
    pub workload: Workload,
    /// Plan for this profile file (default: the lookup chain for the GPU).
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// A few sizes only (a short smoke run).
    #[arg(long)]
    pub quick: bool,
    /// Write bench-<workload>.json and bench-<workload>.svg into DIR.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// GPU ordinal.
    #[arg(long = "gpu", default_value_t = 0)]
    pub gpu: usize,
}

/// One workload's results.
struct Report {
    workload: &'static str,
    /// Rounds of [`RUNS`] each configuration was timed in.
    rounds: usize,
    rows: Vec<Row>,
    errors: Vec<String>,
    checks: Vec<Check>,
}

fn launch_error(e: LaunchError) -> CliError {
    match e {
        LaunchError::Device(d) => d.into(),
        other => CliError::new(Exit::Internal, other.to_string()),
    }
}

pub fn run(args: &BenchArgs, json_out: bool, quiet: bool) -> Result<Exit, CliError> {
    let note = |m: &str| {
        if !quiet {
            eprintln!("{m}");
        }
    };
    let mut rt = Runtime::open(args.gpu).map_err(launch_error)?;
    let (profile, source) = load_profile(args.profile.as_deref(), &rt, quiet)?;
    let id = rt.identity().clone();
    if profile.device.uuid != id.uuid {
        note(&format!(
            "note: the profile is of {} ({}), this GPU is {} ({})",
            profile.device.name, profile.device.uuid, id.name, id.uuid
        ));
    }
    note(&format!("profile: {} from {source}", profile.device.uuid));
    let copy = rt
        .time_device_copy(COPY_BYTES, RUNS)
        .map_err(launch_error)?;
    let copy_gbs = sweep::copy_gb_per_s(COPY_BYTES, copy.median_ms());
    note(&format!(
        "device copy: {copy_gbs:.0} GB/s (1 GiB cuMemcpyDtoD, median of {RUNS})"
    ));

    let which: &[Workload] = match args.workload {
        Workload::All => &[Workload::Sampling, Workload::Grouping, Workload::Stencil],
        Workload::Sampling => &[Workload::Sampling],
        Workload::Grouping => &[Workload::Grouping],
        Workload::Stencil => &[Workload::Stencil],
    };
    let mut reports = Vec::new();
    for w in which {
        let report = match w {
            Workload::Sampling => bench_sampling(&mut rt, &profile, args.quick, &note),
            Workload::Grouping => bench_grouping(&mut rt, &profile, args.quick, &note),
            _ => bench_stencil(&mut rt, &profile, args.quick, copy_gbs, &note),
        }
        .map_err(launch_error)?;
        reports.push(report);
    }

    let command: Vec<String> = std::env::args().collect();
    let date = time::now_rfc3339();
    let docs: Vec<Value> = reports
        .iter()
        .map(|r| {
            json!({
                "workload": r.workload,
                "command": command.join(" "),
                "date": date,
                "quick": args.quick,
                "device": {"name": id.name, "uuid": id.uuid, "sm_count": id.sm_count},
                "profile": {"uuid": profile.device.uuid, "name": profile.device.name,
                            "digest": profile.digest, "source": source,
                            "simulated": profile.is_simulated()},
                "runs": RUNS,
                "rounds": r.rounds,
                "device_copy": {"bytes": COPY_BYTES, "median_ms": copy.median_ms(),
                                "runs_ms": copy.runs_ms, "gb_per_s": copy_gbs},
                "rows": r.rows,
                "errors": r.errors,
                "targets": r.checks,
                "results_match": r.rows.iter().all(|x| x.results_match),
            })
        })
        .collect();
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
        for (r, doc) in reports.iter().zip(&docs) {
            let path = dir.join(format!("bench-{}.json", r.workload));
            std::fs::write(&path, format!("{doc:#}\n")).map_err(|e| io(&path, e))?;
            let path = dir.join(format!("bench-{}.svg", r.workload));
            std::fs::write(&path, chart(&id.name, r).to_svg()).map_err(|e| io(&path, e))?;
        }
        note(&format!(
            "wrote bench-*.json and bench-*.svg to {}",
            dir.display()
        ));
    }
    if json_out {
        println!("{:#}", json!({ "reports": docs }));
    } else {
        println!(
            "{} ({}); profile {} from {source}; device copy {copy_gbs:.0} GB/s",
            id.name, id.uuid, profile.device.uuid
        );
        for r in &reports {
            print_report(r);
        }
    }
    let failed = reports
        .iter()
        .any(|r| !r.errors.is_empty() || r.rows.iter().any(|x| !x.results_match));
    if failed {
        eprintln!("error: some sizes failed or versions disagreed on the result (see above)");
        return Ok(Exit::Internal);
    }
    Ok(Exit::Ok)
}

fn io(path: &Path, e: std::io::Error) -> CliError {
    CliError::new(Exit::Io, format!("{}: {e}", path.display()))
}

/// The profile from `path`, else from the lookup chain for this GPU, and its source.
fn load_profile(
    path: Option<&Path>,
    rt: &Runtime,
    quiet: bool,
) -> Result<(Profile, String), CliError> {
    if let Some(path) = path {
        return Ok((store::load_path(path)?, path.display().to_string()));
    }
    let id = rt.identity();
    let wanted = Wanted {
        uuid: Some(id.uuid.clone()),
        model: Some(id.model()),
    };
    let cwd = std::env::current_dir().ok();
    let resolved = lookup::resolve(&LookupConfig::from_env(cwd.as_deref()), &wanted)?;
    if !quiet {
        for w in &resolved.warnings {
            eprintln!("warning: {w}");
        }
    }
    Ok((resolved.profile, resolved.source.to_string()))
}

/// A configuration's rounds as one measurement: the median and spread of its best round.
/// Rounds are taken in turn so that a passing disturbance falls on one round of several
/// configurations rather than on all of one; on an H100 (session 7), zero-copy runs just
/// after the 8 GiB pinned buffer was filled took 4-7 ms for a while against 3.0 otherwise.
fn measured(config: String, result: String, rounds: Vec<Timing>) -> Measured {
    let round_medians_ms: Vec<f64> = rounds.iter().map(Timing::median_ms).collect();
    let best = (0..rounds.len())
        .min_by(|&a, &b| round_medians_ms[a].total_cmp(&round_medians_ms[b]))
        .expect("a measured configuration has a round");
    Measured {
        config,
        median_ms: round_medians_ms[best],
        spread_ms: rounds[best].spread_ms(),
        runs_ms: rounds
            .iter()
            .flat_map(|t| t.runs_ms.iter().copied())
            .collect(),
        round_medians_ms,
        result,
    }
}

/// Measures the untuned and tuned configurations and the sweep, each label once a round,
/// in turn, for `rounds` rounds of [`RUNS`] runs, each configuration timed by its best
/// round (`measured`). A failing untuned or tuned version fails the row; a failing sweep
/// entry is skipped. A result that changes between rounds is kept as both, so that it
/// disagrees with the others.
#[allow(clippy::too_many_arguments)]
fn row<C>(
    case: String,
    size: u64,
    untuned: C,
    tuned: C,
    sweep: Vec<C>,
    label: impl Fn(&C) -> String,
    rounds: usize,
    mut measure: impl FnMut(&C) -> Result<(String, Timing), LaunchError>,
) -> Result<Row, LaunchError> {
    let required = [label(&untuned), label(&tuned)];
    let mut configs: Vec<(String, &C)> = Vec::new();
    for c in [&untuned, &tuned].into_iter().chain(&sweep) {
        let name = label(c);
        if !configs.iter().any(|(n, _)| *n == name) {
            configs.push((name, c));
        }
    }
    let mut pooled: Vec<Option<(String, Vec<Timing>)>> = configs.iter().map(|_| None).collect();
    let mut skipped: Vec<String> = Vec::new();
    let mut failed = vec![false; configs.len()];
    for _ in 0..rounds {
        for (i, (name, c)) in configs.iter().enumerate() {
            if failed[i] {
                continue;
            }
            match (measure(c), &mut pooled[i]) {
                (Ok((result, t)), Some((first, p))) => {
                    if result != *first {
                        *first = format!("{first} (then {result})");
                    }
                    p.push(t);
                }
                (Ok((result, t)), slot) => *slot = Some((result, vec![t])),
                (Err(e), _) if required.contains(name) => return Err(e),
                (Err(e), slot) => {
                    skipped.push(format!("{name}: {e}"));
                    failed[i] = true;
                    *slot = None;
                }
            }
        }
    }
    let get = |name: &str| {
        let i = configs.iter().position(|(n, _)| n == name)?;
        let (result, t) = pooled[i].clone()?;
        Some(measured(name.to_string(), result, t))
    };
    let [u, t] =
        required.map(|n| get(&n).expect("a required version is measured or fails the row"));
    let swept = sweep.iter().filter_map(|c| get(&label(c))).collect();
    Ok(Row::new(case, size, u, t, swept, skipped))
}

/// Random words (xorshift64*), never all zero.
fn random_words(n: usize, seed: u64) -> Vec<u32> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32
        })
        .collect()
}

fn host_memory_bytes() -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    text.lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(16 << 30, |kib| kib * 1024)
}

fn bench_sampling(
    rt: &mut Runtime,
    profile: &Profile,
    quick: bool,
    note: &dyn Fn(&str),
) -> Result<Report, LaunchError> {
    let (free, _) = rt.memory_info()?;
    let pattern = random_words(16 << 20, 0x5a3b);
    let mut rows = Vec::new();
    let mut errors = Vec::new();
    for memory in [MemoryKind::Device, MemoryKind::Pinned] {
        let sizes = match memory {
            MemoryKind::Device => sweep::sampling_device_sizes(free, quick),
            _ => sweep::sampling_pinned_sizes(host_memory_bytes(), quick),
        };
        let Some(&largest) = sizes.last() else {
            continue;
        };
        // One buffer of the largest region; smaller regions are its prefixes.
        let region = rt.resident_words(memory, largest / 4, &pattern)?;
        let reads = sweep::sampling_reads(memory == MemoryKind::Pinned);
        for &size in &sizes {
            let case = format!("{memory} {}", sweep::bytes(size));
            note(&format!("sampling {case}"));
            let w = SamplingWorkload {
                region_bytes: size,
                memory,
                reads_per_thread: reads,
            };
            let tuned = match sampling::plan(profile, &w) {
                Ok(p) => p,
                Err(e) => {
                    errors.push(format!("{case}: planner: {e}"));
                    continue;
                }
            };
            let r = row(
                case.clone(),
                size,
                sweep::sampling_untuned(size),
                tuned,
                sweep::sampling_sweep(size),
                sweep::sampling_label,
                SAMPLING_ROUNDS,
                |plan| {
                    let (sum, t) =
                        rt.time_sampling(&region, Some(size / 4), reads, 0x5eed, plan, RUNS)?;
                    Ok((sum.to_string(), t))
                },
            );
            match r {
                Ok(r) => rows.push(r),
                Err(e) => errors.push(format!("{case}: {e}")),
            }
        }
        drop(region);
    }
    Ok(finish("sampling", SAMPLING_ROUNDS, rows, errors, None))
}

fn bench_grouping(
    rt: &mut Runtime,
    profile: &Profile,
    quick: bool,
    note: &dyn Fn(&str),
) -> Result<Report, LaunchError> {
    let (free, _) = rt.memory_info()?;
    let mut rows = Vec::new();
    let mut errors = Vec::new();
    let device_tables = sweep::grouping_table_sizes(free, quick)
        .into_iter()
        .map(|t| (t, MemoryKind::Device, sweep::grouping_keys(quick)));
    let pinned_tables = sweep::grouping_pinned_table_sizes(host_memory_bytes(), quick)
        .into_iter()
        .map(|t| (t, MemoryKind::Pinned, 0));
    for (table, table_memory, base_keys) in device_tables.chain(pinned_tables) {
        let capacity = table / 8;
        // A table of `capacity` buckets holds capacity/2 groups at fill factor 0.5, and there
        // are never more groups than keys: large tables need that many keys (pinned tables
        // just that many, as their inserts cross the host link).
        let n_keys = base_keys.max(capacity / 2);
        let raw = random_words(n_keys as usize, 0x9e37);
        // Keys drawn from capacity/2 values: the fill factor stays at most 0.5.
        let range = (capacity / 2).min(u64::from(u32::MAX));
        let keys: Vec<u32> = raw
            .iter()
            .map(|&k| ((u64::from(k) * range) >> 32) as u32)
            .collect();
        let case = format!(
            "table {} ({table_memory}), {} keys pinned",
            sweep::bytes(table),
            n_keys
        );
        note(&format!("grouping {case}"));
        if grouping_capacity(n_keys, Some(range)).ok() != Some(capacity) {
            errors.push(format!(
                "{case}: table size is not a capacity the kernels use"
            ));
            continue;
        }
        let input = rt.resident_words(MemoryKind::Pinned, n_keys, &keys)?;
        let w = GroupingWorkload {
            table_bytes: table,
            table_memory,
            input_memory: MemoryKind::Pinned,
            input_bytes: Some(n_keys * 4),
        };
        let tuned = match grouping::plan(profile, &w) {
            Ok(p) => p,
            Err(e) => {
                errors.push(format!("{case}: planner: {e}"));
                continue;
            }
        };
        let r = row(
            case.clone(),
            table,
            sweep::grouping_untuned(table),
            tuned,
            sweep::grouping_sweep(table),
            sweep::grouping_label,
            1,
            |plan| {
                let (d, t) = rt.time_grouping(&input, capacity, plan, table_memory, RUNS)?;
                Ok((
                    format!("{} groups, {} keys, {:016x}", d.groups, d.keys, d.hash),
                    t,
                ))
            },
        );
        match r {
            Ok(r) => rows.push(r),
            Err(e) => errors.push(format!("{case}: {e}")),
        }
    }
    Ok(finish("grouping", 1, rows, errors, None))
}

fn bench_stencil(
    rt: &mut Runtime,
    profile: &Profile,
    quick: bool,
    copy_gbs: f64,
    note: &dyn Fn(&str),
) -> Result<Report, LaunchError> {
    let mut rows = Vec::new();
    let mut errors = Vec::new();
    for dtype in [Dtype::F32, Dtype::F64] {
        for (dims, repeats) in sweep::stencil_cases(quick) {
            let cells = dims.iter().map(|&d| d as usize).product::<usize>();
            let words = random_words(cells, 0x57e4 + u64::from(dims[0]));
            // Values in [0, 1): finite sums, no zeros to time on.
            let input = match dtype {
                Dtype::F32 => {
                    let v: Vec<f32> = words
                        .iter()
                        .map(|&w| (w >> 8) as f32 / 16_777_216.0)
                        .collect();
                    rt.resident_f32(&v)?
                }
                Dtype::F64 => {
                    let v: Vec<f64> = words
                        .iter()
                        .map(|&w| f64::from(w) / 4_294_967_296.0)
                        .collect();
                    rt.resident_f64(&v)?
                }
            };
            let case = sweep::stencil_case(dims, dtype.as_str(), repeats);
            note(&format!("stencil {case}"));
            let w = StencilWorkload {
                dims,
                dtype,
                repeats,
            };
            let tuned = match stencil::plan(profile, &w) {
                Ok(p) => p,
                Err(e) => {
                    errors.push(format!("{case}: planner: {e}"));
                    continue;
                }
            };
            let elem = if dtype == Dtype::F32 { 4 } else { 8 };
            let candidates = sweep::stencil_candidates(dims, repeats, elem);
            let r = row(
                case.clone(),
                (cells as u64) * elem,
                sweep::stencil_untuned(),
                tuned,
                candidates,
                sweep::stencil_label,
                1,
                |plan| {
                    let (digest, t) = match dtype {
                        Dtype::F32 => rt.time_stencil_f32(&input, dims, repeats, plan, RUNS)?,
                        Dtype::F64 => rt.time_stencil_f64(&input, dims, repeats, plan, RUNS)?,
                    };
                    Ok((format!("{digest:016x}"), t))
                },
            );
            match r {
                Ok(mut r) => {
                    r.tuned_gb_per_s = Some(sweep::stencil_gb_per_s(
                        cells as u64,
                        elem,
                        r.tuned.median_ms,
                    ));
                    rows.push(r);
                }
                Err(e) => errors.push(format!("{case}: {e}")),
            }
        }
    }
    Ok(finish("stencil", 1, rows, errors, Some(copy_gbs)))
}

fn finish(
    workload: &'static str,
    rounds: usize,
    rows: Vec<Row>,
    errors: Vec<String>,
    copy_gbs: Option<f64>,
) -> Report {
    let mut checks = vec![
        sweep::check_within_best(&rows),
        sweep::check_not_slower(&rows),
    ];
    if let Some(copy) = copy_gbs {
        let case = sweep::stencil_case([512; 3], "f32", 1);
        checks.push(sweep::check_bandwidth(&rows, &case, copy));
    }
    Report {
        workload,
        rounds,
        rows,
        errors,
        checks,
    }
}

fn print_report(r: &Report) {
    println!("\n{}", r.workload);
    println!(
        "{:<36} {:>10} {:>10} {:>10}  {:<24} {:>10} {:>13} {:>5}",
        "size",
        "untuned ms",
        "tuned ms",
        "best ms",
        "best config",
        "tuned/best",
        "untuned/tuned",
        "match"
    );
    for row in &r.rows {
        println!(
            "{:<36} {:>10.3} {:>10.3} {:>10.3}  {:<24} {:>10.3} {:>13.3} {:>5}",
            row.case,
            row.untuned.median_ms,
            row.tuned.median_ms,
            row.best.median_ms,
            row.best.config,
            row.tuned_over_best,
            row.untuned_over_tuned,
            if row.results_match { "yes" } else { "NO" }
        );
        println!("    tuned: {}", row.tuned.config);
        for s in &row.skipped {
            println!("    skipped {s}");
        }
    }
    for e in &r.errors {
        println!("  error: {e}");
    }
    for c in &r.checks {
        println!(
            "  {} {}: {}",
            if c.met { "MET   " } else { "MISSED" },
            c.target,
            c.detail
        );
        for m in &c.misses {
            println!("      {m}");
        }
    }
}

/// Which time of a row a chart line shows.
type Pick = fn(&Row) -> f64;

/// Time against size, one line per version and memory (sampling regions in device or
/// pinned memory, grouping tables in device or pinned memory).
fn chart(device: &str, r: &Report) -> Chart {
    let memory = |case: &str| {
        if case.contains("(pinned)") {
            "pinned table"
        } else if case.starts_with("pinned") {
            "pinned"
        } else if case.starts_with("device") {
            "device"
        } else {
            ""
        }
    };
    let mut groups: Vec<&str> = r.rows.iter().map(|x| memory(&x.case)).collect();
    groups.dedup();
    let mut series = Vec::new();
    for group in groups {
        let versions: [(&str, Pick); 3] = [
            ("untuned", |x| x.untuned.median_ms),
            ("tuned", |x| x.tuned.median_ms),
            ("exhaustive best", |x| x.best.median_ms),
        ];
        for (label, pick) in versions {
            series.push(Series {
                label: if group.is_empty() {
                    label.to_string()
                } else {
                    format!("{label}, {group}")
                },
                points: r
                    .rows
                    .iter()
                    .filter(|x| memory(&x.case) == group)
                    .map(|x| (x.size_bytes as f64, pick(x)))
                    .collect(),
            });
        }
    }
    Chart {
        title: format!("{device}: {} benchmark", r.workload),
        y_label: "median ms".to_string(),
        series,
        markers: vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// A fake measurement: the config's number as the result, one run per call whose time
    /// is the call's position in the sequence of calls.
    fn fake(calls: &RefCell<Vec<u32>>, c: &u32) -> Result<(String, Timing), LaunchError> {
        let mut calls = calls.borrow_mut();
        calls.push(*c);
        if *c == 9 {
            return Err(LaunchError::BadSize("config 9 cannot run".into()));
        }
        let ms = calls.len() as f64;
        Ok(("sum".to_string(), Timing { runs_ms: vec![ms] }))
    }

    /// A row of untuned config 1, `tuned` and `sweep`, in two rounds.
    fn two_rounds(
        tuned: u32,
        sweep: Vec<u32>,
        measure: impl FnMut(&u32) -> Result<(String, Timing), LaunchError>,
    ) -> Result<Row, LaunchError> {
        row(
            "case".into(),
            1,
            1,
            tuned,
            sweep,
            |c| c.to_string(),
            2,
            measure,
        )
    }

    #[test]
    fn rounds_time_every_config_in_turn_and_pool_their_runs() {
        let calls = RefCell::new(Vec::new());
        let r = two_rounds(2, vec![1, 3, 9], |c| fake(&calls, c)).unwrap();
        // Each label once a round, the failing sweep entry only until it fails.
        assert_eq!(*calls.borrow(), vec![1, 2, 3, 9, 1, 2, 3]);
        assert_eq!(r.untuned.runs_ms, vec![1.0, 5.0]);
        assert_eq!(r.tuned.runs_ms, vec![2.0, 6.0]);
        assert_eq!(r.sweep.len(), 2, "{:?}", r.sweep);
        assert_eq!(r.skipped.len(), 1);
        assert!(r.results_match);
    }

    #[test]
    fn a_configuration_is_timed_by_its_best_round() {
        // A disturbance slows the first round of config 2 and the second of config 1.
        let n = RefCell::new(0);
        let r = two_rounds(2, vec![], |c| {
            *n.borrow_mut() += 1;
            let runs_ms = match (*c, *n.borrow()) {
                (2, 2) => vec![7.0, 6.0, 5.0],
                (1, 3) => vec![4.0, 3.5, 3.4],
                _ => vec![3.0, 3.1, 2.9],
            };
            Ok(("sum".to_string(), Timing { runs_ms }))
        })
        .unwrap();
        assert_eq!(r.tuned.round_medians_ms, vec![6.0, 3.0]);
        assert_eq!(r.tuned.median_ms, 3.0);
        assert!((r.tuned.spread_ms - 0.2).abs() < 1e-12);
        assert_eq!(r.untuned.median_ms, 3.0);
        assert_eq!(r.tuned.runs_ms.len(), 6);
    }

    #[test]
    fn a_result_that_changes_between_rounds_disagrees() {
        let n = RefCell::new(0);
        let r = two_rounds(2, vec![], |c| {
            *n.borrow_mut() += 1;
            let result = if *c == 2 && *n.borrow() > 2 { "b" } else { "a" };
            Ok((result.to_string(), Timing { runs_ms: vec![1.0] }))
        })
        .unwrap();
        assert_eq!(r.tuned.result, "a (then b)");
        assert!(!r.results_match);
    }

    #[test]
    fn a_failing_tuned_version_fails_the_row() {
        let calls = RefCell::new(Vec::new());
        assert!(two_rounds(9, vec![], |c| fake(&calls, c)).is_err());
    }
}
