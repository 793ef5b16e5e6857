//! A decision record: which candidate won for a key, every candidate's timings and errors,
//! why, and what tuning cost. JSON `memtune-decision/1`, validated on every load.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

use super::candidates::{Candidate, Origin, MAX_CANDIDATES};
use super::key::{candidates_digest, TuneKey};
use super::session::{quantile, Outcome, Stats};
use crate::profile::is_valid_uuid;

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
        let bytes = crate::userio::strip_bom(bytes);
        let d: Decision = serde_json::from_slice(bytes).map_err(|e| invalid(e.to_string()))?;
        d.validate().map_err(invalid)?;
        Ok(d)
    }

    /// Checks what a hand-edited or damaged file could get wrong: the schema, every field
    /// within its bounds (see the `MAX_*` constants), every time finite and from 0 to
    /// [`MAX_DECISION_MS`], each median the median of its runs, quantiles ordered, the key's
    /// candidate digest matching the labels of the first set (the refinements, which come
    /// after it, aside), and the choice consistent with the failures. The message starts with
    /// the field's JSON path.
    pub fn validate(&self) -> Result<(), String> {
        if self.schema != DECISION_SCHEMA {
            return Err(format!(
                "schema: `{}`, expected `{DECISION_SCHEMA}`",
                self.schema
            ));
        }
        self.key_is_valid()?;
        let n = self.candidates.len();
        if n == 0 || n > MAX_CANDIDATES {
            return Err(format!(
                "candidates: {n} candidates, expected 1 to {MAX_CANDIDATES}"
            ));
        }
        if self.chosen >= n {
            return Err(format!(
                "chosen {} of {n} candidates: there is no such candidate",
                self.chosen
            ));
        }
        for (i, c) in self.candidates.iter().enumerate() {
            candidate_is_valid(c, &format!("candidates[{i}]"))?;
        }
        // The key names the first set; a refinement is chosen from its timings.
        let first_refined = self
            .candidates
            .iter()
            .position(|c| c.origin == Origin::Refined);
        if first_refined.is_some_and(|i| {
            self.candidates[i..]
                .iter()
                .any(|c| c.origin != Origin::Refined)
        }) {
            return Err("candidates: refined candidates must come after the first set".into());
        }
        let first = self
            .candidates
            .iter()
            .filter(|c| c.origin != Origin::Refined);
        let digest = candidates_digest(first.map(|c| c.label.as_str()));
        if digest != self.key.candidates_digest {
            return Err(
                "key.candidates_digest: the candidates do not match the key's candidate digest"
                    .into(),
            );
        }
        time("tuning_ms", self.tuning_ms)?;
        if let Some(cost) = self.cost_in_untuned {
            time("cost_in_untuned", cost)?;
        }
        if self.launches > MAX_LAUNCHES {
            return Err(format!(
                "launches: {} is more than {MAX_LAUNCHES}",
                self.launches
            ));
        }
        if self.created_unix_s > MAX_CREATED_UNIX_S {
            return Err(format!(
                "created_unix_s: {} lies after the year 3000",
                self.created_unix_s
            ));
        }
        text("why", &self.why, MAX_TEXT_CHARS)?;
        let chosen = &self.candidates[self.chosen];
        if chosen.stats.error.is_some() && !self.all_failed {
            return Err("chosen: the chosen candidate failed".into());
        }
        if self.all_failed && self.chosen != 0 {
            return Err(format!(
                "chosen: {} although every candidate failed (the untuned one, 0, stands)",
                self.chosen
            ));
        }
        Ok(())
    }

    fn key_is_valid(&self) -> Result<(), String> {
        let k = &self.key;
        if !is_valid_uuid(&k.device_uuid) {
            return Err(format!(
                "key.device_uuid: `{}` is not a GPU UUID",
                k.device_uuid
            ));
        }
        name("key.kernel", &k.kernel, MAX_KERNEL_CHARS)?;
        name("key.memtune_version", &k.memtune_version, MAX_LABEL_CHARS)?;
        name("key.profile_digest", &k.profile_digest, MAX_LABEL_CHARS)?;
        if !k.profile_digest.starts_with(crate::digest::PREFIX) {
            return Err(format!(
                "key.profile_digest: `{}` does not start with `{}`",
                k.profile_digest,
                crate::digest::PREFIX
            ));
        }
        let c = &k.class;
        let workload_ok = !c.workload.is_empty()
            && c.workload.len() <= MAX_WORKLOAD_CHARS
            && c.workload
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !workload_ok {
            return Err(format!(
                "key.class.workload: {:?} is not a workload name",
                c.workload
            ));
        }
        if c.size_class > MAX_SIZE_CLASS {
            return Err(format!(
                "key.class.size_class: {} is more than {MAX_SIZE_CLASS} (2 log2 of 2^64 bytes)",
                c.size_class
            ));
        }
        if !(1..=MAX_ELEM_BYTES).contains(&c.elem_bytes) {
            return Err(format!(
                "key.class.elem_bytes: {} is outside 1..={MAX_ELEM_BYTES}",
                c.elem_bytes
            ));
        }
        text("key.class.detail", &c.detail, MAX_KERNEL_CHARS)
    }
}

/// Largest time in milliseconds a decision may record (about 11 days).
pub const MAX_DECISION_MS: f64 = 1e9;
/// Most timed runs of one candidate.
pub const MAX_RUNS: usize = 1024;
/// Most launches of one session.
pub const MAX_LAUNCHES: u32 = 1_000_000;
/// Latest creation time: the year 3000.
pub const MAX_CREATED_UNIX_S: u64 = 32_503_680_000;
const MAX_LABEL_CHARS: usize = 256;
const MAX_KERNEL_CHARS: usize = 1024;
const MAX_TEXT_CHARS: usize = 16 * 1024;
const MAX_WORKLOAD_CHARS: usize = 64;
const MAX_SIZE_CLASS: u32 = 128;
const MAX_ELEM_BYTES: u32 = 1024;

fn candidate_is_valid(c: &CandidateResult, path: &str) -> Result<(), String> {
    name(&format!("{path}.label"), &c.label, MAX_LABEL_CHARS)?;
    let s = &c.stats;
    if s.runs_ms.len() > MAX_RUNS {
        return Err(format!(
            "{path}.stats.runs_ms: {} runs, more than {MAX_RUNS}",
            s.runs_ms.len()
        ));
    }
    if !s.rounds.is_empty() && s.rounds.len() != s.runs_ms.len() {
        return Err(format!(
            "{path}.stats.rounds: {} rounds for {} runs",
            s.rounds.len(),
            s.runs_ms.len()
        ));
    }
    for (j, &ms) in s.runs_ms.iter().enumerate() {
        time(&format!("{path}.stats.runs_ms[{j}]"), ms)?;
    }
    if let Some(ms) = s.warmup_ms {
        time(&format!("{path}.stats.warmup_ms"), ms)?;
    }
    for (key, q, value) in [
        ("p20_ms", 0.2, c.p20_ms),
        ("median_ms", 0.5, c.median_ms),
        ("p80_ms", 0.8, c.p80_ms),
    ] {
        let field = format!("{path}.{key}");
        if let Some(ms) = value {
            time(&field, ms)?;
        }
        let expected = quantile(&s.runs_ms, q);
        let same = match (value, expected) {
            (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * b.abs().max(1e-9),
            (None, None) => true,
            _ => false,
        };
        if !same {
            return Err(format!(
                "{field}: {value:?} is not the runs' quantile {expected:?}"
            ));
        }
    }
    for (key, value) in [("dropped", &s.dropped), ("error", &s.error)] {
        if let Some(t) = value {
            text(&format!("{path}.stats.{key}"), t, MAX_TEXT_CHARS)?;
        }
    }
    Ok(())
}

/// A time in milliseconds: finite, from 0 to [`MAX_DECISION_MS`].
fn time(path: &str, ms: f64) -> Result<(), String> {
    if ms.is_finite() && (0.0..=MAX_DECISION_MS).contains(&ms) {
        Ok(())
    } else {
        Err(format!(
            "{path}: {ms} is not a time from 0 to {MAX_DECISION_MS:e} ms"
        ))
    }
}

/// A non-empty one-line name of at most `max` characters.
fn name(path: &str, s: &str, max: usize) -> Result<(), String> {
    if s.is_empty() {
        return Err(format!("{path}: is empty"));
    }
    if s.chars().any(char::is_control) {
        return Err(format!("{path}: holds control characters"));
    }
    text(path, s, max)
}

/// A text of at most `max` characters.
fn text(path: &str, s: &str, max: usize) -> Result<(), String> {
    if s.chars().count() > max {
        return Err(format!("{path}: longer than {max} characters"));
    }
    Ok(())
}
