//! One allocation per memory kind, freed on drop.

use cudarc::driver::{result, sys};
use memtune_core::MemoryKind;
use std::ffi::c_void;

/// A buffer the GPU can read through one device address.
pub struct Buffer {
    kind: MemoryKind,
    /// The address kernels use.
    pub dptr: u64,
    /// The host address of pinned memory (freed with cuMemFreeHost).
    host: *mut c_void,
}

impl Buffer {
    /// Allocates `bytes` of `kind`: a plain device allocation, page-locked host memory
    /// mapped into the GPU, or managed memory (populated later, on the GPU, by first touch).
    pub fn allocate(kind: MemoryKind, bytes: u64) -> Result<Buffer, result::DriverError> {
        let size = bytes as usize;
        let mut host = std::ptr::null_mut();
        // SAFETY: plain allocation calls; every pointer they return is owned by this Buffer
        // and freed exactly once in Drop.
        let dptr = unsafe {
            match kind {
                MemoryKind::Device => result::malloc_sync(size)?,
                MemoryKind::Managed => {
                    result::malloc_managed(size, sys::CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL)?
                }
                MemoryKind::Pinned => {
                    host = result::malloc_host(size, sys::CU_MEMHOSTALLOC_DEVICEMAP)?;
                    let mut d = 0;
                    if let Err(e) = sys::cuMemHostGetDevicePointer_v2(&mut d, host, 0).result() {
                        let _ = result::free_host(host);
                        return Err(e);
                    }
                    d
                }
            }
        };
        Ok(Buffer { kind, dptr, host })
    }
}

impl Buffer {
    pub fn kind_matches(&self, kind: MemoryKind) -> bool {
        self.kind == kind
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: each pointer came from the matching allocation call and is freed once.
        // Errors cannot be reported from Drop; the context's teardown reclaims the rest.
        unsafe {
            let _ = match self.kind {
                MemoryKind::Pinned => result::free_host(self.host),
                MemoryKind::Device | MemoryKind::Managed => result::free_sync(self.dptr),
            };
        }
    }
}
