//! The simulator's cache model: a single-thread pointer chase replayed load by load through
//! LRU set-associative levels (set = line address mod sets), as seed 002 section III.B
//! assumes. Unlike the TLB model this one replays the chase rather than computing its
//! steady state: rings are at most `max_chase_elements` long, so the replay is cheap, and
//! it times exactly what the GPU times (the first `TIMED_LOADS_CAP` loads after one full
//! warm-up walk), window effects included.

use super::config::CacheLevelConfig;
use crate::TIMED_LOADS_CAP;

/// One level as one chase sees it (the carveout already applied).
#[derive(Debug, Clone)]
pub(crate) struct CacheGeometry {
    pub line_bytes: u64,
    pub ways: u64,
    pub sets: u64,
    pub hit_cycles: f64,
}

impl CacheGeometry {
    pub(crate) fn new(config: &CacheLevelConfig, size_bytes: u64) -> CacheGeometry {
        CacheGeometry {
            line_bytes: config.line_bytes,
            ways: config.ways,
            sets: (size_bytes / (config.line_bytes * config.ways)).max(1),
            hit_cycles: config.hit_cycles,
        }
    }
}

/// The contents of one level during a chase: only the sets the ring can reach exist.
struct LevelState<'a> {
    geometry: &'a CacheGeometry,
    /// Per set, its lines, least recently used first.
    sets: Vec<Vec<u64>>,
}

impl LevelState<'_> {
    /// Looks `address` up; on a miss brings its line in, evicting the least recently used.
    fn access(&mut self, address: u64) -> bool {
        let line = address / self.geometry.line_bytes;
        let set = &mut self.sets[(line % self.geometry.sets) as usize];
        if let Some(i) = set.iter().position(|&l| l == line) {
            let l = set.remove(i);
            set.push(l);
            true
        } else {
            if set.len() as u64 >= self.geometry.ways {
                set.remove(0);
            }
            set.push(line);
            false
        }
    }
}

/// Mean cycles per timed load of a chase of `elements` loads at `stride` bytes through
/// `levels` (fastest first), `miss_cycles` when every level misses.
pub(crate) fn chase_cycles(
    levels: &[CacheGeometry],
    miss_cycles: f64,
    stride: u64,
    elements: u64,
) -> f64 {
    let elements = elements.max(1);
    let last_address = (elements - 1).saturating_mul(stride);
    let mut states: Vec<LevelState<'_>> = levels
        .iter()
        .map(|g| {
            let lines = last_address / g.line_bytes + 1;
            LevelState {
                geometry: g,
                sets: vec![Vec::new(); g.sets.min(lines) as usize],
            }
        })
        .collect();
    let mut load = |k: u64| -> f64 {
        let address = k * stride;
        // Inclusive lookup: every level down to the one that hits takes the line.
        for state in &mut states {
            if state.access(address) {
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
    total / timed as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wong() -> Vec<CacheGeometry> {
        vec![CacheGeometry {
            line_bytes: 32,
            ways: 3,
            sets: 4,
            hit_cycles: 10.0,
        }]
    }

    #[test]
    fn wong_fig4_steps_one_set_per_line() {
        let levels = wong();
        let at = |footprint: u64| chase_cycles(&levels, 100.0, 8, footprint / 8);
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
            ways: 4,
            sets: 8,
            hit_cycles: 50.0,
        });
        assert_eq!(chase_cycles(&levels, 400.0, 64, 16), 50.0);
        assert_eq!(chase_cycles(&levels, 400.0, 64, 64), 400.0);
    }
}
