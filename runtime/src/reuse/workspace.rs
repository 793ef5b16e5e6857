//! The device memory of one part, allocated with the kernels' compilation (before the
//! analysis's seconds start) and reused by every step: the analysis itself allocates,
//! frees and zeroes nothing large but the distance counts it adds into.
//!
//! The sort of next uses reuses the radix sort's spare buffers, which the sorted items
//! no longer need: a part takes 28 bytes a reference for its own arrays, not the 40 of
//! separate ones.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DeviceRepr};
use memtune_kernels::reuse as k;

use super::radix::scan_lens;
use crate::gpu::{cuda, Error};

/// Bytes of device memory a part of `n` references of a trace of `total` needs at most,
/// `later` being the largest later part: items (8 bytes a reference) and positions (4),
/// twice for the radix passes; next uses (4), sorted with their `v` in the radix sort's
/// spare buffers; a later part's sorted items and positions copied (12 a reference of it,
/// its next uses later in the same place); distance counts with another part's copied
/// beside them (8 a reference of the trace); and the radix counts, scan sums and merge
/// cuts (about a third of a byte a reference); three words of counters.
pub fn device_bytes(n: u64, later: u64, total: u64) -> u64 {
    let (counts, sums) = scan_lens(n);
    let cuts = 2 * n.div_ceil(u64::from(k::BLOCK));
    28 * n + 12 * later.max(1) + 8 * total + 4 * (counts + sums + cuts) + 20
}

/// One part's buffers. Each is written in full before anything reads it (said per field),
/// so none is zeroed when allocated.
pub(super) struct Workspace {
    /// The part's items: uploaded into `keys[0]`; each radix pass reads `[0]`, writes `[1]`
    /// and swaps them, so the sorted items end in `keys[0]`. `keys[1]` is then spare: the
    /// sort of next uses takes it as two arrays of `u32`.
    pub(super) keys: [CudaSlice<u64>; 2],
    /// Positions beside `keys`, the same way (the first pass writes them, or the iota of a
    /// part that needs no pass); `vals[1]` is then spare: `v` of the next-use sort.
    pub(super) vals: [CudaSlice<u32>; 2],
    /// Next uses in position order (every position written by `memtune_reuse_next`), then
    /// sorted in place by the tile sort.
    pub(super) next: CudaSlice<u32>,
    /// Radix digit counts, [`k::RADIX`] a tile (written in full by each count).
    pub(super) counts: CudaSlice<u32>,
    /// The scan's tile sums (written in full by each reduce).
    pub(super) sums: CudaSlice<u32>,
    /// Merge-path cuts, two a merge tile (written in full by each partition).
    pub(super) cuts: CudaSlice<u32>,
    /// The OR of the items' differences from the first (zeroed before the upload).
    pub(super) varying: CudaSlice<u64>,
    /// One past the largest distance (zeroed before the histogram).
    pub(super) largest: CudaSlice<u32>,
    /// The part's distinct items (zeroed before the next uses).
    pub(super) distinct: CudaSlice<u32>,
    /// Distance counts, one per distance below `total` (zeroed before the histogram).
    pub(super) dense: CudaSlice<u32>,
    /// A later part's sorted items, copied (as many as it has).
    pub(super) later_items: CudaSlice<u64>,
    /// That part's positions, copied; in the last phase its sorted next uses.
    pub(super) later_words: CudaSlice<u32>,
    /// Part 0, when there are others: another part's distance counts, copied.
    pub(super) other: Option<CudaSlice<u32>>,
}

/// `len` values of `T` on `stream`'s GPU, not initialised (at least one, so that every
/// buffer has an address).
pub(super) fn uninit<T: DeviceRepr>(
    stream: &Arc<CudaStream>,
    len: u64,
) -> Result<CudaSlice<T>, Error> {
    let len = usize::try_from(len.max(1)).map_err(|_| Error::OutOfMemory {
        needed: len,
        free: 0,
    })?;
    // SAFETY: the memory is not initialised; every caller writes each entry before anything
    // reads it (see the fields of `Workspace`, and HP-RDA's launch buffers).
    unsafe { stream.alloc::<T>(len) }.map_err(cuda("cuMemAlloc"))
}

impl Workspace {
    /// The buffers of a part of `n` references of a trace of `total`, `later` the largest
    /// later part (0 for none); `adds_others`: part 0 of several.
    pub(super) fn new(
        stream: &Arc<CudaStream>,
        n: u64,
        later: u64,
        total: u64,
        adds_others: bool,
    ) -> Result<Workspace, Error> {
        let (counts, sums) = scan_lens(n);
        let ws = Workspace {
            keys: [uninit(stream, n)?, uninit(stream, n)?],
            vals: [uninit(stream, n)?, uninit(stream, n)?],
            next: uninit(stream, n)?,
            counts: uninit(stream, counts)?,
            sums: uninit(stream, sums)?,
            cuts: uninit(stream, 2 * n.div_ceil(u64::from(k::BLOCK)))?,
            varying: uninit(stream, 1)?,
            largest: uninit(stream, 1)?,
            distinct: uninit(stream, 1)?,
            dense: uninit(stream, total)?,
            later_items: uninit(stream, later)?,
            later_words: uninit(stream, later)?,
            other: if adds_others {
                Some(uninit(stream, total)?)
            } else {
                None
            },
        };
        // Allocations are ordered on the stream: done before the analysis's clock starts.
        stream.synchronize().map_err(cuda("cuStreamSynchronize"))?;
        Ok(ws)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_takes_about_28_bytes_a_reference_and_its_share_of_the_rest() {
        let n = 100_000_000;
        let own = device_bytes(n, 0, n) - 8 * n - 12;
        assert!(own > 28 * n && own < 29 * n, "{own}");
        assert_eq!(device_bytes(n, 50, n) - device_bytes(n, 0, n), 12 * 50 - 12);
    }
}
