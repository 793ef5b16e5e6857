//! One cache level's details, once the coarse sweep has found its rise: the stride to
//! measure it at (its line), its size by bisection and the fitted ramp (step 2 of the
//! method in `cache_sweep.rs`), its line from a stride test (step 4) and its ways from a
//! same-set chase (step 5).

use super::backend::{BackendError, TIMED_LOADS_CAP};
use super::cache_sweep::{
    cache_carveout, cache_path, level_name, Found, PathProbe, Remeasured, CHEAP_ELEMENTS,
    LONG_ELEMENTS, LONG_STRIDE, REPEATS, SWEEP_STRIDE,
};
use super::infer_cache::{
    fit_ramp, line_from_strides, medians_by, snap_size, ways_from_ramp, ways_from_same_set,
};
use super::robust::median;
use memtune_core::profile::{CacheCurve, CacheCurveKind, CachePoint};

/// A bisection point over the hit by this many standard deviations of the noise has
/// overflowed: a small cache's first overflowing set shows.
const MARGIN_SIGMAS: f64 = 5.0;

/// The smallest stride of the line test: one pointer.
const LINE_MIN_STRIDE: u64 = 8;
const LINE_MAX_STRIDE: u64 = 1024;
/// The largest stride the ramp is measured at (the largest line of NVIDIA caches).
const RAMP_MAX_STRIDE: u64 = 256;
/// Bisection of a long ring's step stops at this relative width (quick: 8%), and the
/// ramp is not fitted: each of its points costs a walk of up to 2^20 loads. Half a percent
/// still snaps to the size (`snap_size`'s grain is 1/64 of the leading power of two).
const LONG_BISECTION: f64 = 0.005;
/// The line test's longest ring (quick: the sweep's): a stride below the line of a cache of
/// tens of megabytes needs millions of elements.
const LINE_ELEMENTS: u64 = 1 << 21;
/// Repeats of a ramp point of a short ring (nearly free; the fit needs them).
const RAMP_REPEATS: usize = 7;
/// The same-set chase tries up to this many elements.
const MAX_WAYS: u64 = 64;

impl PathProbe<'_> {
    /// The stride for the bisection and the ramp, with the plateaus re-measured at it: the
    /// line (the largest stride that still sees every byte of the footprint), found as in
    /// step 4 past the step, or the sweep's `stride` where that shows nothing. At a stride
    /// below the line only the first load of each line misses, so the rise is `stride / line`
    /// of its full height and noise moves the fitted size by as much more (an L2 of 128 B
    /// lines seen at 32 B: four times). A stride above the line would not do: on hashed sets
    /// the cache then holds `stride / line` times the footprint.
    pub(crate) fn ramp_stride(
        &mut self,
        span: (u64, u64, u64),
        stride: u64,
        below: f64,
        above: f64,
        noise: f64,
    ) -> Result<Remeasured, BackendError> {
        let (lo, hi, next) = span;
        // Past any ramp (a way is at most the size), short of the next level.
        let past = (2 * hi).min(next).max(hi);
        let mut by_stride = Vec::new();
        let mut s = stride.max(past.div_ceil(self.ring_cap()).next_power_of_two());
        while s <= RAMP_MAX_STRIDE && past / s >= 8 {
            by_stride.push((s, self.median_of(s, past, REPEATS)?));
            s *= 2;
        }
        let Some(line) = line_from_strides(&by_stride, below) else {
            return Ok((
                stride,
                self.hit_now(stride, lo, (below, above), noise)?,
                above,
            ));
        };
        // The fit is pinned by these two: repeated more than the points between.
        let repeats = match lo / line {
            n if n <= TIMED_LOADS_CAP => RAMP_REPEATS,
            n if n <= CHEAP_ELEMENTS => REPEATS,
            _ => 1,
        };
        Ok((
            line,
            self.median_of(line, lo, repeats)?,
            self.median_of(line, past, repeats)?,
        ))
    }

    /// The level's hit re-timed at `stride` over `lo` (its last footprint below the rise),
    /// where it moved by more than the bisection's margin and still reads as a hit, else the
    /// sweep's. The sweep's hit, timed many chases before, may no longer hold: an H100's L2
    /// hit depends on the SM a one-block chase lands on (262-295 cycles), and one probe read
    /// 272 in the sweep and 288 from the bisection on, which put every bisection point over
    /// the threshold (a near L2 of 13.9 MiB for 24). Within the margin the sweep's hit, a
    /// median of more chases, stays.
    fn hit_now(
        &mut self,
        stride: u64,
        lo: u64,
        (below, above): (f64, f64),
        noise: f64,
    ) -> Result<f64, BackendError> {
        let footprint = (lo / stride * stride).max(stride);
        let again = self.median_of(stride, footprint, REPEATS)?;
        let moved = (again - below).abs() > MARGIN_SIGMAS * noise * below;
        Ok(if moved && again < (below + above) / 2.0 {
            again
        } else {
            below
        })
    }

    /// Step 2: the size of the level whose rise lies between footprints `lo` and `hi`.
    /// `span`: the step's last footprint below the rise, its first at the top, and the next
    /// step's last below (or the bound).
    pub(crate) fn size_of(
        &mut self,
        span: (u64, u64, u64),
        stride: u64,
        below: f64,
        above: f64,
        noise: f64,
    ) -> Result<Found, BackendError> {
        let (lo, hi, _) = span;
        let long = lo / stride > self.long_elements();
        let (stride, below, above) = if long {
            (
                stride,
                self.hit_now(stride, lo, (below, above), noise)?,
                above,
            )
        } else {
            self.ramp_stride(span, stride, below, above, noise)?
        };
        let threshold = below * (1.0 + MARGIN_SIGMAS * noise);
        // Bisection on multiples of the stride: `low` stays below the threshold.
        let (mut low, mut high) = (lo / stride * stride, hi.div_ceil(stride) * stride);
        let width = if self.quick { 16.0 } else { 1.0 } * LONG_BISECTION;
        while high - low > stride && !(long && (high - low) as f64 <= width * low as f64) {
            let mid = (low + (high - low) / 2) / stride * stride;
            let mid = mid.clamp(low + stride, high - stride);
            let repeats = self.repeats_for(mid / stride);
            let mut y = self.point_at(stride, mid, repeats)?;
            if y > threshold && repeats == 1 {
                // A spike must not move the boundary down: confirm a rise.
                let again = [
                    y,
                    self.point_at(stride, mid, 1)?,
                    self.point_at(stride, mid, 1)?,
                ];
                y = median(&again);
            }
            if y > threshold {
                high = mid;
            } else {
                low = mid;
            }
        }
        if long {
            let size = snap_size((low + high) as f64 / 2.0, stride);
            return Ok(Found {
                size,
                end: 2.0 * size as f64,
                below,
                above,
                ways_from_ramp: None,
                stride,
            });
        }
        // The ramp around `low`: linear offsets either side, then doubling ones. A ramp is
        // at most a way (1/ways of the size) long, and no longer than the timed window of
        // a long ring (whose first loads are the sets that overflow first): the linear
        // offsets cover 1/8 of the size or that window, whichever is shorter.
        let linear = if self.quick { 6 } else { 12 };
        // On a power-of-two grid of at least 256 B where the size allows: a stride below
        // the line makes a staircase of one step per line, which such points sample where
        // it meets the ramp's line (lines are at most 256 B).
        let step = (low / 96)
            .min(TIMED_LOADS_CAP * stride / 8)
            .max(256.min(low / 8))
            .max(stride);
        let step = 1u64 << step.ilog2();
        let base = low / step * step;
        let mut footprints: Vec<u64> = (0..=linear / 3)
            .filter_map(|k| base.checked_sub(step * k))
            .chain((1..=linear).map(|k| base + step * k))
            .chain([low + low / 4, low + low / 2, 2 * low])
            .map(|f| f / stride * stride)
            .filter(|&f| f > 0 && f <= self.bound && f / stride <= self.ring_cap())
            .collect();
        footprints.sort_unstable();
        footprints.dedup();
        let mut ramp = Vec::new();
        for f in footprints {
            let repeats = match f / stride {
                n if n <= TIMED_LOADS_CAP => RAMP_REPEATS,
                n if n <= 4 * TIMED_LOADS_CAP => REPEATS,
                _ => 1,
            };
            let y = self.point_at(stride, f, repeats)?;
            ramp.push((f, y));
            if f > base + step * linear && y >= above * (1.0 - 4.0 * noise) {
                break;
            }
        }
        // Rings timed whole: the ramp's points up to where they stop being so.
        let whole = (low + stride) / stride <= TIMED_LOADS_CAP;
        if whole {
            ramp.retain(|&(f, _)| f / stride <= TIMED_LOADS_CAP);
        }
        let fitted = fit_ramp(&ramp, below, above, noise, whole);
        // Without a fit (a ramp too steep for two points on it: a small cache, whose first
        // overflowing set the bisection saw), the bisection's footprint is the size.
        let size = fitted.map_or(low, |r| snap_size(r.start, stride));
        // Without the end of a whole ramp, twice the size is past it for any ways.
        let end = fitted
            .filter(|r| whole && r.end / stride as f64 <= TIMED_LOADS_CAP as f64)
            .map_or(2.0 * size as f64, |r| r.end.max(size as f64));
        let ways_from_ramp = fitted
            .filter(|r| whole && r.end / stride as f64 <= TIMED_LOADS_CAP as f64)
            .and_then(|_| ways_from_ramp(&ramp, below, above, size));
        Ok(Found {
            size,
            end,
            below,
            above,
            ways_from_ramp,
            stride,
        })
    }

    /// Step 4: latency against stride just past level `i`, within the next level.
    pub(crate) fn line_of(
        &mut self,
        i: usize,
        found: &[Found],
        hit: f64,
    ) -> Result<Option<u64>, BackendError> {
        let level = &found[i];
        let mut footprint = (level.end * 1.05) as u64;
        if let Some(next) = found.get(i + 1) {
            footprint = footprint.min(next.size * 9 / 10);
        }
        footprint = footprint.min(self.bound);
        let cap = if self.quick {
            self.ring_cap()
        } else {
            self.max_elements.min(LINE_ELEMENTS).max(self.ring_cap())
        };
        // Past a long level, from half NVIDIA's line: a stride below the line shows it,
        // and each halving doubles the cost of the longest ring.
        let first = if footprint / SWEEP_STRIDE > LONG_ELEMENTS {
            LONG_STRIDE / 2
        } else {
            LINE_MIN_STRIDE
        };
        let smallest = footprint.div_ceil(cap).next_power_of_two().max(first);
        if self.quick && footprint / smallest > CHEAP_ELEMENTS {
            // Quick: a level that needs long rings keeps its line unknown (its rings cost
            // most of a quick probe, and a stride test that cannot go below the line would
            // answer wrong).
            return Ok(None);
        }
        let mut points = Vec::new();
        let mut stride = smallest;
        while stride <= LINE_MAX_STRIDE && footprint / stride >= 8 {
            let f = footprint / stride * stride;
            // Repeated where cheap: one spike at the smallest stride would hide the line.
            let repeats = if f / stride > CHEAP_ELEMENTS {
                1
            } else {
                REPEATS
            };
            for _ in 0..repeats {
                let y = self.chase(stride, f)?;
                points.push(CachePoint {
                    footprint_bytes: f,
                    stride_bytes: stride,
                    cycles_per_load: y,
                });
            }
            stride *= 2;
        }
        let by_stride = medians_by(&points, |p| p.stride_bytes);
        let line = line_from_strides(&by_stride, hit);
        self.extra.push(CacheCurve {
            path: cache_path(self.path),
            carveout: cache_carveout(self.carveout),
            kind: CacheCurveKind::Stride,
            level: Some(level_name(self.path, i)),
            points,
        });
        Ok(line)
    }

    /// Step 5: `k` elements spaced by the size, all in one set of an LRU cache indexed by
    /// line mod sets; the latency jumps when `k` passes the ways.
    pub(crate) fn ways_same_set(
        &mut self,
        i: usize,
        level: &Found,
    ) -> Result<Option<u32>, BackendError> {
        let spacing = level.size;
        let midpoint = (level.below + level.above) / 2.0;
        let mut points = Vec::new();
        let mut by_k: Vec<(u64, f64)> = Vec::new();
        let mut k = 1;
        let mut highs = 0;
        while k <= MAX_WAYS && k.saturating_mul(spacing) <= self.bound && highs < 3 {
            let footprint = k * spacing;
            let mut ys = vec![self.chase(spacing, footprint)?];
            if ys[0] > midpoint && highs == 0 {
                // Confirm the first rise: a spike is not a full set.
                ys.push(self.chase(spacing, footprint)?);
                ys.push(self.chase(spacing, footprint)?);
            }
            for &y in &ys {
                points.push(CachePoint {
                    footprint_bytes: footprint,
                    stride_bytes: spacing,
                    cycles_per_load: y,
                });
            }
            let y = median(&ys);
            if y > midpoint {
                highs += 1;
            }
            by_k.push((k, y));
            k += 1;
        }
        self.extra.push(CacheCurve {
            path: cache_path(self.path),
            carveout: cache_carveout(self.carveout),
            kind: CacheCurveKind::SameSet,
            level: Some(level_name(self.path, i)),
            points,
        });
        Ok(ways_from_same_set(&by_k, midpoint))
    }
}
