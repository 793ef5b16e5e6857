//! What the parts of a several-GPU analysis share: where each part's sorted data lies on
//! its GPU, and its copy to another GPU.

use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaStream, CudaViewMut, DevicePtrMut};

use crate::gpu::{cuda, Error};

/// Where a part's sorted data lies on its GPU, for the earlier parts to copy.
#[derive(Debug, Clone, Copy)]
pub(super) struct Peer {
    /// The owning context (`CUcontext`), as an address.
    pub(super) ctx: usize,
    pub(super) ptrs: [u64; 2],
    pub(super) len: usize,
}

/// Copies `peer.ptrs[which]` (`peer.len` values of `T`) into `dst` on this GPU (context
/// `ctx`), device to device; `dst` holds at least as many.
pub(super) fn peer_copy<T>(
    stream: &Arc<CudaStream>,
    ctx: usize,
    dst: &mut CudaViewMut<'_, T>,
    peer: &Peer,
    which: usize,
) -> Result<(), Error> {
    if peer.len > dst.len() {
        // The buffers are sized for the largest later part.
        return Err(too_short("cuMemcpyPeerAsync into a buffer"));
    }
    let (d, _guard) = dst.device_ptr_mut(stream);
    // SAFETY: `dst` holds at least `len` values of T on this context; the peer's buffer holds
    // `len` on its context and lives until the barrier after this phase; the copy is
    // synchronised before then.
    unsafe {
        cudarc::driver::result::memcpy_peer_async(
            ctx as cudarc::driver::sys::CUcontext,
            d,
            peer.ctx as cudarc::driver::sys::CUcontext,
            peer.ptrs[which],
            peer.len * std::mem::size_of::<T>(),
            stream.cu_stream(),
        )
    }
    .map_err(cuda("cuMemcpyPeerAsync"))
}

/// A buffer of the workspace shorter than the data meant for it: an internal error,
/// reported as the driver's invalid value.
pub(super) fn too_short(what: &'static str) -> Error {
    cuda(format!("{what} (too short)"))(cudarc::driver::DriverError(
        cudarc::driver::sys::CUresult::CUDA_ERROR_INVALID_VALUE,
    ))
}

/// Lets this thread's context read the memory of context `peer` directly (over NVLink
/// where there is one), so that copies from it take the direct path. Best effort: without
/// peer access (or with it already on) copies still work, through the host.
pub(super) fn enable_peer_access(peer: usize) {
    // SAFETY: `peer` is a live context of another worker (they are dropped only after the
    // last barrier); the call only changes this context's mappings.
    let _ = unsafe {
        cudarc::driver::sys::cuCtxEnablePeerAccess(peer as cudarc::driver::sys::CUcontext, 0)
    };
}

pub(super) fn put<T>(slot: &Mutex<Option<T>>, value: T) {
    if let Ok(mut s) = slot.lock() {
        *s = Some(value);
    }
}

pub(super) fn take<T: Copy>(slot: &Mutex<Option<T>>) -> Option<T> {
    slot.lock().ok().and_then(|s| *s)
}
