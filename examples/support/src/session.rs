//! What the examples' binaries print around memtune's autotuner: the device line, the
//! profile, the chosen plan with its candidates, what was timed now, `--expect-stored`,
//! and the bench's rows and failures.

use std::fmt::Display;
use std::time::Instant;

use memtune::autotune::Autotuner;
use memtune::core::tune::CandidateResult;
use memtune::{DeviceIdentity, Profile, TunedPlan};

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

/// The warnings of a tuning call (stderr), the chosen plan, and the decision's reason and
/// candidates: labels padded to `label_width`, each with its `note` (why it was dropped).
pub fn print_choice<P>(
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
pub fn print_timed_now<P>(tuner: &Autotuner, tuned: &TunedPlan<P>, launches: usize) {
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
        assert_eq!(
            rows.failed().unwrap_err(),
            "1 bench rows failed (see above)"
        );
    }
}
