//! Step 4b of the cache probe (`cache_sweep.rs`), L1 path only: the line the tags allocate,
//! apart from what one miss fetches. The stride test (step 4) finds the granularity of a
//! miss: on a sectored cache (an H100's L1: 128 B lines of 32 B sectors) that is the sector,
//! as every load at a stride of a sector or more misses. This test counts the lines the
//! cache holds instead: a ring of 1.5 times the level's size at a stride `s` above the
//! fetch touches a new sector with every load, so its loads hit only where the lines they
//! touch fit. At `s` below the line every line of the ring is touched (1.5 times the
//! capacity: misses); from the line up `footprint / s` lines are, which fit once
//! `s >= 1.5 * line`.
//!
//! Each candidate line (the fetch times a power of two) predicts the strides that overflow
//! the cache by a quarter or more; those miss whatever the replacement, as a ring that holds
//! 1.25 times the lines the cache can hold misses on a fifth of its loads at least. The
//! line is the largest candidate whose predicted misses all miss, where the next one's are
//! contradicted by a stride that hits. Sets that a stride fills unevenly miss above the
//! boundary too, which contradicts no candidate.
//!
//! Strides are odd multiples of a quarter of the fetch (8 B at least, for the ring's u64
//! elements), so none is a power of two or a multiple of the line: no stride maps the ring
//! onto a subset of the sets, and none sits exactly on a boundary `1.5 * line`.

use super::backend::BackendError;
use super::cache_sweep::{cache_carveout, cache_path, level_name, Found, PathProbe, REPEATS};
use super::infer_cache::medians_by;
use memtune_core::profile::{CacheCurve, CacheCurveKind, CachePoint};

/// The ring's footprint, in sizes of the level: every line at a stride below the line is
/// half as many again as the cache holds, and from the line up they fit at 1.5 lines.
const FIT_FOOTPRINT: f64 = 1.5;
/// The largest stride tried: lines up to 256 B show (their boundary is at 384 B).
const FIT_MAX_STRIDE: u64 = 512;
/// A stride hits where its median latency is within this share of the way from the hit
/// latency to the latency past the level.
const FIT_HIT_BAND: f64 = 0.1;
/// A candidate line predicts a miss where the ring touches this many times the lines the
/// cache holds: at least `1 - 1 / 1.25` = a fifth of its loads miss, twice `FIT_HIT_BAND`.
const FIT_OVERFLOW: f64 = 1.25;
/// The test runs on levels of at least this many fetch units: a ring's few lines fall
/// unevenly on the sets of a smaller cache (a 1 KiB two-way L1 of 32 B lines misses at
/// 72 B, where its lines fill it by two thirds).
const FIT_MIN_FETCHES: u64 = 512;

impl PathProbe<'_> {
    /// The allocation line of level `i` (size and hit latency known, `fetch` from the
    /// stride test), or `None` where the chases do not separate into misses then hits.
    pub(crate) fn allocation_line(
        &mut self,
        i: usize,
        found: &[Found],
        hit: f64,
        fetch: u64,
    ) -> Result<Option<u64>, BackendError> {
        let level = &found[i];
        let footprint = (level.size as f64 * FIT_FOOTPRINT) as u64;
        // The ring must miss into the next level, not past it.
        if level.size / fetch.max(1) < FIT_MIN_FETCHES
            || footprint > self.bound
            || found.get(i + 1).is_some_and(|n| footprint >= n.size)
        {
            return Ok(None);
        }
        let mut points = Vec::new();
        for stride in fit_strides(fetch) {
            let f = footprint / stride * stride;
            if f == 0 || f / stride > self.ring_cap() {
                continue;
            }
            // Rings of a few thousand loads: repeats are cheap, and a spike at the first
            // stride that hits would move the line by a factor.
            for _ in 0..REPEATS {
                let y = self.chase(stride, f)?;
                points.push(CachePoint {
                    footprint_bytes: f,
                    stride_bytes: stride,
                    cycles_per_load: y,
                });
            }
        }
        let by_stride = medians_by(&points, |p| p.stride_bytes);
        let line =
            line_from_fit(&by_stride, hit, level.above, fetch).filter(|&line| line <= level.size);
        self.extra.push(CacheCurve {
            path: cache_path(self.path),
            carveout: cache_carveout(self.carveout),
            kind: CacheCurveKind::LineFit,
            level: Some(level_name(self.path, i)),
            points,
        });
        Ok(line)
    }
}

/// The strides of the test: odd multiples of a quarter of `fetch` (8 B at least) above it,
/// up to `FIT_MAX_STRIDE`, in steps of half the fetch.
pub(crate) fn fit_strides(fetch: u64) -> Vec<u64> {
    let grain = (fetch / 4).max(8).next_power_of_two();
    (1..)
        .map(|k| (2 * k + 1) * grain)
        .skip_while(|&s| s <= fetch)
        .take_while(|&s| s <= FIT_MAX_STRIDE)
        .collect()
}

/// The line from `(stride, median latency)`: the largest candidate (`fetch` times a power
/// of two) whose predicted misses (`overflow`) all miss, where the next candidate's are
/// contradicted by a stride that hits. `None` where no stride misses, or no candidate up to
/// `FIT_MAX_STRIDE` is contradicted (the strides cannot tell).
pub(crate) fn line_from_fit(
    by_stride: &[(u64, f64)],
    hit: f64,
    above: f64,
    fetch: u64,
) -> Option<u64> {
    if above <= hit || fetch == 0 {
        return None;
    }
    let threshold = hit + FIT_HIT_BAND * (above - hit);
    let hits = |s: &(u64, f64)| s.1 <= threshold;
    if by_stride.iter().all(hits) {
        return None;
    }
    // Contradicted: a stride that the candidate says overflows the cache hits.
    let contradicted = |line: u64| {
        by_stride
            .iter()
            .any(|p| overflow(line, p.0) >= FIT_OVERFLOW && hits(p))
    };
    let mut line = fetch;
    while line <= FIT_MAX_STRIDE {
        if contradicted(line) {
            return (line > fetch).then_some(line / 2);
        }
        line *= 2;
    }
    None
}

/// How many times the lines the cache holds a ring of `FIT_FOOTPRINT` times its size
/// touches at `stride` where its lines are `line` bytes: all of them below the line.
fn overflow(line: u64, stride: u64) -> f64 {
    FIT_FOOTPRINT * line as f64 / stride.max(line) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strides_are_odd_multiples_of_a_quarter_fetch() {
        let s = fit_strides(32);
        assert_eq!(&s[..4], &[40, 56, 72, 88]);
        assert_eq!(s.last(), Some(&504));
        assert!(s.iter().all(|s| !s.is_power_of_two() && s % 8 == 0));
        assert_eq!(fit_strides(128), [160, 224, 288, 352, 416, 480]);
        assert_eq!(&fit_strides(8)[..2], &[24, 40]);
        assert!(fit_strides(1024).is_empty());
    }

    /// Latencies of an ideal LRU cache of `line`-byte lines, sectors of `fetch`.
    fn ideal(line: u64, fetch: u64) -> Vec<(u64, f64)> {
        fit_strides(fetch)
            .into_iter()
            .map(|s| {
                (
                    s,
                    if overflow(line, s) <= 1.0 {
                        30.0
                    } else {
                        260.0
                    },
                )
            })
            .collect()
    }

    #[test]
    fn line_of_ideal_caches() {
        assert_eq!(line_from_fit(&ideal(128, 32), 30.0, 260.0, 32), Some(128));
        assert_eq!(line_from_fit(&ideal(64, 32), 30.0, 260.0, 32), Some(64));
        assert_eq!(line_from_fit(&ideal(32, 32), 30.0, 260.0, 32), Some(32));
        assert_eq!(line_from_fit(&ideal(128, 128), 30.0, 260.0, 128), Some(128));
        assert_eq!(line_from_fit(&ideal(256, 32), 30.0, 260.0, 32), Some(256));
    }

    #[test]
    fn no_claim_without_misses_then_hits() {
        let flat: Vec<(u64, f64)> = fit_strides(32).into_iter().map(|s| (s, 30.0)).collect();
        assert_eq!(line_from_fit(&flat, 30.0, 260.0, 32), None);
        let high: Vec<(u64, f64)> = fit_strides(32).into_iter().map(|s| (s, 250.0)).collect();
        assert_eq!(line_from_fit(&high, 30.0, 260.0, 32), None);
        assert_eq!(line_from_fit(&ideal(128, 32), 30.0, 30.0, 32), None);
        assert_eq!(line_from_fit(&[], 30.0, 260.0, 32), None);
    }

    #[test]
    fn uneven_sets_above_the_boundary_change_nothing() {
        // An H100-like L1 of 192 sets: partial misses past 192 B, where sets fill unevenly.
        let mut curve = ideal(128, 32);
        for (s, y) in [
            (184, 105.0),
            (200, 119.0),
            (232, 163.0),
            (296, 210.0),
            (424, 167.0),
        ] {
            if let Some(p) = curve.iter_mut().find(|p| p.0 == s) {
                p.1 = y;
            }
        }
        assert_eq!(line_from_fit(&curve, 30.0, 260.0, 32), Some(128));
    }

    #[test]
    fn a_hit_among_predicted_misses_lowers_the_line() {
        // 104 B hits: a line of 128 B would have it overflow by 1.85, so 64 B it is.
        let mut curve = ideal(128, 32);
        if let Some(p) = curve.iter_mut().find(|p| p.0 == 104) {
            p.1 = 31.0;
        }
        assert_eq!(line_from_fit(&curve, 30.0, 260.0, 32), Some(64));
    }
}
