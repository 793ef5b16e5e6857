//! Main-memory latency as a distribution on the GPU: one thread follows a chain over a
//! device array whose nodes it visits in a random order, each load timed on its own
//! (`kernels/cuda/random_chase.cu`).

use super::{cuda, Gpu, GpuError};
use crate::fault::{FaultOp, FaultSection};
use crate::RandomChaseSamples;
use cudarc::driver::{CudaFunction, LaunchConfig, PushKernelArg};
use memtune::gpu::Buffer;
use memtune_core::MemoryKind;
use memtune_kernels::random_chase::{random_order, MAX_SAMPLES, SOURCE};

/// The largest array the chain spans (mt4g's main-memory benchmark uses 1 GiB): far past
/// any L2 and the reach of the first TLB levels.
pub const FOOTPRINT_BYTES: u64 = 1 << 30;
/// Bytes between nodes: each hop lands on another DRAM row and cache line.
pub const STRIDE_BYTES: u64 = 1 << 10;
/// The granule the eviction read touches: one L2 line.
pub(super) const LINE_BYTES: u64 = 128;
/// The seed of the chain's order, fixed so that every probe walks the same chain.
const ORDER_SEED: u64 = 0x6d65_6d74_756e_6521;
/// Threads per block of the grid-stride kernels, and most blocks of one.
const BLOCK: u32 = 256;
const MAX_BLOCKS: u64 = 4096;

/// The chain's footprint with `free` bytes of device memory free: [`FOOTPRINT_BYTES`], or
/// a quarter of the free memory where that is less, in whole nodes.
pub fn footprint(free: u64) -> u64 {
    FOOTPRINT_BYTES.min(free / 4) / STRIDE_BYTES * STRIDE_BYTES
}

/// A grid-stride launch over `items`: one thread each, up to `MAX_BLOCKS` blocks.
pub(super) fn grid(items: u64) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (
            items.div_ceil(u64::from(BLOCK)).clamp(1, MAX_BLOCKS) as u32,
            1,
            1,
        ),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

impl Gpu {
    /// Cycles of each of `samples` loads (at most [`MAX_SAMPLES`]) of a random chase over
    /// 1 GiB (a quarter of the free memory where less) at 1 KiB strides, after `warm`
    /// untimed hops. The chain is written, then evicted from L2 by reading every other line
    /// of the array, so that the timed hops find their nodes in DRAM. Frees what it allocates (and the cache chases'
    /// buffer, which it runs after).
    pub fn random_chase_samples(
        &mut self,
        warm: u32,
        samples: u32,
    ) -> Result<RandomChaseSamples, GpuError> {
        if samples == 0 || samples > MAX_SAMPLES {
            return Err(GpuError::Check(format!(
                "{samples} timed loads asked of the random chase: 1 to {MAX_SAMPLES}"
            )));
        }
        // The cache chases are done: their buffer's memory goes to the chain.
        self.cache_buffer = None;
        let (free, _total) = self.context.memory_info()?;
        let footprint = footprint(free);
        let count = footprint / STRIDE_BYTES;
        let nodes = u32::try_from(count)
            .ok()
            .filter(|&n| n >= 2)
            .ok_or_else(|| {
                GpuError::Check(format!(
                    "a random chase over a quarter of the free device memory ({free} bytes) has {count} nodes of {STRIDE_BYTES} bytes; it needs 2 to {}",
                    u32::MAX
                ))
            })?;
        let [init, flush, sample, _evict]: [CudaFunction; 4] = self
            .context
            .functions(&SOURCE)?
            .try_into()
            .map_err(|_| GpuError::Check("random_chase.cu entry list changed".into()))?;

        self.fault(FaultOp::Alloc, FaultSection::Caches)?;
        let chain = Buffer::allocate(MemoryKind::Device, footprint as usize)?;
        let base = chain.dptr();
        let host_order = random_order(nodes, ORDER_SEED);
        let mut sink = self
            .stream
            .alloc_zeros::<u64>(1)
            .map_err(cuda("allocating the random chase's sink"))?;
        self.fault(FaultOp::Launch, FaultSection::Caches)?;
        // `count` nodes of STRIDE_BYTES fill `chain`.
        self.write_chain(&init, base, STRIDE_BYTES, &host_order, "random chase")?;
        let lines = count * (STRIDE_BYTES / LINE_BYTES);
        let mut launch = self.stream.launch_builder(&flush);
        launch
            .arg(&base)
            .arg(&STRIDE_BYTES)
            .arg(&LINE_BYTES)
            .arg(&count)
            .arg(&mut sink);
        // SAFETY: reads inside `chain` only; `sink` holds one word.
        unsafe { launch.launch(grid(lines)) }
            .map_err(cuda("launching memtune_random_chase_flush"))?;
        let start = base + u64::from(host_order[0]) * STRIDE_BYTES;
        let (cycles, reached) = self.time_chain(&sample, start, warm, samples, "random chase")?;
        drop(chain);

        let on_chain =
            reached >= base && reached < base + footprint && (reached - base) % STRIDE_BYTES == 0;
        if !on_chain {
            return Err(GpuError::Check(
                "the random chase ended off its chain: the walk did not run".into(),
            ));
        }
        Ok(RandomChaseSamples {
            footprint_bytes: footprint,
            stride_bytes: STRIDE_BYTES,
            cycles,
        })
    }

    /// Writes a chain at `base`: node `order[k]`, `stride` bytes apart, points to node
    /// `order[k + 1]` (`memtune_random_chase_init`), the last back to the first.
    pub(super) fn write_chain(
        &mut self,
        init: &CudaFunction,
        base: u64,
        stride: u64,
        order: &[u32],
        what: &str,
    ) -> Result<(), GpuError> {
        let count = order.len() as u64;
        let order = self
            .stream
            .clone_htod(order)
            .map_err(cuda(format!("copying the {what}'s order")))?;
        let mut launch = self.stream.launch_builder(init);
        launch.arg(&base).arg(&stride).arg(&order).arg(&count);
        // SAFETY: `order` holds `count` node indices below `count`, and the caller's buffer
        // holds `count` nodes of `stride` bytes from `base`.
        unsafe { launch.launch(grid(count)) }
            .map_err(cuda("launching memtune_random_chase_init"))?;
        Ok(())
    }

    /// One thread walks the chain from `start`, `warm` hops untimed, then times each of
    /// `samples` hops (`memtune_random_chase_sample`). Returns the cycles of each timed hop,
    /// none of them 0, and the address the walk reached.
    pub(super) fn time_chain(
        &mut self,
        sample: &CudaFunction,
        start: u64,
        warm: u32,
        samples: u32,
        what: &str,
    ) -> Result<(Vec<u64>, u64), GpuError> {
        let mut out = self
            .stream
            .alloc_zeros::<u64>(samples as usize + 1)
            .map_err(cuda(format!("allocating the {what}'s output")))?;
        let mut launch = self.stream.launch_builder(sample);
        launch.arg(&start).arg(&warm).arg(&samples).arg(&mut out);
        // SAFETY: the walk follows a chain the caller wrote; `out` holds samples + 1 words.
        unsafe {
            launch.launch(LaunchConfig {
                grid_dim: (1, 1, 1),
                block_dim: (32, 1, 1),
                shared_mem_bytes: 0,
            })
        }
        .map_err(cuda("launching memtune_random_chase_sample"))?;
        let mut out = self
            .stream
            .clone_dtoh(&out)
            .map_err(cuda(format!("reading the {what}'s output")))?;
        let reached = out.pop().unwrap_or(0);
        if out.contains(&0) {
            return Err(GpuError::Check(format!(
                "a timed load of the {what} took 0 cycles"
            )));
        }
        Ok((out, reached))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_footprint_is_a_gib_or_a_quarter_of_the_free_memory() {
        assert_eq!(footprint(80 << 30), 1 << 30);
        assert_eq!(footprint(4 << 30), 1 << 30);
        assert_eq!(footprint(2 << 30), 512 << 20);
        // Whole nodes only.
        assert_eq!(footprint(4 * 1000 + 4 * STRIDE_BYTES), STRIDE_BYTES);
        assert_eq!(footprint(0), 0);
    }

    #[test]
    fn grids_cover_the_items_within_bounds() {
        assert_eq!(grid(0).grid_dim.0, 1);
        assert_eq!(grid(257).grid_dim.0, 2);
        assert_eq!(grid(1 << 30).grid_dim.0, MAX_BLOCKS as u32);
    }
}
