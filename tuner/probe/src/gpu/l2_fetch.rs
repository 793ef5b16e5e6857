//! The L2's fetch granularity on the GPU: one thread walks a chain laid out in address
//! order at a small stride over memory evicted from the L2 just before, each load timed on
//! its own (`kernels/cuda/random_chase.cu`); `crate::cache_fetch` reads the fetch from
//! which loads of each line miss.

use super::dram_latency::{footprint, grid, LINE_BYTES};
use super::{cuda, Gpu, GpuError};
use crate::fault::{FaultOp, FaultSection};
use crate::RandomChaseSamples;
use cudarc::driver::{CudaFunction, PushKernelArg};
use memtune::gpu::Buffer;
use memtune_core::MemoryKind;
use memtune_kernels::random_chase::{MAX_SAMPLES, SOURCE};

/// The chain's start is aligned to this, so that its loads fall at the same offsets of
/// every line of any size up to it (the profile's largest line).
const CHAIN_ALIGN: u64 = 4096;
/// The region read to evict the chain must hold at least this many L2s: an L2 need not
/// replace least recently used lines first, and reading many times its capacity evicts it
/// under any policy (the 1 GiB region of an 80 GB GPU holds twenty 50 MiB L2s).
const EVICT_L2S: u64 = 4;

/// Where the chain and the region read to evict it lie in a buffer: the chain first, from
/// the buffer's first [`CHAIN_ALIGN`]-aligned address, then the region, from the first
/// line boundary past the chain to the buffer's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layout {
    chain: u64,
    chain_bytes: u64,
    evict: u64,
    evict_bytes: u64,
}

/// The layout of a chain of `chain_bytes` in a buffer at `base` of `bytes`; `None` where
/// they do not fit with at least one line to read past the chain.
fn layout(base: u64, bytes: u64, chain_bytes: u64) -> Option<Layout> {
    let end = base.checked_add(bytes)?;
    let chain = base.checked_next_multiple_of(CHAIN_ALIGN)?;
    let evict = chain
        .checked_add(chain_bytes)?
        .checked_next_multiple_of(LINE_BYTES)?;
    (end.saturating_sub(evict) >= LINE_BYTES).then_some(Layout {
        chain,
        chain_bytes,
        evict,
        evict_bytes: end - evict,
    })
}

impl Gpu {
    /// Cycles of each of `samples` loads (at most [`MAX_SAMPLES`]) of a cold chain in
    /// address order: `samples` nodes `stride_bytes` apart (a multiple of 8), node `k`
    /// pointing to node `k + 1` and the last to the first, from a 4 KiB boundary of a
    /// buffer of 1 GiB (a quarter of the free memory where less). The chain is written,
    /// then the L2 is evicted by reading every line of the rest of the buffer (never the
    /// chain's lines), then one thread walks the chain from its first node with no untimed
    /// hop: load `i` reads the node at `i * stride_bytes`. Frees what it allocates (and
    /// the cache chases' buffer, which it runs after).
    pub fn cold_stride_samples(
        &mut self,
        stride_bytes: u64,
        samples: u32,
    ) -> Result<RandomChaseSamples, GpuError> {
        if samples == 0 || samples > MAX_SAMPLES {
            return Err(GpuError::Check(format!(
                "{samples} timed loads asked of the cold stride chain: 1 to {MAX_SAMPLES}"
            )));
        }
        if stride_bytes == 0 || stride_bytes % 8 != 0 || stride_bytes > CHAIN_ALIGN {
            return Err(GpuError::Check(format!(
                "a cold stride chain at {stride_bytes} bytes: the stride is a multiple of 8 from 8 to {CHAIN_ALIGN}"
            )));
        }
        // The cache chases are done: their buffer's memory goes to the chain.
        self.cache_buffer = None;
        let (free, _total) = self.context.memory_info()?;
        let bytes = footprint(free);
        let count = u64::from(samples);
        let chain_bytes = count * stride_bytes;
        let l2 = self.identity.l2_bytes;
        let place = |base: u64| {
            layout(base, bytes, chain_bytes)
                .filter(|l| l.evict_bytes >= EVICT_L2S.saturating_mul(l2))
        };
        // The same check before allocating, for a buffer at the worst alignment (the
        // chain's start then skips CHAIN_ALIGN - 1 bytes).
        if place(1).is_none() {
            return Err(GpuError::Check(format!(
                "a cold stride chain of {chain_bytes} bytes and an eviction of {EVICT_L2S} L2s ({l2} bytes each) do not fit {bytes} bytes (1 GiB, or a quarter of the {free} bytes of free device memory)"
            )));
        }
        let [init, _flush, sample, evict]: [CudaFunction; 4] = self
            .context
            .functions(&SOURCE)?
            .try_into()
            .map_err(|_| GpuError::Check("random_chase.cu entry list changed".into()))?;

        self.fault(FaultOp::Alloc, FaultSection::Caches)?;
        let buffer = Buffer::allocate(MemoryKind::Device, bytes as usize)?;
        let at = place(buffer.dptr()).ok_or_else(|| {
            GpuError::Check("the cold stride chain does not fit its buffer".into())
        })?;
        let mut sink = self
            .stream
            .alloc_zeros::<u64>(1)
            .map_err(cuda("allocating the cold stride chain's sink"))?;
        self.fault(FaultOp::Launch, FaultSection::Caches)?;
        // The identity order: node k points to node k + 1, so the walk goes up in address;
        // `count` nodes of `stride_bytes` from `at.chain` lie inside `buffer` (`layout`).
        let identity: Vec<u32> = (0..samples).collect();
        self.write_chain(
            &init,
            at.chain,
            stride_bytes,
            &identity,
            "cold stride chain",
        )?;
        let mut launch = self.stream.launch_builder(&evict);
        launch
            .arg(&at.evict)
            .arg(&at.evict_bytes)
            .arg(&LINE_BYTES)
            .arg(&mut sink);
        // SAFETY: reads `[at.evict, at.evict + at.evict_bytes)`, the end of `buffer`;
        // `sink` holds one word.
        unsafe { launch.launch(grid(at.evict_bytes / LINE_BYTES)) }
            .map_err(cuda("launching memtune_random_chase_evict"))?;
        let (cycles, reached) =
            self.time_chain(&sample, at.chain, 0, samples, "cold stride chain")?;
        drop(buffer);

        // `samples` hops over a cycle of `samples` nodes end where they started.
        if reached != at.chain {
            return Err(GpuError::Check(
                "the cold stride chain did not end at its first node: the walk did not run".into(),
            ));
        }
        Ok(RandomChaseSamples {
            footprint_bytes: chain_bytes,
            stride_bytes,
            cycles,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_comes_first_aligned_and_the_eviction_reads_only_past_it() {
        let base = 0x7f00_0000_0100;
        let at = layout(base, 1 << 30, 2048 * 32).expect("fits");
        assert_eq!(at.chain % CHAIN_ALIGN, 0);
        assert!(at.chain >= base && at.chain - base < CHAIN_ALIGN);
        assert_eq!(at.evict, at.chain + 64 * 1024);
        assert_eq!(at.evict + at.evict_bytes, base + (1 << 30));
        // A chain ending inside a line: the eviction starts at the next line.
        let odd = layout(0, 1 << 20, 2048 * 24).expect("fits");
        assert_eq!(
            (odd.chain, odd.evict),
            (0, (2048 * 24u64).next_multiple_of(LINE_BYTES))
        );
        assert_eq!(odd.evict % LINE_BYTES, 0);
    }

    #[test]
    fn a_chain_that_does_not_fit_has_no_layout() {
        assert_eq!(layout(0, 64 * 1024, 64 * 1024), None);
        assert_eq!(layout(1, 64 * 1024, 60 * 1024), None);
        assert_eq!(layout(u64::MAX - 10, 1 << 20, 64), None);
        assert!(layout(0, 64 * 1024 + 128, 64 * 1024).is_some());
    }
}
