//! The kernels of `reuse.cu` in one context, and the two sorts built from them.

use std::sync::Arc;

use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg, ValidAsZeroBits,
};
use memtune_kernels::reuse as k;
use memtune_kernels::CompiledPtx;

use super::SortedNext;
use crate::gpu::{cuda, Context, Error};

/// The kernels of `reuse.cu`, loaded in one context.
pub(super) struct Kernels {
    pub(super) tile_items: CudaFunction,
    pub(super) partition_items: CudaFunction,
    pub(super) merge_items: CudaFunction,
    pub(super) next: CudaFunction,
    pub(super) resolve: CudaFunction,
    pub(super) iota: CudaFunction,
    pub(super) tile_next: CudaFunction,
    pub(super) partition_next: CudaFunction,
    pub(super) merge_next: CudaFunction,
    pub(super) count_later: CudaFunction,
    pub(super) histogram: CudaFunction,
    pub(super) add: CudaFunction,
}

pub(super) fn load(gpu: &Context, ptx: &CompiledPtx) -> Result<Kernels, Error> {
    let m = gpu
        .cuda_context()
        .load_module(ptx.to_cudarc())
        .map_err(cuda("loading reuse.cu"))?;
    let f = |name: &str| {
        m.load_function(name)
            .map_err(cuda(format!("finding {name} in reuse.cu")))
    };
    Ok(Kernels {
        tile_items: f(k::TILE_ITEMS)?,
        partition_items: f(k::PARTITION_ITEMS)?,
        merge_items: f(k::MERGE_ITEMS)?,
        next: f(k::NEXT)?,
        resolve: f(k::RESOLVE)?,
        iota: f(k::IOTA)?,
        tile_next: f(k::TILE_NEXT)?,
        partition_next: f(k::PARTITION_NEXT)?,
        merge_next: f(k::MERGE_NEXT)?,
        count_later: f(k::COUNT_LATER)?,
        histogram: f(k::HISTOGRAM)?,
        add: f(k::ADD)?,
    })
}

/// One block of [`k::BLOCK`] threads per [`k::BLOCK`] entries.
pub(super) fn grid(n: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (n.div_ceil(k::BLOCK), 1, 1),
        block_dim: (k::BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// `len` zeroed values of `T` on `stream`'s GPU.
pub(crate) fn zeros<T: DeviceRepr + ValidAsZeroBits>(
    stream: &Arc<CudaStream>,
    len: usize,
) -> Result<CudaSlice<T>, Error> {
    stream.alloc_zeros::<T>(len).map_err(cuda("cuMemAlloc"))
}

/// The merge passes of a sort of `n` entries whose tiles of [`k::BLOCK`] are sorted:
/// `pass(cuts, tiles, width)` merges the sorted runs of `width` entries pairwise (splitting
/// the work over the tiles into `cuts`, two entries a tile), for widths doubling from one
/// tile until one run spans all `n`.
fn merge_passes(
    stream: &Arc<CudaStream>,
    n: u32,
    mut pass: impl FnMut(&mut CudaSlice<u32>, u32, u32) -> Result<(), Error>,
) -> Result<(), Error> {
    let tiles = n.div_ceil(k::BLOCK);
    let mut cuts = zeros::<u32>(stream, 2 * tiles as usize)?;
    let mut width = k::BLOCK;
    while width < n {
        pass(&mut cuts, tiles, width)?;
        width = width.saturating_mul(2);
    }
    Ok(())
}

/// The part's items (uploaded) with their global positions, sorted stably by item.
pub(super) fn sort_items(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    mut keys: CudaSlice<u64>,
    base: u32,
) -> Result<(CudaSlice<u64>, CudaSlice<u32>), Error> {
    let n = keys.len() as u32;
    let mut aux = zeros::<u32>(stream, n as usize)?;
    let mut keys2 = zeros::<u64>(stream, n as usize)?;
    let mut aux2 = zeros::<u32>(stream, n as usize)?;
    // Positions (the scratch array takes the zero counts, unused here).
    launch!(
        stream,
        &kernels.iota,
        n,
        "memtune_reuse_iota",
        &mut aux,
        &mut aux2,
        &n,
        &base
    );
    launch!(
        stream,
        &kernels.tile_items,
        n,
        "memtune_reuse_tile_items",
        &mut keys,
        &mut aux,
        &n
    );
    merge_passes(stream, n, |cuts, tiles, width| {
        launch!(
            stream,
            &kernels.partition_items,
            tiles,
            "memtune_reuse_partition_items",
            &keys,
            &mut *cuts,
            &n,
            &width
        );
        launch!(
            stream,
            &kernels.merge_items,
            n,
            "memtune_reuse_merge_items",
            &keys,
            &aux,
            &*cuts,
            &mut keys2,
            &mut aux2,
            &n,
            &width
        );
        std::mem::swap(&mut keys, &mut keys2);
        std::mem::swap(&mut aux, &mut aux2);
        Ok(())
    })?;
    Ok((keys, aux))
}

/// Next uses sorted with their positions and, for each, the smaller next uses to its right
/// within the part.
pub(super) fn sort_next(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    mut next: CudaSlice<u32>,
    base: u32,
) -> Result<SortedNext, Error> {
    let n = next.len() as u32;
    let mut pos = zeros::<u32>(stream, n as usize)?;
    let mut counts = zeros::<u32>(stream, n as usize)?;
    let mut next2 = zeros::<u32>(stream, n as usize)?;
    let mut pos2 = zeros::<u32>(stream, n as usize)?;
    let mut counts2 = zeros::<u32>(stream, n as usize)?;
    launch!(
        stream,
        &kernels.iota,
        n,
        "memtune_reuse_iota",
        &mut pos,
        &mut counts,
        &n,
        &base
    );
    launch!(
        stream,
        &kernels.tile_next,
        n,
        "memtune_reuse_tile_next",
        &mut next,
        &mut pos,
        &mut counts,
        &n
    );
    merge_passes(stream, n, |cuts, tiles, width| {
        launch!(
            stream,
            &kernels.partition_next,
            tiles,
            "memtune_reuse_partition_next",
            &next,
            &mut *cuts,
            &n,
            &width
        );
        launch!(
            stream,
            &kernels.merge_next,
            n,
            "memtune_reuse_merge_next",
            &next,
            &pos,
            &counts,
            &*cuts,
            &mut next2,
            &mut pos2,
            &mut counts2,
            &n,
            &width
        );
        std::mem::swap(&mut next, &mut next2);
        std::mem::swap(&mut pos, &mut pos2);
        std::mem::swap(&mut counts, &mut counts2);
        Ok(())
    })?;
    Ok((next, pos, counts))
}
