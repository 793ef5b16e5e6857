//! Progress reporting: the probe tells a [`Progress`] where it is; the CLI draws a bar.

use super::backend::{Carveout, LoadPath};
use memtune_core::profile::MemoryKind;

/// What the probe is doing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stage {
    /// Finished the chase curve of one stride.
    TlbSweep { stride_bytes: u64 },
    /// Finished window `window` of `windows` re-measuring the levels found (`confirm.rs`).
    TlbConfirm { window: usize, windows: usize },
    /// Finished the sharing search of one level (0: fastest).
    TlbSharing { level: usize },
    /// Finished one region of the random-access sweep.
    RandomAccess { region_bytes: u64 },
    /// Finished the kind.
    KindDone,
    /// Finished the cache chases of one path (events of the cache probe carry the device
    /// kind).
    Caches { path: LoadPath, carveout: Carveout },
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProgressEvent {
    pub kind: MemoryKind,
    pub stage: Stage,
    /// Estimated fraction of the whole probe done, 0..=1 (the sweeps are adaptive, so this
    /// is an estimate until the end).
    pub fraction: f64,
    /// Chase calls made so far in the whole probe.
    pub chase_calls: u64,
}

pub trait Progress {
    fn update(&mut self, event: &ProgressEvent);
}

/// Any closure taking an event is a progress sink.
impl<F: FnMut(&ProgressEvent)> Progress for F {
    fn update(&mut self, event: &ProgressEvent) {
        self(event)
    }
}

/// Reports nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn update(&mut self, _: &ProgressEvent) {}
}
