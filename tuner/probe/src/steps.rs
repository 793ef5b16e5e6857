//! Step detection on one latency-versus-footprint curve.
//!
//! A TLB level shows as a step up that stays up. The curve is cut into constant segments by
//! optimal partitioning (dynamic programming over all cut sets): each segment costs the sum
//! of its points' squared z-scores around the segment's weighted median, each clipped so
//! that one spike cannot buy a segment of its own, plus a fixed price per segment. Steps are
//! then the significant rises between segments that persist to the end of the curve, so a
//! bump that comes back down (an L2-partition effect, not a TLB) is not a step.

use super::robust::{group_repeats, weighted_median, Noise};
use memtune_core::profile::ChaseCurve;

/// Price of one more segment, in squared z-score units (about a 4-sigma rise on one point).
const SEGMENT_PRICE: f64 = 16.0;
/// A point's squared z-score is clipped here, so a lone spike costs no more than this.
const CLIP: f64 = 25.0;
/// A rise must be this many of its standard deviations...
const MIN_Z: f64 = 4.0;
/// ...and at least this fraction of the latency below it (real GPUs drift by less than
/// that as chains grow; TLB misses cost more).
const MIN_RELATIVE_RISE: f64 = 0.01;
/// The level above a step is measured over footprints up to this factor past it.
const ABOVE_SPAN: u64 = 4;
/// Later levels must keep this fraction of a rise for it to be a step.
const KEPT: f64 = 0.35;
/// Rises whose footprints lie within this ratio are one step: a set-associative level fills
/// its sets one by one, which makes a short ramp rather than a single jump.
pub(crate) const RAMP_RATIO: f64 = 1.2;
/// A ramp whose last rise carries this share of its height is placed at that rise.
const STEP_PROPER: f64 = 0.7;
/// ...and whose earlier rises together stay under this share of the latency.
const CREEP: f64 = 0.02;
/// With `Ramps::Staircases`, rises also join one ramp when the plateau between them spans
/// less than this ratio of footprints.
const TREAD: f64 = 1.5;

/// Which rises make one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ramps {
    /// Rises within `RAMP_RATIO` of each other: a set-associative level filling its sets.
    Short,
    /// Also rises with plateaus shorter than `TREAD` between them: a translation level of
    /// mapped host pages on an H200 climbs by 7-11% over 6-32 MiB in a staircase whose
    /// treads noise places anywhere (`infer_tlb::finest_level`).
    Staircases,
}

/// One footprint of a curve: the robust mean of its repeats and that mean's uncertainty.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Point {
    pub footprint: u64,
    pub value: f64,
    pub sigma: f64,
    pub samples: usize,
}

/// The points of a curve, ascending by footprint, given its noise.
pub(crate) fn points(curve: &ChaseCurve, noise: &Noise) -> Vec<Point> {
    let stride = curve.stride_bytes.max(1);
    group_repeats(curve, noise.sample)
        .into_iter()
        .map(|r| Point {
            footprint: r.footprint,
            value: r.value,
            sigma: noise.of_point(r.samples, r.footprint / stride) * r.value,
            samples: r.samples,
        })
        .collect()
}

/// A run of points at one latency level.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Segment {
    pub first: usize,
    pub last: usize,
    pub level: f64,
    pub sigma: f64,
}

/// A persistent rise of the curve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Step {
    /// The largest footprint measured below the rise.
    pub lo: u64,
    /// The smallest footprint measured above it.
    pub hi: u64,
    /// The first footprint at the top (past the ramp, if the step is one).
    pub top: u64,
    /// Where the boundary lies: `(lo, hi)`, but for a staircase the last footprint below
    /// half its height and the first at or above it (its start is lost in the noise).
    pub boundary: (u64, u64),
    /// Whether treads joined its rises (`Ramps::Staircases`).
    pub staircase: bool,
    pub height: f64,
    pub sigma: f64,
    /// The level below the rise, and its standard deviation.
    pub below: f64,
    pub below_sigma: f64,
}

/// Segments and steps of one curve.
#[derive(Debug, Clone)]
pub(crate) struct Detection {
    pub segments: Vec<Segment>,
    pub steps: Vec<Step>,
}

impl Detection {
    /// The footprint ranges the steps take, ramps included.
    pub(crate) fn structure(&self) -> Vec<(u64, u64)> {
        self.steps.iter().map(|s| (s.lo, s.top)).collect()
    }
}

pub(crate) fn detect(points: &[Point], ramps: Ramps) -> Detection {
    let segments = segment(points, &weights(points));
    let steps = steps_of(points, &segments, ramps);
    Detection { segments, steps }
}

/// The steps of a detection's segments, rises joined as `ramps` says (the segmentation,
/// the costly part, is shared).
pub(crate) fn steps_of(points: &[Point], segments: &[Segment], ramps: Ramps) -> Vec<Step> {
    persistent_steps(points, &weights(points), segments, ramps)
}

fn weights(points: &[Point]) -> Vec<f64> {
    points
        .iter()
        .map(|p| 1.0 / (p.sigma * p.sigma).max(1e-12))
        .collect()
}

/// Optimal partitioning of `points` into constant segments.
fn segment(points: &[Point], weights: &[f64]) -> Vec<Segment> {
    let m = points.len();
    if m == 0 {
        return Vec::new();
    }
    // cost[a][b]: cost of one segment over points a..=b. For each start, the segment grows
    // one point at a time, its values kept sorted for the weighted median.
    let mut cost = vec![vec![0.0; m]; m];
    let mut sorted: Vec<(f64, f64)> = Vec::with_capacity(m);
    for (a, row) in cost.iter_mut().enumerate() {
        sorted.clear();
        let mut total = 0.0;
        for b in a..m {
            let (value, weight) = (points[b].value, weights[b]);
            sorted.insert(sorted.partition_point(|p| p.0 < value), (value, weight));
            total += weight;
            let mut acc = 0.0;
            let centre = sorted
                .iter()
                .find(|p| {
                    acc += p.1;
                    acc >= total / 2.0
                })
                .map_or(value, |p| p.0);
            row[b] = (a..=b)
                .map(|i| (weights[i] * (points[i].value - centre).powi(2)).min(CLIP))
                .sum();
        }
    }
    // best[j]: cheapest partition of points 0..j (exclusive); cut[j]: where its last segment starts.
    let mut best = vec![0.0; m + 1];
    let mut cut = vec![0usize; m + 1];
    for j in 1..=m {
        let (start, total) = (0..j)
            .map(|a| (a, best[a] + cost[a][j - 1] + SEGMENT_PRICE))
            .min_by(|x, y| x.1.total_cmp(&y.1))
            .unwrap_or((0, 0.0));
        best[j] = total;
        cut[j] = start;
    }
    let mut bounds = Vec::new();
    let mut j = m;
    while j > 0 {
        bounds.push((cut[j], j - 1));
        j = cut[j];
    }
    bounds.reverse();
    bounds
        .into_iter()
        .map(|(first, last)| level_of(points, weights, first, last))
        .collect()
}

/// The level of a segment: weighted mean of its points near the weighted median.
fn level_of(points: &[Point], weights: &[f64], first: usize, last: usize) -> Segment {
    let values: Vec<f64> = points[first..=last].iter().map(|p| p.value).collect();
    let centre = weighted_median(&values, &weights[first..=last]);
    let (mut sum, mut total) = (0.0, 0.0);
    for i in first..=last {
        if (points[i].value - centre).abs() <= 3.0 * points[i].sigma {
            sum += weights[i] * points[i].value;
            total += weights[i];
        }
    }
    let (level, total) = if total > 0.0 {
        (sum / total, total)
    } else {
        (centre, weights[first..=last].iter().sum())
    };
    Segment {
        first,
        last,
        level,
        sigma: 1.0 / total.sqrt(),
    }
}

fn persistent_steps(
    points: &[Point],
    weights: &[f64],
    segments: &[Segment],
    ramps_of: Ramps,
) -> Vec<Step> {
    // Consecutive rises close together are one step: a set-associative level fills its sets
    // one by one, which makes a ramp of small rises, each of which may be insignificant
    // alone. A ramp is a run of rises, each starting within RAMP_RATIO of the previous one
    // (a dip between two of them is noise).
    // (first, last) index of the low segment of each rise, and whether a tread joined them
    let mut ramps: Vec<(usize, usize, bool)> = Vec::new();
    for i in 0..segments.len().saturating_sub(1) {
        if segments[i + 1].level <= segments[i].level {
            continue;
        }
        let lo = points[segments[i].last].footprint as f64;
        match ramps.last_mut() {
            Some(ramp) if lo <= points[segments[ramp.1].last].footprint as f64 * RAMP_RATIO => {
                ramp.1 = i;
            }
            Some(ramp)
                if ramps_of == Ramps::Staircases
                    && lo <= points[segments[ramp.1 + 1].first].footprint as f64 * TREAD =>
            {
                *ramp = (ramp.0, i, true);
            }
            _ => ramps.push((i, i, false)),
        }
    }
    let mut steps = Vec::new();
    for (first, last, staircase) in ramps {
        let (low, high) = (segments[first], segments[last + 1]);
        let height = high.level - low.level;
        let sigma = low.sigma.hypot(high.sigma);
        if height < MIN_Z * sigma || height < MIN_RELATIVE_RISE * low.level {
            continue;
        }
        // Every later segment must keep a good part of the rise (on real GPUs a TLB step
        // can sag a little as the chain grows; a bump comes all the way back).
        let persists = segments[last + 1..]
            .iter()
            .all(|s| s.level + s.sigma >= low.level + height * KEPT);
        if persists {
            let (lo, hi) = (
                points[low.last].footprint,
                points[segments[first + 1].first].footprint,
            );
            let boundary = if staircase {
                let half = (first + 1..=last + 1)
                    .find(|&k| segments[k].level >= low.level + height / 2.0)
                    .map_or(segments[first + 1].first, |k| segments[k].first);
                (points[half - 1].footprint, points[half].footprint)
            } else if let Some(k) = after_creep(points, segments, (first, last)) {
                (
                    points[segments[k].last].footprint,
                    points[segments[k + 1].first].footprint,
                )
            } else {
                (lo, hi)
            };
            steps.push(Step {
                lo,
                hi,
                boundary,
                staircase,
                top: points[high.first].footprint,
                height,
                sigma,
                below: low.level,
                below_sigma: low.sigma,
            });
        }
    }
    let mut settled = steps.clone();
    for (i, step) in settled.iter_mut().enumerate() {
        // The level above: measured clear of ramps, past this one and before the next,
        // where there are points there (a ramp left inside a segment pulls its level).
        // (Not too far past it either: a step too faint to find may lie further on.)
        // (A staircase's top lies well past its first rise.)
        let past = if step.staircase { step.top } else { step.hi };
        let from = (past as f64 * RAMP_RATIO).ceil() as u64;
        let to = steps
            .get(i + 1)
            .map_or(u64::MAX, |next| (next.lo as f64 / RAMP_RATIO) as u64)
            .min(past.saturating_mul(ABOVE_SPAN));
        let clear: Vec<usize> = (0..points.len())
            .filter(|&k| (from..=to).contains(&points[k].footprint))
            .collect();
        if let (Some(&first), Some(&last)) = (clear.first(), clear.last()) {
            let above = level_of(points, weights, first, last);
            step.height = above.level - step.below;
            step.sigma = step.below_sigma.hypot(above.sigma);
        }
    }
    settled
}

/// The last rise of a ramp (by its low segment) when it is the step itself after a creep
/// of the latency that the segmentation cut into rises of its own (an H100's device
/// memory: 2-4 cycles over 13-16 loads, then 9-10 cycles at 16-17): it carries
/// [`STEP_PROPER`] of the ramp's height, the rises before it stay under [`CREEP`] of the
/// latency, and the points either side of it lie no further apart than those of the
/// ramp's first rise. A set-associative ramp's rises are alike, and a rise measured across
/// a gap places nothing better; both keep the ramp's start.
fn after_creep(
    points: &[Point],
    segments: &[Segment],
    (first, last): (usize, usize),
) -> Option<usize> {
    let (low, top) = (segments[first], segments[last + 1]);
    let height = top.level - low.level;
    let rise = top.level - segments[last].level;
    let bracket = |k: usize| {
        points[segments[k + 1].first].footprint as f64 / points[segments[k].last].footprint as f64
    };
    let step_proper = rise >= STEP_PROPER * height && height - rise < CREEP * low.level;
    (last > first && step_proper && bracket(last) <= bracket(first)).then_some(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts(values: &[(u64, f64)], sigma: f64) -> Vec<Point> {
        values
            .iter()
            .map(|&(footprint, value)| Point {
                footprint,
                value,
                sigma,
                samples: 1,
            })
            .collect()
    }

    #[test]
    fn finds_a_clean_step() {
        let p = pts(
            &[
                (1, 100.0),
                (2, 100.5),
                (4, 99.5),
                (8, 150.0),
                (16, 150.5),
                (32, 149.0),
            ],
            1.0,
        );
        let d = detect(&p, Ramps::Short);
        assert_eq!(d.steps.len(), 1);
        assert_eq!((d.steps[0].lo, d.steps[0].hi), (4, 8));
        assert!((d.steps[0].height - 50.0).abs() < 1.5);
    }

    #[test]
    fn ignores_a_spike_and_a_bump() {
        let spike = pts(
            &[
                (1, 100.0),
                (2, 100.5),
                (4, 400.0),
                (8, 100.0),
                (16, 99.5),
                (32, 100.0),
            ],
            1.0,
        );
        assert!(detect(&spike, Ramps::Short).steps.is_empty());
        let bump = pts(
            &[
                (1, 100.0),
                (2, 100.5),
                (4, 112.0),
                (8, 111.0),
                (16, 112.0),
                (32, 100.0),
                (64, 100.5),
            ],
            1.0,
        );
        assert!(detect(&bump, Ramps::Short).steps.is_empty());
    }

    #[test]
    fn a_ramp_is_one_step() {
        let p = pts(
            &[
                (60, 100.0),
                (64, 100.0),
                (65, 100.0),
                (66, 115.0),
                (68, 140.0),
                (70, 170.0),
                (73, 210.0),
                (80, 210.0),
                (128, 210.0),
            ],
            0.5,
        );
        let d = detect(&p, Ramps::Short);
        assert_eq!(d.steps.len(), 1, "{:?}", d.steps);
        assert_eq!(d.steps[0].lo, 65);
        assert!((d.steps[0].height - 110.0).abs() < 1.0);
    }

    #[test]
    fn a_staircase_is_one_step_only_when_asked_and_placed_at_half_height() {
        // Three rises of 40 with treads of 1.25-1.4x between them, as mapped host memory's
        // finest level on an H200.
        let p = pts(
            &[
                (2, 100.0),
                (4, 100.0),
                (6, 100.0),
                (7, 140.0),
                (9, 140.0),
                (12, 180.0),
                (15, 180.0),
                (20, 220.0),
                (32, 220.0),
                (64, 220.0),
            ],
            1.0,
        );
        assert_eq!(detect(&p, Ramps::Short).steps.len(), 3);
        let d = detect(&p, Ramps::Staircases);
        assert_eq!(d.steps.len(), 1, "{:?}", d.steps);
        let step = d.steps[0];
        assert_eq!((step.lo, step.top), (6, 20));
        assert_eq!(step.boundary, (9, 12));
        assert!((step.height - 120.0).abs() < 1.5);
    }

    #[test]
    fn a_creep_before_a_step_is_placed_at_the_step() {
        // An H100's device memory at a 64 MiB stride (footprints in loads): 2-3 cycles of
        // creep over 13-16 loads, then the 9-cycle step at 16-17.
        let loads = [
            (8, 270.6),
            (9, 272.7),
            (11, 271.7),
            (12, 272.8),
            (13, 273.0),
            (14, 273.7),
            (15, 275.6),
            (16, 275.5),
            (17, 284.6),
            (19, 284.8),
            (21, 284.9),
            (23, 286.6),
            (32, 287.3),
            (40, 287.6),
        ];
        let d = detect(&pts(&loads, 0.3), Ramps::Short);
        assert_eq!(d.steps.len(), 1, "{:?}", d.steps);
        assert_eq!(d.steps[0].boundary, (16, 17));
        assert_eq!(d.steps[0].lo, 14);
        // The same rises with the step measured across a gap (16 to 20 loads): the ramp
        // keeps its start.
        let gap: Vec<(u64, f64)> = loads
            .iter()
            .copied()
            .filter(|&(n, _)| n != 17 && n != 19)
            .collect();
        let d = detect(&pts(&gap, 0.3), Ramps::Short);
        assert_eq!(d.steps.len(), 1, "{:?}", d.steps);
        assert_eq!(d.steps[0].boundary, (14, 15));
    }
}
