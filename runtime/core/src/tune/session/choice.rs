//! The decision of a session: the fastest candidate by p20, unless a safer one is within
//! the noise of it ([`tie`]); the untuned kernel weighed round by round ([`keeps_untuned`]).

use super::Stats;

/// The candidate of the least p20 and that time. A disturbance only slows a run (zero-copy
/// memory has runs 2x slow for a few launches at a time), so the decision reads each
/// candidate's faster runs: its p20 is its fastest run up to 3 runs, then its second.
pub(super) fn fastest(stats: &[Stats]) -> Option<(usize, f64)> {
    stats
        .iter()
        .enumerate()
        .filter(|(_, s)| s.error.is_none())
        .filter_map(|(i, s)| Some((i, s.p20_ms()?)))
        .fold(None, |best, (i, m)| match best {
            Some((_, b)) if b <= m => best,
            _ => Some((i, m)),
        })
}

/// Within the noise: a gap of p20s under 1%, or under 2% where the safer one's p20 reaches
/// the faster one's p80.
pub(super) fn tie(fast: &Stats, safe: &Stats) -> bool {
    let (Some(f), Some(s)) = (fast.p20_ms(), safe.p20_ms()) else {
        return false;
    };
    let gap = s - f;
    gap <= 0.01 * f || (gap <= 0.02 * f && safe.p20_ms().unwrap_or(s) <= fast.p80_ms().unwrap_or(f))
}

/// The most a wandering clock may take from the untuned kernel: see [`keeps_untuned`].
const WANDER_CAP: f64 = 0.05;
/// A paired gain over the untuned kernel this small never trades it: the pick is then
/// within the bench's 1.02 of the untuned kernel whichever is kept.
const PAIRED_FLOOR: f64 = 0.005;
/// A paired gain over the untuned kernel this large always trades it; between
/// [`PAIRED_FLOOR`] and this, it trades only when the rounds' ratios agree more closely
/// than the gain (the spread of the ratios, an outer one left out from four rounds on, is
/// under the gain). A pick taken on a steady 1% gain would have to drift by 3% between
/// tuning and use to lose 2% to the untuned kernel; a kept untuned kernel costs at most 2%.
const PAIRED_GAIN: f64 = 0.02;

/// Whether the untuned kernel (`stats[0]`) stays against the fastest, `stats[fast]`. By
/// paired ratios first: runs of one round went back to back, so drift over seconds
/// (zero-copy times wander 2-5%) hits both alike. A paired gain is decisive over
/// [`PAIRED_FLOOR`] with the rounds agreeing more closely than the gain, or over
/// [`PAIRED_GAIN`]. A decisive gain of any candidate over the untuned kernel trades it (none
/// is faster than the pick by p20, so the untuned kernel is slower than the pick too: a
/// candidate added late may share no rounds with it); a paired comparison with the pick
/// that is not decisive keeps it. Without one, it stays within [`tie`], or within the
/// wander the session saw, the larger of the two's slowest-to-fastest run spreads
/// (relative to their medians, at most [`WANDER_CAP`]).
pub(super) fn keeps_untuned(stats: &[Stats], fast: usize) -> bool {
    let (safe, pick) = (&stats[0], &stats[fast]);
    let paired: Vec<(usize, Paired)> = (1..stats.len())
        .filter(|&i| stats[i].error.is_none())
        .filter_map(|i| Some((i, paired_gain(&stats[i], safe)?)))
        .collect();
    if paired.iter().any(|&(_, p)| decisive(p)) {
        return false;
    }
    if paired.iter().any(|&(i, _)| i == fast) {
        return true;
    }
    let (Some(f), Some(s)) = (pick.p20_ms(), safe.p20_ms()) else {
        return false;
    };
    let spread = |st: &Stats, m: f64| {
        let hi = st.runs_ms.iter().copied().fold(0.0, f64::max);
        match st.fastest_ms() {
            Some(lo) if m > 0.0 => (hi - lo) / m,
            _ => 0.0,
        }
    };
    let wander = spread(pick, f).max(spread(safe, s)).min(WANDER_CAP);
    tie(pick, safe) || s - f <= wander * f
}

/// Whether a paired gain trades the untuned kernel: [`steady`], or over [`PAIRED_GAIN`].
pub(super) fn decisive(p: Paired) -> bool {
    steady(p) || p.gain > PAIRED_GAIN
}

/// Whether a paired gain is over [`PAIRED_FLOOR`] with the rounds agreeing more closely
/// than the gain: what separates two tied plans.
pub(super) fn steady(p: Paired) -> bool {
    p.gain > PAIRED_FLOOR && p.spread < p.gain
}

/// How much slower the untuned kernel ran than a pick, round by round.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Paired {
    /// The lower median of `safe / fast - 1` over the shared rounds, so that one disturbed
    /// run cannot decide.
    pub(super) gain: f64,
    /// How far those ratios lie apart: their range, leaving out the highest and the lowest
    /// from four rounds on (a disturbance slows one run).
    pub(super) spread: f64,
}

/// [`Paired`] of `safe` against `fast` over the rounds both ran in, or `None` with fewer
/// than two such rounds.
pub(super) fn paired_gain(fast: &Stats, safe: &Stats) -> Option<Paired> {
    let by_round = |s: &Stats| -> Vec<(u32, f64)> {
        s.rounds
            .iter()
            .copied()
            .zip(s.runs_ms.iter().copied())
            .filter(|&(r, _)| r > 0)
            .collect()
    };
    let fast_runs = by_round(fast);
    let mut ratios: Vec<f64> = by_round(safe)
        .into_iter()
        .filter_map(|(r, s)| {
            let (_, f) = fast_runs.iter().find(|(fr, _)| *fr == r)?;
            (*f > 0.0).then(|| s / f - 1.0)
        })
        .filter(|g| g.is_finite())
        .collect();
    let n = ratios.len();
    if n < 2 {
        return None;
    }
    ratios.sort_by(f64::total_cmp);
    let trim = usize::from(n >= 4);
    Some(Paired {
        gain: ratios[(n - 1) / 2],
        spread: ratios[n - 1 - trim] - ratios[trim],
    })
}

pub(super) fn choose(stats: &[Stats]) -> (usize, String, bool) {
    let Some((best, best_ms)) = fastest(stats) else {
        return (
            0,
            "every candidate failed: the untuned plan is used".into(),
            true,
        );
    };
    // Candidates with timings that were not dropped for a failure may be kept on a tie,
    // unless the rounds they shared with the fastest separate them; once the untuned kernel
    // is traded away, not one that ran slower than it.
    let untuned_ms = stats.first().and_then(Stats::p20_ms);
    for (i, s) in stats.iter().enumerate().take(best) {
        let within = if i == 0 {
            keeps_untuned(stats, best)
        } else {
            tie(&stats[best], s)
                && !paired_gain(&stats[best], s).is_some_and(steady)
                && untuned_ms.is_none_or(|u| s.p20_ms().is_some_and(|m| m <= u))
        };
        if s.error.is_none() && within {
            let ms = s.p20_ms().unwrap_or(f64::NAN);
            return (
                i,
                format!(
                    "within the noise of the fastest (candidate {best}, {best_ms:.4} ms): kept the safer candidate {i} ({ms:.4} ms)"
                ),
                false,
            );
        }
    }
    let untuned = stats
        .first()
        .and_then(Stats::p20_ms)
        .map_or(String::new(), |u| {
            format!(", {:.3}x faster than untuned", u / best_ms)
        });
    (
        best,
        format!("fastest p20 ({best_ms:.4} ms){untuned}"),
        false,
    )
}
