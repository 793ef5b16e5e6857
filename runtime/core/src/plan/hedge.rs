//! Small bets for plans made without timing. Where the model's scoped pick is a bet (its
//! gain depends on the kernel), an untimed plan may still scope if even the worst case
//! costs little: the plan with the fewest passes that the model predicts at least
//! [`MIN_GAIN`]x faster, taken only when, were the scopes to gain nothing at all and the
//! kernel to draw a skipped position [`WORST_DRAW_FACTOR`]x as slowly as memtune's, it would
//! run at most [`MAX_WORST_LOSS`] slower than one pass. Zero-copy memory read at its knee
//! is the case this is for: a pass there costs a few µs against milliseconds of reads,
//! while one pass over a region the probe read just fast can run 1.08-1.29x slower than two
//! (`docs/calibration.md`). Device memory never qualifies: its reads cost too little
//! against a pass's draws.

use super::passes::MIN_GAIN;

/// A user's kernel may spend this many times memtune's sampling kernel per drawn and
/// skipped position (an index computation, a hash) before a hedge stops paying.
pub(crate) const WORST_DRAW_FACTOR: f64 = 4.0;
/// The most a hedge may cost when its scopes gain nothing.
pub(crate) const MAX_WORST_LOSS: f64 = 0.02;
/// GPU-wide seconds a user's grouping kernel may spend on each key in each pass beyond
/// memtune's (a hash of several rounds, a decode): every pass pays it for every key,
/// however it scopes. memtune's bench kernel with 256 mixing rounds a key spent 25-30 ps
/// (H100s `4cb44b00` and `96c7ad29`, `docs/calibration.md`).
pub(crate) const KERNEL_WORK_PER_PASS: f64 = 30e-12;

/// A scoped plan an untimed plan may take although the model's pick is a bet.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Hedge<C> {
    pub choice: C,
    /// The model's predicted speedup over one pass.
    pub gain: f64,
    /// How much slower than one pass it runs if the scopes gain nothing.
    pub worst_loss: f64,
}

/// A split of fewer passes than the model's pick, for untimed plans: the pick is priced
/// with memtune's own per-pass cost, and a kernel that spends more per key and pass (a
/// hash, a decode) pays every extra pass in full.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Coarser<C> {
    pub choice: C,
    /// How much slower the model's pick runs than `choice` with the kernel's extra work.
    pub risk: f64,
}

/// What an untimed plan may take instead of the model's pick.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Fallbacks<C> {
    /// The small bet where the pick is a bet.
    pub hedge: Option<Hedge<C>>,
    /// Fewer passes, where a kernel with more work per pass would run them faster.
    pub coarser: Option<Coarser<C>>,
}

impl<C> Fallbacks<C> {
    pub(crate) fn none() -> Self {
        Fallbacks {
            hedge: None,
            coarser: None,
        }
    }
}

/// The hedge among `choices` (fewest passes first): the first that `time` predicts at least
/// [`MIN_GAIN`]x faster than `one_pass` and whose `worst` time (no gain, slow draws) is
/// within [`MAX_WORST_LOSS`] of `worst_one_pass`.
pub(crate) fn find<C: Copy>(
    choices: impl IntoIterator<Item = C>,
    one_pass: f64,
    time: impl Fn(C) -> f64,
    worst_one_pass: f64,
    worst: impl Fn(C) -> f64,
) -> Option<Hedge<C>> {
    choices.into_iter().find_map(|choice| {
        let gain = one_pass / time(choice);
        let worst_loss = worst(choice) / worst_one_pass - 1.0;
        (gain >= MIN_GAIN && worst_loss.is_finite() && worst_loss <= MAX_WORST_LOSS).then_some(
            Hedge {
                choice,
                gain,
                worst_loss,
            },
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::passes::Split;

    fn split(passes: u32) -> Split {
        Split {
            scope_bytes: 1024 / u64::from(passes),
            passes,
        }
    }

    #[test]
    fn the_fewest_passes_that_gain_and_cost_little_at_worst() {
        let splits = [split(2), split(4), split(8)];
        // 2 passes gain only 1.02x, 4 gain 2x; a pass costs 0.1% at worst.
        let time = |s: Split| if s.passes == 2 { 0.98 } else { 0.5 };
        let worst = |s: Split| 1.0 + 0.001 * f64::from(s.passes - 1);
        let h = find(splits, 1.0, time, 1.0, worst).expect("a hedge");
        assert_eq!(h.choice.passes, 4);
        assert!((h.gain - 2.0).abs() < 1e-12);
        assert!((h.worst_loss - 0.003).abs() < 1e-12);
        // A pass costing 1% at worst: 4 passes would cost 3%, 8 passes 7%.
        let worst = |s: Split| 1.0 + 0.01 * f64::from(s.passes - 1);
        assert_eq!(find(splits, 1.0, time, 1.0, worst), None);
        // No predicted gain: no hedge.
        assert_eq!(find(splits, 1.0, |_| 0.99, 1.0, |_| 1.0), None);
    }
}
