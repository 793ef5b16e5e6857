//! A part's trace copied to its GPU through a ring of pinned buffers: host threads fill
//! one buffer while the GPU copies the ones before it. The driver stages pageable memory
//! on one thread; several threads and page-locked buffers copy a large trace several
//! times faster.

use std::sync::Arc;

use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, DevicePtrMut, PinnedHostSlice};

use super::kernels::zeros;
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

    /// `items` on the GPU of `stream`, copied when the call returns.
    pub(super) fn upload(
        &mut self,
        stream: &Arc<CudaStream>,
        items: &[u64],
    ) -> Result<CudaSlice<u64>, Error> {
        if self.buffers.is_empty() {
            return stream.clone_htod(items).map_err(cuda("cuMemcpyHtoD"));
        }
        let mut dst = zeros::<u64>(stream, items.len())?;
        let ring = self.buffers.len();
        for (c, chunk) in items.chunks(CHUNK).enumerate() {
            let (pinned, done) = &mut self.buffers[c % ring];
            // The buffer's previous copy has finished before it is refilled.
            done.synchronize().map_err(cuda("cuEventSynchronize"))?;
            let host = pinned.as_mut_slice().map_err(cuda("cuEventSynchronize"))?;
            fill(&mut host[..chunk.len()], chunk, self.threads);
            let mut view = dst.slice_mut(c * CHUNK..c * CHUNK + chunk.len());
            let (ptr, _guard) = view.device_ptr_mut(stream);
            // SAFETY: `host[..len]` is page-locked and stays alive and untouched until `done`,
            // recorded just after, has completed; `ptr` holds `len` values on this stream's
            // context.
            unsafe {
                cudarc::driver::result::memcpy_htod_async(
                    ptr,
                    &host[..chunk.len()],
                    stream.cu_stream(),
                )
            }
            .map_err(cuda("cuMemcpyHtoDAsync"))?;
            done.record(stream).map_err(cuda("cuEventRecord"))?;
        }
        stream.synchronize().map_err(cuda("cuStreamSynchronize"))?;
        Ok(dst)
    }
}

/// `dst.copy_from_slice(src)` on up to `threads` threads.
fn fill(dst: &mut [u64], src: &[u64], threads: usize) {
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
    fn fill_copies_every_value_on_any_number_of_threads() {
        let src: Vec<u64> = (0..1001).map(|i| i * 7 + 3).collect();
        for threads in [0, 1, 3, 8, 2000] {
            let mut dst = vec![0; src.len()];
            fill(&mut dst, &src, threads);
            assert_eq!(dst, src, "{threads} threads");
        }
    }
}
