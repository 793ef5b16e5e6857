//! `cargo tune decisions`: the autotuner's decisions in the user cache (`<profile cache>/
//! decisions/`) and the project's `.memtune/decisions/`: list, show, clear, export.

use crate::exit::{CliError, Exit};
use crate::files::{self, opt_path_json, path_json, paths_json};
use clap::Subcommand;
use memtune_core::tune::{
    read_decision, Decision, DecisionError, DecisionStore, Origin, StoreSource,
};
use memtune_core::userio::{self, InputKind, WriteOptions};
use memtune_core::{lookup, size::format_bytes, time::format_unix};
use serde_json::{json, Value};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::{fs, io, io::ErrorKind::NotFound};

const NO_CACHE: &str = "no user cache directory on this platform; set MEMTUNE_CACHE_DIR";

#[derive(Debug, Subcommand)]
pub enum DecisionsCommand {
    /// Every stored decision (user cache and project), invalid files flagged.
    List,
    /// One decision in full: every candidate's timings, and why the winner won.
    Show {
        /// A decision file's path, or its file name in either folder.
        file_or_name: PathBuf,
    },
    /// Remove user-cache decisions (never the project's); without --yes, only list them.
    Clear {
        /// Only the decisions whose key names this kernel.
        #[arg(long, value_name = "KEY")]
        kernel: Option<String>,
        #[arg(long, help = "Remove them")]
        yes: bool,
    },
    /// Copy a stored decision byte for byte, e.g. into `.memtune/decisions/` to ship it.
    Export {
        /// A decision file's path, or its file name in either folder.
        file_or_name: PathBuf,
        /// The file to write, a folder to write `<folder>/<file name>` into, or `-` for
        /// stdout.
        #[arg(short, long, value_name = "FILE_OR_DIR")]
        output: PathBuf,
        #[arg(long, help = "Replace an existing file that differs")]
        force: bool,
    },
}

pub fn run(
    cmd: &DecisionsCommand,
    json: bool,
    quiet: bool,
    root: &Path,
    write: WriteOptions,
) -> Result<Exit, CliError> {
    // MEMTUNE_CACHE_DIR set but empty is an error, not "no user cache".
    lookup::cache_dir_from_env().map_err(crate::env::env_error)?;
    let store = DecisionStore::from_env(Some(root));
    let ctx = Ctx {
        store,
        json,
        quiet,
        write,
    };
    match cmd {
        DecisionsCommand::List => ctx.list(),
        DecisionsCommand::Show { file_or_name } => ctx.show(file_or_name),
        DecisionsCommand::Clear { kernel, yes } => ctx.clear(kernel.as_deref(), *yes),
        DecisionsCommand::Export {
            file_or_name,
            output,
            force,
        } => ctx.export(file_or_name, output, *force),
    }
}

fn io_error(path: &Path, what: &str, e: &io::Error, fix: &str) -> CliError {
    let message = format!("{}: {what} failed: {e}; {fix}", path.display());
    CliError::new(Exit::Io, message)
}

fn shown_dir(dir: Option<&Path>) -> String {
    dir.map_or(NO_CACHE.into(), |d| d.display().to_string())
}

/// A folder that exists but cannot be read is an I/O error, not an empty store.
fn readable(dir: &Path) -> Result<(), CliError> {
    let fix = "check MEMTUNE_CACHE_DIR and the folder's permissions";
    match fs::read_dir(dir) {
        Err(e) if e.kind() != NotFound => Err(io_error(dir, "reading", &e, fix)),
        _ => Ok(()),
    }
}

fn load(path: &Path) -> Result<Decision, CliError> {
    let missing = || format!("{}: no such file", path.display());
    match read_decision(path) {
        Ok(Some(d)) => Ok(d),
        Ok(None) => Err(CliError::new(Exit::NotFound, missing())),
        Err(e @ DecisionError::Io { .. }) => Err(CliError::new(Exit::Io, e.to_string())),
        Err(e) => Err(CliError::new(Exit::InvalidProfile, e.to_string())),
    }
}

/// (chosen median, untuned median, untuned / chosen).
fn ratio(d: &Decision) -> (Option<f64>, Option<f64>, Option<f64>) {
    let chosen = d.candidates.get(d.chosen).and_then(|c| c.median_ms);
    let untuned = d.candidates.iter().find(|c| c.origin == Origin::Untuned);
    let base = untuned.and_then(|c| c.median_ms);
    let speedup = chosen.zip(base).filter(|(c, _)| *c > 0.0);
    (chosen, base, speedup.map(|(c, b)| b / c))
}

/// The chosen median against the untuned one, and what tuning cost.
pub(super) fn outcome_text(d: &Decision) -> String {
    let ratio = match ratio(d) {
        _ if d.all_failed => "every candidate failed: the untuned plan stands".into(),
        (Some(c), Some(b), Some(s)) => format!("{c:.4} ms vs {b:.4} ms untuned ({s:.2}x)"),
        _ => "no untuned median to compare".into(),
    };
    let (ms, n, unit) = (d.tuning_ms, d.launches, d.cost_in_untuned);
    let unit = unit.map_or(String::new(), |c| format!(", {c:.1} untuned launches"));
    format!("{ratio}; tuning {ms:.3} ms over {n} launches{unit}")
}

/// `2^(class/2)` bytes, the middle of a half-octave size class: `~1.41 GiB (class 61)`.
pub(super) fn size_text(class: u32) -> String {
    let bytes = 2f64.powf(f64::from(class) / 2.0) as u64;
    format!("~{} (class {class})", format_bytes(bytes))
}

fn row_json(path: &Path, source: StoreSource, d: &Result<Decision, DecisionError>) -> Value {
    let (d, (chosen, base, speedup)) = match d {
        Ok(d) => (d, ratio(d)),
        Err(e) => return json!({"source": source, "path": path_json(path), "error": e.to_string()}),
    };
    json!({"source": source, "path": path_json(path), "chosen_label": d.chosen_label(), "decision": d,
        "chosen_median_ms": chosen, "untuned_median_ms": base, "speedup_vs_untuned": speedup})
}

fn print(value: Value) {
    println!("{value:#}");
}

/// Output mode, how outputs are written, and the two folders.
struct Ctx {
    store: DecisionStore,
    json: bool,
    quiet: bool,
    write: WriteOptions,
}

impl Ctx {
    fn list(&self) -> Result<Exit, CliError> {
        let (local, project) = (self.store.local_dir(), self.store.project_dir());
        local.into_iter().chain(project).try_for_each(readable)?;
        let rows = self.store.list();
        if self.json {
            let items: Vec<Value> = rows.iter().map(|(p, s, d)| row_json(p, *s, d)).collect();
            let (local, project) = (opt_path_json(local), opt_path_json(project));
            print(json!({"decisions": items, "local_dir": local, "project_dir": project}));
        } else if rows.is_empty() {
            let (local, project) = (shown_dir(local), shown_dir(project));
            println!("no stored decisions (looked in {local} and {project})");
        }
        for (path, source, d) in rows.iter().filter(|_| !self.json) {
            let (source, path) = (source.as_str(), path.display());
            let d = match d {
                Ok(d) => d,
                Err(e) => {
                    println!("{source:<8} INVALID  {e}");
                    continue;
                }
            };
            let (c, kernel, label) = (&d.key.class, &d.key.kernel, d.chosen_label());
            let (workload, memory, size) = (&c.workload, c.memory, size_text(c.size_class));
            let outcome = outcome_text(d);
            println!("{source:<8} {workload}  {kernel}  {memory}  {size}  chose `{label}`");
            println!("         {outcome}\n         {path}");
        }
        Ok(Exit::Ok)
    }

    /// A path, or a file name (`.json` optional) in the user cache's folder, then the project's.
    fn locate(&self, name: &Path) -> Result<PathBuf, CliError> {
        let shown = name.to_string_lossy();
        let plain = !shown.contains(['/', '\\']) && shown != "." && shown != "..";
        let mut with_json = OsString::from(name);
        with_json.push(".json");
        let names = [name.as_os_str().to_owned(), with_json];
        let given = [name.to_path_buf()];
        let dirs = [self.store.local_dir(), self.store.project_dir()];
        let in_store = dirs.into_iter().flatten().filter(|_| plain);
        let paths = in_store.flat_map(|d| names.iter().map(|n| d.join(n)));
        let hit = paths.chain(given).find(|p| p.symlink_metadata().is_ok());
        if let Some(hit) = hit.filter(|_| !name.as_os_str().is_empty()) {
            return Ok(hit);
        }
        let (local, project) = (shown_dir(dirs[0]), shown_dir(dirs[1]));
        let why = format!(
            "no decision file `{}` here, in {local} or in {project}",
            name.display()
        );
        let fix = "`cargo tune decisions list` shows them";
        Err(CliError::new(Exit::NotFound, format!("{why}; {fix}")))
    }

    fn show(&self, file_or_name: &Path) -> Result<Exit, CliError> {
        let path = self.locate(file_or_name)?;
        let d = load(&path)?;
        if self.json {
            print(json!({"path": path_json(&path), "decision": d}));
            return Ok(Exit::Ok);
        }
        let ms = |x: Option<f64>| x.map_or("-".into(), |x| format!("{x:.4}"));
        let (k, c, im) = (&d.key, &d.key.class, d.key.class.input_memory);
        let input = im.map_or(String::new(), |m| format!(", input {m}"));
        let (workload, memory, size) = (&c.workload, c.memory, size_text(c.size_class));
        let (elem, detail, file) = (c.elem_bytes, &c.detail, path.display());
        let (kernel, device, version) = (&k.kernel, &k.device_uuid, &k.memtune_version);
        let (profile, digest) = (&k.profile_digest, &k.candidates_digest);
        let (chosen, label, outcome) = (d.chosen, d.chosen_label(), outcome_text(&d));
        let (why, tuned) = (&d.why, format_unix(d.created_unix_s));
        println!("{file}\n  kernel    {kernel}\n  device    {device}");
        println!("  workload  {workload}: {memory} memory{input}, {size}, {elem}-byte elements");
        println!(
            "  detail    {detail}\n  profile   {profile}\n  memtune   {version}, tuned {tuned}"
        );
        println!("  chosen    [{chosen}] {label}: {outcome}\n  why       {why}");
        println!("  candidates ({digest}; times in ms, * chosen):");
        for (i, cand) in d.candidates.iter().enumerate() {
            let (s, label, origin) = (&cand.stats, &cand.label, json!(cand.origin));
            let origin = origin.as_str().unwrap_or_default();
            let mark = if i == chosen { '*' } else { ' ' };
            let (median, p20, p80) = (ms(cand.median_ms), ms(cand.p20_ms), ms(cand.p80_ms));
            println!("  {mark}{i} {label:<28} {origin:<9} median {median} p20 {p20} p80 {p80}");
            let runs: Vec<String> = s.runs_ms.iter().map(|r| format!("{r:.4}")).collect();
            let (n, runs, warmup) = (runs.len(), runs.join(" "), ms(s.warmup_ms));
            println!("      {n} runs [{runs}], warm-up {warmup}");
            for (what, x) in [("error", &s.error), ("dropped", &s.dropped)] {
                x.iter().for_each(|x| println!("      {what}: {x}"));
            }
        }
        Ok(Exit::Ok)
    }

    fn clear(&self, kernel: Option<&str>, yes: bool) -> Result<Exit, CliError> {
        let local = self.store.local_dir();
        let local = local.ok_or_else(|| CliError::new(Exit::Io, NO_CACHE))?;
        readable(local)?;
        let (all, mut targets) = (self.store.list(), Vec::new());
        for (path, _, d) in all.into_iter().filter(|r| r.1 == StoreSource::Local) {
            // With --kernel, only its decisions: an invalid file has no kernel to match.
            if kernel.is_none_or(|k| d.is_ok_and(|d| d.key.kernel == k)) {
                targets.push(path);
            }
        }
        let of = kernel.map_or(String::new(), |k| format!(" of kernel `{k}`"));
        let (mut removed, mut failed) = (Vec::new(), Vec::new());
        for path in targets.iter().filter(|_| yes) {
            match fs::remove_file(path) {
                Err(e) if e.kind() != NotFound => failed.push(format!("{}: {e}", path.display())),
                _ => removed.push(path.clone()),
            }
        }
        let paths = if yes { &removed } else { &targets };
        let n = paths.len();
        if self.json {
            let paths = paths_json(paths);
            print(json!({"dry_run": !yes, "count": n, "paths": paths, "failed": failed}));
        } else if yes {
            println!("removed {n} decision file(s){of} from {}", local.display());
        } else if n == 0 {
            println!("no decisions{of} in {}", local.display());
        } else {
            println!("would remove {n} local decision file(s){of}:");
            targets.iter().for_each(|p| println!("  {}", p.display()));
            println!("nothing removed: add --yes to remove them");
        }
        for f in &failed {
            eprintln!("error: cannot remove {f}; check the folder's permissions");
        }
        let ok = failed.is_empty();
        Ok(if ok { Exit::Ok } else { Exit::Io })
    }

    /// Copies a decision byte for byte to a file, into a folder, or to stdout (`-`).
    fn export(&self, file_or_name: &Path, output: &Path, force: bool) -> Result<Exit, CliError> {
        let to_stdout = userio::is_stdout(output);
        if to_stdout && self.json {
            let why =
                "--json and -o - would both write to stdout; export to a file, or drop --json";
            return Err(CliError::new(Exit::Usage, why));
        }
        let from = self.locate(file_or_name)?;
        // Read once (a regular file, not too large); the bytes validated are the bytes
        // written: no re-serialisation.
        let bytes = files::read_input(&from, InputKind::Decision)?;
        let invalid = |e: DecisionError| CliError::new(Exit::InvalidProfile, e.to_string());
        let d = Decision::from_slice(&bytes, &from).map_err(invalid)?;
        let key_name = d.key.file_name();
        let mut dest = output.to_path_buf();
        if !to_stdout && (output.is_dir() || output.to_string_lossy().ends_with(['/', '\\'])) {
            dest.push(from.file_name().unwrap_or(key_name.as_ref()));
        }
        let (f, t) = (from.display(), dest.display());
        if !to_stdout {
            let fix = "choose a writable path";
            if let Some(parent) = dest.parent().filter(|p| !p.as_os_str().is_empty()) {
                fs::create_dir_all(parent).map_err(|e| io_error(parent, "creating", &e, fix))?;
            }
            files::check_output(&dest, self.write)?;
            // Only a regular file is read back to compare; anything else is refused above.
            let same = userio::read_input(&dest, InputKind::Decision).is_ok_and(|old| old == bytes);
            if !same && !force && dest.symlink_metadata().is_ok() {
                let why = format!("{t} exists and differs from {f}; add --force to replace it");
                return Err(CliError::new(Exit::Io, why));
            }
        }
        files::write_output(&dest, &bytes, self.write)?;
        if !to_stdout && dest.file_name() != Some(key_name.as_ref()) && !self.quiet {
            eprintln!("note: the store finds this decision under its key's name {key_name} only");
        }
        let (label, kernel) = (d.chosen_label(), &d.key.kernel);
        if self.json {
            let (from, path) = (path_json(&from), path_json(&dest));
            print(json!({"from": from, "path": path, "chosen_label": label, "kernel": kernel}));
        } else if to_stdout {
            if !self.quiet {
                eprintln!("exported {f} ({label}, kernel `{kernel}`) to stdout");
            }
        } else {
            println!("exported {f} ({label}, kernel `{kernel}`) to {t}");
        }
        Ok(Exit::Ok)
    }
}
