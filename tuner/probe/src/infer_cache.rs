//! Inference from cache-chase curves (seed 002, section III.B), pure: steps of a latency
//! curve, the Fig. 4 ramp past a level's size, line size from latency against stride, and
//! ways from the same-set chase.

use super::robust::{median, NOISE_FLOOR};
use super::steps::{detect, points, Ramps, Step};
use memtune_core::profile::{CachePoint, ChaseCurve, ChasePoint};

/// Medians of the repeats of each footprint (or stride), ascending.
pub(crate) fn medians_by(
    points: &[CachePoint],
    key: impl Fn(&CachePoint) -> u64,
) -> Vec<(u64, f64)> {
    let mut sorted: Vec<(u64, f64)> = points.iter().map(|p| (key(p), p.cycles_per_load)).collect();
    sorted.sort_by_key(|p| p.0);
    sorted
        .chunk_by(|a, b| a.0 == b.0)
        .map(|g| {
            let ys: Vec<f64> = g.iter().map(|p| p.1).collect();
            (g[0].0, median(&ys))
        })
        .collect()
}

fn as_chase_curve(points: &[CachePoint]) -> ChaseCurve {
    let mut points: Vec<ChasePoint> = points
        .iter()
        .map(|p| ChasePoint {
            footprint_bytes: p.footprint_bytes,
            cycles_per_load: p.cycles_per_load,
        })
        .collect();
    points.sort_by_key(|p| p.footprint_bytes);
    ChaseCurve {
        // Per-point loads only matter to the wiggle term, which cache chases do not use.
        stride_bytes: 1,
        points,
    }
}

/// The relative scatter of one chase, from repeats of one measurement: the median absolute
/// deviation around their median, as a Gaussian standard deviation (a spike moves neither).
pub(crate) fn noise_of(repeats: &[f64]) -> f64 {
    let centre = median(repeats);
    if centre <= 0.0 {
        return NOISE_FLOOR;
    }
    let deviations: Vec<f64> = repeats.iter().map(|y| (y - centre).abs()).collect();
    (1.4826 * median(&deviations) / centre).max(NOISE_FLOOR)
}

/// The persistent rises of a latency-against-footprint curve, with spikes ignored (the
/// TLB probe's step detection: optimal segmentation, ramps merged).
pub(crate) fn footprint_steps(points: &[CachePoint], noise: f64) -> Vec<Step> {
    let curve = as_chase_curve(points);
    detect(&points_of(&curve, noise), Ramps::Short).steps
}

fn points_of(curve: &ChaseCurve, noise: f64) -> Vec<super::steps::Point> {
    points(curve, &super::robust::Noise::sampled(noise))
}

/// A level's ramp past its size, fitted. Under LRU with set = line mod sets, a chase of
/// stride at most a line over `F` bytes, `C < F < C (W + 1) / W`, misses on
/// `(F - C)(W + 1) / F` of its loads (the sets overflow one per line, each then missing
/// every line it holds): latency is linear in `1 / F` between the plateaus.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Ramp {
    /// Where the fitted line meets the plateau below: the size.
    pub start: f64,
    /// Where it meets the plateau above: `size * (ways + 1) / ways`.
    pub end: f64,
}

/// Fits a hinge to the ramp: the plateau `below` up to the size, then a straight rise.
/// Points from the first one at 90% of the rise on are left out (plateau above); points
/// below the size pin the hinge. `None` without at least two points on the rise.
///
/// `whole`: the rings were timed whole, so the latency is linear in `1 / F`. Otherwise
/// (rings longer than the timed window) the window holds the sets that overflow first,
/// and the latency is linear in `F` from the size on, but only up to a kink where the
/// window's sets run out: the fit then stops at 60% of the rise.
pub(crate) fn fit_ramp(
    ramp: &[(u64, f64)],
    below: f64,
    above: f64,
    noise: f64,
    whole: bool,
) -> Option<Ramp> {
    let ceiling = below + if whole { 0.9 } else { 0.6 } * (above - below);
    let x = |f: u64| if whole { -1.0 / f as f64 } else { f as f64 };
    let mut sorted = ramp.to_vec();
    sorted.sort_by_key(|p| p.0);
    // Up to the first point near the plateau above: later ones are plateau, not ramp.
    let used: Vec<(f64, f64)> = sorted
        .iter()
        .filter(|p| p.0 > 0)
        .take_while(|p| p.1 < ceiling)
        .map(|&(f, v)| (x(f), v - below))
        .collect();
    let rising = used.iter().filter(|p| p.1 > 4.0 * noise * below).count();
    if rising < 2 {
        return None;
    }
    let (lo, hi) = used
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
    // Least squares of `slope * max(0, x - hinge)` for a given hinge; the hinge is searched
    // on a grid over (and a span below) the points, then refined around the best.
    let fit = |hinge: f64| {
        let (mut hv, mut hh) = (0.0, 0.0);
        for &(xi, vi) in &used {
            let h = (xi - hinge).max(0.0);
            hv += h * vi;
            hh += h * h;
        }
        let slope = if hh > 0.0 { hv / hh } else { 0.0 };
        let sse: f64 = used
            .iter()
            .map(|&(xi, vi)| (vi - slope * (xi - hinge).max(0.0)).powi(2))
            .sum();
        (sse, slope)
    };
    let (mut from, mut to) = (lo - (hi - lo), hi);
    let mut best = (f64::MAX, 0.0, lo);
    for _ in 0..4 {
        let step = (to - from) / 200.0;
        for i in 0..=200 {
            let hinge = from + step * f64::from(i);
            let (sse, slope) = fit(hinge);
            if sse < best.0 {
                best = (sse, slope, hinge);
            }
        }
        (from, to) = (best.2 - 2.0 * step, best.2 + 2.0 * step);
    }
    let (_, slope, hinge) = best;
    if slope <= 0.0 {
        return None;
    }
    let top = hinge + (above - below) / slope;
    let back = |x: f64| if whole { -1.0 / x } else { x };
    if whole && top >= 0.0 {
        // The rise never reaches the plateau above in 1/F: no end.
        return Some(Ramp {
            start: back(hinge),
            end: f64::INFINITY,
        });
    }
    Some(Ramp {
        start: back(hinge),
        end: back(top),
    })
}

/// The size a fitted ramp start stands for: sizes are taken to be multiples of 1/64 of
/// their leading power of two (384 B, 228 KiB, 25 MiB, 40 MiB all are) and of the stride.
/// A start within half a grain below a power of two snaps to it (4 MiB fitted at 0.6%
/// below is 4 MiB, not 127/128 of it).
pub(crate) fn snap_size(start: f64, stride: u64) -> u64 {
    let leading = (start.max(1.0) * (1.0 + 1.0 / 128.0)).log2().floor() as i32;
    let grain = (2f64.powi(leading - 6) as u64).max(stride).max(1);
    ((start / grain as f64).round() as u64).max(1) * grain
}

/// Ways from the Fig. 4 ramp of a ring timed whole, once the size is known: with the hinge
/// at the size, the miss share is `(W + 1)(1 - size / F)`, so the rise's slope against
/// `-1 / F` is `(above - below)(W + 1) size`. An answer only within 0.25 of a whole number
/// (steps that are not clean give none rather than a guess).
pub(crate) fn ways_from_ramp(
    ramp: &[(u64, f64)],
    below: f64,
    above: f64,
    size: u64,
) -> Option<u32> {
    let ceiling = below + 0.9 * (above - below);
    let mut sorted = ramp.to_vec();
    sorted.sort_by_key(|p| p.0);
    let c = size as f64;
    let (mut hv, mut hh) = (0.0, 0.0);
    for &(f, v) in sorted
        .iter()
        .filter(|p| p.0 > 0)
        .take_while(|p| p.1 < ceiling)
    {
        let h = (1.0 / c - 1.0 / f as f64).max(0.0);
        hv += h * (v - below);
        hh += h * h;
    }
    if hh <= 0.0 || above <= below {
        return None;
    }
    let ways = hv / hh / ((above - below) * c) - 1.0;
    let rounded = ways.round();
    ((ways - rounded).abs() <= 0.25 && (1.0..=1024.0).contains(&rounded)).then_some(rounded as u32)
}

/// The line from latency against stride past the level's size: the latency rises with the
/// stride (`stride / line` of the loads miss) until the stride reaches the line. `None`
/// when even the smallest stride measured already misses on every load.
pub(crate) fn line_from_strides(by_stride: &[(u64, f64)], hit: f64) -> Option<u64> {
    let top = by_stride.iter().map(|p| p.1).fold(f64::MIN, f64::max);
    if by_stride.len() < 2 || top <= hit {
        return None;
    }
    let threshold = hit + 0.85 * (top - hit);
    let first = by_stride.iter().position(|p| p.1 >= threshold)?;
    (first > 0).then(|| by_stride[first].0)
}

/// Ways from the same-set chase: `(elements, latency)` with every element in one set. The
/// latency stays at or below `midpoint` up to the ways and above it from ways + 1 on.
/// `None` unless the curve is clean: low, then high, with at least one of each.
pub(crate) fn ways_from_same_set(by_elements: &[(u64, f64)], midpoint: f64) -> Option<u32> {
    let first_high = by_elements.iter().position(|p| p.1 > midpoint)?;
    let clean = first_high > 0 && by_elements[first_high..].iter().all(|p| p.1 > midpoint);
    let ways = by_elements[first_high - usize::from(first_high > 0)].0;
    (clean && by_elements[first_high].0 == ways + 1).then_some(ways as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ramp_of_wongs_example() {
        // 384 B, 3 ways, 4 sets, 32 B lines, stride 8: misses (F - 384) * 4 / F of the loads
        // of a 32 B line... per line, so a quarter of that per load.
        let (hit, miss) = (10.0, 100.0);
        let at = |f: u64| hit + (miss - hit) * 0.25 * ((f - 384) as f64 * 4.0 / f as f64);
        let ramp: Vec<(u64, f64)> = [416, 448, 480].iter().map(|&f| (f, at(f))).collect();
        let above = hit + (miss - hit) * 0.25;
        let r = fit_ramp(&ramp, hit, above, 0.002, true).unwrap();
        assert!(
            (r.start - 384.0).abs() < 1e-6 && (r.end - 512.0).abs() < 1e-6,
            "{r:?}"
        );
        assert_eq!(snap_size(r.start + 5.0, 32), 384);
        assert_eq!(ways_from_ramp(&ramp, hit, above, 384), Some(3));
    }

    #[test]
    fn snapping_keeps_round_sizes() {
        let mib = 1u64 << 20;
        assert_eq!(snap_size(25.0 * mib as f64 * 1.002, 1024), 25 * mib);
        assert_eq!(snap_size(228.0 * 1024.0 * 0.997, 32), 228 * 1024);
        assert_eq!(snap_size(2040.0, 32), 2048);
        assert_eq!(snap_size(4.0 * mib as f64 * 0.994, 128), 4 * mib);
        assert_eq!(snap_size(4.0 * mib as f64 * 0.990, 128), 4 * mib - 32768);
    }

    #[test]
    fn line_and_ways() {
        let strides = [
            (8, 32.5),
            (16, 35.0),
            (32, 40.0),
            (64, 50.0),
            (128, 50.5),
            (256, 49.8),
        ];
        assert_eq!(line_from_strides(&strides, 30.0), Some(64));
        assert_eq!(line_from_strides(&strides[3..], 30.0), None);
        let set = [
            (1, 30.0),
            (2, 31.0),
            (3, 29.0),
            (4, 30.5),
            (5, 80.0),
            (6, 81.0),
        ];
        assert_eq!(ways_from_same_set(&set, 55.0), Some(4));
        let unclean = [(1, 30.0), (2, 70.0), (3, 29.0), (4, 80.0)];
        assert_eq!(ways_from_same_set(&unclean, 55.0), None);
        assert_eq!(ways_from_same_set(&set[..4], 55.0), None);
    }
}
