//! Inference of a TLB hierarchy from pointer-chase curves (pure).
//!
//! 1. Every curve (one stride) is cut into persistent steps (`steps.rs`), against a noise
//!    model estimated from the curves themselves: the scatter of repeats, and a wiggle of
//!    short chains that repeats do not average away (on real GPUs a chain of `n` loads is
//!    off its level by about `wiggle / sqrt(n)`, its few lines sitting in near or far L2
//!    partitions), measured between neighbouring points that no step separates.
//! 2. Steps are chained across strides into levels. While the stride is at most a level's
//!    page, its boundary stands still in bytes (every page is visited; set-associative
//!    levels stand still a little longer); beyond, it grows with the stride and stays at a
//!    fixed number of loads. A chain therefore goes from stride to stride (one missing
//!    stride tolerated) standing still, then growing. Only a clear step starts a chain; a
//!    faint one (below the page a step is lower) joins one, upwards or downwards. A step
//!    that two chains claim is a merged step (two levels missing at once): it counts for
//!    position, not height.
//! 3. Consistency across strides separates TLB levels from other latency effects: a chain
//!    needs steps of its own at two neighbouring strides, heights that grow no faster than
//!    the stride, and it must run on while its boundary is inside the footprints swept (a
//!    chance alignment of noise steps stops); a bump that comes back down is no step.
//! 4. The page is read off the heights, the pattern of seed 000 Figure 2: below the page a
//!    step is `penalty * stride / page` high (one miss per page, shared by several loads),
//!    from the page on it is the full penalty. Among the chain's strides up to the last
//!    one where its boundary still stood still, the page is the one whose model fits the
//!    heights best (weighted least squares, residuals clipped so one bad step cannot
//!    decide); a page below that stride means a set-associative level and must beat the
//!    fully associative reading clearly.
//! 5. The penalty is the weighted mean height of the full-height steps; the reach is the
//!    boundary of the standing steps (outliers dropped, clearest steps first); entries are
//!    reach / page.
//! 6. A level whose page is at most the smallest stride never stands still, so no chain
//!    shows its page; it is read off the two smallest strides instead (`finest_level`),
//!    from their steps with staircases joined (`Ramps::Staircases`, placed where they reach
//!    half their height). A second stride's step at more loads than the first's (a
//!    staircase's tilt) is read as the same loads, between the two. Where the two steps
//!    stand at the same bytes and the third stride's at the second's loads, the page is the
//!    second stride. Chains are built from the steps with short ramps only.
//!
//! 7. Curves another tool recorded (one value a footprint, a coarse grid, a few footprint
//!    windows with gaps between, each file its own noise) are read with the adjustments of
//!    `infer_tlb_windows.rs`; memtune's own sweeps, which always repeat their first chase,
//!    are read as above.
//!
//! 8. The profile reports a level only where its step is significant against the curves'
//!    own noise and at least a set share of the base latency, pages growing from level to
//!    level (`infer_tlb_gate.rs`); every level left out leaves a note in the profile.
//!    Another tool's curves, without repeats to read the noise off, are not gated.
//!
//! This file reads the curves and places the finest level (steps 1 and 6); the chains are
//! built in `infer_tlb_chains.rs` (steps 2 and 3), a chain's page, entries and penalty
//! are fitted in `infer_tlb_fit.rs` (steps 4 and 5), and the levels reported are chosen in
//! `infer_tlb_gate.rs` (step 8).

use super::infer_tlb_chains::{boundary, build_chains, claims, ends_early, untangle};
use super::infer_tlb_fit::{fit_level, FitLink};
use super::infer_tlb_gate::{describe, gate, GateCurve};
use super::infer_tlb_windows::{
    cuts, has_repeats, remeasured, thin, window_noise, windowed_points,
};
use super::robust::{median, neighbour_pairs, sample_noise, wiggle, Noise};
use super::steps::{detect, points, steps_of, Point, Ramps, Step};
use memtune_core::profile::{ChaseCurve, TlbKind, TlbLevel};

/// Two boundaries within this ratio are the same boundary.
pub(crate) const SAME_BOUNDARY: f64 = 1.2;
/// A level must show a step of its own (not shared with another level) at this many strides,
/// two of them neighbours: a coincidence of noise steps at two distant strides is no level.
pub(crate) const MIN_STRIDES: usize = 2;
/// Only a step this clear (height over its standard deviation) starts a chain; fainter ones
/// may join one.
pub(crate) const STRONG_Z: f64 = 6.0;
/// The two smallest strides place a level finer than both at numbers of loads this close.
const FINEST_SAME_LOADS: f64 = 1.7;

/// Levels reported in the profile must add at least this share of the base latency per
/// miss. Across the host link (about 2000 cycles a load on an H200) the latency drifts by
/// 1-2% as footprints grow; those drifts are not levels. The smallest real level in seed
/// 000's Table 2 (P100 L1: +9 cycles over 293) is 3%.
const MIN_RELATIVE_PENALTY: f64 = 0.025;
/// Levels whose curves barely show them (confidence under this) are left out of the profile;
/// the raw curves stay for a human to look at.
const MIN_CONFIDENCE: f64 = 0.1;

/// The TLB hierarchy shown by `curves` (one per stride), swept up to `swept_up_to_bytes`, on
/// a GPU clocked at `clock_mhz`. The curves are kept in the result.
pub fn infer_tlb(curves: Vec<ChaseCurve>, swept_up_to_bytes: u64, clock_mhz: f64) -> TlbKind {
    infer_tlb_in(curves, &[], swept_up_to_bytes, clock_mhz)
}

/// [`infer_tlb`] of curves measured in footprint `windows` (`(from, to)` bytes, e.g. one per
/// file of another tool, see [`import`](crate::import)), each with a noise of its own
/// (`infer_tlb_windows.rs`). [`infer_tlb`] takes the curves as one window.
pub fn infer_tlb_in(
    curves: Vec<ChaseCurve>,
    windows: &[(u64, u64)],
    swept_up_to_bytes: u64,
    clock_mhz: f64,
) -> TlbKind {
    let analysis = analyse_in(&curves, windows);
    let levels = analysis
        .reported
        .iter()
        .map(|f| TlbLevel {
            entries: f.entries,
            page_bytes: f.page_bytes,
            reach_bytes: f.entries * f.page_bytes,
            miss_penalty_cycles: round2(f.penalty_cycles),
            miss_penalty_ns: if clock_mhz > 0.0 {
                round2(f.penalty_cycles * 1000.0 / clock_mhz)
            } else {
                0.0
            },
            confidence: round2(f.confidence),
            shared_by_sms: None,
        })
        .collect();
    TlbKind {
        levels,
        swept_up_to_bytes,
        base_latency_cycles: round2(analysis.base_latency_cycles),
        curves,
        notes: analysis.notes,
        unstable_levels: Vec::new(),
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// What the curves say, with what the sweep needs to decide whether to go on.
#[derive(Debug, Clone)]
pub(crate) struct Analysis {
    /// Fastest (smallest reach) first.
    pub levels: Vec<FittedLevel>,
    pub base_latency_cycles: f64,
    /// The last strides of step chains not (yet) confirmed as levels.
    pub unconfirmed_until: Vec<u64>,
    /// The levels the profile reports (`infer_tlb_gate.rs`), by reach.
    pub reported: Vec<FittedLevel>,
    /// Why each other level is not reported.
    pub notes: Vec<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct FittedLevel {
    pub entries: u64,
    pub page_bytes: u64,
    pub penalty_cycles: f64,
    pub confidence: f64,
    /// The largest stride at which the level was seen.
    pub last_stride: u64,
    /// Whether the fit read a set-associative level (its boundary stands still past the
    /// page a while longer instead of growing with the stride at once).
    pub set_associative: bool,
}

impl FittedLevel {
    /// Whether the profile reports this level: clear enough, and costing more than drift.
    fn reported(&self, base_latency_cycles: f64) -> bool {
        self.confidence >= MIN_CONFIDENCE
            && self.penalty_cycles >= MIN_RELATIVE_PENALTY * base_latency_cycles
    }
}

impl Analysis {
    /// The largest page found, if any level was.
    pub(crate) fn largest_page(&self) -> Option<u64> {
        self.levels.iter().map(|l| l.page_bytes).max()
    }

    /// Whether the strides up to `stride` may not show everything yet: some level's steps
    /// were still growing (its page may be larger than any stride swept so far), or a step
    /// at `stride` awaits confirmation by the next stride.
    pub(crate) fn unsettled_at(&self, stride: u64) -> bool {
        self.levels
            .iter()
            .any(|l| l.page_bytes >= stride && l.last_stride >= stride)
            || self.unconfirmed_until.contains(&stride)
    }
}

/// The noise of the curves: sample noise from their repeats, and the wiggle from neighbours
/// that no step lies between (found with the sample noise alone).
pub(crate) fn curve_noise(curves: &[&ChaseCurve]) -> Noise {
    let sample = sample_noise(curves.iter().copied());
    let pairs: Vec<_> = curves
        .iter()
        .flat_map(|c| {
            neighbour_pairs(
                c,
                &detect(&points(c, &Noise::sampled(sample)), Ramps::Short).structure(),
            )
        })
        .collect();
    Noise {
        sample,
        wiggle: wiggle(&pairs, sample),
    }
}

/// The steps of one stride's curve.
pub(crate) struct StrideSteps {
    pub(crate) stride: u64,
    pub(crate) steps: Vec<Step>,
    /// The steps with staircases joined, for `finest_level` only: levels of coarser pages
    /// are read from `steps` (short ramps only).
    pub(crate) staircases: Vec<Step>,
    pub(crate) base: Option<f64>,
    /// The largest footprint the curve reaches.
    pub(crate) reach: u64,
    /// The curve's points, ascending.
    pub(crate) points: Vec<Point>,
    /// Whether the curves hold no repeats: another tool's (memtune's sweeps always repeat
    /// their first chase), read with the rules of `infer_tlb_windows.rs`.
    pub(crate) single: bool,
}

pub(crate) fn analyse(curves: &[ChaseCurve]) -> Analysis {
    analyse_in(curves, &[])
}

fn analyse_in(curves: &[ChaseCurve], windows: &[(u64, u64)]) -> Analysis {
    let curves: Vec<&ChaseCurve> = curves
        .iter()
        .filter(|c| c.stride_bytes > 0 && !c.points.is_empty())
        .collect();
    let single = !has_repeats(&curves);
    let thinned: Vec<ChaseCurve> = if single {
        curves.iter().map(|c| thin(c, windows)).collect()
    } else {
        Vec::new()
    };
    let curves: Vec<&ChaseCurve> = if single {
        thinned.iter().collect()
    } else {
        curves
    };
    let noises = window_noise(&curves, windows);
    let mut strides: Vec<StrideSteps> = curves
        .iter()
        .map(|c| {
            let points = windowed_points(c, &noises);
            let d = detect(&points, Ramps::Short);
            StrideSteps {
                stride: c.stride_bytes,
                steps: if single {
                    remeasured(&points, d.steps, windows)
                } else {
                    d.steps
                },
                staircases: steps_of(&points, &d.segments, Ramps::Staircases),
                base: d.segments.first().map(|s| s.level),
                single,
                points: points.clone(),
                reach: c
                    .points
                    .iter()
                    .map(|p| p.footprint_bytes)
                    .max()
                    .unwrap_or(0),
            }
        })
        .collect();
    strides.sort_by_key(|s| s.stride);
    let bases: Vec<f64> = strides.iter().filter_map(|s| s.base).collect();
    let base_latency_cycles = median(&bases);

    let chains = untangle(build_chains(&strides), &strides);
    let claims = claims(&chains);
    let mut levels = Vec::new();
    let mut unconfirmed_until = Vec::new();
    for chain in &chains {
        let links: Vec<FitLink> = chain
            .links
            .iter()
            .map(|l| {
                let s = &strides[l.stride_index];
                FitLink {
                    stride_index: l.stride_index,
                    stride: s.stride,
                    step: s.steps[l.step_index],
                    boundary: l.boundary,
                    merged: claims[&(l.stride_index, l.step_index)] > 1,
                    cuts: if s.single {
                        cuts(&s.points, &s.steps[l.step_index])
                    } else {
                        Vec::new()
                    },
                }
            })
            .collect();
        match fit_level(&links).filter(|l| !ends_early(chain, &strides, l)) {
            Some(level) => levels.push(level),
            None => unconfirmed_until.extend(links.iter().map(|l| l.stride).max()),
        }
    }
    let reported: Vec<&FittedLevel> = levels
        .iter()
        .filter(|l| l.reported(base_latency_cycles))
        .collect();
    levels.extend(finest_level(&strides, &reported));
    levels.sort_by_key(|l| l.entries * l.page_bytes);
    let (reported, notes) = report(&strides, &levels, base_latency_cycles);
    Analysis {
        levels,
        base_latency_cycles,
        unconfirmed_until,
        reported,
        notes,
    }
}

/// The levels the profile reports: clear enough and costing more than drift
/// (`FittedLevel::reported`), then significant against the curves' own noise
/// (`infer_tlb_gate.rs`); a note for each level left out.
fn report(
    strides: &[StrideSteps],
    levels: &[FittedLevel],
    base_latency_cycles: f64,
) -> (Vec<FittedLevel>, Vec<String>) {
    let (candidates, faint): (Vec<FittedLevel>, Vec<FittedLevel>) = levels
        .iter()
        .cloned()
        .partition(|l| l.reported(base_latency_cycles));
    let mut notes: Vec<String> = faint
        .iter()
        .map(|l| {
            format!(
                "{}: dropped, confidence under {MIN_CONFIDENCE} or penalty under {}% of the \
                 base latency",
                describe(l),
                100.0 * MIN_RELATIVE_PENALTY
            )
        })
        .collect();
    // Another tool's curves (one sample a footprint, windows with gaps) keep the rules of
    // `infer_tlb_windows.rs`: the gate's noise is read off memtune's repeats.
    if strides.iter().any(|s| s.single) {
        return (candidates, notes);
    }
    let curves: Vec<GateCurve<'_>> = strides
        .iter()
        .map(|s| GateCurve {
            stride: s.stride,
            points: &s.points,
        })
        .collect();
    let (reported, gated) = gate(&curves, &candidates, base_latency_cycles);
    notes.extend(gated);
    (reported, notes)
}

/// A level whose page is at most the smallest stride swept: its boundary grows with the
/// stride from the first stride on, so it never shows the standing half of seed 000's
/// Figure 2, and a chain through it hinges on how precisely noise lets its steps be placed.
/// The two smallest strides (one twice the other) must each show a clear step at about the
/// same number of loads, of heights alike (full height at both; a staircase split by noise,
/// or cut off by the end of the sweep, reads low), and no level the profile would report may
/// be as fine. Mapped host memory on an H200 has one: about 4000 entries of 4 KiB pages
/// whose misses add 7-11% to a 2100-cycle load, in a staircase over 6-32 MiB. Where the
/// two steps stand at the same bytes instead, and the third stride's at the second's
/// loads, the page is the second stride: the same figure's pattern, one stride on, which
/// the staircases hide from the chains just as well.
fn finest_level(strides: &[StrideSteps], levels: &[&FittedLevel]) -> Option<FittedLevel> {
    let [first, second, ..] = strides else {
        return None;
    };
    if second.stride != 2 * first.stride {
        return None;
    }
    let clear = |s: &&Step| s.height >= STRONG_Z * s.sigma;
    let loads = |s: &Step, stride: u64| boundary(s, stride) / stride as f64;
    let a = first
        .staircases
        .iter()
        .filter(clear)
        .max_by(|x, y| x.height.total_cmp(&y.height))?;
    let a_loads = loads(a, first.stride);
    // The second stride's staircase may come in pieces (noise splits a tread too long to
    // join): the clear steps within twice the tolerance count as one, placed at their
    // height-weighted geometric mean.
    let pieces: Vec<&Step> = second
        .staircases
        .iter()
        .filter(clear)
        .filter(|s| (loads(s, second.stride) / a_loads).ln().abs() <= 2.0 * FINEST_SAME_LOADS.ln())
        .collect();
    let b_height: f64 = pieces.iter().map(|s| s.height).sum();
    let heights = b_height / a.height;
    if pieces.is_empty() || !(0.3..=3.0).contains(&heights) {
        return None;
    }
    let b_loads = (pieces
        .iter()
        .map(|s| s.height * loads(s, second.stride).ln())
        .sum::<f64>()
        / b_height)
        .exp();
    let near = |x: f64, y: f64| (x / y).ln().abs() <= FINEST_SAME_LOADS.ln();
    // No level puts the second stride's boundary at more loads than the first's; where
    // the steps say so (up to the pieces' window), their halves are misplaced by a
    // staircase's tilt (an H200's pinned memory at a 4 KiB stride rises over 6-26 MiB but
    // is half up by 8 MiB): the same loads, between the two.
    let tilted = b_loads > a_loads && (b_loads / a_loads).ln() <= 2.0 * FINEST_SAME_LOADS.ln();
    let (page_bytes, entries, last_stride) = if near(a_loads, b_loads) || tilted {
        (first.stride, (a_loads * b_loads).sqrt(), second.stride)
    } else if near(a_loads, 2.0 * b_loads) {
        // The same bytes at both: the page is larger than the first stride. The third
        // stride confirms a page of the second when its clear step has the second's loads
        // (an H200's pinned memory: 17 and 19 MiB at 4 and 8 KiB, then 2663 loads of 16 KiB).
        let third = strides.get(2).filter(|t| t.stride == 2 * second.stride)?;
        let c = third
            .staircases
            .iter()
            .filter(clear)
            .map(|s| loads(s, third.stride))
            .filter(|&c| near(c, b_loads))
            .min_by(|x, y| {
                (x / b_loads)
                    .ln()
                    .abs()
                    .total_cmp(&(y / b_loads).ln().abs())
            })?;
        (second.stride, (b_loads * c).sqrt(), third.stride)
    } else {
        return None;
    };
    let entries = entries.round() as u64;
    let reach = (entries * page_bytes) as f64;
    // (In another tool's curves, nor one of a larger page at about the same reach: the
    // same level, whose steps at the two smallest strides noise moved apart.)
    let single = first.single && second.single;
    if levels.iter().any(|l| {
        let other = (l.entries * l.page_bytes) as f64;
        other < reach * SAME_BOUNDARY || (single && l.page_bytes > page_bytes && near(other, reach))
    }) {
        return None;
    }
    let b_sigma = pieces.iter().map(|s| s.sigma.powi(2)).sum::<f64>().sqrt();
    let (wa, wb) = (a.sigma.powi(-2), b_sigma.powi(-2));
    let penalty = (wa * a.height + wb * b_height) / (wa + wb);
    // Confidence as `fit_level` gives it: clarity, and the pattern seen (full height at
    // twice the page; the half-height stride below the page was not swept).
    let clarity = 1.0 - (-penalty * (wa + wb).sqrt() / 10.0).exp();
    let pattern = 0.6 + 0.2 * f64::from(u8::from((0.75..=1.3).contains(&heights)));
    Some(FittedLevel {
        entries,
        page_bytes,
        penalty_cycles: penalty,
        confidence: clarity * pattern,
        last_stride,
        set_associative: false,
    })
}
