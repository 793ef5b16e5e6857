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
//!    On the L1 path that is what one miss fetches (a sector of a sectored line); the line
//!    the tags allocate is counted by chases of 1.5 times the size at strides between
//!    (`cache_sweep_line.rs`).
//! 5. The ways: `k` elements spaced by exactly the size (all in one set where set = line
//!    mod sets), `k = 1, 2, ...`: the latency jumps at `k = ways + 1`. Where that is not
//!    clean (hashed sets, non-LRU) and the Fig. 4 ramp gave none either: unknown.
//!
//! This file holds the method's entry point and its order (`PathProbe::run`); the chases and
//! their repeats are in `cache_sweep_measure.rs`, the details of one level (size, line,
//! ways) in `cache_sweep_level.rs`.

use super::backend::{BackendError, Carveout, LoadPath, MemorySystem, CONSTANT_BANK_BYTES};
use super::infer_cache::{footprint_steps, medians_by, noise_of};
use super::options::ProbeOptions;
use super::robust::median;
use super::steps::Step;
use memtune_core::profile::{
    CacheCarveout, CacheCurve, CacheCurveKind, CacheLevel, CachePath, CachePoint, MemoryKind,
};

/// The smallest stride of the footprint sweeps: the smallest line (sector) of NVIDIA caches.
pub(crate) const SWEEP_STRIDE: u64 = 32;
/// The sweeps' smallest stride for rings longer than `LONG_ELEMENTS` at 32 B: the line of
/// NVIDIA's L1 and L2.
pub(crate) const LONG_STRIDE: u64 = 128;
/// Rings longer than this count as long for the bisection of a level's size (an H200's L2
/// partitions take 450 000 elements and more).
pub(crate) const LONG_ELEMENTS: u64 = 1 << 18;
/// Rings longer than this are measured once (their mean over thousands of loads is stable
/// on a GPU, and they are expensive).
pub(crate) const CHEAP_ELEMENTS: u64 = 65536;
const FIRST_FOOTPRINT: u64 = 128;
/// Repeats of the first footprint, for the noise estimate.
const CALIBRATION_REPEATS: usize = 32;
/// Repeats of the measurements that set a value (hit latencies, ramps).
pub(crate) const REPEATS: usize = 3;
const HIT_REPEATS: usize = 5;
/// Sweep points this factor past the last level's ramp read the latency beyond it.
const BEYOND_SWEPT: f64 = 2.0;

/// What one path showed.
#[derive(Debug, Clone)]
pub(crate) struct PathOutcome {
    pub levels: Vec<CacheLevel>,
    /// Cycles past the last level (DRAM, or a constant miss).
    pub beyond_cycles: f64,
    pub curves: Vec<CacheCurve>,
    /// Optional steps that failed and were left out (the L2 line by capacity).
    pub warnings: Vec<String>,
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
        LoadPath::L1 | LoadPath::L2 | LoadPath::ReadOnly => options
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
        warnings: Vec::new(),
    }
    .run(first_only)
}

pub(crate) fn cache_path(path: LoadPath) -> CachePath {
    match path {
        LoadPath::L1 => CachePath::L1,
        LoadPath::L2 => CachePath::L2,
        LoadPath::Constant => CachePath::Constant,
        LoadPath::ReadOnly => CachePath::ReadOnly,
    }
}

pub(crate) fn cache_carveout(carveout: Carveout) -> CacheCarveout {
    match carveout {
        Carveout::Default => CacheCarveout::Default,
        Carveout::MaxL1 => CacheCarveout::MaxL1,
    }
}

pub(crate) fn level_name(path: LoadPath, index: usize) -> String {
    match (path, index) {
        (LoadPath::L1, _) => "L1".to_string(),
        (LoadPath::L2, 0) => "L2".to_string(),
        (LoadPath::L2, 1) => "L2 far partition".to_string(),
        (LoadPath::L2, i) => format!("L2 level {}", i + 1),
        (LoadPath::Constant, i) => format!("constant L{}", i + 1),
        (LoadPath::ReadOnly, _) => "read-only".to_string(),
    }
}

pub(crate) struct PathProbe<'a> {
    pub(crate) system: &'a mut dyn MemorySystem,
    pub(crate) path: LoadPath,
    pub(crate) carveout: Carveout,
    pub(crate) quick: bool,
    pub(crate) bound: u64,
    pub(crate) max_elements: u64,
    /// The coarse sweep, bisections and ramps: latency against footprint.
    pub(crate) sweep: Vec<CachePoint>,
    /// Stride and same-set curves, per level.
    pub(crate) extra: Vec<CacheCurve>,
    /// Steps checked by `validated`: `(lo, top)` and the decision.
    pub(crate) validations: Vec<((u64, u64), Option<Remeasured>)>,
    /// Optional steps that failed (left out, the path stands).
    pub(crate) warnings: Vec<String>,
}

/// A step re-measured at one stride: `(stride, below, above)`.
pub(crate) type Remeasured = (u64, f64, f64);

/// One level found on the coarse curve, before its details.
pub(crate) struct Found {
    pub(crate) size: u64,
    /// Where its ramp ends (the plateau above is reached).
    pub(crate) end: f64,
    pub(crate) below: f64,
    pub(crate) above: f64,
    pub(crate) ways_from_ramp: Option<u32>,
    /// The stride the size was measured at (a cache holds `size / stride` of its lines
    /// there where the stride is at least the line).
    pub(crate) stride: u64,
}

impl PathProbe<'_> {
    pub(crate) fn run(&mut self, first_only: bool) -> Result<PathOutcome, BackendError> {
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
            // measured at 256 B, shows the near one's 281 cycles).
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
            // 4b: on the L1 path, the line the tags allocate, counted apart from the fetch.
            let fitted = match (self.path, line) {
                (LoadPath::L1, Some(fetch)) => self.allocation_line(i, &found, hit, fetch)?,
                // 4c: past a large L2 the stride test cannot go below the line; the first
                // level's capacity at a few strides tells it instead (a far partition is
                // the same cache, and its rings would cost twice as much). Optional: a
                // failure leaves the line unknown with a warning.
                (LoadPath::L2, None) if i == 0 && !self.quick => {
                    self.optional_line_by_capacity(i, &found, hit)?
                }
                _ => None,
            };
            levels.push(CacheLevel {
                name: level_name(self.path, i),
                path: cache_path(self.path),
                carveout: cache_carveout(self.carveout),
                size_bytes: found[i].size,
                line_bytes: fitted.or(line),
                fetch_bytes: fitted.and(line),
                ways: ways[i],
                hit_latency_cycles: hit,
                attribute_bytes: None,
                size_is_lower_bound: false,
                shares_l1: None,
            });
        }
        // Past the last level: the coarse sweep's own points there where it has two (each
        // a ring of up to 2^20 loads past the L2, about 0.3 s), else measured.
        let beyond_cycles = match found.last() {
            Some(last) => {
                let footprint = ((last.end * 2.0) as u64)
                    .max(last.size * self.past_last_rise())
                    .min(self.bound);
                let swept: Vec<f64> = medians_by(&self.sweep, |p| p.footprint_bytes)
                    .into_iter()
                    .filter(|&(f, _)| f as f64 >= last.end * BEYOND_SWEPT)
                    .map(|p| p.1)
                    .collect();
                if swept.len() >= 2 {
                    median(&swept)
                } else {
                    let stride = lines
                        .iter()
                        .map(|l| l.unwrap_or(LONG_STRIDE))
                        .max()
                        .unwrap_or(1)
                        .max(self.sweep_stride(footprint));
                    let repeats = self.repeats_of(stride, footprint, HIT_REPEATS);
                    self.median_of(stride, footprint, repeats)?
                }
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
            warnings: std::mem::take(&mut self.warnings),
        })
    }
}
