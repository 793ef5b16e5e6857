//! The read-only data path (`ld.global.nc`, what `__ldg` emits): its footprint sweep, as
//! the L1 path's (`cache_sweep.rs`, first level only, default carveout), and whether it
//! shares the L1's storage.
//!
//! The sharing test, two launches at the default carveout: a `.ca` ring of half the
//! smaller of the two levels is walked once (its lines brought in, none hit) and timed: L1
//! hits. Then the same, with a read-only ring of 0.9 of that size, placed past it, walked
//! twice between the `.ca` walk and its timing. Where the two paths share one storage the
//! read-only ring's lines (together the rings are 1.4 times what it holds; the second pass
//! hits the read-only lines, the `.ca` ones never were) evict the `.ca` ring's, so the
//! second timing rises toward the L2's latency; where the read-only path has its own cache
//! it stays at the L1's. The `.ca` lines are never hit before the read-only walk because
//! an H100's L1 does not act as LRU: with the `.ca` ring timed (hit) first, a read-only
//! ring of the same sizes walked twice slowed it by 4 cycles of 250 (`docs/profile.md`).
//! Both rings use the L1's line as stride, one load per line, so their sizes count lines.
//!
//! Both steps are optional: where one fails, its answer is left out with a warning and the
//! cache section stands. A quick probe skips them (`caches.rs`).

use super::backend::{BackendError, Carveout, LoadPath, MemorySystem};
use super::cache_sweep::{probe_path, PathOutcome, LONG_STRIDE};
use super::options::ProbeOptions;
use memtune_core::profile::{
    CacheCarveout, CacheCurve, CacheCurveKind, CacheLevel, CachePath, CachePoint,
};

/// The `.ca` ring, in sizes of the smaller level: it fits with room to spare.
const L1_RING: f64 = 0.5;
/// The read-only ring, in the same unit: it fits alone, and with the `.ca` ring overflows.
const READ_ONLY_RING: f64 = 0.9;
/// The `.ca` ring's rise, as a share of the way from its L1 hit to the L2's latency, above
/// which the paths share the storage...
const SHARES: f64 = 0.25;
/// ...and below which they do not; between, the answer is left unknown.
const SEPARATE: f64 = 0.1;

/// The read-only path's outcome, or `None` where the system has no such path or its
/// chases failed (then with a warning).
pub(crate) fn probe_read_only(
    system: &mut dyn MemorySystem,
    options: &ProbeOptions,
    warnings: &mut Vec<String>,
) -> Result<Option<PathOutcome>, BackendError> {
    match probe_path(system, LoadPath::ReadOnly, Carveout::Default, options, true) {
        Ok(o) => Ok(Some(o)),
        Err(BackendError::Unsupported { .. }) => Ok(None),
        Err(BackendError::Cancelled) => Err(BackendError::Cancelled),
        Err(e) => {
            warnings.push(format!("caches: the read-only path not measured: {e}"));
            Ok(None)
        }
    }
}

/// Tests whether the read-only level `read_only` shares the storage of the L1 (`l1`, at
/// the default carveout), against the L2's hit latency `l2_hit`: sets its `shares_l1` and
/// returns the test's curve, or `None` where it could not be made.
pub(crate) fn test_sharing(
    system: &mut dyn MemorySystem,
    read_only: &mut CacheLevel,
    l1: &CacheLevel,
    l2_hit: f64,
    warnings: &mut Vec<String>,
) -> Result<Option<CacheCurve>, BackendError> {
    let stride = l1.line_bytes.unwrap_or(LONG_STRIDE).max(8);
    let smaller = l1.size_bytes.min(read_only.size_bytes) as f64;
    let ring = |share: f64| ((smaller * share) as u64 / stride).max(1) * stride;
    let (l1_ring, ro_ring) = (ring(L1_RING), ring(READ_ONLY_RING));
    let (before, after) = match system.cache_sharing(LoadPath::ReadOnly, stride, l1_ring, ro_ring) {
        Ok(t) => t,
        Err(BackendError::Unsupported { .. }) => return Ok(None),
        Err(BackendError::Cancelled) => return Err(BackendError::Cancelled),
        Err(e) => {
            warnings.push(format!("caches: read-only sharing with L1 not tested: {e}"));
            return Ok(None);
        }
    };
    read_only.shares_l1 = shares(before, after, l2_hit);
    let point = |cycles_per_load| CachePoint {
        footprint_bytes: l1_ring,
        stride_bytes: stride,
        cycles_per_load,
    };
    Ok(Some(CacheCurve {
        path: CachePath::ReadOnly,
        carveout: CacheCarveout::Default,
        kind: CacheCurveKind::Sharing,
        level: Some(read_only.name.clone()),
        points: vec![point(before), point(after)],
    }))
}

/// Whether the `.ca` ring's rise from `before` to `after` says the storage is shared,
/// against the L2's latency `l2_hit`; `None` where the rise is neither clear nor absent.
pub(crate) fn shares(before: f64, after: f64, l2_hit: f64) -> Option<bool> {
    let span = l2_hit - before;
    if !(span > 0.0 && before.is_finite() && after.is_finite()) {
        return None;
    }
    let rise = (after - before) / span;
    if rise >= SHARES {
        Some(true)
    } else if rise <= SEPARATE {
        Some(false)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rise_toward_l2_is_sharing_and_none_is_not() {
        assert_eq!(shares(32.0, 270.0, 280.0), Some(true));
        assert_eq!(shares(32.0, 100.0, 280.0), Some(true));
        assert_eq!(shares(32.0, 33.0, 280.0), Some(false));
        // Halfway in between: unclear.
        assert_eq!(shares(32.0, 60.0, 280.0), None);
        // No L2 above the L1 to compare with, or garbage.
        assert_eq!(shares(300.0, 310.0, 280.0), None);
        assert_eq!(shares(f64::NAN, 310.0, 280.0), None);
    }
}
