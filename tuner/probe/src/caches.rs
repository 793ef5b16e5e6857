//! [`probe_caches`]: the whole cache probe over a [`MemorySystem`] — the L2 path, the L1
//! path at both carveouts, the constant path and shared memory — into a profile section.

use super::backend::{BackendError, Carveout, LoadPath, MemorySystem};
use super::cache_sweep::{probe_path, PathOutcome};
use super::metered::{Counters, Metered};
use super::options::ProbeOptions;
use super::progress::{Progress, ProgressEvent, Stage};
use super::robust::median;
use memtune_core::profile::{CacheHierarchy, MemoryKind, Section};

/// Repeats of the shared-memory latency.
const SHARED_REPEATS: usize = 5;
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
    let section = match run(&mut meter, options, progress, &counters) {
        Ok(Some(h)) => Section::Measured(h),
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
    }
}

fn run(
    system: &mut dyn MemorySystem,
    options: &ProbeOptions,
    progress: &mut dyn Progress,
    counters: &Counters,
) -> Result<Option<CacheHierarchy>, BackendError> {
    let mut outcomes: Vec<((LoadPath, Carveout), PathOutcome)> = Vec::new();
    for (i, &(path, carveout)) in PASSES.iter().enumerate() {
        let outcome = probe_path(system, path, carveout, options, path == LoadPath::L1);
        if let Some(o) = supported(outcome)? {
            outcomes.push(((path, carveout), o));
        }
        progress.update(&ProgressEvent {
            kind: MemoryKind::Device,
            stage: Stage::Caches { path, carveout },
            fraction: (i + 1) as f64 / (PASSES.len() + 1) as f64,
            chase_calls: counters.chase_calls.get(),
        });
    }
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
    let mut hierarchy = CacheHierarchy {
        levels: Vec::new(),
        dram_latency_cycles: dram,
        shared_memory_latency_cycles: (!shared.is_empty()).then(|| median(&shared)),
        curves: Vec::new(),
    };
    // Order: L1 (default, max carveout), L2 levels, constant levels.
    outcomes.sort_by_key(|(p, _)| (p.0 != LoadPath::L1, p.0 == LoadPath::Constant, p.1));
    for ((path, _), outcome) in outcomes {
        for level in outcome.levels {
            // The first level the L1 path sees is the L2 where the global path has no L1.
            let is_l2 = path == LoadPath::L1
                && l2_first.is_some_and(|l2| {
                    (level.size_bytes as f64 - l2 as f64).abs() <= SAME_LEVEL * l2 as f64
                });
            if !is_l2 {
                hierarchy.levels.push(level);
            }
        }
        hierarchy.curves.extend(outcome.curves);
    }
    Ok(Some(hierarchy))
}

/// `Unsupported` becomes `None`: that part is simply absent.
fn supported<T>(result: Result<T, BackendError>) -> Result<Option<T>, BackendError> {
    match result {
        Ok(t) => Ok(Some(t)),
        Err(BackendError::Unsupported { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}
