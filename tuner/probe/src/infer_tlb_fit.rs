//! Steps 4 and 5 of the TLB inference (method in `infer_tlb.rs`): a chain's page read off
//! its step heights (weighted least squares of `penalty * min(1, stride / page)` per
//! candidate page), then its reach, entries, penalty and confidence.

use super::infer_tlb::{FittedLevel, MIN_STRIDES, SAME_BOUNDARY};
use super::infer_tlb_windows::{likeliest, Cut};
use super::robust::{median, weighted_median};
use super::steps::Step;

/// A squared residual of the page fit counts at most this much.
const FIT_CLIP: f64 = 16.0;
/// Added to the page fit's chi-square when the page implies a set-associative level: the
/// fully associative reading wins unless the heights of more than one stride say otherwise.
const SET_ASSOCIATIVE_PRIOR: f64 = FIT_CLIP;

pub(crate) struct FitLink {
    pub(crate) stride_index: usize,
    pub(crate) stride: u64,
    pub(crate) step: Step,
    pub(crate) boundary: f64,
    pub(crate) merged: bool,
    /// For a curve of one sample per footprint: where the step may lie, each with its
    /// likelihood (`infer_tlb_windows::cuts`).
    pub(crate) cuts: Vec<Cut>,
}

/// Page, entries, penalty and confidence of one chain, if it is a level.
pub(crate) fn fit_level(links: &[FitLink]) -> Option<FittedLevel> {
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
    // Brackets of a coarse grid: where most of them (by clarity) agree, the standing steps'
    // and, for a fully associative level, the growing ones' scaled back to the page (its
    // boundary is `entries * stride` past the page; a set-associative level's growing steps
    // stand still a while longer, elsewhere).
    let set_associative = fit.page < flat_until;
    let placing: Vec<&FitLink> = own
        .iter()
        .copied()
        .filter(|l| l.stride <= fit.page || !set_associative)
        .collect();
    let scale = |l: &FitLink| fit.page as f64 / l.stride.max(fit.page) as f64;
    let scaled_cuts: Vec<Vec<Cut>> = placing
        .iter()
        .map(|l| {
            l.cuts
                .iter()
                .map(|c| Cut {
                    below: c.below * scale(l),
                    above: c.above * scale(l),
                    log_likelihood: c.log_likelihood,
                })
                .collect()
        })
        .collect();
    let reach = if let Some(reach) = likeliest(&scaled_cuts) {
        reach
    } else if flat.is_empty() {
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
        set_associative,
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
