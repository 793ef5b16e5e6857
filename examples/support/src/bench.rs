//! The bench's timing and bookkeeping around memtune's autotuner: round-robin rounds with
//! a warm-up, medians per plan, the distinct plans to time, the fastest, a fresh decision
//! store and the "second run times nothing" check.

use memtune::core::tune::{Decision, DecisionStore};
use memtune::{PlanSource, TunedPlan};

use crate::report::Timed;

/// Timed runs per plan, after one warm-up round.
pub const RUNS: usize = 5;

/// Times every plan round robin: one warm-up round, then [`RUNS`] rounds; `time` launches
/// plan `i` and returns its milliseconds. The runs of each plan, warm-ups left out.
pub fn round_robin<P, E>(
    plans: &[P],
    mut time: impl FnMut(usize, &P) -> Result<f64, E>,
) -> Result<Vec<Vec<f64>>, E> {
    let mut runs = vec![Vec::new(); plans.len()];
    for round in 0..=RUNS {
        for (i, plan) in plans.iter().enumerate() {
            let ms = time(i, plan)?;
            if round > 0 {
                runs[i].push(ms);
            }
        }
    }
    Ok(runs)
}

/// The [`Timed`] of each plan's runs; `Err` names (with `label`) a plan without one.
pub fn medians<P>(
    runs: &[Vec<f64>],
    plans: &[P],
    label: impl Fn(&P) -> String,
) -> Result<Vec<Timed>, String> {
    runs.iter()
        .zip(plans)
        .map(|(r, p)| Timed::of(r).ok_or_else(|| format!("{}: no timed run", label(p))))
        .collect()
}

/// `plans` in order, each launch sequence once (`same` tells two plans that launch alike).
pub fn distinct<'a, P: Clone + 'a>(
    plans: impl IntoIterator<Item = &'a P>,
    same: impl Fn(&P, &P) -> bool,
) -> Vec<P> {
    let mut out: Vec<P> = Vec::new();
    for p in plans {
        if !out.iter().any(|q| same(q, p)) {
            out.push(p.clone());
        }
    }
    out
}

/// The time of the plan among `plans` that launches as `p` does.
pub fn time_of<P>(
    plans: &[P],
    times: &[Timed],
    p: &P,
    same: impl Fn(&P, &P) -> bool,
) -> Option<Timed> {
    plans.iter().position(|q| same(q, p)).map(|i| times[i])
}

/// The labelled time with the lowest median.
pub fn fastest(timed: impl IntoIterator<Item = (String, Timed)>) -> Option<(String, Timed)> {
    timed
        .into_iter()
        .min_by(|a, b| a.1.median_ms.total_cmp(&b.1.median_ms))
}

/// An empty decision store in a temporary directory (kept while the `TempDir` lives), so
/// that the bench's first tuning call tunes.
pub fn fresh_store() -> Result<(tempfile::TempDir, DecisionStore), String> {
    let dir = tempfile::tempdir().map_err(|e| format!("a temporary decision store: {e}"))?;
    let store = DecisionStore::new(Some(dir.path().join("decisions")), None);
    Ok((dir, store))
}

/// Whether the second tuning call (same store, `Mode::Auto`) did anything but reuse the
/// first call's stored decision: it launched, took its plan elsewhere, or chose another.
pub fn second_run_timed<P>(
    first: &TunedPlan<P>,
    second: &TunedPlan<P>,
    second_launched: bool,
    same: impl Fn(&P, &P) -> bool,
) -> bool {
    second_launched
        || !matches!(second.source, PlanSource::Stored(_))
        || !same(&second.plan, &first.plan)
}

/// What a bench row reports of a tuning decision.
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionSummary {
    /// Candidates with timed runs.
    pub candidates_timed: usize,
    pub candidates: usize,
    pub tuning_ms: f64,
    pub launches: u32,
    pub cost_in_untuned: Option<f64>,
    pub why: String,
}

impl DecisionSummary {
    pub fn of(decision: &Decision) -> DecisionSummary {
        DecisionSummary {
            candidates_timed: decision
                .candidates
                .iter()
                .filter(|c| !c.stats.runs_ms.is_empty())
                .count(),
            candidates: decision.candidates.len(),
            tuning_ms: decision.tuning_ms,
            launches: decision.launches,
            cost_in_untuned: decision.cost_in_untuned,
            why: decision.why.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_skip_the_warm_up() {
        let mut n = 0.0;
        let runs = round_robin(&["a", "b"], |i, _| {
            n += 1.0;
            Ok::<f64, String>(n + i as f64 * 100.0)
        })
        .expect("times");
        assert_eq!(runs[0], vec![3.0, 5.0, 7.0, 9.0, 11.0]);
        assert_eq!(runs[1].len(), RUNS);
        let t = medians(&runs, &["a", "b"], |p| p.to_string()).expect("medians");
        assert_eq!(t[0].median_ms, 7.0);
        let e = medians(&[vec![]], &["a"], |p| p.to_string()).unwrap_err();
        assert_eq!(e, "a: no timed run");
        let failed = round_robin(&[1], |_, _| Err::<f64, &str>("no"));
        assert_eq!(failed, Err("no"));
    }

    #[test]
    fn distinct_time_of_and_fastest() {
        let same = |a: &u32, b: &u32| a % 10 == b % 10;
        let plans = distinct(&[1, 11, 2, 3, 12], same);
        assert_eq!(plans, vec![1, 2, 3]);
        let times: Vec<Timed> = [3.0, 1.0, 2.0]
            .iter()
            .map(|&ms| Timed::of(&[ms]).expect("a run"))
            .collect();
        assert_eq!(time_of(&plans, &times, &22, same), Some(times[1]));
        assert_eq!(time_of(&plans, &times, &4, same), None);
        let best = fastest(plans.iter().zip(&times).map(|(p, t)| (p.to_string(), *t)));
        assert_eq!(best.map(|b| b.0), Some("2".to_string()));
        assert_eq!(fastest(Vec::new()), None);
        let (_dir, store) = fresh_store().expect("a store");
        assert!(store.local_dir().is_some());
    }
}
