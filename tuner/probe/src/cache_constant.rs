//! The constant cache behind the last one the constant path's sweep sized (an H100's
//! constant L1.5): a constant chase cannot leave one 64 KiB bank, so on GPUs whose second
//! constant level holds the whole bank the sweep sees its plateau (34 cycles up to 2 KiB,
//! then 99-104 on H100s) but never its end.
//!
//! Its hit latency is read on that plateau at the last level's line (at the sweep's 32 B a
//! 64 B line's second load still hits the constant L1): three footprints from twice the
//! last level's size up to the bank, five chases each (rings of at most a thousand loads).
//! It is a level where the plateau is flat (every footprint within 10% of the median) and
//! clearly faster than the L2 path's first level (a constant miss past every constant cache
//! would read about as slow): then its size is the bank, as a lower bound.
//!
//! Optional: a failed chase leaves the level out with a warning.

use super::backend::{BackendError, Carveout, LoadPath, MemorySystem, CONSTANT_BANK_BYTES};
use super::cache_sweep::{level_name, LONG_STRIDE, SWEEP_STRIDE};
use super::robust::median;
use memtune_core::profile::{
    CacheCarveout, CacheCurve, CacheCurveKind, CacheLevel, CachePath, CachePoint,
};

/// Chases per footprint (each a ring of at most `CONSTANT_BANK_BYTES / 64` loads).
const REPEATS: usize = 5;
/// The plateau is flat where every footprint's median is within this share of theirs.
const FLAT: f64 = 0.1;
/// The plateau is a cache where it is at most this share of the L2 path's first hit.
const BELOW_L2: f64 = 0.9;

/// The level past `last` (the constant path's last sized level, the `count`th), with the
/// plateau's curve; `None` where there is no such plateau, no L2 to compare with, or a
/// chase failed (then with a warning).
pub(crate) fn constant_plateau(
    system: &mut dyn MemorySystem,
    last: &CacheLevel,
    count: usize,
    l2_hit: f64,
    warnings: &mut Vec<String>,
) -> Result<Option<(CacheLevel, CacheCurve)>, BackendError> {
    match measure(system, last, count, l2_hit) {
        Ok(found) => Ok(found),
        Err(BackendError::Cancelled) => Err(BackendError::Cancelled),
        Err(e) => {
            warnings.push(format!(
                "caches: the constant level past {} not measured: {e}",
                last.name
            ));
            Ok(None)
        }
    }
}

fn measure(
    system: &mut dyn MemorySystem,
    last: &CacheLevel,
    count: usize,
    l2_hit: f64,
) -> Result<Option<(CacheLevel, CacheCurve)>, BackendError> {
    let stride = last.line_bytes.unwrap_or(LONG_STRIDE).max(SWEEP_STRIDE);
    let bank = CONSTANT_BANK_BYTES;
    let first = last.size_bytes.saturating_mul(2);
    if first >= bank || bank / stride < 8 {
        return Ok(None);
    }
    let middle = ((first as f64 * bank as f64).sqrt()) as u64;
    let mut points = Vec::new();
    let mut medians = Vec::new();
    for footprint in [first, middle, bank] {
        let footprint = footprint / stride * stride;
        let mut ys = Vec::with_capacity(REPEATS);
        for _ in 0..REPEATS {
            let y = system.cache_chase(LoadPath::Constant, Carveout::Default, stride, footprint)?;
            ys.push(y);
            points.push(CachePoint {
                footprint_bytes: footprint,
                stride_bytes: stride,
                cycles_per_load: y,
            });
        }
        medians.push(median(&ys));
    }
    let hit = median(&medians);
    let flat = medians.iter().all(|&m| (m - hit).abs() <= FLAT * hit);
    if !(flat && hit > last.hit_latency_cycles && hit <= BELOW_L2 * l2_hit) {
        return Ok(None);
    }
    let name = match count {
        1 => "constant L1.5".to_string(),
        n => level_name(LoadPath::Constant, n),
    };
    let level = CacheLevel {
        name: name.clone(),
        path: CachePath::Constant,
        carveout: CacheCarveout::Default,
        size_bytes: bank,
        line_bytes: None,
        fetch_bytes: None,
        ways: None,
        hit_latency_cycles: hit,
        attribute_bytes: None,
        size_is_lower_bound: true,
        shares_l1: None,
    };
    let curve = CacheCurve {
        path: CachePath::Constant,
        carveout: CacheCarveout::Default,
        kind: CacheCurveKind::Footprint,
        level: Some(name),
        points,
    };
    Ok(Some((level, curve)))
}
