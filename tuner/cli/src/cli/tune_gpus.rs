//! Bare `cargo tune`: every selected GPU probed and its profile stored in the user cache
//! or the project. Several GPUs are probed at once, one worker process each
//! (`tune_workers.rs`), unless `--one-at-a-time`; each worker stores its own GPU's profile,
//! so a GPU that finished is kept whatever the others do.

use super::commands::{print_json, Ctx};
use super::probe;
use super::profiles::replacing;
use super::tune::{faults_from_env, plots, probe_gpu, section_summary, QUICK_NOTE};
use super::tune_workers;
use super::TuneArgs;
use crate::env::env_gpu;
use crate::exit::{CliError, Exit};
use crate::files::{self, path_json, paths_json};
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

/// Whether `n_gpus` GPUs are probed at once, one worker process each: more than one, and
/// not `--one-at-a-time` (for sections that must not share the host link).
pub(super) fn parallel(n_gpus: usize, one_at_a_time: bool) -> bool {
    n_gpus > 1 && !one_at_a_time
}

/// A GPU's profile, once stored.
#[derive(Debug)]
pub(super) struct Stored {
    pub(super) ordinal: usize,
    pub(super) profile: Profile,
    pub(super) path: PathBuf,
    pub(super) charts: Vec<PathBuf>,
}

/// What every GPU's probe and store share.
pub(super) struct Job<'a> {
    pub(super) ctx: &'a Ctx,
    pub(super) args: &'a TuneArgs,
    pub(super) store: Store,
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
    if args.worker {
        return tune_workers::worker(ctx, args);
    }
    let ids = match args.device.map_or_else(env_gpu, |o| Ok(Some(o)))? {
        Some(ordinal) => vec![(ordinal, device::identity(ordinal)?)],
        None => device::list()?.into_iter().enumerate().collect(),
    };
    let at_once = if parallel(ids.len(), args.one_at_a_time) {
        ids.len()
    } else {
        1
    };
    let job = Job::new(ctx, args, at_once, ids.len() > 1)?;
    let (written, any_failed) = if at_once > 1 {
        job.all_at_once(ids)?
    } else {
        job.one_at_a_time(ids)?
    };
    print_stored(ctx, args, &written);
    Ok(Exit::of_probe(any_failed))
}

impl<'a> Job<'a> {
    /// Checks where profiles and charts go and what `MEMTUNE_FAULT` asks, and installs the
    /// Ctrl-C handler, before any GPU is probed.
    pub(super) fn new(
        ctx: &'a Ctx,
        args: &'a TuneArgs,
        at_once: usize,
        several: bool,
    ) -> Result<Job<'a>, CliError> {
        let store = if args.project {
            ctx.project()
        } else {
            ctx.cache_store()?
        };
        if let Some(dir) = &args.probe.plot {
            files::output_dir(dir, ctx.write)?;
        }
        // A worker's parent has said it already.
        let faults = if args.worker {
            faults_from_env(&Ctx {
                quiet: true,
                ..ctx.clone()
            })?
        } else {
            faults_from_env(ctx)?
        };
        interrupt::install()?;
        let mut options = args.probe.record();
        options.insert("project".to_string(), json!(args.project));
        // Whether the profile was measured beside other GPUs' probes.
        options.insert("parallel_with".to_string(), json!(at_once));
        Ok(Job {
            ctx,
            args,
            store,
            faults,
            options,
            at_once,
            several,
        })
    }

    pub(super) fn probe(
        &self,
        ordinal: usize,
        id: DeviceIdentity,
    ) -> Result<(Profile, bool), CliError> {
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
    pub(super) fn store(&self, ordinal: usize, mut profile: Profile) -> Result<Stored, CliError> {
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
}

/// The error a parallel run ends with: Ctrl-C's (every worker stops with the same one),
/// else the lowest ordinal's, named. The others are printed here, so none goes unsaid.
pub(super) fn first_error(mut errors: Vec<(usize, CliError)>) -> Option<CliError> {
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
pub(super) fn stored_before(mut e: CliError, written: &[Stored]) -> CliError {
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
