//! The figures of `cargo tune reuse --plot DIR`: the reuse-distance CDF and the miss-ratio
//! curve of a trace, one curve per granularity analyzed, each profile level marked at the
//! bytes it holds.
//!
//! Both x axes are in bytes, `items × granularity`, so that a level of `C` items of `g`
//! bytes sits at `C·g` on the curve of granularity `g`: there the CDF reads the level's
//! predicted hit ratio (the references of distance below `C`) and the miss-ratio curve its
//! miss ratio. The CDF's point at `(d + 1)·g` counts the distances up to `d`.

use super::{Axis, Curve, Figure, Marker, Point, Scale, Unit};
use memtune_core::human::bytes;
use memtune_core::reuse::levels::{LevelKind, Prediction};
use memtune_core::reuse::Histogram;
use std::collections::BTreeMap;

/// Capacities evaluated per octave: enough for a smooth curve, few dots per curve.
const POINTS_PER_OCTAVE: u32 = 4;

/// `reuse-cdf.svg` and `reuse-mrc.svg` for the histograms by granularity (bytes per item);
/// `predictions` are the profile's levels (empty without a profile).
pub fn reuse_svgs(
    title: &str,
    histograms: &BTreeMap<u64, Histogram>,
    predictions: &[Prediction],
) -> Vec<(String, String)> {
    vec![
        (
            "reuse-cdf.svg".into(),
            reuse_cdf(title, histograms, predictions).to_svg(),
        ),
        (
            "reuse-mrc.svg".into(),
            miss_ratio_chart(title, histograms, predictions).to_svg(),
        ),
    ]
}

/// Share of references with a distance below each capacity, against capacity in bytes.
pub fn reuse_cdf(
    title: &str,
    histograms: &BTreeMap<u64, Histogram>,
    predictions: &[Prediction],
) -> Figure {
    Figure {
        title: format!("{title}: reuse-distance CDF"),
        x: Axis::log(
            "reuse distance + 1, in bytes (items × granularity)",
            Unit::Bytes,
        ),
        y: ratio_axis("references with a smaller distance"),
        curves: curves(histograms, predictions, |miss| 1.0 - miss),
        markers: markers(predictions, |p| format!("hit {:.3}", p.hit_ratio)),
        note: Some(
            "first uses (cold) have no finite distance: each curve ends below 1 by their \
             share at its granularity; dashed: the profile's levels, at the bytes each holds"
                .to_string(),
        ),
    }
}

/// Miss ratio of a fully associative LRU cache against its capacity in bytes.
pub fn miss_ratio_chart(
    title: &str,
    histograms: &BTreeMap<u64, Histogram>,
    predictions: &[Prediction],
) -> Figure {
    Figure {
        title: format!("{title}: miss-ratio curve (fully associative LRU)"),
        x: Axis::log("capacity in bytes (items × granularity)", Unit::Bytes),
        y: ratio_axis("miss ratio"),
        curves: curves(histograms, predictions, |miss| miss),
        markers: markers(predictions, |p| format!("miss {:.3}", 1.0 - p.hit_ratio)),
        note: Some(
            "cold misses included; dashed: the profile's levels, at the bytes each holds"
                .to_string(),
        ),
    }
}

fn ratio_axis(label: &str) -> Axis {
    Axis {
        label: label.to_string(),
        unit: Unit::Plain,
        scale: Scale::Linear,
    }
}

/// Capacity in items past which the histogram's curves are flat: one past its largest
/// distance.
fn top(h: &Histogram) -> u64 {
    h.exact.last().map_or(1, |(d, _)| d.saturating_add(1))
}

/// One curve per granularity with references: `y(miss ratio)` at log-spaced capacities up
/// to the largest distance + 1, at the capacity of every level of that granularity, and
/// flat from there to the right end of the widest curve or marker, so curves compare.
fn curves(
    histograms: &BTreeMap<u64, Histogram>,
    predictions: &[Prediction],
    y: impl Fn(f64) -> f64,
) -> Vec<Curve> {
    let right = histograms
        .iter()
        .map(|(&g, h)| top(h).saturating_mul(g))
        .chain(predictions.iter().map(|p| p.level.bytes))
        .max()
        .unwrap_or(1);
    histograms
        .iter()
        .filter(|(_, h)| h.references > 0)
        .map(|(&g, h)| {
            let mrc = h.miss_ratio_curve();
            let mut caps = capacities(h, g, predictions);
            let end = right.div_ceil(g);
            if caps.last().is_some_and(|&c| c < end) {
                caps.push(end);
            }
            let points = caps
                .into_iter()
                .map(|c| Point::at(c as f64 * g as f64, y(mrc.at(c))))
                .collect();
            let name = if g == 1 {
                "granule 1 byte".to_string()
            } else {
                format!("granule {}", bytes(g))
            };
            Curve::new(name, points)
        })
        .collect()
}

/// Capacities (items) to evaluate: `POINTS_PER_OCTAVE` per octave from 1 to one past the
/// largest distance, plus the capacities of the levels at granularity `g`.
fn capacities(h: &Histogram, g: u64, predictions: &[Prediction]) -> Vec<u64> {
    let top = top(h);
    let octaves = u64::BITS - top.leading_zeros();
    let mut out: Vec<u64> = (0..=octaves * POINTS_PER_OCTAVE)
        .map(|k| {
            2f64.powf(f64::from(k) / f64::from(POINTS_PER_OCTAVE))
                .round() as u64
        })
        .filter(|&c| c <= top)
        .collect();
    out.push(top);
    out.extend(
        predictions
            .iter()
            .filter(|p| p.level.granularity == g)
            .map(|p| p.level.capacity),
    );
    out.sort_unstable();
    out.dedup();
    out
}

/// A marker per level at the bytes it holds: name, entries or lines × granularity, and
/// `value` (the predicted ratio the figure shows).
fn markers(predictions: &[Prediction], value: impl Fn(&Prediction) -> String) -> Vec<Marker> {
    predictions
        .iter()
        .map(|p| {
            let l = &p.level;
            let what = match l.kind {
                LevelKind::Cache => "lines",
                LevelKind::Tlb => "entries",
            };
            Marker {
                x: l.bytes as f64,
                label: format!(
                    "{} {} {what} × {} = {}: {}",
                    l.name,
                    l.capacity,
                    bytes(l.granularity),
                    bytes(l.bytes),
                    value(p)
                ),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use memtune_core::reuse::levels::{predict, Level};
    use memtune_core::reuse::{analyze_slice, Mode, Options};

    fn cyclic(items: u64, rounds: u64, granularity: u64) -> Histogram {
        let trace: Vec<u64> = (0..rounds)
            .flat_map(|_| (0..items).map(move |i| i * granularity))
            .collect();
        let options = Options {
            granularity,
            ..Options::default()
        };
        analyze_slice(&trace, Mode::ExactCpu, &options).expect("analysis")
    }

    fn level(granularity: u64, capacity: u64) -> Level {
        Level {
            name: "L1".into(),
            kind: LevelKind::Cache,
            granularity,
            line_bytes: granularity,
            capacity,
            bytes: granularity * capacity,
            assumed_granularity: false,
            cycles: None,
        }
    }

    #[test]
    fn the_curve_reads_each_levels_prediction_at_its_marker() {
        // A cycle over 64 lines: every reuse is at distance 63; a 100-line level holds it.
        let h = cyclic(64, 10, 128);
        let histograms = BTreeMap::from([(128, h)]);
        let p = predict(&[level(128, 100), level(128, 16)], |l| {
            histograms.get(&l.granularity)
        });
        let fig = reuse_cdf("t", &histograms, &p);
        assert_eq!(fig.curves.len(), 1);
        for pr in &p {
            let at = fig.curves[0]
                .points
                .iter()
                .find(|pt| pt.x == pr.level.bytes as f64)
                .expect("a point at the level's bytes");
            assert!((at.y - pr.hit_ratio).abs() < 1e-12, "{at:?} vs {pr:?}");
        }
        assert_eq!(fig.markers.len(), 2);
        let label = &fig.markers[0].label;
        assert!(
            label.contains("100 lines × 128 bytes = 12.50 KiB: hit 0.900"),
            "{label}"
        );
        let mrc = miss_ratio_chart("t", &histograms, &p);
        let last = mrc.curves[0].points.last().expect("points");
        assert_eq!(last.y, 0.1, "only the 64 cold misses of 640 remain");
        let ys: Vec<f64> = mrc.curves[0].points.iter().map(|p| p.y).collect();
        assert!(ys.windows(2).all(|w| w[1] <= w[0]), "{ys:?}");
    }

    #[test]
    fn capacities_are_log_spaced_and_bounded_by_the_largest_distance() {
        let h = cyclic(1000, 3, 1);
        let c = capacities(&h, 1, &[]);
        assert_eq!((c[0], *c.last().expect("points")), (1, 1000));
        assert!(
            c.len() <= 10 * POINTS_PER_OCTAVE as usize + 2,
            "{}",
            c.len()
        );
        assert!(c.windows(2).all(|w| w[1] > w[0]));
        let empty = BTreeMap::from([(1, Histogram::new())]);
        assert!(reuse_cdf("t", &empty, &[]).curves.is_empty());
    }
}
