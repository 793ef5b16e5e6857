//! Pass counts for the scoped workloads' candidates (sampling and grouping): the model's
//! neighbours, the refinement from the first timings (at a cache's capacity, else between
//! the fastest counts), the launch order, and the counts the timings already rule out.

use super::candidates::Candidate;
use crate::profile::{CachePath, Profile};

/// `passes` equal scopes of `total` bytes in whole `unit`s, with the passes recounted for
/// that scope (what the launches split): `(scope_bytes, passes)`.
pub(super) fn split(total: u64, passes: u32, unit: u64) -> (u64, u32) {
    let units = (total / unit).max(1);
    let scope_units = units.div_ceil(u64::from(passes.max(1)));
    let recount = units.div_ceil(scope_units);
    (
        scope_units * unit,
        u32::try_from(recount).unwrap_or(u32::MAX),
    )
}

/// Pass counts around the model's, fewer first (the passes' overhead is what the model
/// cannot see in the kernel): half and a quarter of the model's, then twice and four times;
/// without a scoped pick, 2, 4 and 8. In `pinned` memory half and twice come first: its
/// best count is the TLB's (a mapping of 4 KiB pages wants many passes whatever the
/// kernel; an H100 ran 512 MiB best in 16 passes where the model picked 3). The refinement
/// then fills the gap next to the fastest. (On an H100 a user's gather ran 384 MiB of
/// device memory best in 3 passes where the model picked 8 to 12.)
pub(super) fn neighbour_passes(model_passes: u32, pinned: bool) -> Vec<u32> {
    if model_passes <= 1 {
        return vec![2, 4, 8];
    }
    let p = model_passes;
    let mut out: Vec<u32> = Vec::new();
    let order = if pinned {
        [
            p.div_ceil(2),
            p.saturating_mul(2),
            (p + 2) / 4,
            p.saturating_mul(4),
        ]
    } else {
        [
            p.div_ceil(2),
            (p + 2) / 4,
            p.saturating_mul(2),
            p.saturating_mul(4),
        ]
    };
    for n in order {
        if n >= 2 && n != p && !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

/// Largest pass count the refinement proposes (the planners' search stops there too).
pub(super) const MAX_REFINED_PASSES: u32 = 1024;

/// The timed `(passes, ms)` with a time, by pass count, the faster of a repeated count kept.
fn by_count(timed: &[(u32, f64)]) -> Vec<(u32, f64)> {
    let mut pts: Vec<(u32, f64)> = timed
        .iter()
        .copied()
        .filter(|(p, ms)| *p >= 1 && ms.is_finite())
        .collect();
    pts.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    pts.dedup_by_key(|p| p.0);
    pts
}

/// The pass count to try next, from `(passes, median ms)` of the timed candidates: the
/// geometric middle between the fastest and its faster neighbour in pass count (else the
/// other neighbour); when the fastest has the most passes, half a doubling past it, else
/// (that count timed) the middle below it.
/// `None` when every such gap is already closed (adjacent counts, or already timed).
pub(super) fn refine_passes(timed: &[(u32, f64)]) -> Option<u32> {
    let pts = by_count(timed);
    let lead = pts
        .iter()
        .enumerate()
        .min_by(|a, b| a.1 .1.total_cmp(&b.1 .1))?
        .0;
    let mid = |a: u32, b: u32| (f64::from(a) * f64::from(b)).sqrt().round() as u32;
    let mut tries: Vec<u32> = Vec::new();
    let below = lead.checked_sub(1).map(|i| pts[i]);
    let above = pts.get(lead + 1).copied();
    let here = pts[lead].0;
    match (below, above) {
        (Some(b), Some(a)) if b.1 <= a.1 => tries.extend([mid(here, b.0), mid(here, a.0)]),
        (Some(b), Some(a)) => tries.extend([mid(here, a.0), mid(here, b.0)]),
        (Some(b), None) if here > 1 => {
            // Most passes fastest: the times still fall towards more passes. (Going back
            // where the fall was under 10% left an H100's zero-copy 1 GiB region at 4 passes
            // of 256 MiB, 1.13x its best of 32; a cache's edge below it is
            // `edge_passes`'s.)
            let past = (f64::from(here) * std::f64::consts::SQRT_2).round() as u32;
            tries.extend([past, mid(here, b.0)]);
        }
        (None, Some(a)) => tries.push(mid(here, a.0)),
        _ => {}
    }
    tries.into_iter().find(|&m| {
        (2..=MAX_REFINED_PASSES).contains(&m) && m != here && pts.iter().all(|p| p.0 != m)
    })
}

/// The capacities of the caches every SM shares (the L2 path's levels), from 1 MiB up:
/// where scopes cross one, random accesses fall off a cliff the profile measured. The
/// probe's chases put a level somewhat under what it holds (an H100's L2 at 45.5-47.5 and
/// its near partition at 17.75-24 MiB, of 50 and 25 MiB), so a level within [`SNAP`] under
/// the L2 size the driver reports, or half of it, is taken at that size.
pub(super) fn cache_edges(profile: &Profile) -> Vec<u64> {
    let Some(caches) = profile.caches.measured() else {
        return Vec::new();
    };
    let l2 = profile.device.l2_bytes;
    let snap = |e: u64| {
        [l2, l2 / 2]
            .into_iter()
            .find(|&n| e <= n && n as f64 <= e as f64 * SNAP)
            .unwrap_or(e)
    };
    let mut edges: Vec<u64> = caches
        .levels
        .iter()
        .filter(|l| l.path == CachePath::L2)
        .filter_map(|l| l.capacity_bytes())
        .filter(|&size| size >= 1 << 20)
        .map(snap)
        .collect();
    edges.sort_unstable();
    edges.dedup();
    edges
}

/// How far under the driver's L2 size (or half of it) a measured level may lie and still
/// be taken as that size.
const SNAP: f64 = 1.5;

/// The fewest passes whose scopes of `total` bytes fit a cache's capacity (one of `edges`),
/// where that capacity lies between the scopes of the fastest of `timed` `(passes, ms)` and
/// its faster neighbour in pass count; `None` when no capacity lies between them or its
/// count is timed already. Random accesses within a cache run far
/// faster than beyond it, so the best split often sits at its edge, which the geometric
/// middle of two counts misses (an H100's 384 MiB sampling region: fastest 12 passes of
/// 32 MiB timed beside 6 of 64 MiB, best 8 of 48 MiB within its 50 MiB L2). Scopes a
/// little over a capacity run far slower, so the count is rounded up.
pub(super) fn edge_passes(total: u64, timed: &[(u32, f64)], edges: &[u64]) -> Option<u32> {
    let pts = by_count(timed);
    let lead = (0..pts.len()).min_by(|&a, &b| pts[a].1.total_cmp(&pts[b].1))?;
    let mut neighbours: Vec<(u32, f64)> = [lead.checked_sub(1), Some(lead + 1)]
        .into_iter()
        .flatten()
        .filter_map(|i| pts.get(i).copied())
        .collect();
    neighbours.sort_by(|a, b| a.1.total_cmp(&b.1));
    let here = pts[lead].0;
    neighbours.into_iter().take(1).find_map(|(n, _)| {
        let (few, many) = (here.min(n), here.max(n));
        let (small, large) = (total / u64::from(many), total / u64::from(few));
        edges
            .iter()
            .filter(|&&e| small < e && e < large)
            .map(|&e| u32::try_from(total.div_ceil(e)).unwrap_or(u32::MAX))
            .find(|&m| few < m && m < many && pts.iter().all(|p| p.0 != m))
    })
}

/// Where the fastest of `timed` `(passes, ms)` has the most passes (times still falling
/// towards more), the fewest passes past it whose scopes of `total` bytes fit the largest
/// of `edges` under its scope, at most twice its count; `None` otherwise or when timed.
/// (An H100's 256 MiB zero-copy grouping table: fastest 8 copy passes of 32 MiB beside 5
/// of 51 MiB, best 16 of 16 MiB within the L2's near partition.)
pub(super) fn edge_past(total: u64, timed: &[(u32, f64)], edges: &[u64]) -> Option<u32> {
    let pts = by_count(timed);
    let lead = (0..pts.len()).min_by(|&a, &b| pts[a].1.total_cmp(&pts[b].1))?;
    let here = pts[lead].0;
    if lead + 1 != pts.len() || here < 2 {
        return None;
    }
    let scope = total / u64::from(here);
    let edge = edges.iter().copied().filter(|&e| e < scope).max()?;
    let m = u32::try_from(total.div_ceil(edge)).ok()?;
    (m > here && m <= here.saturating_mul(2) && pts.iter().all(|p| p.0 != m)).then_some(m)
}

/// A pass count this many times slower than a smaller one shows a pass's own cost, not noise.
const CLEAR_RISE: f64 = 1.5;
/// A plan is ruled out when its floor is at least this many times the fastest time.
const RULED_OUT: f64 = 1.5;

/// Whether `passes` cannot beat `fastest` (ms), from `timed` `(passes, ms)` of its own
/// approach.
/// A plan's time is its passes' fixed cost (the stream each redraws, the input each
/// re-reads, the per-key or per-read work their lanes repeat) plus its accesses, which a
/// smaller scope never makes slower. So where a timed count runs [`CLEAR_RISE`]x slower
/// than a smaller one, a pass costs at least the rise per added pass, and `passes` times
/// that is a floor on the plan's time: ruled out when the floor is [`RULED_OUT`]x the
/// fastest. (On an H100 a sampling kernel with 256 mixing rounds a read ran p passes in p
/// times one pass's time: its 12-pass candidate alone cost 24 untuned launches.)
pub(super) fn ruled_out_passes(passes: u32, timed: &[(u32, f64)], fastest: f64) -> Option<String> {
    let pts: Vec<(u32, f64)> = timed
        .iter()
        .copied()
        .filter(|&(p, ms)| p >= 1 && ms.is_finite() && ms > 0.0)
        .collect();
    if !(fastest.is_finite() && fastest > 0.0) {
        return None;
    }
    let per_pass = pts
        .iter()
        .flat_map(|a| pts.iter().map(move |b| (a, b)))
        .filter(|(a, b)| a.0 < b.0 && b.1 >= CLEAR_RISE * a.1)
        .map(|(a, b)| (b.1 - a.1) / f64::from(b.0 - a.0))
        .fold(0.0, f64::max);
    let floor = f64::from(passes) * per_pass;
    (floor >= RULED_OUT * fastest).then(|| {
        format!(
            "not launched: the timed pass counts put a pass at {per_pass:.4} ms or more, so {passes} passes take at least {floor:.4} ms, {:.1}x the fastest",
            floor / fastest
        )
    })
}

/// Indices of `plans` by pass count, fewest first (the untuned plan, one pass, leads).
pub(super) fn by_passes<P>(plans: &[Candidate<P>], passes: impl Fn(&P) -> u32) -> Vec<usize> {
    let mut order: Vec<usize> = (0..plans.len()).collect();
    order.sort_by_key(|&i| passes(&plans[i].plan));
    order
}

/// `(passes, median)` of the candidates that have a median.
pub(super) fn pass_points<P>(
    timed: &[(&P, Option<f64>)],
    passes: impl Fn(&P) -> u32,
) -> Vec<(u32, f64)> {
    timed
        .iter()
        .filter_map(|(plan, ms)| Some((passes(plan), (*ms)?)))
        .collect()
}

/// The refinement's pass count over `total` bytes from the timed `(passes, ms)`, and why:
/// with `past_first`, at a cache's capacity past the fastest count ([`edge_past`]); else at
/// a cache's capacity between the fastest counts ([`edge_passes`]); else between them
/// ([`refine_passes`]).
pub(super) fn refined(
    total: u64,
    profile: &Profile,
    points: &[(u32, f64)],
    past_first: bool,
) -> Option<(u32, &'static str)> {
    let edges = cache_edges(profile);
    if let Some(p) = edge_past(total, points, &edges).filter(|_| past_first) {
        return Some((
            p,
            "at a cache's capacity, past the fastest timed pass count",
        ));
    }
    if let Some(p) = edge_passes(total, points, &edges) {
        return Some((
            p,
            "at a cache's capacity, between the fastest timed pass counts",
        ));
    }
    Some((
        refine_passes(points)?,
        "between the fastest timed pass counts",
    ))
}

/// [`ruled_out_passes`] for a plan of `passes`, from the timed plans `kin` takes (its own
/// approach and one pass), against the fastest of all.
pub(super) fn ruled_out_among<P>(
    passes: u32,
    timed: &[(&P, Option<f64>)],
    kin: impl Fn(&P) -> bool,
    count: impl Fn(&P) -> u32,
) -> Option<String> {
    let fastest = timed.iter().filter_map(|t| t.1).reduce(f64::min)?;
    let own: Vec<(&P, Option<f64>)> = timed.iter().copied().filter(|(p, _)| kin(p)).collect();
    ruled_out_passes(passes, &pass_points(&own, count), fastest)
}
