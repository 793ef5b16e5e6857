//! The bench's timing and bookkeeping around memtune's autotuner: round-robin rounds with
//! a warm-up (launches checked through result slots), medians per plan, the distinct plans
//! to time, the fastest timed again beside the plans it is compared with, the two tuning
//! calls on a fresh decision store and the "second run times nothing" check, and the
//! [`Timings`] of a row.

use memtune::autotune::{Autotuner, Mode};
use memtune::core::tune::{Decision, DecisionStore};
use memtune::core::Profile;
use memtune::{PlanSource, TunedPlan};

use crate::gpu::{Slot, SlotValue, Slots};
use crate::report::{Timed, Timings};
use crate::Error;

/// Timed runs per plan, after one warm-up round.
pub const RUNS: usize = 5;

/// Times the plans a row compares are timed again after the sweep
/// ([`PlanTimes::confirmed_timings`]).
pub const CONFIRM_ROUNDS: usize = 4;

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

/// `plans` timed [`CONFIRM_ROUNDS`] times by `time` (each call times them all, as the
/// sweep did); each plan's [`Timed`] of the medians of those calls.
pub fn timed_again<P, E>(
    plans: &[P],
    label: impl Fn(&P) -> String,
    mut time: impl FnMut(&[P]) -> Result<Vec<Timed>, E>,
) -> Result<Vec<Timed>, E>
where
    E: From<Error>,
{
    let mut medians = vec![Vec::with_capacity(CONFIRM_ROUNDS); plans.len()];
    for _ in 0..CONFIRM_ROUNDS {
        let times = time(plans)?;
        for (m, t) in medians.iter_mut().zip(&times) {
            m.push(t.median_ms);
        }
    }
    medians
        .iter()
        .zip(plans)
        .map(|(m, p)| {
            Timed::of(m)
                .ok_or_else(|| Error::Autotune(format!("{}: not timed again", label(p))).into())
        })
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

/// What a tuning call did.
pub struct Tuning<P> {
    pub tuned: TunedPlan<P>,
    /// Launches the autotuner made; 0 when a stored decision (or the model) was used.
    pub launches: usize,
}

/// What the bench's two tuning calls found: the first call, its decision, and whether
/// the second call timed anything.
pub struct TunedTwice<P> {
    pub first: Tuning<P>,
    pub decision: Decision,
    pub second_run_timed: bool,
}

/// What every row of one bench shares: the example's GPU, and the profile and GPU UUID
/// its autotuners are made with.
pub struct Bench<'a, G> {
    pub gpu: &'a G,
    pub profile: &'a Profile,
    pub uuid: &'a str,
}

impl<G> Bench<'_, G> {
    /// The bench's two tuning calls on a fresh decision store, `tune` making one with the
    /// autotuner it is given: the first (`Mode::Always`) tunes, its warnings go to stderr;
    /// the second (`Mode::Auto`) should reuse its decision. `same` tells two plans that
    /// launch alike.
    pub fn tune_twice<P>(
        &self,
        tune: impl FnMut(&Autotuner) -> Result<Tuning<P>, Error>,
        same: impl Fn(&P, &P) -> bool,
    ) -> Result<TunedTwice<P>, Error> {
        tune_twice(self.profile, self.uuid, tune, same)
    }
}

fn tune_twice<P>(
    profile: &Profile,
    uuid: &str,
    mut tune: impl FnMut(&Autotuner) -> Result<Tuning<P>, Error>,
    same: impl Fn(&P, &P) -> bool,
) -> Result<TunedTwice<P>, Error> {
    // A fresh store: this run tunes; the second lookup must find its decision.
    let (_dir, store) = fresh_store().map_err(Error::Io)?;
    let tuner = |mode| Autotuner::new(profile.clone(), uuid, store.clone(), mode);
    let first = tune(&tuner(Mode::Always))?;
    let decision = first
        .tuned
        .decision
        .clone()
        .ok_or_else(|| Error::Autotune("tuning made no decision".into()))?;
    for w in &first.tuned.warnings {
        eprintln!("warning: {w}");
    }
    let second = tune(&tuner(Mode::Auto))?;
    let second_run_timed = second_run_timed(&first.tuned, &second.tuned, second.launches > 0, same);
    Ok(TunedTwice {
        first,
        decision,
        second_run_timed,
    })
}

/// Times `plans` round robin ([`round_robin`]) with a result slot each launch: `launch`
/// enqueues plan `i` into its slot and returns its milliseconds. Every `capacity` launches
/// and after the last, the slots are read and each compared with `expected`; `wrong` words
/// a plan's differing value (for `Error::Mismatch`). The medians, `label` naming plans.
pub fn time_into_slots<P, T: SlotValue + PartialEq>(
    plans: &[P],
    slots: &mut Slots<T>,
    capacity: usize,
    expected: &T,
    mut launch: impl FnMut(&P, Slot) -> Result<f64, Error>,
    wrong: impl Fn(&P, &T) -> String,
    label: impl Fn(&P) -> String,
) -> Result<Vec<Timed>, Error> {
    // (plan, slot index) of the launches since the slots were last read.
    let mut taken = Vec::new();
    let check = |slots: &Slots<T>, taken: &[(usize, usize)]| -> Result<(), Error> {
        let got = slots.read()?;
        for &(plan, slot) in taken {
            if got[slot] != *expected {
                return Err(Error::Mismatch(wrong(&plans[plan], &got[slot])));
            }
        }
        Ok(())
    };
    slots.reset()?;
    let runs = round_robin(plans, |i, plan| {
        if slots.used() == capacity {
            check(slots, &taken)?;
            taken.clear();
            slots.reset()?;
        }
        let slot = slots.take()?;
        taken.push((i, slot.index));
        launch(plan, slot)
    })?;
    check(slots, &taken)?;
    medians(&runs, plans, label).map_err(Error::Autotune)
}

/// The times of the plans a bench row timed: `plans`, each distinct, timed as `times`.
pub struct PlanTimes<'a, P> {
    pub plans: &'a [P],
    pub times: &'a [Timed],
    pub label: fn(&P) -> String,
    /// Whether two plans launch alike.
    pub same: fn(&P, &P) -> bool,
}

impl<'a, P> PlanTimes<'a, P> {
    pub fn new(
        plans: &'a [P],
        times: &'a [Timed],
        label: fn(&P) -> String,
        same: fn(&P, &P) -> bool,
    ) -> Self {
        PlanTimes {
            plans,
            times,
            label,
            same,
        }
    }

    /// The time of the plan that launches as `p` does; `Err` when none was timed.
    pub fn of(&self, p: &P) -> Result<Timed, Error> {
        time_of(self.plans, self.times, p, self.same)
            .ok_or_else(|| Error::Autotune(format!("{} was not timed", (self.label)(p))))
    }

    /// The row's timings as [`PlanTimes::timings`], the best being the fastest of `among`,
    /// with the untuned, model, autotuned and best plans timed again ([`timed_again`],
    /// `time` timing the plans it is given as the sweep did). The fastest of many plans
    /// timed by a few runs each reads low by chance; timed again beside the autotuned
    /// plan, it reads as it runs.
    pub fn confirmed_timings<E>(
        &self,
        untuned: &P,
        model: &P,
        tuned: &TunedTwice<P>,
        among: &[P],
        time: impl FnMut(&[P]) -> Result<Vec<Timed>, E>,
    ) -> Result<Timings, E>
    where
        P: Clone,
        E: From<Error>,
    {
        let best = self.fastest_plan(among)?;
        let again = distinct([untuned, model, &tuned.first.tuned.plan, best], self.same);
        let times = timed_again(&again, self.label, time)?;
        let timed = PlanTimes::new(&again, &times, self.label, self.same);
        let best = ((self.label)(best), timed.of(best)?);
        Ok(timed.timings(untuned, model, tuned, best)?)
    }

    /// The plan of `among` of the least median; `Err` when `among` is empty or holds a
    /// plan not timed.
    pub fn fastest_plan<'p>(&self, among: &'p [P]) -> Result<&'p P, Error> {
        let mut best: Option<(&P, f64)> = None;
        for p in among {
            let ms = self.of(p)?.median_ms;
            if best.is_none_or(|(_, b)| ms < b) {
                best = Some((p, ms));
            }
        }
        best.map(|(p, _)| p)
            .ok_or_else(|| Error::Autotune("no plan to compare".into()))
    }

    /// The row's timings: `untuned`, the `model`'s plan and the autotuned one of `tuned`,
    /// then `best` (the fastest of the plans the bench swept).
    pub fn timings(
        &self,
        untuned: &P,
        model: &P,
        tuned: &TunedTwice<P>,
        best: (String, Timed),
    ) -> Result<Timings, Error> {
        let (best_config, best) = best;
        let autotuned = &tuned.first.tuned;
        Ok(Timings {
            untuned: self.of(untuned)?,
            plan_config: (self.label)(model),
            plan: self.of(model)?,
            autotuned_config: autotuned.label.clone(),
            autotuned: self.of(&autotuned.plan)?,
            best_config,
            best,
            tuning: DecisionSummary::of(&tuned.decision),
            second_run_timed: tuned.second_run_timed,
        })
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
    fn distinct_and_time_of() {
        let same = |a: &u32, b: &u32| a % 10 == b % 10;
        let plans = distinct(&[1, 11, 2, 3, 12], same);
        assert_eq!(plans, vec![1, 2, 3]);
        let times: Vec<Timed> = [3.0, 1.0, 2.0]
            .iter()
            .map(|&ms| Timed::of(&[ms]).expect("a run"))
            .collect();
        assert_eq!(time_of(&plans, &times, &22, same), Some(times[1]));
        assert_eq!(time_of(&plans, &times, &4, same), None);
        let (_dir, store) = fresh_store().expect("a store");
        assert!(store.local_dir().is_some());
    }

    #[test]
    fn plan_times_name_the_untimed_and_the_fastest() {
        let plans = [1u32, 2, 3];
        let times: Vec<Timed> = [3.0, 1.0, 2.0]
            .iter()
            .map(|&ms| Timed::of(&[ms]).expect("a run"))
            .collect();
        let label = |p: &u32| format!("plan {p}");
        let timed = PlanTimes::new(&plans, &times, label, |a, b| a % 10 == b % 10);
        assert_eq!(timed.of(&13), Ok(times[2]));
        let e = timed.of(&4).expect_err("not timed");
        assert_eq!(e, Error::Autotune("plan 4 was not timed".into()));
        assert_eq!(timed.fastest_plan(&[1, 2, 13]), Ok(&2));
        assert_eq!(
            timed.fastest_plan(&[]),
            Err(Error::Autotune("no plan to compare".into()))
        );
        assert!(timed.fastest_plan(&[1, 5]).is_err());
    }

    #[test]
    fn plans_timed_again_read_the_median_of_each_call() {
        let mut calls = 0;
        // Plan 2 reads fastest in the first call only; its median over the calls is 2.5.
        let times = timed_again(
            &[1u32, 2],
            |p| format!("plan {p}"),
            |plans: &[u32]| {
                calls += 1;
                let ms = |p: u32| {
                    if p == 2 && calls == 1 {
                        1.0
                    } else {
                        0.5 + f64::from(p)
                    }
                };
                Ok::<_, Error>(
                    plans
                        .iter()
                        .map(|&p| Timed::of(&[ms(p)]).expect("a run"))
                        .collect(),
                )
            },
        )
        .expect("timed");
        assert_eq!(calls, CONFIRM_ROUNDS);
        assert_eq!(times[0].median_ms, 1.5);
        assert_eq!(times[1].median_ms, 2.5);
        assert_eq!(times[1].min_ms, 1.0);
        let short = timed_again(
            &[1u32, 2],
            |p| format!("plan {p}"),
            |_: &[u32]| Ok::<_, Error>(vec![Timed::of(&[1.0]).expect("a run")]),
        );
        assert_eq!(
            short,
            Err(Error::Autotune("plan 2: not timed again".into()))
        );
    }
}
