//! The GPU as the probe's [`MemorySystem`].

use super::{Gpu, GpuError};
use crate::{BackendError, Carveout, LoadPath, MemorySystem, RandomChaseSamples};
use memtune_core::MemoryKind;

fn backend(kind: MemoryKind, e: GpuError) -> BackendError {
    match e {
        GpuError::Allocation { bytes, source, .. } => BackendError::Allocation {
            kind,
            bytes,
            message: format!("{source:?}"),
        },
        GpuError::Injected(fault) => BackendError::Injected(fault),
        other => BackendError::Launch {
            message: other.to_string(),
        },
    }
}

impl MemorySystem for Gpu {
    fn name(&self) -> String {
        self.identity().name.clone()
    }

    fn clock_mhz(&self) -> f64 {
        self.identity().sm_clock_khz as f64 / 1000.0
    }

    fn sm_count(&self) -> u32 {
        self.identity().sm_count
    }

    fn kinds(&self) -> Vec<MemoryKind> {
        MemoryKind::ALL.to_vec()
    }

    fn max_footprint(&self, kind: MemoryKind) -> u64 {
        Gpu::max_footprint(self, kind)
    }

    fn chase(
        &mut self,
        kind: MemoryKind,
        stride: u64,
        footprint: u64,
        sm: u32,
    ) -> Result<f64, BackendError> {
        Gpu::chase(self, kind, stride, footprint, sm).map_err(|e| backend(kind, e))
    }

    fn chase_pair(
        &mut self,
        kind: MemoryKind,
        stride: u64,
        footprint: u64,
        sm: u32,
        other_sm: u32,
    ) -> Result<f64, BackendError> {
        Gpu::chase_pair(self, kind, stride, footprint, sm, other_sm).map_err(|e| backend(kind, e))
    }

    fn fresh_allocation(&mut self, kind: MemoryKind, bytes: u64) -> Result<bool, BackendError> {
        Gpu::fresh_buffer(self, kind, bytes)
            .map(|()| true)
            .map_err(|e| backend(kind, e))
    }

    fn random_access(&mut self, kind: MemoryKind, region: u64) -> Result<f64, BackendError> {
        Gpu::random_access(self, kind, region).map_err(|e| backend(kind, e))
    }

    fn draw_cost(&mut self, kind: MemoryKind, region: u64) -> Result<Option<f64>, BackendError> {
        Gpu::draw_cost(self, kind, region)
            .map(Some)
            .map_err(|e| backend(kind, e))
    }

    fn random_atomic(
        &mut self,
        kind: MemoryKind,
        region: u64,
    ) -> Result<Option<f64>, BackendError> {
        if kind == MemoryKind::Managed {
            return Ok(None);
        }
        Gpu::random_atomic(self, kind, region)
            .map(Some)
            .map_err(|e| backend(kind, e))
    }

    fn cache_chase(
        &mut self,
        path: LoadPath,
        carveout: Carveout,
        stride: u64,
        footprint: u64,
    ) -> Result<f64, BackendError> {
        Gpu::cache_chase(self, path, carveout, stride, footprint)
            .map_err(|e| backend(MemoryKind::Device, e))
    }

    fn cache_sharing(
        &mut self,
        other: LoadPath,
        stride: u64,
        l1_footprint: u64,
        other_footprint: u64,
    ) -> Result<(f64, f64), BackendError> {
        Gpu::cache_sharing(self, other, stride, l1_footprint, other_footprint)
            .map_err(|e| backend(MemoryKind::Device, e))
    }

    fn max_chase_elements(&self) -> u64 {
        super::MAX_CACHE_CHASE_ELEMENTS
    }

    fn shared_memory_latency(&mut self) -> Result<f64, BackendError> {
        Gpu::shared_memory_latency(self).map_err(|e| backend(MemoryKind::Device, e))
    }

    fn random_chase_samples(
        &mut self,
        warm: u32,
        samples: u32,
    ) -> Result<RandomChaseSamples, BackendError> {
        Gpu::random_chase_samples(self, warm, samples).map_err(|e| backend(MemoryKind::Device, e))
    }

    fn cold_stride_samples(
        &mut self,
        stride_bytes: u64,
        samples: u32,
    ) -> Result<RandomChaseSamples, BackendError> {
        Gpu::cold_stride_samples(self, stride_bytes, samples)
            .map_err(|e| backend(MemoryKind::Device, e))
    }
}
