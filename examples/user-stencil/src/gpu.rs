//! The GPU side: the compiled kernels, the volumes (input, output, the untuned output),
//! launches of a plan, the bitwise check of an output and CUDA-event timing. Every CUDA
//! call's result is checked.

use std::sync::Arc;

use cudarc::driver::sys::{CUdevice_attribute, CUfunction_attribute};
use cudarc::driver::{result, CudaContext, CudaFunction, CudaStream, LaunchConfig, PushKernelArg};
use memtune::core::plan::{Dtype, StencilPlan, Variant};
use memtune::gpu::Buffer;
use memtune::{DeviceIdentity, MemoryKind};
use memtune_example_support::gpu::{cuda, LoadedGpu};

use crate::kernel::{self, COMPARE};
use crate::reference::Real;
use crate::{Case, StencilError};

type Result<T> = std::result::Result<T, StencilError>;

/// The entries of one element type.
struct Entries {
    plain: CudaFunction,
    staged: CudaFunction,
    streaming: CudaFunction,
    fill: CudaFunction,
}

/// One GPU with the stencil kernels loaded (one module: every variant, both types); its
/// identity, stream, timing and synchronisation are those of the [`LoadedGpu`] it derefs
/// to.
pub struct Gpu {
    loaded: LoadedGpu,
    f32: Entries,
    f64: Entries,
    compare: CudaFunction,
    /// Dynamic shared memory a block may take (the opt-in limit, set on the staged and
    /// streaming entries).
    max_shared: u32,
}

memtune_example_support::deref_to_loaded!(Gpu);

impl Gpu {
    /// Compiles the kernels for the device of `stream` (the one `Autotuner::open` returns)
    /// and loads them.
    pub fn new(identity: DeviceIdentity, stream: Arc<CudaStream>) -> Result<Gpu> {
        let loaded = LoadedGpu::new(identity, stream, &kernel::SOURCE)?;
        let optin = loaded
            .ctx()
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
            .map_err(cuda("cuDeviceGetAttribute"))?;
        let max_shared = u32::try_from(optin).unwrap_or(48 << 10).max(48 << 10);
        let entries = |dtype: Dtype| -> Result<Entries> {
            let e = Entries {
                plain: loaded.function(&kernel::entry(Variant::Plain, dtype))?,
                staged: loaded.function(&kernel::entry(Variant::Staged, dtype))?,
                streaming: loaded.function(&kernel::entry(Variant::Streaming, dtype))?,
                fill: loaded.function(&kernel::fill_entry(dtype))?,
            };
            // Above 48 KiB a block's dynamic shared memory must be allowed per function.
            for f in [&e.staged, &e.streaming] {
                f.set_attribute(
                    CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    optin,
                )
                .map_err(cuda("cuFuncSetAttribute"))?;
            }
            Ok(e)
        };
        Ok(Gpu {
            f32: entries(Dtype::F32)?,
            f64: entries(Dtype::F64)?,
            compare: loaded.function(COMPARE)?,
            loaded,
            max_shared,
        })
    }

    fn entries(&self, dtype: Dtype) -> &Entries {
        match dtype {
            Dtype::F32 => &self.f32,
            Dtype::F64 => &self.f64,
        }
    }

    /// The launch geometry of `plan` on `case` here.
    pub fn geometry(&self, case: &Case, plan: &StencilPlan) -> Result<kernel::Geometry> {
        kernel::geometry(
            plan,
            case.dims,
            case.dtype,
            self.identity().sm_count,
            self.max_shared,
        )
        .map_err(StencilError::Launch)
    }

    /// The volumes of `case`: the input filled by `user_stencil_fill_T` (never zeros), the
    /// output poisoned (all bits set: NaN) and the untuned output, still unset.
    pub fn volume(&self, case: Case) -> Result<Volume> {
        self.ctx()
            .bind_to_thread()
            .map_err(cuda("cuCtxSetCurrent"))?;
        let len = usize::try_from(case.bytes())
            .map_err(|_| StencilError::Usage(format!("{} does not fit usize", case.name())))?;
        let volume = Volume {
            ctx: self.ctx().clone(),
            case,
            input: Buffer::allocate(MemoryKind::Device, len)?,
            output: Buffer::allocate(MemoryKind::Device, len)?,
            expected: Buffer::allocate(MemoryKind::Device, len)?,
            check: Buffer::allocate(MemoryKind::Device, 16)?,
        };
        let config = LaunchConfig {
            grid_dim: (self.identity().sm_count.max(1) * 8, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let n = case.cells();
        let dptr = volume.input.dptr();
        let mut launch = self.stream().launch_builder(&self.entries(case.dtype).fill);
        launch.arg(&dptr).arg(&n);
        // SAFETY: the fill writes the n cells of the input, which holds them; the volume
        // outlives the synchronisation below.
        unsafe { launch.launch(config) }.map_err(cuda("cuLaunchKernel(user_stencil_fill)"))?;
        self.poison(&volume)?;
        self.sync()?;
        Ok(volume)
    }

    /// Enqueues one sweep of `plan` over `volume` (input to output).
    pub fn launch(&self, volume: &Volume, plan: &StencilPlan) -> Result<()> {
        let case = volume.case;
        let g = self.geometry(&case, plan)?;
        let config = LaunchConfig {
            grid_dim: g.grid,
            block_dim: g.block,
            shared_mem_bytes: g.shared_bytes,
        };
        let entries = self.entries(case.dtype);
        let f = match plan.variant {
            Variant::Plain => &entries.plain,
            Variant::Staged => &entries.staged,
            Variant::Streaming => &entries.streaming,
        };
        let (input, output) = (volume.input.dptr(), volume.output.dptr());
        let [nx, ny, nz] = case.dims;
        let mut launch = self.stream().launch_builder(f);
        launch
            .arg(&input)
            .arg(&output)
            .arg(&nx)
            .arg(&ny)
            .arg(&nz)
            .arg(&case.repeats);
        if plan.variant == Variant::Streaming {
            launch.arg(&g.chunk);
        }
        // SAFETY: the kernel reads the cells of the input and writes those of the output,
        // both holding `case.cells()` elements of the dtype the entry takes; the geometry
        // was checked against CUDA's limits and the shared memory allowed. The caller keeps
        // the volume alive until it synchronises.
        unsafe { launch.launch(config) }
            .map(|_| ())
            .map_err(cuda("cuLaunchKernel(user_stencil)"))
    }

    /// Sets every bit of the output (NaN in both types), so a launch that wrote nothing
    /// cannot pass a check with an earlier launch's result.
    pub fn poison(&self, volume: &Volume) -> Result<()> {
        // SAFETY: the output holds this many bytes; launches on it are on this stream.
        unsafe {
            result::memset_d8_async(
                volume.output.dptr(),
                0xff,
                volume.output.len_bytes(),
                self.stream().cu_stream(),
            )
        }
        .map_err(cuda("cuMemsetD8Async"))
    }

    /// Keeps the output as the untuned output every later one is checked against.
    pub fn keep_expected(&self, volume: &Volume) -> Result<()> {
        // SAFETY: both buffers hold the volume's bytes and do not overlap.
        unsafe {
            result::memcpy_dtod_async(
                volume.expected.dptr(),
                volume.output.dptr(),
                volume.output.len_bytes(),
                self.stream().cu_stream(),
            )
        }
        .map_err(cuda("cuMemcpyDtoDAsync"))?;
        self.sync()
    }

    /// Compares the output with the untuned output bit for bit (on the GPU), then poisons
    /// the output for the next launch. `Err(Mismatch)` names the first differing cell.
    pub fn check(&self, volume: &Volume) -> Result<()> {
        let case = volume.case;
        let n_words = case.bytes() / 4;
        let (a, b, r) = (
            volume.output.dptr(),
            volume.expected.dptr(),
            volume.check.dptr(),
        );
        // SAFETY: the check buffer holds two u64: a count (zeroed) and a minimum index
        // (all bits set).
        unsafe {
            result::memset_d8_async(r, 0, 8, self.stream().cu_stream())
                .and_then(|()| result::memset_d8_async(r + 8, 0xff, 8, self.stream().cu_stream()))
        }
        .map_err(cuda("cuMemsetD8Async"))?;
        let config = LaunchConfig {
            grid_dim: (self.identity().sm_count.max(1) * 8, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut launch = self.stream().launch_builder(&self.compare);
        launch.arg(&a).arg(&b).arg(&n_words).arg(&r);
        // SAFETY: both volumes hold n_words words; the result buffer two u64.
        unsafe { launch.launch(config) }.map_err(cuda("cuLaunchKernel(user_stencil_compare)"))?;
        self.poison(volume)?;
        self.sync()?;
        let mut got = [0u64; 2];
        volume.check.read(&mut got)?;
        let [differ, first] = got;
        if differ == 0 {
            return Ok(());
        }
        let per_cell = u64::from(case.dtype.bytes() / 4);
        let cell = first / per_cell;
        let [nx, ny, _] = case.dims.map(u64::from);
        Err(StencilError::Mismatch(format!(
            "{differ} words differ from the untuned output, the first in cell ({}, {}, {})",
            cell % nx,
            (cell / nx) % ny,
            cell / (nx * ny)
        )))
    }

    /// The output, copied back (synchronous; call after the launch, before a check,
    /// which poisons it).
    pub fn read_output<T: Real + cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits>(
        &self,
        volume: &Volume,
    ) -> Result<Vec<T>> {
        if std::mem::size_of::<T>() as u32 != volume.case.dtype.bytes() {
            return Err(StencilError::Usage(format!(
                "reading {} as {}-byte elements",
                volume.case.name(),
                std::mem::size_of::<T>()
            )));
        }
        self.sync()?;
        let n = usize::try_from(volume.case.cells())
            .map_err(|_| StencilError::Usage("the volume does not fit usize".into()))?;
        let mut out = vec![T::ZERO; n];
        volume.output.read(&mut out)?;
        Ok(out)
    }

    /// Enqueues a device copy of the input onto the output: the bandwidth a sweep, which
    /// reads and writes each cell once at least, is measured against.
    pub fn copy(&self, volume: &Volume) -> Result<()> {
        // SAFETY: both buffers hold the volume's bytes and do not overlap.
        unsafe {
            result::memcpy_dtod_async(
                volume.output.dptr(),
                volume.input.dptr(),
                volume.input.len_bytes(),
                self.stream().cu_stream(),
            )
        }
        .map_err(cuda("cuMemcpyDtoDAsync"))
    }
}

/// One case's device memory: the input, the output plans write, the untuned output they
/// are checked against, and the check's two counters.
pub struct Volume {
    ctx: Arc<CudaContext>,
    pub case: Case,
    input: Buffer,
    output: Buffer,
    expected: Buffer,
    check: Buffer,
}

impl Drop for Volume {
    fn drop(&mut self) {
        // The buffers are freed right after this, in this context; every launch on them
        // was synchronised.
        let _ = self.ctx.bind_to_thread();
    }
}
