//! Bandwidth and the host link (seed 001): device-to-device copy, host-to-device and
//! device-to-host copies from/to pinned memory, and zero-copy reads of mapped pinned host
//! memory with the grid-stride, block-stride and random-warp patterns.
//!
//! memtune measures zero-copy reads instead of oversubscribed managed memory: oversubscription
//! can hang the GPU, while mapped pinned memory shows the host link's read bandwidth safely.
//!
//! Every measurement is one warm-up then [`TIMED_RUNS`] runs timed with CUDA events; the
//! median is kept. The data is never zeros: the host buffer holds
//! [`memtune_kernels::random_access::word_hash`] of each word's index, and every zero-copy sum and the copy
//! round trip are checked against the CPU.

use super::{cuda, GpuError};
use crate::fault::{FaultOp, FaultSection, Faults};
use cudarc::driver::{result, CudaStream, LaunchConfig, PushKernelArg};
use memtune::gpu::{Buffer, Context};
use memtune_core::profile::{Bandwidth, L2Read};
use memtune_core::{DeviceIdentity, MemoryKind};
use memtune_kernels::{random_access::word_hash, zero_copy};
use std::collections::BTreeMap;

/// Timed runs per measurement, after one warm-up.
pub const TIMED_RUNS: usize = 5;
/// Threads per block of the zero-copy kernels.
const BLOCK: u32 = 256;
/// Blocks per SM: 8 x 256 = 2048 threads, full occupancy on sm_80/sm_90 (the seed launches
/// with every block resident).
const BLOCKS_PER_SM: u32 = 8;
/// Words per random-warp segment.
const SEGMENT_WORDS: usize = (zero_copy::SEGMENT_BYTES / 4) as usize;
const RANDOM_WARP_SEED: u64 = 0x5eed_0001;

/// Buffer sizes, bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizes {
    /// Each of the two device buffers of the device-to-device copy.
    pub device: u64,
    /// Each pinned host buffer: the host-to-device / device-to-host copy size and the
    /// zero-copy region.
    pub pinned: u64,
}

impl Sizes {
    pub fn new(quick: bool) -> Sizes {
        if quick {
            Sizes {
                device: 256 << 20,
                pinned: 128 << 20,
            }
        } else {
            Sizes {
                device: 1 << 30,
                pinned: 512 << 20,
            }
        }
    }
}

/// Bytes a device-to-device copy of `bytes` moves: each byte is read and written.
pub fn dtod_bytes_moved(bytes: u64) -> u64 {
    2 * bytes
}

/// Steps per warp so that `warps` warps together read about `n_segments` segments (at
/// least one step each).
pub fn random_warp_steps(n_segments: u64, warps: u64) -> u32 {
    n_segments
        .div_ceil(warps.max(1))
        .clamp(1, u64::from(u32::MAX)) as u32
}

/// Bytes the random-warp kernel reads.
pub fn random_warp_bytes(warps: u64, steps: u32) -> u64 {
    warps * u64::from(steps) * zero_copy::SEGMENT_BYTES
}

/// Fills `words[i] = word_hash(i)` (on all cores) and returns the sum of each 32-word
/// segment; `words.len()` must be a multiple of 32.
pub fn fill_and_segment_sums(words: &mut [u32]) -> Vec<u64> {
    assert_eq!(words.len() % SEGMENT_WORDS, 0, "whole segments only");
    let mut sums = vec![0u64; words.len() / SEGMENT_WORDS];
    let threads = std::thread::available_parallelism()
        .map_or(4, |n| n.get())
        .min(32);
    let segs_per_thread = sums.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        for (chunk, (w, s)) in words
            .chunks_mut(segs_per_thread * SEGMENT_WORDS)
            .zip(sums.chunks_mut(segs_per_thread))
            .enumerate()
        {
            let first = (chunk * segs_per_thread * SEGMENT_WORDS) as u64;
            scope.spawn(move || {
                for (k, (seg, sum)) in w.chunks_mut(SEGMENT_WORDS).zip(s.iter_mut()).enumerate() {
                    let base = first + (k * SEGMENT_WORDS) as u64;
                    let mut acc = 0u64;
                    for (j, word) in seg.iter_mut().enumerate() {
                        *word = word_hash(base + j as u64);
                        acc += u64::from(*word);
                    }
                    *sum = acc;
                }
            });
        }
    });
    sums
}

/// The sum `memtune_zero_copy_random_warp` computes over data whose segment sums are
/// `segment_sums`, for `warps` warps of `steps` steps.
pub fn random_warp_expected(segment_sums: &[u64], warps: u64, steps: u32, seed: u64) -> u64 {
    let n = segment_sums.len() as u64;
    (0..warps)
        .map(|w| {
            zero_copy::random_warp_segments(w, steps, seed, n)
                .map(|s| segment_sums[s as usize])
                .fold(0u64, u64::wrapping_add)
        })
        .fold(0u64, u64::wrapping_add)
}

/// One warm-up call of `run` (its time dropped) then [`TIMED_RUNS`] calls; the median of
/// the times `run` returns.
fn warm_median(mut run: impl FnMut() -> Result<f64, GpuError>) -> Result<f64, GpuError> {
    run()?;
    let times = (0..TIMED_RUNS)
        .map(|_| run())
        .collect::<Result<Vec<_>, _>>()?;
    Ok(memtune::gpu::Timing { runs_ms: times }.median_ms())
}

/// Seconds `enqueue` takes on `stream` ([`memtune::gpu::time_ms`]).
fn time_once(
    stream: &CudaStream,
    enqueue: impl FnOnce() -> Result<(), GpuError>,
) -> Result<f64, GpuError> {
    Ok(memtune::gpu::time_ms(stream, enqueue)? / 1e3)
}

/// Measures the bandwidth section on GPU `ordinal` (its primary context), with the sizes of
/// [`Sizes::new`]`(quick)`: 2 GiB of device memory and 1 GiB of pinned host memory (a
/// quarter of that when `quick`). Release other probe buffers (`Gpu::release`) first.
/// Every value is bytes per second; device-to-device counts bytes read plus written.
/// `faults` fails the allocations or the first copy on purpose (`MEMTUNE_FAULT`).
pub fn measure(
    ordinal: usize,
    identity: &DeviceIdentity,
    quick: bool,
    faults: &Faults,
) -> Result<Bandwidth, GpuError> {
    let sizes = Sizes::new(quick);
    // Declared first so that it outlives (is dropped after) every buffer below.
    let mut gpu = Context::with_identity(ordinal, identity.clone())?;
    let stream = gpu.stream().clone();
    let cu_stream = stream.cu_stream();
    let grid_stride = gpu.function(&zero_copy::SOURCE, &[], zero_copy::GRID_STRIDE)?;
    let block_stride = gpu.function(&zero_copy::SOURCE, &[], zero_copy::BLOCK_STRIDE)?;
    let random_warp = gpu.function(&zero_copy::SOURCE, &[], zero_copy::RANDOM_WARP)?;
    let l2_read = gpu.function(&zero_copy::SOURCE, &[], zero_copy::L2_READ)?;

    // Host data: word_hash of the index, with per-segment sums for the checks.
    faults.check(FaultOp::Alloc, FaultSection::Bandwidth)?;
    let mut host = Buffer::allocate(MemoryKind::Pinned, sizes.pinned as usize)?;
    let segment_sums = fill_and_segment_sums(host_words(&mut host)?);
    let total_sum = segment_sums.iter().copied().fold(0u64, u64::wrapping_add);
    let mut back = Buffer::staging(sizes.pinned as usize)?;
    host_bytes_mut(&mut back)?.fill(0);
    let src = Buffer::allocate(MemoryKind::Device, sizes.device as usize)?;
    let dst = Buffer::allocate(MemoryKind::Device, sizes.device as usize)?;
    let host_view = host.host_bytes().unwrap_or_default();
    let pinned = sizes.pinned as usize;

    // Host to device: into the start of `src`.
    faults.check(FaultOp::Launch, FaultSection::Bandwidth)?;
    let h2d = warm_median(|| {
        time_once(&stream, || {
            // SAFETY: `host` holds `pinned` bytes, `src` at least as many.
            unsafe { result::memcpy_htod_async(src.dptr(), host_view, cu_stream) }
                .map_err(cuda("cuMemcpyHtoDAsync"))
        })
    })?;
    // The rest of `src` gets the same pattern (untimed), so the whole copy source is data.
    let mut offset = sizes.pinned;
    while offset < sizes.device {
        let n = (sizes.device - offset).min(sizes.pinned) as usize;
        // SAFETY: [offset, offset + n) lies inside `src`; n <= pinned bytes.
        unsafe { result::memcpy_htod_async(src.dptr() + offset, &host_view[..n], cu_stream) }
            .map_err(cuda("cuMemcpyHtoDAsync"))?;
        offset += n as u64;
    }

    // Device to device: all of `src` into `dst`.
    let d2d = warm_median(|| {
        time_once(&stream, || {
            // SAFETY: both buffers hold `sizes.device` bytes.
            unsafe {
                result::memcpy_dtod_async(dst.dptr(), src.dptr(), sizes.device as usize, cu_stream)
            }
            .map_err(cuda("cuMemcpyDtoDAsync"))
        })
    })?;

    // Device to host: the start of `dst` into `back`; then the round trip is checked.
    let d2h = warm_median(|| {
        time_once(&stream, || {
            // SAFETY: `back` holds `pinned` bytes, `dst` at least as many.
            unsafe { result::memcpy_dtoh_async(host_bytes_mut(&mut back)?, dst.dptr(), cu_stream) }
                .map_err(cuda("cuMemcpyDtoHAsync"))
        })
    })?;
    stream
        .synchronize()
        .map_err(cuda("waiting for the copies"))?;
    if back.host_bytes().map(|b| &b[..pinned]) != Some(&host_view[..pinned]) {
        return Err(GpuError::Check(
            "host -> device -> device -> host round trip changed the data".into(),
        ));
    }

    // Zero-copy reads of `host` through its mapped address.
    let blocks = identity.sm_count.max(1) * BLOCKS_PER_SM;
    let cfg = LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    let warps = u64::from(blocks) * u64::from(BLOCK / 32);
    let n_vec = sizes.pinned / zero_copy::VECTOR_BYTES;
    let n_segments = segment_sums.len() as u64;
    let steps = random_warp_steps(n_segments, warps);
    let random_expected = random_warp_expected(&segment_sums, warps, steps, RANDOM_WARP_SEED);
    let mut sum = stream
        .alloc_zeros::<u64>(1)
        .map_err(cuda("allocating the sum"))?;
    let host_dptr = host.dptr();
    let mut zero_copy_read = BTreeMap::new();
    for (key, function, bytes, expected) in [
        ("grid_stride", &grid_stride, sizes.pinned, total_sum),
        ("block_stride", &block_stride, sizes.pinned, total_sum),
        (
            "random_warp",
            &random_warp,
            random_warp_bytes(warps, steps),
            random_expected,
        ),
    ] {
        let seconds = warm_median(|| {
            stream
                .memset_zeros(&mut sum)
                .map_err(cuda("zeroing the sum"))?;
            let t = time_once(&stream, || {
                let mut launch = stream.launch_builder(function);
                launch.arg(&host_dptr);
                if key == "random_warp" {
                    launch.arg(&n_segments).arg(&steps).arg(&RANDOM_WARP_SEED);
                } else {
                    launch.arg(&n_vec);
                }
                launch.arg(&mut sum);
                // SAFETY: grid/block stride read n_vec 16-byte vectors, random warp reads
                // segments < n_segments: all inside `host`; `sum` is one word.
                unsafe { launch.launch(cfg) }
                    .map(|_| ())
                    .map_err(cuda(format!("launching the {key} zero-copy read")))
            })?;
            let got = stream.clone_dtoh(&sum).map_err(cuda("reading the sum"))?[0];
            if got != expected {
                return Err(GpuError::Check(format!(
                    "zero-copy {key} read summed {got}, the CPU reference {expected}"
                )));
            }
            Ok(t)
        })?;
        zero_copy_read.insert(key.to_string(), bytes as f64 / seconds);
    }

    // L2 reads: the start of `src`, which holds the host pattern.
    let l2 = match l2_region(identity.l2_bytes, sizes.pinned) {
        Some((region, repeats)) => {
            let words = &host_view[..region as usize];
            let expected = words
                .chunks_exact(4)
                .map(|w| u64::from(u32::from_le_bytes([w[0], w[1], w[2], w[3]])))
                .fold(0u64, u64::wrapping_add)
                .wrapping_mul(u64::from(repeats));
            let n_vec = region / zero_copy::VECTOR_BYTES;
            let src_dptr = src.dptr();
            let seconds = warm_median(|| {
                stream
                    .memset_zeros(&mut sum)
                    .map_err(cuda("zeroing the sum"))?;
                let t = time_once(&stream, || {
                    let mut launch = stream.launch_builder(&l2_read);
                    launch
                        .arg(&src_dptr)
                        .arg(&n_vec)
                        .arg(&repeats)
                        .arg(&mut sum);
                    // SAFETY: reads n_vec 16-byte vectors of `src`, which holds more;
                    // `sum` is one word.
                    unsafe { launch.launch(cfg) }
                        .map(|_| ())
                        .map_err(cuda("launching the L2 read"))
                })?;
                let got = stream.clone_dtoh(&sum).map_err(cuda("reading the sum"))?[0];
                if got != expected {
                    return Err(GpuError::Check(format!(
                        "L2 read summed {got}, the CPU reference {expected}"
                    )));
                }
                Ok(t)
            })?;
            Some(L2Read {
                bytes_per_second: (region * u64::from(repeats)) as f64 / seconds,
                region_bytes: region,
                repeats,
            })
        }
        None => None,
    };

    drop((host, back, src, dst));
    drop(gpu);
    Ok(Bandwidth {
        device_to_device: dtod_bytes_moved(sizes.device) as f64 / d2d,
        host_to_device: sizes.pinned as f64 / h2d,
        device_to_host: sizes.pinned as f64 / d2h,
        zero_copy_read,
        l2_read: l2,
    })
}

/// Bytes read per L2 measurement: enough for a launch of about a millisecond on a GPU
/// whose L2 serves 4-8 TB/s.
const L2_READ_BYTES: u64 = 4 << 30;

/// The region the L2 read covers and how many times: a quarter of the L2 (well inside
/// it, and inside the near partition of a chip with two), whole 512-byte warp steps, at
/// most `limit` (the pattern's bytes); `None` without an L2 of at least 64 KiB.
pub fn l2_region(l2_bytes: u64, limit: u64) -> Option<(u64, u32)> {
    let region = (l2_bytes / 4).min(limit) / 512 * 512;
    (region >= 16 << 10).then(|| {
        let repeats = L2_READ_BYTES.div_ceil(region).clamp(1, 1 << 16) as u32;
        (region, repeats)
    })
}

fn host_words(b: &mut Buffer) -> Result<&mut [u32], GpuError> {
    b.host_words_mut()
        .ok_or_else(|| GpuError::Check("pinned buffer without a host view".into()))
}

fn host_bytes_mut(b: &mut Buffer) -> Result<&mut [u8], GpuError> {
    b.host_bytes_mut()
        .ok_or_else(|| GpuError::Check("pinned buffer without a host view".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_l2_read_covers_a_quarter_of_the_l2_in_whole_warp_steps() {
        // An H100's 50 MiB L2: 12.5 MiB read 328 times (4 GiB).
        let (region, repeats) = l2_region(50 << 20, 512 << 20).expect("an L2");
        assert_eq!(region, 50 << 18);
        assert_eq!(repeats, 328);
        assert_eq!(region % 512, 0);
        // Never past the pattern's bytes; no L2 (or a tiny one), no measurement.
        assert_eq!(l2_region(1 << 30, 8 << 20).map(|r| r.0), Some(8 << 20));
        assert_eq!(l2_region(0, 512 << 20), None);
        assert_eq!(l2_region(32 << 10, 512 << 20), None);
        // A 1.5 MiB L2 (K80): 384 KiB, repeats capped.
        let (region, repeats) = l2_region(1536 << 10, 512 << 20).expect("an L2");
        assert_eq!((region, repeats), (384 << 10, 10923));
    }

    #[test]
    fn sizes_follow_the_brief() {
        assert_eq!(Sizes::new(false).device, 1 << 30);
        assert_eq!(Sizes::new(false).pinned, 512 << 20);
        assert_eq!(Sizes::new(true).device, 256 << 20);
        assert_eq!(Sizes::new(true).pinned, 128 << 20);
        for quick in [false, true] {
            let s = Sizes::new(quick);
            // Whole 16-byte vectors and 128-byte segments; the device buffer a multiple.
            assert_eq!(s.pinned % zero_copy::SEGMENT_BYTES, 0);
            assert_eq!(s.device % s.pinned, 0);
        }
    }

    #[test]
    fn dtod_counts_read_and_write() {
        assert_eq!(dtod_bytes_moved(1 << 30), 2 << 30);
    }

    #[test]
    fn random_warp_reads_about_the_buffer() {
        let warps = 132 * 8 * 8;
        let n_segments = (512u64 << 20) / 128;
        let steps = random_warp_steps(n_segments, warps);
        let bytes = random_warp_bytes(warps, steps);
        assert!(bytes >= 512 << 20);
        assert!(bytes < (512 << 20) + warps * 128);
        assert_eq!(random_warp_steps(10, 100), 1);
        assert_eq!(random_warp_steps(10, 0), 10);
    }

    #[test]
    fn fill_matches_the_hash_and_sums_segments() {
        let mut words = vec![0u32; 32 * 1000];
        let sums = fill_and_segment_sums(&mut words);
        assert_eq!(sums.len(), 1000);
        for (i, w) in words.iter().enumerate() {
            assert_eq!(*w, word_hash(i as u64));
        }
        for (s, sum) in sums.iter().enumerate() {
            let want: u64 = (0..32)
                .map(|j| u64::from(word_hash((s * 32 + j) as u64)))
                .sum();
            assert_eq!(*sum, want);
        }
        assert!(words.iter().any(|&w| w != 0));
    }

    #[test]
    fn random_warp_expected_follows_the_lcg() {
        let mut words = vec![0u32; 32 * 64];
        let sums = fill_and_segment_sums(&mut words);
        let (warps, steps, seed) = (5u64, 7u32, 42u64);
        // Word-level simulation of the kernel: every lane of every warp, every step.
        let mut want = 0u64;
        for w in 0..warps {
            for s in zero_copy::random_warp_segments(w, steps, seed, 64) {
                assert!(s < 64);
                for lane in 0..32 {
                    want += u64::from(words[(s * 32 + lane) as usize]);
                }
            }
        }
        assert_eq!(random_warp_expected(&sums, warps, steps, seed), want);
        // Different warps walk different segments.
        let a: Vec<u64> = zero_copy::random_warp_segments(0, 16, seed, 1 << 20).collect();
        let b: Vec<u64> = zero_copy::random_warp_segments(1, 16, seed, 1 << 20).collect();
        assert_ne!(a, b);
    }

    #[test]
    fn warm_median_drops_the_warm_up() {
        let mut calls = 0;
        let m = warm_median(|| {
            calls += 1;
            Ok(if calls == 1 { 100.0 } else { calls as f64 })
        })
        .unwrap();
        assert_eq!(calls, 1 + TIMED_RUNS);
        assert_eq!(m, 4.0); // median of 2..=6
    }

    #[test]
    fn full_size_fill_total_fits_u64() {
        // 512 MiB of u32 words, each below 2^32: the sum stays below 2^59.
        let words = (512u64 << 20) / 4;
        assert!(words.checked_mul(u64::from(u32::MAX)).is_some());
    }
}
