//! The stable sort of u64 keys with u32 values by the kernels of `reuse_radix.cu`, as
//! [`memtune_core::reuse::radix`] models it: one pass per digit that covers the bits in
//! which the keys differ. Exact-gpu sorts a part's items with their positions by it,
//! HP-RDA its records by item.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, PushKernelArg};
use memtune_core::reuse::radix;
use memtune_kernels::reuse as k;

use super::kernels::{grid, radix_grid, Kernels};
use super::workspace::Workspace;
use crate::gpu::{cuda, Error};

/// Entries of a sort's digit counts and of its scan's tile sums for up to `n` keys.
pub(super) fn scan_lens(n: u64) -> (u64, u64) {
    let counts = u64::from(k::RADIX) * n.div_ceil(u64::from(k::RADIX_TILE));
    (counts, counts.div_ceil(u64::from(k::RADIX_TILE)))
}

/// The buffers of a sort, each sized for the most keys it sorts: keys and values twice
/// (a pass reads `[0]`, writes `[1]` and swaps them, so the result ends in `[0]`), the
/// digit counts and the scan's sums ([`scan_lens`]). None needs to be initialised but the
/// keys of `keys[0]`.
pub(super) struct Buffers<'a> {
    pub(super) keys: &'a mut [CudaSlice<u64>; 2],
    pub(super) vals: &'a mut [CudaSlice<u32>; 2],
    pub(super) counts: &'a mut CudaSlice<u32>,
    pub(super) sums: &'a mut CudaSlice<u32>,
}

/// Sorts the part's `n` items in `ws.keys[0]` stably, their global positions from `base`
/// beside them: both are in `ws.keys[0]` and `ws.vals[0]` when this returns. `ws.varying`
/// holds the OR of the items' differences from the first (the upload reduced it). Returns
/// the number of radix passes.
pub(super) fn sort_items(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    ws: &mut Workspace,
    n: u32,
    base: u32,
) -> Result<usize, Error> {
    let varying = stream
        .clone_dtoh(&ws.varying)
        .map_err(cuda("cuMemcpyDtoH"))?
        .first()
        .copied()
        .unwrap_or(0);
    let Workspace {
        keys,
        vals,
        counts,
        sums,
        ..
    } = ws;
    let buffers = Buffers {
        keys,
        vals,
        counts,
        sums,
    };
    sort(stream, kernels, buffers, varying, n, base)
}

/// Sorts the `n` keys of `b.keys[0]` stably, their positions `base + index` beside them:
/// both are in `b.keys[0]` and `b.vals[0]` when this returns. `varying` covers the bits in
/// which the keys differ (an OR of each key XOR any one value: a superset sorts alike, in
/// more passes). Returns the number of radix passes.
pub(super) fn sort(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    b: Buffers<'_>,
    varying: u64,
    n: u32,
    base: u32,
) -> Result<usize, Error> {
    let Buffers {
        keys: ks,
        vals: vs,
        counts,
        sums,
    } = b;
    let shifts = radix::digit_shifts(varying);
    if shifts.is_empty() {
        // All keys equal (or one): in order already; positions only.
        launch!(
            stream,
            &kernels.iota,
            grid(n),
            "memtune_reuse_iota",
            &mut vs[0],
            &n,
            &base
        );
        return Ok(0);
    }
    let tiles = n.div_ceil(k::RADIX_TILE);
    // Counts of all tiles (digit-major), and the scan's tiles over them.
    let m = k::RADIX * tiles;
    let scan_tiles = m.div_ceil(k::RADIX_TILE);
    for (pass, &shift) in shifts.iter().enumerate() {
        launch!(
            stream,
            &kernels.radix_count,
            radix_grid(tiles),
            "memtune_reuse_radix_count",
            &ks[0],
            &n,
            &shift,
            &mut *counts
        );
        launch!(
            stream,
            &kernels.scan_reduce,
            radix_grid(scan_tiles),
            "memtune_reuse_scan_reduce",
            &*counts,
            &m,
            &mut *sums
        );
        launch!(
            stream,
            &kernels.scan_sums,
            radix_grid(1),
            "memtune_reuse_scan_sums",
            &mut *sums,
            &scan_tiles
        );
        launch!(
            stream,
            &kernels.scan_apply,
            radix_grid(scan_tiles),
            "memtune_reuse_scan_apply",
            &mut *counts,
            &m,
            &*sums
        );
        let [keys, keys_out] = &mut *ks;
        let [vals, vals_out] = &mut *vs;
        if pass == 0 {
            launch!(
                stream,
                &kernels.scatter_first,
                radix_grid(tiles),
                "memtune_reuse_radix_scatter_first",
                &*keys,
                keys_out,
                vals_out,
                &n,
                &shift,
                &*counts,
                &base
            );
        } else {
            launch!(
                stream,
                &kernels.scatter,
                radix_grid(tiles),
                "memtune_reuse_radix_scatter",
                &*keys,
                &*vals,
                keys_out,
                vals_out,
                &n,
                &shift,
                &*counts
            );
        }
        // This pass's output is the next one's input, and the result after the last.
        ks.swap(0, 1);
        vs.swap(0, 1);
    }
    Ok(shifts.len())
}
