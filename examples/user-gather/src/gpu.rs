//! The GPU side: the compiled kernel, the region (device memory or pinned host memory
//! mapped into the GPU), result slots, launches of a plan and CUDA-event timing. Every CUDA
//! call's result is checked.

use std::sync::Arc;

use cudarc::driver::{
    result, CudaContext, CudaFunction, CudaModule, CudaStream, LaunchConfig, PushKernelArg,
};
use memtune::core::plan::SamplingPlan;
use memtune::gpu::Buffer;
use memtune::launch::sampling_scopes;
use memtune::{DeviceIdentity, MemoryKind};
use memtune_example_support::gpu as support;

use crate::kernel::{self, FILL, GATHER};
use crate::{GatherError, Variant, SEED};

type Result<T> = std::result::Result<T, GatherError>;

fn cuda<E: std::fmt::Debug>(call: &'static str) -> impl Fn(E) -> GatherError {
    GatherError::cuda(call)
}

/// One GPU with the gather kernel loaded.
pub struct Gpu {
    identity: DeviceIdentity,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    _module: Arc<CudaModule>,
    gather: CudaFunction,
    fill: CudaFunction,
}

impl Gpu {
    /// Compiles the kernel for the device of `stream` (the one `Autotuner::open` returns)
    /// and loads it.
    pub fn new(identity: DeviceIdentity, stream: Arc<CudaStream>) -> Result<Gpu> {
        let (ctx, module) = support::load(&identity, &stream, &kernel::SOURCE)?;
        let gather = module
            .load_function(GATHER)
            .map_err(cuda("cuModuleGetFunction"))?;
        let fill = module
            .load_function(FILL)
            .map_err(cuda("cuModuleGetFunction"))?;
        Ok(Gpu {
            identity,
            ctx,
            stream,
            _module: module,
            gather,
            fill,
        })
    }

    pub fn identity(&self) -> &DeviceIdentity {
        &self.identity
    }

    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Threads of every gather launch (the CPU reference must model as many).
    pub fn threads(&self) -> u64 {
        kernel::threads(self.identity.sm_count)
    }

    /// Free device memory in bytes.
    pub fn free_device_bytes(&self) -> Result<u64> {
        Ok(support::free_device_bytes(&self.ctx)?)
    }

    /// `bytes` of `kind` filled by `user_gather_fill` (never zeros).
    pub fn region(&self, kind: MemoryKind, bytes: u64) -> Result<Region> {
        let region = Region::allocate(&self.ctx, kind, bytes)?;
        let (blocks, block) = kernel::grid(self.identity.sm_count);
        let config = LaunchConfig {
            grid_dim: (blocks * 2, 1, 1),
            block_dim: (block, 1, 1),
            shared_mem_bytes: 0,
        };
        let n_words = region.words();
        let mut launch = self.stream.launch_builder(&self.fill);
        let dptr = region.dptr();
        launch.arg(&dptr).arg(&n_words);
        // SAFETY: the fill writes words below n_words of the region, which holds them; the
        // region outlives the synchronisation below.
        unsafe { launch.launch(config) }.map_err(cuda("cuLaunchKernel(user_gather_fill)"))?;
        self.sync()?;
        Ok(region)
    }

    /// `n` zeroed result slots.
    pub fn sums(&self, n: usize) -> Result<Sums> {
        Sums::allocate(&self.ctx, n)
    }

    /// Enqueues the passes of `plan` over the first `n_words` words of `region`, adding to
    /// `slot`.
    pub fn launch(
        &self,
        region: &Region,
        n_words: u64,
        plan: &SamplingPlan,
        variant: Variant,
        slot: Slot,
    ) -> Result<()> {
        if n_words == 0 || n_words > region.words() {
            return Err(GatherError::Usage(format!(
                "{n_words} words do not fit a region of {} words",
                region.words()
            )));
        }
        let scopes = sampling_scopes(n_words, plan)
            .map_err(|e| GatherError::Autotune(format!("the plan {plan:?} does not fit: {e}")))?;
        let (blocks, block) = kernel::grid(self.identity.sm_count);
        let config = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (block, 1, 1),
            shared_mem_bytes: 0,
        };
        let dptr = region.dptr();
        for scope in scopes {
            let mut launch = self.stream.launch_builder(&self.gather);
            launch
                .arg(&dptr)
                .arg(&slot.ptr)
                .arg(&n_words)
                .arg(&scope.start)
                .arg(&scope.end)
                .arg(&SEED)
                .arg(&variant.reads)
                .arg(&variant.work);
            // SAFETY: the kernel reads words below n_words <= region.words() (checked above)
            // and adds to the one u64 of `slot`; the caller keeps the region and the slots
            // alive until it synchronises (a `Gpu::time` or `Gpu::sync`).
            unsafe { launch.launch(config) }.map_err(cuda("cuLaunchKernel(user_gather)"))?;
        }
        Ok(())
    }

    /// Milliseconds between CUDA events around the work `f` enqueues, after it finished
    /// (memtune's event timer).
    pub fn time(&self, f: impl FnOnce() -> Result<()>) -> Result<f64> {
        memtune::gpu::time_ms(&self.stream, f)
    }

    /// Waits for the stream's work; a failed kernel shows here.
    pub fn sync(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(cuda("cuStreamSynchronize (the kernel failed)"))
    }
}

/// The region kernels read: device memory or pinned host memory mapped into the GPU.
pub struct Region {
    ctx: Arc<CudaContext>,
    buffer: Buffer,
    bytes: u64,
}

impl Region {
    fn allocate(ctx: &Arc<CudaContext>, kind: MemoryKind, bytes: u64) -> Result<Region> {
        let len = usize::try_from(bytes)
            .map_err(|_| GatherError::Usage(format!("{bytes} bytes do not fit usize")))?;
        if len < 4 {
            return Err(GatherError::Usage(
                "a region holds at least one word".into(),
            ));
        }
        if kind == MemoryKind::Managed {
            return Err(GatherError::Usage(
                "managed memory is not offered: device or pinned".into(),
            ));
        }
        ctx.bind_to_thread().map_err(cuda("cuCtxSetCurrent"))?;
        Ok(Region {
            ctx: ctx.clone(),
            buffer: Buffer::allocate(kind, len)?,
            bytes,
        })
    }

    pub fn kind(&self) -> MemoryKind {
        self.buffer.kind()
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Whole 4-byte words held.
    pub fn words(&self) -> u64 {
        self.bytes / 4
    }

    fn dptr(&self) -> u64 {
        self.buffer.dptr()
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // The buffer is freed right after this, in this context; every launch on it was
        // synchronised.
        let _ = self.ctx.bind_to_thread();
    }
}

/// One u64 result slot a launch adds to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub index: usize,
    ptr: u64,
}

/// Device memory of `len` u64 result slots, handed out in order: every launch gets a zeroed
/// slot of its own, so the results of a tuning session's launches can be checked after it.
pub struct Sums {
    ctx: Arc<CudaContext>,
    buffer: Buffer,
    len: usize,
    used: usize,
}

impl Sums {
    fn allocate(ctx: &Arc<CudaContext>, len: usize) -> Result<Sums> {
        ctx.bind_to_thread().map_err(cuda("cuCtxSetCurrent"))?;
        let sums = Sums {
            ctx: ctx.clone(),
            buffer: Buffer::allocate(MemoryKind::Device, len.max(1) * 8)?,
            len: len.max(1),
            used: 0,
        };
        sums.zero()?;
        Ok(sums)
    }

    fn zero(&self) -> Result<()> {
        self.ctx.bind_to_thread().map_err(cuda("cuCtxSetCurrent"))?;
        // SAFETY: len * 8 bytes are allocated at dptr; no kernel uses them (every launch
        // was synchronised before a reset).
        unsafe { result::memset_d8_sync(self.buffer.dptr(), 0, self.len * 8) }
            .map_err(cuda("cuMemsetD8"))
    }

    /// The next unused slot.
    pub fn take(&mut self) -> Result<Slot> {
        if self.used >= self.len {
            return Err(GatherError::Autotune(format!(
                "more than {} launches between two checks of their results",
                self.len
            )));
        }
        let index = self.used;
        self.used += 1;
        Ok(Slot {
            index,
            ptr: self.buffer.dptr() + 8 * index as u64,
        })
    }

    /// Slots handed out since the last reset.
    pub fn used(&self) -> usize {
        self.used
    }

    /// The slots handed out, in order; the caller has synchronised their launches.
    pub fn read(&self) -> Result<Vec<u64>> {
        let mut out = vec![0u64; self.used];
        if self.used > 0 {
            self.ctx.bind_to_thread().map_err(cuda("cuCtxSetCurrent"))?;
            self.buffer.read(&mut out)?;
        }
        Ok(out)
    }

    /// Zeroes every slot and starts handing them out from the first again.
    pub fn reset(&mut self) -> Result<()> {
        self.zero()?;
        self.used = 0;
        Ok(())
    }
}

impl Drop for Sums {
    fn drop(&mut self) {
        // The buffer is freed right after this, in this context.
        let _ = self.ctx.bind_to_thread();
    }
}
