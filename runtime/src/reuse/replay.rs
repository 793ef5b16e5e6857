//! A trace replayed on the GPU by one thread (`kernels/cuda/replay.cu`): each reference
//! loads its word of a device buffer, each load's address depending on the one before, so
//! the mean cycles per load is the trace's mean latency. `cargo tune reuse --gpu-replay`
//! sets it beside the latency the profile's levels predict from the trace's reuse distances.

use cudarc::driver::{LaunchConfig, PushKernelArg};
use memtune_kernels::replay as k;

use crate::gpu::{cuda, Context, Error};

/// Most references replayed: a load takes up to about a microsecond, on one thread.
pub const MAX_REFERENCES: u64 = 1 << 22;
/// Widest span of addresses mapped onto the device buffer.
pub const MAX_SPAN_BYTES: u64 = 8 << 30;
/// Bytes written after the trace's buffer, so that the caches and TLBs hold none of it when
/// the replay starts: a first use misses every level, as the prediction counts it.
const FLUSH_BYTES: usize = 256 << 20;

/// A replay's mean latency.
#[derive(Debug, Clone, PartialEq)]
pub struct Replayed {
    pub loads: u64,
    pub mean_cycles: f64,
    /// Bytes from the lowest to the highest address (the device buffer's size).
    pub span_bytes: u64,
}

/// Why a replay could not run.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("the GPU replay takes at most {MAX_REFERENCES} references; the trace has {0}: give a shorter trace")]
    TooLong(u64),
    #[error("the trace's addresses span {0} bytes; the GPU replay maps at most {MAX_SPAN_BYTES}")]
    TooWide(u64),
    #[error(transparent)]
    Gpu(#[from] Error),
}

/// Word offsets of `addresses` from the lowest, and the span in bytes: each address loads
/// the 4-byte word that holds it.
pub fn offsets(addresses: &[u64]) -> Result<(Vec<u32>, u64), ReplayError> {
    if addresses.len() as u64 > MAX_REFERENCES {
        return Err(ReplayError::TooLong(addresses.len() as u64));
    }
    let (Some(&lo), Some(&hi)) = (addresses.iter().min(), addresses.iter().max()) else {
        return Ok((Vec::new(), 0));
    };
    let low = lo / 4 * 4;
    let span = hi / 4 * 4 - low + 4;
    if span > MAX_SPAN_BYTES {
        return Err(ReplayError::TooWide(span));
    }
    // span <= 8 GiB: every word offset fits a u32.
    Ok((
        addresses.iter().map(|&a| ((a - low) / 4) as u32).collect(),
        span,
    ))
}

/// Replays `addresses` on GPU `ordinal`, in device memory, from cold caches.
pub fn replay(ordinal: usize, addresses: &[u64]) -> Result<Replayed, ReplayError> {
    let (offsets, span) = offsets(addresses)?;
    if offsets.is_empty() {
        return Ok(Replayed {
            loads: 0,
            mean_cycles: 0.0,
            span_bytes: 0,
        });
    }
    let mut gpu = Context::open(ordinal)?;
    gpu.check_free(span + FLUSH_BYTES as u64 + 4 * offsets.len() as u64)?;
    let function = gpu.function(&k::SOURCE, &[], k::REPLAY)?;
    let stream = gpu.stream().clone();
    let words = (span / 4) as usize;
    let data = stream
        .alloc_zeros::<u32>(words)
        .map_err(cuda("cuMemAlloc"))?;
    let offs = stream.clone_htod(&offsets).map_err(cuda("cuMemcpyHtoD"))?;
    let mut out = stream
        .alloc_zeros::<u64>(k::OUT_LEN)
        .map_err(cuda("cuMemAlloc"))?;
    // Written after the data: evicts it from L2 and the TLBs.
    let flush = stream
        .alloc_zeros::<u8>(FLUSH_BYTES)
        .map_err(cuda("cuMemAlloc"))?;
    let n = offsets.len() as u32;
    let mask = 0u32;
    let config = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (k::BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut launch = stream.launch_builder(&function);
    launch
        .arg(&offs)
        .arg(&n)
        .arg(&data)
        .arg(&mask)
        .arg(&mut out);
    // SAFETY: `offs` holds n offsets, each below `words` (the span's words), `data` that many
    // words and `out` OUT_LEN; all live until the synchronisation below.
    unsafe { launch.launch(config) }.map_err(cuda("cuLaunchKernel(memtune_replay)"))?;
    let result = stream.clone_dtoh(&out).map_err(cuda("cuMemcpyDtoH"))?;
    stream.synchronize().map_err(cuda("cuStreamSynchronize"))?;
    drop(flush);
    let cycles = result.first().copied().unwrap_or(0);
    Ok(Replayed {
        loads: u64::from(n),
        mean_cycles: cycles as f64 / f64::from(n),
        span_bytes: span,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_words_from_the_lowest_address() {
        let (o, span) = offsets(&[0x1006, 0x1000, 0x2003]).unwrap();
        assert_eq!(o, vec![1, 0, 0x400]);
        assert_eq!(span, 0x1004);
        assert_eq!(offsets(&[]).unwrap(), (Vec::new(), 0));
        assert!(matches!(
            offsets(&[0, 16 << 30]),
            Err(ReplayError::TooWide(_))
        ));
    }
}
