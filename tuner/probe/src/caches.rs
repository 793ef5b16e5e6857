//! [`probe_caches`]: the whole cache probe over a [`MemorySystem`] — the L2 path, the L1
//! path at both carveouts, the constant path (and the level behind its last sized one),
//! the read-only path (and whether it shares the L1), shared memory, the main-memory
//! latency distribution and the L2's fetch granularity — into a profile section.

use super::backend::{BackendError, Carveout, LoadPath, MemorySystem};
use super::cache_constant::constant_plateau;
use super::cache_fetch::measure_l2_fetch;
use super::cache_read_only::{probe_read_only, test_sharing};
use super::cache_sweep::{probe_path, PathOutcome};
use super::metered::{Counters, Metered};
use super::options::ProbeOptions;
use super::progress::{Progress, ProgressEvent, Stage};
use super::robust::median;
use memtune_core::profile::{
    CacheCarveout, CacheHierarchy, CacheLevel, CachePath, LatencyDistribution, MemoryKind, Section,
};

/// Repeats of the shared-memory latency.
const SHARED_REPEATS: usize = 5;
/// Untimed hops, then individually timed loads, of the main-memory latency distribution
/// (mt4g's counts).
pub const DRAM_WARM_HOPS: u32 = 2048;
pub const DRAM_SAMPLES: u32 = 2048;
/// An L1-path level within this fraction of the L2 path's first level is that level: the
/// system has no L1 on the global path.
const SAME_LEVEL: f64 = 0.05;

/// The outcome of [`probe_caches`].
#[derive(Debug, Clone, PartialEq)]
pub struct CacheProbeResult {
    /// Measured; not measured where the system models no cache (every path unsupported);
    /// failed with the reason when a chase failed.
    pub section: Section<CacheHierarchy>,
    /// `cache_chase` calls made.
    pub chase_calls: u64,
    /// Loads walked: warm-up walks plus timed loads.
    pub loads: u64,
    /// Parts left out without failing the section (the main-memory latency distribution,
    /// the read-only path, the constant level past the sized ones, the L2's line and its
    /// fetch).
    pub warnings: Vec<String>,
}

/// The passes of the probe, in order.
const PASSES: [(LoadPath, Carveout); 4] = [
    (LoadPath::L2, Carveout::Default),
    (LoadPath::L1, Carveout::Default),
    (LoadPath::L1, Carveout::MaxL1),
    (LoadPath::Constant, Carveout::Default),
];

/// Runs the cache probe (module docs of `cache_sweep` for the method).
pub fn probe_caches(
    system: &mut dyn MemorySystem,
    options: &ProbeOptions,
    progress: &mut dyn Progress,
) -> CacheProbeResult {
    let counters = Counters::default();
    let mut meter = Metered::new(system, &counters, &options.cancel);
    let mut warnings = Vec::new();
    let section = match run(&mut meter, options, progress, &counters, &mut warnings) {
        Ok(Some(mut h)) => {
            h.dram_latency_distribution = dram_distribution(&mut meter, &mut warnings);
            // The L2's fetch (`cache_fetch.rs`) needs its line, which a quick probe leaves
            // unknown past a large L2, so a quick probe skips it everywhere.
            if !options.quick {
                measure_l2_fetch(&mut meter, &mut h, &mut warnings);
            }
            Section::Measured(h)
        }
        Ok(None) => Section::not_measured(format!(
            "{} has no cache or shared-memory model",
            meter.name()
        )),
        Err(e) => Section::failed(e.to_string()),
    };
    CacheProbeResult {
        section,
        chase_calls: counters.chase_calls.get(),
        loads: counters.loads.get(),
        warnings,
    }
}

/// The main-memory latency distribution, after the cache chases. It is an addition to the
/// section: where it cannot be measured it is left out (with a warning when it failed),
/// never failing the caches.
fn dram_distribution(
    system: &mut dyn MemorySystem,
    warnings: &mut Vec<String>,
) -> Option<LatencyDistribution> {
    let not_measured = "caches: DRAM latency distribution not measured";
    let samples = match system.random_chase_samples(DRAM_WARM_HOPS, DRAM_SAMPLES) {
        Ok(s) => s,
        Err(BackendError::Unsupported { .. }) => return None,
        Err(e) => {
            warnings.push(format!("{not_measured}: {e}"));
            return None;
        }
    };
    let d = LatencyDistribution::from_samples(
        samples.footprint_bytes,
        samples.stride_bytes,
        &samples.cycles,
    );
    match d {
        Some(d) if plausible(&d) => Some(d),
        Some(d) => {
            warnings.push(format!("{not_measured}: implausible samples ({d})"));
            None
        }
        None => {
            warnings.push(format!("{not_measured}: no load was timed"));
            None
        }
    }
}

/// Whether `d` passes the profile's rules for it (`memtune_core::validate`), so that one
/// odd measurement never makes the whole profile invalid.
fn plausible(d: &LatencyDistribution) -> bool {
    let max = memtune_core::validate::MAX_LATENCY;
    let cycles = [d.mean_cycles, d.p50_cycles, d.p95_cycles, d.p99_cycles];
    cycles.iter().all(|&c| c.is_finite() && c > 0.0 && c <= max)
        && d.stdev_cycles.is_finite()
        && d.stdev_cycles <= max
        && d.stride_bytes > 0
        && d.footprint_bytes >= d.stride_bytes
}

fn run(
    system: &mut dyn MemorySystem,
    options: &ProbeOptions,
    progress: &mut dyn Progress,
    counters: &Counters,
    warnings: &mut Vec<String>,
) -> Result<Option<CacheHierarchy>, BackendError> {
    let mut outcomes: Vec<((LoadPath, Carveout), PathOutcome)> = Vec::new();
    let stages = PASSES.len() + 2;
    let mut done = |path, carveout, i: usize| {
        progress.update(&ProgressEvent {
            kind: MemoryKind::Device,
            stage: Stage::Caches { path, carveout },
            fraction: (i + 1) as f64 / stages as f64,
            chase_calls: counters.chase_calls.get(),
        });
    };
    for (i, &(path, carveout)) in PASSES.iter().enumerate() {
        let outcome = probe_path(system, path, carveout, options, path == LoadPath::L1);
        if let Some(mut o) = supported(outcome)? {
            warnings.append(&mut o.warnings);
            outcomes.push(((path, carveout), o));
        }
        done(path, carveout, i);
    }
    // The read-only path: optional, so a failure leaves it out with a warning; a quick
    // probe skips it (no planner reads it, and a quick probe has 15 s).
    if !options.quick {
        if let Some(o) = probe_read_only(system, options, warnings)? {
            outcomes.push(((LoadPath::ReadOnly, Carveout::Default), o));
        }
    }
    done(LoadPath::ReadOnly, Carveout::Default, PASSES.len());
    let mut shared = Vec::new();
    for _ in 0..SHARED_REPEATS {
        match supported(system.shared_memory_latency())? {
            Some(y) => shared.push(y),
            None => break,
        }
    }
    if outcomes.is_empty() && shared.is_empty() {
        return Ok(None);
    }
    let l2_first = outcomes
        .iter()
        .find(|(p, _)| p.0 == LoadPath::L2)
        .and_then(|(_, o)| o.levels.first().map(|l| l.size_bytes));
    let dram = outcomes
        .iter()
        .find(|(p, _)| p.0 == LoadPath::L2)
        .map(|(_, o)| o.beyond_cycles);
    let l2_hit = outcomes
        .iter()
        .find(|(p, _)| p.0 == LoadPath::L2)
        .and_then(|(_, o)| o.levels.first().map(|l| l.hit_latency_cycles));
    let mut hierarchy = CacheHierarchy {
        levels: Vec::new(),
        dram_latency_cycles: dram,
        dram_latency_distribution: None,
        shared_memory_latency_cycles: (!shared.is_empty()).then(|| median(&shared)),
        curves: Vec::new(),
    };
    // Order: L1 (default, max carveout), L2 levels, read-only, constant levels.
    outcomes.sort_by_key(|(p, _)| {
        let rank = match p.0 {
            LoadPath::L1 => 0,
            LoadPath::L2 => 1,
            LoadPath::ReadOnly => 2,
            LoadPath::Constant => 3,
        };
        (rank, p.1)
    });
    for ((path, _), outcome) in outcomes {
        for level in outcome.levels {
            // The first level the L1 (or read-only) path sees is the L2 where that path has
            // no cache of its own.
            let is_l2 = matches!(path, LoadPath::L1 | LoadPath::ReadOnly)
                && l2_first.is_some_and(|l2| {
                    (level.size_bytes as f64 - l2 as f64).abs() <= SAME_LEVEL * l2 as f64
                });
            if !is_l2 {
                hierarchy.levels.push(level);
            }
        }
        hierarchy.curves.extend(outcome.curves);
    }
    if let Some(l2_hit) = l2_hit {
        extras(system, &mut hierarchy, l2_hit, warnings)?;
    }
    done(LoadPath::Constant, Carveout::Default, PASSES.len() + 1);
    Ok(Some(hierarchy))
}

/// The steps that compare a path with the L2's hit latency `l2_hit`: whether the read-only
/// level shares the L1, and the constant level past the sized ones. Each is optional.
fn extras(
    system: &mut dyn MemorySystem,
    h: &mut CacheHierarchy,
    l2_hit: f64,
    warnings: &mut Vec<String>,
) -> Result<(), BackendError> {
    let l1 = h
        .levels
        .iter()
        .find(|l| l.path == CachePath::L1 && l.carveout == CacheCarveout::Default)
        .cloned();
    let read_only = h.levels.iter_mut().find(|l| l.path == CachePath::ReadOnly);
    if let (Some(l1), Some(read_only)) = (l1, read_only) {
        if let Some(curve) = test_sharing(system, read_only, &l1, l2_hit, warnings)? {
            h.curves.push(curve);
        }
    }
    let constant: Vec<&CacheLevel> = h
        .levels
        .iter()
        .filter(|l| l.path == CachePath::Constant)
        .collect();
    if let Some(&last) = constant.last() {
        let (last, count) = (last.clone(), constant.len());
        if let Some((level, curve)) = constant_plateau(system, &last, count, l2_hit, warnings)? {
            h.levels.push(level);
            h.curves.push(curve);
        }
    }
    Ok(())
}

/// `Unsupported` becomes `None`: that part is simply absent.
fn supported<T>(result: Result<T, BackendError>) -> Result<Option<T>, BackendError> {
    match result {
        Ok(t) => Ok(Some(t)),
        Err(BackendError::Unsupported { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NoProgress, RandomChaseSamples};

    /// A system with shared memory only, whose random chase answers `chase`.
    struct SharedOnly {
        chase: fn() -> Result<RandomChaseSamples, BackendError>,
    }

    impl MemorySystem for SharedOnly {
        fn name(&self) -> String {
            "shared only".into()
        }
        fn clock_mhz(&self) -> f64 {
            1000.0
        }
        fn sm_count(&self) -> u32 {
            1
        }
        fn kinds(&self) -> Vec<MemoryKind> {
            vec![MemoryKind::Device]
        }
        fn max_footprint(&self, _: MemoryKind) -> u64 {
            1 << 30
        }
        fn chase(&mut self, _: MemoryKind, _: u64, _: u64, _: u32) -> Result<f64, BackendError> {
            Err(BackendError::Unsupported { what: "no".into() })
        }
        fn chase_pair(
            &mut self,
            _: MemoryKind,
            _: u64,
            _: u64,
            _: u32,
            _: u32,
        ) -> Result<f64, BackendError> {
            Err(BackendError::Unsupported { what: "no".into() })
        }
        fn random_access(&mut self, _: MemoryKind, _: u64) -> Result<f64, BackendError> {
            Err(BackendError::Unsupported { what: "no".into() })
        }
        fn shared_memory_latency(&mut self) -> Result<f64, BackendError> {
            Ok(30.0)
        }
        fn random_chase_samples(
            &mut self,
            warm: u32,
            samples: u32,
        ) -> Result<RandomChaseSamples, BackendError> {
            assert_eq!((warm, samples), (DRAM_WARM_HOPS, DRAM_SAMPLES));
            (self.chase)()
        }
    }

    fn probe(chase: fn() -> Result<RandomChaseSamples, BackendError>) -> CacheProbeResult {
        let mut system = SharedOnly { chase };
        probe_caches(&mut system, &ProbeOptions::default(), &mut NoProgress)
    }

    fn distribution(r: &CacheProbeResult) -> Option<&LatencyDistribution> {
        match &r.section {
            Section::Measured(h) => h.dram_latency_distribution.as_ref(),
            other => panic!("the caches failed: {}", other.status_line()),
        }
    }

    #[test]
    fn the_dram_distribution_joins_the_measured_section() {
        let r = probe(|| {
            Ok(RandomChaseSamples {
                footprint_bytes: 1 << 30,
                stride_bytes: 1 << 10,
                cycles: (0..2048).map(|i| 800 + i % 100).collect(),
            })
        });
        let d = distribution(&r).expect("measured");
        assert_eq!(
            (d.samples, d.p50_cycles, d.footprint_bytes),
            (2048, 848.0, 1 << 30)
        );
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        // The walk's loads are counted (beyond what the other passes asked for).
        let without = probe(|| Err(BackendError::Unsupported { what: "no".into() }));
        assert_eq!(
            r.loads - without.loads,
            u64::from(DRAM_WARM_HOPS + DRAM_SAMPLES)
        );
    }

    #[test]
    fn a_failed_or_implausible_chase_leaves_it_out_with_a_warning() {
        let failed = probe(|| {
            Err(BackendError::Launch {
                message: "out of memory".into(),
            })
        });
        assert_eq!(distribution(&failed), None);
        assert_eq!(
            failed.warnings,
            ["caches: DRAM latency distribution not measured: kernel launch failed: out of memory"]
        );
        let empty = probe(|| {
            Ok(RandomChaseSamples {
                footprint_bytes: 1 << 30,
                stride_bytes: 1 << 10,
                cycles: Vec::new(),
            })
        });
        let huge = probe(|| {
            Ok(RandomChaseSamples {
                footprint_bytes: 1 << 30,
                stride_bytes: 1 << 10,
                cycles: vec![1 << 40],
            })
        });
        for odd in [empty, huge] {
            assert_eq!(distribution(&odd), None);
            assert_eq!(odd.warnings.len(), 1, "{:?}", odd.warnings);
        }
        // A system without the model says nothing.
        let none = probe(|| Err(BackendError::Unsupported { what: "no".into() }));
        assert_eq!(distribution(&none), None);
        assert!(none.warnings.is_empty());
    }
}
