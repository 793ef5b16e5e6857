//! One allocation the GPU reaches through one device address: plain device memory,
//! page-locked host memory (mapped into the GPU for zero-copy access, or not, as a staging
//! area for copies), or managed memory. Freed on drop.

use std::ffi::c_void;

use cudarc::driver::{result, sys, DeviceRepr, ValidAsZeroBits};
use memtune_core::MemoryKind;

use super::{cuda, Error};

pub struct Buffer {
    kind: MemoryKind,
    /// The address kernels use (0 for unmapped pinned memory).
    dptr: u64,
    /// The host address of pinned memory (null otherwise).
    host: *mut c_void,
    bytes: usize,
}

impl Buffer {
    /// `bytes` (at least 1) of `kind`; pinned memory is mapped into the GPU. The caller has
    /// bound the context to this thread (and, for device memory, may check that it fits
    /// with [`super::Context::check_free`]). Managed memory is populated by first touch.
    pub fn allocate(kind: MemoryKind, bytes: usize) -> Result<Buffer, Error> {
        let bytes = bytes.max(1);
        let failed = |source| Error::Allocation {
            kind,
            bytes: bytes as u64,
            source,
        };
        let mut buffer = Buffer {
            kind,
            dptr: 0,
            host: std::ptr::null_mut(),
            bytes,
        };
        // SAFETY: plain allocation calls; every pointer they return is owned by `buffer`
        // and freed exactly once in Drop.
        unsafe {
            match kind {
                MemoryKind::Device => buffer.dptr = result::malloc_sync(bytes).map_err(failed)?,
                MemoryKind::Managed => {
                    buffer.dptr =
                        result::malloc_managed(bytes, sys::CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL)
                            .map_err(failed)?
                }
                MemoryKind::Pinned => {
                    buffer.host = result::malloc_host(bytes, sys::CU_MEMHOSTALLOC_DEVICEMAP)
                        .map_err(failed)?;
                    sys::cuMemHostGetDevicePointer_v2(&mut buffer.dptr, buffer.host, 0)
                        .result()
                        .map_err(cuda("cuMemHostGetDevicePointer"))?;
                }
            }
        }
        Ok(buffer)
    }

    /// `bytes` of page-locked host memory not mapped into the GPU: the host side of
    /// asynchronous copies.
    pub fn staging(bytes: usize) -> Result<Buffer, Error> {
        let bytes = bytes.max(1);
        // SAFETY: owned by the returned Buffer and freed once in Drop.
        let host =
            unsafe { result::malloc_host(bytes, 0) }.map_err(|source| Error::Allocation {
                kind: MemoryKind::Pinned,
                bytes: bytes as u64,
                source,
            })?;
        Ok(Buffer {
            kind: MemoryKind::Pinned,
            dptr: 0,
            host,
            bytes,
        })
    }

    /// A buffer of `kind` holding a copy of `data`.
    pub fn upload<T: Copy>(kind: MemoryKind, data: &[T]) -> Result<Buffer, Error> {
        let buffer = Buffer::allocate(kind, std::mem::size_of_val(data))?;
        buffer.write(data)?;
        Ok(buffer)
    }

    pub fn kind(&self) -> MemoryKind {
        self.kind
    }

    /// The address kernels use.
    pub fn dptr(&self) -> u64 {
        self.dptr
    }

    pub fn len_bytes(&self) -> usize {
        self.bytes
    }

    /// The host view of pinned memory (`None` for device and managed memory). The caller
    /// has synchronised every copy or kernel that writes it.
    pub fn host_bytes(&self) -> Option<&[u8]> {
        // SAFETY: `host` holds `bytes` bytes owned by this buffer.
        (!self.host.is_null())
            .then(|| unsafe { std::slice::from_raw_parts(self.host.cast::<u8>(), self.bytes) })
    }

    /// As [`Buffer::host_bytes`], writable.
    pub fn host_bytes_mut(&mut self) -> Option<&mut [u8]> {
        // SAFETY: as above, borrowed exclusively through `&mut self`.
        (!self.host.is_null())
            .then(|| unsafe { std::slice::from_raw_parts_mut(self.host.cast::<u8>(), self.bytes) })
    }

    /// The host view of pinned memory as 4-byte words (page-aligned, so aligned).
    pub fn host_words_mut(&mut self) -> Option<&mut [u32]> {
        let words = self.bytes / 4;
        // SAFETY: as above; the allocation is page-aligned and holds `words` whole words.
        (!self.host.is_null())
            .then(|| unsafe { std::slice::from_raw_parts_mut(self.host.cast::<u32>(), words) })
    }

    /// Copies `data` to the start of the buffer (synchronous).
    pub fn write<T: Copy>(&self, data: &[T]) -> Result<(), Error> {
        let len = std::mem::size_of_val(data);
        assert!(len <= self.bytes, "write past the end of a GPU buffer");
        if self.host.is_null() {
            // SAFETY: `len` bytes fit the allocation (checked above).
            unsafe { result::memcpy_htod_sync(self.dptr, data) }.map_err(cuda("cuMemcpyHtoD"))
        } else {
            // SAFETY: `host` holds `bytes` >= `len` bytes, and no kernel runs on it now
            // (the caller synchronises every launch before touching it from the host).
            unsafe {
                std::ptr::copy_nonoverlapping(data.as_ptr().cast::<u8>(), self.host.cast(), len)
            };
            Ok(())
        }
    }

    /// Copies `bytes` bytes at offset `from` to offset `to` within the buffer; the ranges
    /// must not overlap (synchronous).
    pub fn copy_within(&self, from: usize, to: usize, bytes: usize) -> Result<(), Error> {
        assert!(
            from.max(to) + bytes <= self.bytes && from.abs_diff(to) >= bytes,
            "overlapping or out-of-bounds copy within a GPU buffer"
        );
        if self.host.is_null() {
            // SAFETY: both ranges lie in the allocation and do not overlap (checked above).
            unsafe {
                result::memcpy_dtod_sync(self.dptr + to as u64, self.dptr + from as u64, bytes)
            }
            .map_err(cuda("cuMemcpyDtoD"))
        } else {
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

    /// Copies the start of the buffer into `out` (synchronous; the caller has synchronised
    /// the stream that wrote it).
    pub fn read<T: DeviceRepr + ValidAsZeroBits>(&self, out: &mut [T]) -> Result<(), Error> {
        let len = std::mem::size_of_val(out);
        assert!(len <= self.bytes, "read past the end of a GPU buffer");
        if self.host.is_null() {
            // SAFETY: `len` bytes fit the allocation (checked above).
            unsafe { result::memcpy_dtoh_sync(out, self.dptr) }.map_err(cuda("cuMemcpyDtoH"))
        } else {
            // SAFETY: as in `write`; every T read here is plain data for which any bit
            // pattern is valid (ValidAsZeroBits + DeviceRepr).
            unsafe {
                std::ptr::copy_nonoverlapping(self.host.cast::<u8>(), out.as_mut_ptr().cast(), len)
            };
            Ok(())
        }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: each pointer came from the matching allocation call and is freed once.
        // Errors cannot be reported from Drop; the context's teardown reclaims the rest.
        unsafe {
            if !self.host.is_null() {
                let _ = result::free_host(self.host);
            } else if self.dptr != 0 {
                let _ = result::free_sync(self.dptr);
            }
        }
    }
}
