//! The real GPU as a memory system for the probe: pointer chases and random sampling on
//! device, pinned (zero-copy) and managed memory, through cudarc and NVRTC.

pub mod bandwidth;
mod caches;
mod dram_latency;
mod l2_fetch;
mod random;
pub mod staging;
mod system;

use crate::fault::{FaultOp, FaultSection, Faults, InjectedFault};
use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, DriverError, LaunchConfig, PushKernelArg,
};
use memtune::gpu::{Buffer, Context};
use memtune_core::{DeviceIdentity, MemoryKind};
use memtune_kernels::params::SamplingParams;
use memtune_kernels::{cache_chase, pointer_chase, random_access};
use std::sync::Arc;

#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    #[error("{what}: {source:?}")]
    Cuda {
        what: String,
        #[source]
        source: DriverError,
    },
    #[error(transparent)]
    Compile(#[from] memtune_kernels::CompileError),
    #[error("allocating {bytes} bytes of {kind} memory failed: {source:?}; bound it with --max-{kind} or free GPU memory")]
    Allocation {
        kind: MemoryKind,
        bytes: u64,
        source: DriverError,
    },
    #[error("{0}")]
    Check(String),
    /// A failure asked for by `MEMTUNE_FAULT` ([`crate::fault`]).
    #[error(transparent)]
    Injected(#[from] InjectedFault),
}

impl From<memtune::gpu::Error> for GpuError {
    fn from(e: memtune::gpu::Error) -> GpuError {
        use memtune::gpu::Error as E;
        match e {
            E::Cuda { what, source } => GpuError::Cuda { what, source },
            E::Allocation {
                kind,
                bytes,
                source,
            } => GpuError::Allocation {
                kind,
                bytes,
                source,
            },
            E::Compile(c) => GpuError::Compile(c),
            other => GpuError::Check(other.to_string()),
        }
    }
}

fn cuda(what: impl Into<String>) -> impl FnOnce(DriverError) -> GpuError {
    let what = what.into();
    move |source| GpuError::Cuda { what, source }
}

/// Upper bounds on the memory the probe takes, per kind (bytes; `None`: the default).
#[derive(Debug, Clone, Default)]
pub struct Bounds {
    pub device: Option<u64>,
    pub pinned: Option<u64>,
    pub managed: Option<u64>,
    /// GPUs of this host probed at once (0 counts as 1): the pinned default, a share of
    /// the host's memory, is divided among them so that together they take no more.
    pub probed_at_once: usize,
}

/// Timed loads per chase after the warm walk: enough for a stable mean (the spread of
/// repeated chases on an H200 was under 1%), few enough that a chase over pinned host
/// memory (about 1.1 µs a load across the link) stays well under a millisecond.
fn timed_steps(kind: MemoryKind) -> u32 {
    match kind {
        MemoryKind::Pinned => 256,
        MemoryKind::Device | MemoryKind::Managed => 1024,
    }
}
/// Most elements a chase ring may have. The warm walk touches every element once, so that
/// the timed walk finds them all in L2 and measures translation only: rings longer than
/// this would make every chase slow (seen on an H200: walking only part of a longer ring
/// left the rest in DRAM, doubling the latency with no TLB miss at all).
pub const MAX_CHASE_ELEMENTS: u64 = 1 << 16;
/// Most elements a cache chase ring may have. A cache only shows its size once the ring
/// has more lines than it holds (an H200's L2 holds about 470 000 lines of 128 B), so these
/// rings are longer, and their warm walks cost up to a few hundred milliseconds.
pub const MAX_CACHE_CHASE_ELEMENTS: u64 = 1 << 22;

/// The draw-cost pass reads the first 1/DRAW_SCOPE_SHARE of its region: the density of a
/// pass in a run of that many scopes, the most the benchmarks sweep.
pub const DRAW_SCOPE_SHARE: u64 = 32;

/// Reads a thread of the random-access curve's launches: enough that a launch outlasts its
/// overhead many times over (34.6 M reads on an H200's grid), few enough that the CPU's
/// replay of each sum stays short. Zero-copy reads cross the host link, so a pinned launch
/// takes the benchmark's 16 a thread.
fn sampling_reads(kind: MemoryKind) -> u32 {
    match kind {
        MemoryKind::Pinned => 16,
        MemoryKind::Device | MemoryKind::Managed => 256,
    }
}

/// Sampling parameters over the 4-byte words of a region of `region` bytes, its seed taken
/// from the region, reading only the words in `scope`.
fn sampling_params(
    region: u64,
    reads: u32,
    scope: std::ops::Range<u64>,
) -> Result<SamplingParams, GpuError> {
    SamplingParams::new(region / 4, reads, 0x5eed_u64 ^ region)
        .and_then(|p| p.with_scope(scope))
        .map_err(|e| GpuError::Check(format!("sampling parameters: {e}")))
}

struct Kernels {
    chase_init: CudaFunction,
    chase: CudaFunction,
    chase_pair: CudaFunction,
    fill: CudaFunction,
    /// The sampling kernel scoped runs launch: the random-access curve and the draw cost.
    sampling: CudaFunction,
    atomic: CudaFunction,
    sum_words: CudaFunction,
}

/// An open GPU, ready to probe.
pub struct Gpu {
    stream: Arc<CudaStream>,
    kernels: Kernels,
    identity: DeviceIdentity,
    limits: [u64; 3],
    /// The one buffer held at a time (switching kinds frees the previous one).
    buffer: Option<Buffer>,
    /// How many leading words of the buffer hold the random-access fill (a chase ring
    /// overwrites it).
    filled_words: u64,
    out: CudaSlice<u64>,
    cache: caches::CacheKernels,
    /// Device memory for cache chases, kept apart from the TLB buffer (which is sized to
    /// most of the GPU and would be reallocated on every switch of kind).
    cache_buffer: Option<(Buffer, u64)>,
    /// Operations to fail on purpose (`MEMTUNE_FAULT`); none unless [`Gpu::with_faults`].
    faults: Faults,
    /// The context; declared last so it outlives the buffers above when dropped.
    context: Context,
}

fn kind_index(kind: MemoryKind) -> usize {
    match kind {
        MemoryKind::Device => 0,
        MemoryKind::Pinned => 1,
        MemoryKind::Managed => 2,
    }
}

const MIB2: u64 = 2 << 20;

/// Host memory available now (Linux `MemAvailable`), if it can be read.
fn host_available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

impl Gpu {
    /// Opens GPU `ordinal`, compiles the probe kernels for it and sets the footprint limits:
    /// device, most of the free memory; managed, at most half of it (more can hang the GPU);
    /// pinned, a bounded share of host memory (split among the GPUs probed at once).
    pub fn open(
        ordinal: usize,
        identity: DeviceIdentity,
        bounds: &Bounds,
    ) -> Result<Gpu, GpuError> {
        let mut gpu = Context::with_identity(ordinal, identity.clone())?;
        let stream = gpu.stream().clone();
        // Entries come in the order the kernel sources list them.
        let [chase_init, chase, chase_pair]: [CudaFunction; 3] = gpu
            .functions(&pointer_chase::SOURCE)?
            .try_into()
            .map_err(|_| GpuError::Check("pointer_chase.cu entry list changed".into()))?;
        let [fill, atomic, sum_words]: [CudaFunction; 3] = gpu
            .functions(&random_access::SOURCE)?
            .try_into()
            .map_err(|_| GpuError::Check("random_access.cu entry list changed".into()))?;
        let [sampling]: [CudaFunction; 1] = gpu
            .functions(&memtune_kernels::sampling::SOURCE)?
            .try_into()
            .map_err(|_| GpuError::Check("sampling.cu entry list changed".into()))?;
        let cache = caches::CacheKernels::load(gpu.module(&cache_chase::SOURCE, &[])?)?;
        let (free, _total) = gpu.memory_info()?;
        let round = |b: u64| b / MIB2 * MIB2;
        let pick =
            |bound: Option<u64>, default: u64| round(bound.map_or(default, |b| b.min(default)));
        let sharers = bounds.probed_at_once.max(1) as u64;
        let pinned_default =
            (host_available_bytes().map_or(4 << 30, |a| a / 4) / sharers).min(8 << 30);
        let limits = [
            pick(bounds.device, free / 10 * 8),
            pick(bounds.pinned, pinned_default),
            pick(bounds.managed, free / 2),
        ];
        let out = stream
            .alloc_zeros::<u64>(pointer_chase::PAIR_OUT_LEN)
            .map_err(cuda("allocating the chase output"))?;
        Ok(Gpu {
            stream,
            kernels: Kernels {
                chase_init,
                chase,
                chase_pair,
                fill,
                sampling,
                atomic,
                sum_words,
            },
            identity,
            limits,
            buffer: None,
            filled_words: 0,
            out,
            cache,
            cache_buffer: None,
            faults: Faults::none(),
            context: gpu,
        })
    }

    /// The same GPU, failing the allocations and launches `faults` names (each just
    /// before the real call), for tests of the probe's failure paths.
    pub fn with_faults(mut self, faults: Faults) -> Gpu {
        self.faults = faults;
        self
    }

    /// `Err` where `MEMTUNE_FAULT` asks `op` of `section` to fail.
    fn fault(&self, op: FaultOp, section: FaultSection) -> Result<(), GpuError> {
        Ok(self.faults.check(op, section)?)
    }

    pub fn identity(&self) -> &DeviceIdentity {
        &self.identity
    }

    pub fn max_footprint(&self, kind: MemoryKind) -> u64 {
        self.limits[kind_index(kind)]
    }

    /// The buffer for `kind`, allocated at the kind's limit on first use (and again where
    /// the one held, a fresh one of [`Gpu::fresh_buffer`], is too small).
    fn buffer(&mut self, kind: MemoryKind, bytes: u64) -> Result<u64, GpuError> {
        let limit = self.max_footprint(kind);
        if bytes > limit {
            return Err(GpuError::Check(format!(
                "{bytes} bytes of {kind} memory asked for, over the probe's limit of {limit}"
            )));
        }
        let current = self
            .buffer
            .as_ref()
            .map(|b| b.kind() == kind && b.len_bytes() as u64 >= bytes);
        if current != Some(true) {
            self.buffer = None; // free the previous kind's memory first
            self.filled_words = 0;
            let b = Buffer::allocate(kind, limit as usize)?;
            self.buffer = Some(b);
        }
        Ok(self.buffer.as_ref().map_or(0, |b| b.dptr()))
    }

    /// Replaces the buffer held by a new one of `bytes` (2 MiB multiples, at most the
    /// kind's limit) of `kind`. Pinned memory is allocated while the old buffer is still
    /// held, so that the new one gets other host pages; if that fails (memory is short),
    /// and for device and managed memory (whose old buffer may take most of the GPU), the
    /// old one is freed first.
    pub fn fresh_buffer(&mut self, kind: MemoryKind, bytes: u64) -> Result<(), GpuError> {
        let limit = self.max_footprint(kind);
        let size = bytes.div_ceil(MIB2).saturating_mul(MIB2).min(limit).max(1);
        self.fault(FaultOp::Alloc, FaultSection::Tlb(kind))?;
        let beside = match kind {
            MemoryKind::Pinned => Buffer::allocate(kind, size as usize).ok(),
            MemoryKind::Device | MemoryKind::Managed => None,
        };
        self.buffer = None;
        self.filled_words = 0;
        let fresh = match beside {
            Some(b) => b,
            None => Buffer::allocate(kind, size as usize)?,
        };
        self.buffer = Some(fresh);
        Ok(())
    }

    /// Frees the memory held for probing.
    pub fn release(&mut self) {
        self.buffer = None;
        self.filled_words = 0;
    }

    /// Writes a ring of `count` elements `stride` apart from `base`.
    fn init_ring(&self, base: u64, stride: u64, count: u64) -> Result<(), GpuError> {
        let blocks = count.div_ceil(256).min(4096) as u32;
        let mut init = self.stream.launch_builder(&self.kernels.chase_init);
        init.arg(&base).arg(&stride).arg(&count);
        // SAFETY: callers pass a ring that lies inside the buffer (count * stride bytes).
        unsafe {
            init.launch(LaunchConfig {
                grid_dim: (blocks, 1, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            })
        }
        .map_err(cuda("launching memtune_chase_init"))?;
        Ok(())
    }

    /// Runs a chase kernel on a grid with a few blocks per SM, so that one lands on each SM
    /// the kernel wants, and returns its `out` words once they show it ran there.
    fn run_targeted(
        &mut self,
        pair: bool,
        steps: u32,
        args: (u64, u64, u32, i32, i32),
    ) -> Result<Vec<u64>, GpuError> {
        let (start_a, start_b, warm, sm_a, sm_b) = args;
        for blocks_per_sm in [4u32, 16] {
            self.stream
                .memcpy_htod(
                    &[pointer_chase::OUT_SENTINEL; pointer_chase::PAIR_OUT_LEN],
                    &mut self.out,
                )
                .map_err(cuda("resetting the chase output"))?;
            let grid = self.identity.sm_count.max(1) * blocks_per_sm;
            let cfg = LaunchConfig {
                grid_dim: (grid, 1, 1),
                block_dim: (32, 1, 1),
                shared_mem_bytes: 0,
            };
            let mut launch = if pair {
                let mut l = self.stream.launch_builder(&self.kernels.chase_pair);
                l.arg(&start_a)
                    .arg(&start_b)
                    .arg(&warm)
                    .arg(&steps)
                    .arg(&sm_a)
                    .arg(&sm_b);
                l
            } else {
                let mut l = self.stream.launch_builder(&self.kernels.chase);
                l.arg(&start_a).arg(&warm).arg(&steps).arg(&sm_a);
                l
            };
            launch.arg(&mut self.out);
            // SAFETY: the kernels follow rings written by init_ring; `out` holds
            // PAIR_OUT_LEN words, as many as either kernel writes.
            unsafe { launch.launch(cfg) }.map_err(cuda("launching the pointer chase"))?;
            let out = self
                .stream
                .clone_dtoh(&self.out)
                .map_err(cuda("reading the chase output"))?;
            let ran_a = out[2] != pointer_chase::OUT_SENTINEL;
            let ran_b = !pair || out[5] != pointer_chase::OUT_SENTINEL;
            if ran_a && ran_b {
                return Ok(out);
            }
        }
        Err(GpuError::Check(format!(
            "no block of the chase ran on SM {sm_a} (or {sm_b})"
        )))
    }

    fn ring_count(stride: u64, footprint: u64, max_elements: u64) -> Result<u64, GpuError> {
        if stride < 8 || stride % 8 != 0 || footprint < stride || footprint / stride > max_elements
        {
            return Err(GpuError::Check(format!(
                "chase stride {stride} / footprint {footprint}: stride must be a multiple of 8, at most the footprint, and footprint/stride at most {max_elements}"
            )));
        }
        Ok(footprint / stride)
    }

    /// Mean cycles per load of a chase with `stride` over `footprint` bytes of `kind`, run
    /// on SM `sm`, after a warm walk touching every element once.
    pub fn chase(
        &mut self,
        kind: MemoryKind,
        stride: u64,
        footprint: u64,
        sm: u32,
    ) -> Result<f64, GpuError> {
        self.chase_rings(kind, stride, footprint, sm, None)
    }

    /// As `chase`, while SM `other` walks a ring of the same shape over the next
    /// `footprint` bytes at the same time.
    pub fn chase_pair(
        &mut self,
        kind: MemoryKind,
        stride: u64,
        footprint: u64,
        sm: u32,
        other: u32,
    ) -> Result<f64, GpuError> {
        self.chase_rings(kind, stride, footprint, sm, Some(other))
    }

    /// `chase` (`other` none) or `chase_pair`: SM `sm`'s ring at the start of the buffer,
    /// `other`'s after it.
    fn chase_rings(
        &mut self,
        kind: MemoryKind,
        stride: u64,
        footprint: u64,
        sm: u32,
        other: Option<u32>,
    ) -> Result<f64, GpuError> {
        let count = Self::ring_count(stride, footprint, MAX_CHASE_ELEMENTS)?;
        self.fault(FaultOp::Alloc, FaultSection::Tlb(kind))?;
        let rings = if other.is_some() { 2 } else { 1 };
        let base = self.buffer(kind, rings * footprint)?;
        self.filled_words = 0;
        self.fault(FaultOp::Launch, FaultSection::Tlb(kind))?;
        self.init_ring(base, stride, count)?;
        let (base_b, sm_b) = match other {
            Some(other) => {
                self.init_ring(base + footprint, stride, count)?;
                (base + footprint, other as i32)
            }
            None => (0, -1),
        };
        let out = self.run_targeted(
            other.is_some(),
            timed_steps(kind),
            (base, base_b, count as u32, sm as i32, sm_b),
        )?;
        Ok(out[0] as f64 / f64::from(timed_steps(kind)))
    }
}
