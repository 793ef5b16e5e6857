//! The `caches` section of the profile: each level of each load path (the L1 path at
//! both carveouts, the L2 path, the read-only path, the constant caches), DRAM and
//! shared-memory latency, and the raw chases they were read from (`docs/profile.md`).
//! Re-exported from [`crate::profile`].

use crate::profile_latency::LatencyDistribution;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Data caches, DRAM and shared-memory latency, from single-thread pointer chases (seed 002,
/// section III.B): each level's size, line and ways read off latency curves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheHierarchy {
    /// Per load path, fastest level first: the L1 path at each carveout, the L2 path (L2 and,
    /// where the chip has partitions, the slower far-partition plateau), the read-only
    /// path, the constant caches (the last of them may be a lower bound: the constant L1.5).
    pub levels: Vec<CacheLevel>,
    /// Cycles of a chase load that misses every cache (the L2 path's last plateau); absent
    /// when no data path could be measured.
    pub dram_latency_cycles: Option<f64>,
    /// Individually timed loads of a random chase over a large array (minor 1; absent in
    /// older and simulated profiles, and where the step failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dram_latency_distribution: Option<LatencyDistribution>,
    /// Cycles of one dependent shared-memory load; absent when not measurable.
    pub shared_memory_latency_cycles: Option<f64>,
    /// Every chase taken, grouped by path, carveout and purpose.
    pub curves: Vec<CacheCurve>,
}

/// The load instruction a cache chase used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CachePath {
    /// `ld.global.ca`: L1 and L2.
    L1,
    /// `ld.global.cg`: L2 only.
    L2,
    /// `ld.const`: the constant caches.
    Constant,
    /// `ld.global.nc`: the read-only (texture) data path, what `__ldg` emits.
    ReadOnly,
}

impl CachePath {
    pub fn as_str(self) -> &'static str {
        match self {
            CachePath::L1 => "l1",
            CachePath::L2 => "l2",
            CachePath::Constant => "constant",
            CachePath::ReadOnly => "read_only",
        }
    }
}

impl fmt::Display for CachePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The shared-memory carveout a chase ran at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheCarveout {
    /// The driver's default for a kernel without a preference.
    Default,
    /// The largest L1 the SM allows.
    MaxL1,
}

impl fmt::Display for CacheCarveout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CacheCarveout::Default => "default carveout",
            CacheCarveout::MaxL1 => "max L1 carveout",
        })
    }
}

/// One cache level, as one load path sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheLevel {
    /// `L1`, `L2`, `L2 far partition`, `constant L1`, ...
    pub name: String,
    pub path: CachePath,
    pub carveout: CacheCarveout,
    pub size_bytes: u64,
    /// The allocation line where the capacity-at-stride test found it (L1 path), else the
    /// stride test's answer; `None` when no chase could tell: past a large cache, a chase
    /// ring of at most `max_chase_elements` elements cannot use a stride below the line.
    pub line_bytes: Option<u64>,
    /// What one miss fetches (the stride test; a sector where lines are sectored), where
    /// the capacity-at-stride test gave `line_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fetch_bytes: Option<u64>,
    /// `None` when neither the Fig. 4 steps nor the same-set chase gave a clean answer (real
    /// GPUs hash L2 set indices, and their L1 need not be LRU).
    pub ways: Option<u32>,
    pub hit_latency_cycles: f64,
    /// The device attribute for this level where it differs from `size_bytes` by more
    /// than 10% (the L2 size), as a cross-check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribute_bytes: Option<u64>,
    /// The chases could not overflow this level, so `size_bytes` is what they covered and
    /// the level holds at least that (the constant L1.5: a constant chase cannot leave one
    /// 64 KiB bank). Never a capacity: see [`CacheLevel::capacity_bytes`]. Left out when
    /// false, so profiles without it read as exact sizes.
    #[serde(default, skip_serializing_if = "is_false")]
    pub size_is_lower_bound: bool,
    /// Read-only path only: whether its loads evict the L1's lines (the two share one
    /// storage), from the sharing test; absent where not tested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shares_l1: Option<bool>,
}

impl CacheLevel {
    /// The bytes this level holds, for planners: `None` where `size_bytes` is only a lower
    /// bound (a planner that took it for a capacity would overflow a larger cache).
    pub fn capacity_bytes(&self) -> Option<u64> {
        (!self.size_is_lower_bound).then_some(self.size_bytes)
    }

    /// `size_bytes` as `show` prints it: `≥ 64 KiB` for a lower bound.
    pub fn size_shown(&self, bytes: impl Fn(u64) -> String) -> String {
        if self.size_is_lower_bound {
            format!("≥ {}", bytes(self.size_bytes))
        } else {
            bytes(self.size_bytes)
        }
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// What a cache curve was measured for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheCurveKind {
    /// Latency against footprint (sizes, plateaus, Fig. 4 ramps).
    Footprint,
    /// Latency against stride past one level's size (its line).
    Stride,
    /// Latency against the number of elements that all map to one set (ways).
    SameSet,
    /// Latency against stride over 1.5 times one level's size (its allocation line), or a
    /// few footprints around the size at strides chosen to tell the line (the L2 path).
    LineFit,
    /// The sharing test of the read-only path: an L1 ring re-walked, first after its own
    /// warm walk, then after a read-only ring's walk (two points, in that order).
    Sharing,
}

/// Raw chases of one path, carveout and purpose.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheCurve {
    pub path: CachePath,
    pub carveout: CacheCarveout,
    pub kind: CacheCurveKind,
    /// The level the curve was measured for (stride and same-set curves).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<String>,
    pub points: Vec<CachePoint>,
}

/// One chase: `footprint_bytes / stride_bytes` elements.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CachePoint {
    pub footprint_bytes: u64,
    pub stride_bytes: u64,
    pub cycles_per_load: f64,
}
