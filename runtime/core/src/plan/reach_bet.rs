//! The TLB-reach bet for zero-copy memory (docs/planners.md): split further for the
//! translation misses the curve cannot see, where that costs little even if the misses it
//! avoids cost nothing. A plan of one pass may take any split; a plan the curve already
//! split, only one within the reach of the fastest TLB level its scope overflows.
//!
//! The GPU translates mapped host memory through page tables of the allocation's own
//! layout. On most of ten H200s, one unscoped pass over 64-256 MiB of it ran 5-17% slower
//! in the benchmark than within 16-32 MiB scopes, varying by machine, while the probe's
//! curve, measured on its own allocation, showed no fall there. So the curve does not carry
//! translation over to another allocation; for the bet, each TLB level's misses add their
//! penalty to a read's base latency, as a share of it.

use super::passes::Split;
use super::read_cost::ReadCost;
use super::translation::Translation;
use crate::profile::{MemoryKind, TlbKind};

/// The bet is taken when, even if the misses it avoids cost nothing, it is at most this
/// many times slower than the plan it replaces, and its predicted gain outweighs that
/// loss. The latency model prices misses low (seed 000 §2.3: 4.3x measured where latencies
/// add to 1.4x); where passes are nearly free (a zero-copy read costs about 500 draws) the
/// bet is cheap.
pub(crate) const TLB_REACH_RISK: f64 = 1.02;

/// Translation misses of mapped host memory, priced on top of its measured curve.
pub(crate) struct HostTranslation<'a> {
    tlb: &'a TlbKind,
    /// The latency model with a hit costing 1: a read's cost relative to a hit.
    latency: ReadCost,
}

impl<'a> HostTranslation<'a> {
    /// For pinned memory priced by a measured curve (`measured`), with TLB levels; `None`
    /// otherwise (device memory's pages are the driver's, which the curve captures).
    pub(crate) fn of(translation: &Translation<'a>, measured: bool) -> Option<HostTranslation<'a>> {
        if translation.kind != MemoryKind::Pinned || !measured {
            return None;
        }
        let tlb = translation.tlb?;
        let latency = ReadCost::from_tlb(tlb, 1.0)?;
        Some(HostTranslation { tlb, latency })
    }

    /// The reach of the fastest TLB level that `size` bytes overflow.
    pub(crate) fn fastest_overflowed(&self, size: u64) -> Option<u64> {
        let reaches = self.tlb.levels.iter().map(|l| l.reach_bytes);
        reaches.filter(|&r| r < size).min()
    }

    /// How many times a hit an access over `scope` bytes costs.
    pub(crate) fn factor(&self, scope: u64) -> f64 {
        self.latency.seconds(scope)
    }

    pub(crate) fn describe(&self, size: u64) -> String {
        format!(
            "mapped host pages translate as each allocation lays them out, which the probe's curve cannot carry over: TLB misses priced on top of it, {:.1}% over {}",
            100.0 * (self.factor(size) - 1.0),
            super::units::bytes(size)
        )
    }
}

/// The best of the plans `within` the reach, weighed against the `chosen` plan.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bet<C> {
    pub candidate: C,
    /// The chosen plan's time over the candidate's, misses priced on top of the curve.
    pub gain: f64,
    /// The candidate's time over the chosen plan's if its smaller scope saved nothing.
    pub at_worst: f64,
}

impl<C> Bet<C> {
    pub(crate) fn taken(&self) -> bool {
        self.gain > self.at_worst && self.at_worst <= TLB_REACH_RISK
    }
}

/// The splits the bet weighs against a plan whose scope overflows a TLB level of reach
/// `reach`: any of `splits` when the plan is one pass (`one_pass`), else those
/// within the reach. Behind a split the curve chose (past its knee), weighing every
/// split moved 512 MiB-1 GiB sampling plans on five recorded H200s to 9-22 passes of
/// 23-57 MiB, where the sweeps' nearest splits ran up to 1.06x the best.
pub(crate) fn candidates(splits: &[Split], reach: u64, one_pass: bool) -> Vec<Split> {
    let within = |s: &&Split| one_pass || s.scope_bytes <= reach;
    splits.iter().filter(within).copied().collect()
}

/// Of the plans `within` reach of the bet, the one of least `translated` time (the first
/// on a tie) among those at most `TLB_REACH_RISK` slower at worst, or among all when none
/// is, and how it weighs against `chosen`; `None` when there is none. `translated` prices a
/// plan with the misses priced on top of the curve; `unsaved` as if every access cost what
/// one over the chosen plan's scope does (a smaller scope saving nothing).
pub(crate) fn weigh<C: Copy>(
    chosen: C,
    within: impl IntoIterator<Item = C>,
    unsaved: impl Fn(C) -> f64,
    translated: impl Fn(C) -> f64,
) -> Option<Bet<C>> {
    let (base, chosen_time) = (unsaved(chosen), translated(chosen));
    let bets: Vec<(Bet<C>, f64)> = within
        .into_iter()
        .map(|c| {
            let time = translated(c);
            let bet = Bet {
                candidate: c,
                gain: chosen_time / time,
                at_worst: unsaved(c) / base,
            };
            (bet, time)
        })
        .collect();
    let safe = bets.iter().any(|(b, _)| b.at_worst <= TLB_REACH_RISK);
    bets.into_iter()
        .filter(|(b, _)| !safe || b.at_worst <= TLB_REACH_RISK)
        .fold(None, |best, (b, t)| match best {
            Some((_, bt)) if bt <= t => best,
            _ => Some((b, t)),
        })
        .map(|(b, _)| b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bet_is_taken_when_its_gain_outweighs_its_worst_case() {
        // Plans 0 (chosen), 1 and 2; 2 is the cheapest with misses priced.
        let unsaved = |c: u32| [1.0, 1.01, 1.015][c as usize];
        let translated = |c: u32| [1.10, 1.05, 1.02][c as usize];
        let bet = weigh(0, [1, 2], unsaved, translated).unwrap();
        assert_eq!(bet.candidate, 2);
        assert!((bet.gain - 1.10 / 1.02).abs() < 1e-12);
        assert!((bet.at_worst - 1.015).abs() < 1e-12);
        assert!(bet.taken());
        // Too costly if the misses cost nothing.
        let bet = weigh(0, [2], |c| [1.0, 0.0, 1.03][c as usize], translated).unwrap();
        assert!(!bet.taken());
        // A gain that does not outweigh the worst case.
        let bet = weigh(0, [1], unsaved, |c| [1.0, 0.995][c as usize]).unwrap();
        assert!(!bet.taken());
        assert!(weigh(0, [], unsaved, translated).is_none());
        // The fastest plan too costly at worst: the fastest of those that are not.
        let unsaved = |c: u32| [1.0, 1.01, 1.03][c as usize];
        let bet = weigh(0, [1, 2], unsaved, translated).unwrap();
        assert_eq!(bet.candidate, 1);
        assert!(bet.taken());
    }
}
