//! Steps 2 and 3 of the TLB inference (method in `infer_tlb.rs`): steps chained across
//! strides into candidate levels (standing still in bytes up to the page, then growing with
//! the stride at a fixed number of loads), extended downwards over faint steps, and pruned
//! of chains that only follow another level or stop while their level should still show.
//! Another tool's curves (coarse, with gaps) are matched with the rules of
//! `infer_tlb_windows.rs`.

use super::infer_tlb::{FittedLevel, StrideSteps, MIN_STRIDES, SAME_BOUNDARY, STRONG_Z};
use super::infer_tlb_windows::{miss, placed, shows, spread};
use super::robust::median;
use super::steps::Step;
use std::collections::HashMap;

/// Beyond its page a level's boundary is a fixed number of loads, placed precisely (its
/// steps are full height): a growing chain's boundaries agree within this ratio.
const SAME_LOADS: f64 = 1.1;

#[derive(Clone, Copy)]
pub(crate) struct Link {
    pub(crate) stride_index: usize,
    pub(crate) step_index: usize,
    pub(crate) boundary: f64,
    /// How far (log ratio) either way the boundary may lie: 0 but for a wide bracket of
    /// another tool's curve (`infer_tlb_windows.rs`).
    pub(crate) spread: f64,
}

pub(crate) struct Chain {
    pub(crate) links: Vec<Link>,
    /// Once the boundary grows with the stride (stride beyond the page), it stays at a
    /// fixed number of loads: the loads of each such link. Empty while it stands still.
    pub(crate) growing_loads: Vec<f64>,
    /// The smallest spread of the growing links.
    pub(crate) growing_spread: f64,
}

/// Where a step puts the boundary: exact when the sweep refined it to adjacent load
/// counts, else the geometric middle of the gap.
pub(crate) fn boundary(step: &Step, stride: u64) -> f64 {
    let (below, above) = step.boundary;
    if above - below <= stride {
        below as f64
    } else {
        ((below as f64) * (above as f64)).sqrt()
    }
}

/// A step a chain may take: (error, chain, step, taken as growing, heights consistent,
/// where it places the boundary and how precisely).
type Candidate = (f64, usize, usize, bool, bool, (f64, f64));

pub(crate) fn build_chains(strides: &[StrideSteps]) -> Vec<Chain> {
    let tolerance = SAME_BOUNDARY.ln();
    let growing_tolerance = SAME_LOADS.ln();
    let mut chains: Vec<Chain> = Vec::new();
    // The faint steps of the previous stride that no chain took.
    let mut faint: Vec<usize> = Vec::new();
    for (si, s) in strides.iter().enumerate() {
        let bounds: Vec<f64> = s.steps.iter().map(|st| boundary(st, s.stride)).collect();
        let mut candidates: Vec<Candidate> = Vec::new();
        for (ci, chain) in chains.iter().enumerate() {
            let Some(last) = chain.links.last() else {
                continue;
            };
            // One stride where the chain should have shown may miss it (noise); another
            // tool's strides that could not show it (`missed_between`) do not count.
            if missed_between(chain, strides, si) > 1 {
                continue;
            }
            let growth = s.stride as f64 / strides[last.stride_index].stride as f64;
            let before = &strides[last.stride_index].steps[last.step_index];
            // A growing chain predicts its settled number of loads (so it cannot drift); a
            // standing one predicts the same boundary, or that it starts growing.
            // (boundary, its spread, growing)
            let predictions: Vec<(f64, f64, bool)> = if chain.growing_loads.is_empty() {
                vec![
                    (last.boundary, last.spread, false),
                    (last.boundary * growth, last.spread, true),
                ]
            } else {
                vec![(
                    median(&chain.growing_loads) * s.stride as f64,
                    chain.growing_spread,
                    true,
                )]
            };
            for (ti, &b) in bounds.iter().enumerate() {
                // A level's step grows at most as fast as the stride; a clearly faster rise
                // (beyond the noise, and by half again) means another level missing at the
                // same footprint (a merged step), or that the chain began at a noise step.
                let step = &s.steps[ti];
                let most = growth * before.height;
                let margin = 4.0 * step.sigma.hypot(growth * before.sigma);
                // In another tool's curves, nor clearly lower: a level's steps only grow
                // with the stride (a faint step there is noise on a gap's edge or a split
                // plateau; memtune's sweeps keep the sag of real GPUs' steps).
                let consistent = step.height <= (most + margin).max(1.5 * most)
                    && (!s.single || step.height + margin >= before.height / 2.0);
                let b_spread = spread(step, s.single);
                for &(predicted, p_spread, growing) in &predictions {
                    let tolerance = if growing {
                        growing_tolerance
                    } else {
                        tolerance
                    };
                    if let Some(error) = miss((b, b_spread), (predicted, p_spread), tolerance) {
                        let at = placed((b, b_spread), (predicted, p_spread));
                        candidates.push((error, ci, ti, growing, consistent, at));
                    }
                }
            }
        }
        candidates.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut chain_taken = vec![false; chains.len()];
        let mut step_taken = vec![false; bounds.len()];
        let take =
            |chains: &mut Vec<Chain>, ci: usize, ti: usize, growing: bool, at: (f64, f64)| {
                chains[ci].links.push(Link {
                    stride_index: si,
                    step_index: ti,
                    boundary: at.0,
                    spread: at.1,
                });
                if growing {
                    chains[ci].growing_loads.push(at.0 / s.stride as f64);
                    chains[ci].growing_spread = chains[ci].growing_spread.min(at.1);
                }
            };
        // One step per chain, one chain per step first, heights consistent; then a chain left
        // without a step may share one already taken: two levels missing at one footprint.
        for &(_, ci, ti, growing, consistent, at) in &candidates {
            if consistent && !chain_taken[ci] && !step_taken[ti] {
                chain_taken[ci] = true;
                step_taken[ti] = true;
                take(&mut chains, ci, ti, growing, at);
            }
        }
        for &(_, ci, ti, growing, _, at) in &candidates {
            if !chain_taken[ci] && step_taken[ti] {
                chain_taken[ci] = true;
                take(&mut chains, ci, ti, growing, at);
            }
        }
        // Only a clear step starts a level: one clear alone, or in another tool's curves two
        // faint ones at neighbouring strides that place one boundary (a coarse grid gives few
        // points a plateau, so each step alone is less clear). A faint one may still join
        // one below.
        let z = |step: &Step| step.height / step.sigma;
        let mut still_faint = Vec::new();
        for (ti, taken) in step_taken.iter().enumerate() {
            if *taken {
                continue;
            }
            let pair = if z(&s.steps[ti]) >= STRONG_Z {
                None
            } else {
                match faint_pair(strides, si, &faint, ti).filter(|_| s.single) {
                    Some(pair) => Some(pair),
                    None => {
                        still_faint.push(ti);
                        continue;
                    }
                }
            };
            let mut links = Vec::new();
            let mut growing_loads = Vec::new();
            let mut growing_spread = f64::INFINITY;
            let (b, b_spread) = (bounds[ti], spread(&s.steps[ti], s.single));
            let (b, b_spread) = match pair {
                Some((pi, at, growing)) => {
                    faint.retain(|&f| f != pi);
                    links.push(Link {
                        stride_index: si - 1,
                        step_index: pi,
                        boundary: at.0
                            * if growing {
                                strides[si - 1].stride as f64 / s.stride as f64
                            } else {
                                1.0
                            },
                        spread: at.1,
                    });
                    if growing {
                        growing_loads.push(at.0 / s.stride as f64);
                        growing_spread = at.1;
                    }
                    at
                }
                None => (b, b_spread),
            };
            links.push(Link {
                stride_index: si,
                step_index: ti,
                boundary: b,
                spread: b_spread,
            });
            chains.push(Chain {
                links,
                growing_loads,
                growing_spread,
            });
        }
        faint = still_faint;
    }
    extend_downwards(&mut chains, strides);
    chains
}

/// A faint step at the previous stride (`faint`, by index) that places the boundary of the
/// faint step `ti` at stride `si`: standing still, or grown with the stride, together clear
/// enough to start a level, heights consistent. Returns its index, where the two place the
/// boundary at stride `si` (and how precisely), and whether it grew.
fn faint_pair(
    strides: &[StrideSteps],
    si: usize,
    faint: &[usize],
    ti: usize,
) -> Option<(usize, (f64, f64), bool)> {
    let (prev, s) = (strides.get(si.checked_sub(1)?)?, &strides[si]);
    let step = &s.steps[ti];
    let here = (boundary(step, s.stride), spread(step, s.single));
    let growth = s.stride as f64 / prev.stride as f64;
    faint
        .iter()
        .filter_map(|&pi| {
            let before = &prev.steps[pi];
            let z2 = (step.height / step.sigma).powi(2) + (before.height / before.sigma).powi(2);
            let most = growth * before.height;
            let consistent = step.height
                <= (most + 4.0 * step.sigma.hypot(growth * before.sigma)).max(1.5 * most);
            if z2 < STRONG_Z.powi(2) || !consistent {
                return None;
            }
            let there = boundary(before, prev.stride);
            [(false, SAME_BOUNDARY), (true, SAME_LOADS)]
                .into_iter()
                .filter_map(|(growing, tolerance)| {
                    let predicted = (
                        there * if growing { growth } else { 1.0 },
                        spread(before, prev.single),
                    );
                    let error = miss(here, predicted, tolerance.ln());
                    error.map(|error| (error, growing, predicted))
                })
                .min_by(|a, b| a.0.total_cmp(&b.0))
                .map(|(error, growing, predicted)| (error, pi, placed(here, predicted), growing))
        })
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, pi, at, growing)| (pi, at, growing))
}

/// Whether a chain stops while its level should still show at the next two strides: a
/// level's steps only grow with the stride, so its chain runs on to the last strides swept,
/// unless its boundary leaves the footprints swept. Chance alignments of noise steps stop
/// early.
pub(crate) fn ends_early(chain: &Chain, strides: &[StrideSteps], level: &FittedLevel) -> bool {
    let Some(last) = chain.links.last() else {
        return false;
    };
    // Two strides must follow where the boundary would show: a step missed once, by noise,
    // ends no level. Another tool's strides whose curves start past the boundary, or are
    // too noisy there for a step of the level's height, are passed over.
    let mut showing = 0;
    for s in &strides[last.stride_index + 1..] {
        let boundary = next_boundary(chain, strides, s);
        if boundary * SAME_BOUNDARY >= s.reach as f64 {
            return false;
        }
        let height = level.penalty_cycles * (s.stride as f64 / level.page_bytes as f64).min(1.0);
        if !s.single || shows(s, boundary, height) {
            showing += 1;
            if showing == 2 {
                return true;
            }
        }
    }
    false
}

/// Where the chain's boundary lies at a larger stride `s`: at its settled number of loads
/// once growing; a standing chain may start growing at `s`, which puts it furthest.
fn next_boundary(chain: &Chain, strides: &[StrideSteps], s: &StrideSteps) -> f64 {
    let Some(last) = chain.links.last() else {
        return 0.0;
    };
    if chain.growing_loads.is_empty() {
        last.boundary * s.stride as f64 / strides[last.stride_index].stride as f64
    } else {
        median(&chain.growing_loads) * s.stride as f64
    }
}

/// The strides between the chain's last link and stride `si` where its boundary would have
/// shown, as high as the last link's step.
fn missed_between(chain: &Chain, strides: &[StrideSteps], si: usize) -> usize {
    let Some(last) = chain.links.last() else {
        return 0;
    };
    let height = strides[last.stride_index].steps[last.step_index].height;
    strides[last.stride_index + 1..si]
        .iter()
        .filter(|s| !s.single || shows(s, next_boundary(chain, strides, s), height))
        .count()
}

/// How many chains claim each step, by (stride index, step index).
pub(crate) fn claims(chains: &[Chain]) -> HashMap<(usize, usize), usize> {
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
pub(crate) fn untangle(mut chains: Vec<Chain>, strides: &[StrideSteps]) -> Vec<Chain> {
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
            // Whether the boundary grows from the first link to the second; a chain of one
            // link may do either.
            let growing = chain.links.get(1).map(|second| {
                let growth = strides[second.stride_index].stride as f64
                    / strides[first.stride_index].stride as f64;
                let ratio = second.boundary / first.boundary;
                ratio.ln().abs() > (ratio / growth).ln().abs()
            });
            let above = &strides[first.stride_index].steps[first.step_index];
            for si in (first.stride_index.saturating_sub(2)..first.stride_index).rev() {
                let s = &strides[si];
                let scaled =
                    first.boundary * s.stride as f64 / strides[first.stride_index].stride as f64;
                // (memtune's own sweeps keep the standing reading: a step there is placed
                // precisely enough to have joined the chain on the way up.)
                let expected: Vec<f64> = match growing {
                    Some(true) => vec![scaled],
                    None if s.single => vec![first.boundary, scaled],
                    _ => vec![first.boundary],
                };
                let at = |ti: usize| {
                    (
                        boundary(&s.steps[ti], s.stride),
                        spread(&s.steps[ti], s.single),
                    )
                };
                let best = (0..s.steps.len())
                    .filter(|&ti| !claimed.contains(&(si, ti)))
                    .flat_map(|ti| {
                        expected.iter().filter_map(move |&e| {
                            miss(at(ti), (e, first.spread), tolerance).map(|m| (ti, e, m))
                        })
                    })
                    .filter(|&(ti, _, _)| {
                        let step = &s.steps[ti];
                        step.height <= above.height + 4.0 * step.sigma.hypot(above.sigma)
                    })
                    .min_by(|a, b| a.2.total_cmp(&b.2));
                if let Some((ti, expected, _)) = best {
                    claimed.insert((si, ti));
                    let (boundary, spread) = placed(at(ti), (expected, first.spread));
                    chain.links.insert(
                        0,
                        Link {
                            stride_index: si,
                            step_index: ti,
                            boundary,
                            spread,
                        },
                    );
                    continue 'down;
                }
            }
            break;
        }
    }
}
