//! The real GPU as a memory system for the probe: pointer chases and random sampling on
//! device, pinned (zero-copy) and managed memory, through cudarc and NVRTC.

pub mod bandwidth;
mod caches;
mod memory;
pub mod staging;
mod system;

use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DriverError, LaunchConfig,
    PushKernelArg,
};
use memory::Buffer;
use memtune::launch::{sampling_grid, sampling_threads};
use memtune_core::profile::{RANDOM_ATOMIC_THREADS_PER_SM, RANDOM_ATOMIC_UPDATES_PER_THREAD};
use memtune_core::{DeviceIdentity, MemoryKind};
use memtune_kernels::params::SamplingParams;
use memtune_kernels::random_access::word_hash;
use memtune_kernels::{
    cache_chase, compile_ptx, pointer_chase, random_access, reference, KernelSource,
};
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
    /// Whether the buffer holds the random-access fill (a chase ring overwrites it).
    filled_words: u64,
    out: CudaSlice<u64>,
    cache: caches::CacheKernels,
    /// Device memory for cache chases, kept apart from the TLB buffer (which is sized to
    /// most of the GPU and would be reallocated on every switch of kind).
    cache_buffer: Option<(Buffer, u64)>,
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
    /// pinned, a bounded share of host memory.
    pub fn open(
        ordinal: usize,
        identity: DeviceIdentity,
        bounds: &Bounds,
    ) -> Result<Gpu, GpuError> {
        let ctx = CudaContext::new(ordinal).map_err(cuda("creating a CUDA context"))?;
        let stream = ctx.default_stream();
        let arch = format!(
            "sm_{}{}",
            identity.compute_capability.major, identity.compute_capability.minor
        );
        let load_module = |src: &KernelSource| -> Result<Arc<CudaModule>, GpuError> {
            let ptx = compile_ptx(src, &arch, &[])?;
            ctx.load_module(ptx.to_cudarc())
                .map_err(cuda(format!("loading {}", src.name)))
        };
        let load = |src: &KernelSource| -> Result<Vec<CudaFunction>, GpuError> {
            let module = load_module(src)?;
            src.entries
                .iter()
                .map(|n| {
                    module
                        .load_function(n)
                        .map_err(cuda(format!("finding {n}")))
                })
                .collect()
        };
        // Entries come in the order the kernel sources list them.
        let [chase_init, chase, chase_pair]: [CudaFunction; 3] = load(&pointer_chase::SOURCE)?
            .try_into()
            .map_err(|_| GpuError::Check("pointer_chase.cu entry list changed".into()))?;
        let [fill, atomic, sum_words]: [CudaFunction; 3] = load(&random_access::SOURCE)?
            .try_into()
            .map_err(|_| GpuError::Check("random_access.cu entry list changed".into()))?;
        let [sampling]: [CudaFunction; 1] = load(&memtune_kernels::sampling::SOURCE)?
            .try_into()
            .map_err(|_| GpuError::Check("sampling.cu entry list changed".into()))?;
        let cache = caches::CacheKernels::load(load_module(&cache_chase::SOURCE)?)?;
        let (free, _total) = ctx.mem_get_info().map_err(cuda("cuMemGetInfo"))?;
        let free = free as u64;
        let round = |b: u64| b / MIB2 * MIB2;
        let pick =
            |bound: Option<u64>, default: u64| round(bound.map_or(default, |b| b.min(default)));
        let pinned_default = host_available_bytes().map_or(4 << 30, |a| (a / 4).min(8 << 30));
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
        })
    }

    pub fn identity(&self) -> &DeviceIdentity {
        &self.identity
    }

    pub fn max_footprint(&self, kind: MemoryKind) -> u64 {
        self.limits[kind_index(kind)]
    }

    /// The buffer for `kind`, allocated at the kind's limit on first use.
    fn buffer(&mut self, kind: MemoryKind, bytes: u64) -> Result<u64, GpuError> {
        let limit = self.max_footprint(kind);
        if bytes > limit {
            return Err(GpuError::Check(format!(
                "{bytes} bytes of {kind} memory asked for, over the probe's limit of {limit}"
            )));
        }
        let current = self.buffer.as_ref().map(|b| b.kind_matches(kind));
        if current != Some(true) {
            self.buffer = None; // free the previous kind's memory first
            self.filled_words = 0;
            let b = Buffer::allocate(kind, limit).map_err(|source| GpuError::Allocation {
                kind,
                bytes: limit,
                source,
            })?;
            self.buffer = Some(b);
        }
        Ok(self.buffer.as_ref().map_or(0, |b| b.dptr))
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
        let count = Self::ring_count(stride, footprint, MAX_CHASE_ELEMENTS)?;
        let base = self.buffer(kind, footprint)?;
        self.filled_words = 0;
        self.init_ring(base, stride, count)?;
        let out = self.run_targeted(
            false,
            timed_steps(kind),
            (base, 0, count as u32, sm as i32, -1),
        )?;
        Ok(out[0] as f64 / f64::from(timed_steps(kind)))
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
        let count = Self::ring_count(stride, footprint, MAX_CHASE_ELEMENTS)?;
        let base = self.buffer(kind, 2 * footprint)?;
        self.filled_words = 0;
        self.init_ring(base, stride, count)?;
        self.init_ring(base + footprint, stride, count)?;
        let out = self.run_targeted(
            true,
            timed_steps(kind),
            (
                base,
                base + footprint,
                count as u32,
                sm as i32,
                other as i32,
            ),
        )?;
        Ok(out[0] as f64 / f64::from(timed_steps(kind)))
    }

    /// `kind`'s buffer, at least `region` bytes, with every word filled by
    /// `memtune_fill_words` (once per buffer), so the CPU can recompute sums of its words.
    fn filled_buffer(&mut self, kind: MemoryKind, region: u64) -> Result<u64, GpuError> {
        let limit = self.max_footprint(kind);
        let base = self.buffer(kind, region)?;
        let all_words = limit / 4;
        if self.filled_words != all_words {
            let mut fill = self.stream.launch_builder(&self.kernels.fill);
            fill.arg(&base).arg(&all_words);
            let blocks = self.identity.sm_count.max(1) * 8;
            // SAFETY: writes `all_words` words, the whole buffer.
            unsafe {
                fill.launch(LaunchConfig {
                    grid_dim: (blocks, 1, 1),
                    block_dim: (256, 1, 1),
                    shared_mem_bytes: 0,
                })
            }
            .map_err(cuda("launching memtune_fill_words"))?;
            self.filled_words = all_words;
        }
        Ok(base)
    }

    /// Random-sampling throughput (reads/s) over the first `region` bytes of `kind`, measured
    /// with the sampling kernel that scoped runs launch (`memtune_sampling`, unscoped, on
    /// the runtime's grid), so the curve prices the reads those runs make: median of three
    /// timed launches after a warm-up, the sum checked against the CPU once.
    pub fn random_access(&mut self, kind: MemoryKind, region: u64) -> Result<f64, GpuError> {
        let n_words = region / 4;
        let params = sampling_params(region, sampling_reads(kind), 0..n_words)?;
        let seconds = self.time_sampling(kind, region, params)?;
        Ok(self.draws(&params) / seconds)
    }

    /// What drawing a position and skipping it costs against reading it, both through the
    /// sampling kernel, over the same `region` bytes of `kind`: seconds per draw of a pass
    /// that reads only the first 1/[`DRAW_SCOPE_SHARE`] of the region (device memory; one
    /// word elsewhere, where a few zero-copy reads would cost more than the draws being
    /// priced), over seconds per read of an unscoped pass.
    pub fn draw_cost(&mut self, kind: MemoryKind, region: u64) -> Result<f64, GpuError> {
        let n_words = region / 4;
        // Device memory: the seed's 1024 reads a thread, and a 1/32 scope. Zero-copy reads are
        // slow: the draws alone (a one-word scope, which a draw hits about once in a launch)
        // with 1024 a thread, which outlast the launch overhead and keep the CPU's replay of
        // the sum well under a second.
        let (full, sparse) = if kind == MemoryKind::Device {
            (
                sampling_params(region, 1024, 0..n_words)?,
                sampling_params(region, 1024, 0..(n_words / DRAW_SCOPE_SHARE).max(1))?,
            )
        } else {
            (
                sampling_params(region, sampling_reads(kind), 0..n_words)?,
                sampling_params(region, 1024, 0..1)?,
            )
        };
        let read_s = self.time_sampling(kind, region, full)? / self.draws(&full);
        let draw_s = self.time_sampling(kind, region, sparse)? / self.draws(&sparse);
        Ok(draw_s / read_s)
    }

    /// Draws of one sampling launch with `params` (every thread's, in scope or not).
    fn draws(&self, params: &SamplingParams) -> f64 {
        (sampling_threads(self.identity.sm_count) * u64::from(params.reads_per_thread)) as f64
    }

    /// Seconds of one `memtune_sampling` launch with `params` over the first `region` bytes
    /// of `kind` (filled by `memtune_fill_words`), on the runtime's grid: median of three
    /// after a warm-up whose sum must equal the CPU's replay.
    fn time_sampling(
        &mut self,
        kind: MemoryKind,
        region: u64,
        params: SamplingParams,
    ) -> Result<f64, GpuError> {
        let base = self.filled_buffer(kind, region)?;
        let (blocks, block) = sampling_grid(self.identity.sm_count);
        let threads = sampling_threads(self.identity.sm_count);
        let cfg = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (block, 1, 1),
            shared_mem_bytes: 0,
        };
        let sampling = &self.kernels.sampling;
        time_summing_launches(
            &self.stream,
            &mut |stream, sum| {
                let mut launch = stream.launch_builder(sampling);
                launch.arg(&base).arg(sum).arg(&params);
                // SAFETY: reads positions below n_words of the filled buffer, inside the
                // scope; `sum` is one word.
                unsafe { launch.launch(cfg) }.map_err(cuda("launching memtune_sampling"))?;
                Ok(())
            },
            &|got| {
                let want = reference::sampling::pass_sum(&params, threads, word_hash);
                if got == want {
                    Ok(())
                } else {
                    Err(GpuError::Check(format!(
                        "sampling {region} bytes of {kind} memory, words {}..{}, summed {got}, the CPU reference {want}",
                        params.scope_begin, params.scope_end
                    )))
                }
            },
        )
    }

    /// Random atomic increments per second over the first `region` bytes of device or pinned
    /// memory (a hash table lives in either; managed memory is refused): `memtune_random_atomic` on the
    /// grid of `random_access` (1024 threads per SM, 64 updates each, as the profile's
    /// `RANDOM_ATOMIC_*` constants say), timed as `random_access` is (a warm-up,
    /// then the median of three launches). The region is zeroed first; after the warm-up the
    /// sum of its words must be exactly one per draw, or the measurement fails. The atomics
    /// overwrite the sampling fill, which `random_access` then writes again.
    ///
    /// Estimated cost on an H200, not yet measured (132 SMs: 135 168 threads, 8.65 M atomics a launch): four launches
    /// of about 0.2 to 1 ms (atomics run at L2 at tens of G/s, a few G/s where they contend on
    /// a few words or miss to DRAM) plus zeroing and summing the region at memory bandwidth
    /// (about 60 ms at 100 GiB); the probe's regions, doubling from 64 KiB to about 110 GiB,
    /// take about 0.25 s together. Pinned memory's (measured, session 6): atomics at 0.4 G/s
    /// to 512 MiB and 0.04-0.11 G/s beyond, across the host link; the full probe took 38-44 s
    /// with them, against 33-37 s without.
    pub fn random_atomic(&mut self, kind: MemoryKind, region: u64) -> Result<f64, GpuError> {
        if kind == MemoryKind::Managed {
            return Err(GpuError::Check(
                "random atomics are measured on device and pinned memory, not managed".to_string(),
            ));
        }
        let base = self.buffer(kind, region)?;
        self.filled_words = 0;
        let n_words = region / 4;
        if n_words == 0 {
            return Err(GpuError::Check(format!(
                "random atomics over {region} bytes: the region holds no 4-byte word"
            )));
        }
        // SAFETY: the buffer holds at least `region` bytes (checked by `buffer`).
        unsafe {
            cudarc::driver::result::memset_d8_async(
                base,
                0,
                region as usize,
                self.stream.cu_stream(),
            )
        }
        .map_err(cuda("zeroing the atomic region"))?;
        // The launch shape the profile documents: the planner compares a workload's
        // updates per word with this launch's.
        let reads = RANDOM_ATOMIC_UPDATES_PER_THREAD;
        let blocks = self.identity.sm_count.max(1) * (RANDOM_ATOMIC_THREADS_PER_SM / 256);
        let threads = u64::from(blocks) * 256;
        let seed = 0x5eed_u64 ^ region;
        let cfg = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let (atomic, sum_words, stream) =
            (&self.kernels.atomic, &self.kernels.sum_words, &self.stream);
        let median_s = time_summing_launches(
            stream,
            &mut |stream, _sum| {
                let mut launch = stream.launch_builder(atomic);
                launch.arg(&base).arg(&n_words).arg(&reads).arg(&seed);
                // SAFETY: increments positions < n_words of the buffer.
                unsafe { launch.launch(cfg) }.map_err(cuda("launching memtune_random_atomic"))?;
                Ok(())
            },
            // The atomic kernel adds nothing to the launch's sum: the check sums the words.
            &|_| {
                let got = sum_region(stream, sum_words, base, n_words, blocks)?;
                let want = random_access::atomic_increments(threads, reads);
                if got == want {
                    Ok(())
                } else {
                    Err(GpuError::Check(format!(
                        "random atomics over {region} bytes of {kind} memory: the words sum to {got} after one launch, not {want} (one per draw)"
                    )))
                }
            },
        )?;
        Ok((threads * u64::from(reads)) as f64 / median_s)
    }
}

/// The sum of `n_words` 4-byte words at `base`, through `memtune_sum_words`.
fn sum_region(
    stream: &Arc<CudaStream>,
    sum_words: &CudaFunction,
    base: u64,
    n_words: u64,
    blocks: u32,
) -> Result<u64, GpuError> {
    let mut sum = stream
        .alloc_zeros::<u64>(1)
        .map_err(cuda("allocating the word sum"))?;
    let mut launch = stream.launch_builder(sum_words);
    launch.arg(&base).arg(&n_words).arg(&mut sum);
    // SAFETY: reads n_words words from base, inside the buffer; `sum` is one word.
    unsafe {
        launch.launch(LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        })
    }
    .map_err(cuda("launching memtune_sum_words"))?;
    Ok(stream
        .clone_dtoh(&sum)
        .map_err(cuda("reading the word sum"))?[0])
}

/// Launches a summing kernel on the stream, adding into the given one-word buffer.
type SumLaunch<'a> = dyn FnMut(&Arc<CudaStream>, &mut CudaSlice<u64>) -> Result<(), GpuError> + 'a;

/// Times a kernel that adds into one `u64`: a warm-up launch whose sum `check` verifies, then
/// three launches timed with events; returns the median in seconds.
fn time_summing_launches(
    stream: &Arc<CudaStream>,
    launch: &mut SumLaunch<'_>,
    check: &dyn Fn(u64) -> Result<(), GpuError>,
) -> Result<f64, GpuError> {
    let timing = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
    let mut sum = stream
        .alloc_zeros::<u64>(1)
        .map_err(cuda("allocating the sum"))?;
    let mut times = Vec::new();
    for run in 0..4 {
        stream
            .memset_zeros(&mut sum)
            .map_err(cuda("zeroing the sum"))?;
        let start = stream
            .record_event(timing)
            .map_err(cuda("recording an event"))?;
        launch(stream, &mut sum)?;
        let end = stream
            .record_event(timing)
            .map_err(cuda("recording an event"))?;
        end.synchronize().map_err(cuda("waiting for the launch"))?;
        if run == 0 {
            check(stream.clone_dtoh(&sum).map_err(cuda("reading the sum"))?[0])?;
            continue; // the warm-up run
        }
        times.push(f64::from(start.elapsed_ms(&end).map_err(cuda("timing"))?));
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2] / 1e3)
}
