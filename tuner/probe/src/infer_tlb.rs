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
//!    second stride. Chains keep short ramps only, as before.

use super::robust::{median, neighbour_pairs, sample_noise, weighted_median, wiggle, Noise};
use super::steps::{detect, points, steps_of, Ramps, Step};
use memtune_core::profile::{ChaseCurve, TlbKind, TlbLevel};
use std::collections::HashMap;

/// Two boundaries within this ratio are the same boundary.
const SAME_BOUNDARY: f64 = 1.2;
/// Beyond its page a level's boundary is a fixed number of loads, placed precisely (its
/// steps are full height): a growing chain's boundaries agree within this ratio.
const SAME_LOADS: f64 = 1.1;
/// A level must show a step of its own (not shared with another level) at this many strides,
/// two of them neighbours: a coincidence of noise steps at two distant strides is no level.
const MIN_STRIDES: usize = 2;
/// Only a step this clear (height over its standard deviation) starts a chain; fainter ones
/// may join one.
const STRONG_Z: f64 = 6.0;
/// The two smallest strides place a level finer than both at numbers of loads this close.
const FINEST_SAME_LOADS: f64 = 1.7;
/// A squared residual of the page fit counts at most this much.
const FIT_CLIP: f64 = 16.0;
/// Added to the page fit's chi-square when the page implies a set-associative level: the
/// fully associative reading wins unless the heights of more than one stride say otherwise.
const SET_ASSOCIATIVE_PRIOR: f64 = FIT_CLIP;

/// The TLB hierarchy shown by `curves` (one per stride), swept up to `swept_up_to_bytes`, on
/// a GPU clocked at `clock_mhz`. The curves are kept in the result.
/// Levels reported in the profile must add at least this share of the base latency per
/// miss. Across the host link (about 2000 cycles a load on an H200) the latency drifts by
/// 1-2% as footprints grow; those drifts are not levels. The smallest real level in seed
/// 000's Table 2 (P100 L1: +9 cycles over 293) is 3%.
const MIN_RELATIVE_PENALTY: f64 = 0.025;
/// Levels whose curves barely show them (confidence under this) are left out of the profile;
/// the raw curves stay for a human to look at.
const MIN_CONFIDENCE: f64 = 0.1;

pub fn infer_tlb(curves: Vec<ChaseCurve>, swept_up_to_bytes: u64, clock_mhz: f64) -> TlbKind {
    let analysis = analyse(&curves);
    let levels = analysis
        .levels
        .iter()
        .filter(|f| f.reported(analysis.base_latency_cycles))
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
}

#[derive(Debug, Clone)]
pub(crate) struct FittedLevel {
    pub entries: u64,
    pub page_bytes: u64,
    pub penalty_cycles: f64,
    pub confidence: f64,
    /// The largest stride at which the level was seen.
    pub last_stride: u64,
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
fn curve_noise(curves: &[&ChaseCurve]) -> Noise {
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
struct StrideSteps {
    stride: u64,
    steps: Vec<Step>,
    /// The steps with staircases joined, for `finest_level` only: levels of coarser pages
    /// are read as before.
    staircases: Vec<Step>,
    base: Option<f64>,
    /// The largest footprint the curve reaches.
    reach: u64,
}

pub(crate) fn analyse(curves: &[ChaseCurve]) -> Analysis {
    let curves: Vec<&ChaseCurve> = curves
        .iter()
        .filter(|c| c.stride_bytes > 0 && !c.points.is_empty())
        .collect();
    let noise = curve_noise(&curves);
    let mut strides: Vec<StrideSteps> = curves
        .iter()
        .map(|c| {
            let points = points(c, &noise);
            let d = detect(&points, Ramps::Short);
            StrideSteps {
                stride: c.stride_bytes,
                steps: d.steps,
                staircases: steps_of(&points, &d.segments, Ramps::Staircases),
                base: d.segments.first().map(|s| s.level),
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
            .map(|l| FitLink {
                stride_index: l.stride_index,
                stride: strides[l.stride_index].stride,
                step: strides[l.stride_index].steps[l.step_index],
                boundary: l.boundary,
                merged: claims[&(l.stride_index, l.step_index)] > 1,
            })
            .collect();
        match fit_level(&links).filter(|_| !ends_early(chain, &strides)) {
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
    Analysis {
        levels,
        base_latency_cycles,
        unconfirmed_until,
    }
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
    // staircase's tilt, as session 7 run 3's 4 KiB stride rose over 6-26 MiB but was half
    // up by 8 MiB: the same loads, between the two.
    let tilted = b_loads > a_loads && (b_loads / a_loads).ln() <= 2.0 * FINEST_SAME_LOADS.ln();
    let (page_bytes, entries, last_stride) = if near(a_loads, b_loads) || tilted {
        (first.stride, (a_loads * b_loads).sqrt(), second.stride)
    } else if near(a_loads, 2.0 * b_loads) {
        // The same bytes at both: the page is larger than the first stride. The third
        // stride confirms a page of the second when its clear step has the second's loads
        // (session 7 run 2's pinned memory: 17 and 19 MiB, then 2663 loads of 16 KiB).
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
    if levels
        .iter()
        .any(|l| ((l.entries * l.page_bytes) as f64) < reach * SAME_BOUNDARY)
    {
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
    })
}

#[derive(Clone, Copy)]
struct Link {
    stride_index: usize,
    step_index: usize,
    boundary: f64,
}

struct Chain {
    links: Vec<Link>,
    /// Once the boundary grows with the stride (stride beyond the page), it stays at a
    /// fixed number of loads: the loads of each such link. Empty while it stands still.
    growing_loads: Vec<f64>,
}

/// Where a step puts the boundary: exact when the sweep refined it to adjacent load
/// counts, else the geometric middle of the gap.
fn boundary(step: &Step, stride: u64) -> f64 {
    let (below, above) = step.boundary;
    if above - below <= stride {
        below as f64
    } else {
        ((below as f64) * (above as f64)).sqrt()
    }
}

fn build_chains(strides: &[StrideSteps]) -> Vec<Chain> {
    let tolerance = SAME_BOUNDARY.ln();
    let growing_tolerance = SAME_LOADS.ln();
    let mut chains: Vec<Chain> = Vec::new();
    for (si, s) in strides.iter().enumerate() {
        let bounds: Vec<f64> = s.steps.iter().map(|st| boundary(st, s.stride)).collect();
        // (error, chain, step, taken as growing, heights consistent)
        let mut candidates: Vec<(f64, usize, usize, bool, bool)> = Vec::new();
        for (ci, chain) in chains.iter().enumerate() {
            let Some(last) = chain.links.last() else {
                continue;
            };
            if si - last.stride_index > 2 {
                continue;
            }
            let growth = s.stride as f64 / strides[last.stride_index].stride as f64;
            let before = &strides[last.stride_index].steps[last.step_index];
            // A growing chain predicts its settled number of loads (so it cannot drift); a
            // standing one predicts the same boundary, or that it starts growing.
            let predictions: Vec<(f64, bool)> = if chain.growing_loads.is_empty() {
                vec![(last.boundary, false), (last.boundary * growth, true)]
            } else {
                vec![(median(&chain.growing_loads) * s.stride as f64, true)]
            };
            for (ti, &b) in bounds.iter().enumerate() {
                // A level's step grows at most as fast as the stride; a clearly faster rise
                // (beyond the noise, and by half again) means another level missing at the
                // same footprint (a merged step), or that the chain began at a noise step.
                let step = &s.steps[ti];
                let most = growth * before.height;
                let consistent = step.height
                    <= (most + 4.0 * step.sigma.hypot(growth * before.sigma)).max(1.5 * most);
                for &(predicted, growing) in &predictions {
                    let error = (b / predicted).ln().abs();
                    let tolerance = if growing {
                        growing_tolerance
                    } else {
                        tolerance
                    };
                    if error <= tolerance {
                        candidates.push((error, ci, ti, growing, consistent));
                    }
                }
            }
        }
        candidates.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut chain_taken = vec![false; chains.len()];
        let mut step_taken = vec![false; bounds.len()];
        let take = |chains: &mut Vec<Chain>, ci: usize, ti: usize, growing: bool| {
            chains[ci].links.push(Link {
                stride_index: si,
                step_index: ti,
                boundary: bounds[ti],
            });
            if growing {
                chains[ci].growing_loads.push(bounds[ti] / s.stride as f64);
            }
        };
        // One step per chain, one chain per step first, heights consistent; then a chain left
        // without a step may share one already taken: two levels missing at one footprint.
        for &(_, ci, ti, growing, consistent) in &candidates {
            if consistent && !chain_taken[ci] && !step_taken[ti] {
                chain_taken[ci] = true;
                step_taken[ti] = true;
                take(&mut chains, ci, ti, growing);
            }
        }
        for &(_, ci, ti, growing, _) in &candidates {
            if !chain_taken[ci] && step_taken[ti] {
                chain_taken[ci] = true;
                take(&mut chains, ci, ti, growing);
            }
        }
        // Only a clear step starts a level; a faint one may still join one below.
        for (ti, taken) in step_taken.iter().enumerate() {
            if !taken && s.steps[ti].height >= STRONG_Z * s.steps[ti].sigma {
                chains.push(Chain {
                    links: vec![Link {
                        stride_index: si,
                        step_index: ti,
                        boundary: bounds[ti],
                    }],
                    growing_loads: Vec::new(),
                });
            }
        }
    }
    extend_downwards(&mut chains, strides);
    chains
}

/// Whether a chain stops while its level should still show at the next two strides: a
/// level's steps only grow with the stride, so its chain runs on to the last strides swept,
/// unless its boundary leaves the footprints swept. Chance alignments of noise steps stop
/// early.
fn ends_early(chain: &Chain, strides: &[StrideSteps]) -> bool {
    let Some(last) = chain.links.last() else {
        return false;
    };
    let next: Vec<&StrideSteps> = strides.iter().skip(last.stride_index + 1).take(2).collect();
    let last_stride = strides[last.stride_index].stride as f64;
    // Two strides must follow: a step missed once, by noise, ends no level.
    next.len() == 2
        && next.iter().all(|s| {
            // A standing chain may start growing at the next stride, and then leave the range.
            let boundary = if chain.growing_loads.is_empty() {
                last.boundary * s.stride as f64 / last_stride
            } else {
                median(&chain.growing_loads) * s.stride as f64
            };
            boundary * SAME_BOUNDARY < s.reach as f64
        })
}

/// How many chains claim each step, by (stride index, step index).
fn claims(chains: &[Chain]) -> HashMap<(usize, usize), usize> {
    let mut claims = HashMap::new();
    for chain in chains {
        for link in &chain.links {
            *claims
                .entry((link.stride_index, link.step_index))
                .or_insert(0) += 1;
        }
    }
    claims
}

/// A chain with too few steps of its own that shares the rest with another follows the
/// same level (it began at a noise step next to the level's) and goes, the least clear
/// such chain first. (Two levels that merged keep steps of their own from before the merge.)
fn untangle(mut chains: Vec<Chain>, strides: &[StrideSteps]) -> Vec<Chain> {
    let key = |l: &Link| (l.stride_index, l.step_index);
    loop {
        let claims = claims(&chains);
        let own = |c: &Chain| -> Vec<usize> {
            (0..c.links.len())
                .filter(|&i| claims[&key(&c.links[i])] == 1)
                .collect()
        };
        let clarity = |c: &Chain| -> Option<f64> {
            let own = own(c);
            (own.len() < MIN_STRIDES && own.len() < c.links.len()).then(|| {
                own.iter()
                    .map(|&i| {
                        let step = &strides[c.links[i].stride_index].steps[c.links[i].step_index];
                        (step.height / step.sigma).powi(2)
                    })
                    .sum()
            })
        };
        let weakest = chains
            .iter()
            .enumerate()
            .filter_map(|(i, c)| clarity(c).map(|z2| (i, z2)))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        match weakest {
            Some((i, _)) => {
                chains.remove(i);
            }
            None => return chains,
        }
    }
}

/// Faint steps rarely start a chain, so each chain then takes unclaimed steps at the
/// strides below its first one (one missing stride tolerated) where it predicts them: at
/// the same boundary while its boundaries stood still (below the page, seed 000 Figure 2's
/// X/2), or at a proportionally smaller one while they grew with the stride (above it).
fn extend_downwards(chains: &mut [Chain], strides: &[StrideSteps]) {
    let tolerance = SAME_BOUNDARY.ln();
    let mut claimed: std::collections::HashSet<(usize, usize)> = chains
        .iter()
        .flat_map(|c| c.links.iter().map(|l| (l.stride_index, l.step_index)))
        .collect();
    for chain in chains.iter_mut() {
        'down: loop {
            let first = chain.links[0];
            let growing = chain.links.get(1).is_some_and(|second| {
                let growth = strides[second.stride_index].stride as f64
                    / strides[first.stride_index].stride as f64;
                let ratio = second.boundary / first.boundary;
                ratio.ln().abs() > (ratio / growth).ln().abs()
            });
            let above = &strides[first.stride_index].steps[first.step_index];
            for si in (first.stride_index.saturating_sub(2)..first.stride_index).rev() {
                let s = &strides[si];
                let expected = if growing {
                    first.boundary * s.stride as f64 / strides[first.stride_index].stride as f64
                } else {
                    first.boundary
                };
                let best = (0..s.steps.len())
                    .filter(|&ti| !claimed.contains(&(si, ti)))
                    .map(|ti| (ti, (boundary(&s.steps[ti], s.stride) / expected).ln().abs()))
                    .filter(|&(ti, error)| {
                        let step = &s.steps[ti];
                        error <= tolerance
                            && step.height <= above.height + 4.0 * step.sigma.hypot(above.sigma)
                    })
                    .min_by(|a, b| a.1.total_cmp(&b.1));
                if let Some((ti, _)) = best {
                    claimed.insert((si, ti));
                    chain.links.insert(
                        0,
                        Link {
                            stride_index: si,
                            step_index: ti,
                            boundary: boundary(&s.steps[ti], s.stride),
                        },
                    );
                    continue 'down;
                }
            }
            break;
        }
    }
}

struct FitLink {
    stride_index: usize,
    stride: u64,
    step: Step,
    boundary: f64,
    merged: bool,
}

/// Page, entries, penalty and confidence of one chain, if it is a level.
fn fit_level(links: &[FitLink]) -> Option<FittedLevel> {
    let own: Vec<&FitLink> = links.iter().filter(|l| !l.merged).collect();
    let consecutive = own
        .windows(2)
        .any(|w| w[1].stride_index == w[0].stride_index + 1);
    if own.len() < MIN_STRIDES || !consecutive {
        return None;
    }
    // Up to the page, the boundary stands still, so the page is at most the last stride
    // of the chain's initial flat run; a page below that stride means a set-associative
    // level (seed 002's GT200 L2), which the heights must show clearly.
    let flat_until = flat_until(links);
    let candidates: Vec<u64> = match own
        .iter()
        .map(|l| l.stride)
        .filter(|&s| s <= flat_until)
        .collect::<Vec<_>>()
    {
        within if !within.is_empty() => within,
        _ => own.iter().map(|l| l.stride).collect(),
    };
    let fit = candidates
        .into_iter()
        .map(|page| fit_page(&own, page))
        .min_by(|a, b| {
            let score = |f: &PageFit| {
                f.chi2
                    + if f.page < flat_until {
                        SET_ASSOCIATIVE_PRIOR
                    } else {
                        0.0
                    }
            };
            score(a).total_cmp(&score(b)).then(b.page.cmp(&a.page))
        })?;
    if fit.penalty <= 0.0 {
        return None;
    }
    // Reach: boundaries at strides up to the page, all the same but for noise. Those far
    // from their median are dropped; of the rest, the clearest steps count most (a faint
    // step is easily placed a little late, into a set-associative ramp).
    let all_flat: Vec<f64> = links
        .iter()
        .filter(|l| l.stride <= fit.page)
        .map(|l| l.boundary)
        .collect();
    let centre = median(&all_flat);
    let flat: Vec<&FitLink> = links
        .iter()
        .filter(|l| l.stride <= fit.page && (l.boundary / centre).ln().abs() < 1.1f64.ln())
        .collect();
    let reach = if flat.is_empty() {
        centre
    } else {
        weighted_median(
            &flat.iter().map(|l| l.boundary).collect::<Vec<_>>(),
            &flat
                .iter()
                .map(|l| (l.step.height / l.step.sigma).powi(2))
                .collect::<Vec<_>>(),
        )
    };
    let entries = ((reach / fit.page as f64).round() as u64).max(1);
    // Penalty: the full-height steps (stride at least the page). Below the page, a step's
    // top can fall inside a set-associative ramp and read low.
    let full: Vec<&FitLink> = own
        .iter()
        .copied()
        .filter(|l| l.stride >= fit.page)
        .collect();
    let weights: Vec<f64> = full.iter().map(|l| 1.0 / l.step.sigma.powi(2)).collect();
    let total: f64 = weights.iter().sum();
    let penalty = full
        .iter()
        .zip(&weights)
        .map(|(l, w)| w * l.step.height)
        .sum::<f64>()
        / total;
    let penalty_sigma = 1.0 / total.sqrt();

    // Confidence: how clear the penalty is, how well the model fits, and how much of the
    // Figure 2 pattern (half stride: same boundary, half height; double stride: full
    // height) was seen.
    let z = penalty / penalty_sigma;
    let clarity = 1.0 - (-z / 10.0).exp();
    let dof = own.len().saturating_sub(2).max(1) as f64;
    let goodness = 1.0 / (1.0 + (fit.chi2 / dof - 1.0).max(0.0) / 4.0);
    let half_seen = own.iter().any(|l| {
        l.stride * 2 == fit.page
            && (0.3..=0.7).contains(&(l.step.height / penalty))
            && (l.boundary / reach).ln().abs() < SAME_BOUNDARY.ln()
    });
    let double_seen = own
        .iter()
        .any(|l| l.stride == fit.page * 2 && (0.75..=1.3).contains(&(l.step.height / penalty)));
    let pattern =
        0.6 + 0.2 * f64::from(u8::from(half_seen)) + 0.2 * f64::from(u8::from(double_seen));
    Some(FittedLevel {
        entries,
        page_bytes: fit.page,
        penalty_cycles: penalty,
        confidence: (clarity * goodness * pattern).clamp(0.0, 1.0),
        last_stride: links.iter().map(|l| l.stride).max().unwrap_or(0),
    })
}

/// The last stride of the chain's initial run of boundaries that stay put (each closer to
/// its predecessor than to the predecessor scaled by the stride).
fn flat_until(links: &[FitLink]) -> u64 {
    let mut last = links.first().map_or(0, |l| l.stride);
    for pair in links.windows(2) {
        let growth = pair[1].stride as f64 / pair[0].stride as f64;
        let ratio = pair[1].boundary / pair[0].boundary;
        if ratio.ln().abs() >= (ratio / growth).ln().abs() {
            break;
        }
        last = pair[1].stride;
    }
    last
}

struct PageFit {
    page: u64,
    penalty: f64,
    chi2: f64,
}

/// Least-squares fit of `height = penalty * min(1, stride / page)` for one candidate page.
fn fit_page(links: &[&FitLink], page: u64) -> PageFit {
    let xs: Vec<f64> = links
        .iter()
        .map(|l| (l.stride as f64 / page as f64).min(1.0))
        .collect();
    let ws: Vec<f64> = links
        .iter()
        .map(|l| 1.0 / (l.step.sigma * l.step.sigma).max(1e-12))
        .collect();
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for ((l, x), w) in links.iter().zip(&xs).zip(&ws) {
        sxy += w * x * l.step.height;
        sxx += w * x * x;
    }
    let penalty = sxy / sxx;
    let chi2 = links
        .iter()
        .zip(&xs)
        .zip(&ws)
        .map(|((l, x), w)| (w * (l.step.height - penalty * x).powi(2)).min(FIT_CLIP))
        .sum();
    PageFit {
        page,
        penalty,
        chi2,
    }
}
