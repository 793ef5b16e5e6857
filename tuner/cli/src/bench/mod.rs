//! `cargo tune bench sampling|grouping|stencil|all`: on a GPU, for each case of each
//! workload (`memtune::workload`: its sizes and kernel variants), the untuned kernel, the tuned one (the planner's choice for
//! the profile), the autotuner's pick and the best of an exhaustive sweep, timed in the same run with CUDA events (kernel work only, inputs
//! resident, median of 5 runs after a warm-up; sampling's configurations in two rounds of 5,
//! taken in turn, each timed by its better round), with every version's result checked
//! against the others' before its time is reported.

mod autotuned;
mod report;
mod reuse;
mod rounds;
mod row;
mod steps;
pub mod sweep;
mod targets;

use crate::exit::{CliError, Exit};
use clap::builder::PossibleValuesParser;
use clap::Args;
use memtune::launch::LaunchError;
use memtune::workload::{self, Machine, Pick, PlanOf, Visitor, Workload};
use memtune::Runtime;
use memtune_core::lookup::Wanted;
use memtune_core::userio::WriteOptions;
use memtune_core::{time, MemoryKind, Profile};
use rounds::tuned_row;
use serde_json::{json, Value};
use std::path::PathBuf;
use steps::Steps;
use sweep::{Check, Row};

/// Timed runs after the warm-up.
const RUNS: usize = 5;
/// Bytes of the device-to-device copy that gives the reference bandwidth.
const COPY_BYTES: u64 = 1 << 30;
/// The bench argument that runs every kernel workload.
const ALL: &str = "all";
/// The bench argument that times the reuse-distance modes (`reuse.rs`).
const REUSE: &str = "reuse";

/// Every workload's name, then `all` and `reuse`.
fn workload_names() -> PossibleValuesParser {
    PossibleValuesParser::new(workload::names().into_iter().chain([ALL, REUSE]))
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Which workload to benchmark: a kernel workload, `all` of them, or `reuse` (the
    /// reuse-distance modes on one generated trace).
    #[arg(value_parser = workload_names())]
    pub workload: String,
    /// reuse: references of the generated trace (default 10^8; `--quick` 10^7).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), value_name = "N")]
    pub refs: Option<u64>,
    /// reuse: distinct items of the generated trace (default 10^7; `--quick` 10^6).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), value_name = "D")]
    pub distinct: Option<u64>,
    /// Plan for this profile file (default: the lookup chain for the GPU).
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// A few sizes only (a short smoke run).
    #[arg(long)]
    pub quick: bool,
    /// Run these sizes instead of the default lists: sampling regions, grouping tables
    /// (e.g. `--sizes 3GiB,12GiB,24GiB`); sizes that do not fit the memory are skipped
    /// with a note. Stencil ignores it.
    #[arg(long, value_delimiter = ',', value_parser = crate::size::parse, value_name = "SIZES")]
    pub sizes: Option<Vec<u64>>,
    /// Only this memory kind (device or pinned) for sampling regions and grouping tables.
    #[arg(long, value_name = "KIND")]
    pub memory: Option<MemoryKind>,
    /// Only the cases whose name contains TEXT (`!TEXT`: whose name does not), e.g.
    /// `--case "work 256"` for the heavy grouping rows; the names are those the bench prints.
    #[arg(long, value_name = "TEXT")]
    pub case: Option<String>,
    /// Write `bench-<workload>.json` and `bench-<workload>.svg` into DIR. The JSON is
    /// rewritten as each row finishes (`"complete": false` until the workload's last row),
    /// so a run that is stopped keeps the rows it finished.
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
    if args.workload == REUSE {
        return reuse::run(args, json_out, quiet, write);
    }
    if args.refs.is_some() || args.distinct.is_some() {
        return Err(CliError::new(
            Exit::Usage,
            "--refs and --distinct are options of `cargo tune bench reuse`",
        ));
    }
    let steps = Steps::new(quiet);
    let note = |m: &str| steps.note(m);
    // The output folder is made (or refused) before the benchmarks run.
    let out = args
        .out
        .as_deref()
        .map(|d| crate::files::output_dir(d, write));
    let out = out.transpose()?;
    let mut rt = Runtime::open(crate::env::gpu_ordinal(args.gpu)?).map_err(launch_error)?;
    let id = rt.identity().clone();
    let wanted = || {
        Ok(Wanted {
            uuid: Some(id.uuid.clone()),
            model: Some(id.model()),
        })
    };
    let (profile, source) = crate::env::profile(args.profile.as_deref(), wanted, quiet)?;
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

    // Every kernel timing held until it is enqueued, as the autotuner's clock times, so
    // that the session and the sweep measure alike.
    let gated = memtune::autotune::timing_gate_from_env();
    rt.set_gate(gated);
    let command: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let header = json!({
        "command": command.join(" "),
        "date": time::now_rfc3339(),
        "quick": args.quick,
        "sizes": args.sizes,
        "case": args.case,
        "device": {"name": id.name, "uuid": id.uuid, "sm_count": id.sm_count},
        "profile": {"uuid": profile.device.uuid, "name": profile.device.name,
                    "digest": profile.digest, "source": source,
                    "simulated": profile.is_simulated()},
        "runs": RUNS,
        "timing_gate": gated,
        "device_copy": {"bytes": COPY_BYTES, "median_ms": copy.median_ms(),
                        "runs_ms": copy.runs_ms, "gb_per_s": copy_gbs},
    });
    let (free, _) = rt.memory_info().map_err(launch_error)?;
    let mut bench = Bench {
        rt: &mut rt,
        profile: &profile,
        machine: Machine {
            device_free_bytes: free,
            host_bytes: host_memory_bytes(),
        },
        pick: Pick {
            quick: args.quick,
            sizes: args.sizes.as_deref(),
            memory: args.memory,
        },
        copy_gbs,
        steps: &steps,
        wanted: &args.workload,
        case: args.case.as_deref(),
        out: out.as_deref().map(|d| (d, write)),
        header: &header,
        reports: Vec::new(),
        error: None,
        write_error: None,
    };
    workload::visit(&mut bench);
    if let Some(e) = bench.write_error {
        return Err(e);
    }
    if let Some(e) = bench.error {
        return Err(launch_error(e));
    }
    let reports = bench.reports;

    let docs: Vec<Value> = reports.iter().map(|r| doc(&header, r, true)).collect();
    if let Some(dir) = &out {
        for (r, doc) in reports.iter().zip(&docs) {
            save(dir, r.workload, doc, write)?;
            let path = dir.join(format!("bench-{}.svg", r.workload));
            crate::files::write_file(&path, report::chart(&id.name, r).to_svg().as_bytes(), write)?;
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

/// One workload's JSON document: the run's `header`, then the report; `complete` is false
/// while rows are still to come.
fn doc(header: &Value, r: &Report, complete: bool) -> Value {
    let mut d = json!({
        "workload": r.workload,
        "complete": complete,
        "rounds": r.rounds,
        "table": r.rows.iter().map(|x| targets::flat(r.workload, x)).collect::<Vec<_>>(),
        "rows": r.rows,
        "errors": r.errors,
        "targets": r.checks,
        "results_match": r.rows.iter().all(|x| x.results_match),
    });
    if let (Some(d), Some(h)) = (d.as_object_mut(), header.as_object()) {
        for (k, v) in h {
            d.insert(k.clone(), v.clone());
        }
    }
    d
}

/// Writes `bench-<workload>.json` into `dir` (atomically replaced).
fn save(
    dir: &std::path::Path,
    workload: &str,
    doc: &Value,
    write: WriteOptions,
) -> Result<(), CliError> {
    let path = dir.join(format!("bench-{workload}.json"));
    crate::files::write_file(&path, format!("{doc:#}\n").as_bytes(), write)
}

/// Whether case `name` passes `--case` (`TEXT`: contains it; `!TEXT`: does not).
fn case_wanted(filter: Option<&str>, name: &str) -> bool {
    match filter {
        None => true,
        Some(f) => match f.strip_prefix('!') {
            Some(not) => !name.contains(not),
            None => name.contains(f),
        },
    }
}

fn host_memory_bytes() -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    text.lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(16 << 30, |kib| kib * 1024)
}

/// The benchmark of the workloads `wanted` names, walked by [`workload::visit`].
struct Bench<'a> {
    rt: &'a mut Runtime,
    profile: &'a Profile,
    machine: Machine,
    pick: Pick<'a>,
    copy_gbs: f64,
    steps: &'a Steps,
    wanted: &'a str,
    /// `--case`: which cases run ([`case_wanted`]).
    case: Option<&'a str>,
    /// Where each workload's JSON is rewritten as its rows finish.
    out: Option<(&'a std::path::Path, WriteOptions)>,
    header: &'a Value,
    reports: Vec<Report>,
    /// The first error that stopped the run (no GPU, a failed context).
    error: Option<LaunchError>,
    /// A partial JSON that could not be written: the run stops.
    write_error: Option<CliError>,
}

impl Bench<'_> {
    /// Rewrites `report`'s JSON in the output folder, marked incomplete.
    fn save_partial(&mut self, report: &Report) {
        if let Some((dir, write)) = self.out {
            if let Err(e) = save(
                dir,
                report.workload,
                &doc(self.header, report, false),
                write,
            ) {
                self.write_error.get_or_insert(e);
            }
        }
    }
}

impl Visitor for Bench<'_> {
    fn visit<W: Workload>(&mut self) {
        if self.error.is_some()
            || self.write_error.is_some()
            || (self.wanted != ALL && self.wanted != W::NAME)
        {
            return;
        }
        match bench::<W>(self) {
            Ok(r) => self.reports.push(r),
            Err(e) => self.error = Some(e),
        }
    }
}

/// One workload's rows: each case's inputs made resident (kept for the next case where
/// they fit), its untimed plan, then its row ([`tuned_row`]). A case that fails is an
/// error of the report; the others still run.
fn bench<W: Workload>(b: &mut Bench) -> Result<Report, LaunchError> {
    let uuid = b.rt.identity().uuid.clone();
    let mut notes = Vec::new();
    let mut cases = W::cases(&b.machine, &b.pick, &mut notes);
    cases.retain(|c| case_wanted(b.case, &W::name(c)));
    if cases.is_empty() && b.case.is_some() {
        notes.push(format!("{}: no case matches --case", W::NAME));
    }
    for n in &notes {
        b.steps.note(n);
    }
    let mut rows = Vec::new();
    let mut sure = Vec::new();
    let mut errors = Vec::new();
    let mut kept: Option<W::Inputs> = None;
    for (i, case) in cases.iter().enumerate() {
        let name = W::name(case);
        b.steps.case(W::NAME, i, cases.len(), &name);
        let inputs = match W::inputs(b.rt, case, &cases, kept.take()) {
            Ok(x) => x,
            Err(e @ LaunchError::Device(_)) => return Err(e),
            Err(e) => {
                errors.push(format!("{name}: {e}"));
                continue;
            }
        };
        let planned = match W::untimed(b.profile, case) {
            Ok(p) => p,
            Err(e) => {
                errors.push(format!("{name}: planner: {e}"));
                kept = Some(inputs);
                continue;
            }
        };
        let rt = &mut *b.rt;
        let time = |plan: &PlanOf<W>, runs: usize, warmup: bool| {
            rt.set_warmup(warmup);
            let r = W::launch(rt, &inputs, case, plan, runs);
            rt.set_warmup(true);
            r
        };
        match tuned_row::<W>(case, planned, (b.profile, &uuid), time) {
            Ok(r) => {
                rows.push(r);
                sure.push(W::sure(case));
            }
            Err(e) => errors.push(format!("{name}: {e}")),
        }
        kept = Some(inputs);
        if b.out.is_some() && i + 1 < cases.len() {
            b.save_partial(&finish::<W>(
                rows.clone(),
                &sure,
                errors.clone(),
                b.copy_gbs,
            ));
            if b.write_error.is_some() {
                break;
            }
        }
    }
    drop(kept);
    b.steps.finish(&format!("{} rows", rows.len()));
    Ok(finish::<W>(rows, &sure, errors, b.copy_gbs))
}

/// The report of `rows` with its checks. The untimed plan must stay within 5% of the best
/// on the rows where it is sure ([`Workload::sure`]: device scopes are bets the autotuner
/// settles; memtune's own stencil variants were timed by the profile).
fn finish<W: Workload>(
    rows: Vec<Row>,
    sure: &[bool],
    errors: Vec<String>,
    copy_gbs: f64,
) -> Report {
    let planned: Vec<Row> = rows
        .iter()
        .zip(sure)
        .filter(|(_, &s)| s)
        .map(|(r, _)| r.clone())
        .collect();
    let mut checks = Vec::new();
    if !planned.is_empty() {
        let mut c = sweep::check_within_best(&planned);
        if !W::SURE_ROWS.is_empty() {
            c.target = format!(
                "untimed plan within 5% of the exhaustive best on {}",
                W::SURE_ROWS
            );
        }
        checks.push(c);
    }
    checks.push(sweep::check_not_slower(&rows));
    checks.push(targets::plan_check(&rows));
    checks.extend(targets::autotune_checks(&rows));
    checks.extend(targets::gain_check(W::NAME, &rows));
    if let Some(case) = W::bandwidth_case() {
        checks.push(sweep::check_bandwidth(&rows, &case, copy_gbs));
    }
    Report {
        workload: W::NAME,
        rounds: W::ROUNDS,
        rows,
        errors,
        checks,
    }
}

#[cfg(test)]
mod tests;
