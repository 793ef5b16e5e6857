//! The cache probe's measurements: the stride a sweep uses at a footprint, how often a
//! chase is repeated, the chases themselves (kept on the sweep curve or not), and the
//! re-measurement that tells a level's rise from a stride change. `cache_sweep.rs` holds the
//! method that calls them.

use super::backend::{BackendError, LoadPath, TIMED_LOADS_CAP};
use super::cache_sweep::{
    PathProbe, CHEAP_ELEMENTS, LONG_ELEMENTS, LONG_STRIDE, REPEATS, SWEEP_STRIDE,
};
use super::robust::median;
use super::steps::Step;
use memtune_core::profile::CachePoint;

/// The longest ring the sweeps walk, whatever the backend allows (cost).
const SWEEP_ELEMENTS: u64 = 65536;
/// The L2 path's longest ring, where the backend allows it: a cache shows its size only
/// once the ring has more lines than it holds, and an H200's L2 holds about 470 000 lines of
/// 128 B (with 65536 elements its curve stays flat to 256 MiB). A walk of 2^20 loads
/// costs about 0.3 s there, so the L2 sweep is the probe's most expensive part.
const L2_SWEEP_ELEMENTS: u64 = 1 << 20;
/// The smallest rise that makes a level: an H200's L2 path rises 9% at 256-512 B, with no
/// cache behind it that a stride or same-set chase could find; every cache level seen
/// (and Wong's) rises by far more.
const MIN_LEVEL_RISE: f64 = 0.10;
/// A path's coarse sweep ends this factor past its last rise...
const PAST_LAST_RISE: u64 = 4;
/// ...and not before this (but for the L1 path's first level): levels can be far apart
/// (an L1 of 256 KiB, an L2 of 50 MiB), and a path may have no cache at all.
const SPAN: u64 = 256 << 20;
/// Quick mode: one octave past the last rise, and 128 MiB at least.
const QUICK_PAST_LAST_RISE: u64 = 2;
const QUICK_SPAN: u64 = 128 << 20;

impl PathProbe<'_> {
    /// The stride the sweeps use at `footprint`: 32 B, or the smallest power of two that
    /// keeps the ring within `SWEEP_ELEMENTS` (and the backend's limit).
    pub(crate) fn sweep_stride(&self, footprint: u64) -> u64 {
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
    pub(crate) fn repeats_of(&self, stride: u64, footprint: u64, wanted: usize) -> usize {
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
    pub(crate) fn validated(
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

    /// `quick` in a quick probe, else `full`.
    fn quick_or(&self, quick: u64, full: u64) -> u64 {
        if self.quick {
            quick
        } else {
            full
        }
    }

    /// How far past the last rise the coarse sweep (and the latency beyond it) goes.
    pub(crate) fn past_last_rise(&self) -> u64 {
        self.quick_or(QUICK_PAST_LAST_RISE, PAST_LAST_RISE)
    }

    /// The footprint the coarse sweep reaches at least.
    pub(crate) fn span(&self) -> u64 {
        self.quick_or(QUICK_SPAN, SPAN)
    }

    /// Rings longer than this get a bisection without the ramp fit (quick: any ring past
    /// the cheap ones: on an H200 the L2 levels' long rings are most of a quick probe's time).
    pub(crate) fn long_elements(&self) -> u64 {
        self.quick_or(CHEAP_ELEMENTS, LONG_ELEMENTS)
    }

    pub(crate) fn ring_cap(&self) -> u64 {
        let cap = match self.path {
            LoadPath::L2 => L2_SWEEP_ELEMENTS,
            LoadPath::L1 | LoadPath::Constant | LoadPath::ReadOnly => SWEEP_ELEMENTS,
        };
        cap.min(self.max_elements).max(1)
    }

    pub(crate) fn chase(&mut self, stride: u64, footprint: u64) -> Result<f64, BackendError> {
        self.system
            .cache_chase(self.path, self.carveout, stride, footprint)
    }

    /// A footprint point of the sweep at the sweep's stride: `repeats` chases, kept, their
    /// median returned.
    pub(crate) fn sweep_point(
        &mut self,
        footprint: u64,
        repeats: usize,
    ) -> Result<f64, BackendError> {
        self.point_at(self.sweep_stride(footprint), footprint, repeats)
    }

    /// Same, at `stride`.
    pub(crate) fn point_at(
        &mut self,
        stride: u64,
        footprint: u64,
        repeats: usize,
    ) -> Result<f64, BackendError> {
        self.chases(stride, footprint, repeats.max(1), true)
    }

    /// Repeats worth taking of a chase of `elements`: short rings are nearly free.
    pub(crate) fn repeats_for(&self, elements: u64) -> usize {
        if elements <= TIMED_LOADS_CAP {
            REPEATS
        } else {
            1
        }
    }

    /// Median of `repeats` chases (not part of the sweep curve).
    pub(crate) fn median_of(
        &mut self,
        stride: u64,
        footprint: u64,
        repeats: usize,
    ) -> Result<f64, BackendError> {
        self.chases(stride, footprint, repeats, false)
    }

    /// Median of `repeats` chases at `stride` over `footprint` rounded down to whole
    /// strides (one stride at least), each added to the sweep curve when `on_curve`.
    fn chases(
        &mut self,
        stride: u64,
        footprint: u64,
        repeats: usize,
        on_curve: bool,
    ) -> Result<f64, BackendError> {
        let footprint = (footprint / stride).max(1) * stride;
        let mut ys = Vec::with_capacity(repeats);
        for _ in 0..repeats {
            let y = self.chase(stride, footprint)?;
            if on_curve {
                self.sweep.push(CachePoint {
                    footprint_bytes: footprint,
                    stride_bytes: stride,
                    cycles_per_load: y,
                });
            }
            ys.push(y);
        }
        Ok(median(&ys))
    }
}
