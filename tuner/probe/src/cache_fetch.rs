//! The L2's fetch granularity: what one DRAM miss brings into the L2, a step of the cache
//! probe after the main-memory latency distribution.
//!
//! [`MemorySystem::cold_stride_samples`] times each load of a chain that goes up in address
//! at [`FETCH_STRIDE`] over memory evicted from the L2 just before. Grouped by the L2's
//! line (the `L2` level's `line_bytes`), the load at offset 0 of each line is its first
//! touch since the eviction, so a miss; a later load of the same line hits where that miss
//! (or another one of the line) brought its bytes in. A load is a hit where it takes well
//! under its own line's offset-0 load ([`HIT_SHARE`]): comparing within a line keeps lines
//! of a far L2 partition, whose hits and misses are both slower, classified right.
//!
//! The fetch is the smallest power of two `g` from [`MIN_FETCH`] up to the line for which
//! the loads at offsets that are multiples of `g` miss and the others hit, each offset
//! judged by the share of lines that hit there ([`OFFSET_SHARE`]). Lines whose offset-0 load is not miss-like (under [`MISS_OVER_HIT`]
//! times the L2's hit latency) are left out; too many of them (the first loads hit: a fetch
//! past the line, a prefetch, or an eviction that did not evict) or fewer than
//! [`MIN_LINES`] lines left make the fetch unknown, as does no candidate agreeing.

use super::backend::{BackendError, MemorySystem};
use memtune_core::profile::{CacheCarveout, CacheHierarchy, CachePath};

/// Bytes between the chain's nodes: NVIDIA's sector, the smallest fetch there is.
pub const FETCH_STRIDE: u64 = 32;
/// Timed loads of the test: 2048 nodes of 32 B, 512 lines of 128 B (one launch).
pub const FETCH_SAMPLES: u32 = 2048;
/// The smallest fetch a candidate may be.
pub const MIN_FETCH: u64 = 32;
/// A load under this share of its line's offset-0 load (a miss) is a hit: on an H100 a
/// near-partition hit is about 0.4 of a DRAM miss (280 against 700 cycles), and a far
/// partition's hit (528 cycles) pairs with a miss that crosses to the far partition too.
pub const HIT_SHARE: f64 = 0.75;
/// A line whose offset-0 load is under this multiple of the L2's hit latency did not miss
/// there, and is left out.
pub const MISS_OVER_HIT: f64 = 1.5;
/// The share of lines that must have a miss-like first load.
pub const AGREE: f64 = 0.9;
/// An offset hits where at least this share of the lines hit there, and misses where at
/// most `1 -` this share do. Judged per offset, not per line: on an H100 the load 64 B into
/// a line hit in 12% of the lines (a miss now and then fetches the whole 128 B), so only
/// 88% of the lines matched a 64 B fetch at every offset, while each offset's share is
/// clear (32 B 100%, 64 B 12%, 96 B 100%).
pub const OFFSET_SHARE: f64 = 0.75;
/// The fewest lines the inference needs.
pub const MIN_LINES: usize = 64;

/// Why the samples tell no fetch.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NoFetch {
    /// The line and stride give no offsets to tell candidates apart.
    #[error("a {line} B line walked at {stride} B has no offsets to tell fetches of {MIN_FETCH} B up to the line apart")]
    Shape { line: u64, stride: u64 },
    /// Too few whole lines with a miss-like first load were timed.
    #[error("{lines} whole lines with a miss-like first load were timed, fewer than {MIN_LINES}")]
    TooFewLines { lines: usize },
    /// Too many lines' first loads were not misses.
    #[error("the first load of {first_hits} of {lines} lines was not a miss (under {MISS_OVER_HIT} x the L2's {l2_hit:.0}-cycle hit): the fetch spans more than a line, a prefetch brought lines in, or the L2 was not evicted")]
    FirstLoadsHit {
        first_hits: usize,
        lines: usize,
        l2_hit: f64,
    },
    /// No candidate agrees with enough lines.
    #[error("no fetch of {MIN_FETCH} B up to the {line} B line has its offsets hit in at least {offset_pct:.0}% of the {lines} lines and its multiples miss in as many; hits per offset: {shares}")]
    NoCandidate {
        line: u64,
        lines: usize,
        offset_pct: f64,
        shares: String,
    },
}

/// The fetch from the cycles of loads `i` at `i * stride` from a `line`-aligned start,
/// with lines of `line` bytes and an L2 hit latency of `l2_hit` cycles.
pub fn fetch_from_samples(
    cycles: &[u64],
    stride: u64,
    line: u64,
    l2_hit: f64,
) -> Result<u64, NoFetch> {
    let usable =
        stride > 0 && line.is_power_of_two() && line >= 2 * MIN_FETCH && MIN_FETCH % stride == 0;
    if !usable {
        return Err(NoFetch::Shape { line, stride });
    }
    let per_line = (line / stride) as usize;
    let whole: Vec<&[u64]> = cycles.chunks_exact(per_line).collect();
    if whole.len() < MIN_LINES {
        return Err(NoFetch::TooFewLines { lines: whole.len() });
    }
    // Per line, whether each later offset hit; lines with a hit-like first load left out.
    let hits: Vec<Vec<bool>> = whole
        .iter()
        .filter(|l| l[0] as f64 >= MISS_OVER_HIT * l2_hit)
        .map(|l| {
            let miss = l[0] as f64;
            l[1..]
                .iter()
                .map(|&c| (c as f64) < HIT_SHARE * miss)
                .collect()
        })
        .collect();
    let first_hits = whole.len() - hits.len();
    if (first_hits as f64) > (1.0 - AGREE) * whole.len() as f64 {
        return Err(NoFetch::FirstLoadsHit {
            first_hits,
            lines: whole.len(),
            l2_hit,
        });
    }
    if hits.len() < MIN_LINES {
        return Err(NoFetch::TooFewLines { lines: hits.len() });
    }
    let offsets: Vec<u64> = (1..per_line as u64).map(|k| k * stride).collect();
    let share: Vec<f64> = (0..offsets.len())
        .map(|k| hits.iter().filter(|h| h[k]).count() as f64 / hits.len() as f64)
        .collect();
    let fits = |g: u64| {
        offsets.iter().zip(&share).all(|(&o, &s)| {
            if o % g == 0 {
                s <= 1.0 - OFFSET_SHARE
            } else {
                s >= OFFSET_SHARE
            }
        })
    };
    if let Some(g) = (0..)
        .map(|k| MIN_FETCH << k)
        .take_while(|&g| g <= line)
        .find(|&g| fits(g))
    {
        return Ok(g);
    }
    let shares: Vec<String> = offsets
        .iter()
        .zip(&share)
        .map(|(o, s)| format!("{o} B {:.0}%", 100.0 * s))
        .collect();
    Err(NoFetch::NoCandidate {
        line,
        lines: hits.len(),
        offset_pct: 100.0 * OFFSET_SHARE,
        shares: shares.join(", "),
    })
}

/// Measures the fetch of the `L2` level (the L2 path's first, near-partition level) and
/// sets its `fetch_bytes`. Optional: a level without a known line (a quick probe's, or one
/// the line test could not count) or a system without the model is skipped; a failed
/// measurement or samples that tell no fetch leave it unknown with a warning.
pub(crate) fn measure_l2_fetch(
    system: &mut dyn MemorySystem,
    h: &mut CacheHierarchy,
    warnings: &mut Vec<String>,
) {
    let Some(level) = h.levels.iter_mut().find(|l| {
        l.path == CachePath::L2 && l.carveout == CacheCarveout::Default && l.name == "L2"
    }) else {
        return;
    };
    let Some(line) = level
        .line_bytes
        .filter(|&l| l.is_power_of_two() && l >= 2 * MIN_FETCH)
    else {
        return;
    };
    let not_measured = "caches: the L2's fetch not measured";
    let samples = match system.cold_stride_samples(FETCH_STRIDE, FETCH_SAMPLES) {
        Ok(s) => s,
        Err(BackendError::Unsupported { .. }) => return,
        Err(e) => {
            warnings.push(format!("{not_measured}: {e}"));
            return;
        }
    };
    let fetch = fetch_from_samples(
        &samples.cycles,
        samples.stride_bytes,
        line,
        level.hit_latency_cycles,
    );
    match fetch {
        Ok(g) => level.fetch_bytes = Some(g),
        Err(e) => warnings.push(format!("{not_measured}: {e}")),
    }
}

#[cfg(test)]
#[path = "cache_fetch_tests.rs"]
mod tests;
