//! The launches of an HP-RDA analysis on the GPU: the kernels loaded, the trace uploaded
//! and preprocessed, each launch's thread level, sort and merges, the counts read back.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg, ValidAsZeroBits,
};
use memtune_core::reuse::hprda::{Adjust, HpRdaConfig};
use memtune_kernels::reuse as rk;
use memtune_kernels::{compile_ptx, hprda as k, CompiledPtx};

use super::super::kernels::{self as reuse, grid, zeros, Kernels};
use super::super::phases::widen_or_reduce;
use super::super::radix::{scan_lens, sort, Buffers};
use super::super::upload::Ring;
use super::super::workspace::uninit;
use super::{analysis_bytes, grid_slots, table_slots, HpRdaGpu};
use crate::gpu::{cuda, Context, Error};

/// Dynamic shared memory a block may take without opting in.
const SHARED_BYTES: u64 = 48 << 10;

/// The kernels of `hprda.cu`, loaded in one context.
pub(super) struct Hp {
    keep_sums: CudaFunction,
    compact: CudaFunction,
    tile_sums: CudaFunction,
    scan_tiles: CudaFunction,
    scan_apply: CudaFunction,
    thread: CudaFunction,
    gather_records: CudaFunction,
    gather_sorted: CudaFunction,
    block_firsts: CudaFunction,
    merge: CudaFunction,
    store: CudaFunction,
    pub(super) overlap_sums: CudaFunction,
    pub(super) overlap_apply: CudaFunction,
}

/// PTX of `hprda.cu`, `reuse.cu` and `reuse_radix.cu`.
type Ptx = (CompiledPtx, CompiledPtx, CompiledPtx);

/// The PTX per architecture, compiled once in a process: several analyses (one per
/// granularity, or a test's many) would compile it again each time.
static PTX: Mutex<Vec<(String, Ptx)>> = Mutex::new(Vec::new());

fn ptx(arch: &str) -> Result<Ptx, Error> {
    if let Ok(cache) = PTX.lock() {
        if let Some((_, p)) = cache.iter().find(|(a, _)| a == arch) {
            return Ok(p.clone());
        }
    }
    let p = (
        compile_ptx(&k::SOURCE, arch, &[])?,
        compile_ptx(&rk::SOURCE, arch, &[])?,
        compile_ptx(&rk::RADIX_SOURCE, arch, &[])?,
    );
    if let Ok(mut cache) = PTX.lock() {
        cache.push((arch.to_string(), p.clone()));
    }
    Ok(p)
}

/// The kernels of `hprda.cu`, and exact-gpu's (whose radix sort sorts the records).
pub(super) fn load(gpu: &Context) -> Result<(Hp, Kernels), Error> {
    let (hp_ptx, reuse_ptx, radix_ptx) = ptx(gpu.arch())?;
    let m = gpu
        .cuda_context()
        .load_module(hp_ptx.to_cudarc())
        .map_err(cuda("loading hprda.cu"))?;
    let f = |name: &str| {
        m.load_function(name)
            .map_err(cuda(format!("finding {name} in hprda.cu")))
    };
    let hp = Hp {
        keep_sums: f(k::KEEP_SUMS)?,
        compact: f(k::COMPACT)?,
        tile_sums: f(k::TILE_SUMS)?,
        scan_tiles: f(k::SCAN_TILES)?,
        scan_apply: f(k::SCAN_APPLY)?,
        thread: f(k::THREAD)?,
        gather_records: f(k::GATHER_RECORDS)?,
        gather_sorted: f(k::GATHER_SORTED)?,
        block_firsts: f(k::BLOCK_FIRSTS)?,
        merge: f(k::MERGE)?,
        store: f(k::STORE)?,
        overlap_sums: f(k::OVERLAP_SUMS)?,
        overlap_apply: f(k::OVERLAP_APPLY)?,
    };
    Ok((hp, reuse::load(gpu, &reuse_ptx, &radix_ptx)?))
}

/// What the GPU counted.
pub(super) struct Counted {
    /// References at each distance inside sub-traces, up to the largest.
    pub(super) dense: Vec<u32>,
    /// References at each distance between sub-traces, up to the largest; with `adjusted`,
    /// at each distance the overlap correction gave them, below the distinct items.
    pub(super) cross: Vec<u32>,
    /// Whether `cross` holds the overlap correction's counts.
    pub(super) adjusted: bool,
    pub(super) distinct: u64,
    pub(super) thread_counts: u64,
    /// Distances that fell outside the counts (none unless there is a bug).
    pub(super) lost: u32,
}

/// Entry `i` of `s`, read back.
fn read_one<T: DeviceRepr + Copy + Default>(
    stream: &Arc<CudaStream>,
    s: &CudaSlice<T>,
    i: usize,
) -> Result<T, Error> {
    let v = stream
        .clone_dtoh(&s.slice(i..i + 1))
        .map_err(cuda("cuMemcpyDtoH"))?;
    Ok(v.first().copied().unwrap_or_default())
}

/// One block of [`k::BLOCK`] threads (the scans over tile sums).
fn one_block() -> LaunchConfig {
    grid(k::BLOCK)
}

/// Exclusive prefix sums of `values[..n]` from `base`, with the total as entry `n`.
fn scan(
    stream: &Arc<CudaStream>,
    hp: &Hp,
    values: &CudaSlice<u32>,
    n: u32,
    base: u64,
) -> Result<CudaSlice<u64>, Error> {
    let n64 = u64::from(n);
    let mut sums = buffer::<u32>(stream, u64::from(n.div_ceil(k::BLOCK)))?;
    let mut out = zeros::<u64>(stream, n as usize + 1)?;
    launch!(
        stream,
        &hp.tile_sums,
        grid(n),
        "memtune_hprda_tile_sums",
        values,
        &n64,
        &mut sums
    );
    let offsets = scan_tiles(stream, hp, &sums, n, base)?;
    launch!(
        stream,
        &hp.scan_apply,
        grid(n),
        "memtune_hprda_scan_apply",
        values,
        &n64,
        &offsets,
        &mut out
    );
    Ok(out)
}

/// Exclusive prefix sums from `base` of the per-tile `sums` of `n` values (one tile a
/// block of [`k::BLOCK`]), with the total as the entry after the last tile.
fn scan_tiles(
    stream: &Arc<CudaStream>,
    hp: &Hp,
    sums: &CudaSlice<u32>,
    n: u32,
    base: u64,
) -> Result<CudaSlice<u64>, Error> {
    let tiles64 = u64::from(n.div_ceil(k::BLOCK));
    let mut offsets = buffer::<u64>(stream, tiles64 + 1)?;
    launch!(
        stream,
        &hp.scan_tiles,
        one_block(),
        "memtune_hprda_scan_tiles",
        sums,
        &tiles64,
        &base,
        &mut offsets
    );
    Ok(offsets)
}

/// `len` values of `T` on the GPU, zeroed (one at least: a buffer no kernel reads).
pub(super) fn buffer<T: DeviceRepr + ValidAsZeroBits>(
    stream: &Arc<CudaStream>,
    len: u64,
) -> Result<CudaSlice<T>, Error> {
    zeros::<T>(stream, len.max(1) as usize)
}

/// Uploads the trace (the bits in which its items differ from the first reduced on each
/// chunk as it arrives, for the radix sort) and preprocesses it: returns the kept trace
/// and those bits. Fills `out`'s upload and preprocessing seconds and kept references.
fn preprocess(
    stream: &Arc<CudaStream>,
    hp: &Hp,
    kernels: &Kernels,
    ring: &mut Ring,
    items: &[u64],
    out: &mut HpRdaGpu,
) -> Result<(CudaSlice<u64>, u64), Error> {
    let mut clock = Instant::now();
    let n = items.len() as u32;
    let mut raw = uninit::<u64>(stream, n.into())?;
    let mut varying = buffer::<u64>(stream, 1)?;
    let first = items.first().copied().unwrap_or(0);
    ring.upload(stream, items, &mut raw, None, |chunk| {
        widen_or_reduce(stream, kernels, chunk, first, &mut varying)
    })?;
    let varying = read_one(stream, &varying, 0)?;
    out.upload_seconds = clock.elapsed().as_secs_f64();
    clock = Instant::now();

    // The kept references' places, then the kept trace.
    let (n64, tiles) = (u64::from(n), n.div_ceil(k::BLOCK));
    let mut sums = buffer::<u32>(stream, u64::from(tiles))?;
    launch!(
        stream,
        &hp.keep_sums,
        grid(n),
        "memtune_hprda_keep_sums",
        &raw,
        &n64,
        &mut sums
    );
    let offsets = scan_tiles(stream, hp, &sums, n, 0)?;
    let kept_len = read_one(stream, &offsets, tiles as usize)?;
    // Every entry is written by the compaction.
    let mut kept = uninit::<u64>(stream, kept_len)?;
    launch!(
        stream,
        &hp.compact,
        grid(n),
        "memtune_hprda_compact",
        &raw,
        &n64,
        &offsets,
        &mut kept
    );
    // Freed on the stream after the compaction; the sync hands the memory back.
    drop((raw, sums, offsets));
    stream.synchronize().map_err(cuda("cuStreamSynchronize"))?;
    out.kept = kept_len;
    out.preprocess_seconds = clock.elapsed().as_secs_f64();
    Ok((kept, varying))
}

/// Uploads and preprocesses the trace, runs every launch, reads the counts back; fills
/// `out`'s seconds, kept references, launches and radix passes.
pub(super) fn run(
    gpu: &Context,
    hp: &Hp,
    kernels: &Kernels,
    ring: &mut Ring,
    items: &[u64],
    config: &HpRdaConfig,
    out: &mut HpRdaGpu,
) -> Result<Counted, Error> {
    let stream = gpu.stream().clone();
    let began = Instant::now();
    let (kept, varying) = preprocess(&stream, hp, kernels, ring, items, out)?;
    let kept_len = out.kept;
    let sync = || stream.synchronize().map_err(cuda("cuStreamSynchronize"));
    let mut clock = Instant::now();
    let mut lap = || {
        let s = clock.elapsed().as_secs_f64();
        clock = Instant::now();
        s
    };

    // The raw trace is freed: the rest must fit beside the kept one.
    let needed = analysis_bytes(kept_len, config).unwrap_or(u64::MAX);
    gpu.check_free(needed.saturating_sub(8 * kept_len))?;
    let (st, nb) = (config.sub_trace as u32, config.threads_per_block as u32);
    let launch_len = (config.launch_len().unwrap_or(1) as u64).min(kept_len);
    let subs_max = launch_len.div_ceil(st.into());
    let slots = table_slots(st.into());
    let words = st.div_ceil(32);
    let shared_live = 4 * (u64::from(k::SMALL) + u64::from(nb) * u64::from(words + 1));
    let live_shared = u32::from(shared_live <= SHARED_BYTES);
    let shared_bytes = if live_shared == 1 {
        shared_live
    } else {
        4 * u64::from(k::SMALL)
    } as u32;
    let dense_len = kept_len as u32;
    let mut dense = buffer::<u32>(&stream, kept_len)?;
    let mut cross = buffer::<u32>(&stream, kept_len)?;
    let flat = config.adjust.flat_grid();
    let grid_mask = grid_slots(kept_len) - 1;
    let mut grid_table = buffer::<u64>(&stream, 2 * (grid_mask + 2))?;
    let mut largest = buffer::<u32>(&stream, 1)?;
    let mut overflow = buffer::<u32>(&stream, 1)?;
    let mut distinct = buffer::<u64>(&stream, 1)?;
    let mut tables = buffer::<u64>(&stream, 2 * slots * subs_max)?;
    let mut live = buffer::<u32>(
        &stream,
        (1 - live_shared as u64) * u64::from(words) * subs_max,
    )?;
    let mut rec_item = buffer::<u64>(&stream, launch_len)?;
    let mut rec_latest = buffer::<u32>(&stream, launch_len)?;
    let mut counts = buffer::<u32>(&stream, subs_max)?;
    // A launch's records (at most its references), sorted by item: written in full up to
    // the launch's count before anything reads them.
    let mut keys = [uninit(&stream, launch_len)?, uninit(&stream, launch_len)?];
    let mut positions = [uninit(&stream, launch_len)?, uninit(&stream, launch_len)?];
    let (digits, digit_sums) = scan_lens(launch_len);
    let mut digit_counts = uninit(&stream, digits)?;
    let mut digit_sums = uninit(&stream, digit_sums)?;
    let mut origin = uninit::<u32>(&stream, launch_len)?;
    let mut tk = uninit::<u32>(&stream, launch_len)?;
    let mut fk = uninit::<u32>(&stream, launch_len)?;
    let mut lk = uninit::<u32>(&stream, launch_len)?;
    let (mut q_base, mut thread_counts) = (0u64, 0u64);
    let mut start = 0u64;
    sync()?;
    out.preprocess_seconds += lap();
    while start < kept_len {
        let len = launch_len.min(kept_len - start);
        let trace = kept.slice(start as usize..(start + len) as usize);
        let subs = len.div_ceil(st.into()) as u32;
        let blocks = subs.div_ceil(nb);
        let len = len as u32;

        // Thread level: one thread per sub-trace, NB to a block; the shared memory asked
        // for is what the kernel indexes (the small counts, and the live bits if they fit).
        stream
            .memset_zeros(&mut tables.slice_mut(..(2 * slots * u64::from(subs)) as usize))
            .map_err(cuda("cuMemsetD8Async"))?;
        let cfg = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (nb, 1, 1),
            shared_mem_bytes: shared_bytes,
        };
        let slots32 = slots as u32;
        launch!(
            stream,
            &hp.thread,
            cfg,
            "memtune_hprda_thread",
            &trace,
            &len,
            &st,
            &mut tables,
            &slots32,
            &mut live,
            &words,
            &live_shared,
            &mut rec_item,
            &mut rec_latest,
            &mut counts,
            &mut dense,
            &dense_len,
            &mut largest,
            &mut overflow
        );
        sync()?;
        out.thread_seconds += lap();

        // The records in one array, sorted stably by item (positions: where each came from).
        let c = scan(&stream, hp, &counts, subs, 0)?;
        let r = read_one(&stream, &c, subs as usize)?;
        thread_counts += r;
        let r = r as u32;
        launch!(
            stream,
            &hp.gather_records,
            grid(len),
            "memtune_hprda_gather_records",
            &rec_item,
            &counts,
            &c,
            &len,
            &st,
            &mut keys[0],
            &mut origin
        );
        let buffers = Buffers {
            keys: &mut keys,
            vals: &mut positions,
            counts: &mut digit_counts,
            sums: &mut digit_sums,
        };
        out.radix_passes = sort(&stream, kernels, buffers, varying, r, 0)?;
        let (keys, positions) = (&keys[0], &positions[0]);
        launch!(
            stream,
            &hp.gather_sorted,
            grid(r),
            "memtune_hprda_gather_sorted",
            positions,
            &origin,
            &rec_latest,
            &r,
            &st,
            &mut tk,
            &mut fk,
            &mut lk
        );

        // Block level: the blocks' exact distinct counts and their prefix sums; then every
        // distance between sub-traces, and the grid table for the next launches.
        let mut block_counts = buffer::<u32>(&stream, blocks.into())?;
        launch!(
            stream,
            &hp.block_firsts,
            grid(r),
            "memtune_hprda_block_firsts",
            keys,
            &tk,
            &r,
            &nb,
            &mut block_counts
        );
        let q = if flat {
            // The flat grid: block b starts at the sub-trace counts summed before it.
            let c_host = stream.clone_dtoh(&c).map_err(cuda("cuMemcpyDtoH"))?;
            let ends: Vec<u64> = (0..=blocks as usize)
                .map(|b| q_base + c_host[(b * nb as usize).min(subs as usize)])
                .collect();
            stream.clone_htod(&ends).map_err(cuda("cuMemcpyHtoD"))?
        } else {
            scan(&stream, hp, &block_counts, blocks, q_base)?
        };
        launch!(
            stream,
            &hp.merge,
            grid(r),
            "memtune_hprda_merge",
            keys,
            &tk,
            &fk,
            &lk,
            &r,
            &nb,
            &subs,
            &c,
            &q,
            &mut grid_table,
            &grid_mask,
            &mut cross,
            &dense_len,
            &mut largest,
            &mut overflow
        );
        launch!(
            stream,
            &hp.store,
            grid(r),
            "memtune_hprda_store",
            keys,
            &tk,
            &lk,
            &r,
            &nb,
            &subs,
            &c,
            &q,
            &mut grid_table,
            &grid_mask,
            &mut distinct
        );
        q_base = read_one(&stream, &q, blocks as usize)?;
        out.merge_seconds += lap();
        out.launches += 1;
        start += u64::from(len);
    }

    let used = (read_one(&stream, &largest, 0)? as usize).min(dense_len as usize);
    let lost = read_one(&stream, &overflow, 0)?;
    let distinct = read_one(&stream, &distinct, 0)?;
    // Distances inside a sub-trace are below its length: only that much of `dense` can
    // hold counts. The cross counts, up to the largest distance, come through the pinned
    // ring (copied out on every core).
    let local = used.min(config.sub_trace);
    let dense = if local > 0 {
        stream
            .clone_dtoh(&dense.slice(..local))
            .map_err(cuda("cuMemcpyDtoH"))?
    } else {
        Vec::new()
    };
    let adjusted = config.adjust == Adjust::Overlap;
    let cross = if adjusted {
        super::overlap::adjust(
            &stream,
            hp,
            ring,
            &cross,
            used as u32,
            thread_counts,
            distinct,
        )?
    } else {
        ring.download(&stream, &cross, used, Vec::new())?
    };
    out.read_seconds = lap();
    out.seconds = began.elapsed().as_secs_f64();
    Ok(Counted {
        dense,
        cross,
        adjusted,
        distinct,
        thread_counts,
        lost,
    })
}
