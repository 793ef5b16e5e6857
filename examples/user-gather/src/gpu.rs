//! The GPU side: the compiled kernel, the region (device memory or pinned host memory
//! mapped into the GPU), result slots, launches of a plan and CUDA-event timing. Every CUDA
//! call's result is checked.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaFunction, CudaStream, LaunchConfig, PushKernelArg};
use memtune::core::plan::SamplingPlan;
use memtune::gpu::Buffer;
use memtune::launch::sampling_scopes;
use memtune::{DeviceIdentity, MemoryKind};
use memtune_example_support::gpu::{cuda, LoadedGpu, Slots};

pub use memtune_example_support::gpu::Slot;

use crate::kernel::{self, FILL, GATHER};
use crate::{GatherError, Variant, SEED};

type Result<T> = std::result::Result<T, GatherError>;

/// Device memory of u64 result slots, one per launch (see [`Slots`]).
pub type Sums = Slots<u64>;

/// One GPU with the gather kernel loaded; its identity, stream, timing and
/// synchronisation are those of the [`LoadedGpu`] it derefs to.
pub struct Gpu {
    loaded: LoadedGpu,
    gather: CudaFunction,
    fill: CudaFunction,
}

memtune_example_support::deref_to_loaded!(Gpu);

impl Gpu {
    /// Compiles the kernel for the device of `stream` (the one `Autotuner::open` returns)
    /// and loads it.
    pub fn new(identity: DeviceIdentity, stream: Arc<CudaStream>) -> Result<Gpu> {
        let loaded = LoadedGpu::new(identity, stream, &kernel::SOURCE)?;
        let gather = loaded.function(GATHER)?;
        let fill = loaded.function(FILL)?;
        Ok(Gpu {
            loaded,
            gather,
            fill,
        })
    }

    /// Threads of every gather launch (the CPU reference must model as many).
    pub fn threads(&self) -> u64 {
        kernel::GRID.threads(self.identity().sm_count)
    }

    /// `bytes` of `kind` filled by `user_gather_fill` (never zeros).
    pub fn region(&self, kind: MemoryKind, bytes: u64) -> Result<Region> {
        let region = Region::allocate(self.ctx(), kind, bytes)?;
        let (blocks, block) = kernel::GRID.of(self.identity().sm_count);
        let config = LaunchConfig {
            grid_dim: (blocks * 2, 1, 1),
            block_dim: (block, 1, 1),
            shared_mem_bytes: 0,
        };
        let n_words = region.words();
        let mut launch = self.stream().launch_builder(&self.fill);
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
        Sums::allocate(
            self.ctx(),
            n,
            "launches between two checks of their results",
        )
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
        let (blocks, block) = kernel::GRID.of(self.identity().sm_count);
        let config = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (block, 1, 1),
            shared_mem_bytes: 0,
        };
        let dptr = region.dptr();
        for scope in scopes {
            let mut launch = self.stream().launch_builder(&self.gather);
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
