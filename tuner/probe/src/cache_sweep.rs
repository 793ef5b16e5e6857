//! The cache probe: single-thread pointer chases through the L1, L2 and constant paths, and
//! the inference of each level (seed 002, sections III.B and IV.J).
//!
//! Per path, designed for a GPU where a chase costs its warm-up walk plus at most
//! `TIMED_LOADS_CAP` timed loads, a ring of at most 65536 elements (2^20 on the L2 path where
//! the backend allows it, `L2_SWEEP_ELEMENTS`):
//!
//! 1. A coarse latency-against-footprint curve, four footprints per octave (two quick) from
//!    128 B, at a 32 B stride while the ring allows it and the smallest power of two that
//!    keeps it within 65536 elements beyond; it stops at 256 MiB or two octaves past the
//!    last rise, whichever is later (the L1 path: two octaves past its first), or at the
//!    bound. Each rise is re-measured at one stride on both sides (a stride that grows
//!    lifts a plateau of mixed hits without a level). Steps are found by the TLB probe's robust
//!    segmentation, so a spike makes no level.
//!    Rings longer than 2^18 elements at 32 B use a 128 B stride (NVIDIA's line), a
//!    quarter of the loads. Rises below 10% are no level (an H200's L2 path rises 9% at
//!    256 B with no cache behind it).
//! 2. Each step's size: first the stride for it, the line found as in step 4 past the step
//!    (a stride below the line shows only `stride / line` of the rise, so noise would move
//!    the fit that much more), with both plateaus re-measured there; then bisection at that
//!    stride down to one stride, then the Fig. 4 ramp sampled past it and fitted (latency
//!    is linear in 1/footprint there): its start is the size (snapped, see
//!    `infer_cache::snap_size`), its end gives the ways where the whole ring was timed.
//!    Rings of more than 2^18 elements skip the stride and the ramp: bisection to 0.5%
//!    (quick: 1%), snapped.
//! 3. Each level's hit latency at the middle of its plateau, with a stride of at least the
//!    faster levels' lines (128 B where one is unknown) so every load misses them; the
//!    latency past the last level the same way (DRAM on the data paths).
//! 4. The line: latency against stride just past the level, from 8 B up (Wong; past a
//!    level that needs long rings from 64 B up, so 128 B lines still show).
//! 5. The ways: `k` elements spaced by exactly the size (all in one set where set = line
//!    mod sets), `k = 1, 2, ...`: the latency jumps at `k = ways + 1`. Where that is not
//!    clean (hashed sets, non-LRU) and the Fig. 4 ramp gave none either: unknown.

use super::backend::{
    BackendError, Carveout, LoadPath, MemorySystem, CONSTANT_BANK_BYTES, TIMED_LOADS_CAP,
};
use super::infer_cache::{
    fit_ramp, footprint_steps, line_from_strides, medians_by, noise_of, snap_size, ways_from_ramp,
    ways_from_same_set,
};
use super::options::ProbeOptions;
use super::robust::median;
use super::steps::Step;
use memtune_core::profile::{
    CacheCarveout, CacheCurve, CacheCurveKind, CacheLevel, CachePath, CachePoint, MemoryKind,
};

/// The smallest stride of the footprint sweeps: the smallest line (sector) of NVIDIA caches.
const SWEEP_STRIDE: u64 = 32;
/// The sweeps' smallest stride for rings longer than `LONG_ELEMENTS` at 32 B: the line of
/// NVIDIA's L1 and L2.
const LONG_STRIDE: u64 = 128;
/// The smallest stride of the line test: one pointer.
const LINE_MIN_STRIDE: u64 = 8;
const LINE_MAX_STRIDE: u64 = 1024;
/// The largest stride the ramp is measured at (the largest line of NVIDIA caches).
const RAMP_MAX_STRIDE: u64 = 256;
/// The longest ring the sweeps walk, whatever the backend allows (cost).
const SWEEP_ELEMENTS: u64 = 65536;
/// The L2 path's longest ring, where the backend allows it: a cache shows its size only
/// once the ring has more lines than it holds, and an H200's L2 holds about 470 000 lines of
/// 128 B (with 65536 elements its curve stayed flat to 256 MiB). A walk of 2^20 loads
/// costs about 0.3 s there, so the L2 sweep is the probe's most expensive part.
const L2_SWEEP_ELEMENTS: u64 = 1 << 20;
/// The smallest rise that makes a level: an H200's L2 path rises 9% at 256-512 B, with no
/// cache behind it that a stride or same-set chase could find; every cache level seen
/// (and Wong's) rises by far more.
const MIN_LEVEL_RISE: f64 = 0.10;
/// Rings longer than this count as long for the bisection below (an H200's L2 partitions
/// take 450 000 elements and more).
const LONG_ELEMENTS: u64 = 1 << 18;
/// Bisection of a long ring's step stops at this relative width (quick: 8%), and the
/// ramp is not fitted: each of its points costs a walk of up to 2^20 loads. Half a percent
/// still snaps to the size (`snap_size`'s grain is 1/64 of the leading power of two).
const LONG_BISECTION: f64 = 0.005;
/// The line test's longest ring (quick: the sweep's): a stride below the line of a cache of
/// tens of megabytes needs millions of elements.
const LINE_ELEMENTS: u64 = 1 << 21;
/// Rings longer than this are measured once (their mean over thousands of loads is stable
/// on a GPU, and they are expensive).
const CHEAP_ELEMENTS: u64 = 65536;
const FIRST_FOOTPRINT: u64 = 128;
/// Repeats of the first footprint, for the noise estimate.
const CALIBRATION_REPEATS: usize = 32;
/// Repeats of the measurements that set a value (hit latencies, ramps).
const REPEATS: usize = 3;
const HIT_REPEATS: usize = 5;
/// Repeats of a ramp point of a short ring (nearly free; the fit needs them).
const RAMP_REPEATS: usize = 7;
/// A path's coarse sweep ends this factor past its last rise...
const PAST_LAST_RISE: u64 = 4;
/// ...and not before this (but for the L1 path's first level): levels can be far apart
/// (an L1 of 256 KiB, an L2 of 50 MiB), and a path may have no cache at all.
const SPAN: u64 = 256 << 20;
/// Quick mode: one octave past the last rise, and 128 MiB at least.
const QUICK_PAST_LAST_RISE: u64 = 2;
const QUICK_SPAN: u64 = 128 << 20;
/// The same-set chase tries up to this many elements.
const MAX_WAYS: u64 = 64;

/// What one path showed.
#[derive(Debug, Clone)]
pub(crate) struct PathOutcome {
    pub levels: Vec<CacheLevel>,
    /// Cycles past the last level (DRAM, or a constant miss).
    pub beyond_cycles: f64,
    pub curves: Vec<CacheCurve>,
}

/// Measures and infers one path at one carveout. `first_only`: stop after the first level
/// (the L1 path: what lies beyond is the L2 path's).
pub(crate) fn probe_path(
    system: &mut dyn MemorySystem,
    path: LoadPath,
    carveout: Carveout,
    options: &ProbeOptions,
    first_only: bool,
) -> Result<PathOutcome, BackendError> {
    let bound = match path {
        LoadPath::Constant => CONSTANT_BANK_BYTES,
        LoadPath::L1 | LoadPath::L2 => options
            .max_footprint_bytes
            .unwrap_or(u64::MAX)
            .min(system.max_footprint(MemoryKind::Device)),
    };
    let max_elements = system.max_chase_elements();
    PathProbe {
        system,
        path,
        carveout,
        quick: options.quick,
        bound,
        max_elements,
        sweep: Vec::new(),
        extra: Vec::new(),
        validations: Vec::new(),
    }
    .run(first_only)
}

pub(crate) fn cache_path(path: LoadPath) -> CachePath {
    match path {
        LoadPath::L1 => CachePath::L1,
        LoadPath::L2 => CachePath::L2,
        LoadPath::Constant => CachePath::Constant,
    }
}

pub(crate) fn cache_carveout(carveout: Carveout) -> CacheCarveout {
    match carveout {
        Carveout::Default => CacheCarveout::Default,
        Carveout::MaxL1 => CacheCarveout::MaxL1,
    }
}

fn level_name(path: LoadPath, index: usize) -> String {
    match (path, index) {
        (LoadPath::L1, _) => "L1".to_string(),
        (LoadPath::L2, 0) => "L2".to_string(),
        (LoadPath::L2, 1) => "L2 far partition".to_string(),
        (LoadPath::L2, i) => format!("L2 level {}", i + 1),
        (LoadPath::Constant, i) => format!("constant L{}", i + 1),
    }
}

struct PathProbe<'a> {
    system: &'a mut dyn MemorySystem,
    path: LoadPath,
    carveout: Carveout,
    quick: bool,
    bound: u64,
    max_elements: u64,
    /// The coarse sweep, bisections and ramps: latency against footprint.
    sweep: Vec<CachePoint>,
    /// Stride and same-set curves, per level.
    extra: Vec<CacheCurve>,
    /// Steps checked by `validated`: `(lo, top)` and the decision.
    validations: Vec<((u64, u64), Option<Remeasured>)>,
}

/// A step re-measured at one stride: `(stride, below, above)`.
type Remeasured = (u64, f64, f64);

/// One level found on the coarse curve, before its details.
struct Found {
    size: u64,
    /// Where its ramp ends (the plateau above is reached).
    end: f64,
    below: f64,
    above: f64,
    ways_from_ramp: Option<u32>,
}

impl PathProbe<'_> {
    /// The stride the sweeps use at `footprint`: 32 B, or the smallest power of two that
    /// keeps the ring within `SWEEP_ELEMENTS` (and the backend's limit).
    fn sweep_stride(&self, footprint: u64) -> u64 {
        // Long rings at NVIDIA's 128 B line where the ring allows: a quarter of the loads
        // of 32 B, and the same capacity (a stride up to the line sees every line).
        let smallest = if footprint / SWEEP_STRIDE > LONG_ELEMENTS {
            LONG_STRIDE
        } else {
            SWEEP_STRIDE
        };
        footprint
            .div_ceil(self.ring_cap())
            .next_power_of_two()
            .max(smallest)
    }

    /// Repeats of a measurement that sets a value, `wanted` where the ring is cheap, three
    /// (a median that a spike does not move) where it is long.
    fn repeats_of(&self, stride: u64, footprint: u64, wanted: usize) -> usize {
        if footprint / stride > CHEAP_ELEMENTS {
            wanted.min(3)
        } else {
            wanted
        }
    }

    /// A step re-measured at one stride on both sides: `(stride, below, above)`, or `None`
    /// where the rise goes away. Where the sweep's stride grows, a plateau of mixed hits (a
    /// stride below the next level's line) moves up without a level. Decisions are kept,
    /// as the sweep asks again while it grows.
    fn validated(
        &mut self,
        step: &Step,
        noise: f64,
    ) -> Result<Option<(u64, f64, f64)>, BackendError> {
        let key = (step.lo, step.hi.max(step.top));
        if let Some(&(_, decision)) = self.validations.iter().find(|v| v.0 == key) {
            return Ok(decision);
        }
        let stride = self.sweep_stride(key.1);
        // Long rings once: a GPU's mean over their loads is stable, and the rise of a
        // level is far above the noise.
        let once = |f: u64| {
            if f / stride > LONG_ELEMENTS {
                1
            } else {
                REPEATS
            }
        };
        let below = self.median_of(stride, key.0, once(key.0))?;
        let above = self.median_of(stride, key.1, once(key.1))?;
        let decision = (above - below >= (6.0 * noise).max(MIN_LEVEL_RISE) * below)
            .then_some((stride, below, above));
        self.validations.push((key, decision));
        Ok(decision)
    }

    /// How far past the last rise the coarse sweep (and the latency beyond it) goes.
    fn past_last_rise(&self) -> u64 {
        if self.quick {
            QUICK_PAST_LAST_RISE
        } else {
            PAST_LAST_RISE
        }
    }

    /// The footprint the coarse sweep reaches at least.
    fn span(&self) -> u64 {
        if self.quick {
            QUICK_SPAN
        } else {
            SPAN
        }
    }

    /// Rings longer than this get a bisection without the ramp fit (quick: any ring past
    /// the cheap ones; an H200's L2 levels are where a quick probe spent most of its time).
    fn long_elements(&self) -> u64 {
        if self.quick {
            CHEAP_ELEMENTS
        } else {
            LONG_ELEMENTS
        }
    }

    fn ring_cap(&self) -> u64 {
        let cap = match self.path {
            LoadPath::L2 => L2_SWEEP_ELEMENTS,
            LoadPath::L1 | LoadPath::Constant => SWEEP_ELEMENTS,
        };
        cap.min(self.max_elements).max(1)
    }

    fn chase(&mut self, stride: u64, footprint: u64) -> Result<f64, BackendError> {
        self.system
            .cache_chase(self.path, self.carveout, stride, footprint)
    }

    /// A footprint point of the sweep at the sweep's stride: `repeats` chases, kept, their
    /// median returned.
    fn sweep_point(&mut self, footprint: u64, repeats: usize) -> Result<f64, BackendError> {
        self.point_at(self.sweep_stride(footprint), footprint, repeats)
    }

    /// Same, at `stride`.
    fn point_at(
        &mut self,
        stride: u64,
        footprint: u64,
        repeats: usize,
    ) -> Result<f64, BackendError> {
        let footprint = (footprint / stride).max(1) * stride;
        let mut ys = Vec::with_capacity(repeats);
        for _ in 0..repeats.max(1) {
            let y = self.chase(stride, footprint)?;
            self.sweep.push(CachePoint {
                footprint_bytes: footprint,
                stride_bytes: stride,
                cycles_per_load: y,
            });
            ys.push(y);
        }
        Ok(median(&ys))
    }

    /// Repeats worth taking of a chase of `elements`: short rings are nearly free.
    fn repeats_for(&self, elements: u64) -> usize {
        if elements <= TIMED_LOADS_CAP {
            REPEATS
        } else {
            1
        }
    }

    fn run(&mut self, first_only: bool) -> Result<PathOutcome, BackendError> {
        // 1. Coarse curve, the first point repeated for the noise.
        let per_octave: u32 = if self.quick { 2 } else { 4 };
        self.sweep_point(FIRST_FOOTPRINT, CALIBRATION_REPEATS)?;
        let calibration: Vec<f64> = self.sweep.iter().map(|p| p.cycles_per_load).collect();
        let noise = noise_of(&calibration);
        let mut j = 1u32;
        let mut checked_octave = 0;
        loop {
            let footprint =
                (FIRST_FOOTPRINT as f64 * 2f64.powf(f64::from(j) / f64::from(per_octave))) as u64;
            if footprint > self.bound {
                break;
            }
            // Long rings: two points an octave (each costs up to a second).
            if per_octave == 4
                && j % 2 == 1
                && footprint / self.sweep_stride(footprint) > LONG_ELEMENTS
            {
                j += 1;
                continue;
            }
            self.sweep_point(footprint, 1)?;
            j += 1;
            if j / per_octave == checked_octave {
                continue;
            }
            checked_octave = j / per_octave;
            let steps = footprint_steps(&self.sweep, noise);
            let mut real = Vec::new();
            for step in &steps {
                if self.validated(step, noise)?.is_some() {
                    real.push(*step);
                }
            }
            let past = |step: Option<&Step>| {
                step.is_some_and(|s| footprint >= s.hi.saturating_mul(self.past_last_rise()))
            };
            let done = if first_only {
                past(real.first()) || footprint >= self.span()
            } else {
                footprint >= self.span() && (real.is_empty() || past(real.last()))
            };
            if done {
                break;
            }
        }
        // 2. Sizes, of the steps that are real.
        let mut real = Vec::new();
        for step in footprint_steps(&self.sweep, noise) {
            if let Some(v) = self.validated(&step, noise)? {
                real.push((step, v));
            }
        }
        let mut found: Vec<Found> = Vec::new();
        for (i, (step, (stride, below, above))) in real.iter().enumerate() {
            let next = real.get(i + 1).map_or(self.bound, |(s, _)| s.lo);
            let span = (step.lo, step.hi.max(step.top), next);
            found.push(self.size_of(span, *stride, *below, *above, noise)?);
            if first_only {
                break;
            }
        }
        // 5 first: the ways tell where each ramp ends (size * (ways + 1) / ways).
        let mut ways = Vec::new();
        for (i, level) in found.iter_mut().enumerate() {
            let w = match self.ways_same_set(i, level)? {
                Some(w) => Some(w),
                None => level.ways_from_ramp,
            };
            if let Some(w) = w {
                level.end = level.size as f64 * (f64::from(w) + 1.0) / f64::from(w);
            }
            ways.push(w);
        }
        // 3, 4: hit latency in the middle of each plateau, then the line.
        let mut levels: Vec<CacheLevel> = Vec::new();
        let mut lines: Vec<Option<u64>> = Vec::new();
        for i in 0..found.len() {
            let top = found[i].size as f64 * 0.95;
            let floor = match i {
                0 => 0.0,
                _ if found[i - 1].end * 1.05 < top => found[i - 1].end * 1.05,
                // The previous ramp's end is unknown or too close: past its size.
                _ => found[i - 1].size as f64 * 1.05,
            };
            let middle = if floor > 0.0 && floor < top {
                (floor * top).sqrt()
            } else {
                top / 2.0
            };
            // An unknown line is taken as 128 B (NVIDIA's): a larger stride leaves lines out,
            // and hashed sets then hold a larger footprint (an H200's far L2 partition,
            // measured at 256 B, showed the near one's 281 cycles).
            let stride = lines
                .iter()
                .map(|l| l.unwrap_or(LONG_STRIDE))
                .max()
                .unwrap_or(1)
                .max(self.sweep_stride(middle as u64));
            let repeats = self.repeats_of(stride, middle as u64, HIT_REPEATS);
            let hit = self.median_of(stride, middle as u64, repeats)?;
            let line = self.line_of(i, &found, hit)?;
            lines.push(line);
            levels.push(CacheLevel {
                name: level_name(self.path, i),
                path: cache_path(self.path),
                carveout: cache_carveout(self.carveout),
                size_bytes: found[i].size,
                line_bytes: line,
                ways: ways[i],
                hit_latency_cycles: hit,
                attribute_bytes: None,
            });
        }
        // Past the last level.
        let beyond_cycles = match found.last() {
            Some(last) => {
                let footprint = ((last.end * 2.0) as u64)
                    .max(last.size * self.past_last_rise())
                    .min(self.bound);
                let stride = lines
                    .iter()
                    .map(|l| l.unwrap_or(LONG_STRIDE))
                    .max()
                    .unwrap_or(1)
                    .max(self.sweep_stride(footprint));
                let repeats = self.repeats_of(stride, footprint, HIT_REPEATS);
                self.median_of(stride, footprint, repeats)?
            }
            None => {
                let tail: Vec<f64> = medians_by(&self.sweep, |p| p.footprint_bytes)
                    .iter()
                    .rev()
                    .take(4)
                    .map(|p| p.1)
                    .collect();
                median(&tail)
            }
        };
        let mut curves = vec![CacheCurve {
            path: cache_path(self.path),
            carveout: cache_carveout(self.carveout),
            kind: CacheCurveKind::Footprint,
            level: None,
            points: std::mem::take(&mut self.sweep),
        }];
        curves.append(&mut self.extra);
        Ok(PathOutcome {
            levels,
            beyond_cycles,
            curves,
        })
    }

    /// Median of `repeats` chases (not part of the sweep curve).
    fn median_of(
        &mut self,
        stride: u64,
        footprint: u64,
        repeats: usize,
    ) -> Result<f64, BackendError> {
        let footprint = (footprint / stride).max(1) * stride;
        let ys = (0..repeats)
            .map(|_| self.chase(stride, footprint))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(median(&ys))
    }

    /// The stride for the bisection and the ramp, with the plateaus re-measured at it: the
    /// line (the largest stride that still sees every byte of the footprint), found as in
    /// step 4 past the step, or the sweep's `stride` where that shows nothing. At a stride
    /// below the line only the first load of each line misses, so the rise is `stride / line`
    /// of its full height and noise moves the fitted size by as much more (an L2 of 128 B
    /// lines seen at 32 B: four times). A stride above the line would not do: on hashed sets
    /// the cache then holds `stride / line` times the footprint.
    fn ramp_stride(
        &mut self,
        span: (u64, u64, u64),
        stride: u64,
        below: f64,
        above: f64,
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
            return Ok((stride, below, above));
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

    /// Step 2: the size of the level whose rise lies between footprints `lo` and `hi`.
    /// `span`: the step's last footprint below the rise, its first at the top, and the next
    /// step's last below (or the bound).
    fn size_of(
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
            (stride, below, above)
        } else {
            self.ramp_stride(span, stride, below, above)?
        };
        // Five standard deviations: a small cache's first overflowing set shows.
        let threshold = below * (1.0 + 5.0 * noise);
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
        })
    }

    /// Step 4: latency against stride just past level `i`, within the next level.
    fn line_of(
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
    fn ways_same_set(&mut self, i: usize, level: &Found) -> Result<Option<u32>, BackendError> {
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
