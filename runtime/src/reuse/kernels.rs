//! The kernels of `reuse.cu` and `reuse_radix.cu` in one context, their launch shapes, and
//! the sort of next uses built from them.

use std::sync::Arc;

use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, CudaViewMut, DeviceRepr, LaunchConfig, PushKernelArg,
    ValidAsZeroBits,
};
use memtune_kernels::reuse as k;
use memtune_kernels::CompiledPtx;

use crate::gpu::{cuda, Context, Error};

/// The kernels of `reuse.cu` and `reuse_radix.cu`, loaded in one context.
pub(super) struct Kernels {
    pub(super) next: CudaFunction,
    pub(super) resolve: CudaFunction,
    pub(super) iota: CudaFunction,
    pub(super) tile_next: CudaFunction,
    pub(super) partition_next: CudaFunction,
    pub(super) merge_next: CudaFunction,
    pub(super) count_later: CudaFunction,
    pub(super) histogram: CudaFunction,
    pub(super) add: CudaFunction,
    pub(super) varying: CudaFunction,
    pub(super) widen: CudaFunction,
    pub(super) radix_count: CudaFunction,
    pub(super) scan_reduce: CudaFunction,
    pub(super) scan_sums: CudaFunction,
    pub(super) scan_apply: CudaFunction,
    pub(super) scatter_first: CudaFunction,
    pub(super) scatter: CudaFunction,
}

/// Loads the kernels of `reuse` (the PTX of [`k::SOURCE`]) and `radix` (of
/// [`k::RADIX_SOURCE`]).
pub(super) fn load(
    gpu: &Context,
    reuse: &CompiledPtx,
    radix: &CompiledPtx,
) -> Result<Kernels, Error> {
    let m = gpu
        .cuda_context()
        .load_module(reuse.to_cudarc())
        .map_err(cuda("loading reuse.cu"))?;
    let r = gpu
        .cuda_context()
        .load_module(radix.to_cudarc())
        .map_err(cuda("loading reuse_radix.cu"))?;
    let f = |name: &str| {
        m.load_function(name)
            .map_err(cuda(format!("finding {name} in reuse.cu")))
    };
    let g = |name: &str| {
        r.load_function(name)
            .map_err(cuda(format!("finding {name} in reuse_radix.cu")))
    };
    Ok(Kernels {
        next: f(k::NEXT)?,
        resolve: f(k::RESOLVE)?,
        iota: f(k::IOTA)?,
        tile_next: f(k::TILE_NEXT)?,
        partition_next: f(k::PARTITION_NEXT)?,
        merge_next: f(k::MERGE_NEXT)?,
        count_later: f(k::COUNT_LATER)?,
        histogram: f(k::HISTOGRAM)?,
        add: f(k::ADD)?,
        varying: g(k::VARYING)?,
        widen: g(k::WIDEN)?,
        radix_count: g(k::RADIX_COUNT)?,
        scan_reduce: g(k::SCAN_REDUCE)?,
        scan_sums: g(k::SCAN_SUMS)?,
        scan_apply: g(k::SCAN_APPLY)?,
        scatter_first: g(k::RADIX_SCATTER_FIRST)?,
        scatter: g(k::RADIX_SCATTER)?,
    })
}

/// One thread per entry of `n`, in blocks of [`k::BLOCK`].
pub(super) fn grid(n: u32) -> LaunchConfig {
    blocks(n.div_ceil(k::BLOCK), k::BLOCK)
}

/// One block of [`k::BLOCK`] threads per tile of [`k::SORT_TILE`] entries of `n`.
pub(super) fn sort_grid(n: u32) -> LaunchConfig {
    blocks(n.div_ceil(k::SORT_TILE), k::BLOCK)
}

/// `count` blocks of [`k::RADIX_THREADS`]: one per tile of [`k::RADIX_TILE`].
pub(super) fn radix_grid(count: u32) -> LaunchConfig {
    blocks(count, k::RADIX_THREADS)
}

fn blocks(count: u32, threads: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (count, 1, 1),
        block_dim: (threads, 1, 1),
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

/// A merge sort's entries: next uses and, beside each, `v` (its position plus the smaller
/// next uses after it counted so far).
pub(super) struct Entries<'a> {
    pub(super) next: CudaViewMut<'a, u32>,
    pub(super) v: CudaViewMut<'a, u32>,
}

/// Sorts the `n` next uses of `a` (`a.v` is written, not read: each entry starts from its
/// position `base + index`), counting, with `b` as the other buffer of the merge levels;
/// returns whichever holds the result. Tiles of [`k::SORT_TILE`] are sorted in shared
/// memory; each level above merges runs of `width` pairwise, its work split over tiles of
/// [`k::BLOCK`] outputs into `cuts` (two entries a tile), for widths doubling until one
/// run spans all `n`.
pub(super) fn sort_next<'a>(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    mut a: Entries<'a>,
    mut b: Entries<'a>,
    cuts: &mut CudaSlice<u32>,
    n: u32,
    base: u32,
) -> Result<Entries<'a>, Error> {
    launch!(
        stream,
        &kernels.tile_next,
        sort_grid(n),
        "memtune_reuse_tile_next",
        &mut a.next,
        &mut a.v,
        &n,
        &base
    );
    let tiles = n.div_ceil(k::BLOCK);
    let mut width = k::SORT_TILE;
    while width < n {
        {
            let next = a.next.as_view();
            launch!(
                stream,
                &kernels.partition_next,
                grid(tiles),
                "memtune_reuse_partition_next",
                &next,
                &mut *cuts,
                &n,
                &width
            );
        }
        {
            let (next, v) = (a.next.as_view(), a.v.as_view());
            launch!(
                stream,
                &kernels.merge_next,
                grid(n),
                "memtune_reuse_merge_next",
                &next,
                &v,
                &*cuts,
                &mut b.next,
                &mut b.v,
                &n,
                &width
            );
        }
        std::mem::swap(&mut a, &mut b);
        width = width.saturating_mul(2);
    }
    Ok(a)
}
