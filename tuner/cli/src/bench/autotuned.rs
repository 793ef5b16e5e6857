//! The autotuned column of `cargo tune bench`: each row's workload tuned on the bench's own
//! kernel through `memtune::autotune` (a fresh decision store, so every run tunes), and a
//! second lookup that must time nothing. The pick is then measured in the row's rounds.

use memtune::autotune::{Autotuner, Mode};
use memtune::launch::{LaunchError, Timing};
use memtune_core::tune::{DecisionStore, Tunable};
use memtune_core::Profile;
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};

/// "Autotuned within 2% of the exhaustive best".
pub const AUTOTUNE_MARGIN: f64 = 1.02;
/// "Never slower than untuned": untuned/autotuned at least this.
pub const NOT_SLOWER: f64 = 0.98;
/// Tuning costs at most this many launches of the untuned kernel.
pub const MAX_COST: f64 = 20.0;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Autotuned {
    pub config: String,
    pub median_ms: f64,
    pub spread_ms: f64,
    /// Every candidate's label, untuned first.
    pub candidates: Vec<String>,
    /// Candidates with at least one timed run.
    pub candidates_timed: usize,
    /// The session's launches added up (CUDA events), warm-ups included.
    pub tuning_ms: f64,
    pub launches: u32,
    pub cost_in_untuned: Option<f64>,
    pub why: String,
    /// The lookup after tuning timed something (it must not).
    pub second_run_timed: bool,
    /// Every candidate's launches in the session, as the decision recorded them.
    pub trials: Vec<Trial>,
    /// Untuned against the pick in back-to-back pairs (absent when the pick is untuned).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paired_untuned: Option<Paired>,
    /// The pick against the row's best in back-to-back pairs (absent when it is the best).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paired_best: Option<Paired>,
}

impl Autotuned {
    /// Untuned over autotuned: the paired ratio where there is one, else the rounds'
    /// medians' ratio (`untuned_ms`).
    pub fn untuned_over(&self, untuned_ms: f64) -> f64 {
        self.paired_untuned
            .as_ref()
            .map_or(untuned_ms / self.median_ms, |p| p.ratio)
    }

    /// Autotuned over the best: the paired ratio where there is one, else the rounds'.
    pub fn over_best(&self, best_ms: f64) -> f64 {
        self.paired_best
            .as_ref()
            .map_or(self.median_ms / best_ms, |p| p.ratio)
    }
}

/// Two configurations timed in back-to-back pairs of single launches, each pair in the
/// other order than the one before.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Paired {
    pub first: String,
    pub second: String,
    pub first_ms: Vec<f64>,
    pub second_ms: Vec<f64>,
    /// The median over pairs of first/second.
    pub ratio: f64,
}

/// One candidate's launches in the tuning session.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Trial {
    pub label: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warmup_ms: Option<f64>,
    pub runs_ms: Vec<f64>,
    /// The session's round of each run: runs of one round went back to back, which the
    /// session's paired comparisons read.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dropped: Option<String>,
}

/// Tunes `workload` with `time(plan, runs, warmup)` (a result string and its timing),
/// checking every candidate's result with `check`; returns the pick and the session
/// (its `config`, `median_ms` and `spread_ms` are the caller's to fill from the row).
pub fn autotune<W: Tunable>(
    profile: &Profile,
    device_uuid: &str,
    kernel: &str,
    workload: &W,
    check: impl Fn(&str) -> Result<(), String>,
    mut time: impl FnMut(&W::Plan, usize, bool) -> Result<(String, Timing), LaunchError>,
) -> Result<(W::Plan, Autotuned), String> {
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "memtune-bench-decisions-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let store = || DecisionStore::new(Some(dir.clone()), None);
    let tuner = Autotuner::new(profile.clone(), device_uuid, store(), Mode::Always);
    let result = tuner.tune_with(kernel, workload, |plan| {
        let (result, t) = time(plan, 1, false).map_err(|e| e.to_string())?;
        check(&result)?;
        t.runs_ms
            .first()
            .copied()
            .ok_or_else(|| "no run".to_string())
    });
    let tuned = match result {
        Ok(t) => t,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(e.to_string());
        }
    };
    let mut second_run_timed = false;
    let again = Autotuner::new(profile.clone(), device_uuid, store(), Mode::Auto).tune_with(
        kernel,
        workload,
        |_| {
            second_run_timed = true;
            Err("the stored decision should have been used".to_string())
        },
    );
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(e) = again {
        second_run_timed = true;
        eprintln!("warning: the second lookup failed: {e}");
    }
    let decision = tuned.decision.ok_or("no decision was made")?;
    let a = Autotuned {
        config: tuned.label.clone(),
        median_ms: 0.0,
        spread_ms: 0.0,
        candidates: decision
            .candidates
            .iter()
            .map(|c| c.label.clone())
            .collect(),
        candidates_timed: decision
            .candidates
            .iter()
            .filter(|c| !c.stats.runs_ms.is_empty())
            .count(),
        tuning_ms: decision.tuning_ms,
        launches: decision.launches,
        cost_in_untuned: decision.cost_in_untuned,
        trials: decision
            .candidates
            .iter()
            .map(|c| Trial {
                label: c.label.clone(),
                warmup_ms: c.stats.warmup_ms,
                runs_ms: c.stats.runs_ms.clone(),
                rounds: c.stats.rounds.clone(),
                dropped: c.stats.dropped.clone(),
            })
            .collect(),
        why: decision.why,
        second_run_timed,
        paired_untuned: None,
        paired_best: None,
    };
    Ok((tuned.plan, a))
}
