//! Step 4c of the cache probe (`cache_sweep.rs`), L2 path only: the line of a level too
//! large for the stride test. Past a cache of tens of megabytes a stride below the line
//! needs rings of millions of loads, so the stride test stops at 64 B and leaves the line
//! unknown. This test counts lines instead, from the level's own size: the size `S` was
//! measured at a stride `s0`, where the cache holds `T = S / max(s0, line)` lines. A ring
//! of footprint `f` at stride `s` touches `f / max(s, line)` lines (every line of the ring
//! where `s` is below the line), so it overflows the cache by
//! `f * max(s0, line) / (S * max(s, line))`, however the sets are indexed where `s0` is at
//! most the line (below it, the candidates agree and the test leaves the line unknown):
//! the test runs only where `s0` is at most 128 B (NVIDIA's line), as the GPU's rings of up
//! to 2^22 elements keep it past 8 MiB.
//!
//! Three rings at strides chosen so that the candidate lines (`s0 / 4` to `4 * s0`,
//! powers of two) predict different outcomes: at 9/16 of `s0` over 0.72 `S` (a line of `s0`
//! fits, a shorter one overflows by 1.28), at 31/16 of `s0` over 1.28 `S` (a line up to
//! `s0` fills 0.66 of the cache, twice `s0` overflows by 1.28) and at 59/16 of `s0` over
//! 1.28 `S` (`2 s0` fills 0.69, `4 s0` overflows). The strides are odd multiples of
//! `s0 / 16`, so that none walks the lines with a period sharing a factor with the sets
//! (1.5 or 3 lines would use only two or one thirds of a cache of `3 * 2^k` sets), and the
//! rings that skip lines fill at most 0.7 of the cache where they are to fit: on an H100
//! a ring at 200 B holding 0.8 of the near partition's lines missed on 6-13% of its loads
//! (hashed sets fill unevenly), where a ring touching every line (the sweep's, at 128 B)
//! hits up to 24.1 MiB. On an H100's 24 MiB near partition (`s0` = 128 B) that is 72 B
//! over 17.3 MiB, 248 B and 472 B over 30.7 MiB: about 450 000 loads, 0.1-0.15 s.
//!
//! The line is the one candidate whose every clear prediction (fits: overflow at most
//! 0.75; misses: at least 1.25) the chases bear out; lines below `s0` predict alike (the
//! tags hold as many of them), so they leave it unknown.

use super::backend::BackendError;
use super::cache_sweep::{cache_carveout, cache_path, level_name, Found, PathProbe, LONG_STRIDE};
use memtune_core::profile::{CacheCurve, CacheCurveKind, CachePoint};

/// `(stride in 16ths of s0, footprint in sizes of the level)` of the three rings.
const RINGS: [(u64, f64); 3] = [(9, 0.72), (31, 1.28), (59, 1.28)];
/// A candidate predicts a fit at most this overflow (hashed sets fill unevenly: see the
/// module docs)...
const FITS: f64 = 0.75;
/// ...and a miss at least this one (as the L1's line fit: a fifth of the loads miss).
const OVERFLOWS: f64 = 1.25;
/// A ring hits where its latency is within this share of the way from the level's hit
/// latency to the plateau past it (as the L1's line fit).
const HIT_BAND: f64 = 0.1;

impl PathProbe<'_> {
    /// [`PathProbe::line_by_capacity`], where a chase that fails leaves the line unknown
    /// with a warning rather than failing the path (a cancellation still stops the probe).
    pub(crate) fn optional_line_by_capacity(
        &mut self,
        i: usize,
        found: &[Found],
        hit: f64,
    ) -> Result<Option<u64>, BackendError> {
        match self.line_by_capacity(i, found, hit) {
            Ok(line) => Ok(line),
            Err(BackendError::Cancelled) => Err(BackendError::Cancelled),
            Err(e) => {
                self.warnings.push(format!(
                    "caches: the line of {} not measured: {e}",
                    level_name(self.path, i)
                ));
                Ok(None)
            }
        }
    }

    /// The line of level `i` (size and hit latency known) from its capacity at three
    /// strides, or `None` where the rings do not fit the path or no single candidate
    /// agrees with them.
    pub(crate) fn line_by_capacity(
        &mut self,
        i: usize,
        found: &[Found],
        hit: f64,
    ) -> Result<Option<u64>, BackendError> {
        let level = &found[i];
        let s0 = level.stride;
        let rings: Vec<(u64, u64)> = RINGS
            .iter()
            .map(|&(sixteenths, share)| {
                let stride = (s0 * sixteenths / 16).max(8) / 8 * 8;
                let footprint = (level.size as f64 * share) as u64 / stride * stride;
                (stride, footprint)
            })
            .collect();
        // Every ring must miss into the next level, not past it, and fit the backend.
        let next = found
            .get(i + 1)
            .map_or(self.bound, |n| n.size.min(self.bound));
        let fits_path = rings
            .iter()
            .all(|&(s, f)| s > 0 && f < next && f / s <= self.max_elements && f / s >= 8);
        // Past NVIDIA's line, what the size means depends on how sets are indexed: on hashed
        // sets a stride of `r` lines holds `r` times the lines, on sets indexed by address
        // only as many (it uses `1 / r` of them). The GPU's long rings keep `s0` at 128 B.
        if !(32..=LONG_STRIDE).contains(&s0) || level.above <= hit || !fits_path {
            return Ok(None);
        }
        let mut points = Vec::new();
        for &(stride, footprint) in &rings {
            // Long rings, measured once: a GPU's mean over their loads is stable.
            let y = self.chase(stride, footprint)?;
            points.push(CachePoint {
                footprint_bytes: footprint,
                stride_bytes: stride,
                cycles_per_load: y,
            });
        }
        self.extra.push(CacheCurve {
            path: cache_path(self.path),
            carveout: cache_carveout(self.carveout),
            kind: CacheCurveKind::LineFit,
            level: Some(level_name(self.path, i)),
            points: points.clone(),
        });
        let threshold = hit + HIT_BAND * (level.above - hit);
        let observed: Vec<(u64, u64, bool)> = points
            .iter()
            .map(|p| {
                (
                    p.stride_bytes,
                    p.footprint_bytes,
                    p.cycles_per_load <= threshold,
                )
            })
            .collect();
        Ok(line_from_capacity(&observed, level.size, s0))
    }
}

/// The line from rings `(stride, footprint, hit)` over a level of `size` bytes measured at
/// stride `s0`: the one candidate (`s0 / 4` to `4 * s0`) whose clear predictions all hold;
/// `None` where none or several do.
pub(crate) fn line_from_capacity(observed: &[(u64, u64, bool)], size: u64, s0: u64) -> Option<u64> {
    let candidates = (0..5).map(|k| (s0 / 4) << k).filter(|&l| l > 0);
    let agree = |line: u64| {
        observed.iter().all(|&(stride, footprint, hit)| {
            let overflow =
                footprint as f64 * s0.max(line) as f64 / (size as f64 * stride.max(line) as f64);
            !(overflow <= FITS && !hit || overflow >= OVERFLOWS && hit)
        })
    };
    let lines: Vec<u64> = candidates.filter(|&l| agree(l)).collect();
    match lines[..] {
        [line] => Some(line),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    /// What an LRU cache of `lines` lines of `line` bytes shows for the three rings.
    fn ideal(line: u64, size: u64, s0: u64) -> Vec<(u64, u64, bool)> {
        let lines = size / s0.max(line);
        RINGS
            .iter()
            .map(|&(sixteenths, share)| {
                let stride = s0 * sixteenths / 16 / 8 * 8;
                let footprint = (size as f64 * share) as u64 / stride * stride;
                let touched = footprint / stride.max(line);
                (stride, footprint, touched <= lines)
            })
            .collect()
    }

    #[test]
    fn each_line_from_s0_up_is_told_apart() {
        for line in [128, 256, 512] {
            assert_eq!(
                line_from_capacity(&ideal(line, 24 * MIB, 128), 24 * MIB, 128),
                Some(line),
                "{line}"
            );
        }
    }

    #[test]
    fn lines_below_s0_or_contradictions_are_unknown() {
        // Lines of 32 and 64 B: the tags hold as many at 128 B, so both agree.
        assert_eq!(
            line_from_capacity(&ideal(64, 24 * MIB, 128), 24 * MIB, 128),
            None
        );
        // Every ring missing contradicts every candidate.
        let all_miss: Vec<_> = ideal(128, 24 * MIB, 128)
            .into_iter()
            .map(|(s, f, _)| (s, f, false))
            .collect();
        assert_eq!(line_from_capacity(&all_miss, 24 * MIB, 128), None);
        assert_eq!(line_from_capacity(&[], 24 * MIB, 128), None);
    }

    #[test]
    fn the_rings_of_an_h100_near_partition() {
        let rings = ideal(128, 24 * MIB, 128);
        let shape: Vec<(u64, u64)> = rings.iter().map(|r| (r.0, r.1 / r.0)).collect();
        assert_eq!(shape, [(72, 251_658), (248, 129_888), (472, 68_246)]);
        assert!(rings.iter().all(|r| r.2), "a 128 B line fits all three");
    }
}
