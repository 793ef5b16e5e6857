//! A decision record: which candidate won for a key, every candidate's timings and errors,
//! why, and what tuning cost. JSON `memtune-decision/1`, validated on every load.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

use super::candidates::{Candidate, Origin, MAX_CANDIDATES};
use super::key::{candidates_digest, TuneKey};
use super::session::{Outcome, Stats};

pub const DECISION_SCHEMA: &str = "memtune-decision/1";
/// Decision files are small; anything larger is refused unread.
pub const MAX_DECISION_BYTES: u64 = 1 << 20;

/// One candidate as it was timed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CandidateResult {
    pub label: String,
    pub origin: Origin,
    /// The plan, as the workload's plan type writes it.
    pub plan: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p20_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p80_ms: Option<f64>,
    pub stats: Stats,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    pub schema: String,
    pub key: TuneKey,
    /// Index into `candidates`.
    pub chosen: usize,
    pub why: String,
    pub candidates: Vec<CandidateResult>,
    /// Every launch of the session added up, warm-ups included.
    pub tuning_ms: f64,
    pub launches: u32,
    /// `tuning_ms` in launches of the untuned kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_in_untuned: Option<f64>,
    /// Every candidate failed; the untuned plan stands.
    pub all_failed: bool,
    /// Seconds since the Unix epoch when it was tuned.
    pub created_unix_s: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum DecisionError {
    #[error("{path}: {what} failed: {source}")]
    Io {
        path: PathBuf,
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a valid decision ({why}); it is ignored and the kernel re-tuned (delete it, or `cargo tune decisions clear`)")]
    Invalid { path: PathBuf, why: String },
    #[error("the plan of a decision does not fit this workload: {0}")]
    Plan(String),
}

impl Decision {
    /// The record of `outcome` over `candidates` for `key`.
    pub fn from_outcome<P: Serialize>(
        key: TuneKey,
        candidates: &[Candidate<P>],
        outcome: &Outcome,
        created_unix_s: u64,
    ) -> Decision {
        let results = candidates
            .iter()
            .zip(&outcome.stats)
            .map(|(c, s)| CandidateResult {
                label: c.label.clone(),
                origin: c.origin,
                plan: serde_json::to_value(&c.plan).unwrap_or_default(),
                median_ms: s.median_ms(),
                p20_ms: s.p20_ms(),
                p80_ms: s.p80_ms(),
                stats: s.clone(),
            })
            .collect();
        Decision {
            schema: DECISION_SCHEMA.into(),
            key,
            chosen: outcome.chosen,
            why: outcome.why.clone(),
            candidates: results,
            tuning_ms: outcome.tuning_ms,
            launches: outcome.launches,
            cost_in_untuned: outcome.cost_in_untuned,
            all_failed: outcome.all_failed,
            created_unix_s,
        }
    }

    /// The chosen candidate's label.
    pub fn chosen_label(&self) -> &str {
        self.candidates
            .get(self.chosen)
            .map_or("", |c| c.label.as_str())
    }

    /// The chosen plan as the workload's plan type.
    pub fn plan<P: serde::de::DeserializeOwned>(&self) -> Result<P, DecisionError> {
        let c = self
            .candidates
            .get(self.chosen)
            .ok_or_else(|| DecisionError::Plan("no chosen candidate".into()))?;
        serde_json::from_value(c.plan.clone()).map_err(|e| DecisionError::Plan(e.to_string()))
    }

    /// Parses and validates a decision file's bytes.
    pub fn from_slice(bytes: &[u8], path: &Path) -> Result<Decision, DecisionError> {
        let invalid = |why: String| DecisionError::Invalid {
            path: path.to_path_buf(),
            why,
        };
        let d: Decision = serde_json::from_slice(bytes).map_err(|e| invalid(e.to_string()))?;
        d.validate().map_err(invalid)?;
        Ok(d)
    }

    /// Checks what a re-signed or hand-edited file could get wrong.
    pub fn validate(&self) -> Result<(), String> {
        if self.schema != DECISION_SCHEMA {
            return Err(format!(
                "schema `{}`, expected `{DECISION_SCHEMA}`",
                self.schema
            ));
        }
        let n = self.candidates.len();
        if n == 0 || n > MAX_CANDIDATES {
            return Err(format!("{n} candidates, expected 1 to {MAX_CANDIDATES}"));
        }
        if self.chosen >= n {
            return Err(format!("chosen {} of {n} candidates", self.chosen));
        }
        let digest = candidates_digest(self.candidates.iter().map(|c| c.label.as_str()));
        if digest != self.key.candidates_digest {
            return Err("the candidates do not match the key's candidate digest".into());
        }
        let finite = |x: f64| x.is_finite() && x >= 0.0;
        let times = self.candidates.iter().flat_map(|c| {
            c.stats
                .runs_ms
                .iter()
                .copied()
                .chain(c.stats.warmup_ms)
                .chain(c.median_ms)
        });
        if !finite(self.tuning_ms) || !times.clone().all(finite) {
            return Err("a time is negative, NaN or infinite".into());
        }
        let chosen = &self.candidates[self.chosen];
        if chosen.stats.error.is_some() && !self.all_failed {
            return Err("the chosen candidate failed".into());
        }
        Ok(())
    }
}
