//! A part's trace copied to its GPU through a ring of pinned buffers: host threads fill
//! one buffer while the GPU copies the ones before it. The driver stages pageable memory
//! on one thread; several threads and page-locked buffers copy a large trace several
//! times faster. The distance counts come back through the same buffers.

use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::{
    CudaEvent, CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr, DevicePtrMut, DeviceRepr,
    PinnedHostSlice,
};

use crate::gpu::{cuda, Context, Error};

/// References a pinned buffer holds (32 MiB).
const CHUNK: usize = 4 << 20;
/// Pinned buffers in the ring.
const BUFFERS: usize = 4;
/// Host threads filling one buffer, at most.
const MOST_THREADS: usize = 8;

/// Pinned buffers, each with the event recorded after its last copy to the GPU.
pub(super) struct Ring {
    buffers: Vec<(PinnedHostSlice<u64>, CudaEvent)>,
    threads: usize,
}

impl Ring {
    /// A ring for `n` references (no buffers when one pageable copy is as good: a trace of
    /// one chunk or less), filled by at most `threads` host threads.
    pub(super) fn new(gpu: &Context, n: usize, threads: usize) -> Result<Ring, Error> {
        let ctx = gpu.cuda_context();
        let count = if n > CHUNK {
            n.div_ceil(CHUNK).min(BUFFERS)
        } else {
            0
        };
        let mut buffers = Vec::with_capacity(count);
        for _ in 0..count {
            // SAFETY: the buffer is written in full (up to the length copied) before any copy
            // reads it.
            let pinned =
                unsafe { ctx.alloc_pinned::<u64>(CHUNK) }.map_err(cuda("cuMemHostAlloc"))?;
            let done = ctx.new_event(None).map_err(cuda("cuEventCreate"))?;
            buffers.push((pinned, done));
        }
        Ok(Ring {
            buffers,
            threads: threads.clamp(1, MOST_THREADS),
        })
    }

    /// Copies `items` into `dst` (as long) and calls `arrived` once the copy of each chunk
    /// is enqueued: what it launches on the stream runs after that copy, beside the next
    /// chunk's. With `staging` (as many words as `items`, on the GPU), a chunk whose items
    /// all lie within 2^31 of `items[0]` goes up as 32-bit offsets ([`pack`]) into
    /// `staging`, half the bytes, and `arrived` gets them to widen into `dst`; other chunks
    /// (and all after the first such) go up as they are. Returns when everything is copied
    /// and run.
    pub(super) fn upload(
        &mut self,
        stream: &Arc<CudaStream>,
        items: &[u64],
        dst: &mut CudaSlice<u64>,
        mut staging: Option<&mut CudaViewMut<'_, u32>>,
        mut arrived: impl FnMut(Arrived<'_>) -> Result<(), Error>,
    ) -> Result<(), Error> {
        if self.buffers.is_empty() {
            stream
                .memcpy_htod(items, dst)
                .map_err(cuda("cuMemcpyHtoD"))?;
            arrived(Arrived::Raw(dst.slice(0..items.len())))?;
            return stream.synchronize().map_err(cuda("cuStreamSynchronize"));
        }
        let first = items.first().copied().unwrap_or(0);
        let ring = self.buffers.len();
        let threads = self.threads;
        for (c, chunk) in items.chunks(CHUNK).enumerate() {
            let (pinned, done) = &mut self.buffers[c % ring];
            // The buffer's previous copy has finished before it is refilled.
            done.synchronize().map_err(cuda("cuEventSynchronize"))?;
            let host = pinned.as_mut_slice().map_err(cuda("cuEventSynchronize"))?;
            let range = c * CHUNK..c * CHUNK + chunk.len();
            let packed = match staging.as_deref_mut() {
                Some(staged) if pack(&mut words(host)[..chunk.len()], chunk, first, threads) => {
                    let mut view = staged.slice_mut(range.clone());
                    enqueue(stream, &mut view, &words(host)[..chunk.len()])?;
                    true
                }
                _ => false,
            };
            if !packed {
                // Items too far apart to pack: the rest of the trace goes up as it is.
                staging = None;
                fill(&mut host[..chunk.len()], chunk, threads);
                enqueue(
                    stream,
                    &mut dst.slice_mut(range.clone()),
                    &host[..chunk.len()],
                )?;
            }
            done.record(stream).map_err(cuda("cuEventRecord"))?;
            match staging.as_deref() {
                Some(staged) if packed => arrived(Arrived::Packed {
                    words: staged.slice(range.clone()),
                    items: dst.slice_mut(range),
                })?,
                _ => arrived(Arrived::Raw(dst.slice(range)))?,
            }
        }
        stream.synchronize().map_err(cuda("cuStreamSynchronize"))
    }

    /// The first `len` values of `src` in host memory, in `out` when it is long enough
    /// (whatever it holds), else in fresh memory: each buffer's copy from the GPU is
    /// copied out by the host threads while the GPU copies the next ones (one pageable
    /// copy when there are no buffers).
    pub(super) fn download(
        &mut self,
        stream: &Arc<CudaStream>,
        src: &CudaSlice<u32>,
        len: usize,
        out: Vec<u32>,
    ) -> Result<Vec<u32>, Error> {
        if len == 0 {
            return Ok(Vec::new());
        }
        if self.buffers.is_empty() {
            return stream
                .clone_dtoh(&src.slice(..len))
                .map_err(cuda("cuMemcpyDtoH"));
        }
        // Values of u32 a buffer holds.
        let per = 2 * CHUNK;
        let chunks = len.div_ceil(per);
        let ring = self.buffers.len();
        let part = |c: usize| c * per..((c + 1) * per).min(len);
        let mut out = if out.len() >= len {
            out
        } else {
            vec![0u32; len]
        };
        out.truncate(len);
        for c in 0..chunks.min(ring) {
            self.copy_back(stream, src, part(c), c)?;
        }
        for c in 0..chunks {
            let (pinned, done) = &mut self.buffers[c % ring];
            done.synchronize().map_err(cuda("cuEventSynchronize"))?;
            let host = words(pinned.as_mut_slice().map_err(cuda("cuEventSynchronize"))?);
            let range = part(c);
            fill(&mut out[range.clone()], &host[..range.len()], self.threads);
            if c + ring < chunks {
                self.copy_back(stream, src, part(c + ring), c % ring)?;
            }
        }
        Ok(out)
    }

    /// Enqueues the copy of `src[range]` into buffer `b` and records its event.
    fn copy_back(
        &mut self,
        stream: &Arc<CudaStream>,
        src: &CudaSlice<u32>,
        range: Range<usize>,
        b: usize,
    ) -> Result<(), Error> {
        let (pinned, done) = &mut self.buffers[b];
        let host = words(pinned.as_mut_slice().map_err(cuda("cuEventSynchronize"))?);
        let len = range.len();
        let view = src.slice(range);
        let (ptr, _guard) = view.device_ptr(stream);
        // SAFETY: `host[..len]` is page-locked, and nothing reads or writes it until `done`,
        // recorded just after, has completed; `ptr` holds `len` values on this context.
        unsafe {
            cudarc::driver::result::memcpy_dtoh_async(&mut host[..len], ptr, stream.cu_stream())
        }
        .map_err(cuda("cuMemcpyDtoHAsync"))?;
        done.record(stream).map_err(cuda("cuEventRecord"))
    }
}

/// A chunk on the GPU, as [`Ring::upload`] hands it over.
pub(super) enum Arrived<'a> {
    /// The items themselves, in `dst`.
    Raw(CudaView<'a, u64>),
    /// The items as 32-bit offsets (`item - first + 2^31`, modulo 2^64), for a kernel to
    /// widen into `items`.
    Packed {
        words: CudaView<'a, u32>,
        items: CudaViewMut<'a, u64>,
    },
}

/// Enqueues the copy of `host` (page-locked) into `dst` on `stream`.
fn enqueue<T: DeviceRepr>(
    stream: &Arc<CudaStream>,
    dst: &mut CudaViewMut<'_, T>,
    host: &[T],
) -> Result<(), Error> {
    let (ptr, _guard) = dst.device_ptr_mut(stream);
    // SAFETY: `host` is page-locked and, by the caller, stays alive and untouched until
    // an event recorded after this copy has completed; `ptr` holds `host.len()` values on
    // this stream's context.
    unsafe { cudarc::driver::result::memcpy_htod_async(ptr, host, stream.cu_stream()) }
        .map_err(cuda("cuMemcpyHtoDAsync"))
}

/// Offset added to `item - first` so that items on either side of `first` pack.
const PACK_OFFSET: u64 = 1 << 31;

/// Writes `src[k] - first + 2^31` (modulo 2^64) into `dst[k]` on up to `threads` threads;
/// false (and `dst` partly written) when some item does not fit in 32 bits that way.
fn pack(dst: &mut [u32], src: &[u64], first: u64, threads: usize) -> bool {
    let per = src.len().div_ceil(threads.max(1)).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = dst
            .chunks_mut(per)
            .zip(src.chunks(per))
            .map(|(d, c)| s.spawn(move || pack_one(d, c, first)))
            .collect();
        handles
            .into_iter()
            .all(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
    })
}

/// [`pack`] on one thread, a block of values at a time (a loop the compiler vectorises).
fn pack_one(dst: &mut [u32], src: &[u64], first: u64) -> bool {
    for (d, c) in dst.chunks_mut(4096).zip(src.chunks(4096)) {
        let mut high = 0u64;
        for (w, &x) in d.iter_mut().zip(c) {
            let v = x.wrapping_sub(first).wrapping_add(PACK_OFFSET);
            high |= v >> 32;
            *w = v as u32;
        }
        if high != 0 {
            return false;
        }
    }
    true
}

/// The item a packed word stands for (what `memtune_reuse_widen` computes).
#[cfg(test)]
fn widen(word: u32, first: u64) -> u64 {
    first
        .wrapping_add(u64::from(word))
        .wrapping_sub(PACK_OFFSET)
}

/// A buffer of `u64` as twice as many `u32`.
fn words(buf: &mut [u64]) -> &mut [u32] {
    // SAFETY: the same bytes, exclusively borrowed for as long; `u32` is aligned at most
    // as `u64` is, and every bit pattern is a valid `u32`.
    unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast::<u32>(), 2 * buf.len()) }
}

/// `dst.copy_from_slice(src)` on up to `threads` threads.
fn fill<T: Copy + Send + Sync>(dst: &mut [T], src: &[T], threads: usize) {
    let per = src.len().div_ceil(threads.max(1)).max(1);
    std::thread::scope(|s| {
        for (d, c) in dst.chunks_mut(per).zip(src.chunks(per)) {
            s.spawn(move || d.copy_from_slice(c));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_of_u64_reads_as_twice_as_many_u32() {
        let mut buf = [0x0000_0002_0000_0001u64, 0x0000_0004_0000_0003];
        let w = words(&mut buf);
        assert_eq!(w.len(), 4);
        w[3] = 9;
        assert_eq!(buf[1] >> 32, 9);
    }

    #[test]
    fn packed_words_widen_back_to_the_items_on_either_side_of_the_first() {
        let first = 0x7f00_1234_5678u64;
        let src: Vec<u64> = [
            first,
            first - (1 << 31),
            first + (1 << 31) - 1,
            first + 64,
            first - 4096,
        ]
        .into_iter()
        .cycle()
        .take(10_001)
        .collect();
        for threads in [1, 3, 8] {
            let mut dst = vec![0u32; src.len()];
            assert!(pack(&mut dst, &src, first, threads), "{threads} threads");
            let back: Vec<u64> = dst.iter().map(|&w| widen(w, first)).collect();
            assert_eq!(back, src, "{threads} threads");
        }
        // Near the ends of the u64 range, the offsets wrap and still pack.
        let low = [0u64, 5, u64::MAX - 3];
        let mut dst = [0u32; 3];
        assert!(pack(&mut dst, &low, 1, 1));
        assert_eq!(dst.map(|w| widen(w, 1)), low);
    }

    #[test]
    fn an_item_2_to_the_31_or_more_away_does_not_pack() {
        let first = 1u64 << 40;
        for far in [first + (1 << 31), first - (1 << 31) - 1, 0, u64::MAX] {
            // Anywhere in the chunk, on any thread.
            for at in [0, 5000, 9999] {
                let mut src = vec![first + 7; 10_000];
                src[at] = far;
                let mut dst = vec![0u32; src.len()];
                for threads in [1, 4] {
                    assert!(
                        !pack(&mut dst, &src, first, threads),
                        "{far:#x} at {at}, {threads} threads"
                    );
                }
            }
        }
    }

    #[test]
    fn fill_copies_every_value_on_any_number_of_threads() {
        let src: Vec<u64> = (0..1001).map(|i| i * 7 + 3).collect();
        for threads in [0, 1, 3, 8, 2000] {
            let mut dst = vec![0; src.len()];
            fill(&mut dst, &src, threads);
            assert_eq!(dst, src, "{threads} threads");
        }
    }
}
