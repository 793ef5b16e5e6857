//! `cargo tune report`: the profile, plans, stored decisions and benchmarks as one HTML page.

use super::commands::Ctx;
use crate::exit::{CliError, Exit};
use crate::files::write_output;
use crate::report::{self, BenchFile, DecisionRow, Inputs};
use clap::Args;
use memtune_core::tune::DecisionStore;
use serde_json::json;
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The GPU's UUID (`GPU-...`) of a stored profile (default: the lookup chain's for GPU 0).
    pub uuid: Option<String>,
    /// A profile file instead.
    #[arg(long, value_name = "FILE", conflicts_with = "uuid")]
    pub path: Option<PathBuf>,
    /// A folder of `cargo tune bench --out` results (`bench-*.json`) to include.
    #[arg(long, value_name = "DIR")]
    pub bench: Option<PathBuf>,
    /// Where to write the page (`-`: stdout).
    #[arg(short, long, value_name = "HTML")]
    pub output: PathBuf,
}

/// Bench results are small; a file beyond this is not one.
const MAX_BENCH_BYTES: u64 = 64 << 20;

fn read_bench(path: &Path) -> Result<Vec<u8>, CliError> {
    let io =
        |e: std::io::Error| CliError::new(Exit::Io, format!("cannot read {}: {e}", path.display()));
    let len = std::fs::metadata(path).map_err(io)?.len();
    if len > MAX_BENCH_BYTES {
        let msg = format!(
            "{} is {len} bytes, more than a bench result can be",
            path.display()
        );
        return Err(CliError::new(Exit::InvalidProfile, msg));
    }
    std::fs::read(path).map_err(io)
}

/// The `bench-*.json` files of `dir`, by name.
fn bench_files(dir: &Path) -> Result<Vec<(String, BenchFile)>, CliError> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        CliError::new(
            Exit::Io,
            format!("cannot read the bench folder {}: {e}", dir.display()),
        )
    })?;
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with("bench-") && n.ends_with(".json"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let path = dir.join(&name);
            let bytes = read_bench(&path)?;
            let file: BenchFile = serde_json::from_slice(&bytes).map_err(|e| {
                CliError::new(
                    Exit::InvalidProfile,
                    format!("{} is not a bench result: {e}", path.display()),
                )
            })?;
            Ok((name, file))
        })
        .collect()
}

fn decisions(root: &Path) -> Result<Vec<DecisionRow>, String> {
    memtune_core::lookup::cache_dir_from_env().map_err(|e| e.to_string())?;
    let rows = DecisionStore::from_env(Some(root)).list();
    Ok(rows
        .into_iter()
        .map(|(path, source, d)| match d {
            Ok(d) => DecisionRow {
                source: source.as_str().to_string(),
                workload: d.key.class.workload.clone(),
                kernel: d.key.kernel.clone(),
                memory: d.key.class.memory.to_string(),
                size: super::decisions::size_text(d.key.class.size_class),
                chosen: d.chosen_label().to_string(),
                outcome: super::decisions::outcome_text(&d),
            },
            Err(e) => DecisionRow {
                source: source.as_str().to_string(),
                workload: "INVALID".into(),
                kernel: path.display().to_string(),
                memory: String::new(),
                size: String::new(),
                chosen: String::new(),
                outcome: e.to_string(),
            },
        })
        .collect())
}

pub(super) fn run(ctx: &Ctx, args: &ReportArgs) -> Result<Exit, CliError> {
    let (profile, source) =
        super::profiles::pick_profile(ctx, args.uuid.as_deref(), args.path.as_deref())?;
    let bench = args.bench.as_deref().map(bench_files).transpose()?;
    let inputs = Inputs {
        profile: &profile,
        source: source.clone(),
        bench,
        decisions: decisions(&ctx.project_root),
    };
    let page = report::html(&inputs);
    write_output(&args.output, page.as_bytes(), ctx.write)?;
    let shown = args.output.display().to_string();
    if ctx.json {
        super::commands::print_json(
            &json!({ "source": source, "output": shown, "bytes": page.len() }),
        );
    } else if shown != "-" {
        ctx.note(&format!(
            "wrote {shown} ({})",
            memtune_core::human::bytes(page.len() as u64)
        ));
    }
    Ok(Exit::Ok)
}
