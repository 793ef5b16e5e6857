//! What the profile knows about address translation for one memory kind: its TLB levels
//! and its random-access curve, where they put boundaries, and how to say so.

use super::units::bytes;
use crate::profile::{
    MemoryKind, Profile, RandomAccessCurve, RandomAccessPoint, Section, TlbKind, TlbLevel,
};

/// Scopes are whole multiples of this when no TLB level gives a page size: the smallest
/// page any memory kind uses (4 KiB host pages).
const FALLBACK_GRANULE: u64 = 4096;

/// A fall of the random-access curve is a boundary when throughput drops by at least this
/// ratio from one region to the next, or over two doublings (a window of three regions),
/// comparing the medians of each region's repeats: the same 10% the knee detector asks of
/// its one, largest fall (`tuner/probe/src/random_access.rs`).
const FALL_RATIO: f64 = 1.1;

pub(crate) struct Translation<'a> {
    pub kind: MemoryKind,
    pub tlb: Option<&'a TlbKind>,
    pub curve: Option<&'a RandomAccessCurve>,
    tlb_section: &'a Section<TlbKind>,
    curve_section: &'a Section<RandomAccessCurve>,
}

impl<'a> Translation<'a> {
    pub(crate) fn of(profile: &'a Profile, kind: MemoryKind) -> Translation<'a> {
        let tlb_section = profile.tlb.get(kind);
        let curve_section = profile.random_access.get(kind);
        Translation {
            kind,
            tlb: tlb_section.measured(),
            curve: curve_section.measured(),
            tlb_section,
            curve_section,
        }
    }

    /// The bytes to price a scope of `scope` bytes at on this kind's measured curve.
    /// Zero-copy's fall moves with the allocation
    /// (`git show 2317edf:benchmarks/results/2026-11-22-h200-session5-zero-copy/`): the
    /// probe's knee is the last region its own buffer read fast, so pinned memory is priced
    /// there as the curve has it one doubling on. On all fourteen H200s swept, one pass over
    /// 512 MiB, the probe's knee on each, ran 1.09-1.29x slower than the best split.
    pub(crate) fn priced_bytes(&self, scope: u64) -> u64 {
        match self.curve.and_then(|c| c.knee_bytes) {
            Some(knee) if self.kind == MemoryKind::Pinned && scope >= knee => {
                scope.saturating_mul(2)
            }
            _ => scope,
        }
    }

    /// One reason line: the levels and the curve of this kind, or why they are missing.
    pub(crate) fn summary(&self) -> String {
        let tlb = match self.tlb {
            Some(t) if t.levels.is_empty() && t.unstable_levels.is_empty() => {
                format!("no TLB miss up to {}", bytes(t.swept_up_to_bytes))
            }
            Some(t) => {
                let levels: Vec<String> = t
                    .levels
                    .iter()
                    .enumerate()
                    .map(|(i, l)| format!("{} ({})", level_name(i), describe_level(l)))
                    .collect();
                let stable = if levels.is_empty() {
                    "no stable TLB level".to_string()
                } else {
                    format!("TLB {}", levels.join(", "))
                };
                match t.unstable_levels.len() {
                    0 => stable,
                    n => format!(
                        "{stable} ({n} unstable level{} left out: not found again on a fresh allocation)",
                        if n == 1 { "" } else { "s" }
                    ),
                }
            }
            None => format!("TLB {}", self.tlb_section.status_line()),
        };
        let curve = match self.curve {
            Some(c) => {
                let regions = c.points.iter().map(|p| p.region_bytes);
                let range = match (regions.clone().min(), regions.max()) {
                    (Some(lo), Some(hi)) => format!("{}..{}", bytes(lo), bytes(hi)),
                    _ => "no points".to_string(),
                };
                match c.knee_bytes {
                    Some(k) => format!("random-access curve {range}, knee at {}", bytes(k)),
                    None => format!("random-access curve {range}, no knee"),
                }
            }
            None => format!("random-access curve {}", self.curve_section.status_line()),
        };
        format!("{} memory: {tlb}; {curve}", self.kind)
    }

    /// The boundaries the profile shows below `size` bytes of the `what` (TLB reaches, the
    /// curve's knee and every other significant fall of the curve) as a reason line, or why
    /// there is nothing to scope.
    pub(crate) fn boundaries_below(&self, size: u64, what: &str) -> Result<String, String> {
        if self.tlb.is_none() && self.curve.is_none() {
            return Err(format!(
                "no TLB levels or random-access curve for {} memory: not scoped; run `cargo tune` to measure them",
                self.kind
            ));
        }
        let levels = self
            .tlb
            .into_iter()
            .flat_map(|t| t.levels.iter().enumerate());
        let mut found: Vec<String> = levels
            .filter(|(_, l)| l.reach_bytes < size)
            .map(|(i, l)| format!("{} reach {}", level_name(i), bytes(l.reach_bytes)))
            .collect();
        if let Some(knee) = self.curve.and_then(|c| c.knee_bytes).filter(|&k| k < size) {
            found.push(format!("random-access knee {}", bytes(knee)));
        }
        found.extend(
            self.falls()
                .into_iter()
                .filter(|&(at, _)| at < size)
                .map(|(at, ratio)| {
                    format!(
                        "random-access fall at {} ({ratio:.2}x slower beyond it; cache capacity?)",
                        bytes(at)
                    )
                }),
        );
        if found.is_empty() {
            return Err(format!(
                "no TLB reach or random-access knee below the {what} ({}), nor a fall of the curve: no miss to avoid, not scoped",
                bytes(size)
            ));
        }
        Ok(format!(
            "below the {what} ({}): {}",
            bytes(size),
            found.join(", ")
        ))
    }

    /// Scopes of `size` bytes are whole multiples of the largest page translated by a level
    /// whose reach is below `size`, so that a scope of k such pages takes k entries (seed
    /// 000 §4.5: the L2/L3 "pages" are 16 small ones). Where every level holds the whole
    /// `size`, no entry is to be saved, and a scope that pays (one fitting a cache) is
    /// priced by the curve alone: the smallest page of any level then. On an H200 a
    /// 64 MiB region ran fastest in 16 MiB scopes, which the L2 TLB's 32 MiB pages would
    /// have ruled out.
    pub(crate) fn granule(&self, size: u64) -> u64 {
        let levels = self.tlb.map_or(&[][..], |t| t.levels.as_slice());
        let pages = || levels.iter().map(|l| l.page_bytes).filter(|&p| p > 0);
        let overflowed = levels
            .iter()
            .filter(|l| l.reach_bytes < size && l.page_bytes > 0)
            .map(|l| l.page_bytes)
            .max();
        overflowed
            .or_else(|| pages().min())
            .unwrap_or(FALLBACK_GRANULE)
    }

    /// Which boundaries below `region` a pass over `scope` bytes stays within, and which it
    /// still crosses.
    pub(crate) fn effect_of_scope(&self, region: u64, scope: u64) -> String {
        let verb = |reach: u64| {
            if scope <= reach {
                "avoids"
            } else {
                "still misses"
            }
        };
        let levels = self
            .tlb
            .into_iter()
            .flat_map(|t| t.levels.iter().enumerate());
        let mut effects: Vec<String> = levels
            .filter(|(_, l)| l.reach_bytes < region)
            .map(|(i, l)| {
                format!(
                    "{} {} ({})",
                    verb(l.reach_bytes),
                    level_name(i),
                    describe_level(l)
                )
            })
            .collect();
        if let Some(knee) = self
            .curve
            .and_then(|c| c.knee_bytes)
            .filter(|&k| k < region)
        {
            let side = if scope <= knee { "within" } else { "beyond" };
            effects.push(format!("{side} the random-access knee ({})", bytes(knee)));
        }
        for (at, _) in self.falls().into_iter().filter(|&(at, _)| at < region) {
            let side = if scope <= at { "within" } else { "beyond" };
            effects.push(format!("{side} the random-access fall at {}", bytes(at)));
        }
        effects.join(", ")
    }

    /// Where the curve falls significantly, other than at its knee: `(region, ratio)`, the
    /// last region before the fall (as the knee is) and how many times slower reads are
    /// after it. See [`curve_falls`].
    pub(crate) fn falls(&self) -> Vec<(u64, f64)> {
        let Some(curve) = self.curve else {
            return Vec::new();
        };
        curve_falls(curve)
            .into_iter()
            .filter(|&(at, _)| Some(at) != curve.knee_bytes)
            .collect()
    }
}

/// Every significant fall of a random-access curve, as `(region, ratio)`: the region after
/// which throughput drops and by how much. Repeats of a region count by their median. A
/// fall is at least [`FALL_RATIO`] from one region to the next; where no single step falls
/// that much, a window of two steps that does counts once, at its start (a gradual slope
/// over a cache's capacity). Windows overlapping a fall already found are not counted again.
pub(crate) fn curve_falls(curve: &RandomAccessCurve) -> Vec<(u64, f64)> {
    point_falls(&curve.points)
}

/// [`curve_falls`] of any `(region, operations per second)` points, e.g. a curve's atomics.
pub(crate) fn point_falls(points: &[RandomAccessPoint]) -> Vec<(u64, f64)> {
    let mut sorted: Vec<(u64, f64)> = points
        .iter()
        .filter(|p| p.region_bytes > 0 && p.reads_per_second > 0.0)
        .map(|p| (p.region_bytes, p.reads_per_second))
        .collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let medians: Vec<(u64, f64)> = sorted
        .chunk_by(|a, b| a.0 == b.0)
        .map(|g| (g[0].0, median_of_sorted(g)))
        .collect();
    let step = |i: usize, j: usize| medians[i].1 / medians[j].1;
    let mut out: Vec<(u64, f64)> = Vec::new();
    // The index of the last region that a counted fall spans to.
    let mut covered_to: Option<usize> = None;
    for i in 0..medians.len().saturating_sub(1) {
        let single = step(i, i + 1);
        if single >= FALL_RATIO {
            out.push((medians[i].0, single));
            covered_to = Some(i + 1);
            continue;
        }
        let Some(j) = Some(i + 2).filter(|&j| j < medians.len()) else {
            continue;
        };
        let free = covered_to.is_none_or(|c| c <= i);
        let window = step(i, j);
        // Only when the step after this one is no fall by itself (that one would count).
        if free && window >= FALL_RATIO && step(i + 1, j) < FALL_RATIO {
            out.push((medians[i].0, window));
            covered_to = Some(j);
        }
    }
    out
}

/// The median throughput of one region's repeats, sorted by throughput (the lower middle
/// one of an even count is averaged with the upper).
fn median_of_sorted(group: &[(u64, f64)]) -> f64 {
    let n = group.len();
    if n % 2 == 1 {
        group[n / 2].1
    } else {
        (group[n / 2 - 1].1 + group[n / 2].1) / 2.0
    }
}

fn level_name(index: usize) -> String {
    format!("L{}", index + 1)
}

fn describe_level(l: &TlbLevel) -> String {
    format!(
        "{} x {} = {}, +{:.0} cycles per miss",
        l.entries,
        bytes(l.page_bytes),
        bytes(l.reach_bytes),
        l.miss_penalty_cycles
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::test_curve as curve;

    #[test]
    fn falls_count_single_steps_and_two_step_windows_by_median() {
        let c = curve(&[
            (1, 100.0),
            (2, 100.0),
            // One slow repeat does not make a fall: the median is 99.
            (4, 99.0),
            (4, 50.0),
            (4, 99.0),
            // A single step of 1.25x.
            (8, 80.0),
            // Two steps of ~1.07x from 8: one window fall at 8, 80 -> 70.
            (16, 75.0),
            (32, 70.0),
            (64, 70.0),
        ]);
        let falls = curve_falls(&c);
        let at: Vec<u64> = falls.iter().map(|f| f.0).collect();
        assert_eq!(at, vec![4, 8], "{falls:?}");
        assert!((falls[0].1 - 99.0 / 80.0).abs() < 1e-12);
        assert!((falls[1].1 - 80.0 / 70.0).abs() < 1e-12);
    }
}
