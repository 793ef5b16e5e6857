//! The simulator's cost models: pointer chases through a TLB hierarchy, and random sampling.
//!
//! A chase walks a cyclic chain of `n` loads at `k * stride` (k = 0..n). Each level is LRU
//! per set; a level is consulted only when every faster level missed. Instead of replaying
//! loads, the model computes the steady state of that cyclic walk exactly:
//!
//! - a level receives the loads that missed every faster level (the first level: all loads);
//! - within one set, the distinct pages it receives form a cyclic sequence, each page as one
//!   contiguous run. LRU keeps such a cycle entirely when it has at most `capacity` pages and
//!   misses on the first load of every run otherwise (each page's reuse distance is then the
//!   whole cycle), while the other loads of a run hit the page just brought in;
//! - so a set "thrashes" when it receives more distinct pages than it holds, and then passes
//!   the first load of each of its pages on to the next level.
//!
//! The work is proportional to the number of distinct pages touched, not to the footprint,
//! so a 16 GiB chase with 2 MiB strides costs microseconds.

use super::config::{KindConfig, TlbLevelConfig};

/// One level, ready for the model.
#[derive(Debug, Clone)]
pub(crate) struct Level {
    page_bytes: u64,
    sets: u64,
    /// Every set holds `base_ways`; the first `extra_ways` sets hold one more.
    base_ways: u64,
    extra_ways: u64,
    miss_cycles: f64,
    reach_bytes: f64,
    walks_in_flight: Option<f64>,
}

impl Level {
    /// `ways` that do not divide `entries` give `entries / ways` sets (rounded down, at least
    /// one), and the entries left over go one each to the first sets: 65 entries with 8 ways
    /// are 8 sets, the first holding 9.
    pub(crate) fn new(config: &TlbLevelConfig) -> Level {
        let entries = config.entries.max(1);
        let sets = match config.ways {
            Some(ways) => (entries / ways.clamp(1, entries)).max(1),
            None => 1,
        };
        Level {
            page_bytes: config.page_bytes.max(1),
            sets,
            base_ways: entries / sets,
            extra_ways: entries % sets,
            miss_cycles: config.miss_cycles,
            reach_bytes: entries as f64 * config.page_bytes as f64,
            walks_in_flight: config.walks_in_flight,
        }
    }

    fn capacity(&self, set: u64) -> u64 {
        self.base_ways + u64::from(set < self.extra_ways)
    }
}

/// The levels of one memory kind and the cost of a load that hits all of them.
#[derive(Debug, Clone)]
pub(crate) struct KindModel {
    pub(crate) base_cycles: f64,
    pub(crate) levels: Vec<Level>,
}

impl KindModel {
    pub(crate) fn new(l2_hit_cycles: f64, config: &KindConfig) -> KindModel {
        KindModel {
            base_cycles: l2_hit_cycles + config.extra_cycles,
            levels: config.tlb.iter().map(Level::new).collect(),
        }
    }

    /// Mean cycles per load of a chase of `loads` loads at `stride` bytes, in the steady state.
    /// `shared[l]` is set when a second chain of the same shape, on another SM, runs
    /// concurrently through the same copy of level `l` (`None`: this chain runs alone).
    pub(crate) fn chase_cycles(&self, stride: u64, loads: u64, shared: Option<&[bool]>) -> f64 {
        let loads = loads.max(1);
        // Indices of the loads that reach the current level; `None` means all of them.
        let mut received: Option<Vec<u64>> = None;
        let mut cycles = self.base_cycles;
        for (l, level) in self.levels.iter().enumerate() {
            let pages = match &received {
                None => pages_of_all_loads(stride, loads, level.page_bytes),
                Some(ks) => pages_of_loads(stride, ks, level.page_bytes),
            };
            // With a concurrent twin chain on the same copy, each set sees twice the pages:
            // the twin's chain mirrors this one onto the same sets.
            let copies = if shared.is_some_and(|s| s.get(l).copied().unwrap_or(false)) {
                2
            } else {
                1
            };
            let missed = thrashing_pages(level, &pages, copies);
            cycles += level.miss_cycles * missed.len() as f64 / loads as f64;
            if missed.is_empty() {
                break;
            }
            received = Some(missed);
        }
        cycles
    }

    /// Expected cycles per read of uniformly random reads over `region_bytes`, by many threads.
    /// A random page is translated by level `l` with probability `min(1, reach_l / region)`,
    /// assuming the levels' contents nest (a page held by a faster level is also held by the
    /// slower ones, as LRU under uniform traffic tends to make them). A read pays level `l`'s
    /// miss when no level up to `l` holds its page.
    pub(crate) fn random_read_cycles(&self, region_bytes: u64) -> f64 {
        let region = region_bytes.max(1) as f64;
        let mut held = 0.0_f64;
        let mut cycles = self.base_cycles;
        for level in &self.levels {
            held = held.max((level.reach_bytes / region).min(1.0));
            cycles += level.miss_cycles * (1.0 - held);
        }
        cycles
    }

    /// The most random reads per cycle, GPU-wide, that the levels' miss handling lets
    /// through over `region_bytes`; `None` when no level limits it. A level with
    /// `walks_in_flight = W` serves at most `W` misses at once, each for its `miss_cycles`,
    /// so at most `W / miss_cycles` misses per cycle; with a share `m` of reads missing it
    /// (the same nested-reach share as [`Self::random_read_cycles`]), reads are limited to
    /// `W / (miss_cycles * m)` per cycle. The tightest level sets the limit.
    pub(crate) fn random_read_walk_limit(&self, region_bytes: u64) -> Option<f64> {
        let region = region_bytes.max(1) as f64;
        let mut held = 0.0_f64;
        let mut limit: Option<f64> = None;
        for level in &self.levels {
            held = held.max((level.reach_bytes / region).min(1.0));
            let missed = 1.0 - held;
            if let Some(walks) = level.walks_in_flight {
                if missed > 0.0 {
                    let reads = walks / (level.miss_cycles * missed);
                    limit = Some(limit.map_or(reads, |l| l.min(reads)));
                }
            }
        }
        limit
    }
}

/// A page and the first load (index into the chain) that touches it.
#[derive(Debug, Clone, Copy)]
struct PageRun {
    page: u64,
    first_load: u64,
}

fn pages_of_all_loads(stride: u64, loads: u64, page_bytes: u64) -> Vec<PageRun> {
    if stride >= page_bytes {
        // Every load is on a page of its own.
        (0..loads)
            .map(|k| PageRun {
                page: address(k, stride) / page_bytes,
                first_load: k,
            })
            .collect()
    } else {
        // Every page up to the last load's is touched; its first load is the first at or
        // past the page's start.
        let last_page = address(loads - 1, stride) / page_bytes;
        (0..=last_page)
            .map(|page| PageRun {
                page,
                first_load: (u128::from(page) * u128::from(page_bytes)).div_ceil(u128::from(stride))
                    as u64,
            })
            .collect()
    }
}

fn pages_of_loads(stride: u64, loads: &[u64], page_bytes: u64) -> Vec<PageRun> {
    let mut runs: Vec<PageRun> = Vec::with_capacity(loads.len());
    for &k in loads {
        let page = address(k, stride) / page_bytes;
        if runs.last().is_none_or(|r| r.page != page) {
            runs.push(PageRun {
                page,
                first_load: k,
            });
        }
    }
    runs
}

fn address(load: u64, stride: u64) -> u64 {
    load.saturating_mul(stride)
}

/// The first loads of the pages that live in sets receiving more distinct pages than they
/// hold (`copies` chains of this shape share the level), in chain order.
fn thrashing_pages(level: &Level, pages: &[PageRun], copies: u64) -> Vec<u64> {
    if level.sets == 1 {
        return if pages.len() as u64 * copies > level.capacity(0) {
            pages.iter().map(|r| r.first_load).collect()
        } else {
            Vec::new()
        };
    }
    let mut by_set: Vec<(u64, usize)> = pages
        .iter()
        .enumerate()
        .map(|(i, r)| (r.page % level.sets, i))
        .collect();
    by_set.sort_unstable();
    let mut thrash = vec![false; pages.len()];
    for group in by_set.chunk_by(|a, b| a.0 == b.0) {
        if group.len() as u64 * copies > level.capacity(group[0].0) {
            for &(_, i) in group {
                thrash[i] = true;
            }
        }
    }
    pages
        .iter()
        .zip(thrash)
        .filter(|(_, t)| *t)
        .map(|(r, _)| r.first_load)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(entries: u64, page_bytes: u64, miss_cycles: f64, ways: Option<u64>) -> TlbLevelConfig {
        TlbLevelConfig {
            entries,
            page_bytes,
            miss_cycles,
            ways,
            shared_by_sms: 1,
            walks_in_flight: None,
            allocation_spread: 0.0,
        }
    }

    fn model(levels: Vec<TlbLevelConfig>) -> KindModel {
        KindModel::new(
            100.0,
            &KindConfig {
                size_bytes: 1 << 40,
                extra_cycles: 0.0,
                tlb: levels,
            },
        )
    }

    const MIB: u64 = 1 << 20;

    #[test]
    fn fully_associative_boundary_and_half_stride() {
        let m = model(vec![level(16, 2 * MIB, 10.0, None)]);
        // Stride = page: 16 pages fit, 17 thrash with one miss per load.
        assert_eq!(m.chase_cycles(2 * MIB, 16, None), 100.0);
        assert_eq!(m.chase_cycles(2 * MIB, 17, None), 110.0);
        // Half the page: same footprint boundary, half the penalty per load.
        assert_eq!(m.chase_cycles(MIB, 32, None), 100.0);
        assert!((m.chase_cycles(MIB, 34, None) - 105.0).abs() < 1e-9);
        // Twice the page: twice the footprint.
        assert_eq!(m.chase_cycles(4 * MIB, 16, None), 100.0);
        assert_eq!(m.chase_cycles(4 * MIB, 17, None), 110.0);
    }

    #[test]
    fn second_level_is_consulted_only_on_first_level_misses() {
        let m = model(vec![
            level(16, 2 * MIB, 10.0, None),
            level(64, 2 * MIB, 100.0, None),
        ]);
        assert_eq!(m.chase_cycles(2 * MIB, 64, None), 110.0);
        assert_eq!(m.chase_cycles(2 * MIB, 65, None), 210.0);
    }

    #[test]
    fn set_associative_uneven_sets() {
        // 65 entries, 8 ways: 8 sets, the first holding 9.
        let m = model(vec![level(65, 32 * MIB, 110.0, Some(8))]);
        assert_eq!(m.chase_cycles(32 * MIB, 65, None), 100.0);
        // 66 pages: set 1 gets 9 pages and thrashes, set 0 holds its 9.
        let c = m.chase_cycles(32 * MIB, 66, None);
        assert!((c - (100.0 + 110.0 * 9.0 / 66.0)).abs() < 1e-9, "{c}");
        assert_eq!(m.chase_cycles(32 * MIB, 73, None), 210.0);
        // Strides of two pages use only the even sets: 9 + 3 * 8 = 33 pages fit.
        assert_eq!(m.chase_cycles(64 * MIB, 33, None), 100.0);
        assert!(m.chase_cycles(64 * MIB, 34, None) > 100.0);
    }

    #[test]
    fn shared_copy_halves_the_capacity() {
        let m = model(vec![level(16, 2 * MIB, 10.0, None)]);
        assert_eq!(m.chase_cycles(2 * MIB, 12, Some(&[false])), 100.0);
        assert_eq!(m.chase_cycles(2 * MIB, 12, Some(&[true])), 110.0);
    }

    #[test]
    fn huge_chase_is_cheap() {
        let m = model(vec![
            level(16, 2 * MIB, 10.0, None),
            level(1032, 2 * MIB, 100.0, None),
        ]);
        let start = std::time::Instant::now();
        let c = m.chase_cycles(2 * MIB, 8192, None);
        assert_eq!(c, 210.0);
        assert!(start.elapsed().as_millis() < 200);
    }

    #[test]
    fn random_reads_pay_misses_beyond_reach() {
        let m = model(vec![
            level(16, 2 * MIB, 10.0, None),
            level(64, 2 * MIB, 100.0, None),
        ]);
        assert_eq!(m.random_read_cycles(32 * MIB), 100.0);
        assert!((m.random_read_cycles(64 * MIB) - 105.0).abs() < 1e-9);
        assert!(
            (m.random_read_cycles(256 * MIB) - (100.0 + 10.0 * 0.875 + 100.0 * 0.5)).abs() < 1e-9
        );
        assert_eq!(m.random_read_walk_limit(256 * MIB), None);
    }

    #[test]
    fn walks_in_flight_limit_reads_by_the_share_that_misses() {
        let mut l2 = level(64, 2 * MIB, 100.0, None);
        l2.walks_in_flight = Some(50.0);
        let m = model(vec![level(16, 2 * MIB, 10.0, None), l2]);
        // Within L2's reach nothing reaches the walkers.
        assert_eq!(m.random_read_walk_limit(128 * MIB), None);
        // At 256 MiB half the reads miss L2: 50 walks / (100 cycles * 0.5) = 1 read a cycle.
        let limit = m.random_read_walk_limit(256 * MIB).unwrap();
        assert!((limit - 1.0).abs() < 1e-12, "{limit}");
        // The latency is unchanged by the limit.
        assert!(
            (m.random_read_cycles(256 * MIB) - (100.0 + 10.0 * 0.875 + 100.0 * 0.5)).abs() < 1e-9
        );
    }
}
