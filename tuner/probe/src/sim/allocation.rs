//! What one allocation of a simulated memory kind shows: the TLB entries of each level
//! after its `allocation_spread`.
//!
//! A real GPU translates mapped host memory through page tables laid out as each
//! allocation's physical pages fall, so a level's apparent entries can move from one
//! allocation to the next (an H100's pinned first level: 3715, 4652 and 5004 entries in three
//! probes in a row) while device memory stays put. The simulator models that as a factor on
//! `entries` per level and allocation: `1 + spread * (2u - 1)`, with `u` walking a Weyl
//! sequence, `u_n = frac(u_0 + n * phi)` (`phi` the golden ratio's fractional part), from a
//! start `u_0` drawn per level from the noise seed. So every run (seed) starts elsewhere in
//! the range, and allocations in a row are spread over it rather than drawn independently:
//! two successive allocations differ by at least `0.76 * spread` in their factor, any two of
//! three successive ones by at least `0.47 * spread`. A test of the probe's confirmation can
//! thus rely on a spread of 0.2 moving the level by more than 10% between the sweep's
//! allocation and the next one, in every run.

use super::config::KindConfig;
use super::noise::SplitMix64;
use memtune_core::profile::MemoryKind;

/// The fractional part of the golden ratio.
const PHI: f64 = 0.618_033_988_749_894_9;

/// `config` as allocation `allocation` (0: the first) of `kind` shows it, with noise seed
/// `seed`: each level's entries scaled by its factor, at least one.
pub(crate) fn allocated(
    config: &KindConfig,
    kind: MemoryKind,
    seed: u64,
    allocation: u64,
) -> KindConfig {
    let mut out = config.clone();
    for (index, level) in out.tlb.iter_mut().enumerate() {
        if level.allocation_spread <= 0.0 {
            continue;
        }
        let factor =
            1.0 + level.allocation_spread * (2.0 * position(seed, kind, index, allocation) - 1.0);
        level.entries = ((level.entries as f64 * factor).round() as u64).max(1);
    }
    out
}

/// `u_n` of level `index` of `kind`: in `[0, 1)`.
fn position(seed: u64, kind: MemoryKind, index: usize, allocation: u64) -> f64 {
    // A stream of its own per kind and level, apart from the measurement noise's.
    let stream = seed ^ 0xa110_c8ed_0000_0000 ^ ((kind as u64) << 16) ^ index as u64;
    let start = SplitMix64::new(stream).next_f64();
    (start + allocation as f64 * PHI).fract()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::TlbLevelConfig;

    fn kind(spread: f64) -> KindConfig {
        KindConfig {
            size_bytes: 1 << 34,
            extra_cycles: 0.0,
            tlb: vec![
                TlbLevelConfig {
                    entries: 4096,
                    page_bytes: 4096,
                    miss_cycles: 200.0,
                    ways: None,
                    shared_by_sms: 1,
                    walks_in_flight: None,
                    allocation_spread: spread,
                },
                TlbLevelConfig {
                    entries: 64,
                    page_bytes: 2 << 20,
                    miss_cycles: 300.0,
                    ways: None,
                    shared_by_sms: 1,
                    walks_in_flight: None,
                    allocation_spread: 0.0,
                },
            ],
        }
    }

    fn entries(spread: f64, seed: u64, allocation: u64) -> (u64, u64) {
        let k = allocated(&kind(spread), MemoryKind::Pinned, seed, allocation);
        (k.tlb[0].entries, k.tlb[1].entries)
    }

    #[test]
    fn without_a_spread_every_allocation_is_the_configured_one() {
        for allocation in 0..5 {
            assert_eq!(entries(0.0, 3, allocation), (4096, 64));
        }
    }

    #[test]
    fn successive_allocations_move_a_spread_level_by_most_of_its_spread() {
        for seed in 0..50 {
            let shown: Vec<f64> = (0..3).map(|a| entries(0.2, seed, a).0 as f64).collect();
            for e in &shown {
                assert!(
                    (4096.0 * 0.8 - 1.0..=4096.0 * 1.2 + 1.0).contains(e),
                    "{shown:?}"
                );
            }
            // Within three in a row, any two differ by at least 0.47 of the spread (of the
            // configured entries), less rounding.
            for (a, b) in [(0, 1), (1, 2), (0, 2)] {
                let apart = (shown[a] - shown[b]).abs() / 4096.0;
                assert!(apart >= 0.47 * 0.2 - 1e-3, "seed {seed}: {shown:?}");
            }
            // The level without a spread stays put.
            assert!((0..3).all(|a| entries(0.2, seed, a).1 == 64));
        }
    }

    #[test]
    fn runs_start_at_different_points_of_the_range() {
        let first: Vec<u64> = (0..10).map(|seed| entries(0.2, seed, 0).0).collect();
        let (lo, hi) = (first.iter().min().unwrap(), first.iter().max().unwrap());
        assert!(*hi as f64 > *lo as f64 * 1.1, "{first:?}");
    }
}
