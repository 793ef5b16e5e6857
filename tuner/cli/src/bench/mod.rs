//! `cargo tune bench sampling|grouping|stencil|all`: on a GPU, for each workload size and
//! kernel variant (reads per thread and work per read or per key: `sweep::SamplingCase`,
//! `sweep::grouping_heavy`), the untuned kernel, the tuned one (the planner's choice for
//! the profile), the autotuner's pick and the best of an exhaustive sweep, timed in the same run with CUDA events (kernel work only, inputs
//! resident, median of 5 runs after a warm-up; sampling's configurations in two rounds of 5,
//! taken in turn, each timed by its better round), with every version's result checked
//! against the others' before its time is reported.

mod autotuned;
mod report;
mod rounds;
mod row;
mod stencil;
mod steps;
pub mod sweep;
mod targets;

use crate::cli;
use crate::exit::{CliError, Exit};
use clap::{Args, ValueEnum};
use memtune::launch::{grouping_capacity, LaunchError};
use memtune::Runtime;
use memtune_core::lookup::{self, LookupConfig, Wanted};
use memtune_core::plan::{GroupingPlan, SamplingPlan};
use memtune_core::plan::{GroupingWorkload, SamplingWorkload};
use memtune_core::userio::WriteOptions;
use memtune_core::{store, time, MemoryKind, Profile};
use memtune_kernels::params::SamplingParams;
use rounds::tuned_row;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use steps::Steps;
use sweep::{Check, Row};

/// Timed runs after the warm-up.
const RUNS: usize = 5;
/// The most keys inserted into a grouping table in pinned memory.
const PINNED_TABLE_KEYS: u64 = 16 << 20;
/// Rounds of [`RUNS`] for sampling: its zero-copy configurations differ by a few percent,
/// as much as one configuration's time wanders over seconds on an H200 (2-5%), so every
/// configuration is timed once a round, in turn.
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
    /// Run these sizes instead of the default lists: sampling regions, grouping tables
    /// (e.g. `--sizes 3GiB,12GiB,24GiB`); sizes that do not fit the memory are skipped
    /// with a note. Stencil ignores it.
    #[arg(long, value_delimiter = ',', value_parser = crate::cli::size::parse, value_name = "SIZES")]
    pub sizes: Option<Vec<u64>>,
    /// Only this memory kind (device or pinned) for sampling regions and grouping tables.
    #[arg(long, value_name = "KIND")]
    pub memory: Option<MemoryKind>,
    /// Write `bench-<workload>.json` and `bench-<workload>.svg` into DIR.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// GPU ordinal (default: the GPU that MEMTUNE_DEVICE=UUID names, else 0).
    #[arg(long = "gpu")]
    pub gpu: Option<usize>,
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

pub fn run(
    args: &BenchArgs,
    json_out: bool,
    quiet: bool,
    write: WriteOptions,
) -> Result<Exit, CliError> {
    let steps = Steps::new(quiet);
    let note = |m: &str| steps.note(m);
    // The output folder is made (or refused) before the benchmarks run.
    let out = args.out.as_deref().map(|d| cli::output_dir(d, write));
    let out = out.transpose()?;
    let mut rt = Runtime::open(cli::gpu_ordinal(args.gpu)?).map_err(launch_error)?;
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
            Workload::Sampling => bench_sampling(&mut rt, &profile, &Pick::of(args), &steps),
            Workload::Grouping => bench_grouping(&mut rt, &profile, &Pick::of(args), &steps),
            _ => stencil::bench(&mut rt, &profile, args.quick, copy_gbs, &steps),
        }
        .map_err(launch_error)?;
        reports.push(report);
    }

    let command: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let date = time::now_rfc3339();
    let docs: Vec<Value> = reports
        .iter()
        .map(|r| {
            json!({
                "workload": r.workload,
                "command": command.join(" "),
                "date": date,
                "quick": args.quick,
                "sizes": args.sizes,
                "device": {"name": id.name, "uuid": id.uuid, "sm_count": id.sm_count},
                "profile": {"uuid": profile.device.uuid, "name": profile.device.name,
                            "digest": profile.digest, "source": source,
                            "simulated": profile.is_simulated()},
                "runs": RUNS,
                "rounds": r.rounds,
                "device_copy": {"bytes": COPY_BYTES, "median_ms": copy.median_ms(),
                                "runs_ms": copy.runs_ms, "gb_per_s": copy_gbs},
                "table": r.rows.iter().map(|x| targets::flat(r.workload, x)).collect::<Vec<_>>(),
                "rows": r.rows,
                "errors": r.errors,
                "targets": r.checks,
                "results_match": r.rows.iter().all(|x| x.results_match),
            })
        })
        .collect();
    if let Some(dir) = &out {
        for (r, doc) in reports.iter().zip(&docs) {
            let path = dir.join(format!("bench-{}.json", r.workload));
            cli::write_file(&path, format!("{doc:#}\n").as_bytes(), write)?;
            let path = dir.join(format!("bench-{}.svg", r.workload));
            cli::write_file(&path, report::chart(&id.name, r).to_svg().as_bytes(), write)?;
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
            report::print(r);
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
    let root = lookup::current_project_root();
    let config = LookupConfig::try_from_env(Some(&root)).map_err(cli::env_error)?;
    let resolved = lookup::resolve(&config, &wanted)?;
    if !quiet {
        for w in &resolved.warnings {
            eprintln!("warning: {w}");
        }
    }
    Ok((resolved.profile, resolved.source.to_string()))
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

/// Which sizes and memory kinds a run takes (`--quick`, `--sizes`, `--memory`).
struct Pick<'a> {
    quick: bool,
    sizes: Option<&'a [u64]>,
    memory: Option<MemoryKind>,
}

impl<'a> Pick<'a> {
    fn of(args: &'a BenchArgs) -> Pick<'a> {
        Pick {
            quick: args.quick,
            sizes: args.sizes.as_deref(),
            memory: args.memory,
        }
    }

    fn wants(&self, kind: MemoryKind) -> bool {
        self.memory.is_none_or(|m| m == kind)
    }

    /// `--sizes` up to `limit` bytes, or `default` without `--sizes`.
    fn sizes(&self, limit: u64, note: &dyn Fn(&str), default: Vec<u64>) -> Vec<u64> {
        let Some(sizes) = self.sizes else {
            return default;
        };
        sizes
            .iter()
            .copied()
            .filter(|&s| {
                let fits = s >= 4 && s <= limit;
                if !fits {
                    note(&format!(
                        "skipped {}: outside 4 bytes..{} for this memory",
                        sweep::bytes(s),
                        sweep::bytes(limit)
                    ));
                }
                fits
            })
            .collect()
    }
}

fn bench_sampling(
    rt: &mut Runtime,
    profile: &Profile,
    pick: &Pick,
    steps: &Steps,
) -> Result<Report, LaunchError> {
    let quick = pick.quick;
    let (free, _) = rt.memory_info()?;
    let pattern = random_words(16 << 20, 0x5a3b);
    let mut rows = Vec::new();
    let mut errors = Vec::new();
    let uuid = rt.identity().uuid.clone();
    for memory in [MemoryKind::Device, MemoryKind::Pinned] {
        if !pick.wants(memory) {
            continue;
        }
        let cases: Vec<sweep::SamplingCase> = match (memory, pick.sizes) {
            (MemoryKind::Device, None) => sweep::sampling_device_cases(free, quick),
            (MemoryKind::Device, Some(_)) => {
                let sizes = pick.sizes(free / 10 * 8, &|m| steps.note(m), Vec::new());
                let reads = sweep::sampling_reads(false);
                [(reads, 0), (64, 0), (reads, sweep::SAMPLING_HEAVY_WORK)]
                    .iter()
                    .flat_map(|&(r, work)| sizes.iter().map(move |&s| (s, r, work)))
                    .collect()
            }
            _ => pick
                .sizes(
                    host_memory_bytes() / 4,
                    &|m| steps.note(m),
                    sweep::sampling_pinned_sizes(host_memory_bytes(), quick),
                )
                .into_iter()
                .map(|s| (s, sweep::sampling_reads(true), 0))
                .collect(),
        };
        let Some(largest) = cases.iter().map(|c| c.0).max() else {
            continue;
        };
        // One buffer of the largest region; smaller regions are its prefixes.
        let region = rt.resident_words(memory, largest / 4, &pattern)?;
        for (i, &(size, reads, work)) in cases.iter().enumerate() {
            let case = format!("{memory} {}, {reads} reads", sweep::bytes(size))
                + &sweep::work_suffix(work);
            steps.case(&format!("sampling {memory}"), i, cases.len(), &case);
            let w = SamplingWorkload {
                region_bytes: size,
                memory,
                reads_per_thread: reads,
            };
            let tuned = match memtune_core::plan::sampling_untimed(profile, &w) {
                Ok(p) => p,
                Err(e) => {
                    errors.push(format!("{case}: planner: {e}"));
                    continue;
                }
            };
            let time = |plan: &SamplingPlan, runs: usize, warmup: bool| {
                rt.set_warmup(warmup);
                let params = SamplingParams::new(size / 4, reads, 0x5eed)?.with_work(work);
                let r = rt.time_sampling(&region, params, plan, runs);
                rt.set_warmup(true);
                r.map(|(sum, t)| (sum.to_string(), t))
            };
            let r = tuned_row(
                (case.clone(), size),
                sweep::sampling_untuned(size),
                tuned,
                sweep::sampling_sweep(size),
                sweep::sampling_label,
                SAMPLING_ROUNDS,
                (profile, &uuid, &w),
                time,
            );
            match r {
                Ok(r) => rows.push(r),
                Err(e) => errors.push(format!("{case}: {e}")),
            }
        }
        drop(region);
    }
    steps.finish(&format!("{} rows", rows.len()));
    Ok(finish("sampling", SAMPLING_ROUNDS, rows, errors, None))
}

fn bench_grouping(
    rt: &mut Runtime,
    profile: &Profile,
    pick: &Pick,
    steps: &Steps,
) -> Result<Report, LaunchError> {
    let quick = pick.quick;
    let (free, _) = rt.memory_info()?;
    let uuid = rt.identity().uuid.clone();
    let mut rows = Vec::new();
    let mut errors = Vec::new();
    let device_tables = pick
        .sizes(
            free / 10 * 7,
            &|m| steps.note(m),
            sweep::grouping_table_sizes(free, quick),
        )
        .into_iter()
        .filter(|_| pick.wants(MemoryKind::Device))
        .map(|t| (t, MemoryKind::Device, sweep::grouping_keys(quick)))
        .collect::<Vec<_>>();
    let host = host_memory_bytes();
    let pinned_tables = pick
        .sizes(
            host / 4,
            &|m| steps.note(m),
            sweep::grouping_pinned_table_sizes(host, quick),
        )
        .into_iter()
        .filter(|_| pick.wants(MemoryKind::Pinned))
        .map(|t| (t, MemoryKind::Pinned, 0));
    // Each table light, and some also with heavy per-key work.
    let tables: Vec<_> = device_tables
        .into_iter()
        .chain(pinned_tables)
        .flat_map(|(t, memory, keys)| {
            let pinned = memory == MemoryKind::Pinned;
            let heavy = sweep::grouping_heavy(t, pinned, quick, pick.sizes.is_some());
            let works = [Some(0), heavy.then_some(sweep::GROUPING_HEAVY_WORK)];
            works
                .into_iter()
                .flatten()
                .map(move |w| (t, memory, keys, w))
        })
        .collect();
    for (i, &(table, table_memory, base_keys, work)) in tables.iter().enumerate() {
        let capacity = table / 8;
        // A table of `capacity` buckets holds capacity/2 groups at fill factor 0.5, and there
        // are never more groups than keys: large device tables need that many keys. Pinned
        // tables take at most PINNED_TABLE_KEYS, drawn from capacity/2 values so that their
        // inserts still spread over the whole table: each crosses the host link (the H100
        // a0c8e126's probe: random atomics into pinned memory at 0.4 G/s at best, under
        // 0.05 G/s over 8 GiB).
        let n_keys = if table_memory == MemoryKind::Pinned {
            (capacity / 2).min(PINNED_TABLE_KEYS)
        } else {
            base_keys.max(capacity / 2)
        };
        let raw = random_words(n_keys as usize, 0x9e37);
        // Keys drawn from capacity/2 values: the fill factor stays at most 0.5.
        let range = (capacity / 2).min(u64::from(u32::MAX));
        let keys: Vec<u32> = raw
            .iter()
            .map(|&k| ((u64::from(k) * range) >> 32) as u32)
            .collect();
        let case = format!(
            "table {} ({table_memory}), {} keys pinned{}",
            sweep::bytes(table),
            n_keys,
            sweep::work_suffix(work)
        );
        steps.case("grouping", i, tables.len(), &case);
        if grouping_capacity(range, Some(range)).ok() != Some(capacity) {
            errors.push(format!(
                "{case}: grouping tables are powers of two (the kernels' capacities); give {} or {} to --sizes",
                sweep::bytes(table.next_power_of_two() / 2),
                sweep::bytes(table.next_power_of_two())
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
        let tuned = match memtune_core::plan::grouping_untimed(profile, &w) {
            Ok(p) => p,
            Err(e) => {
                errors.push(format!("{case}: planner: {e}"));
                continue;
            }
        };
        let time = |plan: &GroupingPlan, runs: usize, warmup: bool| {
            rt.set_warmup(warmup);
            let r = rt.time_grouping(&input, capacity, plan, table_memory, work, runs);
            rt.set_warmup(true);
            r.map(|(d, t)| {
                let digest = format!("{} groups, {} keys, {:016x}", d.groups, d.keys, d.hash);
                (digest, t)
            })
        };
        let r = tuned_row(
            (case.clone(), table),
            sweep::grouping_untuned(table),
            tuned,
            sweep::grouping_sweep(table),
            sweep::grouping_label,
            1,
            (profile, &uuid, &w),
            time,
        );
        match r {
            Ok(r) => rows.push(r),
            Err(e) => errors.push(format!("{case}: {e}")),
        }
    }
    steps.finish(&format!("{} rows", rows.len()));
    Ok(finish("grouping", 1, rows, errors, None))
}

fn finish(
    workload: &'static str,
    rounds: usize,
    rows: Vec<Row>,
    errors: Vec<String>,
    copy_gbs: Option<f64>,
) -> Report {
    // The untimed plan must stay within 5% of the best where scopes are sure (pinned
    // memory; device scopes are bets the autotuner settles), and for memtune's own
    // stencil, whose variants the profile timed.
    let stencil = copy_gbs.is_some();
    let planned: Vec<Row> = rows
        .iter()
        .filter(|r| stencil || r.pinned())
        .cloned()
        .collect();
    let mut checks = Vec::new();
    if !planned.is_empty() {
        let mut c = sweep::check_within_best(&planned);
        if !stencil {
            c.target = "untimed plan within 5% of the exhaustive best on pinned rows".into();
        }
        checks.push(c);
    }
    checks.push(sweep::check_not_slower(&rows));
    checks.push(targets::plan_check(&rows));
    checks.extend(targets::autotune_checks(&rows));
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

#[cfg(test)]
mod tests;
