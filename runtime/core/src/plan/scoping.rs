//! The decision shared by the scoping planners, sampling and grouping (docs/planners.md,
//! "Scoping"). Each planner says how it prices a plan over a scope; this module alone
//! decides from those prices: the cheapest split of each approach, taken only where it is
//! [`MIN_GAIN`]x faster than the simpler choice; then the TLB-reach bet for pinned memory
//! ([`super::reach_bet`]); and the small bet an untimed plan may take instead
//! ([`super::hedge`]).

use super::hedge::{self, Coarser, Hedge};
use super::passes::{self, Split, MIN_GAIN};
use super::reach_bet::{self, Bet, HostTranslation, TLB_REACH_RISK};
use super::translation::Translation;
use super::units::bytes;

/// A scoped plan: a split, run by one of the planner's approaches.
pub(crate) trait Candidate: Copy + 'static {
    /// The approaches a split may run with, simplest first: each must be predicted
    /// [`MIN_GAIN`]x faster than the choice the simpler ones left.
    const APPROACHES: &'static [fn(Split) -> Self];

    fn split(self) -> Split;

    /// The plan in the reasons' words ("4 passes of 16 MiB").
    fn name(self) -> String;

    /// How the reach bet's reason names the plan it weighs against (`None`: one pass).
    fn against(chosen: Option<Self>) -> String {
        chosen.map_or("one pass".to_string(), Self::name)
    }
}

impl Candidate for Split {
    const APPROACHES: &'static [fn(Split) -> Self] = &[|s| s];

    fn split(self) -> Split {
        self
    }

    fn name(self) -> String {
        format!("{} passes of {}", self.passes, bytes(self.scope_bytes))
    }
}

/// A plan's time (`None`: one pass) with an access over a scope priced by the function given.
type PlanTime<'a, C> = dyn Fn(&dyn Fn(u64) -> f64, Option<C>) -> f64 + 'a;

/// Prices a scoping planner puts on its plans, `None` being one pass.
pub(crate) struct Scoping<'a, C> {
    /// The memory the accesses land in: its granule, and its TLB levels for the reach bet.
    pub translation: &'a Translation<'a>,
    /// Bytes of the region or table the accesses spread over.
    pub total: u64,
    /// Whether `access` comes from a measured curve: only then are misses priced on top
    /// of it for the reach bet ([`HostTranslation::of`]).
    pub measured: bool,
    /// Seconds of one access over a scope of so many bytes.
    pub access: &'a dyn Fn(u64) -> f64,
    /// Priced with `access`, a plan's predicted time; with misses on top, the reach bet's.
    pub time: &'a PlanTime<'a, C>,
    /// A plan's time were its scopes to gain nothing and its draws or skips to cost
    /// [`hedge::WORST_DRAW_FACTOR`]x: the hedge's worst case.
    pub worst: &'a dyn Fn(Option<C>) -> f64,
    /// A plan's predicted time were the kernel to spend more per item and pass than
    /// memtune's (grouping: [`hedge::KERNEL_WORK_PER_PASS`] a key); `None` where passes
    /// cost every kernel alike. Untimed plans take the split this prices cheapest where it
    /// has fewer passes than the model's pick ([`Decision::coarser`]).
    pub heavy: Option<&'a dyn Fn(Option<C>) -> f64>,
}

/// What the margin rule saw, for the planner's own reasons.
pub(crate) struct Margin<C> {
    pub one_pass: f64,
    /// The cheapest split of each approach and its time, in [`Candidate::APPROACHES`] order.
    pub best: Vec<(C, f64)>,
    /// The plan the rule chose; `None`: one pass.
    pub chosen: Option<C>,
}

pub(crate) struct Decision<C> {
    /// The plan to run; `None`: one pass.
    pub chosen: Option<C>,
    /// Predicted time of one pass over the chosen plan's; 1 for one pass.
    pub speedup: f64,
    /// The small bet an untimed plan may take instead of the chosen one, where that is
    /// scoped (one pass is never a bet).
    pub hedge: Option<Hedge<C>>,
    /// The split of fewer passes than the chosen one that [`Scoping::heavy`] prices
    /// cheapest, and how much slower the chosen one runs under that pricing.
    pub coarser: Option<Coarser<C>>,
}

impl<C: Candidate> Scoping<'_, C> {
    /// The plan to run, with its reasons pushed on `reasons`; `explain` adds the planner's
    /// account of the margin rule before the reach bet's. `None` when the whole fits in one
    /// granule, so that there is no split.
    pub(crate) fn decide(
        &self,
        reasons: &mut Vec<String>,
        explain: impl FnOnce(&Margin<C>, &mut Vec<String>),
    ) -> Option<Decision<C>> {
        let (total, time, access) = (self.total, self.time, self.access);
        let granule = self.translation.granule(total);
        let splits = passes::splits(total, granule);
        let one_pass = time(access, None);
        // At a count of passes the hedge tries the most involved approach first (grouping's
        // copy, whose later passes read its device buffer, before naive).
        let hedge = hedge::find(
            splits
                .iter()
                .flat_map(|&s| C::APPROACHES.iter().rev().map(move |a| a(s))),
            one_pass,
            |c| time(access, Some(c)),
            (self.worst)(None),
            |c| (self.worst)(Some(c)),
        );
        let best = C::APPROACHES
            .iter()
            .map(|a| {
                let (s, t) = passes::cheapest(total, granule, |s| time(access, Some(a(s))))?;
                Some((a(s), t))
            })
            .collect::<Option<Vec<_>>>()?;
        let mut choice = (None, one_pass);
        for &(c, t) in &best {
            // A more involved plan must beat the simpler choice by the margin.
            if choice.1 / t >= MIN_GAIN {
                choice = (Some(c), t);
            }
        }
        let margin = Margin {
            one_pass,
            best,
            chosen: choice.0,
        };
        explain(&margin, reasons);
        let chosen = self.reach_bet(margin.chosen, &splits, reasons);
        let coarser = self
            .heavy
            .zip(chosen)
            .and_then(|(heavy, after)| self.robust(&splits, heavy, after));
        Some(Decision {
            chosen,
            speedup: chosen.map_or(1.0, |c| one_pass / time(access, Some(c))),
            hedge: hedge.filter(|_| chosen.is_some()),
            coarser,
        })
    }

    /// The split with the least regret over two kernels, memtune's (`time`) and one with
    /// more work per pass (`heavy`): the least of its time over each kernel's best split,
    /// whichever is worse. A [`Coarser`] plan where it has fewer passes than `chosen`.
    fn robust(
        &self,
        splits: &[Split],
        heavy: &dyn Fn(Option<C>) -> f64,
        chosen: C,
    ) -> Option<Coarser<C>> {
        let (time, access) = (self.time, self.access);
        let priced: Vec<(C, f64, f64)> = splits
            .iter()
            .flat_map(|&s| C::APPROACHES.iter().map(move |a| a(s)))
            .map(|c| (c, time(access, Some(c)), heavy(Some(c))))
            .filter(|(_, t, h)| t.is_finite() && h.is_finite())
            .collect();
        let light_best = priced.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
        let heavy_best = priced.iter().map(|p| p.2).fold(f64::INFINITY, f64::min);
        let regret = |p: &(C, f64, f64)| (p.1 / light_best).max(p.2 / heavy_best);
        let best = priced
            .iter()
            .min_by(|a, b| regret(a).total_cmp(&regret(b)))?;
        (best.0.split().passes < chosen.split().passes).then(|| Coarser {
            choice: best.0,
            risk: heavy(Some(chosen)) / best.2 - 1.0,
        })
    }

    /// The TLB-reach bet on `chosen`, where its scope overflows a TLB level of pinned
    /// memory: the plan it takes, and its reason.
    fn reach_bet(
        &self,
        chosen: Option<C>,
        splits: &[Split],
        reasons: &mut Vec<String>,
    ) -> Option<C> {
        let scope = chosen.map_or(self.total, |c| c.split().scope_bytes);
        let host = HostTranslation::of(self.translation, self.measured);
        let Some((host, reach)) = host.and_then(|h| {
            let reach = h.fastest_overflowed(scope)?;
            Some((h, reach))
        }) else {
            return chosen;
        };
        let (time, access) = (self.time, self.access);
        // Translation alone: every access priced as one over the chosen scope, times its
        // misses. The curve's own differences between scopes are its allocation's (an
        // H200's read 128 MiB 3% slower than 256 MiB, where one pass ran 6% slower than
        // two).
        let unsaved = |_: u64| access(scope);
        let translated = |s: u64| access(scope) * host.factor(s);
        let within = reach_bet::candidates(splits, reach, chosen.is_none())
            .into_iter()
            .flat_map(|s| C::APPROACHES.iter().map(move |a| Some(a(s))));
        let bet = reach_bet::weigh(
            chosen,
            within,
            |p| time(&unsaved, p),
            |p| time(&translated, p),
        );
        let Some(
            bet @ Bet {
                candidate: Some(c), ..
            },
        ) = bet
        else {
            return chosen;
        };
        let s = c.split();
        reasons.push(format!(
            "{}; {} ({} the reach of the fastest TLB level, {}): predicted {:.3}x faster than {}, and {:.3}x slower if the misses they avoid cost nothing ({}: taken when the gain outweighs that, and that is at most {TLB_REACH_RISK}x)",
            host.describe(scope),
            c.name(),
            if s.scope_bytes <= reach { "within" } else { "over" },
            bytes(reach),
            bet.gain,
            C::against(chosen),
            bet.at_worst,
            if bet.taken() { "taken" } else { "not taken" },
        ));
        if bet.taken() {
            Some(c)
        } else {
            chosen
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{MemoryKind, Profile};
    use std::path::Path;

    const MIB: u64 = 1 << 20;

    /// An H200 whose first pinned TLB level reaches 24-60 MiB.
    fn h200() -> Profile {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/h200/GPU-e7a919e5-af96-f04b-bf90-0f50e59d1451.json");
        crate::store::load_path(&path).expect("the fixture loads")
    }

    /// Two approaches, 0 simpler than 1.
    type Two = (u8, Split);

    impl Candidate for Two {
        const APPROACHES: &'static [fn(Split) -> Self] = &[|s| (0, s), |s| (1, s)];

        fn split(self) -> Split {
            self.1
        }

        fn name(self) -> String {
            format!("approach {} in {} passes", self.0, self.1.passes)
        }
    }

    /// The decision where one pass takes 1 and two passes take `1 / gains[a]` for approach
    /// `a`; more passes take 2. Device memory: no reach bet.
    fn decide_two(gains: [f64; 2]) -> Decision<Two> {
        let profile = h200();
        let translation = Translation::of(&profile, MemoryKind::Device);
        let time = |_: &dyn Fn(u64) -> f64, plan: Option<Two>| match plan {
            None => 1.0,
            Some((a, s)) if s.passes == 2 => 1.0 / gains[usize::from(a)],
            Some(_) => 2.0,
        };
        let scoping = Scoping {
            translation: &translation,
            total: 1 << 30,
            measured: true,
            access: &|_| 1.0,
            time: &time,
            worst: &|_| 1.0,
            heavy: None,
        };
        scoping
            .decide(&mut vec![], |m, _| assert_eq!(m.best.len(), 2))
            .expect("1 GiB splits")
    }

    #[test]
    fn a_more_involved_plan_must_beat_the_simpler_choice_by_the_margin() {
        // Approach 0 gains 1.06x over one pass; approach 1 only 1.10 / 1.06 = 1.038x more.
        let d = decide_two([1.06, 1.10]);
        assert_eq!(d.chosen.map(|(a, s)| (a, s.passes)), Some((0, 2)));
        assert!((d.speedup - 1.06).abs() < 1e-12);
        // The hedge tries the more involved approach first at a count of passes.
        assert_eq!(d.hedge.map(|h| h.choice.0), Some(1));
        // Under the margin over one pass, the next approach is weighed against one pass.
        let d = decide_two([1.04, 1.10]);
        assert_eq!(d.chosen.map(|(a, _)| a), Some(1));
        // Nothing 1.05x faster: one pass, and no hedge for it.
        let d = decide_two([1.04, 1.049]);
        assert!(d.chosen.is_none() && d.hedge.is_none());
        assert_eq!(d.speedup, 1.0);
    }

    /// Sampling-like pinned plans over 256 MiB on a flat curve, each pass costing
    /// `overhead` times an access; the decision and its reasons.
    fn reach_bet(overhead: f64, measured: bool) -> (Option<Split>, Vec<String>) {
        let profile = h200();
        let translation = Translation::of(&profile, MemoryKind::Pinned);
        let total = 256 * MIB;
        let time = |read: &dyn Fn(u64) -> f64, plan: Option<Split>| {
            let (scope, passes) = plan.map_or((total, 1), |s| (s.scope_bytes, s.passes));
            read(scope) + f64::from(passes) * overhead
        };
        let scoping = Scoping {
            translation: &translation,
            total,
            measured,
            access: &|_| 1.0,
            time: &time,
            worst: &|_| 1.0,
            heavy: None,
        };
        let mut reasons = vec![];
        let d = scoping.decide(&mut reasons, |m, _| assert!(m.chosen.is_none()));
        (d.expect("256 MiB splits").chosen, reasons)
    }

    #[test]
    fn the_reach_bet_is_taken_only_when_its_gain_outweighs_its_worst_case() {
        // Passes all but free: the split that avoids the most misses is taken.
        let (chosen, reasons) = reach_bet(1e-6, true);
        let split = chosen.expect("the bet is taken");
        assert!(split.scope_bytes < 256 * MIB);
        assert!(
            reasons.iter().any(|r| r.contains(": taken when")),
            "{reasons:?}"
        );
        // Two passes 4.8% slower if the misses cost nothing: over TLB_REACH_RISK.
        let (chosen, reasons) = reach_bet(0.05, true);
        assert_eq!(chosen, None);
        assert!(
            reasons.iter().any(|r| r.contains("not taken")),
            "{reasons:?}"
        );
        // A cost not from a measured curve: no bet at all.
        let (chosen, reasons) = reach_bet(1e-6, false);
        assert_eq!(chosen, None);
        assert!(reasons.is_empty(), "{reasons:?}");
    }
}
