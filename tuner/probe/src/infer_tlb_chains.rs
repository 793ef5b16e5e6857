//! Steps 2 and 3 of the TLB inference (method in `infer_tlb.rs`): steps chained across
//! strides into candidate levels (standing still in bytes up to the page, then growing with
//! the stride at a fixed number of loads), extended downwards over faint steps, and pruned
//! of chains that only follow another level or stop while their level should still show.

use super::infer_tlb::{StrideSteps, MIN_STRIDES, SAME_BOUNDARY, STRONG_Z};
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
}

pub(crate) struct Chain {
    pub(crate) links: Vec<Link>,
    /// Once the boundary grows with the stride (stride beyond the page), it stays at a
    /// fixed number of loads: the loads of each such link. Empty while it stands still.
    pub(crate) growing_loads: Vec<f64>,
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

pub(crate) fn build_chains(strides: &[StrideSteps]) -> Vec<Chain> {
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
pub(crate) fn ends_early(chain: &Chain, strides: &[StrideSteps]) -> bool {
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
