//! The random-access measurements: sampling throughput of a filled region (the curve and
//! the draw cost) and random `atomicAdd` throughput, each checked against the CPU's sum.

use super::{cuda, sampling_params, sampling_reads, Gpu, GpuError, DRAW_SCOPE_SHARE};
use crate::fault::{FaultOp, FaultSection};
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use memtune::launch::{sampling_grid, sampling_threads};
use memtune_core::profile::{RANDOM_ATOMIC_THREADS_PER_SM, RANDOM_ATOMIC_UPDATES_PER_THREAD};
use memtune_core::MemoryKind;
use memtune_kernels::params::SamplingParams;
use memtune_kernels::random_access::word_hash;
use memtune_kernels::{random_access, reference};
use std::sync::Arc;

impl Gpu {
    /// `kind`'s buffer, at least `region` bytes, its first `region` bytes filled by
    /// `memtune_fill_words` (each word once per buffer), so the CPU can recompute sums of
    /// its words. Only what is used is filled: managed memory migrates each page it
    /// touches.
    fn filled_buffer(&mut self, kind: MemoryKind, region: u64) -> Result<u64, GpuError> {
        self.fault(FaultOp::Alloc, FaultSection::Random(kind))?;
        let base = self.buffer(kind, region)?;
        // The buffer held, which a TLB confirmation may have replaced by a smaller one.
        let held_words = self.buffer.as_ref().map_or(0, |b| b.len_bytes() as u64) / 4;
        let wanted = region.div_ceil(4).min(held_words);
        if self.filled_words < wanted {
            let first = self.filled_words;
            let mut fill = self.stream.launch_builder(&self.kernels.fill);
            fill.arg(&base).arg(&first).arg(&wanted);
            let blocks = self.identity.sm_count.max(1) * 8;
            // SAFETY: writes words `first..wanted`, inside the buffer held.
            unsafe {
                fill.launch(LaunchConfig {
                    grid_dim: (blocks, 1, 1),
                    block_dim: (256, 1, 1),
                    shared_mem_bytes: 0,
                })
            }
            .map_err(cuda("launching memtune_fill_words"))?;
            self.filled_words = wanted;
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
        self.fault(FaultOp::Launch, FaultSection::Random(kind))?;
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
    /// take about 0.25 s together. Pinned memory's (measured on H200s, 2026-11-22): atomics
    /// at 0.4 G/s to 512 MiB and 0.04-0.11 G/s beyond, across the host link; the full probe
    /// took 38-44 s with them, against 33-37 s without.
    pub fn random_atomic(&mut self, kind: MemoryKind, region: u64) -> Result<f64, GpuError> {
        if kind == MemoryKind::Managed {
            return Err(GpuError::Check(
                "random atomics are measured on device and pinned memory, not managed".to_string(),
            ));
        }
        self.fault(FaultOp::Alloc, FaultSection::Random(kind))?;
        let base = self.buffer(kind, region)?;
        self.filled_words = 0;
        self.fault(FaultOp::Launch, FaultSection::Random(kind))?;
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
    let mut sum = stream
        .alloc_zeros::<u64>(1)
        .map_err(cuda("allocating the sum"))?;
    let mut times = Vec::new();
    for run in 0..4 {
        stream
            .memset_zeros(&mut sum)
            .map_err(cuda("zeroing the sum"))?;
        let ms = memtune::gpu::time_ms(stream, || launch(stream, &mut sum))?;
        if run == 0 {
            check(stream.clone_dtoh(&sum).map_err(cuda("reading the sum"))?[0])?;
            continue; // the warm-up run
        }
        times.push(ms);
    }
    Ok(memtune::gpu::Timing { runs_ms: times }.median_ms() / 1e3)
}
