//! The adaptive TLB sweep of one memory kind: pointer-chase curves, one per stride.
//!
//! Design, for a GPU where a chase costs about 0.5-1 µs per load (so what counts is the
//! number of loads walked, and a little the number of calls):
//!
//! - Strides go up by powers of two from `min_stride_bytes`, at least until every reach up
//!   to the footprint bound fits a walk and a walk of 256 loads spans the bound, and then
//!   until four times the largest page found (twice in quick mode) with no level still
//!   growing or awaiting confirmation (see `enough_strides`).
//! - Footprints are counted in loads per walk: `4, 6, 8, 11, ..., 64, 128, ...` up to `max_loads_per_walk`
//!   (and the footprint bound). Small strides thus only get small footprints: a level whose
//!   reach needs more loads shows at larger strides anyway.
//! - Around every change of level the curve shows (a rise, or a fall that unmasks a bump),
//!   footprints are bisected on a geometric scale until the two sides are adjacent load
//!   counts, or within 4% (8% quick) and a fraction of a percent of the load count apart,
//!   so each boundary is placed precisely without a dense grid. The interval just before
//!   the change is narrowed too, so that one point on the wrong side cannot move it.
//! - Repeats follow the measured noise (a calibration at the start, then the spread of all
//!   repeats so far, renewed every round) and cost: short chains, where small first-level
//!   steps live, get enough repeats to resolve a step of about 2% of the latency; long
//!   chains get one sample. Points that may mislead (alone at a level, off their level,
//!   doubtful next to a change) get more, up to four times as many.
//!
//! For the P100 of seed 000 this is about 390 calls and 0.46 million loads without noise,
//! 4,000 calls and 1.1 million loads with 2% noise (repeats); on an H200 (noise far below
//! 0.1%) the three kinds took about 2,300 calls and 4 million loads, 7 s of TLB sweeps.
//! A GPU backend may time only `TIMED_LOADS_CAP` loads of a walk after its warm-up walk.

use super::backend::{BackendError, MemorySystem, TIMED_LOADS_CAP};
use super::infer_tlb::analyse;
use super::options::ProbeOptions;
use super::robust::{
    measured_scatter, median, neighbour_pairs, wiggle, NeighbourPair, Noise, NOISE_FLOOR,
};
use super::steps::{detect, points, Ramps, RAMP_RATIO};
use memtune_core::profile::{ChaseCurve, ChasePoint, MemoryKind};

/// Repeats of the first, shortest chase that calibrate the noise.
const CALIBRATION_REPEATS: usize = 15;
/// Repeats aim to bring a short chain's relative noise down to this.
const TARGET_NOISE: f64 = 0.0055;
const MAX_REPEATS: usize = 16;
const QUICK_MAX_REPEATS: usize = 8;
/// Chains up to this many loads get the full repeats; longer ones proportionally fewer.
const CHEAP_LOADS: u64 = 128;
/// Bisection stops when the two sides of a rise are within this ratio.
const FINE_RATIO: f64 = 1.04;
const QUICK_FINE_RATIO: f64 = 1.08;
/// Only a rise this clear (in standard deviations) starts a ramp whose later rises need no
/// bisection.
const RAMP_START_Z: f64 = 8.0;
/// Bisection stops at this ratio once the load budget is spent.
const FRUGAL_FINE_RATIO: f64 = 1.1;
/// The interval just below a rise is narrowed at least to this ratio.
const VERIFY_RATIO: f64 = 1.25;
/// Strides go this far beyond the largest page found.
const PAGE_MARGIN: u64 = 4;
const QUICK_PAGE_MARGIN: u64 = 2;
/// Up to this many loads the coarse grid grows by sqrt(2), beyond by 2.
const DENSE_UP_TO: u64 = 64;
/// Strides go at least this far: until a walk of this many loads spans the footprint bound.
const SHORT_WALK: u64 = 256;
/// The shortest chain walked. Shorter ones are ruled by cache effects, not translation (on
/// an H200 a one-load chain is 10-20 cycles faster than any other), and a TLB level of
/// fewer entries is not expected.
const MIN_LOADS: u64 = 4;
/// Bound on refinement rounds per stride (each round bisects every unresolved change).
const MAX_ROUNDS: usize = 40;
/// The coarse grid of a window around a level (`sweep_window`) grows by this ratio: three
/// points an octave, as the sweep's dense grid has two.
const WINDOW_GRID: f64 = 1.26;

/// The curves of one kind.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepOutcome {
    /// One curve per stride, ascending; every sample is kept (repeats share a footprint).
    pub curves: Vec<ChaseCurve>,
    /// The largest footprint measured.
    pub swept_up_to_bytes: u64,
    /// The relative noise of one chase, as estimated from the repeats.
    pub noise: f64,
}

/// Sweeps `kind`. `on_stride(stride, fraction)` is called after each stride with an estimate
/// of the fraction of the sweep done.
pub fn sweep_tlb(
    system: &mut dyn MemorySystem,
    kind: MemoryKind,
    options: &ProbeOptions,
    on_stride: &mut dyn FnMut(u64, f64),
) -> Result<SweepOutcome, BackendError> {
    let min_stride = options.min_stride_bytes.max(1);
    let mut sweeper = Sweeper::new(system, kind, options, Noise::sampled(NOISE_FLOOR));
    let margin = if options.quick {
        QUICK_PAGE_MARGIN
    } else {
        PAGE_MARGIN
    };

    let mut curves: Vec<ChaseCurve> = Vec::new();
    let mut stride = min_stride;
    loop {
        let max_loads = sweeper.max_loads.min(sweeper.bound / stride);
        if max_loads < MIN_LOADS {
            break;
        }
        let mut curve = ChaseCurve {
            stride_bytes: stride,
            points: Vec::new(),
        };
        if curves.is_empty() {
            // Calibration: the noise sets the repeats of the first stride's coarse grid.
            sweeper.measure(&mut curve, MIN_LOADS, CALIBRATION_REPEATS)?;
            let ys: Vec<f64> = curve.points.iter().map(|p| p.cycles_per_load).collect();
            let centre = median(&ys);
            if centre > 0.0 {
                let deviations: Vec<f64> = ys.iter().map(|y| (y - centre).abs() / centre).collect();
                sweeper.noise.sample = (1.4826 * median(&deviations)).max(NOISE_FLOOR);
            }
        }
        sweeper.sweep_stride(&curves, &mut curve, max_loads)?;
        curves.push(curve);
        let done = enough_strides(&curves, stride, sweeper.bound, sweeper.max_loads, margin);
        on_stride(
            stride,
            progress_estimate(stride, min_stride, sweeper.bound, sweeper.max_loads, done),
        );
        if done {
            break;
        }
        let Some(next) = stride.checked_mul(2) else {
            break;
        };
        stride = next;
    }
    let swept_up_to_bytes = curves
        .iter()
        .flat_map(|c| c.points.iter().map(|p| p.footprint_bytes))
        .max()
        .unwrap_or(0);
    Ok(SweepOutcome {
        curves,
        swept_up_to_bytes,
        noise: sweeper.noise.sample,
    })
}

/// One curve at `stride` over footprints of `lo_loads..=hi_loads` loads (clamped to the
/// bound and the longest walk): a geometric grid of [`WINDOW_GRID`] steps, then the sweep's
/// own bisection and repeats until every change of level in it is placed as finely as the
/// sweep places them. The noise starts at `noise`, and the repeats' scatter is renewed
/// from `reference` (the sweep's curves) and the window's points, as the sweep does. For
/// re-measuring a level found by [`sweep_tlb`] (`confirm.rs`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn sweep_window(
    system: &mut dyn MemorySystem,
    kind: MemoryKind,
    options: &ProbeOptions,
    noise: Noise,
    reference: &[ChaseCurve],
    stride: u64,
    lo_loads: u64,
    hi_loads: u64,
) -> Result<ChaseCurve, BackendError> {
    let mut sweeper = Sweeper::new(system, kind, options, noise);
    let stride = stride.max(1);
    let hi = hi_loads.min(sweeper.max_loads).min(sweeper.bound / stride);
    let lo = lo_loads.max(MIN_LOADS);
    let mut curve = ChaseCurve {
        stride_bytes: stride,
        points: Vec::new(),
    };
    if hi <= lo {
        return Ok(curve);
    }
    let mut grid: Vec<u64> = std::iter::successors(Some(lo as f64), |n| Some(n * WINDOW_GRID))
        .map(|n| n.round() as u64)
        .take_while(|&n| n < hi)
        .collect();
    grid.push(hi);
    grid.dedup();
    for n in grid {
        if !sweeper.measure(&mut curve, n, sweeper.repeats(n))? {
            break;
        }
    }
    sweeper.refine(reference, &mut curve)?;
    Ok(curve)
}

/// Whether the strides swept so far show every level that can show: strides have reached
/// the point where a level with any reach up to the bound fits in one walk, and are well
/// beyond the largest page, with no level's steps still growing with the stride.
fn enough_strides(
    curves: &[ChaseCurve],
    stride: u64,
    bound: u64,
    max_loads: u64,
    margin: u64,
) -> bool {
    // Every reach up to the bound fits a walk, with room to spare; and a walk of
    // `SHORT_WALK` loads spans the bound, so a large-page level whose steps are still small
    // at smaller strides has had its chance to show.
    let all_reaches_visible =
        stride >= (bound / max_loads).saturating_mul(2) && stride >= bound / SHORT_WALK;
    if !all_reaches_visible {
        return false;
    }
    let analysis = analyse(curves);
    match analysis.largest_page() {
        Some(page) => stride >= page.saturating_mul(margin) && !analysis.unsettled_at(stride),
        // Nothing yet: keep going until strides leave too few loads to show anything.
        None => false,
    }
}

fn progress_estimate(stride: u64, min_stride: u64, bound: u64, max_loads: u64, done: bool) -> f64 {
    if done {
        return 1.0;
    }
    // Typically the sweep ends a stride or two after the floor of `enough_strides`.
    let floor = (bound / max_loads)
        .saturating_mul(2)
        .max(bound / SHORT_WALK);
    let expected_end = floor.saturating_mul(2).max(min_stride.saturating_mul(2));
    let total = (expected_end as f64 / min_stride as f64).log2().max(1.0);
    ((stride as f64 / min_stride as f64).log2() / total).clamp(0.0, 0.95)
}

struct Sweeper<'a> {
    system: &'a mut dyn MemorySystem,
    kind: MemoryKind,
    /// Footprint bound; lowered when an allocation fails.
    bound: u64,
    max_loads: u64,
    max_repeats: usize,
    fine_ratio: f64,
    noise: Noise,
    /// What repeats actually differ by (the sample noise before its floor).
    scatter: f64,
    /// Neighbouring points of the finished curves with no step between them: the wiggle
    /// is estimated from them.
    pairs: Vec<NeighbourPair>,
    /// Loads walked so far (warm-up and timed), and the budget beyond which the sweep
    /// turns frugal.
    spent: u64,
    budget: u64,
}

impl<'a> Sweeper<'a> {
    fn new(
        system: &'a mut dyn MemorySystem,
        kind: MemoryKind,
        options: &ProbeOptions,
        noise: Noise,
    ) -> Sweeper<'a> {
        let bound = options
            .max_footprint_bytes
            .unwrap_or(u64::MAX)
            .min(system.max_footprint(kind));
        Sweeper {
            system,
            kind,
            bound,
            max_loads: options.max_loads_per_walk.max(MIN_LOADS),
            max_repeats: if options.quick {
                QUICK_MAX_REPEATS
            } else {
                MAX_REPEATS
            },
            fine_ratio: if options.quick {
                QUICK_FINE_RATIO
            } else {
                FINE_RATIO
            },
            noise,
            scatter: 0.0,
            pairs: Vec::new(),
            spent: 0,
            budget: options.load_budget_per_kind,
        }
    }

    /// The coarse grid, then bisection around rises until every boundary is fine. The sample
    /// noise is renewed from all repeats so far before each round, and points are topped up
    /// to the repeats it asks for; the wiggle is renewed when the curve is done.
    fn sweep_stride(
        &mut self,
        done: &[ChaseCurve],
        curve: &mut ChaseCurve,
        max_loads: u64,
    ) -> Result<(), BackendError> {
        // Short chains are cheap and carry the first levels' boundaries: a finer grid there.
        let dense =
            (0..).map(|k| (MIN_LOADS as f64 * 2f64.powf(f64::from(k) / 2.0)).round() as u64);
        let mut grid: Vec<u64> = dense
            .take_while(|&n| n < DENSE_UP_TO)
            .chain(std::iter::successors(Some(DENSE_UP_TO), |n| {
                n.checked_mul(2)
            }))
            .take_while(|&n| n <= max_loads)
            .collect();
        if grid.last() != Some(&max_loads) {
            grid.push(max_loads);
        }
        for n in grid {
            let repeats = self.repeats(n);
            let have = curve
                .points
                .iter()
                .filter(|p| p.footprint_bytes == n * curve.stride_bytes)
                .count();
            if !self.measure(curve, n, repeats.saturating_sub(have))? {
                break;
            }
        }
        self.refine(done, curve)?;
        let sampled = Noise::sampled(self.noise.sample);
        let structure = detect(&points(curve, &sampled), Ramps::Short).structure();
        self.pairs.extend(neighbour_pairs(curve, &structure));
        self.noise.wiggle = wiggle(&self.pairs, self.noise.sample);
        Ok(())
    }

    /// Rounds of bisection and repeats until every change of level of `curve` is fine; the
    /// sample noise is renewed from the repeats of `done` and `curve` before each round.
    fn refine(&mut self, done: &[ChaseCurve], curve: &mut ChaseCurve) -> Result<(), BackendError> {
        for _ in 0..MAX_ROUNDS {
            self.scatter = measured_scatter(done.iter().chain(std::iter::once(&*curve)));
            self.noise.sample = self.scatter.max(NOISE_FLOOR);
            let (bisect, repeat) = self.unresolved(curve);
            if bisect.is_empty() && repeat.is_empty() {
                break;
            }
            for n in bisect {
                self.measure(curve, n, self.repeats(n))?;
            }
            for (n, more) in repeat {
                self.measure(curve, n, more)?;
            }
        }
        Ok(())
    }

    /// Load counts to bisect, and load counts to sample more (how many more).
    fn unresolved(&self, curve: &ChaseCurve) -> (Vec<u64>, Vec<(u64, usize)>) {
        let stride = curve.stride_bytes;
        let pts = points(curve, &self.noise);
        let loads = |i: usize| pts[i].footprint / stride;
        let segments = detect(&pts, Ramps::Short).segments;
        let mut bisect: Vec<u64> = Vec::new();
        // Repeats as the current noise estimate asks.
        let mut repeat: Vec<(u64, usize)> = (0..pts.len())
            .map(|i| {
                (
                    loads(i),
                    self.repeats(loads(i)).saturating_sub(pts[i].samples),
                )
            })
            .filter(|&(_, more)| more > 0)
            .collect();
        // More samples (up to four times the usual) where a point may mislead: alone at a
        // level with few samples (a spike?), off its segment's level (a dip the segmentation
        // could not afford to cut out?), or next to a cut and doubtful (see below).
        // (Not where repeats agree far better than the noise floor: real GPUs' clocks.)
        let averaging_helps = self.scatter >= NOISE_FLOOR / 2.0 && !self.frugal();
        let mut more = |i: usize| {
            let cap = 4 * self.repeats(loads(i));
            if pts[i].samples < cap && averaging_helps {
                repeat.push((loads(i), pts[i].samples.min(cap - pts[i].samples)));
            }
        };
        for s in &segments {
            let alone = segments.len() > 1 && s.first == s.last && pts[s.first].samples < 3;
            for (i, p) in pts.iter().enumerate().take(s.last + 1).skip(s.first) {
                if alone || (p.value - s.level).abs() > 3.0 * p.sigma {
                    more(i);
                }
            }
        }
        // Every significant change of level (a rise, or a fall that shows a bump is not a
        // step) is bisected until fine, except rises inside a ramp: a step is placed by
        // where its ramp starts.
        let mut ramp_until = 0.0;
        for pair in segments.windows(2) {
            let (before, after) = (pair[0], pair[1]);
            let change = after.level - before.level;
            if change.abs() < 3.0 * before.sigma.hypot(after.sigma) {
                continue;
            }
            let at = pts[before.last].footprint as f64;
            let in_ramp = change > 0.0 && at <= ramp_until;
            if change >= RAMP_START_Z * before.sigma.hypot(after.sigma) || in_ramp {
                ramp_until = at * RAMP_RATIO;
            }
            if in_ramp {
                continue;
            }
            bisect.extend(self.midpoint(loads(before.last), loads(after.first)));
            // A point at the cut that noise put on the wrong side moves the change by a whole
            // interval: the interval before the cut is narrowed to a quarter (all the way if
            // its last point leans towards the level after), the one after it likewise if its
            // first point leans back.
            let toward =
                |i: usize, from: f64| (pts[i].value - from) * change.signum() > pts[i].sigma;
            if before.last > before.first && !self.frugal() {
                let (earlier, at) = (loads(before.last - 1), loads(before.last));
                if toward(before.last, before.level) || at as f64 > earlier as f64 * VERIFY_RATIO {
                    bisect.extend(self.midpoint(earlier, at));
                }
            }
            let leans_back =
                (after.level - pts[after.first].value) * change.signum() > pts[after.first].sigma;
            if after.first < after.last && leans_back {
                bisect.extend(self.midpoint(loads(after.first), loads(after.first + 1)));
            }
            // Points next to the cut that could be on the wrong side (close to the other
            // level, or off their own) get more samples, so that a faint change is not
            // placed, and then refined, at the wrong place.
            let near = (before.last.saturating_sub(1).max(before.first)..=before.last)
                .map(|i| (i, before.level, after.level))
                .chain(
                    (after.first..=(after.first + 1).min(after.last))
                        .map(|i| (i, after.level, before.level)),
                );
            for (i, own, other) in near {
                let p = pts[i];
                if (p.value - other).abs() < 3.0 * p.sigma || (p.value - own).abs() > 2.0 * p.sigma
                {
                    more(i);
                }
            }
        }
        repeat.sort_unstable();
        repeat.dedup_by_key(|r| r.0);
        bisect.sort_unstable();
        bisect.dedup();
        (bisect, repeat)
    }

    /// Past its load budget the sweep only finishes what it must: one sample per point,
    /// boundaries to 10%, nothing verified twice.
    fn frugal(&self) -> bool {
        self.spent > self.budget
    }

    /// A load count between `lo` and `hi` (geometric middle), unless they are close enough:
    /// adjacent, or within the fine ratio and a fraction of a percent of the load count
    /// apart.
    fn midpoint(&self, lo: u64, hi: u64) -> Option<u64> {
        let fine = if self.frugal() {
            hi as f64 <= lo as f64 * FRUGAL_FINE_RATIO
        } else {
            hi as f64 <= lo as f64 * self.fine_ratio && hi - lo <= (lo / 128).max(1)
        };
        (hi - lo > 1 && !fine)
            .then(|| ((lo as f64 * hi as f64).sqrt().round() as u64).clamp(lo + 1, hi - 1))
    }

    /// Repeats for a chain of `loads`: enough to beat the noise on short chains, fewer as
    /// chains get longer; never two (two samples cannot outvote a spike).
    fn repeats(&self, loads: u64) -> usize {
        if self.frugal() {
            return 1;
        }
        let for_noise = ((self.noise.sample / TARGET_NOISE).powi(2).round() as usize)
            .clamp(1, self.max_repeats);
        let affordable =
            (for_noise as f64 * (CHEAP_LOADS as f64 / loads as f64).min(1.0)).round() as usize;
        match affordable.max(1) {
            2 => 3,
            r => r,
        }
    }

    /// Adds `times` samples of a chain of `loads` loads. Returns false when the footprint is
    /// beyond the bound (which a failed allocation lowers).
    fn measure(
        &mut self,
        curve: &mut ChaseCurve,
        loads: u64,
        times: usize,
    ) -> Result<bool, BackendError> {
        let stride = curve.stride_bytes;
        let footprint = loads.saturating_mul(stride);
        for _ in 0..times {
            if footprint > self.bound {
                return Ok(false);
            }
            self.spent += loads + loads.min(TIMED_LOADS_CAP);
            match self.system.chase(self.kind, stride, footprint, 0) {
                // Kept ordered by footprint, repeats in the order taken.
                Ok(cycles) => curve.points.insert(
                    curve
                        .points
                        .partition_point(|p| p.footprint_bytes <= footprint),
                    ChasePoint {
                        footprint_bytes: footprint,
                        cycles_per_load: cycles,
                    },
                ),
                Err(BackendError::Allocation { .. }) if footprint > stride => {
                    self.bound = footprint / 2;
                    return Ok(false);
                }
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }
}
