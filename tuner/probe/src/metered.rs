//! Counts what a probe asks of its backend, in the units a real GPU pays: calls and loads;
//! and stops asking once the probe is cancelled.

use super::backend::{
    BackendError, Carveout, LoadPath, MemorySystem, RandomChaseSamples, TIMED_LOADS_CAP,
};
use super::cancel::Cancel;
use memtune_core::profile::MemoryKind;
use std::cell::Cell;

/// The counts, readable (e.g. by a progress callback) while the backend is borrowed.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// `chase` and `chase_pair` calls.
    pub chase_calls: Cell<u64>,
    pub random_access_calls: Cell<u64>,
    /// Loads of every chain walked: warm-up walk plus timed loads.
    pub loads: Cell<u64>,
}

/// A [`MemorySystem`] that forwards to another and counts; once `cancel` is set, every
/// measurement fails with [`BackendError::Cancelled`] without reaching the backend.
pub(crate) struct Metered<'a> {
    inner: &'a mut dyn MemorySystem,
    counters: &'a Counters,
    cancel: &'a Cancel,
}

impl<'a> Metered<'a> {
    pub(crate) fn new(
        inner: &'a mut dyn MemorySystem,
        counters: &'a Counters,
        cancel: &'a Cancel,
    ) -> Metered<'a> {
        Metered {
            inner,
            counters,
            cancel,
        }
    }

    fn go_on(&self) -> Result<(), BackendError> {
        if self.cancel.is_cancelled() {
            Err(BackendError::Cancelled)
        } else {
            Ok(())
        }
    }

    fn count_chase(&self, stride: u64, footprint: u64, chains: u64) {
        let loads = (footprint / stride.max(1)).max(1);
        let c = self.counters;
        c.chase_calls.set(c.chase_calls.get() + 1);
        c.loads
            .set(c.loads.get() + chains * (loads + loads.min(TIMED_LOADS_CAP)));
    }
}

impl MemorySystem for Metered<'_> {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn clock_mhz(&self) -> f64 {
        self.inner.clock_mhz()
    }

    fn sm_count(&self) -> u32 {
        self.inner.sm_count()
    }

    fn kinds(&self) -> Vec<MemoryKind> {
        self.inner.kinds()
    }

    fn max_footprint(&self, kind: MemoryKind) -> u64 {
        self.inner.max_footprint(kind)
    }

    fn chase(
        &mut self,
        kind: MemoryKind,
        stride_bytes: u64,
        footprint_bytes: u64,
        sm: u32,
    ) -> Result<f64, BackendError> {
        self.go_on()?;
        self.count_chase(stride_bytes, footprint_bytes, 1);
        self.inner.chase(kind, stride_bytes, footprint_bytes, sm)
    }

    fn chase_pair(
        &mut self,
        kind: MemoryKind,
        stride_bytes: u64,
        footprint_bytes: u64,
        sm: u32,
        other_sm: u32,
    ) -> Result<f64, BackendError> {
        self.go_on()?;
        self.count_chase(stride_bytes, footprint_bytes, 2);
        self.inner
            .chase_pair(kind, stride_bytes, footprint_bytes, sm, other_sm)
    }

    fn fresh_allocation(&mut self, kind: MemoryKind, bytes: u64) -> Result<bool, BackendError> {
        self.go_on()?;
        self.inner.fresh_allocation(kind, bytes)
    }

    fn random_access(&mut self, kind: MemoryKind, region_bytes: u64) -> Result<f64, BackendError> {
        self.go_on()?;
        let calls = &self.counters.random_access_calls;
        calls.set(calls.get() + 1);
        self.inner.random_access(kind, region_bytes)
    }

    fn draw_cost(
        &mut self,
        kind: MemoryKind,
        region_bytes: u64,
    ) -> Result<Option<f64>, BackendError> {
        self.go_on()?;
        self.inner.draw_cost(kind, region_bytes)
    }

    fn random_atomic(
        &mut self,
        kind: MemoryKind,
        region_bytes: u64,
    ) -> Result<Option<f64>, BackendError> {
        self.go_on()?;
        self.inner.random_atomic(kind, region_bytes)
    }

    fn cache_chase(
        &mut self,
        path: LoadPath,
        carveout: Carveout,
        stride_bytes: u64,
        footprint_bytes: u64,
    ) -> Result<f64, BackendError> {
        self.go_on()?;
        let result = self
            .inner
            .cache_chase(path, carveout, stride_bytes, footprint_bytes);
        // A path the system does not have walked nothing.
        if !matches!(result, Err(BackendError::Unsupported { .. })) {
            self.count_chase(stride_bytes, footprint_bytes, 1);
        }
        result
    }

    fn cache_sharing(
        &mut self,
        other: LoadPath,
        stride_bytes: u64,
        l1_footprint: u64,
        other_footprint: u64,
    ) -> Result<(f64, f64), BackendError> {
        self.go_on()?;
        let result = self
            .inner
            .cache_sharing(other, stride_bytes, l1_footprint, other_footprint);
        if !matches!(result, Err(BackendError::Unsupported { .. })) {
            let c = self.counters;
            c.chase_calls.set(c.chase_calls.get() + SHARING_LAUNCHES);
            c.loads
                .set(c.loads.get() + sharing_loads(stride_bytes, l1_footprint, other_footprint));
        }
        result
    }

    fn max_chase_elements(&self) -> u64 {
        self.inner.max_chase_elements()
    }

    fn shared_memory_latency(&mut self) -> Result<f64, BackendError> {
        self.go_on()?;
        self.inner.shared_memory_latency()
    }

    fn random_chase_samples(
        &mut self,
        warm: u32,
        samples: u32,
    ) -> Result<RandomChaseSamples, BackendError> {
        self.go_on()?;
        let result = self.inner.random_chase_samples(warm, samples);
        // Only a walk that ran costs loads (most systems model none).
        if result.is_ok() {
            let c = self.counters;
            c.loads
                .set(c.loads.get() + u64::from(warm) + u64::from(samples));
        }
        result
    }

    fn cold_stride_samples(
        &mut self,
        stride_bytes: u64,
        samples: u32,
    ) -> Result<RandomChaseSamples, BackendError> {
        self.go_on()?;
        let result = self.inner.cold_stride_samples(stride_bytes, samples);
        if result.is_ok() {
            let c = self.counters;
            c.loads.set(c.loads.get() + u64::from(samples));
        }
        result
    }
}

/// Launches of one sharing test ([`MemorySystem::cache_sharing`]): without, then with, the
/// other ring's walks.
pub(crate) const SHARING_LAUNCHES: u64 = 2;
/// Walks of the other ring in the second launch of a sharing test.
pub(crate) const SHARING_OTHER_PASSES: u64 = 2;

/// Loads of one sharing test: each launch walks the L1 ring once and times it, the second
/// also walks the other ring [`SHARING_OTHER_PASSES`] times in between.
pub(crate) fn sharing_loads(stride: u64, l1_footprint: u64, other_footprint: u64) -> u64 {
    let l1 = (l1_footprint / stride.max(1)).max(1);
    let other = (other_footprint / stride.max(1)).max(1);
    SHARING_LAUNCHES * (l1 + l1.min(TIMED_LOADS_CAP)) + SHARING_OTHER_PASSES * other
}
