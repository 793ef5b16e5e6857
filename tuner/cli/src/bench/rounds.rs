//! Timing a row: every configuration in rounds, each timed by its best round, and the
//! autotuner's pick measured in the same rounds.

use super::autotuned::{self, Paired};
use super::sweep::{Measured, Row};
use super::RUNS;
use memtune::launch::{LaunchError, Timing};
use memtune::workload::{PlanOf, Workload};
use memtune_core::Profile;

/// A configuration's rounds as one measurement: the median and spread of its best round.
/// Rounds are taken in turn so that a passing disturbance falls on one round of several
/// configurations rather than on all of one: on an H100, zero-copy runs just after the
/// 8 GiB pinned buffer was filled took 4-7 ms for a while against 3.0 otherwise.
pub(super) fn measured(config: String, result: String, rounds: Vec<Timing>) -> Measured {
    let round_medians_ms: Vec<f64> = rounds.iter().map(Timing::median_ms).collect();
    let best = (0..rounds.len())
        .min_by(|&a, &b| round_medians_ms[a].total_cmp(&round_medians_ms[b]))
        .expect("a measured configuration has a round");
    Measured {
        config,
        median_ms: round_medians_ms[best],
        spread_ms: rounds[best].spread_ms(),
        runs_ms: rounds
            .iter()
            .flat_map(|t| t.runs_ms.iter().copied())
            .collect(),
        round_medians_ms,
        result,
    }
}

/// Measures the untuned and tuned configurations and the sweep, each label once a round,
/// in turn, for `rounds` rounds of [`RUNS`] runs, each configuration timed by its best
/// round (`measured`). A failing untuned or tuned version fails the row; a failing sweep
/// entry is skipped. A result that changes between rounds is kept as both, so that it
/// disagrees with the others.
#[allow(clippy::too_many_arguments)]
pub(super) fn row<C>(
    case: String,
    size: u64,
    untuned: C,
    tuned: C,
    sweep: Vec<C>,
    label: impl Fn(&C) -> String,
    rounds: usize,
    mut measure: impl FnMut(&C) -> Result<(String, Timing), LaunchError>,
) -> Result<Row, LaunchError> {
    let required = [label(&untuned), label(&tuned)];
    let mut configs: Vec<(String, &C)> = Vec::new();
    for c in [&untuned, &tuned].into_iter().chain(&sweep) {
        let name = label(c);
        if !configs.iter().any(|(n, _)| *n == name) {
            configs.push((name, c));
        }
    }
    let mut pooled: Vec<Option<(String, Vec<Timing>)>> = configs.iter().map(|_| None).collect();
    let mut skipped: Vec<String> = Vec::new();
    let mut failed = vec![false; configs.len()];
    for _ in 0..rounds {
        for (i, (name, c)) in configs.iter().enumerate() {
            if failed[i] {
                continue;
            }
            match (measure(c), &mut pooled[i]) {
                (Ok((result, t)), Some((first, p))) => {
                    if result != *first {
                        *first = format!("{first} (then {result})");
                    }
                    p.push(t);
                }
                (Ok((result, t)), slot) => *slot = Some((result, vec![t])),
                (Err(e), _) if required.contains(name) => return Err(e),
                (Err(e), slot) => {
                    skipped.push(format!("{name}: {e}"));
                    failed[i] = true;
                    *slot = None;
                }
            }
        }
    }
    let get = |name: &str| {
        let i = configs.iter().position(|(n, _)| n == name)?;
        let (result, t) = pooled[i].clone()?;
        Some(measured(name.to_string(), result, t))
    };
    let [u, t] =
        required.map(|n| get(&n).expect("a required version is measured or fails the row"));
    let swept = sweep.iter().filter_map(|c| get(&label(c))).collect();
    Ok(Row::new(case, size, u, t, swept, skipped))
}

/// Pairs of launches in a paired comparison ([`paired`]): at least `MIN_PAIRS`, then more
/// while the comparison's launches have taken under `PAIR_BUDGET_MS`, up to `MAX_PAIRS`.
/// The count depends on the launches' length only, never on the ratio so far, so the
/// median stays unbiased; four times the pairs halve its error where the launches are short
/// (zero-copy sampling, whose single launches wander 2-5%).
const MIN_PAIRS: usize = 6;
const MAX_PAIRS: usize = 24;
const PAIR_BUDGET_MS: f64 = 400.0;

/// `first` against `second` in back-to-back pairs of single launches ([`MIN_PAIRS`] to
/// [`MAX_PAIRS`]), every other pair in reverse order: the median of the per-pair ratios
/// first/second. A drift of the clock over seconds moves both launches of a pair alike,
/// so it moves this ratio far less than the ratio of medians taken in separate rounds
/// (zero-copy times wander 2-10% between rounds).
pub(super) fn paired<P>(
    (first, first_label): (&P, String),
    (second, second_label): (&P, String),
    mut time: impl FnMut(&P, usize, bool) -> Result<(String, Timing), LaunchError>,
) -> Result<Paired, LaunchError> {
    let mut once = |p: &P| -> Result<f64, LaunchError> {
        let (_, t) = time(p, 1, false)?;
        t.runs_ms
            .first()
            .copied()
            .ok_or_else(|| LaunchError::BadPlan("a launch gave no time".into()))
    };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let mut spent = 0.0;
    for k in 0..MAX_PAIRS {
        if k >= MIN_PAIRS && spent >= PAIR_BUDGET_MS {
            break;
        }
        let (x, y) = if k % 2 == 0 {
            let x = once(first)?;
            (x, once(second)?)
        } else {
            let y = once(second)?;
            (once(first)?, y)
        };
        spent += x + y;
        a.push(x);
        b.push(y);
    }
    let ratios: Vec<f64> = a.iter().zip(&b).map(|(x, y)| x / y).collect();
    let ratio = memtune_core::tune::session::quantile(&ratios, 0.5).unwrap_or(f64::NAN);
    Ok(Paired {
        first: first_label,
        second: second_label,
        first_ms: a,
        second_ms: b,
        ratio,
    })
}

/// A row of `case` with the autotuner's column: one untuned run gives the result every
/// candidate must match ([`Workload::check`]), the autotuner tunes on the bench's kernel
/// ([`autotuned::autotune`]), its pick joins the sweep (so it is measured in the same
/// rounds as the others), then the row of untuned, `planned` and the sweep.
pub(super) fn tuned_row<W: Workload>(
    case: &W::Case,
    planned: PlanOf<W>,
    (profile, uuid): (&Profile, &str),
    mut time: impl FnMut(&PlanOf<W>, usize, bool) -> Result<(String, Timing), LaunchError>,
) -> Result<Row, LaunchError> {
    let untuned = W::untuned(case);
    let mut candidates = W::sweep(case);
    let (expected, _) = time(&untuned, 1, true)?;
    // One key a case: its kernel variant (reads, work, radius) is in its name.
    let kernel = format!("memtune-bench-{}: {}", W::NAME, W::name(case));
    let tunable = W::tunable(case);
    let check = |got: &str| W::check(&expected, got);
    let auto = autotuned::autotune(profile, uuid, &kernel, &tunable, check, &mut time);
    if let Ok((plan, _)) = &auto {
        let known = [&untuned, &planned]
            .into_iter()
            .chain(&candidates)
            .any(|c| W::label(c) == W::label(plan));
        if !known {
            candidates.push(plan.clone());
        }
    }
    let planned_again = planned.clone();
    let mut r = row(
        W::name(case),
        W::size_bytes(case),
        untuned,
        planned,
        candidates,
        W::label,
        W::ROUNDS,
        |p| time(p, RUNS, true),
    )?;
    r.results_match = [&r.tuned]
        .into_iter()
        .chain(&r.sweep)
        .all(|m| W::check(&r.untuned.result, &m.result).is_ok());
    if let Some(bytes) = W::moved_bytes(case) {
        r.tuned_gb_per_s = Some(super::sweep::gb_per_s(bytes, r.tuned.median_ms));
    }
    // The untimed plan paired with untuned and with the best, as the autotuner's pick is
    // below; a pair that fails to launch leaves the rounds' ratios standing.
    r.paired_plan_untuned = compare::<W>(&planned_again, &W::untuned(case), true, &mut time);
    let best_plan = [W::untuned(case), planned_again.clone()]
        .into_iter()
        .chain(W::sweep(case))
        .chain(auto.as_ref().ok().map(|(p, _)| p.clone()))
        .find(|p| W::label(p) == r.best.config);
    if let Some(best) = best_plan {
        r.paired_plan_best = compare::<W>(&planned_again, &best, false, &mut time);
    }
    match auto {
        Ok((plan, mut a)) => match r.known(&W::label(&plan)) {
            Some((median, spread, result)) => match W::check(&expected, &result) {
                Ok(()) => {
                    a.config = W::label(&plan);
                    a.median_ms = median;
                    a.spread_ms = spread;
                    // A pair that fails to launch leaves the rounds' ratio standing.
                    let untuned = W::untuned(case);
                    a.paired_untuned = compare::<W>(&plan, &untuned, true, &mut time);
                    let best = [untuned, planned_again]
                        .into_iter()
                        .chain(W::sweep(case))
                        .find(|p| W::label(p) == r.best.config);
                    if let Some(best) = best {
                        a.paired_best = compare::<W>(&plan, &best, false, &mut time);
                    }
                    r.autotuned = Some(a);
                }
                Err(_) => {
                    r.autotune_error = Some(format!("its pick computed {result}, not {expected}"))
                }
            },
            None => r.autotune_error = Some("its pick could not run in the sweep".into()),
        },
        Err(e) => r.autotune_error = Some(e),
    }
    Ok(r)
}

/// [`paired`] of `plan` and `other` (`other` over `plan` when `other_first`, else `plan`
/// over `other`); `None` when they are one configuration or a launch failed.
fn compare<W: Workload>(
    plan: &PlanOf<W>,
    other: &PlanOf<W>,
    other_first: bool,
    time: impl FnMut(&PlanOf<W>, usize, bool) -> Result<(String, Timing), LaunchError>,
) -> Option<Paired> {
    if W::label(plan) == W::label(other) {
        return None;
    }
    let (a, b) = ((plan, W::label(plan)), (other, W::label(other)));
    let (first, second) = if other_first { (b, a) } else { (a, b) };
    paired(first, second, time).ok()
}
