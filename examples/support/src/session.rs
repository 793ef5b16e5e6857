//! The examples' binaries around memtune's autotuner: `main`'s flow and exit code, the
//! GPU and autotuner they open, and what they print: the device line, the compile-time
//! plan's profile, the profile, the chosen plan with its candidates, what was timed now,
//! `--expect-stored`, and the bench's profile, rows, failures and JSON document.

use std::fmt::Display;
use std::ops::Deref;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::CudaStream;
use memtune::autotune::Autotuner;
use memtune::core::tune::CandidateResult;
use memtune::{DeviceIdentity, Profile, ProfileStamp, TunedPlan};
use serde_json::Value;

use crate::args::{Mode, Parsed};
use crate::bench::{Bench, Tuning};
use crate::gpu::LoadedGpu;
use crate::report::{document, write_json};
use crate::Error;

/// A binary's `main`: `parsed` is its command line (clap's own errors and `--help` exit as
/// clap prints them), `mode` reads the [`Mode`] it chose off it, run by `tune` (the default
/// mode, with its case and `--expect-stored`) or `bench` (with its cases and `--json`). A
/// failure is printed as `NAME: error` and exits with [`Error::exit_code`].
pub fn main<C, T, B>(
    name: &str,
    parsed: Parsed<C>,
    mode: impl FnOnce(&C) -> &Mode<T, B>,
    tune: impl FnOnce(&C, &T, bool) -> Result<(), Error>,
    bench: impl FnOnce(&C, &B, Option<&Path>) -> Result<(), Error>,
) -> ExitCode {
    let fail = |e: &Error| {
        eprintln!("{name}: {e}");
        ExitCode::from(e.exit_code())
    };
    let config = match parsed {
        Err(e) => e.exit(),
        Ok(Err(e)) => return fail(&e),
        Ok(Ok(c)) => c,
    };
    let run = mode(&config).run(
        |case, expect_stored| tune(&config, case, expect_stored),
        |cases, json| bench(&config, cases, json),
    );
    match run {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

/// GPU 0 (`Error::NoGpu` without one, exit 3), its autotuner (profile and decision store
/// from the environment and the project at `root`) and the example's `Gpu`, made by `new`
/// from the GPU's identity and the autotuner's stream.
pub fn open<G>(
    root: &Path,
    new: impl FnOnce(DeviceIdentity, Arc<CudaStream>) -> Result<G, Error>,
) -> Result<(Autotuner, G), Error> {
    let identity = memtune::device::identity(0)?;
    let (tuner, stream) =
        Autotuner::open(0, Some(root)).map_err(|e| Error::Autotune(e.to_string()))?;
    let gpu = new(identity, stream)?;
    Ok((tuner, gpu))
}

/// Under a compile-time plan: the profile it was planned from, and its decision.
pub fn print_planned(profile: &ProfileStamp, reasons: &[&str]) {
    println!(
        "  planned for {} from {}{}",
        profile.name,
        profile.source,
        if profile.simulated {
            " (simulated)"
        } else {
            ""
        }
    );
    // The planner's last reason is its decision (the others: what it read in the profile).
    if let Some(why) = reasons.last() {
        println!("  - {why}");
    }
}

/// `GPU 0: NAME (UUID), N SMs; KERNELS compiled for sm_XY by NVRTC`.
pub fn device_line(id: &DeviceIdentity, kernels: &str) -> String {
    format!(
        "GPU 0: {} ({}), {} SMs; {kernels} compiled for {} by NVRTC",
        id.name,
        id.uuid,
        id.sm_count,
        crate::gpu::arch_of(id)
    )
}

/// The bench on `gpu`, with the profile `tuner` found for it, printed as its
/// [`profile_line`].
pub fn bench<'a, G: Deref<Target = LoadedGpu>>(gpu: &'a G, tuner: &'a Autotuner) -> Bench<'a, G> {
    let profile = tuner.profile();
    println!("{}", profile_line(profile));
    Bench {
        gpu,
        profile,
        uuid: &gpu.identity().uuid,
    }
}

/// `profile: NAME (UUID), digest D`.
pub fn profile_line(profile: &Profile) -> String {
    format!(
        "profile: {} ({}), digest {}",
        profile.device.name, profile.device.uuid, profile.digest
    )
}

/// The profile a bench used, as its JSON document names it.
pub fn profile_used(profile: &Profile) -> String {
    format!(
        "{} {} {}",
        profile.device.name, profile.device.uuid, profile.digest
    )
}

/// What the default mode's tuning call did: `print_choice`, then `print_timed_now`.
pub fn print_tuning<P>(
    tuner: &Autotuner,
    tuning: &Tuning<P>,
    label_width: usize,
    note: impl Fn(&CandidateResult) -> Option<&str>,
) {
    print_choice(&tuning.tuned, label_width, note);
    print_timed_now(tuner, &tuning.tuned, tuning.launches);
}

/// The warnings of a tuning call (stderr), the chosen plan, and the decision's reason and
/// candidates: labels padded to `label_width`, each with its `note` (why it was dropped).
fn print_choice<P>(
    tuned: &TunedPlan<P>,
    label_width: usize,
    note: impl Fn(&CandidateResult) -> Option<&str>,
) {
    for w in &tuned.warnings {
        eprintln!("warning: {w}");
    }
    println!("chosen plan: {} ({})", tuned.label, tuned.source);
    if let Some(d) = &tuned.decision {
        println!("  why: {}", d.why);
        for c in &d.candidates {
            let median = c
                .median_ms
                .map_or("-".to_string(), |m| format!("{m:.3} ms"));
            let note = note(c).unwrap_or("");
            println!(
                "  candidate {:<label_width$} {:<10} {median:>12}  {note}",
                c.label,
                format!("{:?}", c.origin)
            );
        }
    }
}

/// `nothing was timed: SOURCE` after a call that launched nothing, else what the
/// `launches` cost and where the decision was stored.
fn print_timed_now<P>(tuner: &Autotuner, tuned: &TunedPlan<P>, launches: usize) {
    if launches == 0 {
        println!("nothing was timed: {}", tuned.source);
    } else if let Some(d) = &tuned.decision {
        let cost = d
            .cost_in_untuned
            .map_or(String::new(), |c| format!(", {c:.1} untuned launches"));
        println!(
            "timed now: {launches} launches, {:.1} ms{cost}; stored in {}",
            d.tuning_ms,
            tuner
                .store()
                .local_dir()
                .map_or("(no cache directory)".into(), |p| p.display().to_string())
        );
    }
}

/// `--expect-stored`: `Err` when the tuning call timed `launches` launches.
pub fn expect_stored(expect: bool, launches: usize) -> Result<(), String> {
    if expect && launches > 0 {
        return Err(format!(
            "--expect-stored: {launches} launches were timed; no stored decision was used"
        ));
    }
    Ok(())
}

/// The bench's rows and the failures of the others, each reported on stderr as it ends.
#[derive(Debug)]
pub struct Rows<R> {
    pub rows: Vec<R>,
    pub errors: Vec<String>,
}

impl<R> Default for Rows<R> {
    fn default() -> Self {
        Rows {
            rows: Vec::new(),
            errors: Vec::new(),
        }
    }
}

impl<R> Rows<R> {
    /// Keeps the row of `case` (begun at `started`) or its error.
    pub fn record<E: Display>(&mut self, case: &str, started: Instant, row: Result<R, E>) {
        match row {
            Ok(row) => {
                eprintln!("bench: {case}: {:.1} s", started.elapsed().as_secs_f64());
                self.rows.push(row);
            }
            Err(e) => {
                eprintln!("bench: {case}: {e}");
                self.errors.push(format!("{case}: {e}"));
            }
        }
    }

    /// Makes the row of `case` by `row`, timed, and keeps it or its error ([`Rows::record`]).
    pub fn run<E: Display>(&mut self, case: &str, row: impl FnOnce() -> Result<R, E>) {
        let started = Instant::now();
        self.record(case, started, row());
    }

    /// Prints `table`, then a line per failed row.
    pub fn print(&self, table: &str) {
        print!("{table}");
        for e in &self.errors {
            println!("error: {e}");
        }
    }

    /// `Err` when some rows failed.
    pub fn failed(&self) -> Result<(), String> {
        match self.errors.len() {
            0 => Ok(()),
            n => Err(format!("{n} bench rows failed (see above)")),
        }
    }

    /// The end of `bench`: prints the `table` of the rows and the failures, writes the
    /// `--json` document to `json` where given (the rows as `row_json` writes them), then
    /// `Err(Error::Bench)` when some rows failed.
    pub fn finish<G: Deref<Target = LoadedGpu>>(
        &self,
        bench: &Bench<'_, G>,
        table: impl FnOnce(&[R]) -> String,
        row_json: impl Fn(&R) -> Value,
        json: Option<&Path>,
    ) -> Result<(), Error> {
        self.print(&table(&self.rows));
        if let Some(path) = json {
            let gpu = bench.gpu.identity();
            let used = profile_used(bench.profile);
            let rows = self.rows.iter().map(row_json).collect();
            let doc = document(&gpu.name, &gpu.uuid, &used, rows, &self.errors);
            write_json(path, &doc).map_err(Error::Io)?;
            println!("wrote {}", path.display());
        }
        self.failed().map_err(Error::Bench)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expect_stored_and_rows() {
        assert!(expect_stored(false, 3).is_ok());
        assert!(expect_stored(true, 0).is_ok());
        let e = expect_stored(true, 20).unwrap_err();
        assert!(e.starts_with("--expect-stored: 20 launches"), "{e}");
        let mut rows = Rows::default();
        rows.record("a", Instant::now(), Ok::<u32, String>(1));
        assert!(rows.failed().is_ok());
        rows.record("b", Instant::now(), Err::<u32, _>("wrong"));
        assert_eq!(rows.rows, vec![1]);
        assert_eq!(rows.errors, vec!["b: wrong".to_string()]);
        rows.run("c", || Ok::<u32, String>(3));
        rows.run("d", || Err::<u32, _>("failed"));
        assert_eq!(rows.rows, vec![1, 3]);
        assert_eq!(rows.errors.len(), 2);
        assert_eq!(
            rows.failed().unwrap_err(),
            "2 bench rows failed (see above)"
        );
    }
}
