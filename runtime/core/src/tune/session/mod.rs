//! The tuning loop, with the clock abstracted: `time(i)` launches candidate `i` once and
//! returns its milliseconds (the GPU implementation brackets the user's launch with CUDA
//! events; tests pass a fake). Candidates come safest first (untuned, model, neighbours).
//!
//! - Round 0 warms every candidate up once (module loads, first touches); its time only
//!   counts toward the cost. A launch that fails drops its candidate, error kept. The
//!   launches go in [`Trials::first_order`] (cheapest expected first), and a candidate
//!   that [`Trials::ruled_out`] says cannot win from the launches so far is never launched:
//!   a kernel whose passes are costly does not pay for the many-pass candidates. Before a
//!   candidate is ruled out, those known by their warm-up alone run once more, back to
//!   back, and the rule is asked again of those latest launches (a disturbance that slows
//!   one launch 2x does not rule out a candidate). A candidate whose warm-up took over
//!   [`Budget::warmup_loser`]× the fastest warm-up is dropped (never the untuned one).
//! - Timed rounds then go round robin, every other round in reverse, so drift hits every
//!   candidate alike. After round 1 a
//!   candidate over [`Budget::clear_loser`]× the leader's median is dropped; after round 2
//!   one whose fastest run is over [`Budget::drop_ratio`]× the leader's median.
//! - Whenever every live candidate has [`Budget::min_samples`] runs, [`Trials::refine`] may
//!   add a candidate (a pass count between the fastest and its neighbours), when the budget
//!   has room for its warm-up and [`Budget::min_samples`] runs; it is warmed up and joins
//!   the rounds.
//! - Once a candidate has [`Budget::min_samples`] runs, it is launched again only while the
//!   total time stays within [`Budget::max_cost`] launches of the untuned kernel (its
//!   fastest launch so far), the runs still owed kept aside: a late candidate's first runs,
//!   and the untuned kernel's until it shares two rounds with the leader; at most
//!   [`Budget::max_samples`] rounds. (Four candidates as fast as untuned and a refinement
//!   cost 5 warm-ups and 2 runs of each before the budget applies: 15 launches.)
//! - The fastest p20 wins (its fastest run up to three runs, then its second: a disturbance
//!   only slows runs), unless a safer candidate is within the noise of it (gap under
//!   1%, or under 2% with overlapping p20..p80, and not a gain over 0.5% that the rounds
//!   they shared agree on more closely than that; the untuned kernel is kept unless the pick
//!   or any other candidate ran over 2% faster paired round by round, or over 0.5% with
//!   the rounds agreeing more closely than that, or, without rounds shared with the pick,
//!   beyond the wander its runs and the pick's show, up to 5%): then the safer one is
//!   kept, so that the choice does not flip between runs and never trades the untuned
//!   kernel for noise.

mod choice;
mod stats;

use choice::{choose, fastest};
pub use stats::{quantile, Stats};

/// A candidate's next run is budgeted at this many times its slowest so far: zero-copy
/// runs wander 2-5%, and a run may be slower than any before it (docs/calibration.md).
const NEXT_RUN: f64 = 1.05;

/// Limits of one tuning session.
#[derive(Debug, Clone, PartialEq)]
pub struct Budget {
    /// Total time, warm-ups included, in launches of the untuned kernel.
    pub max_cost: f64,
    pub min_samples: usize,
    pub max_samples: usize,
    /// After the warm-ups: dropped when its warm-up took over this many times the fastest
    /// warm-up (the untuned kernel never is).
    pub warmup_loser: f64,
    /// After one timed round: dropped when over this many times the leader's median.
    pub clear_loser: f64,
    /// After two: dropped when its fastest run is over this many times the leader's median.
    pub drop_ratio: f64,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            max_cost: 20.0,
            min_samples: 2,
            max_samples: 7,
            warmup_loser: 2.5,
            clear_loser: 1.5,
            drop_ratio: 1.1,
        }
    }
}

/// What a session times: `time(i)` launches candidate `i` once and returns its
/// milliseconds; `refine` may append a candidate once every live one has its samples, and
/// says whether it did. A closure is a `Trials` that never refines.
pub trait Trials {
    fn time(&mut self, i: usize) -> Result<f64, String>;
    fn refine(&mut self, _stats: &[Stats]) -> bool {
        false
    }
    /// The order of the first `n` launches; cheaper candidates first let
    /// [`Trials::ruled_out`] spare the costly ones. Anything but an order of `0..n` is
    /// taken as `0..n`.
    fn first_order(&self, n: usize) -> Vec<usize> {
        (0..n).collect()
    }
    /// Why candidate `i` need not be launched, from the launches so far (`stats`); never
    /// asked of the untuned candidate 0.
    fn ruled_out(&self, _i: usize, _stats: &[Stats]) -> Option<String> {
        None
    }
}

impl<F: FnMut(usize) -> Result<f64, String>> Trials for F {
    fn time(&mut self, i: usize) -> Result<f64, String> {
        self(i)
    }
}

/// What a session found.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Index of the chosen candidate (0, the untuned one, when every candidate failed).
    pub chosen: usize,
    pub why: String,
    pub stats: Vec<Stats>,
    /// Every launch's milliseconds added up, warm-ups included.
    pub tuning_ms: f64,
    pub launches: u32,
    /// `tuning_ms` in launches of the untuned kernel (its median), when it ran.
    pub cost_in_untuned: Option<f64>,
    pub all_failed: bool,
}

/// Tunes `n` candidates (safest first), `time(i)` launching candidate `i` once; see the
/// module doc for the rules.
pub fn run(n: usize, budget: &Budget, time: impl FnMut(usize) -> Result<f64, String>) -> Outcome {
    run_trials(n, budget, time)
}

/// [`run`] with [`Trials`] that may add candidates as the timings come in.
pub fn run_trials(n: usize, budget: &Budget, mut trials: impl Trials) -> Outcome {
    let mut stats = vec![Stats::default(); n];
    let mut spent = 0.0;
    let mut launches = 0u32;
    let mut launch =
        |trials: &mut dyn Trials, i: usize, stats: &mut Vec<Stats>, spent: &mut f64| {
            launches += 1;
            match trials.time(i) {
                Ok(ms) if ms.is_finite() && ms >= 0.0 => {
                    *spent += ms;
                    Some(ms)
                }
                Ok(ms) => {
                    fail(&mut stats[i], format!("timer returned {ms} ms"));
                    None
                }
                Err(e) => {
                    fail(&mut stats[i], e);
                    None
                }
            }
        };

    let mut order = trials.first_order(n);
    let mut sorted = order.clone();
    sorted.sort_unstable();
    if !sorted.iter().copied().eq(0..n) {
        order = (0..n).collect();
    }
    for i in order {
        if i > 0 && trials.ruled_out(i, &stats).is_some() {
            // The rule read single launches, which a disturbance of zero-copy memory can
            // slow 2x for a few launches: every candidate known by its warm-up alone runs
            // once more, back to back, and the rule reads those latest launches.
            let single: Vec<usize> = (0..stats.len())
                .filter(|&j| stats[j].alive() && stats[j].runs_ms.is_empty())
                .filter(|&j| stats[j].warmup_ms.is_some())
                .collect();
            for j in single {
                if let Some(ms) = launch(&mut trials, j, &mut stats, &mut spent) {
                    stats[j].record(ms, 0);
                }
            }
            if let Some(why) = trials.ruled_out(i, &stats) {
                stats[i].dropped = Some(why);
                continue;
            }
        }
        stats[i].warmup_ms = launch(&mut trials, i, &mut stats, &mut spent);
    }
    drop_slow_warmups(&mut stats, budget);
    for round in 1..=budget.max_samples.max(1) {
        // Every other round in reverse, so that no candidate always runs first (after the
        // warm-ups, or after another's launches).
        let n_now = stats.len();
        let order: Vec<usize> = if round % 2 == 0 {
            (0..n_now).rev().collect()
        } else {
            (0..n_now).collect()
        };
        for i in order {
            if !stats[i].alive() {
                continue;
            }
            if stats[i].runs_ms.len() >= budget.min_samples {
                // The slowest run seen so far, with a margin (a launch may take longer than
                // its median, and than its slowest yet), and the runs still owed to a
                // candidate added late.
                let untuned = reference_ms(&stats);
                let next = NEXT_RUN * stats[i].runs_ms.iter().copied().fold(0.0, f64::max);
                let owed = owed_ms(&stats, budget.min_samples)
                    + if i == 0 { 0.0 } else { untuned_owed_ms(&stats) };
                if untuned.is_some_and(|u| spent + next + owed > budget.max_cost * u) {
                    continue;
                }
            }
            if let Some(ms) = launch(&mut trials, i, &mut stats, &mut spent) {
                stats[i].record(ms, round as u32);
            }
        }
        let Some(leader) = leader_median(&stats) else {
            break;
        };
        drop_losers(&mut stats, leader, budget);
        // Once every live candidate has its samples: room for a warm-up and min_samples
        // runs of a candidate near the leader.
        let sampled = |stats: &[Stats]| {
            stats
                .iter()
                .all(|s| !s.alive() || s.runs_ms.len() >= budget.min_samples)
        };
        let room = reference_ms(&stats).is_some_and(|u| {
            spent + (budget.min_samples + 1) as f64 * 1.25 * leader <= budget.max_cost * u
        });
        if sampled(&stats) && room && trials.refine(&stats) {
            let i = stats.len();
            stats.push(Stats::default());
            match trials.ruled_out(i, &stats) {
                Some(why) => stats[i].dropped = Some(why),
                None => stats[i].warmup_ms = launch(&mut trials, i, &mut stats, &mut spent),
            }
        }
        let alive = stats.iter().filter(|s| s.alive()).count();
        let cost = reference_ms(&stats).map(|u| spent / u);
        if round >= budget.min_samples
            && sampled(&stats)
            && (alive <= 1 || cost.is_some_and(|c| c >= budget.max_cost) || separated(&stats))
        {
            break;
        }
    }

    let (chosen, why, all_failed) = choose(&stats);
    Outcome {
        chosen,
        why,
        cost_in_untuned: stats[..n.min(1)]
            .first()
            .and_then(Stats::median_ms)
            .filter(|&u| u > 0.0)
            .map(|u| spent / u),
        stats,
        tuning_ms: spent,
        launches,
        all_failed,
    }
}

/// Milliseconds of the runs live candidates still need to reach `min_samples`, each at its
/// slowest launch so far (its warm-up before it has runs).
fn owed_ms(stats: &[Stats], min_samples: usize) -> f64 {
    stats
        .iter()
        .filter(|s| s.alive() && s.runs_ms.len() < min_samples)
        .map(|s| {
            let slowest = s
                .runs_ms
                .iter()
                .copied()
                .chain(s.warmup_ms)
                .fold(0.0, f64::max);
            (min_samples - s.runs_ms.len()) as f64 * slowest
        })
        .sum()
}

/// The runs the untuned kernel still needs to be weighed against the leader round by
/// round ([`paired_gain`] reads two shared rounds), each at its slowest launch so far:
/// reserved before other candidates' extra runs, so that a leader added late is not left
/// to the wander rule.
fn untuned_owed_ms(stats: &[Stats]) -> f64 {
    let Some((lead, _)) = fastest(stats) else {
        return 0.0;
    };
    let untuned = &stats[0];
    if lead == 0 || !untuned.alive() {
        return 0.0;
    }
    let shared = untuned
        .rounds
        .iter()
        .filter(|&&r| r > 0 && stats[lead].rounds.contains(&r))
        .count();
    let slowest = untuned.runs_ms.iter().copied().fold(0.0, f64::max);
    2usize.saturating_sub(shared) as f64 * slowest
}

/// Drops the candidates (the untuned kernel aside) whose warm-up took over
/// [`Budget::warmup_loser`]x the fastest warm-up: a disturbance slows a launch 2x at most,
/// and their timed runs would cost the rounds that weigh the others.
fn drop_slow_warmups(stats: &mut [Stats], budget: &Budget) {
    let alive = |s: &&mut Stats| s.alive() && s.runs_ms.is_empty();
    let Some(fastest) = stats
        .iter()
        .filter(|s| s.alive())
        .filter_map(|s| s.warmup_ms)
        .reduce(f64::min)
    else {
        return;
    };
    for s in stats.iter_mut().skip(1).filter(alive) {
        if s.warmup_ms
            .is_some_and(|w| w > budget.warmup_loser * fastest)
        {
            s.dropped = Some(format!(
                "warm-up over {}x the fastest warm-up",
                budget.warmup_loser
            ));
        }
    }
}

/// After one run a candidate over [`Budget::clear_loser`]x the leader is dropped; after
/// two, one whose fastest run is over [`Budget::drop_ratio`]x the leader's median.
fn drop_losers(stats: &mut [Stats], leader: f64, budget: &Budget) {
    for s in stats.iter_mut().filter(|s| s.alive()) {
        let fastest = s.fastest_ms().unwrap_or(f64::INFINITY);
        let runs = s.runs_ms.len();
        if runs == 1 && fastest > budget.clear_loser * leader {
            s.dropped = Some(format!(
                "over {}x the leader after one run",
                budget.clear_loser
            ));
        } else if runs >= 2 && fastest > budget.drop_ratio * leader {
            s.dropped = Some(format!(
                "fastest run over {}x the leader's median",
                budget.drop_ratio
            ));
        }
    }
}

fn fail(s: &mut Stats, error: String) {
    s.dropped = Some("its launch failed".into());
    s.error = Some(error);
}

/// The unit of the budget: the untuned kernel's fastest launch so far (the cost is reported
/// against its median, which its later runs may lower), else the leader's median.
fn reference_ms(stats: &[Stats]) -> Option<f64> {
    stats
        .first()
        .and_then(|s| {
            s.runs_ms
                .iter()
                .copied()
                .chain(s.warmup_ms)
                .reduce(f64::min)
        })
        .or_else(|| leader_median(stats))
        .filter(|&m| m > 0.0)
}

fn leader_median(stats: &[Stats]) -> Option<f64> {
    stats
        .iter()
        .filter(|s| s.alive())
        .filter_map(Stats::median_ms)
        .reduce(f64::min)
}

/// Runs a live candidate needs before [`separated`] may end the session on it: two slow
/// first runs of a candidate added late are not yet its speed.
const SEPARATED_RUNS: usize = 3;

/// True when the leader's p80 is under every other live candidate's p20, each of those
/// known by [`SEPARATED_RUNS`] runs.
fn separated(stats: &[Stats]) -> bool {
    let Some((lead, _)) = fastest(stats) else {
        return false;
    };
    let p80 = stats[lead].p80_ms().unwrap_or(f64::INFINITY);
    stats
        .iter()
        .enumerate()
        .filter(|(i, s)| *i != lead && s.alive())
        .all(|(_, s)| s.runs_ms.len() >= SEPARATED_RUNS && s.p20_ms().is_some_and(|p20| p80 < p20))
}

#[cfg(test)]
mod tests;
