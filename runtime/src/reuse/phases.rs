//! The three phases of one part of an exact GPU analysis, on its GPU and in its
//! workspace, with a barrier between them (see the parent module).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, PushKernelArg};
use memtune_core::reuse::nextuse;
use memtune_kernels::reuse as k;

use super::kernels::{grid, radix_grid, sort_next, Entries, Kernels};
use super::peer::{peer_copy, put, take, too_short, Peer};
use super::prefault::Prefault;
use super::upload::{Arrived, Ring};
use super::workspace::Workspace;
use super::{radix, GpuReuseError, Job, Shared};
use crate::gpu::{cuda, Context, Error};

/// A phase's failure: the GPU's own, or the analysis stopped by another worker.
pub(super) enum Step {
    Gpu(Error),
    Other(GpuReuseError),
}

impl From<Error> for Step {
    fn from(e: Error) -> Step {
        Step::Gpu(e)
    }
}

impl From<GpuReuseError> for Step {
    fn from(e: GpuReuseError) -> Step {
        Step::Other(e)
    }
}

/// What the phases of one part leave: the merged distance counts and a buffer for the
/// histogram's pairs (part 0; the others bring none), each phase's seconds, the upload's,
/// and the radix passes run.
pub(super) struct Done {
    pub(super) merged: Vec<u32>,
    pub(super) pairs: Vec<(u64, u64)>,
    pub(super) seconds: [f64; 3],
    pub(super) upload: f64,
    pub(super) passes: usize,
}

/// ORs the differences of an uploaded chunk's items from `first` into `varying`, first
/// widening a packed chunk into its items.
pub(super) fn widen_or_reduce(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    chunk: Arrived<'_>,
    first: u64,
    varying: &mut CudaSlice<u64>,
) -> Result<(), Error> {
    match chunk {
        Arrived::Raw(items) => {
            let len = items.len() as u32;
            launch!(
                stream,
                &kernels.varying,
                radix_grid(len.div_ceil(k::RADIX_TILE)),
                "memtune_reuse_varying",
                &items,
                &len,
                &first,
                varying
            );
        }
        Arrived::Packed { words, mut items } => {
            let len = words.len() as u32;
            launch!(
                stream,
                &kernels.widen,
                radix_grid(len.div_ceil(k::RADIX_TILE)),
                "memtune_reuse_widen",
                &words,
                &len,
                &first,
                &mut items,
                varying
            );
        }
    }
    Ok(())
}

/// The three phases of one part in its workspace `ws`.
pub(super) fn phases(
    gpu: &Context,
    kernels: &Kernels,
    ring: &mut Ring,
    ws: &mut Workspace,
    items: &[u64],
    job: &Job,
    shared: &Shared,
) -> Result<Done, Step> {
    let stream = gpu.stream().clone();
    let n = items.len() as u32;
    let missing = |part| GpuReuseError::Missing { part };
    let ctx = gpu.cuda_context().cu_ctx() as usize;
    let sync = || stream.synchronize().map_err(cuda("cuStreamSynchronize"));
    let mut seconds = [0.0; 3];
    let mut clock = Instant::now();
    let mut lap = |i: usize| {
        seconds[i] = clock.elapsed().as_secs_f64();
        clock = Instant::now();
    };

    // Phase 1: the part uploaded, the bits in which its items differ from the first reduced
    // on each chunk as it arrives; items sorted stably with their positions; next uses
    // within the part.
    let uploading = Instant::now();
    stream
        .memset_zeros(&mut ws.varying)
        .map_err(cuda("cuMemsetD8Async"))?;
    let first = items.first().copied().unwrap_or(0);
    {
        let varying = &mut ws.varying;
        let [dst, spare] = &mut ws.keys;
        // SAFETY: every bit pattern is a valid u32; the upload writes a chunk's words
        // before the widening reads them, and the first radix pass overwrites the rest.
        let mut staging = unsafe { spare.transmute_mut::<u32>(n as usize) }
            .ok_or_else(|| too_short("the spare keys as packed words"))?;
        ring.upload(&stream, items, dst, Some(&mut staging), |chunk| {
            widen_or_reduce(&stream, kernels, chunk, first, varying)
        })?;
    }
    let upload = uploading.elapsed().as_secs_f64();
    let passes = radix::sort_items(&stream, kernels, ws, n, job.base)?;
    stream
        .memset_zeros(&mut ws.distinct)
        .map_err(cuda("cuMemsetD8Async"))?;
    launch!(
        stream,
        &kernels.next,
        grid(n),
        "memtune_reuse_next",
        &ws.keys[0],
        &ws.vals[0],
        &n,
        &job.base,
        &job.total,
        &mut ws.next,
        &mut ws.distinct
    );
    let distinct = stream
        .clone_dtoh(&ws.distinct)
        .map_err(cuda("cuMemcpyDtoH"))?;
    sync()?;
    let distinct = distinct.first().copied().map_or(0, u64::from);
    shared.distinct.fetch_add(distinct, Ordering::Relaxed);
    shared.most_distinct.fetch_max(distinct, Ordering::Relaxed);
    if job.g > 0 {
        let (a, _) = ws.keys[0].device_ptr(&stream);
        let (b, _) = ws.vals[0].device_ptr(&stream);
        put(
            &shared.items[job.g],
            Peer {
                ctx,
                ptrs: [a, b],
                len: n as usize,
            },
        );
    }
    shared.phases.wait()?;
    lap(0);
    // Every part's distinct items are counted: they bound the distances, whose buffers on
    // the host part 0 prepares while the GPUs work.
    let prefault = (job.g == 0).then(|| {
        let total = u64::from(job.total);
        let sum = shared.distinct.load(Ordering::Relaxed);
        let most = shared.most_distinct.load(Ordering::Relaxed);
        // Counts up to the largest distance, below the distinct items; a pair a distance.
        let counts = sum.min(total);
        let pairs = nextuse::distances_bound(total, sum, most);
        let len = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        Prefault::start(len(counts), len(pairs))
    });

    // Phase 2: last uses resolved against later parts (copied from their GPUs); next uses
    // sorted, counting, in the radix sort's spare buffers.
    let Workspace {
        keys: [sorted_items, spare_keys],
        vals: [sorted_positions, spare_vals],
        next,
        cuts,
        largest,
        dense,
        later_items,
        later_words,
        other,
        ..
    } = ws;
    for h in job.g + 1..shared.items.len() {
        let later = take(&shared.items[h]).ok_or(missing(h))?;
        let later_n = later.len as u32;
        peer_copy::<u64>(&stream, ctx, &mut later_items.as_view_mut(), &later, 0)?;
        peer_copy::<u32>(&stream, ctx, &mut later_words.as_view_mut(), &later, 1)?;
        launch!(
            stream,
            &kernels.resolve,
            grid(n),
            "memtune_reuse_resolve",
            &*sorted_items,
            &*sorted_positions,
            &n,
            &job.base,
            &job.total,
            &mut *next,
            &*later_items,
            &*later_words,
            &later_n
        );
        sync()?;
    }
    // SAFETY: every bit pattern is a valid u32; the merge levels write these entries
    // before reading them.
    let mut spare = unsafe { spare_keys.transmute_mut::<u32>(2 * n as usize) }
        .ok_or_else(|| too_short("the spare keys as next uses"))?;
    let (b_next, b_v) = spare.split_at_mut(n as usize);
    let a = Entries {
        next: next.as_view_mut(),
        v: spare_vals.as_view_mut(),
    };
    let b = Entries {
        next: b_next,
        v: b_v,
    };
    let mut sorted = sort_next(&stream, kernels, a, b, cuts, n, job.base)?;
    sync()?;
    if job.g > 0 {
        let (a, _) = sorted.next.device_ptr(&stream);
        put(
            &shared.next[job.g],
            Peer {
                ctx,
                ptrs: [a, 0],
                len: n as usize,
            },
        );
    }
    // The earlier parts have copied this part's sorted items.
    shared.phases.wait()?;
    lap(1);

    // Phase 3: smaller next uses of later parts counted; distances counted on the GPU.
    for h in job.g + 1..shared.next.len() {
        let later = take(&shared.next[h]).ok_or(missing(h))?;
        let later_n = later.len as u32;
        peer_copy::<u32>(&stream, ctx, &mut later_words.as_view_mut(), &later, 0)?;
        let next_uses = sorted.next.as_view();
        launch!(
            stream,
            &kernels.count_later,
            grid(n),
            "memtune_reuse_count_later",
            &next_uses,
            &mut sorted.v,
            &n,
            &*later_words,
            &later_n,
            &shared.bases[h],
            &job.total
        );
        sync()?;
    }
    stream
        .memset_zeros(&mut *dense)
        .map_err(cuda("cuMemsetD8Async"))?;
    stream
        .memset_zeros(&mut *largest)
        .map_err(cuda("cuMemsetD8Async"))?;
    {
        let (next_uses, v) = (sorted.next.as_view(), sorted.v.as_view());
        launch!(
            stream,
            &kernels.histogram,
            grid(n),
            "memtune_reuse_histogram",
            &next_uses,
            &v,
            &n,
            &job.total,
            &mut *dense,
            &mut *largest
        );
    }
    let largest = stream.clone_dtoh(&*largest).map_err(cuda("cuMemcpyDtoH"))?;
    // `largest` holds the largest distance plus one: 0 when the part has no reuse.
    let mut used = largest.first().copied().unwrap_or(0) as usize;
    sync()?;
    if job.g > 0 {
        let (a, _) = dense.device_ptr(&stream);
        put(
            &shared.dense[job.g],
            Peer {
                ctx,
                ptrs: [a, 0],
                len: used,
            },
        );
    }
    // Every part's counts are published (and the later parts' next uses were read).
    shared.phases.wait()?;
    let (mut merged, mut pairs) = (Vec::new(), Vec::new());
    if let Some(prefault) = prefault {
        // Part 0 adds the others' counts into its own, GPU to GPU, and reads the sum.
        for h in 1..shared.dense.len() {
            let counts = take(&shared.dense[h]).ok_or(missing(h))?;
            if counts.len == 0 {
                continue;
            }
            let copy = other
                .as_mut()
                .ok_or_else(|| too_short("another part's counts"))?;
            peer_copy::<u32>(&stream, ctx, &mut copy.as_view_mut(), &counts, 0)?;
            let len = counts.len as u32;
            launch!(
                stream,
                &kernels.add,
                grid(len),
                "memtune_reuse_add",
                &mut *dense,
                &*copy,
                &len
            );
            used = used.max(counts.len);
        }
        sync()?;
        let buffers = prefault.finish();
        merged = ring.download(&stream, dense, used, buffers.counts)?;
        pairs = buffers.pairs;
    }
    // Part 0 has read every part's counts: they may go.
    shared.phases.wait()?;
    lap(2);
    Ok(Done {
        merged,
        pairs,
        seconds,
        upload,
        passes,
    })
}
