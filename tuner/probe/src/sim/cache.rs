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

/// The levels' contents during one launch of chases, and the work it took (lines compared,
/// sets made).
pub(crate) struct CacheState<'a> {
    states: Vec<LevelState<'a>>,
    miss_cycles: f64,
    pub(crate) steps: u64,
}

impl<'a> CacheState<'a> {
    /// Empty `levels` (fastest first) for loads below address `end`, of about `elements`
    /// distinct addresses; `miss_cycles` for a load that misses every level it uses.
    pub(crate) fn new(
        levels: &'a [CacheGeometry],
        miss_cycles: f64,
        end: u64,
        elements: u64,
    ) -> CacheState<'a> {
        let last_address = end.saturating_sub(1);
        let mut steps = 0u64;
        let states = levels
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
        CacheState {
            states,
            miss_cycles,
            steps,
        }
    }

    /// Cycles of a load of `address` through the levels `uses` keeps (by index). Inclusive
    /// lookup: every level down to the one that hits takes the line.
    pub(crate) fn load(&mut self, address: u64, uses: impl Fn(usize) -> bool) -> f64 {
        for (i, state) in self.states.iter_mut().enumerate() {
            if uses(i) && state.access(address, &mut self.steps) {
                return state.geometry.hit_cycles;
            }
        }
        self.miss_cycles
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
    let end = (elements - 1).saturating_mul(stride).saturating_add(1);
    let mut state = CacheState::new(levels, miss_cycles, end, elements);
    for k in 0..elements {
        state.load(k * stride, |_| true);
    }
    let timed = elements.min(TIMED_LOADS_CAP);
    let total: f64 = (0..timed)
        .map(|k| state.load((k % elements) * stride, |_| true))
        .sum();
    (total / timed as f64, state.steps)
}

/// The cold stride test (`MemorySystem::cold_stride_samples`) replayed: `samples` loads at
/// `i * stride` from an aligned start through an L2 that holds none of their bytes. A miss
/// (`miss_cycles`) brings in its aligned `fetch`-byte block, and a load of a block brought
/// in hits (`hit_cycles`). The addresses only go up, so the one block a load can find is
/// the last one brought in.
pub(crate) fn cold_stride_cycles(
    stride: u64,
    samples: u64,
    fetch: u64,
    hit_cycles: f64,
    miss_cycles: f64,
) -> Vec<f64> {
    let mut filled: Option<u64> = None;
    (0..samples)
        .map(|i| {
            let block = i.saturating_mul(stride) / fetch.max(1);
            let hit = filled == Some(block);
            filled = Some(block);
            if hit {
                hit_cycles
            } else {
                miss_cycles
            }
        })
        .collect()
}

/// Which levels the two walks of a sharing test use, by index into the levels.
pub(crate) struct SharingPaths<'a> {
    pub l1: &'a dyn Fn(usize) -> bool,
    pub other: &'a dyn Fn(usize) -> bool,
}

/// The sharing test (`MemorySystem::cache_sharing`) replayed, each launch from empty
/// levels: a ring of `l1_elements` at `stride` walked once through `paths.l1`, a ring of
/// `other_elements` past it walked `other_passes` times through `paths.other`, the first
/// ring timed. Returns the mean cycles of the timed walk without, then with, the other
/// ring's passes, and the work it took.
pub(crate) fn sharing_cycles(
    levels: &[CacheGeometry],
    miss_cycles: f64,
    paths: SharingPaths<'_>,
    stride: u64,
    l1_elements: u64,
    (other_elements, other_passes): (u64, u64),
) -> ((f64, f64), u64) {
    let (n, m) = (l1_elements.max(1), other_elements.max(1));
    let base = n * stride;
    let timed = n.min(TIMED_LOADS_CAP);
    let mut steps = 0;
    let mut launch = |passes: u64| -> f64 {
        let mut state = CacheState::new(levels, miss_cycles, base + m * stride, n + m);
        for k in 0..n {
            state.load(k * stride, paths.l1);
        }
        for k in 0..passes * m {
            state.load(base + (k % m) * stride, paths.other);
        }
        let total: f64 = (0..timed)
            .map(|k| state.load((k % n) * stride, paths.l1))
            .sum();
        steps += state.steps;
        total / timed as f64
    };
    let before = launch(0);
    let after = launch(other_passes);
    ((before, after), steps)
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
    fn a_shared_level_loses_the_first_ring_to_the_second() {
        // One level of 16 lines of 32 B (LRU, fully associative): 8 lines, then 14 more.
        let levels = vec![CacheGeometry {
            line_bytes: 32,
            sector_bytes: 32,
            ways: 16,
            sets: 1,
            hit_cycles: 10.0,
        }];
        let all = |_: usize| true;
        let none = |_: usize| false;
        let shared = SharingPaths {
            l1: &all,
            other: &all,
        };
        let ((before, after), _) = sharing_cycles(&levels, 100.0, shared, 32, 8, (14, 2));
        assert_eq!((before, after), (10.0, 100.0));
        // The second ring bypassing the level leaves the first one resident.
        let apart = SharingPaths {
            l1: &all,
            other: &none,
        };
        let ((before, after), _) = sharing_cycles(&levels, 100.0, apart, 32, 8, (14, 2));
        assert_eq!((before, after), (10.0, 10.0));
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
    fn a_cold_stride_misses_once_per_fetch() {
        let at = |stride, fetch| cold_stride_cycles(stride, 8, fetch, 1.0, 9.0);
        assert_eq!(at(32, 32), [9.0; 8]);
        assert_eq!(at(32, 64), [9.0, 1.0, 9.0, 1.0, 9.0, 1.0, 9.0, 1.0]);
        assert_eq!(at(32, 128), [9.0, 1.0, 1.0, 1.0, 9.0, 1.0, 1.0, 1.0]);
        // Past the fetch, every load is a block of its own.
        assert_eq!(at(128, 64), [9.0; 8]);
        assert_eq!(at(24, 64)[..4], [9.0, 1.0, 1.0, 9.0]);
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
