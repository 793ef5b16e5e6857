//! Timing a row: every configuration in rounds, each timed by its best round, and the
//! autotuner's pick measured in the same rounds.

use super::autotuned;
use super::sweep::{Measured, Row};
use super::RUNS;
use memtune::launch::{LaunchError, Timing};
use memtune_core::tune::Tunable;
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

/// A row with the autotuner's column: one untuned run gives the result every candidate
/// must match, the autotuner tunes on the bench's kernel ([`autotuned::autotune`]), its
/// pick joins the sweep (so it is measured in the same rounds as the others), then the row.
#[allow(clippy::too_many_arguments)]
pub(super) fn tuned_row<W: Tunable>(
    (case, size): (String, u64),
    untuned: W::Plan,
    planned: W::Plan,
    mut candidates: Vec<W::Plan>,
    label: fn(&W::Plan) -> String,
    rounds: usize,
    (profile, uuid, workload): (&Profile, &str, &W),
    mut time: impl FnMut(&W::Plan, usize, bool) -> Result<(String, Timing), LaunchError>,
) -> Result<Row, LaunchError> {
    let (expected, _) = time(&untuned, 1, true)?;
    let kernel = format!("memtune-bench-{}", W::NAME);
    let auto = autotuned::autotune(profile, uuid, &kernel, workload, &expected, &mut time);
    if let Ok((plan, _)) = &auto {
        let known = [&untuned, &planned]
            .into_iter()
            .chain(&candidates)
            .any(|c| label(c) == label(plan));
        if !known {
            candidates.push(plan.clone());
        }
    }
    let mut r = row(
        case,
        size,
        untuned,
        planned,
        candidates,
        label,
        rounds,
        |p| time(p, RUNS, true),
    )?;
    match auto {
        Ok((plan, mut a)) => match r.known(&label(&plan)) {
            Some((median, spread, result)) if result == expected => {
                a.config = label(&plan);
                a.median_ms = median;
                a.spread_ms = spread;
                r.autotuned = Some(a);
            }
            Some((_, _, result)) => {
                r.autotune_error = Some(format!("its pick computed {result}, not {expected}"))
            }
            None => r.autotune_error = Some("its pick could not run in the sweep".into()),
        },
        Err(e) => r.autotune_error = Some(e),
    }
    Ok(r)
}
