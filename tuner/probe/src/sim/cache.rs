//! The simulator's cache model: a single-thread pointer chase replayed load by load through
//! LRU set-associative levels (set = line address mod sets), as seed 002 section III.B
//! assumes. Unlike the TLB model this one replays the chase rather than computing its
//! steady state: rings are at most `max_chase_elements` long, so the replay is cheap, and
//! it times exactly what the GPU times (the first `TIMED_LOADS_CAP` loads after one full
//! warm-up walk), window effects included.
//!
//! A line may be sectored: a miss brings in one sector, the line's tag holds the sectors
//! present, and a load of an absent sector of a present line misses without allocating.
//!
//! Only the sets a ring reaches are held, densely when they are few and in a map otherwise,
//! so memory follows the ring's lines, never the number of sets configured.

use super::config::CacheLevelConfig;
use crate::TIMED_LOADS_CAP;
use std::collections::HashMap;

/// Up to this many reachable sets (or the ring's length, if larger) are held in a vector.
pub(crate) const DENSE_SETS: u64 = 1 << 16;
/// Work steps of a lookup in the map of sets, besides its lines: a hash and, for a new set,
/// an allocation cost about as much as comparing this many lines.
pub(crate) const SPARSE_STEPS: u64 = 200;

/// One level as one chase sees it (the carveout already applied).
#[derive(Debug, Clone)]
pub(crate) struct CacheGeometry {
    pub line_bytes: u64,
    /// What one miss fetches; `line_bytes` where the line is not sectored.
    pub sector_bytes: u64,
    pub ways: u64,
    pub sets: u64,
    pub hit_cycles: f64,
}

impl CacheGeometry {
    pub(crate) fn new(config: &CacheLevelConfig, size_bytes: u64) -> CacheGeometry {
        CacheGeometry {
            line_bytes: config.line_bytes,
            sector_bytes: config.sector().clamp(1, config.line_bytes),
            ways: config.ways,
            sets: (size_bytes / (config.line_bytes * config.ways)).max(1),
            hit_cycles: config.hit_cycles,
        }
    }
}

/// A line in a set: its address / line, and a bit per sector present.
type Tag = (u64, u64);

/// Per set, its lines, least recently used first.
enum Sets {
    Dense(Vec<Vec<Tag>>),
    Sparse(HashMap<u64, Vec<Tag>>),
}

/// The contents of one level during a chase: only the sets the ring can reach exist.
struct LevelState<'a> {
    geometry: &'a CacheGeometry,
    sets: Sets,
}

impl LevelState<'_> {
    /// Looks `address` up; on a miss brings its sector in, allocating its line (evicting
    /// the least recently used) where absent. Adds the lines compared to `steps`.
    fn access(&mut self, address: u64, steps: &mut u64) -> bool {
        let line = address / self.geometry.line_bytes;
        let sector = 1u64 << ((address % self.geometry.line_bytes) / self.geometry.sector_bytes);
        let index = line % self.geometry.sets;
        let set = match &mut self.sets {
            Sets::Dense(sets) => &mut sets[index as usize],
            Sets::Sparse(sets) => {
                *steps += SPARSE_STEPS;
                sets.entry(index).or_default()
            }
        };
        *steps += 1 + set.len() as u64;
        if let Some(i) = set.iter().position(|&(l, _)| l == line) {
            let (l, sectors) = set.remove(i);
            set.push((l, sectors | sector));
            sectors & sector != 0
        } else {
            if set.len() as u64 >= self.geometry.ways {
                set.remove(0);
            }
            set.push((line, sector));
            false
        }
    }
}

/// Mean cycles per timed load of a chase of `elements` loads at `stride` bytes through
/// `levels` (fastest first), `miss_cycles` when every level misses; and the work it took
/// (lines compared, sets made).
pub(crate) fn chase_cycles(
    levels: &[CacheGeometry],
    miss_cycles: f64,
    stride: u64,
    elements: u64,
) -> (f64, u64) {
    let elements = elements.max(1);
    let last_address = (elements - 1).saturating_mul(stride);
    let mut steps = 0u64;
    let mut states: Vec<LevelState<'_>> = levels
        .iter()
        .map(|g| {
            let reachable = g.sets.min(last_address / g.line_bytes + 1);
            let sets = if reachable <= elements.max(DENSE_SETS) {
                steps += reachable;
                Sets::Dense(vec![Vec::new(); reachable as usize])
            } else {
                Sets::Sparse(HashMap::new())
            };
            LevelState { geometry: g, sets }
        })
        .collect();
    let mut load = |k: u64| -> f64 {
        let address = k * stride;
        // Inclusive lookup: every level down to the one that hits takes the line.
        for state in &mut states {
            if state.access(address, &mut steps) {
                return state.geometry.hit_cycles;
            }
        }
        miss_cycles
    };
    for k in 0..elements {
        load(k);
    }
    let timed = elements.min(TIMED_LOADS_CAP);
    let total: f64 = (0..timed).map(|k| load(k % elements)).sum();
    (total / timed as f64, steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wong() -> Vec<CacheGeometry> {
        vec![CacheGeometry {
            line_bytes: 32,
            sector_bytes: 32,
            ways: 3,
            sets: 4,
            hit_cycles: 10.0,
        }]
    }

    #[test]
    fn wong_fig4_steps_one_set_per_line() {
        let levels = wong();
        let at = |footprint: u64| chase_cycles(&levels, 100.0, 8, footprint / 8).0;
        assert_eq!(at(384), 10.0);
        // 385-512 B: the sets overflow one per 32 B line; a thrashing set misses every load.
        let steps: Vec<f64> = [416, 448, 480, 512].iter().map(|&f| at(f)).collect();
        assert!(steps.windows(2).all(|w| w[1] > w[0]), "{steps:?}");
        assert!(
            (steps[0] - (10.0 + 90.0 * 4.0 / 52.0)).abs() < 1e-9,
            "{steps:?}"
        );
        assert_eq!(at(512), 100.0 * 0.25 + 10.0 * 0.75);
        assert_eq!(at(4096), at(512));
    }

    #[test]
    fn second_level_takes_first_level_misses() {
        let mut levels = wong();
        levels.push(CacheGeometry {
            line_bytes: 64,
            sector_bytes: 64,
            ways: 4,
            sets: 8,
            hit_cycles: 50.0,
        });
        assert_eq!(chase_cycles(&levels, 400.0, 64, 16).0, 50.0);
        assert_eq!(chase_cycles(&levels, 400.0, 64, 64).0, 400.0);
    }

    #[test]
    fn many_sets_cost_only_the_lines_reached() {
        // 2^30 sets: a ring of 4 lines at a 1 GiB stride makes 4 sets, not 2^30.
        let levels = vec![CacheGeometry {
            line_bytes: 4,
            sector_bytes: 4,
            ways: 1,
            sets: 1 << 30,
            hit_cycles: 10.0,
        }];
        let (cycles, steps) = chase_cycles(&levels, 100.0, 1 << 30, 4);
        assert_eq!(cycles, 10.0);
        assert!(steps < 10_000, "{steps}");
        let (_, steps) = chase_cycles(&levels, 100.0, 4, 1 << 10);
        assert!(steps < 10_000, "{steps}");
    }

    #[test]
    fn a_sectored_line_misses_per_sector_and_holds_lines_not_bytes() {
        // One set of two 128 B lines with 32 B sectors.
        let levels = vec![CacheGeometry {
            line_bytes: 128,
            sector_bytes: 32,
            ways: 2,
            sets: 1,
            hit_cycles: 10.0,
        }];
        let at = |stride: u64, elements: u64| chase_cycles(&levels, 100.0, stride, elements).0;
        // Warm, two lines' eight sectors all hit; at 8 B a line's loads share its sectors.
        assert_eq!(at(32, 8), 10.0);
        // Three lines at 32 B: every load misses its sector (LRU cycling).
        assert_eq!(at(32, 12), 100.0);
        // Three lines touched once each at 160 B (lines 0, 1, 2): they do not fit...
        assert_eq!(at(160, 3), 100.0);
        // ...two lines at 192 B (lines 0 and 1) do, a sector each.
        assert_eq!(at(192, 2), 10.0);
        // An absent sector of a present line misses without allocating: line 1 stays.
        let mut state = LevelState {
            geometry: &levels[0],
            sets: Sets::Dense(vec![Vec::new()]),
        };
        let mut steps = 0;
        let hits: Vec<bool> = [0, 32, 0, 128, 64, 128, 64, 0]
            .iter()
            .map(|&a| state.access(a, &mut steps))
            .collect();
        assert_eq!(hits, [false, false, true, false, false, true, true, true]);
    }
}
