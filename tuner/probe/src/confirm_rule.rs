//! The confirmation's reading of one re-measured level, and its rule (pure; the
//! measurements are `confirm.rs`'s).
//!
//! A level of `E` entries of `P`-byte pages, re-measured at stride `P` over footprints
//! around its reach `E * P`, shows one step there, of its full miss penalty: at the page
//! stride every load is on a page of its own. [`locate`] finds that step again: the
//! persistent rise of the window's curve (staircases joined and placed at half their height,
//! as the finest level is read, `infer_tlb::finest_level`) that is at least half and at most
//! twice the penalty the sweep fitted, nearest to the reach. The height check is the page
//! check: a level of larger pages would rise by `P / page` of its penalty at this stride,
//! and one of smaller pages would stand at another number of loads.
//!
//! [`judge`] keeps a level as stable when every re-measurement found its step with entries
//! within [`SAME_ENTRIES`] of the sweep's estimate; a level is otherwise unstable. The
//! profile keeps the sweep's estimate, not a mean: the sweep's curves are stored beside it
//! and infer it again, and its estimate was placed from several strides, where a window is
//! one.

use super::infer_tlb_chains::boundary;
use super::robust::Noise;
use super::steps::{detect, points, steps_of, Ramps};
use memtune_core::profile::ChaseCurve;

/// A re-measured level keeps its place when its entries are within this share of the
/// sweep's estimate: the "entries within 10%" across probes in a row. The sweep
/// places a boundary within 4% (0.8% where loads allow), so a level that stays put passes.
pub(crate) const SAME_ENTRIES: f64 = 0.10;
/// The step found again must be at least this share of the fitted penalty, and at most its
/// inverse times it.
const SAME_HEIGHT: f64 = 0.5;

/// What the sweep found of a level: what a window looks for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Expected {
    pub entries: u64,
    pub page_bytes: u64,
    pub penalty_cycles: f64,
}

/// The verdict on a level and the entries each re-measurement read (`None`: no step).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Verdict {
    Stable,
    Unstable { readings: Vec<Option<u64>> },
}

/// The entries the step of `expected` shows in `curve` (measured at its page stride), or
/// `None` when no step of its height shows.
pub(crate) fn locate(curve: &ChaseCurve, noise: &Noise, expected: &Expected) -> Option<u64> {
    let stride = curve.stride_bytes.max(1);
    let pts = points(curve, noise);
    if pts.len() < 3 {
        return None;
    }
    let segments = detect(&pts, Ramps::Short).segments;
    let reach = (expected.entries as f64 * expected.page_bytes as f64).max(1.0);
    let penalty = expected.penalty_cycles.max(f64::MIN_POSITIVE);
    steps_of(&pts, &segments, Ramps::Staircases)
        .iter()
        .filter(|s| (SAME_HEIGHT..=1.0 / SAME_HEIGHT).contains(&(s.height / penalty)))
        .map(|s| boundary(s, stride))
        .min_by(|a, b| (a / reach).ln().abs().total_cmp(&(b / reach).ln().abs()))
        .map(|b| ((b / stride as f64).round() as u64).max(1))
}

/// Whether `entries`, re-measured, is within [`SAME_ENTRIES`] of the sweep's `first`.
pub(crate) fn same_entries(first: u64, entries: u64) -> bool {
    first > 0 && (entries as f64 / first as f64 - 1.0).abs() <= SAME_ENTRIES + 1e-9
}

/// Stable when there is at least one re-measurement and each found the step within
/// [`SAME_ENTRIES`] of `first`.
pub(crate) fn judge(first: u64, readings: &[Option<u64>]) -> Verdict {
    let stable = !readings.is_empty()
        && readings
            .iter()
            .all(|r| r.is_some_and(|e| same_entries(first, e)));
    if stable {
        Verdict::Stable
    } else {
        Verdict::Unstable {
            readings: readings.to_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memtune_core::profile::ChasePoint;

    #[test]
    fn entries_within_a_tenth_either_way_are_the_same() {
        assert!(same_entries(4000, 4000));
        assert!(same_entries(4000, 4400));
        assert!(same_entries(4000, 3600));
        assert!(!same_entries(4000, 4401));
        assert!(!same_entries(4000, 3599));
        assert!(!same_entries(0, 0));
    }

    #[test]
    fn a_level_is_stable_only_when_every_reading_agrees() {
        assert_eq!(judge(4096, &[Some(4100), Some(4000)]), Verdict::Stable);
        // The H100's three pinned readings in a row, taking the first as the sweep's.
        assert_eq!(
            judge(3715, &[Some(4652), Some(5004)]),
            Verdict::Unstable {
                readings: vec![Some(4652), Some(5004)]
            }
        );
        // One disagreeing reading is enough, and so is a step not found again.
        assert!(matches!(
            judge(4096, &[Some(4100), Some(5000)]),
            Verdict::Unstable { .. }
        ));
        assert!(matches!(
            judge(4096, &[Some(4100), None]),
            Verdict::Unstable { .. }
        ));
        // Without any reading there is nothing to confirm it by.
        assert!(matches!(judge(4096, &[]), Verdict::Unstable { .. }));
    }

    /// A window at stride `page` of a level of `entries` with a step of `height` cycles
    /// over 500, points every 2^(1/8) from `entries / 3` to `3 * entries`, each repeated
    /// three times, plus the two adjacent load counts at the step.
    fn window(entries: u64, page: u64, height: f64) -> ChaseCurve {
        let mut loads: Vec<u64> = (0..=25)
            .map(|k| (entries as f64 / 3.0 * 2f64.powf(k as f64 / 8.0)).round() as u64)
            .chain([entries, entries + 1])
            .collect();
        loads.sort_unstable();
        loads.dedup();
        let points = loads
            .iter()
            .flat_map(|&n| {
                let y = if n > entries { 500.0 + height } else { 500.0 };
                std::iter::repeat_n(
                    ChasePoint {
                        footprint_bytes: n * page,
                        cycles_per_load: y,
                    },
                    3,
                )
            })
            .collect();
        ChaseCurve {
            stride_bytes: page,
            points,
        }
    }

    fn expected(entries: u64, page_bytes: u64, penalty_cycles: f64) -> Expected {
        Expected {
            entries,
            page_bytes,
            penalty_cycles,
        }
    }

    #[test]
    fn locate_reads_the_entries_off_the_step() {
        let noise = Noise::sampled(0.005);
        let curve = window(4096, 4096, 100.0);
        assert_eq!(
            locate(&curve, &noise, &expected(4096, 4096, 100.0)),
            Some(4096)
        );
        // A level that moved: the window is placed around the expected reach, the step is
        // read where it is.
        let moved = window(4700, 4096, 100.0);
        assert_eq!(
            locate(&moved, &noise, &expected(4096, 4096, 100.0)),
            Some(4700)
        );
    }

    #[test]
    fn locate_wants_a_step_of_the_levels_height() {
        let noise = Noise::sampled(0.005);
        // A quarter of the penalty: what a level of pages four times the stride would show.
        let low = window(4096, 4096, 25.0);
        assert_eq!(locate(&low, &noise, &expected(4096, 4096, 100.0)), None);
        let flat = window(4096, 4096, 0.0);
        assert_eq!(locate(&flat, &noise, &expected(4096, 4096, 100.0)), None);
    }
}
