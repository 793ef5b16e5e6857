//! The TLB inference (method in `infer_tlb.rs`) on curves another tool recorded
//! ([`import`](crate::import)). Those curves hold one value a footprint (memtune's sweeps
//! always repeat their first chase; that tells the two apart), on a coarse grid, in a few
//! footprint windows with gaps between (seed 000's tool: one file for 1-5 MiB, one for
//! 48-300, one for 1500-5000), each file with its own noise. Nothing here changes how
//! memtune's own sweeps are read.
//!
//! - **Windows and noise.** The importer names the windows (each file's footprints, split
//!   at gaps). Each window gets its own noise model, and without repeats the noise is the
//!   scatter of the points about the levels the curves are cut into (renewed until the cut
//!   and the scatter agree): differences of neighbours also hold the steps. A window keeps
//!   at most [`WINDOW_POINTS`] points (runs of neighbours averaged): a dense file would make
//!   the segmentation slow, and says no more.
//! - **Brackets.** A step lies between the last point below it and the first above.
//!   memtune's sweep bisects that bracket to a few percent; a coarse grid or a gap leaves it
//!   wide, and a faint step's cut may be a point off (it then takes in one more point each
//!   way). A wide bracket matches any prediction within the tolerance of its range, so a
//!   step that falls in a gap is located at the gap. The level above a step of a wide
//!   bracket is measured from the first point above on.
//! - **Strides that cannot show a level.** A boundary below a curve's first footprint
//!   (the seed tool's 1-4 MiB strides start at 48 MiB, past a 2 MiB level's 16-32 MiB), or
//!   a step too faint for the noise of the points around it, is not expected: a chain
//!   passes over such strides and is not ended by them.
//! - **Faint steps.** A coarse grid gives a plateau few points, so a step alone is less
//!   clear: two faint steps at neighbouring strides that place one boundary start a chain
//!   together, and a chain of one step extends to smaller strides in both readings (the
//!   boundary standing still, or shrinking with the stride).
//! - **Reach.** Each step of a level gives the places it may lie (between neighbouring
//!   points around its cut) with their likelihoods; the reach is the likeliest place of all
//!   its standing steps together (and, for a fully associative level, of its growing ones
//!   scaled back to the page), not the middle of one step's bracket.

use super::infer_tlb::{curve_noise, StrideSteps, SAME_BOUNDARY};
use super::robust::{median, Noise, NOISE_FLOOR};
use super::steps::{detect, points, Point, Ramps, Step};
use memtune_core::profile::{ChaseCurve, ChasePoint};

/// Footprints of one file further apart than this ratio (and than [`GAP_SPACINGS`] typical
/// spacings) lie in two windows: a gap. memtune's own grid never spaces points more than 2x
/// apart.
pub const GAP_RATIO: f64 = 2.2;
/// See [`GAP_RATIO`].
pub const GAP_SPACINGS: f64 = 4.0;
/// Repeats (samples beyond the first of a footprint) from which their scatter is the noise,
/// as `robust::measured_scatter` takes it.
const MIN_REPEATS: usize = 12;
/// Scales a median absolute deviation to a Gaussian standard deviation.
const MAD_TO_SIGMA: f64 = 1.4826;
/// Points a window keeps for the analysis (`thin`).
const WINDOW_POINTS: usize = 64;
/// Passes of cutting a curve into segments and measuring the scatter about them.
const NOISE_PASSES: usize = 4;
/// A window needs this many points to estimate its own noise.
const MIN_WINDOW_POINTS: usize = 8;
/// Places of a step considered each way of where the curve cut it.
const CUT_POINTS: usize = 2;
/// A step this many times a point's noise high leaves no point on the wrong side.
const SURE_Z: f64 = 4.0;
/// The level above a step is measured over footprints up to this factor past it (as
/// `steps.rs` does).
const ABOVE_SPAN: u64 = 4;
/// A step must be this many standard deviations high to show (`steps.rs`'s `MIN_Z`)...
const SHOW_Z: f64 = 4.0;
/// ...measured with at most this many points a side (a plateau may be short).
const PLATEAU_POINTS: usize = 8;
/// A bracket wider than this ratio is matched as a bracket: memtune's sweep refines every
/// bracket to at most this (its frugal bisection's 10%).
const WIDE_BRACKET: f64 = 1.1;

/// The gaps of ascending `footprints`: every `i` such that footprints `i` and `i + 1` lie
/// in different windows.
pub fn gaps(footprints: &[u64]) -> Vec<usize> {
    let ratios: Vec<f64> = footprints
        .windows(2)
        .map(|w| (w[1].max(1) as f64 / w[0].max(1) as f64).ln())
        .collect();
    let mut sorted = ratios.clone();
    sorted.sort_by(f64::total_cmp);
    let Some(&typical) = sorted.get(sorted.len() / 2) else {
        return Vec::new();
    };
    ratios
        .iter()
        .enumerate()
        .filter(|&(_, &r)| r > GAP_RATIO.ln() && r > GAP_SPACINGS * typical)
        .map(|(i, _)| i)
        .collect()
}

/// The noise of each of the footprint windows `given` of `curves`: one for all when there
/// are fewer than two.
pub(crate) fn window_noise(
    curves: &[&ChaseCurve],
    given: &[(u64, u64)],
) -> Vec<((u64, u64), Noise)> {
    let all = noise_of(curves);
    if given.len() <= 1 {
        return vec![((0, u64::MAX), all)];
    }
    given
        .iter()
        .map(|&w| {
            let parts = within(curves, w);
            let count: usize = parts.iter().map(|c| c.points.len()).sum();
            let noise = if count >= MIN_WINDOW_POINTS {
                noise_of(&parts.iter().collect::<Vec<_>>())
            } else {
                all
            };
            (w, noise)
        })
        .collect()
}

/// The noise of `curves`: `curve_noise`'s, but where they have no repeats (another tool's
/// files hold one value per footprint) the sample noise is the scatter of the points about
/// the levels a first pass cuts them into. `curve_noise` then reads it off differences of
/// neighbours, which also hold the steps, and whose median strays with the few points of
/// one window; and without repeats a short chain's wiggle cannot be told from sample noise,
/// so the scatter is all sample noise.
fn noise_of(curves: &[&ChaseCurve]) -> Noise {
    let first = curve_noise(curves);
    if has_repeats(curves) {
        return first;
    }
    // Segments cut with too high a noise hold steps, whose rises then read as scatter: the
    // cut and the scatter are renewed until they agree.
    let mut noise = first;
    for _ in 0..NOISE_PASSES {
        let mut residuals = Vec::new();
        for c in curves {
            let pts = points(c, &noise);
            for s in detect(&pts, Ramps::Short).segments {
                // A segment's level is fitted to its points: their scatter about it is
                // `sqrt((n - 1) / n)` of their noise. Segments of one or two say little.
                let n = s.last + 1 - s.first;
                if n >= 3 {
                    let correction = (n as f64 / (n - 1) as f64).sqrt();
                    residuals.extend(
                        pts[s.first..=s.last]
                            .iter()
                            .map(|p| (p.value - s.level).abs() / p.value * correction),
                    );
                }
            }
        }
        if residuals.len() < MIN_WINDOW_POINTS {
            break;
        }
        let sample = (MAD_TO_SIGMA * median(&residuals)).max(NOISE_FLOOR);
        let settled = (sample / noise.sample - 1.0).abs() < 0.05 && noise.wiggle == 0.0;
        noise = Noise::sampled(sample);
        if settled {
            break;
        }
    }
    noise
}

/// `curve` with at most [`WINDOW_POINTS`] points a window (the whole curve when there are
/// no windows): runs of neighbouring points averaged into one, at the footprint of the
/// run's middle. Another tool may sweep a window in thousands of footprints (seed 000's:
/// 1500-5000 MiB in 1 MiB steps); the segmentation's cost grows with the cube of the
/// points, and a run of neighbours says what its points say, with less noise.
pub(crate) fn thin(curve: &ChaseCurve, windows: &[(u64, u64)]) -> ChaseCurve {
    let mut sorted = curve.points.clone();
    sorted.sort_by_key(|p| p.footprint_bytes);
    let window_of = |f: u64| windows.iter().position(|w| (w.0..=w.1).contains(&f));
    let mut points = Vec::with_capacity(sorted.len().min(WINDOW_POINTS * windows.len().max(1)));
    for part in sorted.chunk_by(|a, b| window_of(a.footprint_bytes) == window_of(b.footprint_bytes))
    {
        let run = part.len().div_ceil(WINDOW_POINTS);
        points.extend(part.chunks(run).map(|c| ChasePoint {
            footprint_bytes: c[c.len() / 2].footprint_bytes,
            cycles_per_load: c.iter().map(|p| p.cycles_per_load).sum::<f64>() / c.len() as f64,
        }));
    }
    ChaseCurve {
        stride_bytes: curve.stride_bytes,
        points,
    }
}

/// Whether `curves` repeat chases enough for their scatter to be the noise, as memtune's
/// sweeps do (`robust::measured_scatter`'s criterion); another tool's files hold one value a
/// footprint.
pub(crate) fn has_repeats(curves: &[&ChaseCurve]) -> bool {
    let repeats: usize = curves
        .iter()
        .map(|c| {
            let mut footprints: Vec<u64> = c.points.iter().map(|p| p.footprint_bytes).collect();
            footprints.sort_unstable();
            footprints.dedup();
            c.points.len() - footprints.len()
        })
        .sum();
    repeats >= MIN_REPEATS
}

/// The parts of `curves` inside the footprint window `w` (curves with none left out).
fn within(curves: &[&ChaseCurve], (from, to): (u64, u64)) -> Vec<ChaseCurve> {
    curves
        .iter()
        .map(|c| ChaseCurve {
            stride_bytes: c.stride_bytes,
            points: c
                .points
                .iter()
                .copied()
                .filter(|p| (from..=to).contains(&p.footprint_bytes))
                .collect(),
        })
        .filter(|c| !c.points.is_empty())
        .collect()
}

/// The points of `curve`, ascending, each with the noise of its window (the first window's
/// where no window holds it).
pub(crate) fn windowed_points(curve: &ChaseCurve, noises: &[((u64, u64), Noise)]) -> Vec<Point> {
    let Some((_, first)) = noises.first() else {
        return Vec::new();
    };
    if noises.len() == 1 {
        return points(curve, first);
    }
    let window_of = |footprint: u64| {
        noises
            .iter()
            .position(|(w, _)| (w.0..=w.1).contains(&footprint))
            .unwrap_or(0)
    };
    let mut out: Vec<Point> = Vec::with_capacity(curve.points.len());
    for (i, (_, noise)) in noises.iter().enumerate() {
        let part = ChaseCurve {
            stride_bytes: curve.stride_bytes,
            points: curve
                .points
                .iter()
                .copied()
                .filter(|p| window_of(p.footprint_bytes) == i)
                .collect(),
        };
        out.extend(points(&part, noise));
    }
    out.sort_by_key(|p| p.footprint);
    out
}

/// `steps` of `points` of another tool's curve, measured in footprint `windows`:
///
/// - With one sample a point, a point next to a step that is not many times its noise high
///   may lie on the wrong side of it: the bracket takes in one more point each way (not
///   across a gap between windows: the other window's points are no neighbours).
/// - `steps.rs` measures the level above a step clear of a ramp's footprints, past its
///   first point above by a fifth, which on a coarse grid or past a gap leaves few points,
///   and the noisier ones of the next window. Past a wide bracket the ramp is over, and the
///   level above is taken from the first point above on (up to the next step, or
///   `ABOVE_SPAN` times further).
pub(crate) fn remeasured(
    points: &[Point],
    mut steps: Vec<Step>,
    windows: &[(u64, u64)],
) -> Vec<Step> {
    let footprints: Vec<u64> = points.iter().map(|p| p.footprint).collect();
    let gaps = gaps(&footprints);
    let window_of = |f: u64| windows.iter().position(|w| (w.0..=w.1).contains(&f));
    let neighbours =
        |i: usize| !gaps.contains(&i) && window_of(footprints[i]) == window_of(footprints[i + 1]);
    let ends: Vec<u64> = steps.iter().skip(1).map(|s| s.lo).collect();
    let at = |f: u64| points.iter().position(|p| p.footprint == f);
    for (i, step) in steps.iter_mut().enumerate() {
        if let (Some(lo), Some(hi)) = (at(step.boundary.0), at(step.boundary.1)) {
            if step.height < SURE_Z * points[lo].sigma.max(points[hi].sigma) {
                let before = if lo > 0 && neighbours(lo - 1) {
                    lo - 1
                } else {
                    lo
                };
                let after = if hi + 1 < points.len() && neighbours(hi) {
                    hi + 1
                } else {
                    hi
                };
                step.boundary = (points[before].footprint, points[after].footprint);
            }
        }
        if !wide(step) {
            continue;
        }
        let to = ends
            .get(i)
            .map_or(u64::MAX, |&next| next)
            .min(step.hi.saturating_mul(ABOVE_SPAN));
        let above: Vec<&Point> = points
            .iter()
            .filter(|p| p.footprint >= step.hi && p.footprint <= to)
            .collect();
        if let Some((level, sigma)) = level_of(&above) {
            step.height = level - step.below;
            step.sigma = step.below_sigma.hypot(sigma);
        }
    }
    steps
}

/// A place a step may lie: between two neighbouring footprints, and the log-likelihood of
/// the curve cut there.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cut {
    pub(crate) below: f64,
    pub(crate) above: f64,
    pub(crate) log_likelihood: f64,
}

/// Where `step` of another tool's curve may lie: between each two neighbouring points from [`CUT_POINTS`] before its cut to as many
/// after, with the log-likelihood of the points there, those before the place at the level
/// below the step and those after at the level above. With one sample a point, noise moves
/// a faint step's cut by a point or two; the likelihoods of several strides together place
/// it (`likeliest`).
pub(crate) fn cuts(points: &[Point], step: &Step) -> Vec<Cut> {
    let Some(lo) = points.iter().position(|p| p.footprint == step.lo) else {
        return Vec::new();
    };
    let first = lo.saturating_sub(CUT_POINTS);
    let last = (lo + 1 + CUT_POINTS).min(points.len() - 1);
    let (low, high) = (step.below, step.below + step.height);
    let misfit = |p: &Point, level: f64| ((p.value - level) / p.sigma).powi(2) / 2.0;
    (first..last)
        .map(|k| Cut {
            below: points[k].footprint as f64,
            above: points[k + 1].footprint as f64,
            log_likelihood: -(first..=last)
                .map(|i| misfit(&points[i], if i <= k { low } else { high }))
                .sum::<f64>(),
        })
        .collect()
}

/// The likeliest boundary given each link's places (`cuts`, scaled to one stride): over
/// the ranges between all their ends, the one where the log-likelihoods add up highest (a
/// link that does not reach it counts its least likely place), its geometric middle. `None`
/// when no link has places.
pub(crate) fn likeliest(links: &[Vec<Cut>]) -> Option<f64> {
    let links: Vec<&Vec<Cut>> = links.iter().filter(|c| !c.is_empty()).collect();
    let mut ends: Vec<f64> = links
        .iter()
        .flat_map(|cuts| cuts.iter().flat_map(|c| [c.below, c.above]))
        .collect();
    ends.sort_by(f64::total_cmp);
    ends.dedup();
    let score = |x: f64| -> f64 {
        links
            .iter()
            .map(|cuts| {
                let worst = cuts
                    .iter()
                    .map(|c| c.log_likelihood)
                    .fold(f64::INFINITY, f64::min);
                cuts.iter()
                    .find(|c| c.below <= x && x < c.above)
                    .map_or(worst, |c| c.log_likelihood)
            })
            .sum()
    };
    ends.windows(2)
        .map(|w| (w[0] * w[1]).sqrt())
        .max_by(|a, b| score(*a).total_cmp(&score(*b)))
}

/// The level of `points`: the weighted mean of those within three standard deviations of
/// their weighted median, and its standard deviation.
fn level_of(points: &[&Point]) -> Option<(f64, f64)> {
    let weight = |p: &Point| 1.0 / (p.sigma * p.sigma).max(1e-12);
    let mut sorted: Vec<&&Point> = points.iter().collect();
    sorted.sort_by(|a, b| a.value.total_cmp(&b.value));
    let total: f64 = sorted.iter().map(|p| weight(p)).sum();
    let mut acc = 0.0;
    let centre = sorted
        .iter()
        .find(|p| {
            acc += weight(p);
            acc >= total / 2.0
        })?
        .value;
    let kept = points
        .iter()
        .filter(|p| (p.value - centre).abs() <= 3.0 * p.sigma);
    let (sum, total) = kept.fold((0.0, 0.0), |(s, t), p| {
        (s + weight(p) * p.value, t + weight(p))
    });
    (total > 0.0).then(|| (sum / total, 1.0 / total.sqrt()))
}

/// Whether a step's bracket is wide enough to be matched as a bracket.
fn wide(step: &Step) -> bool {
    let (below, above) = step.boundary;
    above as f64 > below as f64 * WIDE_BRACKET
}

/// How far (log ratio) either way of its point estimate a step's boundary may lie: half
/// its bracket when that is wide in a curve of one sample a point (`single`), else 0 (the
/// point estimate is what counts; memtune's sweeps place every step they find).
pub(crate) fn spread(step: &Step, single: bool) -> f64 {
    if single && wide(step) {
        let (below, above) = step.boundary;
        (above as f64 / below as f64).ln() / 2.0
    } else {
        0.0
    }
}

/// Whether two boundaries, each `(point, spread)`, are one: their ranges within
/// `tolerance` (log ratio) of each other (for narrow brackets, their points). Returns how
/// far apart the ranges are.
pub(crate) fn miss(a: (f64, f64), b: (f64, f64), tolerance: f64) -> Option<f64> {
    let apart = ((a.0 / b.0).ln().abs() - a.1 - b.1).max(0.0);
    (apart <= tolerance).then_some(apart)
}

/// Where a step at `found` matched to a prediction `predicted` (each `(point, spread)`)
/// puts the boundary: where their ranges overlap (its geometric middle and half width),
/// else the end of the step's range nearest the prediction.
pub(crate) fn placed(found: (f64, f64), predicted: (f64, f64)) -> (f64, f64) {
    let (a, b) = (found.0.ln(), predicted.0.ln());
    let low = (a - found.1).max(b - predicted.1);
    let high = (a + found.1).min(b + predicted.1);
    if low <= high {
        (((low + high) / 2.0).exp(), (high - low) / 2.0)
    } else {
        (b.clamp(a - found.1, a + found.1).exp(), 0.0)
    }
}

/// Whether a step `height` cycles high at `boundary` bytes would show in the curve of
/// `s`: points clear of the boundary on both sides (none below where a curve starts past
/// the boundary), and the height significant against their noise (as `steps.rs` asks of a
/// step, with at most [`PLATEAU_POINTS`] points a side).
pub(crate) fn shows(s: &StrideSteps, boundary: f64, height: f64) -> bool {
    let below: Vec<&Point> = s
        .points
        .iter()
        .filter(|p| (p.footprint as f64) * SAME_BOUNDARY < boundary)
        .collect();
    let above: Vec<&Point> = s
        .points
        .iter()
        .filter(|p| p.footprint as f64 > boundary * SAME_BOUNDARY)
        .collect();
    if below.is_empty() || above.is_empty() {
        return false;
    }
    let near = |side: &[&Point]| side.len().min(PLATEAU_POINTS) as f64;
    let mut sigmas: Vec<f64> = below.iter().chain(&above).map(|p| p.sigma).collect();
    sigmas.sort_by(f64::total_cmp);
    let sigma = sigmas[sigmas.len() / 2] * (1.0 / near(&below) + 1.0 / near(&above)).sqrt();
    height >= SHOW_Z * sigma
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_split_windows_but_a_coarse_or_geometric_grid_does_not() {
        let linear: Vec<u64> = (0..20).map(|i| 100 + 10 * i).collect();
        assert!(gaps(&linear).is_empty());
        let geometric: Vec<u64> = (0..20).map(|i| 1 << i).collect();
        assert!(gaps(&geometric).is_empty());
        let mut two = linear.clone();
        two.extend((0..10).map(|i| 5000 + 100 * i));
        assert_eq!(gaps(&two), vec![19]);
        assert!(gaps(&[]).is_empty());
        assert!(gaps(&[5]).is_empty());
    }
}
