//! The simulator's limits: what a `memtune-sim/1` file may ask for, so that a probe of it
//! ends in bounded time and memory and yields a profile memtune accepts.
//!
//! - Field ranges, checked while parsing (`parse.rs`): the profile's own bounds
//!   ([`memtune_core::validate`]) where it has one (clock, SMs, memory size, TLB levels and
//!   entries, pages), and for caches what keeps one chase cheap (levels, size, lines, ways,
//!   sets, ring length). Cycles are at most [`MAX_CYCLES`].
//! - Relations between fields ([`check_relations`]): the slowest load and the fastest random
//!   reads stay inside the profile's bounds under the worst noise the simulator adds (a
//!   jitter factor of at most about 5.3 times a spike of at most 10, and at least 0.1).
//! - The work of a whole probe ([`SimConfig::estimate_work`]), estimated before it starts
//!   from the configuration and the probe's options, in the steps [`SimStats::work_steps`]
//!   counts; [`SimConfig::check_work`] refuses a probe past [`MAX_WORK_STEPS`] (about a
//!   minute of an optimised build at most) or one whose chases would hold more than
//!   [`MAX_MEMORY_USE`], naming the field to change. The simulator also stops at
//!   [`WORK_BUDGET_STEPS`] while running ([`Simulator::with_work_budget`]).
//!
//! [`SimStats::work_steps`]: super::SimStats::work_steps
//! [`Simulator::with_work_budget`]: super::Simulator::with_work_budget

use super::cache::{DENSE_SETS, SPARSE_STEPS};
use super::config::{CacheLevelConfig, ReadOnlyConfig, SimConfig, SimConfigError};
use crate::{ProbeOptions, CONSTANT_BANK_BYTES, TIMED_LOADS_CAP};
use memtune_core::profile::MemoryKind;
use memtune_core::validate;

/// SM clock in MHz: the profile's 1 MHz to 10 GHz.
pub const CLOCK_MHZ: (f64, f64) = (
    validate::MIN_CLOCK_KHZ as f64 / 1000.0,
    validate::MAX_CLOCK_KHZ as f64 / 1000.0,
);
pub const MAX_SM_COUNT: u64 = validate::MAX_SM_COUNT as u64;
/// Any latency or miss penalty in cycles.
pub const MAX_CYCLES: f64 = 1e5;
/// A memory kind's size (1 PiB).
pub const MAX_MEMORY_BYTES: u64 = validate::MAX_BYTES;
pub const MAX_TLB_LEVELS: usize = validate::MAX_TLB_LEVELS;
pub const MAX_ENTRIES: u64 = validate::MAX_TLB_ENTRIES;
pub const MIN_PAGE_BYTES: u64 = validate::MIN_PAGE_BYTES;
pub const MAX_PAGE_BYTES: u64 = validate::MAX_PAGE_BYTES;
/// `walks_in_flight`: at least one walk, at most a billion.
pub const WALKS_IN_FLIGHT: (f64, f64) = (1.0, 1e9);
/// `allocation_spread`: none, up to half the entries either way.
pub const ALLOCATION_SPREAD: (f64, f64) = (0.0, 0.5);
/// Levels of `caches` and of `constant_caches`, each.
pub const MAX_CACHE_LEVELS: usize = 8;
/// A cache level's size (16 GiB).
pub const MAX_CACHE_BYTES: u64 = 1 << 34;
pub const MIN_LINE_BYTES: u64 = validate::MIN_LINE_BYTES;
pub const MAX_LINE_BYTES: u64 = 4096;
/// A cache lookup compares up to `ways` lines, so ways set the cost of every load.
pub const MAX_CACHE_WAYS: u64 = 1024;
pub const MAX_SETS: u64 = 1 << 24;
/// Sectors of one simulated line at most (a bit each in the line's tag).
pub const MAX_SECTORS: u64 = 64;
/// `max_chase_elements`: the longest ring a chase may have.
pub const MAX_CHASE_ELEMENTS: u64 = 1 << 22;
/// The slowest load, in cycles and in nanoseconds at the clock.
pub const MAX_LOAD_CYCLES: f64 = 1e5;
pub const MAX_LOAD_NS: f64 = 1e5;
/// The fastest random reads, GPU-wide, per second.
pub const MAX_READS_PER_SECOND: f64 = 1e13;
/// The most work a probe may be estimated to take, in [`super::SimStats::work_steps`]
/// (about 1 to 5 ns each in an optimised build). Estimates run about 5 to 50 times the work
/// done (more where a level's sets are held in a map), so this admits probes of up to
/// about a minute.
pub const MAX_WORK_STEPS: u64 = 100_000_000_000;
/// Where the simulator stops while running; a probe whose estimate passed is not expected
/// to reach it.
pub const WORK_BUDGET_STEPS: u64 = 40_000_000_000;
/// Work steps of one TLB level handling one page (a sort and a set count cost more than a
/// line compared).
pub(crate) const TLB_STEP_WEIGHT: u64 = 8;
/// The longest TLB chase the simulator walks (the GPU backend's is 65536; the probe's
/// `max_loads_per_walk` 8192): its pages are held in memory.
pub const MAX_TLB_CHASE_LOADS: u64 = 1 << 22;
/// The most memory one cache chase may hold.
pub const MAX_MEMORY_USE: u64 = 1 << 30;

/// Bytes a held line costs at most: the line, its share of a small set's vector and the
/// allocation behind it (a set of one line), or of a map entry.
const BYTES_PER_LINE: f64 = 80.0;
/// Bytes a reachable set costs in the dense vector.
const BYTES_PER_SET: f64 = 24.0;

/// The cache probe's rings and sweep extents (`cache_sweep*.rs`): the longest sweep ring
/// per path, the longest ring of the line search, where a sweep ends.
const SWEEP_RING: u64 = 1 << 16;
const L2_SWEEP_RING: u64 = 1 << 20;
const LINE_RING: u64 = 1 << 21;
const SPAN: f64 = 256.0 * 1024.0 * 1024.0;
const QUICK_SPAN: f64 = 128.0 * 1024.0 * 1024.0;
const PAST_LAST_RISE: f64 = 4.0;
const QUICK_PAST_LAST_RISE: f64 = 2.0;
const FIRST_FOOTPRINT: f64 = 128.0;
const SWEEP_STRIDE: f64 = 32.0;
/// Chases spent on one level after the sweep (bisection, ramp, hit latency, line, ways),
/// at most about, each at most the line search's ring.
const CHASES_PER_LEVEL: f64 = 100.0;
/// Sweep points are re-measured (repeats, validations) about this often, at most.
const SWEEP_REPEATS: f64 = 3.0;
/// TLB chases of one kind, at most about, each of at most `max_loads_per_walk` loads
/// (`sweep.rs`: strides x footprints x repeats, past the load budget one sample a point).
const TLB_CHASES_PER_STRIDE: f64 = 100.0;
/// The sharing search adds at most about this share of chase pairs.
const SHARING_FACTOR: f64 = 1.5;
/// Chases the confirmation (`confirm.rs`) spends on one level, at most about, counted in
/// chases of the sweep's longest walk: two passes of a window's grid, bisection and
/// repeats (a noisy simulation repeats short chains), of walks up to four times the sweep's.
const CONFIRM_CHASES_PER_LEVEL: f64 = 1600.0;

/// What a probe of a configuration would cost the simulator, estimated before it runs;
/// generous, so that the probe stays below it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WorkEstimate {
    /// [`super::SimStats::work_steps`] of the cache probe.
    pub cache_steps: f64,
    /// [`super::SimStats::work_steps`] of the TLB probe.
    pub tlb_steps: f64,
    /// Memory one cache chase holds at its largest, in bytes.
    pub peak_bytes: f64,
}

impl WorkEstimate {
    pub fn steps(&self) -> f64 {
        self.cache_steps + self.tlb_steps
    }
}

/// One load path as the cache probe walks it: its levels (with their key paths and sizes),
/// its bound, its longest sweep ring, and whether it stops after its first level.
struct PathLevels<'a> {
    levels: Vec<(String, &'a CacheLevelConfig, u64)>,
    bound: f64,
    sweep_ring: u64,
    first_only: bool,
}

impl SimConfig {
    /// The work and memory a probe with `options` would take (the cache probe, of device
    /// memory, whatever kinds the TLB probe is asked for); see [`WorkEstimate`].
    pub fn estimate_work(&self, options: &ProbeOptions) -> WorkEstimate {
        let cache = self
            .paths(options)
            .iter()
            .map(|p| path_cost(p, self.max_chase_elements, options.quick))
            .fold((0.0, 0.0), |(s, m), (ps, pm)| (s + ps, f64::max(m, pm)));
        WorkEstimate {
            cache_steps: cache.0,
            tlb_steps: self.tlb_steps(options),
            peak_bytes: cache.1,
        }
    }

    /// [`SimConfig::estimate_work`], refused past [`MAX_WORK_STEPS`] or
    /// [`MAX_MEMORY_USE`] with the field to change.
    pub fn check_work(&self, options: &ProbeOptions) -> Result<WorkEstimate, SimConfigError> {
        check_work_of(self, options, &format!("simulator `{}`", self.name))
    }

    /// The cache paths the probe walks: L2 (levels but `L1`), L1 at both carveouts, constant.
    fn paths(&self, options: &ProbeOptions) -> Vec<PathLevels<'_>> {
        let device = self
            .memory_kinds
            .get(&MemoryKind::Device)
            .map_or(0, |k| k.size_bytes);
        let bound = options.max_footprint_bytes.unwrap_or(u64::MAX).min(device) as f64;
        let data = |keep_l1: bool, max_l1: bool| PathLevels {
            levels: self
                .caches
                .iter()
                .enumerate()
                .filter(|(_, l)| keep_l1 || !l.is_l1())
                .map(|(i, l)| {
                    let size = match l.max_carveout_size_bytes {
                        Some(max) if max_l1 => max,
                        _ => l.size_bytes,
                    };
                    (format!("caches[{i}]"), l, size)
                })
                .collect(),
            bound,
            sweep_ring: if keep_l1 { SWEEP_RING } else { L2_SWEEP_RING },
            first_only: keep_l1,
        };
        let mut paths = Vec::new();
        if self.dram_cycles.is_some() {
            paths.extend([data(false, false), data(true, false), data(true, true)]);
            // The read-only path, as the L1 path at the default carveout (with its own
            // cache in the L1's place); its sharing test walks two rings under the L1's size.
            if let Some(read_only) = &self.read_only {
                let mut path = data(true, false);
                if let ReadOnlyConfig::Own(level) = read_only {
                    for entry in path.levels.iter_mut().filter(|e| e.1.is_l1()) {
                        *entry = ("read_only".to_string(), level, level.size_bytes);
                    }
                }
                paths.push(path);
            }
        }
        if !self.constant_caches.is_empty() {
            paths.push(PathLevels {
                levels: self
                    .constant_caches
                    .iter()
                    .enumerate()
                    .map(|(i, l)| (format!("constant_caches[{i}]"), l, l.size_bytes))
                    .collect(),
                bound: CONSTANT_BANK_BYTES as f64,
                sweep_ring: SWEEP_RING,
                first_only: false,
            });
        }
        paths
    }

    /// Per kind probed: strides (powers of two from the first stride to the sweep's end) x
    /// chases per stride, plus the confirmation's chases per level, x loads per chase x the
    /// levels each load may pass.
    fn tlb_steps(&self, options: &ProbeOptions) -> f64 {
        let loads = options.max_loads_per_walk.max(4) as f64;
        let walk = loads + loads.min(TIMED_LOADS_CAP as f64);
        let sharing = if options.tlb_sharing {
            SHARING_FACTOR
        } else {
            1.0
        };
        self.memory_kinds
            .iter()
            .filter(|(k, _)| options.kinds.is_empty() || options.kinds.contains(k))
            .map(|(_, kind)| {
                let bound = options
                    .max_footprint_bytes
                    .unwrap_or(u64::MAX)
                    .min(kind.size_bytes) as f64;
                let largest_page = kind.tlb.iter().map(|l| l.page_bytes).max().unwrap_or(1);
                let last = (bound / 256.0).max(4.0 * largest_page as f64);
                let first = options.min_stride_bytes.max(1) as f64;
                let strides = (last / first).log2().max(0.0) + 1.0;
                let levels = kind.tlb.len() as f64 + 1.0;
                let confirm = if options.confirm_tlb {
                    CONFIRM_CHASES_PER_LEVEL * kind.tlb.len() as f64
                } else {
                    0.0
                };
                (strides * TLB_CHASES_PER_STRIDE * sharing + confirm)
                    * walk
                    * levels
                    * TLB_STEP_WEIGHT as f64
            })
            .sum()
    }
}

/// The work steps and peak memory of one path: its sweep up to where it ends, then the
/// levels' details, every load comparing up to every level's ways.
fn path_cost(path: &PathLevels<'_>, max_elements: u64, quick: bool) -> (f64, f64) {
    if path.levels.is_empty() {
        return (0.0, 0.0);
    }
    let ring = path.sweep_ring.min(max_elements) as f64;
    let line_ring = LINE_RING
        .min(max_elements)
        .max(path.sweep_ring.min(max_elements)) as f64;
    let (span, past) = if quick {
        (QUICK_SPAN, QUICK_PAST_LAST_RISE)
    } else {
        (SPAN, PAST_LAST_RISE)
    };
    let largest = path.levels.iter().map(|l| l.2).max().unwrap_or(0) as f64;
    // The L1 path ends past its first level (or at the span), the others past their last.
    let detailed = if path.first_only {
        1
    } else {
        path.levels.len()
    };
    let top = if path.first_only {
        path.bound
            .min(span.min(2.0 * past * path.levels[0].2 as f64))
    } else {
        path.bound.min(span.max(2.0 * past * largest))
    };
    let walk = |elements: f64| elements + elements.min(TIMED_LOADS_CAP as f64);
    // Four footprints an octave from 128 B.
    let mut loads = 0.0;
    let mut footprint = FIRST_FOOTPRINT;
    while footprint <= top {
        loads += SWEEP_REPEATS * walk((footprint / SWEEP_STRIDE).clamp(1.0, ring));
        footprint *= 2f64.powf(0.25);
    }
    for (_, _, size) in &path.levels[..detailed] {
        let elements = (2.0 * *size as f64 / 8.0).clamp(1.0, line_ring);
        loads += CHASES_PER_LEVEL * walk(elements);
    }
    let sets = |l: &CacheLevelConfig, size: u64| (size / (l.line_bytes * l.ways).max(1)).max(1);
    let dense = DENSE_SETS.max(max_elements) as f64;
    // Every load may compare a full set of every level, in a map where sets are many.
    let compare: f64 = path
        .levels
        .iter()
        .map(|(_, l, size)| {
            let sparse = if sets(l, *size) as f64 > dense {
                SPARSE_STEPS as f64
            } else {
                0.0
            };
            1.0 + l.ways as f64 + sparse
        })
        .sum();
    let peak: f64 = path
        .levels
        .iter()
        .map(|(_, l, size)| {
            let sets = sets(l, *size) as f64;
            let lines = (max_elements as f64).min(sets * l.ways as f64);
            lines * BYTES_PER_LINE + sets.min(dense) * BYTES_PER_SET
        })
        .sum();
    (loads * compare, peak)
}

/// [`SimConfig::check_work`], errors naming `origin`.
pub(crate) fn check_work_of(
    config: &SimConfig,
    options: &ProbeOptions,
    origin: &str,
) -> Result<WorkEstimate, SimConfigError> {
    let estimate = config.estimate_work(options);
    let invalid = |key: String, problem: String, fix: &str| SimConfigError::Invalid {
        origin: origin.to_string(),
        key,
        problem,
        fix: fix.to_string(),
    };
    if estimate.peak_bytes > MAX_MEMORY_USE as f64 {
        return Err(invalid(
            "max_chase_elements".to_string(),
            format!(
                "is {}: a chase that long through these cache levels would hold about {} MiB, more than the simulator allows ({} MiB)",
                config.max_chase_elements,
                (estimate.peak_bytes / (1u64 << 20) as f64).ceil(),
                MAX_MEMORY_USE >> 20
            ),
            "lower max_chase_elements, or simulate fewer or smaller levels",
        ));
    }
    if estimate.steps() > MAX_WORK_STEPS as f64 {
        let (key, fix) = culprit(config, &estimate);
        return Err(invalid(
            key,
            format!(
                "makes a probe take about {:.1e} steps of simulated work, more than the simulator allows ({:.1e}, about a minute)",
                estimate.steps(),
                MAX_WORK_STEPS as f64
            ),
            fix,
        ));
    }
    Ok(estimate)
}

/// The field that makes a probe too costly, and how to fix it: TLB levels where they cost
/// most, else the cache level whose lookups cost most (its ways, or its sets where they are
/// so many that they live in a map), else the ring length.
fn culprit(config: &SimConfig, estimate: &WorkEstimate) -> (String, &'static str) {
    if estimate.tlb_steps > estimate.cache_steps {
        let kind = config
            .memory_kinds
            .iter()
            .max_by_key(|(_, k)| k.tlb.len())
            .map_or("device", |(k, _)| k.as_str());
        return (
            format!("memory_kinds.{kind}.tlb"),
            "simulate fewer TLB levels, or probe with --max-footprint or fewer --kinds",
        );
    }
    let dense = DENSE_SETS.max(config.max_chase_elements);
    let levels = config
        .caches
        .iter()
        .enumerate()
        .map(|(i, l)| (format!("caches[{i}]"), l))
        .chain(
            config
                .constant_caches
                .iter()
                .enumerate()
                .map(|(i, l)| (format!("constant_caches[{i}]"), l)),
        );
    let costliest = levels.max_by_key(|(_, l)| l.ways.max(sparse_steps(l, dense)));
    match costliest {
        Some((key, l)) if sparse_steps(l, dense) > l.ways.max(64) => (
            format!("{key}.size_bytes"),
            "use a smaller size: a level of that many sets is simulated at many times the cost",
        ),
        Some((key, l)) if l.ways > 64 => (
            format!("{key}.ways"),
            "use fewer ways (every simulated load compares up to that many lines)",
        ),
        _ if config.max_chase_elements > SWEEP_RING => (
            "max_chase_elements".to_string(),
            "lower max_chase_elements (longer rings cost in proportion)",
        ),
        _ => (
            "caches".to_string(),
            "simulate smaller or fewer levels, or probe with --max-footprint",
        ),
    }
}

/// The extra work steps of a lookup in `level` when its sets are too many to hold densely.
fn sparse_steps(level: &CacheLevelConfig, dense: u64) -> u64 {
    let sets = level.size_bytes / (level.line_bytes * level.ways).max(1);
    if sets > dense {
        SPARSE_STEPS
    } else {
        0
    }
}

/// Relations between fields that keep every number a probe derives inside the profile's
/// bounds: the slowest load in cycles and at the clock, and the fastest random reads.
pub(crate) fn check_relations(config: &SimConfig, origin: &str) -> Result<(), SimConfigError> {
    let invalid = |key: String, problem: String, fix: &str| SimConfigError::Invalid {
        origin: origin.to_string(),
        key,
        problem,
        fix: fix.to_string(),
    };
    let mut slowest = 0.0f64;
    for (kind, k) in &config.memory_kinds {
        let base = config.l2_hit_cycles + k.extra_cycles;
        let worst = base + k.tlb.iter().map(|l| l.miss_cycles).sum::<f64>();
        if worst > MAX_LOAD_CYCLES {
            return Err(invalid(
                format!("memory_kinds.{kind}"),
                format!(
                    "has loads of {worst} cycles when every TLB level misses (l2_hit_cycles + extra_cycles + every miss_cycles), more than {MAX_LOAD_CYCLES}"
                ),
                "use the latencies of a real GPU (hundreds of cycles)",
            ));
        }
        slowest = slowest.max(worst);
        let reads = f64::from(config.sm_count) * super::READS_IN_FLIGHT_PER_SM / base
            * config.clock_mhz
            * 1e6;
        if reads > MAX_READS_PER_SECOND {
            return Err(invalid(
                "l2_hit_cycles".to_string(),
                format!(
                    "makes random reads of {kind} memory run at {reads:.2e} per second (sm_count x {} / (l2_hit_cycles + extra_cycles) x clock_mhz), more than {MAX_READS_PER_SECOND:.0e}",
                    super::READS_IN_FLIGHT_PER_SM
                ),
                "use a real GPU's SM count, clock and latency",
            ));
        }
    }
    let others = [
        config.dram_cycles,
        config.constant_miss_cycles,
        config.shared_memory_cycles,
    ];
    let read_only = match &config.read_only {
        Some(ReadOnlyConfig::Own(level)) => Some(level),
        _ => None,
    };
    let hits = config
        .caches
        .iter()
        .chain(&config.constant_caches)
        .chain(read_only)
        .map(|l| l.hit_cycles);
    slowest = others
        .into_iter()
        .flatten()
        .chain(hits)
        .fold(slowest, f64::max);
    let ns = slowest * 1000.0 / config.clock_mhz;
    if ns > MAX_LOAD_NS {
        return Err(invalid(
            "clock_mhz".to_string(),
            format!(
                "is {}: the slowest load, {slowest} cycles, then takes {ns:.0} ns, more than {MAX_LOAD_NS} ns",
                config.clock_mhz
            ),
            "use a real GPU's clock, e.g. 1480",
        ));
    }
    Ok(())
}
