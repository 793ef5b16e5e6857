//! What one random read costs over a region of a given size, as the profile tells it.
//!
//! Best source first: the memory kind's measured random-access curve (seconds per read,
//! GPU-wide), or, without a curve, its TLB levels' miss latencies. The latency model
//! understates the fall wherever misses also throttle throughput: seed 000 measured a 4.3x
//! slowdown on the P100 (§2.3) where Table 2's latencies add up to 1.4x.

use crate::profile::{Profile, RandomAccessCurve, RandomAccessPoint, TlbKind};

pub(crate) enum ReadCost {
    /// `(log2 region, seconds per read)`, sorted by region, repeats merged by their median.
    Curve(Vec<(f64, f64)>),
    /// A read costs `base + Σ penalty · (share of pages no level up to this one holds)`
    /// cycles; an all-hit read (`base`) takes `hit_seconds`.
    Latency {
        base_cycles: f64,
        /// `(reach bytes, miss penalty cycles)`, fastest level first.
        levels: Vec<(f64, f64)>,
        hit_seconds: f64,
    },
}

impl ReadCost {
    /// `None` when the curve has fewer than two regions with a positive throughput.
    pub(crate) fn from_curve(curve: &RandomAccessCurve) -> Option<ReadCost> {
        ReadCost::from_points(&curve.points)
    }

    /// The cost of one operation from `(region, operations per second)` points: the read
    /// curve's, or its atomic points (an atomic update for each "read"). `None` with fewer
    /// than two regions of positive throughput.
    pub(crate) fn from_points(points: &[RandomAccessPoint]) -> Option<ReadCost> {
        let mut points: Vec<(u64, f64)> = points
            .iter()
            .filter(|p| p.region_bytes > 0 && p.reads_per_second > 0.0)
            .map(|p| (p.region_bytes, p.reads_per_second))
            .collect();
        points.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
        let merged: Vec<(f64, f64)> = points
            .chunk_by(|a, b| a.0 == b.0)
            .map(|group| ((group[0].0 as f64).log2(), 1.0 / group[group.len() / 2].1))
            .collect();
        (merged.len() >= 2).then_some(ReadCost::Curve(merged))
    }

    /// `None` when the kind shows no TLB level or no base latency.
    pub(crate) fn from_tlb(tlb: &TlbKind, hit_seconds: f64) -> Option<ReadCost> {
        let usable = !tlb.levels.is_empty() && tlb.base_latency_cycles > 0.0;
        usable.then(|| ReadCost::Latency {
            base_cycles: tlb.base_latency_cycles,
            levels: tlb
                .levels
                .iter()
                .map(|l| (l.reach_bytes as f64, l.miss_penalty_cycles.max(0.0)))
                .collect(),
            hit_seconds,
        })
    }

    /// Seconds per read, GPU-wide, of uniformly random reads over `region` bytes. Outside
    /// a curve's range the nearest measured region answers.
    pub(crate) fn seconds(&self, region: u64) -> f64 {
        let x = (region.max(1) as f64).log2();
        match self {
            ReadCost::Curve(points) => {
                let after = points.partition_point(|p| p.0 < x);
                if after == 0 {
                    return points[0].1;
                }
                let Some(&(x1, y1)) = points.get(after) else {
                    return points[points.len() - 1].1;
                };
                let (x0, y0) = points[after - 1];
                y0 + (y1 - y0) * (x - x0) / (x1 - x0)
            }
            ReadCost::Latency {
                base_cycles,
                levels,
                hit_seconds,
            } => {
                // Levels nest: a page held by a faster level is held by the slower ones too
                // (as LRU under uniform traffic tends to make them), so a read pays level l's
                // penalty only when no level up to l holds its page.
                let region = region.max(1) as f64;
                let mut held = 0.0_f64;
                let mut cycles = *base_cycles;
                for &(reach, penalty) in levels {
                    held = held.max((reach / region).min(1.0));
                    cycles += penalty * (1.0 - held);
                }
                hit_seconds * cycles / base_cycles
            }
        }
    }

    pub(crate) fn is_measured(&self) -> bool {
        matches!(self, ReadCost::Curve(_))
    }
}

/// A position drawn but outside the pass's scope costs this share of the fastest random read
/// when the profile does not say: calibrated on seed 000 §6.1's P100, where 2 GB scopes were
/// "purely bound by the pass overhead" beyond 8 GB and still 2x faster at 16 GB
/// (docs/planners.md).
pub(crate) const DEFAULT_DRAW_COST: f64 = 0.125;

/// What drawing a position and skipping it costs, in seconds GPU-wide, and where that came
/// from (for the reasons).
pub(crate) struct DrawCost {
    pub seconds: f64,
    pub source: String,
    /// Measured by the probe with memtune's kernel, whose draws overlap its reads; the
    /// assumed default is seed 000's P100 calibration, made with the draws added to the reads.
    pub measured: bool,
}

impl DrawCost {
    /// The curve's measured `draw_cost_relative`, against the fastest read of that same
    /// curve; failing that (not measured, not a finite non-negative number, or a curve with
    /// no positive throughput), [`DEFAULT_DRAW_COST`] of `hit_seconds`, the fastest read of
    /// any kind.
    pub(crate) fn of(curve: Option<&RandomAccessCurve>, hit_seconds: f64) -> DrawCost {
        let measured = curve.and_then(|c| {
            let d = c
                .draw_cost_relative
                .filter(|d| d.is_finite() && *d >= 0.0)?;
            let fastest = c
                .points
                .iter()
                .map(|p| p.reads_per_second)
                .filter(|r| r.is_finite() && *r > 0.0)
                .reduce(f64::max)?;
            Some((d, fastest))
        });
        match measured {
            Some((d, fastest)) => DrawCost {
                seconds: d / fastest,
                source: format!("{d} of the curve's fastest read, from the profile (draw_cost_relative)"),
                measured: true,
            },
            None => DrawCost {
                seconds: DEFAULT_DRAW_COST * hit_seconds,
                source: format!(
                    "{DEFAULT_DRAW_COST} of the fastest read, assumed (seed 000's P100 calibration; draw cost not measured, run `cargo tune`)"
                ),
                measured: false,
            },
        }
    }
}

/// The fastest random-read throughput measured for any memory kind, in reads per second:
/// the reference "read that hits" against which a drawn-but-skipped read is weighed.
pub(crate) fn fastest_reads_per_second(profile: &Profile) -> Option<f64> {
    [
        &profile.random_access.device,
        &profile.random_access.pinned,
        &profile.random_access.managed,
    ]
    .into_iter()
    .filter_map(|s| s.measured())
    .filter_map(ReadCost::from_curve)
    .filter_map(|c| match c {
        ReadCost::Curve(points) => points.iter().map(|p| 1.0 / p.1).reduce(f64::max),
        ReadCost::Latency { .. } => None,
    })
    .reduce(f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::test_curve as curve;
    use crate::profile::TlbLevel;

    #[test]
    fn curve_interpolates_in_log_region_and_clamps_outside() {
        let c = ReadCost::from_curve(&curve(&[
            (1 << 20, 4.0),
            (1 << 22, 2.0),
            (1 << 22, 1.0),
            (1 << 22, 3.0),
        ]))
        .unwrap();
        // Repeats at 4 MiB merge to their median, 2 reads/s.
        assert_eq!(c.seconds(1 << 22), 0.5);
        assert_eq!(c.seconds(1 << 21), 0.375);
        assert_eq!(c.seconds(1), 0.25);
        assert_eq!(c.seconds(1 << 40), 0.5);
    }

    #[test]
    fn curve_needs_two_regions() {
        assert!(ReadCost::from_curve(&curve(&[(1 << 20, 4.0), (1 << 20, 5.0)])).is_none());
        assert!(ReadCost::from_curve(&curve(&[(1 << 20, 4.0), (1 << 21, 0.0)])).is_none());
    }

    #[test]
    fn latency_pays_each_level_for_the_pages_it_misses() {
        let level = |reach_bytes: u64, miss_penalty_cycles: f64| TlbLevel {
            entries: 1,
            page_bytes: reach_bytes,
            reach_bytes,
            miss_penalty_cycles,
            miss_penalty_ns: 0.0,
            confidence: 1.0,
            shared_by_sms: None,
        };
        let tlb = TlbKind {
            levels: vec![level(100, 10.0), level(1000, 100.0)],
            swept_up_to_bytes: 1 << 20,
            base_latency_cycles: 100.0,
            curves: vec![],
            notes: vec![],
            unstable_levels: vec![],
        };
        let c = ReadCost::from_tlb(&tlb, 2.0).unwrap();
        assert_eq!(c.seconds(100), 2.0);
        // At 1000 bytes: 90% of pages miss L1 (+9 cycles), L2 holds all.
        assert!((c.seconds(1000) - 2.0 * 109.0 / 100.0).abs() < 1e-12);
        // At 2000 bytes: 95% miss L1, 50% miss L2.
        assert!((c.seconds(2000) - 2.0 * (100.0 + 9.5 + 50.0) / 100.0).abs() < 1e-12);
    }
}
