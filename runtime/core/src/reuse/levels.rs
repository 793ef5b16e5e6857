//! The profile's levels seen as fully associative LRU caches, so a trace's reuse-distance
//! histogram predicts their hit ratios: each data cache as a sectored cache of its lines
//! (a hit needs the fill unit a miss brings in, and its line not evicted since:
//! [`super::sectored`]), each TLB level of one memory kind at its page size. For a TLB
//! level that misses often, the scope that keeps the reuses within its reach: a pass over
//! at most that many bytes translates without leaving the level.

use serde::Serialize;

use super::Histogram;
use crate::profile::{CacheCarveout, CachePath, MemoryKind, Profile, Section};

/// Line assumed for a cache level whose line the probe could not tell.
pub const ASSUMED_LINE_BYTES: u64 = 128;
/// What an L2 miss fills where the profile does not say: 64 bytes, two 32-byte sectors
/// (HBM's access; past the L2, the profile's chases at 64 and 128 B strides cost the same,
/// so a miss does not fill the line's other half). docs/calibration.md. Where the level
/// has a measured `fetch_bytes` (the probe's cold stride test of the `L2` level,
/// docs/profile.md), that value wins and this one is not used.
pub const L2_FILL_BYTES: u64 = 64;
/// Below this hit ratio a TLB level is miss-heavy and a scope is suggested.
pub const MISS_HEAVY_HIT_RATIO: f64 = 0.9;

/// What a level caches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LevelKind {
    Cache,
    Tlb,
}

/// One level as an LRU cache of `capacity` items of `granularity` bytes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Level {
    /// `L1`, `L2`, `device TLB L1 (2 MiB pages)`, ...
    pub name: String,
    pub kind: LevelKind,
    /// Bytes a hit needs present: what a miss fills (a cache's sector or sectors), the
    /// page.
    pub granularity: u64,
    /// Bytes the tags allocate: the line (the page for a TLB level); a sectored cache when
    /// larger than `granularity`.
    pub line_bytes: u64,
    /// Lines or entries held.
    pub capacity: u64,
    /// `capacity * line_bytes`: the bytes the level covers (its reach, for a TLB).
    pub bytes: u64,
    /// Whether the line ([`ASSUMED_LINE_BYTES`]) or the fill ([`L2_FILL_BYTES`]) is
    /// assumed rather than measured.
    pub assumed_granularity: bool,
    /// What the level costs a load, in cycles: a cache's hit latency, a TLB level's miss
    /// penalty (`None` where unknown, as for a simulator's levels).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cycles: Option<f64>,
}

/// A level's predicted hit ratio for one trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prediction {
    pub level: Level,
    /// Hits over references, cold misses included.
    pub hit_ratio: f64,
    /// For a miss-heavy TLB level: the scope in bytes (the level's reach) within which
    /// every reuse would hit it.
    pub scope_bytes: Option<u64>,
}

/// The cache levels of the L1 and L2 load paths (default carveout) and the TLB levels of
/// `memory`, in the order the profile lists them; sections not measured give none.
pub fn levels(profile: &Profile, memory: MemoryKind) -> Vec<Level> {
    let mut out = Vec::new();
    if let Section::Measured(caches) = &profile.caches {
        // Data paths only, and sizes that are capacities (never a lower bound).
        for c in caches.levels.iter().filter(|c| {
            c.carveout == CacheCarveout::Default
                && matches!(c.path, CachePath::L1 | CachePath::L2)
                && c.capacity_bytes().is_some()
        }) {
            let measured = c.line_bytes.filter(|l| l.is_power_of_two());
            let line = measured.unwrap_or(ASSUMED_LINE_BYTES);
            let fetch = c.fetch_bytes.filter(|&f| f.is_power_of_two() && f <= line);
            let fill = match (fetch, c.path) {
                (Some(f), _) => f,
                (None, CachePath::L2) => L2_FILL_BYTES.min(line),
                (None, _) => line,
            };
            let capacity = (c.size_bytes / line).max(1);
            out.push(Level {
                name: c.name.clone(),
                kind: LevelKind::Cache,
                granularity: fill,
                line_bytes: line,
                capacity,
                bytes: capacity * line,
                assumed_granularity: measured.is_none()
                    || (fetch.is_none() && c.path == CachePath::L2),
                cycles: Some(c.hit_latency_cycles),
            });
        }
    }
    if let Section::Measured(tlb) = profile.tlb.get(memory) {
        for (i, t) in tlb.levels.iter().enumerate() {
            let granularity = t.page_bytes.max(1);
            let capacity = t.entries.max(1);
            out.push(Level {
                name: format!("{memory} TLB L{}", i + 1),
                kind: LevelKind::Tlb,
                granularity,
                line_bytes: granularity,
                capacity,
                bytes: capacity.saturating_mul(granularity),
                assumed_granularity: false,
                cycles: Some(t.miss_penalty_cycles),
            });
        }
    }
    out
}

/// The mean cycles per load the predictions give: caches nearest first (a load that
/// misses them all pays `dram_cycles`), each paying its hit latency for the hits the
/// smaller ones missed, plus every TLB level's miss penalty times its miss ratio. `None`
/// without a cache level, or when a level's cycles are unknown.
pub fn mean_latency(predictions: &[Prediction], dram_cycles: f64) -> Option<f64> {
    let mut caches: Vec<&Prediction> = predictions
        .iter()
        .filter(|p| p.level.kind == LevelKind::Cache)
        .collect();
    caches.sort_by_key(|p| p.level.bytes);
    if caches.is_empty() {
        return None;
    }
    let (mut cycles, mut hit) = (0.0, 0.0_f64);
    for p in caches {
        // A larger level holds what a smaller one does (inclusive LRU).
        let h = p.hit_ratio.max(hit);
        cycles += (h - hit) * p.level.cycles?;
        hit = h;
    }
    cycles += (1.0 - hit) * dram_cycles;
    for p in predictions
        .iter()
        .filter(|p| p.level.kind == LevelKind::Tlb)
    {
        cycles += (1.0 - p.hit_ratio) * p.level.cycles?;
    }
    Some(cycles)
}

impl Level {
    /// Whether a miss fills less than the line ([`super::sectored`]).
    pub fn sectored(&self) -> bool {
        self.line_bytes > self.granularity
    }
}

/// The distinct granularities the unsectored levels of `levels` need a plain histogram
/// at, ascending.
pub fn granularities(levels: &[Level]) -> Vec<u64> {
    let mut g: Vec<u64> = levels
        .iter()
        .filter(|l| !l.sectored())
        .map(|l| l.granularity)
        .collect();
    g.sort_unstable();
    g.dedup();
    g
}

/// The distinct `(fill, line)` the sectored levels of `levels` need a sectored histogram
/// at ([`super::sectored`]), ascending.
pub fn sectored_grains(levels: &[Level]) -> Vec<(u64, u64)> {
    let mut g: Vec<(u64, u64)> = levels
        .iter()
        .filter(|l| l.sectored())
        .map(|l| (l.granularity, l.line_bytes))
        .collect();
    g.sort_unstable();
    g.dedup();
    g
}

/// Each level's hit ratio from its histogram (`histogram(level)`: the plain one at its
/// granularity, or the sectored one at its fill and line); a level without one is left
/// out.
pub fn predict<'a>(
    levels: &[Level],
    histogram: impl Fn(&Level) -> Option<&'a Histogram>,
) -> Vec<Prediction> {
    levels
        .iter()
        .filter_map(|level| {
            let h = histogram(level)?;
            let hit_ratio = if h.references == 0 {
                1.0
            } else {
                1.0 - h.miss_ratio(level.capacity)
            };
            let scope_bytes = (level.kind == LevelKind::Tlb && hit_ratio < MISS_HEAVY_HIT_RATIO)
                .then_some(level.bytes);
            Some(Prediction {
                level: level.clone(),
                hit_ratio,
                scope_bytes,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reuse::{analyze_slice, Mode, Options};

    fn level(kind: LevelKind, granularity: u64, capacity: u64) -> Level {
        Level {
            name: "x".into(),
            kind,
            granularity,
            line_bytes: granularity,
            capacity,
            bytes: granularity * capacity,
            assumed_granularity: false,
            cycles: None,
        }
    }

    fn histogram(trace: &[u64], granularity: u64) -> Histogram {
        let options = Options {
            granularity,
            ..Options::default()
        };
        analyze_slice(trace, Mode::ExactCpu, &options).expect("analysis")
    }

    #[test]
    fn a_cyclic_sweep_hits_only_a_level_that_holds_it() {
        // 8 pages of 4 KiB swept 10 times: 8 cold misses, then every reuse at distance 7.
        let trace: Vec<u64> = (0..10).flat_map(|_| (0..8u64).map(|p| p * 4096)).collect();
        let h = histogram(&trace, 4096);
        let small = level(LevelKind::Tlb, 4096, 4);
        let large = level(LevelKind::Tlb, 4096, 8);
        let p = predict(&[small, large], |l| (l.granularity == 4096).then_some(&h));
        assert_eq!(p.len(), 2);
        assert_eq!(
            p[0].hit_ratio, 0.0,
            "LRU of 4 entries thrashes on a cycle of 8"
        );
        assert_eq!(p[0].scope_bytes, Some(4 * 4096));
        assert!((p[1].hit_ratio - 72.0 / 80.0).abs() < 1e-12);
        assert_eq!(p[1].scope_bytes, None);
    }

    #[test]
    fn caches_get_no_scope_and_missing_histograms_are_skipped() {
        let trace: Vec<u64> = (0..4).flat_map(|_| (0..64u64).map(|l| l * 128)).collect();
        let h = histogram(&trace, 128);
        let cache = level(LevelKind::Cache, 128, 16);
        let tlb = level(LevelKind::Tlb, 2 << 20, 16);
        let p = predict(&[cache, tlb], |l| (l.granularity == 128).then_some(&h));
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].hit_ratio, 0.0);
        assert_eq!(p[0].scope_bytes, None);
        let mixed = [
            level(LevelKind::Tlb, 8, 1),
            level(LevelKind::Cache, 4, 1),
            level(LevelKind::Cache, 8, 2),
        ];
        assert_eq!(granularities(&mixed), vec![4, 8]);
    }

    #[test]
    fn mean_latency_charges_each_cache_for_the_hits_the_smaller_missed() {
        let at = |kind, bytes, cycles, hit_ratio| Prediction {
            level: Level {
                cycles: Some(cycles),
                ..level(kind, 1, bytes)
            },
            hit_ratio,
            scope_bytes: None,
        };
        // L1 hits half, L2 (listed first) 80%, the rest goes to DRAM; the TLB misses 10%.
        let p = [
            at(LevelKind::Cache, 1024, 200.0, 0.8),
            at(LevelKind::Cache, 64, 30.0, 0.5),
            at(LevelKind::Tlb, 16, 100.0, 0.9),
        ];
        let want = 0.5 * 30.0 + 0.3 * 200.0 + 0.2 * 600.0 + 0.1 * 100.0;
        assert!((mean_latency(&p, 600.0).unwrap() - want).abs() < 1e-9);
        // A larger level never hits less than a smaller one.
        let q = [
            at(LevelKind::Cache, 64, 30.0, 0.5),
            at(LevelKind::Cache, 1024, 200.0, 0.4),
        ];
        assert!((mean_latency(&q, 600.0).unwrap() - (15.0 + 300.0)).abs() < 1e-9);
        assert_eq!(mean_latency(&p[2..], 600.0), None);
        let unknown = [Prediction {
            level: level(LevelKind::Cache, 1, 64),
            hit_ratio: 1.0,
            scope_bytes: None,
        }];
        assert_eq!(mean_latency(&unknown, 600.0), None);
    }

    #[test]
    fn a_stream_in_order_hits_the_sectored_l2_every_other_load_and_never_the_l1() {
        // 1 MiB read at a 32 B stride: every load a new L1 sector (32 B fill), every other
        // one a new L2 fill unit (64 B), as the H100's replay measured it.
        let mut profile = h100();
        if let Section::Measured(c) = &mut profile.caches {
            for l in c.levels.iter_mut().filter(|l| l.path == CachePath::L1) {
                (l.line_bytes, l.fetch_bytes) = (Some(128), Some(32));
            }
        }
        let all = levels(&profile, MemoryKind::Device);
        let l1 = all.iter().find(|l| l.name == "L1").expect("an L1");
        assert_eq!((l1.granularity, l1.line_bytes), (32, 128));
        assert_eq!(l1.capacity, l1.bytes / 128);
        let trace: Vec<u64> = (0..(1u64 << 20) / 32).map(|i| i * 32).collect();
        let sectored: Vec<(u64, u64, Histogram)> = sectored_grains(&all)
            .into_iter()
            .map(|(f, l)| {
                (
                    f,
                    l,
                    crate::reuse::sectored::histogram(&trace, f, l).unwrap(),
                )
            })
            .collect();
        let p = predict(&all, |l| {
            let s = sectored
                .iter()
                .find(|s| (s.0, s.1) == (l.granularity, l.line_bytes));
            s.map(|s| &s.2)
        });
        let hit = |name: &str| p.iter().find(|p| p.level.name == name).map(|p| p.hit_ratio);
        assert_eq!(hit("L1"), Some(0.0));
        assert_eq!(hit("L2"), Some(0.5));
    }

    fn h100() -> Profile {
        let text = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/h100.json"
        ))
        .expect("fixture");
        crate::codec::from_slice(&text, std::path::Path::new("h100.json")).expect("a valid profile")
    }

    #[test]
    fn profile_levels_are_its_caches_and_the_kinds_tlb() {
        let profile = h100();
        let all = levels(&profile, MemoryKind::Pinned);
        let tlb = all.iter().filter(|l| l.kind == LevelKind::Tlb).count();
        match profile.tlb.get(MemoryKind::Pinned) {
            Section::Measured(t) => assert_eq!(tlb, t.levels.len()),
            _ => assert_eq!(tlb, 0),
        }
        for l in &all {
            assert!(l.granularity.is_power_of_two() && l.capacity >= 1, "{l:?}");
            assert!(l.line_bytes.is_power_of_two() && l.line_bytes >= l.granularity);
            assert_eq!(l.bytes, l.capacity * l.line_bytes);
        }
        // The L2 as the H100 fills it: two sectors of a 128 B line.
        let l2 = all.iter().find(|l| l.name == "L2").expect("an L2");
        assert_eq!((l2.granularity, l2.line_bytes), (L2_FILL_BYTES, 128));
        assert!(l2.sectored() && l2.assumed_granularity);
        assert_eq!(sectored_grains(&all), vec![(L2_FILL_BYTES, 128)]);
        // A level whose size is only a lower bound is no capacity to predict hits with.
        let mut bounded = profile.clone();
        let Section::Measured(h) = &mut bounded.caches else {
            panic!("the fixture's caches are measured");
        };
        let last_l2 = h.levels.iter_mut().rfind(|l| l.path == CachePath::L2);
        last_l2.expect("an L2 level").size_is_lower_bound = true;
        let caches = |p: &Profile| {
            levels(p, MemoryKind::Pinned)
                .into_iter()
                .filter(|l| l.kind == LevelKind::Cache)
                .count()
        };
        assert_eq!(caches(&bounded), caches(&profile) - 1);
    }
}
