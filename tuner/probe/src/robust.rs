//! Robust statistics for noisy timings: medians, MAD, and the probe's noise estimate.

use memtune_core::profile::{ChaseCurve, ChasePoint};
use std::borrow::Cow;

/// Relative noise is never taken below this: systematic sub-percent effects (e.g. a few
/// extra misses on a chain's first and last page) must not read as TLB steps.
pub(crate) const NOISE_FLOOR: f64 = 0.002;

/// Scales a median absolute deviation to a Gaussian standard deviation.
const MAD_TO_SIGMA: f64 = 1.4826;

/// The median of `values` (0 when empty; [`memtune_core::stats::median`]).
pub(crate) fn median(values: &[f64]) -> f64 {
    memtune_core::stats::median(values).unwrap_or(0.0)
}

/// The median of `values` weighted by `weights`: the value where half the weight lies below.
pub(crate) fn weighted_median(values: &[f64], weights: &[f64]) -> f64 {
    let mut pairs: Vec<(f64, f64)> = values
        .iter()
        .copied()
        .zip(weights.iter().copied())
        .collect();
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: f64 = pairs.iter().map(|p| p.1).sum();
    let mut acc = 0.0;
    for &(v, w) in &pairs {
        acc += w;
        if acc >= total / 2.0 {
            return v;
        }
    }
    pairs.last().map_or(0.0, |p| p.0)
}

/// Repeats of one footprint: their robust centre and how many there were.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Repeats {
    pub footprint: u64,
    /// Mean of the repeats within four standard deviations of their median (spikes dropped).
    pub value: f64,
    pub samples: usize,
}

/// A curve's samples ordered by footprint, repeats in the order taken (the sweep keeps its
/// curves so; others are sorted on the way).
pub(crate) fn by_footprint(curve: &ChaseCurve) -> Cow<'_, [ChasePoint]> {
    if curve.points.is_sorted_by_key(|p| p.footprint_bytes) {
        Cow::Borrowed(&curve.points)
    } else {
        let mut points = curve.points.clone();
        points.sort_by_key(|p| p.footprint_bytes);
        Cow::Owned(points)
    }
}

/// Groups a curve's samples by footprint (ascending), dropping spikes using `sigma_rel`.
pub(crate) fn group_repeats(curve: &ChaseCurve, sigma_rel: f64) -> Vec<Repeats> {
    by_footprint(curve)
        .chunk_by(|a, b| a.footprint_bytes == b.footprint_bytes)
        .map(|group| {
            let ys: Vec<f64> = group.iter().map(|p| p.cycles_per_load).collect();
            let med = median(&ys);
            let tolerance = 4.0 * sigma_rel.max(NOISE_FLOOR) * med;
            let kept: Vec<f64> = ys
                .iter()
                .copied()
                .filter(|y| (y - med).abs() <= tolerance)
                .collect();
            let value = if kept.is_empty() {
                med
            } else {
                kept.iter().sum::<f64>() / kept.len() as f64
            };
            Repeats {
                footprint: group[0].footprint_bytes,
                value,
                samples: kept.len().max(1),
            }
        })
        .collect()
}

/// How noisy a curve's points are, relative to their value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Noise {
    /// One measurement's scatter (clock jitter): repeats average it down.
    pub sample: f64,
    /// Systematic wiggle of a chain of one load. On real GPUs each line of a chain sits in a
    /// near or a far L2 partition, so a chain of `n` loads is off its level by about
    /// `wiggle / sqrt(n)` (a few percent for short chains), whatever the repeats.
    pub wiggle: f64,
}

impl Noise {
    /// Only sample noise, at `sample`.
    pub(crate) fn sampled(sample: f64) -> Noise {
        Noise {
            sample,
            wiggle: 0.0,
        }
    }

    /// The relative standard deviation of a point of `samples` repeats of `loads` loads.
    pub(crate) fn of_point(&self, samples: usize, loads: u64) -> f64 {
        (self.sample.powi(2) / samples.max(1) as f64 + self.wiggle.powi(2) / loads.max(1) as f64)
            .sqrt()
    }
}

fn relative_difference(a: f64, b: f64) -> f64 {
    2.0 * (a - b).abs() / (a + b)
}

/// The relative scatter of one measurement, from the differences between successive
/// repeats of one footprint (a difference of two samples has sqrt(2) times their deviation,
/// whatever the number of repeats; its median ignores the rare spike); from neighbouring
/// points where there are no repeats (steps are few). Never below [`NOISE_FLOOR`].
pub(crate) fn sample_noise<'a>(curves: impl IntoIterator<Item = &'a ChaseCurve> + Clone) -> f64 {
    measured_scatter(curves).max(NOISE_FLOOR)
}

/// [`sample_noise`] without the floor: what repeats actually differ by.
pub(crate) fn measured_scatter<'a>(
    curves: impl IntoIterator<Item = &'a ChaseCurve> + Clone,
) -> f64 {
    let mut differences = Vec::new();
    for curve in curves.clone() {
        for group in by_footprint(curve).chunk_by(|a, b| a.footprint_bytes == b.footprint_bytes) {
            differences.extend(
                group
                    .windows(2)
                    .map(|w| relative_difference(w[0].cycles_per_load, w[1].cycles_per_load)),
            );
        }
    }
    if differences.len() < 12 {
        differences.clear();
        for curve in curves {
            let grouped = group_repeats(curve, 0.5);
            differences.extend(
                grouped
                    .windows(2)
                    .map(|w| relative_difference(w[0].value, w[1].value)),
            );
        }
    }
    MAD_TO_SIGMA * median(&differences) / std::f64::consts::SQRT_2
}

/// Two neighbouring points of a curve: their relative difference, and the sums of their
/// inverse repeat counts and inverse load counts (how much sample noise and wiggle the
/// difference carries).
#[derive(Debug, Clone, Copy)]
pub(crate) struct NeighbourPair {
    difference: f64,
    inverse_repeats: f64,
    inverse_loads: f64,
}

/// The neighbouring points of `curve`, leaving out those whose interval meets one of
/// `structure` (footprint ranges holding steps): what remains differs by noise and wiggle.
pub(crate) fn neighbour_pairs(curve: &ChaseCurve, structure: &[(u64, u64)]) -> Vec<NeighbourPair> {
    let stride = curve.stride_bytes.max(1);
    group_repeats(curve, 0.5)
        .windows(2)
        .filter(|w| {
            structure
                .iter()
                .all(|&(from, to)| w[1].footprint < from || w[0].footprint > to)
        })
        .map(|w| NeighbourPair {
            difference: relative_difference(w[0].value, w[1].value),
            inverse_repeats: 1.0 / w[0].samples as f64 + 1.0 / w[1].samples as f64,
            inverse_loads: stride as f64 / w[0].footprint.max(1) as f64
                + stride as f64 / w[1].footprint.max(1) as f64,
        })
        .collect()
}

/// The wiggle, given the sample noise: a neighbour difference has variance
/// `sample^2 * inverse_repeats + wiggle^2 * inverse_loads`, and the wiggle is the value at
/// which the differences, scaled by their standard deviation, have the median of |N(0, 1)|.
pub(crate) fn wiggle(pairs: &[NeighbourPair], sample: f64) -> f64 {
    const HALF_NORMAL_MEDIAN: f64 = 0.6745;
    let scaled_median = |wiggle: f64| {
        let scaled: Vec<f64> = pairs
            .iter()
            .map(|p| {
                p.difference
                    / (sample.powi(2) * p.inverse_repeats + wiggle.powi(2) * p.inverse_loads).sqrt()
            })
            .collect();
        median(&scaled)
    };
    if pairs.is_empty() || scaled_median(0.0) <= HALF_NORMAL_MEDIAN {
        return 0.0;
    }
    let (mut low, mut high) = (0.0, 1.0);
    for _ in 0..40 {
        let mid = (low + high) / 2.0;
        if scaled_median(mid) > HALF_NORMAL_MEDIAN {
            low = mid;
        } else {
            high = mid;
        }
    }
    high
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(weighted_median(&[1.0, 2.0, 10.0], &[1.0, 5.0, 1.0]), 2.0);
    }

    #[test]
    fn repeats_drop_spikes() {
        let curve = ChaseCurve {
            stride_bytes: 1,
            points: [100.0, 101.0, 99.0, 700.0]
                .iter()
                .map(|&y| ChasePoint {
                    footprint_bytes: 8,
                    cycles_per_load: y,
                })
                .collect(),
        };
        let g = group_repeats(&curve, 0.01);
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].samples, 3);
        assert!((g[0].value - 100.0).abs() < 1e-9);
    }
}
