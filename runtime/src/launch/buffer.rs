//! One allocation the GPU reads and writes through one device address: plain device
//! memory, or page-locked host memory mapped into the GPU (zero-copy). Freed on drop.

use std::ffi::c_void;

use cudarc::driver::{result, sys, DeviceRepr, ValidAsZeroBits};
use memtune_core::MemoryKind;

use super::LaunchError;

pub(crate) struct Buffer {
    /// `Device` or `Pinned`; never `Managed`.
    kind: MemoryKind,
    /// The address kernels use.
    pub(crate) dptr: u64,
    /// The host address of pinned memory (null for device memory).
    host: *mut c_void,
    bytes: usize,
}

impl Buffer {
    /// `bytes` (at least 1) of `kind`. The caller has bound the context to this thread
    /// and, for device memory, checked that it fits.
    pub(crate) fn allocate(kind: MemoryKind, bytes: usize) -> Result<Buffer, LaunchError> {
        let bytes = bytes.max(1);
        match kind {
            MemoryKind::Device => {
                // SAFETY: a plain allocation; the pointer is owned by the Buffer and freed
                // once in Drop.
                let dptr =
                    unsafe { result::malloc_sync(bytes) }.map_err(super::cuda("cuMemAlloc"))?;
                Ok(Buffer {
                    kind,
                    dptr,
                    host: std::ptr::null_mut(),
                    bytes,
                })
            }
            MemoryKind::Pinned => {
                // SAFETY: as above; the host pointer is freed once, in Drop or here.
                let host = unsafe { result::malloc_host(bytes, sys::CU_MEMHOSTALLOC_DEVICEMAP) }
                    .map_err(super::cuda("cuMemHostAlloc"))?;
                let mut dptr = 0;
                // SAFETY: `host` was allocated with CU_MEMHOSTALLOC_DEVICEMAP just above.
                let mapped =
                    unsafe { sys::cuMemHostGetDevicePointer_v2(&mut dptr, host, 0) }.result();
                if let Err(e) = mapped {
                    // SAFETY: allocated above, not yet owned by a Buffer.
                    let _ = unsafe { result::free_host(host) };
                    return Err(super::cuda("cuMemHostGetDevicePointer")(e));
                }
                Ok(Buffer {
                    kind,
                    dptr,
                    host,
                    bytes,
                })
            }
            MemoryKind::Managed => Err(LaunchError::UnsupportedMemory { kind }),
        }
    }

    /// A buffer of `kind` holding a copy of `data`.
    pub(crate) fn upload<T: Copy>(kind: MemoryKind, data: &[T]) -> Result<Buffer, LaunchError> {
        let buffer = Buffer::allocate(kind, std::mem::size_of_val(data))?;
        buffer.write(data)?;
        Ok(buffer)
    }

    /// Copies `data` to the start of the buffer (synchronous).
    pub(crate) fn write<T: Copy>(&self, data: &[T]) -> Result<(), LaunchError> {
        let len = std::mem::size_of_val(data);
        assert!(len <= self.bytes, "write past the end of a launch buffer");
        match self.kind {
            // SAFETY: `len` bytes fit the allocation (checked above).
            MemoryKind::Device => unsafe { result::memcpy_htod_sync(self.dptr, data) }
                .map_err(super::cuda("cuMemcpyHtoD")),
            _ => {
                // SAFETY: `host` holds `bytes` >= `len` bytes, page-aligned, and no kernel
                // runs on it now (every launch is synchronised before returning).
                unsafe {
                    std::ptr::copy_nonoverlapping(data.as_ptr().cast::<u8>(), self.host.cast(), len)
                };
                Ok(())
            }
        }
    }

    /// Copies `bytes` bytes at offset `from` to offset `to` within the buffer; the ranges
    /// must not overlap (synchronous).
    pub(crate) fn copy_within(
        &self,
        from: usize,
        to: usize,
        bytes: usize,
    ) -> Result<(), LaunchError> {
        assert!(
            from.max(to) + bytes <= self.bytes && from.abs_diff(to) >= bytes,
            "overlapping or out-of-bounds copy within a launch buffer"
        );
        match self.kind {
            // SAFETY: both ranges lie in the allocation and do not overlap (checked above).
            MemoryKind::Device => unsafe {
                result::memcpy_dtod_sync(self.dptr + to as u64, self.dptr + from as u64, bytes)
            }
            .map_err(super::cuda("cuMemcpyDtoD")),
            _ => {
                // SAFETY: as above, in host memory no kernel is using now.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        self.host.cast::<u8>().add(from),
                        self.host.cast::<u8>().add(to),
                        bytes,
                    )
                };
                Ok(())
            }
        }
    }

    /// Copies the start of the buffer into `out` (synchronous; the caller has synchronised
    /// the stream that wrote it).
    pub(crate) fn read<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        out: &mut [T],
    ) -> Result<(), LaunchError> {
        let len = std::mem::size_of_val(out);
        assert!(len <= self.bytes, "read past the end of a launch buffer");
        match self.kind {
            // SAFETY: `len` bytes fit the allocation (checked above).
            MemoryKind::Device => unsafe { result::memcpy_dtoh_sync(out, self.dptr) }
                .map_err(super::cuda("cuMemcpyDtoH")),
            _ => {
                // SAFETY: as in `write`; every T read here is plain data (integers or
                // floats) for which any bit pattern is valid.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        self.host.cast::<u8>(),
                        out.as_mut_ptr().cast(),
                        len,
                    )
                };
                Ok(())
            }
        }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: each pointer came from the matching allocation call and is freed once.
        // Errors cannot be reported from Drop.
        unsafe {
            let _ = match self.kind {
                MemoryKind::Pinned => result::free_host(self.host),
                _ => result::free_sync(self.dptr),
            };
        }
    }
}
