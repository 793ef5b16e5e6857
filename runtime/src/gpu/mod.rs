//! The GPU foundation every GPU path of memtune stands on: the probe, the benchmarks, the
//! tuned launches and the autotuner.
//!
//! - [`Context`]: one GPU opened by ordinal (its identity, primary context, default stream
//!   and architecture) with a cache of NVRTC-compiled modules keyed by source and defines,
//!   their machine code kept on disk between runs ([`KernelCache`]);
//! - [`Buffer`]: one allocation of device, pinned (mapped or not) or managed memory, freed
//!   on drop;
//! - [`time_ms`] and [`time_runs`]: CUDA-event timing after a sync, with [`Timing`]'s median
//!   and spread; [`time_gated_ms`], the same with the stream held until the work is
//!   enqueued.
//!
//! Every CUDA call is checked; a failure names the call ([`Error`]).

mod buffer;
mod context;
mod kernel_cache;
mod timer;

pub use buffer::Buffer;
pub use context::Context;
pub use kernel_cache::{key as kernel_key, KernelCache, ENV_KERNEL_CACHE};
pub use timer::{time_gated_ms, time_ms, time_runs, Gated, Timing, GATE_LIMIT};

use cudarc::driver::DriverError;
use memtune_core::MemoryKind;

/// Why a GPU call of the foundation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{what} failed: {source:?}")]
    Cuda {
        what: String,
        #[source]
        source: DriverError,
    },
    #[error("allocating {bytes} bytes of {kind} memory failed: {source:?}")]
    Allocation {
        kind: MemoryKind,
        bytes: u64,
        #[source]
        source: DriverError,
    },
    #[error("{needed} bytes of device memory are needed, only {free} are free")]
    OutOfMemory { needed: u64, free: u64 },
    #[error(transparent)]
    Compile(#[from] memtune_kernels::CompileError),
    #[error(transparent)]
    Device(#[from] crate::device::DeviceError),
}

/// Maps a driver error to [`Error::Cuda`] naming `what` was called.
pub fn cuda(what: impl Into<String>) -> impl FnOnce(DriverError) -> Error {
    let what = what.into();
    move |source| Error::Cuda { what, source }
}
