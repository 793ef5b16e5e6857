//! The stable sort of a part's items by the kernels of `reuse_radix.cu`, as
//! [`memtune_core::reuse::radix`] models it: one pass per digit that covers the bits in
//! which the items differ.

use std::sync::Arc;

use cudarc::driver::{CudaStream, PushKernelArg};
use memtune_core::reuse::radix;
use memtune_kernels::reuse as k;

use super::kernels::{grid, radix_grid, Kernels};
use super::workspace::Workspace;
use crate::gpu::{cuda, Error};

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
    let shifts = radix::digit_shifts(varying);
    if shifts.is_empty() {
        // All items equal (or one): in order already; positions only.
        launch!(
            stream,
            &kernels.iota,
            grid(n),
            "memtune_reuse_iota",
            &mut ws.vals[0],
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
            &ws.keys[0],
            &n,
            &shift,
            &mut ws.counts
        );
        launch!(
            stream,
            &kernels.scan_reduce,
            radix_grid(scan_tiles),
            "memtune_reuse_scan_reduce",
            &ws.counts,
            &m,
            &mut ws.sums
        );
        launch!(
            stream,
            &kernels.scan_sums,
            radix_grid(1),
            "memtune_reuse_scan_sums",
            &mut ws.sums,
            &scan_tiles
        );
        launch!(
            stream,
            &kernels.scan_apply,
            radix_grid(scan_tiles),
            "memtune_reuse_scan_apply",
            &mut ws.counts,
            &m,
            &ws.sums
        );
        let [keys, keys_out] = &mut ws.keys;
        let [vals, vals_out] = &mut ws.vals;
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
                &ws.counts,
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
                &ws.counts
            );
        }
        // This pass's output is the next one's input, and the result after the last.
        ws.keys.swap(0, 1);
        ws.vals.swap(0, 1);
    }
    Ok(shifts.len())
}
