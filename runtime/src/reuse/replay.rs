//! A trace replayed on the GPU by one thread (`kernels/cuda/replay.cu`): each reference
//! loads its word of a device buffer, each load's address depending on the one before, so
//! the mean cycles per load is the trace's mean latency. `cargo tune reuse --gpu-replay`
//! sets it beside the latency the profile's levels predict from the trace's reuse distances.

use cudarc::driver::{LaunchConfig, PushKernelArg};
use memtune_kernels::replay as k;

use super::kernels::zeros;
use crate::gpu::{cuda, Context, Error};

/// Most references replayed: a load takes up to about a microsecond, on one thread.
pub const MAX_REFERENCES: u64 = 1 << 22;
/// Widest span of addresses mapped onto the device buffer.
pub const MAX_SPAN_BYTES: u64 = 8 << 30;
/// Bytes written after the trace's buffer, so that the caches and TLBs hold none of it when
/// the replay starts: a first use misses every level, as the prediction counts it.
const FLUSH_BYTES: usize = 256 << 20;

/// Loads of the calibration replay: one word, over and over (L1 hits after the first).
const CALIBRATION_LOADS: usize = 1 << 16;
/// Bytes of address space each distinct chunk keeps when a trace spans more than
/// [`MAX_SPAN_BYTES`]: the chunks are laid side by side in the order they are first used,
/// so lines and pages up to this size keep their reuse (a stack and a heap 100 GiB apart
/// become neighbours).
pub const CHUNK_BYTES: u64 = 2 << 20;

/// A replay's mean latency.
#[derive(Debug, Clone, PartialEq)]
pub struct Replayed {
    pub loads: u64,
    pub mean_cycles: f64,
    /// Mean cycles of the same replay loop on one word that hits L1: the replay's own cost
    /// per load, for comparison with the L1 hit latency a pointer chase measures.
    pub l1_loop_cycles: f64,
    /// Bytes of the device buffer: from the lowest to the highest address, or the
    /// distinct chunks side by side.
    pub span_bytes: u64,
    /// Whether the addresses were laid out in [`CHUNK_BYTES`] chunks.
    pub chunked: bool,
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

/// Word offsets of `addresses` from the lowest, the span in bytes, and whether they were
/// chunked: each address loads the 4-byte word that holds it. A trace wider than
/// [`MAX_SPAN_BYTES`] is laid out in [`CHUNK_BYTES`] chunks, first used first.
pub fn offsets(addresses: &[u64]) -> Result<(Vec<u32>, u64, bool), ReplayError> {
    if addresses.len() as u64 > MAX_REFERENCES {
        return Err(ReplayError::TooLong(addresses.len() as u64));
    }
    let (Some(&lo), Some(&hi)) = (addresses.iter().min(), addresses.iter().max()) else {
        return Ok((Vec::new(), 0, false));
    };
    let low = lo / 4 * 4;
    let span = hi / 4 * 4 - low + 4;
    if span <= MAX_SPAN_BYTES {
        // span <= 8 GiB: every word offset fits a u32.
        let words = addresses.iter().map(|&a| ((a - low) / 4) as u32).collect();
        return Ok((words, span, false));
    }
    let mut slots = std::collections::HashMap::new();
    let mut bytes = Vec::with_capacity(addresses.len());
    for &a in addresses {
        let next = slots.len() as u64;
        let slot = *slots.entry(a / CHUNK_BYTES).or_insert(next);
        bytes.push(slot * CHUNK_BYTES + a % CHUNK_BYTES);
    }
    let span = slots.len() as u64 * CHUNK_BYTES;
    if span > MAX_SPAN_BYTES {
        return Err(ReplayError::TooWide(span));
    }
    Ok((
        bytes.into_iter().map(|b| (b / 4) as u32).collect(),
        span,
        true,
    ))
}

/// Replays `addresses` on GPU `ordinal`, in device memory, from cold caches.
pub fn replay(ordinal: usize, addresses: &[u64]) -> Result<Replayed, ReplayError> {
    let (offsets, span, chunked) = offsets(addresses)?;
    if offsets.is_empty() {
        return Ok(Replayed {
            loads: 0,
            mean_cycles: 0.0,
            l1_loop_cycles: 0.0,
            span_bytes: 0,
            chunked,
        });
    }
    let mut gpu = Context::open(ordinal)?;
    gpu.check_free(span + FLUSH_BYTES as u64 + 4 * offsets.len() as u64)?;
    let function = gpu.function(&k::SOURCE, &[], k::REPLAY)?;
    let stream = gpu.stream().clone();
    let words = (span / 4) as usize;
    let data = zeros::<u32>(&stream, words)?;
    let offs = stream.clone_htod(&offsets).map_err(cuda("cuMemcpyHtoD"))?;
    let same = zeros::<u32>(&stream, CALIBRATION_LOADS)?;
    let mut out = zeros::<u64>(&stream, k::OUT_LEN)?;
    // Written after the data: evicts it from L2 and the TLBs.
    let flush = zeros::<u8>(&stream, FLUSH_BYTES)?;
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
    // The calibration: word 0 again and again.
    let calibration_n = CALIBRATION_LOADS as u32;
    let mut launch = stream.launch_builder(&function);
    launch
        .arg(&same)
        .arg(&calibration_n)
        .arg(&data)
        .arg(&mask)
        .arg(&mut out);
    // SAFETY: `same` holds CALIBRATION_LOADS zero offsets and word 0 of `data` exists; all
    // live until the synchronisation below.
    unsafe { launch.launch(config) }.map_err(cuda("cuLaunchKernel(memtune_replay)"))?;
    let calibration = stream.clone_dtoh(&out).map_err(cuda("cuMemcpyDtoH"))?;
    stream.synchronize().map_err(cuda("cuStreamSynchronize"))?;
    drop(flush);
    let cycles = result.first().copied().unwrap_or(0);
    let loop_cycles = calibration.first().copied().unwrap_or(0);
    Ok(Replayed {
        loads: u64::from(n),
        mean_cycles: cycles as f64 / f64::from(n),
        l1_loop_cycles: loop_cycles as f64 / f64::from(calibration_n),
        span_bytes: span,
        chunked,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_words_from_the_lowest_address() {
        let (o, span, chunked) = offsets(&[0x1006, 0x1000, 0x2003]).unwrap();
        assert_eq!(o, vec![1, 0, 0x400]);
        assert_eq!((span, chunked), (0x1004, false));
        assert_eq!(offsets(&[]).unwrap(), (Vec::new(), 0, false));
    }

    #[test]
    fn a_wide_trace_is_laid_out_in_chunks_first_used_first() {
        let far = 100 << 30;
        let (o, span, chunked) = offsets(&[far + 8, 0x40, far + CHUNK_BYTES + 4, far]).unwrap();
        let c = (CHUNK_BYTES / 4) as u32;
        assert_eq!(o, vec![2, c + 0x10, 2 * c + 1, 0]);
        assert_eq!((span, chunked), (3 * CHUNK_BYTES, true));
        let spread: Vec<u64> = (0..5000u64).map(|i| i << 40).collect();
        assert!(matches!(offsets(&spread), Err(ReplayError::TooWide(_))));
    }
}
