//! Bare `cargo tune`: every selected GPU probed and its profile stored in the user cache
//! or the project. Several GPUs are probed at once, one worker thread each, unless
//! `--one-at-a-time`; the main thread stores each profile as it arrives, so a GPU that
//! finished is kept whatever the others do.

use super::commands::{env_gpu, print_json, Ctx};
use super::files::{self, path_json, paths_json};
use super::probe;
use super::profiles::replacing;
use super::tune::{faults_from_env, plots, probe_gpu, section_summary, QUICK_NOTE};
use super::TuneArgs;
use crate::exit::{CliError, Exit};
use crate::interrupt;
use crate::progress::eprint_line;
use memtune::device;
use memtune_core::codec;
use memtune_core::profile::{DeviceIdentity, Profile};
use memtune_core::store::Store;
use memtune_probe::fault::Faults;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::mpsc;

/// Whether `n_gpus` GPUs are probed at once, one worker thread each: more than one, and
/// not `--one-at-a-time` (for sections that must not share the host link).
pub(super) fn parallel(n_gpus: usize, one_at_a_time: bool) -> bool {
    n_gpus > 1 && !one_at_a_time
}

/// A GPU's profile, once stored.
struct Stored {
    ordinal: usize,
    profile: Profile,
    path: PathBuf,
    charts: Vec<PathBuf>,
}

/// What every GPU's probe and store share.
struct Job<'a> {
    ctx: &'a Ctx,
    args: &'a TuneArgs,
    store: Store,
    faults: Faults,
    /// The provenance options of every profile.
    options: BTreeMap<String, Value>,
    /// How many GPUs are probed at once.
    at_once: usize,
    /// More than one GPU: each one's charts go to a folder `gpu<ordinal>` of `--plot`.
    several: bool,
}

/// Bare `cargo tune`: probe each visible GPU and store its profile in the cache (or project).
pub(super) fn tune(ctx: &Ctx, args: &TuneArgs) -> Result<Exit, CliError> {
    let ids = match args.device.map_or_else(env_gpu, |o| Ok(Some(o)))? {
        Some(ordinal) => vec![(ordinal, device::identity(ordinal)?)],
        None => device::list()?.into_iter().enumerate().collect(),
    };
    let store = if args.project {
        ctx.project()
    } else {
        ctx.cache_store()?
    };
    if let Some(dir) = &args.probe.plot {
        files::output_dir(dir, ctx.write)?;
    }
    let faults = faults_from_env(ctx)?;
    interrupt::install()?;
    let at_once = if parallel(ids.len(), args.one_at_a_time) {
        ids.len()
    } else {
        1
    };
    let mut options = args.probe.record();
    options.insert("project".to_string(), json!(args.project));
    // Whether the profile was measured beside other GPUs' probes.
    options.insert("parallel_with".to_string(), json!(at_once));
    let job = Job {
        ctx,
        args,
        store,
        faults,
        options,
        at_once,
        several: ids.len() > 1,
    };
    let (written, any_failed) = if at_once > 1 {
        job.all_at_once(ids)?
    } else {
        job.one_at_a_time(ids)?
    };
    print_stored(ctx, args, &written);
    Ok(Exit::of_probe(any_failed))
}

impl Job<'_> {
    fn probe(&self, ordinal: usize, id: DeviceIdentity) -> Result<(Profile, bool), CliError> {
        let options = self.options.clone();
        let args = &self.args.probe;
        probe_gpu(
            self.ctx,
            ordinal,
            id,
            args,
            options,
            &self.faults,
            self.at_once,
        )
    }

    /// Stores `profile` (sealed and with a word on what it replaces, in a project) and
    /// writes its charts.
    fn store(&self, ordinal: usize, mut profile: Profile) -> Result<Stored, CliError> {
        if self.args.project {
            // A committed profile is replaced only with a word about it.
            codec::seal(&mut profile);
            if let Some(note) = replacing(&self.store, &profile) {
                self.ctx.note(&format!("warning: {note}"));
            }
        }
        let path = self.store.save(&mut profile)?;
        let dir = match &self.args.probe.plot {
            Some(dir) if self.several => Some(files::output_dir(
                &dir.join(format!("gpu{ordinal}")),
                self.ctx.write,
            )?),
            other => other.clone(),
        };
        let charts = plots(self.ctx, dir.as_deref(), &profile)?;
        Ok(Stored {
            ordinal,
            profile,
            path,
            charts,
        })
    }

    /// One GPU after another on this thread; the first error ends the run.
    fn one_at_a_time(
        &self,
        ids: Vec<(usize, DeviceIdentity)>,
    ) -> Result<(Vec<Stored>, bool), CliError> {
        let mut written = Vec::new();
        let mut any_failed = false;
        for (ordinal, id) in ids {
            self.ctx
                .note(&format!("GPU {ordinal}: {} {}", id.name, id.uuid));
            // Ctrl-C stores nothing of this GPU; the profiles of GPUs done before stay stored.
            let (profile, failed) = self
                .probe(ordinal, id)
                .map_err(|e| stored_before(e, &written))?;
            any_failed |= failed;
            written.push(self.store(ordinal, profile)?);
        }
        Ok((written, any_failed))
    }

    /// Every GPU at once, each probed by a worker thread of its own that opens its own
    /// contexts; only the progress display is shared. Each profile is stored as it
    /// arrives; a GPU whose probe or store fails is reported and the others are kept.
    fn all_at_once(
        &self,
        ids: Vec<(usize, DeviceIdentity)>,
    ) -> Result<(Vec<Stored>, bool), CliError> {
        for (ordinal, id) in &ids {
            self.ctx
                .note(&format!("GPU {ordinal}: {} {}", id.name, id.uuid));
        }
        let mut written = Vec::new();
        let mut any_failed = false;
        let mut errors: Vec<(usize, CliError)> = Vec::new();
        std::thread::scope(|scope| {
            let (tx, rx) = mpsc::channel();
            let workers: Vec<_> = ids
                .into_iter()
                .map(|(ordinal, id)| {
                    let tx = tx.clone();
                    let worker = scope.spawn(move || {
                        // The receiver lives until every worker is joined.
                        let _ = tx.send((ordinal, self.probe(ordinal, id)));
                    });
                    (ordinal, worker)
                })
                .collect();
            // The loop below ends once every worker has sent or ended.
            drop(tx);
            for (ordinal, probed) in rx {
                let stored = probed
                    .and_then(|(profile, failed)| Ok((self.store(ordinal, profile)?, failed)));
                match stored {
                    Ok((s, failed)) => {
                        any_failed |= failed;
                        written.push(s);
                    }
                    Err(e) => errors.push((ordinal, e)),
                }
            }
            for (ordinal, worker) in workers {
                // A worker that panicked sent nothing; the panic is on stderr already.
                if worker.join().is_err() {
                    let e = CliError::new(
                        Exit::Internal,
                        "the probe panicked; nothing of this GPU was stored",
                    );
                    errors.push((ordinal, e));
                }
            }
        });
        written.sort_by_key(|s| s.ordinal);
        match first_error(errors) {
            None => Ok((written, any_failed)),
            Some(e) => Err(stored_before(e, &written)),
        }
    }
}

/// The error a parallel run ends with: Ctrl-C's (every worker stops with the same one),
/// else the lowest ordinal's, named. The others are printed here, so none goes unsaid.
fn first_error(mut errors: Vec<(usize, CliError)>) -> Option<CliError> {
    errors.sort_by_key(|(ordinal, _)| *ordinal);
    let named = |(ordinal, e): (usize, CliError)| {
        CliError::new(e.exit, format!("GPU {ordinal}: {}", e.message))
    };
    let interrupted = errors.iter().position(|(_, e)| e.exit == Exit::Interrupted);
    let first = match interrupted {
        Some(i) => errors.remove(i).1,
        None if errors.is_empty() => return None,
        None => named(errors.remove(0)),
    };
    for e in errors
        .into_iter()
        .filter(|(_, e)| e.exit != Exit::Interrupted)
    {
        eprint_line(&format!("error: {}", named(e).message));
    }
    Some(first)
}

/// The end-of-probe summary of every stored profile, by ordinal.
fn print_stored(ctx: &Ctx, args: &TuneArgs, written: &[Stored]) {
    if ctx.json {
        let items: Vec<_> = written
            .iter()
            .map(|Stored { ordinal, profile: p, path, charts }| {
                json!({"ordinal": ordinal, "uuid": p.device.uuid, "name": p.device.name,
                "digest": p.digest, "path": path_json(path), "duration_seconds": p.provenance.duration_seconds,
                "tlb": probe::summary(p), "caches": probe::cache_summary(p),
                "sections": section_summary(p),
                "quick": args.probe.quick.then_some(QUICK_NOTE), "charts": paths_json(charts)})
            })
            .collect();
        print_json(&json!({ "profiles": items }));
        return;
    }
    for Stored {
        ordinal,
        profile: p,
        path,
        ..
    } in written
    {
        println!(
            "GPU {ordinal}  {}  {}  ({:.1} s)",
            p.device.name, p.device.uuid, p.provenance.duration_seconds
        );
        for line in probe::summary(p) {
            println!("  TLB {line}");
        }
        for line in probe::cache_summary(p) {
            println!("  caches: {line}");
        }
        for line in section_summary(p) {
            println!("  {line}");
        }
        if args.probe.quick {
            println!("  {QUICK_NOTE}");
        }
        println!("  profile written to {}", path.display());
    }
}

/// An interruption's message, with the profiles stored before it (whole, from GPUs done).
fn stored_before(mut e: CliError, written: &[Stored]) -> CliError {
    if e.exit == Exit::Interrupted && !written.is_empty() {
        let paths: Vec<String> = written
            .iter()
            .map(|w| w.path.display().to_string())
            .collect();
        e.message
            .push_str(&format!("; stored before it: {}", paths.join(", ")));
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_gpus_are_probed_at_once_unless_told_one_at_a_time() {
        assert!(!parallel(0, false));
        assert!(!parallel(1, false), "one GPU needs no worker");
        assert!(parallel(2, false));
        assert!(parallel(8, false));
        assert!(!parallel(2, true));
        assert!(!parallel(8, true));
    }

    #[test]
    fn ctrl_c_wins_and_other_errors_are_named_by_gpu() {
        let interrupted = || CliError::new(Exit::Interrupted, "interrupted: the probe stopped");
        assert!(first_error(Vec::new()).is_none());
        let e = first_error(vec![
            (1, CliError::new(Exit::Io, "disk full")),
            (0, interrupted()),
            (2, interrupted()),
        ]);
        let e = e.expect("an error");
        assert_eq!(e.exit, Exit::Interrupted);
        assert_eq!(e.message, "interrupted: the probe stopped");
        let e = first_error(vec![
            (3, CliError::new(Exit::Io, "disk full")),
            (1, CliError::new(Exit::Internal, "the probe panicked")),
        ]);
        let e = e.expect("an error");
        assert_eq!(e.exit, Exit::Internal);
        assert_eq!(e.message, "GPU 1: the probe panicked");
    }
}
