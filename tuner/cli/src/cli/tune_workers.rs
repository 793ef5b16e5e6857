//! Several GPUs probed at once by bare `cargo tune`, one worker process each: this program
//! again with the parent's own arguments plus `--device K --worker --parallel-with N`.
//! Threads of one process would share the CUDA driver's process-wide locks (pinned host
//! allocation and registration, module loading) and NVRTC, which serialize them; processes
//! share nothing but the terminal.
//!
//! A worker probes its GPU, stores the profile (charts into `--plot DIR/gpu<K>`) exactly as
//! the one-GPU path does, and prints one JSON line on stdout: a [`Report`]. Its stderr is
//! piped and printed by the parent line by line, each line named by its GPU. The parent
//! reads each stored profile back for the summary; a worker that fails is reported with its
//! GPU and the others are kept. Ctrl-C reaches every process of the foreground group: each
//! worker stops by itself and reports it, and the parent waits for them all; a SIGINT sent
//! to the parent alone is passed on to the workers still running [`FORWARD_AFTER`] later.

use super::commands::Ctx;
use super::tune_gpus::{first_error, stored_before, Job, Stored};
use super::TuneArgs;
use crate::exit::{CliError, Exit};
use crate::interrupt;
use crate::progress::eprint_line;
use memtune::device;
use memtune_core::profile::DeviceIdentity;
use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};

/// A worker's one line on stdout: its GPU's stored profile, or why there is none.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Report {
    ordinal: usize,
    /// The GPU's UUID, once its profile is stored.
    #[serde(default)]
    uuid: Option<String>,
    /// Where the profile was stored (lossy where not UTF-8: the parent reads it from its
    /// own store's path for the UUID, after checking the two agree).
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    charts: Vec<String>,
    /// Whether any section failed (the probe's exit 7).
    #[serde(default)]
    failed: bool,
    #[serde(default)]
    error: Option<ReportedError>,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct ReportedError {
    exit_code: i32,
    message: String,
}

impl Report {
    fn stored(s: &Stored, failed: bool) -> Report {
        let text = |p: &Path| p.to_string_lossy().into_owned();
        Report {
            ordinal: s.ordinal,
            uuid: Some(s.profile.device.uuid.clone()),
            path: Some(text(&s.path)),
            charts: s.charts.iter().map(|c| text(c)).collect(),
            failed,
            error: None,
        }
    }

    fn failed(ordinal: usize, e: &CliError) -> Report {
        Report {
            ordinal,
            uuid: None,
            path: None,
            charts: Vec::new(),
            failed: false,
            error: Some(ReportedError {
                exit_code: e.exit as i32,
                message: e.message.clone(),
            }),
        }
    }
}

/// The worker side, `--worker`: probes and stores the GPU of `--device`, prints its
/// [`Report`] on stdout and exits as the one-GPU path would, but leaves every message of
/// its own error to the parent.
pub(super) fn worker(ctx: &Ctx, args: &TuneArgs) -> Result<Exit, CliError> {
    let (Some(ordinal), Some(at_once)) = (args.device, args.parallel_with) else {
        return Err(CliError::new(
            Exit::Usage,
            "--worker is internal to `cargo tune` and needs --device and --parallel-with",
        ));
    };
    let stored = device::identity(ordinal)
        .map_err(CliError::from)
        .and_then(|id| {
            let job = Job::new(ctx, args, at_once, true)?;
            let (profile, failed) = job.probe(ordinal, id)?;
            Ok((job.store(ordinal, profile)?, failed))
        });
    let (report, exit) = match &stored {
        Ok((s, failed)) => (Report::stored(s, *failed), Exit::of_probe(*failed)),
        Err(e) => (Report::failed(ordinal, e), e.exit),
    };
    match serde_json::to_string(&report) {
        Ok(line) => println!("{line}"),
        // The parent then says this worker ended without a result.
        Err(e) => {
            eprint_line(&format!("error: cannot write the worker's result: {e}"));
            return Ok(Exit::Internal);
        }
    }
    Ok(exit)
}

/// The arguments of GPU `ordinal`'s worker, one of `at_once`: the parent's own (without
/// the program name), less any GPU selection or worker flag, plus the worker's.
fn worker_args(parent: &[OsString], ordinal: usize, at_once: usize) -> Vec<OsString> {
    let mut args = Vec::with_capacity(parent.len() + 5);
    let mut skip_value = false;
    for arg in parent {
        if std::mem::take(&mut skip_value) {
            continue;
        }
        match arg.to_str() {
            Some("--device" | "--parallel-with") => skip_value = true,
            Some("--one-at-a-time" | "--worker") => {}
            Some(a) if a.starts_with("--device=") || a.starts_with("--parallel-with=") => {}
            _ => args.push(arg.clone()),
        }
    }
    let (ordinal, at_once) = (ordinal.to_string(), at_once.to_string());
    for a in [
        "--device",
        &ordinal,
        "--worker",
        "--parallel-with",
        &at_once,
    ] {
        args.push(a.into());
    }
    args
}

impl Job<'_> {
    /// Every GPU at once, one worker process each; the parent only relays their stderr and
    /// collects their stored profiles. A GPU whose worker fails is reported and the others
    /// are kept.
    pub(super) fn all_at_once(
        &self,
        ids: Vec<(usize, DeviceIdentity)>,
    ) -> Result<(Vec<Stored>, bool), CliError> {
        for (ordinal, id) in &ids {
            self.ctx
                .note(&format!("GPU {ordinal}: {} {}", id.name, id.uuid));
        }
        let exe = std::env::current_exe().map_err(|e| {
            CliError::new(
                Exit::Internal,
                format!("cannot find this program to start a worker for each GPU: {e}; try --one-at-a-time"),
            )
        })?;
        let parent: Vec<OsString> = std::env::args_os().skip(1).collect();
        let at_once = ids.len();
        let mut errors: Vec<(usize, CliError)> = Vec::new();
        let mut started = Vec::new();
        for (ordinal, id) in ids {
            match spawn(&exe, &worker_args(&parent, ordinal, at_once)) {
                Ok(child) => started.push((ordinal, id, child)),
                Err(e) => errors.push((ordinal, e)),
            }
        }
        let pids: Vec<u32> = started.iter().map(|(_, _, child)| child.id()).collect();
        let done = std::sync::atomic::AtomicBool::new(false);
        let ended: Vec<_> = std::thread::scope(|scope| {
            // Ctrl-C on a terminal reaches the workers with the parent (one process group);
            // a SIGINT sent to the parent alone is passed on to them.
            scope.spawn(|| forward_interrupt(&pids, &done));
            let waiting: Vec<_> = started
                .into_iter()
                .map(|(ordinal, id, child)| {
                    (ordinal, id, scope.spawn(move || finish(ordinal, child)))
                })
                .collect();
            let ended = waiting
                .into_iter()
                .map(|(ordinal, id, waiter)| {
                    let report = waiter.join().unwrap_or_else(|_| {
                        Err(CliError::new(
                            Exit::Internal,
                            "reading its worker's output panicked",
                        ))
                    });
                    (ordinal, id, report)
                })
                .collect::<Vec<_>>();
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            ended
        });
        let mut written = Vec::new();
        let mut any_failed = false;
        for (ordinal, id, report) in ended {
            match report.and_then(|r| self.collect(ordinal, &id.uuid, r)) {
                Ok((s, failed)) => {
                    any_failed |= failed;
                    written.push(s);
                }
                Err(e) => errors.push((ordinal, e)),
            }
        }
        written.sort_by_key(|s| s.ordinal);
        match first_error(errors) {
            None => Ok((written, any_failed)),
            Some(e) => Err(stored_before(e, &written)),
        }
    }

    /// The profile a worker reported stored, read back from the store: the same GPU the
    /// parent listed, at the path the parent's store gives its UUID.
    fn collect(
        &self,
        ordinal: usize,
        uuid: &str,
        report: Report,
    ) -> Result<(Stored, bool), CliError> {
        if let Some(e) = report.error {
            let exit = Exit::from_code(e.exit_code).unwrap_or(Exit::Internal);
            return Err(CliError::new(exit, e.message));
        }
        let internal = |what: String| CliError::new(Exit::Internal, what);
        let reported = report.uuid.as_deref().unwrap_or("no GPU");
        if reported != uuid {
            return Err(internal(format!(
                "its worker reported a profile of {reported}, not of {uuid}; nothing of this GPU was stored"
            )));
        }
        let path = self.store.path_for(uuid);
        let shown = path.to_string_lossy();
        let at = report.path.as_deref().unwrap_or("no path");
        if at != shown {
            return Err(internal(format!(
                "its worker stored its profile at {at}, not at {shown}"
            )));
        }
        let profile = self.store.load(uuid)?.ok_or_else(|| {
            internal(format!(
                "its worker reported its profile stored at {shown}, but none is there"
            ))
        })?;
        let stored = Stored {
            ordinal,
            profile,
            path,
            charts: report.charts.into_iter().map(PathBuf::from).collect(),
        };
        Ok((stored, report.failed))
    }
}

/// Starts a worker with stdout and stderr piped to the parent.
fn spawn(exe: &Path, args: &[OsString]) -> Result<Child, CliError> {
    Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            CliError::new(
                Exit::Internal,
                format!(
                    "cannot start its worker {}: {e}; nothing of this GPU was stored",
                    exe.display()
                ),
            )
        })
}

/// Relays the worker's stderr until it ends, reads its stdout and waits for it: its report.
fn finish(ordinal: usize, mut child: Child) -> Result<Report, CliError> {
    let stderr = child.stderr.take();
    let mut stdout = Vec::new();
    let read = std::thread::scope(|scope| {
        if let Some(stderr) = stderr {
            scope.spawn(move || relay(ordinal, stderr));
        }
        match child.stdout.take() {
            Some(mut out) => out.read_to_end(&mut stdout).map(|_| ()),
            None => Ok(()),
        }
    });
    let status = child
        .wait()
        .map_err(|e| CliError::new(Exit::Internal, format!("cannot wait for its worker: {e}")))?;
    let read = read.map_err(|e| {
        CliError::new(
            Exit::Internal,
            format!("cannot read its worker's result: {e}"),
        )
    });
    match read.and_then(|()| parse_report(ordinal, &stdout)) {
        Ok(Some(report)) => Ok(report),
        Ok(None) => Err(without_report(status)),
        // A worker stopped by Ctrl-C before it could say so.
        Err(_) if interrupted(status) => Err(without_report(status)),
        Err(e) => Err(e),
    }
}

/// Prints each line of a worker's stderr on this process's, named by its GPU.
fn relay(ordinal: usize, from: impl Read) {
    let mut reader = BufReader::new(from);
    let mut line = Vec::new();
    // A read error ends the relay the way the worker's end does.
    while reader.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
        let text = String::from_utf8_lossy(&line);
        eprint_line(&labelled(ordinal, text.trim_end_matches(['\n', '\r'])));
        line.clear();
    }
}

/// `line` named by GPU `ordinal`, unless it already begins with that GPU's name.
fn labelled(ordinal: usize, line: &str) -> String {
    let name = format!("GPU {ordinal}");
    match line.strip_prefix(&name) {
        Some(rest) if rest.is_empty() || rest.starts_with([':', ' ']) => line.to_string(),
        _ => format!("{name}: {line}"),
    }
}

/// The report on a worker's stdout (its last line); `None` when it printed none.
fn parse_report(ordinal: usize, stdout: &[u8]) -> Result<Option<Report>, CliError> {
    let text = String::from_utf8_lossy(stdout);
    let Some(line) = text.lines().map(str::trim).rfind(|l| !l.is_empty()) else {
        return Ok(None);
    };
    let shown: String = line.chars().take(200).collect();
    let report: Report = serde_json::from_str(line).map_err(|e| {
        CliError::new(
            Exit::Internal,
            format!("its worker's result is not valid ({e}): `{shown}`"),
        )
    })?;
    if report.ordinal != ordinal {
        return Err(CliError::new(
            Exit::Internal,
            format!("its worker reported on GPU {} instead", report.ordinal),
        ));
    }
    Ok(Some(report))
}

/// Whether a worker ended by Ctrl-C: exit 130, or SIGINT before its handler was installed.
fn interrupted(status: ExitStatus) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if status.signal() == Some(2) {
            return true;
        }
    }
    status.code() == Some(Exit::Interrupted as i32)
}

/// The error of a worker that ended without a report.
fn without_report(status: ExitStatus) -> CliError {
    if interrupted(status) {
        return CliError::new(
            Exit::Interrupted,
            "interrupted: the probe stopped; nothing of this GPU was stored",
        );
    }
    // Rust's exit code of a panic.
    let what = if status.code() == Some(101) {
        "its worker panicked".to_string()
    } else {
        format!("its worker ended ({status}) without a result")
    };
    CliError::new(
        Exit::Internal,
        format!("{what}; nothing of this GPU was stored (its messages, if any, are above)"),
    )
}

#[cfg(test)]
#[path = "tune_workers_tests.rs"]
mod tests;

/// Workers still running this long after the parent's Ctrl-C did not get it themselves (it
/// was sent to the parent alone): a worker that got it stops between two measurements,
/// well within this.
const FORWARD_AFTER: std::time::Duration = std::time::Duration::from_secs(2);

/// Passes a Ctrl-C the parent got on to every worker still running [`FORWARD_AFTER`] later
/// (`kill -INT`), once, until `done`.
fn forward_interrupt(pids: &[u32], done: &std::sync::atomic::AtomicBool) {
    let token = interrupt::token();
    let mut noticed = None;
    while !done.load(std::sync::atomic::Ordering::Relaxed) {
        if token.is_cancelled() && noticed.is_none() {
            noticed = Some(std::time::Instant::now());
        }
        if noticed.is_some_and(|t| t.elapsed() >= FORWARD_AFTER) {
            for pid in pids {
                // A worker that already ended (or a missing `kill`) needs nothing more: the
                // parent reports every worker's end either way.
                let _ = std::process::Command::new("kill")
                    .args(["-INT", &pid.to_string()])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
            }
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
