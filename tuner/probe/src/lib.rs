//! memtune's probe: sweeps over a memory system (the real GPU in [`gpu`], or the simulated
//! one in [`sim`]) and inference from the curves.
//!
//! The sweeps talk to a [`MemorySystem`] (the real GPU, or [`sim::Simulator`]);
//! inference only sees curves. [`probe_tlb`] runs the whole TLB probe: per memory kind, the
//! chase sweep, the inference, the confirmation of the levels found, optionally the sharing
//! search, and the random-access curve.

pub mod fault;
pub mod gpu;
pub mod import;
pub mod sim;

mod backend;
mod cache_constant;
mod cache_fetch;
mod cache_read_only;
mod cache_sweep;
mod cache_sweep_l2line;
mod cache_sweep_level;
mod cache_sweep_line;
mod cache_sweep_measure;
mod caches;
mod cancel;
mod confirm;
mod confirm_rule;
mod cross_check;
mod infer_cache;
mod infer_tlb;
mod infer_tlb_chains;
mod infer_tlb_fit;
mod infer_tlb_gate;
mod infer_tlb_windows;
mod metered;
mod options;
mod progress;
mod random_access;
mod robust;
mod sharing;
mod steps;
mod sweep;

pub use backend::{
    BackendError, Carveout, LoadPath, MemorySystem, RandomChaseSamples, CONSTANT_BANK_BYTES,
    TIMED_LOADS_CAP,
};
pub use cache_fetch::{
    fetch_from_samples, NoFetch, AGREE, FETCH_SAMPLES, FETCH_STRIDE, HIT_SHARE, MIN_FETCH,
    MIN_LINES, MISS_OVER_HIT, OFFSET_SHARE,
};
pub use caches::{probe_caches, CacheProbeResult};
pub use cancel::Cancel;
pub use cross_check::{cross_check, crosses_probes};
pub use infer_tlb::{infer_tlb, infer_tlb_in};
pub use options::ProbeOptions;
pub use progress::{NoProgress, Progress, ProgressEvent, Stage};
pub use random_access::{random_access_knee, sweep_random_access, sweep_random_atomic};
pub use sweep::{sweep_tlb, SweepOutcome};

use memtune_core::profile::{MemoryKind, PerMemoryKind, RandomAccessCurve, Section, TlbKind};
use metered::{Counters, Metered};
use std::collections::BTreeMap;

/// Shares of a kind's progress, in the order they run: the chase sweep, random access, the
/// confirmation of the levels found, and sharing (the rest).
const SWEEP_SHARE: f64 = 0.6;
const RANDOM_SHARE: f64 = 0.1;
const CONFIRM_SHARE: f64 = 0.2;

/// The outcome of [`probe_tlb`], per memory kind probed. A kind that failed keeps its error
/// and did not stop the others.
#[derive(Debug, Clone, PartialEq)]
pub struct PerKindResult {
    pub tlb: BTreeMap<MemoryKind, Result<TlbKind, BackendError>>,
    /// Present for the kinds probed when `ProbeOptions::random_access` is set.
    pub random_access: BTreeMap<MemoryKind, Result<RandomAccessCurve, BackendError>>,
    /// Problems that did not fail a kind (e.g. a sharing search that could not finish).
    pub warnings: Vec<String>,
    /// `chase` and `chase_pair` calls made.
    pub chase_calls: u64,
    pub random_access_calls: u64,
    /// Loads walked by every chase: warm-up walks plus timed loads (what a GPU pays for).
    pub loads: u64,
}

impl PerKindResult {
    /// The TLB part of a profile: measured kinds, failed kinds with their error, and the
    /// others marked not measured.
    pub fn tlb_sections(&self) -> PerMemoryKind<TlbKind> {
        sections(&self.tlb)
    }

    pub fn random_access_sections(&self) -> PerMemoryKind<RandomAccessCurve> {
        sections(&self.random_access)
    }
}

fn sections<T: Clone>(results: &BTreeMap<MemoryKind, Result<T, BackendError>>) -> PerMemoryKind<T> {
    let mut out = PerMemoryKind::not_measured(
        "not probed: the memory system has no such memory, or it was not asked for",
    );
    for (&kind, result) in results {
        *out.get_mut(kind) = match result {
            Ok(t) => Section::Measured(t.clone()),
            Err(e) => Section::failed(e.to_string()),
        };
    }
    out
}

/// Runs the TLB probe on every kind `options` asks for (default: all the system has).
pub fn probe_tlb(
    system: &mut dyn MemorySystem,
    options: &ProbeOptions,
    progress: &mut dyn Progress,
) -> PerKindResult {
    let available = system.kinds();
    let kinds = if options.kinds.is_empty() {
        available.clone()
    } else {
        options.kinds.clone()
    };
    let clock_mhz = system.clock_mhz();
    let name = system.name();
    let counters = Counters::default();
    let mut meter = Metered::new(system, &counters, &options.cancel);
    let mut result = PerKindResult {
        tlb: BTreeMap::new(),
        random_access: BTreeMap::new(),
        warnings: Vec::new(),
        chase_calls: 0,
        random_access_calls: 0,
        loads: 0,
    };
    let share = 1.0 / kinds.len().max(1) as f64;
    for (index, &kind) in kinds.iter().enumerate() {
        // This kind's progress runs from `start` over `share`: the sweep first, then
        // sharing and random access a half of the rest each.
        let start = index as f64 * share;
        let mut report = |stage: Stage, fraction: f64| {
            progress.update(&ProgressEvent {
                kind,
                stage,
                fraction: start + share * fraction.clamp(0.0, 1.0),
                chase_calls: counters.chase_calls.get(),
            });
        };
        if !available.contains(&kind) {
            let missing = BackendError::UnsupportedKind {
                kind,
                message: format!("{name} has no {kind} memory"),
            };
            result.tlb.insert(kind, Err(missing.clone()));
            if options.random_access {
                result.random_access.insert(kind, Err(missing));
            }
            continue;
        }
        // Random access runs between the sweep and the confirmation: it takes the sweep's
        // buffer, which the confirmation's fresh allocations then replace; after them it
        // would have to pin its largest region again.
        let swept = sweep_kind_tlb(&mut meter, kind, options, clock_mhz, &mut report);
        if options.random_access {
            let mut curve =
                sweep_random_access(&mut meter, kind, options, &mut |region_bytes, f| {
                    report(
                        Stage::RandomAccess { region_bytes },
                        SWEEP_SHARE + RANDOM_SHARE * f,
                    )
                });
            // Atomics price hash-grouping inserts; a failure leaves the read curve standing
            // (inserts are then priced as reads) and is said.
            if let Ok(c) = &mut curve {
                match sweep_random_atomic(&mut meter, kind, c) {
                    Ok(points) => c.atomic_points = points,
                    Err(e) => result
                        .warnings
                        .push(format!("{kind}: random atomics not measured: {e}")),
                }
            }
            result.random_access.insert(kind, curve);
        }
        let tlb = swept.and_then(|mut tlb| {
            confirm_and_share(
                &mut meter,
                kind,
                options,
                &mut tlb,
                &mut result.warnings,
                &mut report,
            )?;
            Ok(tlb)
        });
        result.tlb.insert(kind, tlb);
        report(Stage::KindDone, 1.0);
    }
    result.chase_calls = counters.chase_calls.get();
    result.random_access_calls = counters.random_access_calls.get();
    result.loads = counters.loads.get();
    result
}

/// Sweep and inference of one kind. `report(stage, fraction)` takes the fraction of this
/// kind done.
fn sweep_kind_tlb(
    meter: &mut Metered<'_>,
    kind: MemoryKind,
    options: &ProbeOptions,
    clock_mhz: f64,
    report: &mut dyn FnMut(Stage, f64),
) -> Result<TlbKind, BackendError> {
    let outcome = sweep_tlb(meter, kind, options, &mut |stride_bytes, f| {
        report(Stage::TlbSweep { stride_bytes }, SWEEP_SHARE * f)
    })?;
    if outcome.swept_up_to_bytes == 0 {
        // Every footprint was refused (allocations failing all the way down): nothing was
        // measured, and a section of zeros would read as a measurement.
        return Err(BackendError::Allocation {
            kind,
            bytes: options.min_stride_bytes,
            message: "no footprint could be allocated, down to the smallest".to_string(),
        });
    }
    Ok(infer_tlb(
        outcome.curves,
        outcome.swept_up_to_bytes,
        clock_mhz,
    ))
}

/// The confirmation and (optionally) the sharing of one kind's levels. A confirmation that
/// fails (but for a cancel) leaves the levels as found, with a warning and a note.
fn confirm_and_share(
    meter: &mut Metered<'_>,
    kind: MemoryKind,
    options: &ProbeOptions,
    tlb: &mut TlbKind,
    warnings: &mut Vec<String>,
    report: &mut dyn FnMut(Stage, f64),
) -> Result<(), BackendError> {
    let after_random = SWEEP_SHARE + RANDOM_SHARE;
    if options.confirm_tlb {
        let mut on_window = |window: usize, windows: usize| {
            report(
                Stage::TlbConfirm { window, windows },
                after_random + CONFIRM_SHARE * window as f64 / windows.max(1) as f64,
            )
        };
        // On an error `confirm_levels` leaves `tlb` as it was.
        match confirm::confirm_levels(meter, kind, options, tlb, &mut on_window) {
            Ok(()) => {}
            Err(BackendError::Cancelled) => return Err(BackendError::Cancelled),
            Err(e) => {
                warnings.push(format!("{kind}: TLB levels not confirmed: {e}"));
                tlb.notes
                    .push(format!("levels not confirmed (kept as found): {e}"));
            }
        }
    }
    if options.tlb_sharing {
        let bound = options
            .max_footprint_bytes
            .unwrap_or(u64::MAX)
            .min(meter.max_footprint(kind));
        let levels = tlb.levels.len().max(1) as f64;
        let start = after_random + CONFIRM_SHARE;
        let mut on_level = |level: usize| {
            report(
                Stage::TlbSharing { level },
                start + (1.0 - start) * (level + 1) as f64 / levels,
            )
        };
        if let Err(e) = sharing::measure_sharing(meter, kind, bound, &mut tlb.levels, &mut on_level)
        {
            warnings.push(format!("{kind}: TLB sharing not measured: {e}"));
            for level in &mut tlb.levels {
                level.shared_by_sms = None;
            }
        }
    }
    Ok(())
}
