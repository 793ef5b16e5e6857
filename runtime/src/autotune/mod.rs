//! Autotuning the user's own kernel at first use.
//!
//! The profile narrows the plans to at most five (untuned, the model's pick, its
//! neighbours: [`memtune_core::tune::Tunable`]); the user's launch, timed once on the GPU
//! with CUDA events, settles them; the decision is stored (user cache, or shipped in
//! `.memtune/decisions/`) and later runs time nothing. The untuned plan is always a
//! candidate and wins every tie, so a decision never makes the kernel slower than untuned
//! by more than the timing noise.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use memtune::autotune::Autotuner;
//! use memtune::core::plan::SamplingWorkload;
//! use memtune::MemoryKind;
//!
//! let (tuner, stream) = Autotuner::open(0, Some(std::path::Path::new(".")))?;
//! let work = SamplingWorkload { region_bytes: 3 << 30, memory: MemoryKind::Pinned, reads_per_thread: 64 };
//! let tuned = tuner.tune(&stream, "my-gather-v1", &work, |plan| {
//!     // launch my kernel on `stream`, in plan.passes passes of plan.scope_bytes
//!     Ok::<(), String>(())
//! })?;
//! println!("{} ({})", tuned.label, tuned.source);
//! # Ok(()) }
//! ```
//!
//! `MEMTUNE_AUTOTUNE`: `off` (the model's plan, nothing timed or read), `cached` (stored
//! decisions only), `always` (time again, replace); unset or `auto`: stored, else tune.
//! `MEMTUNE_TIMING_GATE=off`: time each launch without holding the stream ([`Clock`]).

mod gpu;

pub use gpu::{parse_timing_gate, time_once, timing_gate_from_env, Clock, ENV_TIMING_GATE};

use std::fmt;
use std::path::Path;

use memtune_core::plan::PlanError;
use memtune_core::tune::session::{self, Budget};
use memtune_core::tune::{
    candidates_digest, Decision, DecisionStore, StoreSource, Tunable, TuneKey, WorkloadTrials,
    ENV_AUTOTUNE,
};
use memtune_core::Profile;

/// How the autotuner uses stored decisions and timing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The model's plan: nothing timed, nothing read or stored.
    Off,
    /// A stored decision where there is one, else the model's plan; never times.
    Cached,
    /// A stored decision where there is one, else tune and store.
    Auto,
    /// Tune every time and replace the stored decision.
    Always,
}

impl Mode {
    /// `MEMTUNE_AUTOTUNE`; unset or empty is [`Mode::Auto`].
    pub fn from_env() -> Result<Mode, AutotuneError> {
        match std::env::var(ENV_AUTOTUNE) {
            Ok(v) => v.parse(),
            Err(_) => Ok(Mode::Auto),
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = AutotuneError;
    fn from_str(s: &str) -> Result<Mode, AutotuneError> {
        match s.trim() {
            "" | "auto" => Ok(Mode::Auto),
            "off" => Ok(Mode::Off),
            "cached" => Ok(Mode::Cached),
            "always" => Ok(Mode::Always),
            other => Err(AutotuneError::BadMode(other.to_string())),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AutotuneError {
    #[error("{ENV_AUTOTUNE}={0:?} is not a mode; use off, cached, auto or always")]
    BadMode(String),
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error("every candidate failed to launch, the untuned one included (use the untuned plan, and fix the launch): {}", .errors.join("; "))]
    AllFailed { errors: Vec<String> },
    #[error(transparent)]
    Tuned(#[from] crate::tuned::TunedError),
    #[error(transparent)]
    Launch(#[from] crate::launch::LaunchError),
}

/// Where a tuned plan came from.
#[derive(Debug, Clone, PartialEq)]
pub enum PlanSource {
    /// Timed on this run (and stored, unless storing failed: see the warnings).
    Tuned,
    /// A stored decision: nothing was timed.
    Stored(StoreSource),
    /// The untimed plan: the model's pick where it is sure, else untuned (`off`, or
    /// `cached` with nothing stored).
    Model,
}

impl fmt::Display for PlanSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlanSource::Tuned => f.write_str("tuned now"),
            PlanSource::Stored(s) => write!(f, "stored decision ({})", s.as_str()),
            PlanSource::Model => f.write_str("model plan, untimed"),
        }
    }
}

/// The plan to launch with, and how it was reached.
#[derive(Debug, Clone)]
pub struct TunedPlan<P> {
    pub plan: P,
    pub label: String,
    pub source: PlanSource,
    /// The decision record, when one was made or found.
    pub decision: Option<Decision>,
    /// Unusable stored files met, a store that could not be written.
    pub warnings: Vec<String>,
    /// Launches this call made (0 when a stored decision or the untimed plan was used;
    /// `decision.launches` is the session's that made the decision, maybe long ago).
    pub launches_now: u32,
}

/// Tunes workloads for one GPU and profile.
pub struct Autotuner {
    profile: Profile,
    /// Where the profile came from, when [`Autotuner::open`] looked it up.
    profile_source: Option<String>,
    device: Option<memtune_core::DeviceIdentity>,
    device_uuid: String,
    store: DecisionStore,
    mode: Mode,
    budget: Budget,
}

impl Autotuner {
    /// An autotuner for the GPU `device_uuid`, planning from `profile`.
    pub fn new(profile: Profile, device_uuid: &str, store: DecisionStore, mode: Mode) -> Self {
        Autotuner {
            profile,
            profile_source: None,
            device: None,
            device_uuid: device_uuid.to_string(),
            store,
            mode,
            budget: Budget::default(),
        }
    }

    /// With the stores and mode of the environment (`MEMTUNE_AUTOTUNE`, the user cache,
    /// `project_root/.memtune/decisions/`).
    pub fn from_env(
        profile: Profile,
        device_uuid: &str,
        project_root: Option<&Path>,
    ) -> Result<Self, AutotuneError> {
        Ok(Autotuner::new(
            profile,
            device_uuid,
            DecisionStore::from_env(project_root),
            Mode::from_env()?,
        ))
    }

    pub fn with_budget(mut self, budget: Budget) -> Self {
        self.budget = budget;
        self
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// Where the profile came from (lookup chain source), when [`Autotuner::open`] found it.
    pub fn profile_source(&self) -> Option<&str> {
        self.profile_source.as_deref()
    }

    /// The GPU [`Autotuner::open`] opened.
    pub fn device(&self) -> Option<&memtune_core::DeviceIdentity> {
        self.device.as_ref()
    }

    pub fn store(&self) -> &DecisionStore {
        &self.store
    }

    /// The key a decision for `workload` run by `kernel` is stored under.
    pub fn key<W: Tunable>(&self, kernel: &str, workload: &W) -> Result<TuneKey, AutotuneError> {
        let candidates = workload.candidates(&self.profile)?;
        Ok(self.key_of(kernel, workload, &candidates))
    }

    fn key_of<W: Tunable>(
        &self,
        kernel: &str,
        workload: &W,
        candidates: &[memtune_core::tune::Candidate<W::Plan>],
    ) -> TuneKey {
        TuneKey {
            device_uuid: self.device_uuid.clone(),
            kernel: kernel.to_string(),
            class: workload.class(),
            profile_digest: self.profile.digest.clone(),
            memtune_version: env!("CARGO_PKG_VERSION").to_string(),
            candidates_digest: candidates_digest(candidates.iter().map(|c| c.label.as_str())),
        }
    }

    /// Tunes with any clock: `time(plan)` launches the kernel with `plan` once and returns
    /// its milliseconds. [`Autotuner::tune`] passes a CUDA event timer.
    pub fn tune_with<W: Tunable>(
        &self,
        kernel: &str,
        workload: &W,
        mut time: impl FnMut(&W::Plan) -> Result<f64, String>,
    ) -> Result<TunedPlan<W::Plan>, AutotuneError> {
        let candidates = workload.candidates(&self.profile)?;
        let key = self.key_of(kernel, workload, &candidates);
        // Without timing: the model's pick where it is sure, else untuned.
        let safe = workload.untimed(&self.profile)?;
        let model = (safe.clone(), W::label(&safe));
        let untimed = |warnings| TunedPlan {
            plan: model.0.clone(),
            label: model.1.clone(),
            source: PlanSource::Model,
            decision: None,
            warnings,
            launches_now: 0,
        };
        if self.mode == Mode::Off {
            return Ok(untimed(Vec::new()));
        }
        let mut warnings = Vec::new();
        if self.mode != Mode::Always {
            let (found, found_warnings) = self.store.find(&key);
            warnings.extend(found_warnings);
            if let Some(found) = found {
                match found.decision.plan::<W::Plan>() {
                    Ok(plan) => {
                        return Ok(TunedPlan {
                            plan,
                            label: found.decision.chosen_label().to_string(),
                            source: PlanSource::Stored(found.source),
                            decision: Some(found.decision),
                            warnings,
                            launches_now: 0,
                        })
                    }
                    Err(e) => warnings.push(format!("{}: {e}; re-tuned", found.path.display())),
                }
            }
            if self.mode == Mode::Cached {
                return Ok(untimed(warnings));
            }
        }

        let n = candidates.len();
        let mut trials = WorkloadTrials {
            workload,
            profile: &self.profile,
            candidates,
            time: &mut time,
        };
        let outcome = session::run_trials(n, &self.budget, &mut trials);
        let candidates = trials.candidates;
        if outcome.all_failed {
            let errors = candidates
                .iter()
                .zip(&outcome.stats)
                .map(|(c, s)| format!("{}: {}", c.label, s.error.as_deref().unwrap_or("?")))
                .collect();
            return Err(AutotuneError::AllFailed { errors });
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let decision = Decision::from_outcome(key, &candidates, &outcome, now);
        if let Err(e) = self.store.save(&decision, self.mode == Mode::Always) {
            warnings.push(format!("the decision was not stored: {e}"));
        }
        let chosen = &candidates[outcome.chosen];
        Ok(TunedPlan {
            plan: chosen.plan.clone(),
            label: chosen.label.clone(),
            source: PlanSource::Tuned,
            launches_now: decision.launches,
            decision: Some(decision),
            warnings,
        })
    }
}

#[cfg(test)]
mod tests;
