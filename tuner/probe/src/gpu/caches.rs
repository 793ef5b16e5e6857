//! Cache chases on the GPU: the L1 path (`ld.global.ca`) at either carveout, the L2 path
//! (`ld.global.cg`, the TLB probe's chase), the read-only path (`ld.global.nc`) and its
//! sharing test with the L1, the constant cache and shared memory. One thread walks; the
//! others of its block return at once.

use super::{cuda, timed_steps, Gpu, GpuError, MAX_CACHE_CHASE_ELEMENTS};
use crate::fault::{FaultOp, FaultSection};
use crate::metered::SHARING_OTHER_PASSES;
use crate::{Carveout, LoadPath};
use cudarc::driver::sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT;
use cudarc::driver::{CudaFunction, CudaModule, LaunchConfig, PushKernelArg};
use memtune::gpu::Buffer;
use memtune_core::MemoryKind;
use memtune_kernels::cache_chase::{
    CHASE_CA, CHASE_CONST, CHASE_NC, CHASE_SHARED, CONST_RING, CONST_RING_WORDS, OUT_LEN,
    SHARED_RING_WORDS, SHARE_NC,
};
use std::sync::Arc;

/// `cudaSharedmemCarveoutDefault` / `cudaSharedmemCarveoutMaxL1`.
const CARVEOUT_DEFAULT: i32 = -1;
const CARVEOUT_MAX_L1: i32 = 0;

pub(super) struct CacheKernels {
    /// Kept for the constant ring's address.
    module: Arc<CudaModule>,
    chase_ca: CudaFunction,
    chase_nc: CudaFunction,
    share_nc: CudaFunction,
    chase_const: CudaFunction,
    chase_shared: CudaFunction,
}

impl CacheKernels {
    pub(super) fn load(module: Arc<CudaModule>) -> Result<CacheKernels, GpuError> {
        let f = |name: &str| {
            module
                .load_function(name)
                .map_err(cuda(format!("finding {name}")))
        };
        Ok(CacheKernels {
            chase_ca: f(CHASE_CA)?,
            chase_nc: f(CHASE_NC)?,
            share_nc: f(SHARE_NC)?,
            chase_const: f(CHASE_CONST)?,
            chase_shared: f(CHASE_SHARED)?,
            module,
        })
    }
}

/// One block of one warp: the chases use thread 0 only.
const ONE_WARP: LaunchConfig = LaunchConfig {
    grid_dim: (1, 1, 1),
    block_dim: (32, 1, 1),
    shared_mem_bytes: 0,
};

impl Gpu {
    /// Device memory of at least `bytes` for cache chases, grown on demand.
    fn cache_buffer(&mut self, bytes: u64) -> Result<u64, GpuError> {
        self.fault(FaultOp::Alloc, FaultSection::Caches)?;
        match &self.cache_buffer {
            Some((b, size)) if *size >= bytes => Ok(b.dptr()),
            _ => {
                self.cache_buffer = None;
                let b = Buffer::allocate(MemoryKind::Device, bytes as usize)?;
                let dptr = b.dptr();
                self.cache_buffer = Some((b, bytes));
                Ok(dptr)
            }
        }
    }

    /// Mean cycles per load of a one-thread chase through `path` with `stride` over
    /// `footprint` bytes, after a warm walk of the whole ring.
    pub fn cache_chase(
        &mut self,
        path: LoadPath,
        carveout: Carveout,
        stride: u64,
        footprint: u64,
    ) -> Result<f64, GpuError> {
        let steps = timed_steps(MemoryKind::Device);
        match path {
            LoadPath::L2 => {
                let count = Self::ring_count(stride, footprint, MAX_CACHE_CHASE_ELEMENTS)?;
                let base = self.cache_buffer(footprint)?;
                self.fault(FaultOp::Launch, FaultSection::Caches)?;
                self.init_ring(base, stride, count)?;
                // On SM 0 every time: the L2's hit latency differs by SM (262-295 cycles on
                // an H100), and block 0 need not land on the same SM from launch to launch.
                let out = self.run_targeted(false, steps, (base, 0, count as u32, 0, -1))?;
                Ok(out[0] as f64 / f64::from(steps))
            }
            LoadPath::L1 | LoadPath::ReadOnly => {
                let count = Self::ring_count(stride, footprint, MAX_CACHE_CHASE_ELEMENTS)?;
                let base = self.cache_buffer(footprint)?;
                self.fault(FaultOp::Launch, FaultSection::Caches)?;
                self.init_ring(base, stride, count)?;
                let kernel = match path {
                    LoadPath::ReadOnly => self.cache.chase_nc.clone(),
                    _ => self.cache.chase_ca.clone(),
                };
                set_carveout(&kernel, carveout)?;
                self.run_one(&kernel, base, count as u32, steps)
            }
            LoadPath::Constant => {
                let words = self.write_const_ring(stride, footprint)?;
                let kernel = self.cache.chase_const.clone();
                self.run_one(&kernel, 0u32, words, steps)
            }
        }
    }

    /// The read-only path's sharing test (`MemorySystem::cache_sharing`): a `.ca` ring of
    /// `l1_footprint` and, past it, an `.nc` ring of `other_footprint`, both at `stride`,
    /// walked by `memtune_share_nc` at the default carveout, without then with two `.nc`
    /// passes. Returns the `.ca` ring's cycles per load of each launch.
    pub fn cache_sharing(
        &mut self,
        other: LoadPath,
        stride: u64,
        l1_footprint: u64,
        other_footprint: u64,
    ) -> Result<(f64, f64), GpuError> {
        if other != LoadPath::ReadOnly {
            return Err(GpuError::Check(format!(
                "the sharing test walks the read-only path, not {other:?}"
            )));
        }
        let ca = Self::ring_count(stride, l1_footprint, MAX_CACHE_CHASE_ELEMENTS)?;
        let nc = Self::ring_count(stride, other_footprint, MAX_CACHE_CHASE_ELEMENTS)?;
        let ca_bytes = ca * stride;
        let base = self.cache_buffer(ca_bytes + nc * stride)?;
        self.fault(FaultOp::Launch, FaultSection::Caches)?;
        self.init_ring(base, stride, ca)?;
        self.init_ring(base + ca_bytes, stride, nc)?;
        let kernel = self.cache.share_nc.clone();
        set_carveout(&kernel, Carveout::Default)?;
        let steps = timed_steps(MemoryKind::Device).min(ca as u32);
        let launch_with = |passes: u32| -> Result<f64, GpuError> {
            self.fault(FaultOp::Alloc, FaultSection::Caches)?;
            let mut out = self
                .stream
                .alloc_zeros::<u64>(OUT_LEN)
                .map_err(cuda("allocating the sharing test's output"))?;
            let (ca_start, nc_start) = (base, base + ca_bytes);
            let (ca_count, nc_count) = (ca as u32, nc as u32);
            let mut launch = self.stream.launch_builder(&kernel);
            launch
                .arg(&ca_start)
                .arg(&ca_count)
                .arg(&nc_start)
                .arg(&nc_count)
                .arg(&passes)
                .arg(&steps)
                .arg(&mut out);
            // SAFETY: both rings were written just before, inside the buffer; `out` holds
            // OUT_LEN words.
            unsafe { launch.launch(ONE_WARP) }.map_err(cuda("launching the sharing test"))?;
            let out = self
                .stream
                .clone_dtoh(&out)
                .map_err(cuda("reading the sharing test's output"))?;
            if out[0] == 0 {
                return Err(GpuError::Check("the sharing test did not run".into()));
            }
            Ok(out[0] as f64 / f64::from(steps))
        };
        let before = launch_with(0)?;
        let after = launch_with(SHARING_OTHER_PASSES as u32)?;
        Ok((before, after))
    }

    /// Writes the constant ring: `footprint / stride` elements `stride` bytes apart, each
    /// holding the word index of the next. Returns the element count (the warm walk).
    fn write_const_ring(&mut self, stride: u64, footprint: u64) -> Result<u32, GpuError> {
        let bank = (CONST_RING_WORDS * 4) as u64;
        if stride < 4 || stride % 4 != 0 || footprint < stride || footprint > bank {
            return Err(GpuError::Check(format!(
                "constant chase stride {stride} / footprint {footprint}: stride must be a multiple of 4, footprint at most {bank} bytes"
            )));
        }
        let count = (footprint / stride) as usize;
        let stride_words = (stride / 4) as usize;
        let mut ring = vec![0u32; CONST_RING_WORDS];
        for i in 0..count {
            ring[i * stride_words] = (((i + 1) % count) * stride_words) as u32;
        }
        let mut symbol = self
            .cache
            .module
            .get_global(CONST_RING, &self.stream)
            .map_err(cuda(format!("finding {CONST_RING}")))?;
        // SAFETY: the symbol is `unsigned int[CONST_RING_WORDS]`, so it holds that many u32.
        let mut words = unsafe { symbol.transmute_mut::<u32>(CONST_RING_WORDS) }
            .ok_or_else(|| GpuError::Check(format!("{CONST_RING} is smaller than 64 KiB")))?;
        self.stream
            .memcpy_htod(&ring, &mut words)
            .map_err(cuda("writing the constant ring"))?;
        Ok(count as u32)
    }

    /// Launches a one-thread chase `(start, warm, steps, out)` and returns cycles per step.
    fn run_one<S: cudarc::driver::DeviceRepr>(
        &mut self,
        kernel: &CudaFunction,
        start: S,
        warm: u32,
        steps: u32,
    ) -> Result<f64, GpuError> {
        self.fault(FaultOp::Alloc, FaultSection::Caches)?;
        let mut out = self
            .stream
            .alloc_zeros::<u64>(OUT_LEN)
            .map_err(cuda("allocating the chase output"))?;
        self.fault(FaultOp::Launch, FaultSection::Caches)?;
        let mut launch = self.stream.launch_builder(kernel);
        launch.arg(&start).arg(&warm).arg(&steps).arg(&mut out);
        // SAFETY: the chase follows a ring written just before; `out` holds OUT_LEN words.
        unsafe { launch.launch(ONE_WARP) }.map_err(cuda("launching a cache chase"))?;
        let out = self
            .stream
            .clone_dtoh(&out)
            .map_err(cuda("reading the chase output"))?;
        if out[0] == 0 {
            return Err(GpuError::Check("the cache chase did not run".into()));
        }
        Ok(out[0] as f64 / f64::from(steps))
    }

    /// Cycles of one dependent shared-memory load: the median of three chases over 256
    /// words at a 4-word stride (no bank conflicts: one thread).
    pub fn shared_memory_latency(&mut self) -> Result<f64, GpuError> {
        let (count, stride_words) = (256u32, 4u32);
        debug_assert!(count * stride_words <= SHARED_RING_WORDS);
        let kernel = self.cache.chase_shared.clone();
        self.fault(FaultOp::Alloc, FaultSection::Caches)?;
        self.fault(FaultOp::Launch, FaultSection::Caches)?;
        let mut runs = Vec::new();
        for _ in 0..3 {
            let mut out = self
                .stream
                .alloc_zeros::<u64>(OUT_LEN)
                .map_err(cuda("allocating the chase output"))?;
            let steps = 2048u32;
            let mut launch = self.stream.launch_builder(&kernel);
            launch
                .arg(&count)
                .arg(&stride_words)
                .arg(&steps)
                .arg(&mut out);
            // SAFETY: the ring lies in the kernel's own shared array; `out` holds OUT_LEN words.
            unsafe { launch.launch(ONE_WARP) }
                .map_err(cuda("launching the shared-memory chase"))?;
            let out = self
                .stream
                .clone_dtoh(&out)
                .map_err(cuda("reading the chase output"))?;
            if out[0] == 0 {
                return Err(GpuError::Check(
                    "the shared-memory chase did not run".into(),
                ));
            }
            runs.push(out[0] as f64 / f64::from(steps));
        }
        runs.sort_by(f64::total_cmp);
        Ok(runs[1])
    }
}

/// Sets `kernel`'s preferred shared-memory carveout (the L1 share of the unified storage).
fn set_carveout(kernel: &CudaFunction, carveout: Carveout) -> Result<(), GpuError> {
    let value = match carveout {
        Carveout::Default => CARVEOUT_DEFAULT,
        Carveout::MaxL1 => CARVEOUT_MAX_L1,
    };
    kernel
        .set_attribute(CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, value)
        .map_err(cuda("setting the L1 carveout of the chase"))
}
