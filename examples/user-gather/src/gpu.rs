//! The GPU side: the compiled kernel, the region (device memory or pinned host memory
//! mapped into the GPU), result slots, launches of a plan and CUDA-event timing. Every CUDA
//! call's result is checked.

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT;
use cudarc::driver::{
    result, sys, CudaContext, CudaFunction, CudaModule, CudaStream, LaunchConfig, PushKernelArg,
};
use memtune::core::plan::SamplingPlan;
use memtune::launch::sampling_scopes;
use memtune::{DeviceIdentity, MemoryKind};

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
        let ctx = stream.context().clone();
        ctx.bind_to_thread().map_err(cuda("cuCtxSetCurrent"))?;
        let cc = identity.compute_capability;
        let ptx = kernel::compile(&kernel::arch(cc.major, cc.minor))?;
        let module = ctx
            .load_module(ptx.to_cudarc())
            .map_err(cuda("cuModuleLoadData"))?;
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
        let (free, _total) = self.ctx.mem_get_info().map_err(cuda("cuMemGetInfo"))?;
        Ok(free as u64)
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
        launch.arg(&region.dptr).arg(&n_words);
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
        for scope in scopes {
            let mut launch = self.stream.launch_builder(&self.gather);
            launch
                .arg(&region.dptr)
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

    /// Milliseconds between CUDA events around the work `f` enqueues, after it finished.
    pub fn time(&self, f: impl FnOnce() -> Result<()>) -> Result<f64> {
        let start = self
            .stream
            .record_event(Some(CU_EVENT_DEFAULT))
            .map_err(cuda("cuEventRecord"))?;
        f()?;
        let end = self
            .stream
            .record_event(Some(CU_EVENT_DEFAULT))
            .map_err(cuda("cuEventRecord"))?;
        end.synchronize()
            .map_err(cuda("cuEventSynchronize (the kernel failed)"))?;
        let ms = start.elapsed_ms(&end).map_err(cuda("cuEventElapsedTime"))?;
        Ok(f64::from(ms))
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
    kind: MemoryKind,
    /// The address kernels use.
    dptr: u64,
    /// Pinned memory's host address (null for device memory).
    host: *mut c_void,
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
        ctx.bind_to_thread().map_err(cuda("cuCtxSetCurrent"))?;
        let (dptr, host) = match kind {
            MemoryKind::Device => {
                // SAFETY: a plain allocation, owned by the Region and freed once in Drop.
                let dptr = unsafe { result::malloc_sync(len) }.map_err(cuda("cuMemAlloc"))?;
                (dptr, std::ptr::null_mut())
            }
            MemoryKind::Pinned => {
                // SAFETY: as above; freed once, in Drop or below.
                let host = unsafe { result::malloc_host(len, sys::CU_MEMHOSTALLOC_DEVICEMAP) }
                    .map_err(cuda("cuMemHostAlloc"))?;
                let mut dptr = 0;
                // SAFETY: `host` was allocated with CU_MEMHOSTALLOC_DEVICEMAP just above.
                let mapped =
                    unsafe { sys::cuMemHostGetDevicePointer_v2(&mut dptr, host, 0) }.result();
                if let Err(e) = mapped {
                    // SAFETY: allocated above and not owned by a Region yet.
                    let _ = unsafe { result::free_host(host) };
                    return Err(cuda("cuMemHostGetDevicePointer")(e));
                }
                (dptr, host)
            }
            MemoryKind::Managed => {
                return Err(GatherError::Usage(
                    "managed memory is not offered: device or pinned".into(),
                ))
            }
        };
        Ok(Region {
            ctx: ctx.clone(),
            kind,
            dptr,
            host,
            bytes,
        })
    }

    pub fn kind(&self) -> MemoryKind {
        self.kind
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Whole 4-byte words held.
    pub fn words(&self) -> u64 {
        self.bytes / 4
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: each pointer came from its allocation call and is freed once; every
        // launch on it was synchronised. Errors cannot be reported from Drop.
        unsafe {
            let _ = self.ctx.bind_to_thread();
            let _ = match self.kind {
                MemoryKind::Pinned => result::free_host(self.host),
                _ => result::free_sync(self.dptr),
            };
        }
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
    dptr: u64,
    len: usize,
    used: usize,
}

impl Sums {
    fn allocate(ctx: &Arc<CudaContext>, len: usize) -> Result<Sums> {
        ctx.bind_to_thread().map_err(cuda("cuCtxSetCurrent"))?;
        // SAFETY: a plain allocation, freed once in Drop.
        let dptr = unsafe { result::malloc_sync(len.max(1) * 8) }.map_err(cuda("cuMemAlloc"))?;
        let sums = Sums {
            ctx: ctx.clone(),
            dptr,
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
        unsafe { result::memset_d8_sync(self.dptr, 0, self.len * 8) }.map_err(cuda("cuMemsetD8"))
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
            ptr: self.dptr + 8 * index as u64,
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
            // SAFETY: `used` <= len slots are allocated at dptr.
            unsafe { result::memcpy_dtoh_sync(&mut out, self.dptr) }
                .map_err(cuda("cuMemcpyDtoH"))?;
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
        // SAFETY: allocated once in `allocate`, freed once here.
        unsafe {
            let _ = self.ctx.bind_to_thread();
            let _ = result::free_sync(self.dptr);
        }
    }
}
