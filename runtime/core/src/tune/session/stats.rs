//! One candidate's measurements in a session, and the quantiles the decision reads.

use serde::{Deserialize, Serialize};

/// One candidate's measurements.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// The untimed-for-decision first launch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_ms: Option<f64>,
    /// Timed launches in order.
    pub runs_ms: Vec<f64>,
    /// The round of each of `runs_ms` (0 for a launch before the rounds): runs of one
    /// round went back to back, so their ratios are free of the drift between rounds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<u32>,
    /// Why the candidate was dropped: its launch's error, or the early stop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped: Option<String>,
    /// The launch error, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Stats {
    pub fn median_ms(&self) -> Option<f64> {
        quantile(&self.runs_ms, 0.5)
    }
    pub fn p20_ms(&self) -> Option<f64> {
        quantile(&self.runs_ms, 0.2)
    }
    pub fn p80_ms(&self) -> Option<f64> {
        quantile(&self.runs_ms, 0.8)
    }
    pub(super) fn fastest_ms(&self) -> Option<f64> {
        self.runs_ms.iter().copied().reduce(f64::min)
    }
    pub(super) fn record(&mut self, ms: f64, round: u32) {
        self.runs_ms.push(ms);
        self.rounds.push(round);
    }
    pub(super) fn alive(&self) -> bool {
        self.dropped.is_none()
    }
    /// Its latest launch: its last run, else its warm-up; `None` when it failed or never
    /// ran. Launched back to back, candidates' latest launches share any disturbance.
    pub fn latest_ms(&self) -> Option<f64> {
        if self.error.is_some() {
            return None;
        }
        self.runs_ms.last().copied().or(self.warmup_ms)
    }
}

pub use crate::stats::quantile;
