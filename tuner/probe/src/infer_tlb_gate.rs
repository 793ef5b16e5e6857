//! Which fitted TLB levels the profile reports (method in `infer_tlb.rs`): one significance
//! rule, against the noise the curves themselves show, for every level however it was found
//! (chains, `finest_level`, another tool's windows).
//!
//! A level of `E` entries of `P`-byte pages puts, at a stride `s >= P`, a step of its full
//! penalty at the footprint `b = E * s` (at `s = P`, its reach). At each such stride (the
//! first [`TESTED_STRIDES`] with [`MIN_POINTS`] points on both sides) the step is measured
//! between the plateau before the boundary (footprints `b / SPAN ..= b / GUARD`) and the
//! plateau after it (`b * GUARD ..= b * SPAN`), each point the robust mean of its repeats:
//!
//! - `d = median(after) - median(before)`, less the steps the levels already accepted put
//!   between the two (so one level's step, met again at a coarser stride where it has grown
//!   with the stride, does not pass for another level); points within `GUARD` of an
//!   accepted level's boundary (its ramp) are left out;
//! - `sigma`, one point's noise there: the larger of the pooled robust spread of the points
//!   about their plateau's median (`1.4826 * MAD`: the repeats' scatter and the curve's
//!   wiggle, as measured) and the noise model's standard deviation of such a point
//!   (`Noise::of_point`: sample noise over the repeats, wiggle over the loads);
//! - `z = d / (1.2533 * sigma * sqrt(1 / n_before + 1 / n_after))`: the step over the
//!   standard error of a difference of two medians of `n` points.
//!
//! A level is reported when the median `z` of its tested strides is at least [`MIN_Z`] and
//! its median `d`, or its fitted penalty where that is higher, at least
//! [`MIN_RELATIVE_STEP`] of the base latency. Levels are tested
//! clearest (highest confidence) first, each against those already accepted. Pages must
//! then not shrink from one level to the next (a coarser level translates larger pages); a
//! level that breaks the order is dropped. Every level dropped leaves a note saying why.

use super::infer_tlb::FittedLevel;
use super::robust::median;
use super::steps::Point;

/// A step must be this many standard errors high (median over the tested strides). Fitted
/// on the recorded H100 and H200 profiles (`docs/calibration.md`): the pinned readings it
/// drops lie at 0.2-2.9; the finest pinned levels at 3.5-21, all but one H200's (`661d3e91`,
/// 1367 x 4 KiB at 2.1: its 8 and 16 KiB strides show no step where 1367 entries would).
pub(crate) const MIN_Z: f64 = 3.0;
/// A step must also be at least this share of the base latency. The smallest level of seed
/// 000's Table 2 (P100 L1: +9 cycles over 293) is 3%; across the host link the latency
/// drifts by 1-2% as footprints grow.
pub(crate) const MIN_RELATIVE_STEP: f64 = 0.025;
/// Scales the standard deviation of `n` points to that of their median (`sqrt(pi / 2)`).
const MEDIAN_EFFICIENCY: f64 = 1.2533;
/// The plateaus start this factor away from the boundary: a set-associative level's ramp
/// and an H200's pinned staircase (6-32 MiB around a reach of 12-22 MiB) lie inside.
const GUARD: f64 = 1.3;
/// ...and reach this factor away from it.
const SPAN: f64 = 4.0;
/// Points each plateau needs for the stride to test the level.
const MIN_POINTS: usize = 2;
/// Strides (the first ones at or beyond the page with points on both sides) that test a
/// level.
const TESTED_STRIDES: usize = 3;
/// Scales a median absolute deviation to a Gaussian standard deviation.
const MAD_TO_SIGMA: f64 = 1.4826;

/// One stride's curve as the gate reads it.
pub(crate) struct GateCurve<'a> {
    pub(crate) stride: u64,
    /// Ascending by footprint, each with the noise model's standard deviation.
    pub(crate) points: &'a [Point],
}

/// A level's step at one stride: its height, and that over its standard error.
#[derive(Debug, Clone, Copy)]
struct Measured {
    height: f64,
    z: f64,
}

/// The levels of `levels` the profile reports (by reach), and a note for each one dropped.
pub(crate) fn gate(
    curves: &[GateCurve<'_>],
    levels: &[FittedLevel],
    base_latency_cycles: f64,
) -> (Vec<FittedLevel>, Vec<String>) {
    let mut order: Vec<&FittedLevel> = levels.iter().collect();
    order.sort_by(|a, b| b.confidence.total_cmp(&a.confidence));
    let mut accepted: Vec<(FittedLevel, f64)> = Vec::new();
    let mut notes = Vec::new();
    for level in order {
        let measured: Vec<Measured> = curves
            .iter()
            .filter(|c| c.stride >= level.page_bytes)
            .filter_map(|c| measure(c, level, accepted.iter().map(|a| &a.0)))
            .take(TESTED_STRIDES)
            .collect();
        if measured.is_empty() {
            notes.push(format!(
                "{}: dropped, no stride has footprints on both sides of its boundary clear of \
                 the steps of the levels kept (a finer level's step may lie anywhere from its \
                 reach to entries x stride)",
                describe(level)
            ));
            continue;
        }
        let height = median(&measured.iter().map(|m| m.height).collect::<Vec<_>>());
        let z = median(&measured.iter().map(|m| m.z).collect::<Vec<_>>());
        // The size test takes the larger of the plateaus' difference and the fit's penalty
        // (read at the boundary itself): 1.3-4x before a boundary at 16 loads the chains
        // are 4-12 loads long, and their wiggle moves that plateau by a few cycles, which
        // halves a 10-cycle step on some machines. Significance stays the plateaus' own.
        let relative = height.max(level.penalty_cycles) / base_latency_cycles;
        if z < MIN_Z {
            notes.push(format!(
                "{}: dropped, its step ({height:.1} cycles) is {z:.1} standard errors of the \
                 curves' noise there, under {MIN_Z}",
                describe(level)
            ));
        } else if relative < MIN_RELATIVE_STEP {
            notes.push(format!(
                "{}: dropped, its step ({height:.1} cycles) is {:.1}% of the base latency, \
                 under {:.1}%",
                describe(level),
                100.0 * relative,
                100.0 * MIN_RELATIVE_STEP
            ));
        } else {
            accepted.push((level.clone(), z));
        }
    }
    accepted.sort_by_key(|(l, _)| l.entries * l.page_bytes);
    // Of two neighbours whose pages shrink, the less significant goes.
    let mut kept: Vec<(FittedLevel, f64)> = Vec::new();
    for (level, z) in accepted {
        while let Some((finer, finer_z)) = kept.last() {
            if level.page_bytes >= finer.page_bytes || *finer_z >= z {
                break;
            }
            notes.push(out_of_order(finer, &level));
            kept.pop();
        }
        match kept.last() {
            Some((finer, _)) if level.page_bytes < finer.page_bytes => {
                notes.push(out_of_order(&level, finer));
            }
            _ => kept.push((level, z)),
        }
    }
    let kept = kept.into_iter().map(|(l, _)| l).collect();
    (kept, notes)
}

/// The note for `dropped`, whose pages do not grow from or to those of `other`'s.
fn out_of_order(dropped: &FittedLevel, other: &FittedLevel) -> String {
    format!(
        "{}: dropped, its pages and those of {} shrink from one level to the next; it is \
         the less significant of the two",
        describe(dropped),
        describe(other)
    )
}

/// `E x page (+penalty cycles, confidence c)`.
pub(crate) fn describe(level: &FittedLevel) -> String {
    format!(
        "{} x {} (+{:.1} cycles, confidence {:.2})",
        level.entries,
        bytes(level.page_bytes),
        level.penalty_cycles,
        level.confidence
    )
}

fn bytes(b: u64) -> String {
    match b {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

/// Where `level`'s step lies at `stride` (from, to bytes) and how high it is. Up to the
/// page it stands at the reach; beyond, a fully associative level's grows with the stride
/// (`entries * stride`), a set-associative one's stands still a while longer, so it lies
/// anywhere between the two. A level under test is given that range whatever the fit read;
/// an accepted one, the fit's reading (`assumed`).
fn span_and_height(level: &FittedLevel, stride: u64, assumed: bool) -> (f64, f64, f64) {
    let reach = level.entries as f64 * level.page_bytes as f64;
    let grown = level.entries as f64 * level.page_bytes.max(stride) as f64;
    let height = level.penalty_cycles * (stride as f64 / level.page_bytes as f64).min(1.0);
    let from = if assumed && !level.set_associative {
        grown
    } else {
        reach
    };
    (from, grown, height)
}

/// `level`'s step in `curve`, less the steps of `accepted`, if both plateaus have points.
fn measure<'a>(
    curve: &GateCurve<'_>,
    level: &FittedLevel,
    accepted: impl Iterator<Item = &'a FittedLevel>,
) -> Option<Measured> {
    let (from, to, _) = span_and_height(level, curve.stride, false);
    let others: Vec<(f64, f64, f64)> = accepted
        .map(|l| span_and_height(l, curve.stride, true))
        .collect();
    // Points clear of the accepted levels' ramps, less the steps those put below them.
    let usable: Vec<(f64, f64, f64)> = curve
        .points
        .iter()
        .map(|p| (p.footprint as f64, p.value, p.sigma))
        .filter(|&(f, _, _)| {
            others
                .iter()
                .all(|&(lo, hi, _)| f < lo / GUARD || f > hi * GUARD)
        })
        .map(|(f, value, sigma)| {
            let explained: f64 = others
                .iter()
                .filter(|&&(_, hi, _)| f > hi)
                .map(|&(_, _, h)| h)
                .sum();
            (f, value - explained, sigma)
        })
        .collect();
    // A plateau: the points within `SPAN` of the step, nearest first; where a gap between
    // another tool's footprint windows leaves fewer, the nearest `MIN_POINTS`.
    let plateau = |side: Vec<&(f64, f64, f64)>, within: &dyn Fn(f64) -> bool| {
        let near = side.iter().take_while(|p| within(p.0)).count();
        side.into_iter()
            .take(near.max(MIN_POINTS))
            .map(|&(_, v, sigma)| (v, sigma))
            .collect::<Vec<_>>()
    };
    let before = plateau(
        usable
            .iter()
            .rev()
            .filter(|p| p.0 <= from / GUARD)
            .collect(),
        &|f| f >= from / SPAN,
    );
    let after = plateau(
        usable.iter().filter(|p| p.0 >= to * GUARD).collect(),
        &|f| f <= to * SPAN,
    );
    if before.len() < MIN_POINTS || after.len() < MIN_POINTS {
        return None;
    }
    let centre = |s: &[(f64, f64)]| median(&s.iter().map(|p| p.0).collect::<Vec<_>>());
    let (low, high) = (centre(&before), centre(&after));
    let deviations: Vec<f64> = before
        .iter()
        .map(|p| (p.0 - low).abs())
        .chain(after.iter().map(|p| (p.0 - high).abs()))
        .collect();
    let scatter = MAD_TO_SIGMA * median(&deviations);
    let modelled = median(&before.iter().chain(&after).map(|p| p.1).collect::<Vec<_>>());
    let sigma = scatter.max(modelled).max(f64::MIN_POSITIVE);
    let error =
        MEDIAN_EFFICIENCY * sigma * (1.0 / before.len() as f64 + 1.0 / after.len() as f64).sqrt();
    Some(Measured {
        height: high - low,
        z: (high - low) / error,
    })
}
