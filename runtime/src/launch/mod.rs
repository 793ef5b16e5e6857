//! Tuned launches of the reference kernels (`memtune_kernels::{sampling, grouping,
//! stencil}`) from the planners' plans.
//!
//! A [`Runtime`] holds one GPU's context and stream and the modules it compiled (NVRTC,
//! cached per source and defines). Every method first checks its arguments without any
//! CUDA call ([`shape`]), then checks device memory (`cuMemGetInfo`) before allocating,
//! launches, checks each launch, synchronises, and only then reads results back. Managed
//! memory is never allocated.

mod kernels;
pub mod shape;
mod timing;

use cudarc::driver::{CudaFunction, DeviceRepr, DriverError};
use memtune_core::plan::{Approach, GroupingPlan, SamplingPlan, StencilPlan};
use memtune_core::{DeviceIdentity, MemoryKind};
use memtune_kernels::params::{
    GroupingBucket, GroupingCounters, GroupingParams, ParamsError, SamplingParams,
};
use memtune_kernels::reference::grouping::{GroupingError, Table};
use memtune_kernels::{CompileError, KernelSource};

use crate::device::DeviceError;
pub use crate::gpu::Timing;
use crate::gpu::{Buffer, Context};
pub use shape::{
    grouping_capacity, grouping_scopes, sampling_grid, sampling_scopes, sampling_threads,
    stencil_launch, StencilLaunch, StencilSweep, GROUPING_BLOCK, SAMPLING_BLOCK,
    SAMPLING_BLOCKS_PER_SM, STREAMING_PLANES,
};
pub use timing::{grouping_digest, GroupingDigest, Resident};

/// Why a launch did not run or gave no result.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("{what} is empty")]
    Empty { what: &'static str },
    #[error("bad size: {0}")]
    BadSize(String),
    #[error("the plan does not fit the input: {0}")]
    BadPlan(String),
    #[error("block {block:?} cannot be launched: {why}")]
    BadBlock { block: [u32; 3], why: String },
    #[error(transparent)]
    Params(#[from] ParamsError),
    #[error("{kind} memory is not supported by the runtime's launches (device or pinned only)")]
    UnsupportedMemory { kind: MemoryKind },
    #[error("CUDA call {call} failed: {source:?}")]
    Cuda {
        call: &'static str,
        #[source]
        source: DriverError,
    },
    #[error(transparent)]
    Compile(#[from] CompileError),
    #[error(transparent)]
    Device(#[from] DeviceError),
    #[error(transparent)]
    Gpu(#[from] crate::gpu::Error),
    #[error("the grouping table read back is not a valid result: {0}")]
    Grouping(#[from] GroupingError),
}

pub(crate) fn cuda(call: &'static str) -> impl Fn(DriverError) -> LaunchError {
    move |source| LaunchError::Cuda { call, source }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// The element types of the stencil (`MEMTUNE_STENCIL_T`): f32 and f64.
pub trait StencilElement:
    DeviceRepr + cudarc::driver::ValidAsZeroBits + Copy + Default + sealed::Sealed
{
    /// The C type the kernel is built with.
    const NAME: &'static str;
}
impl StencilElement for f32 {
    const NAME: &'static str = "float";
}
impl StencilElement for f64 {
    const NAME: &'static str = "double";
}

/// One GPU, ready for tuned launches.
pub struct Runtime {
    /// The last grouping table [`Runtime::time_grouping`] used, kept for the next call of
    /// the same kind and size: pinning gigabytes of host memory takes seconds. Declared
    /// first so that it is freed before the context.
    grouping_table: Option<crate::gpu::Buffer>,
    gpu: Context,
    /// Whether `time_*` runs one untimed warm-up first (an autotuning session warms each
    /// candidate up itself and counts every launch).
    warmup: bool,
    /// Whether `time_*` hold the stream until the work is enqueued
    /// ([`crate::gpu::time_gated_ms`]).
    gated: bool,
}

impl Runtime {
    /// Opens GPU `ordinal`: its identity (which checks the driver first, so a machine
    /// without one gets an error, not a panic), a context and its default stream.
    pub fn open(ordinal: usize) -> Result<Runtime, LaunchError> {
        Ok(Runtime {
            grouping_table: None,
            gpu: Context::open(ordinal).map_err(|e| match e {
                // No driver or no such GPU: the error callers map to "no GPU".
                crate::gpu::Error::Device(d) => LaunchError::Device(d),
                other => LaunchError::Gpu(other),
            })?,
            warmup: true,
            gated: false,
        })
    }

    /// Turns the untimed warm-up run of the `time_*` methods on (the default) or off.
    pub fn set_warmup(&mut self, on: bool) {
        self.warmup = on;
    }

    /// Times each run of the `time_*` methods with the stream held until the work is
    /// enqueued ([`crate::gpu::time_gated_ms`], as the autotuner times), or not (the
    /// default).
    pub fn set_gate(&mut self, on: bool) {
        self.gated = on;
    }

    pub fn identity(&self) -> &DeviceIdentity {
        self.gpu.identity()
    }

    /// The architecture kernels are compiled for, e.g. `sm_90`.
    pub fn arch(&self) -> &str {
        self.gpu.arch()
    }

    /// Threads of every sampling launch on this GPU: [`sampling_threads`] of its SM count,
    /// what a CPU reference of [`Runtime::sampling`] must model.
    pub fn sampling_threads(&self) -> u64 {
        sampling_threads(self.gpu.identity().sm_count)
    }

    /// Sums `reads_per_thread` random words of `data` per thread ([`sampling_grid`]) in
    /// `plan.passes` passes, with `data` copied to `memory` (device, or pinned host memory
    /// mapped into the GPU). The result equals
    /// `reference::sampling::pass_sum(&SamplingParams::new(len, reads, seed)?, self.sampling_threads(), ..)`.
    pub fn sampling(
        &mut self,
        data: &[u32],
        reads_per_thread: u32,
        seed: u64,
        plan: &SamplingPlan,
        memory: MemoryKind,
    ) -> Result<u64, LaunchError> {
        let n_words = data.len() as u64;
        let passes = sampling_scopes(n_words, plan)?;
        let params = SamplingParams::new(n_words, reads_per_thread, seed)?;
        let passes = passes
            .into_iter()
            .map(|scope| params.with_scope(scope))
            .collect::<Result<Vec<_>, _>>()?;
        check_kind(memory)?;

        self.bind()?;
        let device_bytes = 8 + if memory == MemoryKind::Device {
            byte_len(data)
        } else {
            0
        };
        self.check_free(device_bytes)?;
        let function = self.sampling_function()?;
        let region = Buffer::upload(memory, data)?;
        let sum = Buffer::upload(MemoryKind::Device, &[0u64])?;
        // SAFETY: `region` holds n_words = data.len() words and `sum` one u64; both
        // outlive the synchronisation below.
        unsafe { self.launch_sampling_passes(&function, region.dptr(), sum.dptr(), &passes) }?;
        self.sync()?;
        let mut out = [0u64];
        sum.read(&mut out)?;
        Ok(out[0])
    }

    /// `SELECT key, count(*) GROUP BY key` over `keys`, sorted by key; the key 0xFFFFFFFF
    /// included when it occurs. The table has [`grouping_capacity`]`(keys.len(),
    /// distinct)` buckets in `table_memory`; the keys are copied to `input_memory`;
    /// the copy approach's spill buffer is device memory. Fails when keys were dropped
    /// (`distinct` too small) or the table read back is inconsistent.
    pub fn grouping(
        &mut self,
        keys: &[u32],
        distinct: Option<u64>,
        plan: &GroupingPlan,
        table_memory: MemoryKind,
        input_memory: MemoryKind,
    ) -> Result<Vec<(u32, u64)>, LaunchError> {
        if keys.is_empty() {
            return Err(LaunchError::Empty {
                what: "grouping input",
            });
        }
        let n_keys = keys.len() as u64;
        let capacity = grouping_capacity(n_keys, distinct)?;
        let scopes = grouping_scopes(capacity, plan)?;
        let params = GroupingParams {
            n_keys,
            capacity,
            scope_begin: 0,
            scope_end: capacity,
            work: 0,
            pad: 0,
        };
        let passes = scopes
            .into_iter()
            .map(|scope| params.with_scope(scope))
            .collect::<Result<Vec<_>, _>>()?;
        check_kind(table_memory)?;
        check_kind(input_memory)?;
        let table_len = usize::try_from(capacity).map_err(|_| {
            LaunchError::BadSize(format!(
                "a table of {capacity} buckets does not fit this host"
            ))
        })?;
        let copy = plan.approach == Approach::Copy && passes.len() > 1;

        self.bind()?;
        let table_bytes = table_len as u64 * std::mem::size_of::<GroupingBucket>() as u64;
        let device_bytes = std::mem::size_of::<GroupingCounters>() as u64
            + if table_memory == MemoryKind::Device {
                table_bytes
            } else {
                0
            }
            + if input_memory == MemoryKind::Device {
                byte_len(keys)
            } else {
                0
            }
            + if copy { byte_len(keys) } else { 0 };
        self.check_free(device_bytes)?;
        let kernels = self.grouping_kernels()?;

        let input = Buffer::upload(input_memory, keys)?;
        let table = Buffer::allocate(table_memory, table_bytes as usize)?;
        let counters =
            Buffer::allocate(MemoryKind::Device, std::mem::size_of::<GroupingCounters>())?;
        let spill = if copy {
            Some(Buffer::allocate(
                MemoryKind::Device,
                byte_len(keys) as usize,
            )?)
        } else {
            None
        };
        let spill_dptr = spill.as_ref().map(|spill| spill.dptr());
        // SAFETY: `table` holds `capacity` buckets and `counters` the counters; `input`
        // holds n_keys keys and `spill`, when there is one, room for n_keys; every buffer
        // outlives the synchronisation below.
        unsafe {
            self.launch_grouping_init(&kernels, table.dptr(), counters.dptr(), &params)?;
            self.launch_grouping_passes(
                &kernels,
                input.dptr(),
                table.dptr(),
                counters.dptr(),
                spill_dptr,
                &passes,
            )?;
        }
        self.sync()?;
        let mut read = Table {
            buckets: vec![GroupingBucket::default(); table_len],
            counters: GroupingCounters::default(),
        };
        table.read(&mut read.buckets)?;
        let mut c = [GroupingCounters::default()];
        counters.read(&mut c)?;
        read.counters = c[0];
        Ok(read.groups()?.into_iter().collect())
    }

    /// One sweep of the 6-neighbour stencil over `input` (`dims` = x, y, z cells, x
    /// fastest), each interior cell summing its neighbours `repeats` times; the plan's
    /// variant and block (see [`stencil_launch`] for the grid).
    pub fn stencil_f32(
        &mut self,
        input: &[f32],
        dims: [u32; 3],
        repeats: u32,
        plan: &StencilPlan,
    ) -> Result<Vec<f32>, LaunchError> {
        self.stencil_star(input, dims, repeats, 1, plan)
    }

    /// As [`Runtime::stencil_f32`], in double precision.
    pub fn stencil_f64(
        &mut self,
        input: &[f64],
        dims: [u32; 3],
        repeats: u32,
        plan: &StencilPlan,
    ) -> Result<Vec<f64>, LaunchError> {
        self.stencil_star(input, dims, repeats, 1, plan)
    }

    /// As [`Runtime::stencil_f32`] for cells of `T`, reading `radius` neighbours each side
    /// along each axis (1: the 7-point star, 2: the 13-point star).
    pub fn stencil_star<T: StencilElement>(
        &mut self,
        input: &[T],
        dims: [u32; 3],
        repeats: u32,
        radius: u32,
        plan: &StencilPlan,
    ) -> Result<Vec<T>, LaunchError> {
        let elem = std::mem::size_of::<T>() as u64;
        let shape = stencil_launch(dims, input.len(), repeats, plan, elem, radius)?;

        self.bind()?;
        self.check_free(2 * byte_len(input))?;
        let function = self.stencil_function::<T>(&shape)?;
        let src = Buffer::upload(MemoryKind::Device, input)?;
        let dst = Buffer::allocate(MemoryKind::Device, byte_len(input) as usize)?;
        // SAFETY: `src` and `dst` are separate allocations of the nx*ny*nz = input.len()
        // cells of T (checked by stencil_launch) and outlive the sync below.
        unsafe { self.launch_stencil(&function, src.dptr(), dst.dptr(), &shape) }?;
        self.sync()?;
        let mut out = vec![T::default(); input.len()];
        dst.read(&mut out)?;
        Ok(out)
    }

    /// The GPU foundation this runtime launches through.
    pub fn gpu(&self) -> &Context {
        &self.gpu
    }

    /// Makes the context current on this thread (the buffers use the driver directly).
    fn bind(&self) -> Result<(), LaunchError> {
        Ok(self.gpu.bind()?)
    }

    fn sync(&self) -> Result<(), LaunchError> {
        Ok(self.gpu.sync()?)
    }

    /// Refuses to allocate `needed` bytes of device memory when fewer are free.
    fn check_free(&self, needed: u64) -> Result<(), LaunchError> {
        Ok(self.gpu.check_free(needed)?)
    }

    /// Kernel `entry` of `source` compiled with `defines`, compiling and loading the
    /// module on first use.
    fn function(
        &mut self,
        source: &KernelSource,
        defines: &[(&str, &str)],
        entry: &str,
    ) -> Result<CudaFunction, LaunchError> {
        Ok(self.gpu.function(source, defines, entry)?)
    }
}

fn check_kind(kind: MemoryKind) -> Result<(), LaunchError> {
    match kind {
        MemoryKind::Device | MemoryKind::Pinned => Ok(()),
        MemoryKind::Managed => Err(LaunchError::UnsupportedMemory { kind }),
    }
}

fn byte_len<T>(data: &[T]) -> u64 {
    std::mem::size_of_val(data) as u64
}
