//! Exact reuse distances on one or several GPUs (`exact-gpu`): the method of
//! [`memtune_core::reuse::nextuse`], whose CPU model the tests check against the sequential
//! analysis, run by the kernels of [`memtune_kernels::reuse`].
//!
//! With several GPUs the trace is cut into contiguous parts, one per GPU, each worked by
//! its own thread and context. Three phases, with a barrier between them: sort the part's
//! items (next uses within the part); resolve the part's last uses against the later
//! parts' sorted items and sort the next uses, counting; count the later parts' smaller
//! next uses and compute the distances. What a GPU needs of another part travels through
//! host memory. The histogram equals the one-GPU (and the CPU) histogram exactly.

/// Runs `f`'s launch, naming `what` on failure.
macro_rules! launch {
    ($stream:expr, $f:expr, $n:expr, $what:literal, $($arg:expr),+) => {{
        let mut l = $stream.launch_builder($f);
        $( l.arg($arg); )+
        // SAFETY: every buffer argument holds at least the `n` entries the kernel touches
        // (allocated for this part above) and lives until the stream is synchronised at the
        // end of the phase.
        unsafe { l.launch($crate::reuse::kernels::grid($n)) }.map_err(cuda(concat!("cuLaunchKernel(", $what, ")")))?;
    }};
}

mod barrier;
mod kernels;
pub mod replay;
mod upload;

use std::sync::{Arc, Mutex};
use std::time::Instant;

use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut, PushKernelArg};
use memtune_core::reuse::nextuse::{self, MAX_REFERENCES};
use memtune_core::reuse::Histogram;
use memtune_kernels::compile_ptx;
use memtune_kernels::reuse as k;

use crate::gpu::{cuda, Context, Error};
use barrier::Phases;
use kernels::{load, sort_items, sort_next, zeros, Kernels};
use upload::Ring;

/// Bytes of device memory a part of `n` references of a trace of `total` needs at most,
/// `later` being the largest later part: its sorted items and positions (12 bytes a
/// reference) kept while next uses are sorted (24), a later part's sorted items copied
/// (12 a reference of it), and distance counts with another part's copied beside them (8 a
/// reference of the trace).
pub fn device_bytes(n: u64, later: u64, total: u64) -> u64 {
    36 * n + 12 * later + 8 * total
}

/// Why an exact GPU analysis could not run.
#[derive(Debug, thiserror::Error)]
pub enum GpuReuseError {
    #[error("the trace has {references} references; exact-gpu takes at most {MAX_REFERENCES} (use --mode exact-cpu-parallel or sampled)")]
    TooLong { references: u64 },
    #[error("no GPU given")]
    NoGpu,
    #[error("GPU {ordinal}: {source}")]
    Gpu {
        ordinal: usize,
        #[source]
        source: Error,
    },
    #[error("a GPU worker thread panicked")]
    Worker,
    #[error("stopped: another GPU failed")]
    Aborted,
    #[error("part {part}'s sorted data was not shared (an internal error)")]
    Missing { part: usize },
}

/// What one GPU did.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuPart {
    pub ordinal: usize,
    pub uuid: String,
    /// References of its part.
    pub references: u64,
    /// Seconds from the common start (after compilation) to its part's distances counted.
    pub seconds: f64,
    /// Seconds of each phase: items sorted; last uses resolved and next uses sorted; later
    /// parts counted and distances counted (each up to the barrier after it).
    pub phase_seconds: [f64; 3],
    /// Of the first phase, the seconds copying the part from host memory to its GPU: the
    /// rest of the analysis runs on a trace already on the GPU.
    pub upload_seconds: f64,
}

/// An exact analysis on GPUs.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuAnalysis {
    pub histogram: Histogram,
    pub parts: Vec<GpuPart>,
    /// Seconds from the common start to the parts' distance counts merged: the analysis,
    /// without reading the trace, compiling the kernels and freeing the GPUs.
    pub seconds: f64,
    /// Seconds turning the merged counts into the [`Histogram`] (one thread, on the CPU).
    pub histogram_seconds: f64,
}

/// The exact histogram of `items` (addresses already divided by the granularity) on the
/// GPUs `ordinals`, one contiguous part each.
pub fn analyze(items: &[u64], ordinals: &[usize]) -> Result<GpuAnalysis, GpuReuseError> {
    let total = items.len() as u64;
    if total > MAX_REFERENCES {
        return Err(GpuReuseError::TooLong { references: total });
    }
    if ordinals.is_empty() {
        return Err(GpuReuseError::NoGpu);
    }
    let bounds = nextuse::part_bounds(items.len(), ordinals.len());
    if bounds.is_empty() {
        return Ok(GpuAnalysis {
            histogram: Histogram::new(),
            parts: Vec::new(),
            seconds: 0.0,
            histogram_seconds: 0.0,
        });
    }
    let parts = bounds.len();
    let shared = Shared {
        items: (0..parts).map(|_| Mutex::new(None)).collect(),
        next: (0..parts).map(|_| Mutex::new(None)).collect(),
        dense: (0..parts).map(|_| Mutex::new(None)).collect(),
        contexts: (0..parts).map(|_| Mutex::new(None)).collect(),
        bases: bounds.iter().map(|r| r.start as u32).collect(),
        phases: Phases::new(parts),
    };
    let start = Mutex::new(None::<Instant>);
    let results: Vec<Result<Finished, GpuReuseError>> = std::thread::scope(|s| {
        let handles: Vec<_> = bounds
            .iter()
            .enumerate()
            .map(|(g, range)| {
                let ordinal = ordinals[g];
                let (shared, start, bounds) = (&shared, &start, &bounds);
                s.spawn(move || {
                    let job = Job {
                        g,
                        parts,
                        base: range.start as u32,
                        total: total as u32,
                        later: bounds[g + 1..].iter().map(|r| r.len() as u64).max(),
                    };
                    let r = worker(ordinal, &items[range.clone()], &job, shared, start);
                    if r.is_err() {
                        // The others would wait for this worker at the next phase.
                        shared.phases.fail();
                    }
                    r
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(Err(GpuReuseError::Worker)))
            .collect()
    });
    // The first failure's own error, not the others' "aborted".
    let failed = results
        .iter()
        .position(|r| matches!(r, Err(e) if !matches!(e, GpuReuseError::Aborted)))
        .or_else(|| results.iter().position(Result::is_err));
    if let Some(i) = failed {
        if let Some(Err(e)) = results.into_iter().nth(i) {
            return Err(e);
        }
        return Err(GpuReuseError::Worker);
    }
    let merging = Instant::now();
    let mut dense = Vec::new();
    let mut out = Vec::new();
    let mut ended = None::<Instant>;
    for (d, part, end) in results.into_iter().flatten() {
        // Part 0 brings the sum (the others bring nothing): taken, not copied.
        if dense.is_empty() {
            dense = d;
        } else {
            if d.len() > dense.len() {
                dense.resize(d.len(), 0);
            }
            for (a, b) in dense.iter_mut().zip(&d) {
                *a += b;
            }
        }
        out.push(part);
        ended = Some(ended.map_or(end, |e| e.max(end)));
    }
    let merge = merging.elapsed().as_secs_f64();
    let converting = Instant::now();
    let histogram = nextuse::from_dense(total, &dense);
    let histogram_seconds = converting.elapsed().as_secs_f64();
    let began = start.lock().ok().and_then(|s| *s);
    let seconds = match (began, ended) {
        (Some(b), Some(e)) => e.duration_since(b).as_secs_f64() + merge,
        _ => 0.0,
    };
    Ok(GpuAnalysis {
        histogram,
        parts: out,
        seconds,
        histogram_seconds,
    })
}

/// Next uses sorted, with their positions and counts of smaller next uses to the right.
pub(super) type SortedNext = (CudaSlice<u32>, CudaSlice<u32>, CudaSlice<u32>);

/// The distance counts of every part (index = distance; part 0 returns them, the others
/// nothing), what its GPU did, and when it ended.
type Finished = (Vec<u32>, GpuPart, Instant);

/// Where each part's sorted items with positions, and sorted next uses, lie on its GPU,
/// for the earlier parts to copy.
struct Shared {
    items: Vec<Mutex<Option<Peer>>>,
    next: Vec<Mutex<Option<Peer>>>,
    /// Distance counts, which part 0 adds up.
    dense: Vec<Mutex<Option<Peer>>>,
    /// Each part's context (`CUcontext`, as an address), for peer access.
    contexts: Vec<Mutex<Option<usize>>>,
    /// Each part's first position.
    bases: Vec<u32>,
    phases: Phases,
}

/// One worker's place in the trace.
struct Job {
    g: usize,
    /// Parts (one per GPU) in all.
    parts: usize,
    base: u32,
    total: u32,
    /// References of the largest part after this one.
    later: Option<u64>,
}

/// Phases of one part on GPU `ordinal`; returns its dense distance counts.
fn worker(
    ordinal: usize,
    items: &[u64],
    job: &Job,
    shared: &Shared,
    start: &Mutex<Option<Instant>>,
) -> Result<Finished, GpuReuseError> {
    let gpu_err = |source| GpuReuseError::Gpu { ordinal, source };
    let gpu = Context::open(ordinal).map_err(gpu_err)?;
    let run = || -> Result<_, Error> {
        let n = items.len() as u64;
        gpu.check_free(device_bytes(n, job.later.unwrap_or(0), job.total.into()))?;
        let ptx = compile_ptx(&k::SOURCE, gpu.arch(), &[])?;
        // The host's cores shared between the parts' uploads.
        let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
        let ring = Ring::new(&gpu, items.len(), cores / job.parts)?;
        Ok((load(&gpu, &ptx)?, ring))
    };
    let (kernels, mut ring) = run().map_err(gpu_err)?;
    let ctx = gpu.cuda_context().cu_ctx() as usize;
    put(&shared.contexts[job.g], ctx);
    shared.phases.wait()?;
    for other in &shared.contexts {
        match take(other) {
            Some(o) if o != ctx => enable_peer_access(o),
            _ => {}
        }
    }
    shared.phases.wait()?;
    if let Ok(mut s) = start.lock() {
        s.get_or_insert_with(Instant::now);
    }
    let began = Instant::now();
    let (dense, phase_seconds, upload_seconds) =
        phases(&gpu, &kernels, &mut ring, items, job, shared).map_err(|e| match e {
            Step::Gpu(source) => GpuReuseError::Gpu { ordinal, source },
            Step::Other(e) => e,
        })?;
    let part = GpuPart {
        ordinal,
        uuid: gpu.identity().uuid.clone(),
        references: items.len() as u64,
        seconds: began.elapsed().as_secs_f64(),
        phase_seconds,
        upload_seconds,
    };
    // The buffers and the context are freed after this, outside the analysis's time.
    Ok((dense, part, Instant::now()))
}

/// A phase's failure: the GPU's own, or the analysis stopped by another worker.
enum Step {
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

/// The three phases of one part; its dense distance counts and each phase's seconds.
fn phases(
    gpu: &Context,
    kernels: &Kernels,
    ring: &mut Ring,
    items: &[u64],
    job: &Job,
    shared: &Shared,
) -> Result<(Vec<u32>, [f64; 3], f64), Step> {
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

    // Phase 1: items sorted stably, next uses within the part.
    let uploading = Instant::now();
    let keys = ring.upload(&stream, items)?;
    let upload = uploading.elapsed().as_secs_f64();
    let (sorted_items, sorted_positions) = sort_items(&stream, kernels, keys, job.base)?;
    let mut next = zeros::<u32>(&stream, n as usize)?;
    launch!(
        stream,
        &kernels.next,
        n,
        "memtune_reuse_next",
        &sorted_items,
        &sorted_positions,
        &n,
        &job.base,
        &job.total,
        &mut next
    );
    sync()?;
    if job.g > 0 {
        let (a, _) = sorted_items.device_ptr(&stream);
        let (b, _) = sorted_positions.device_ptr(&stream);
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

    // Phase 2: last uses resolved against later parts (copied from their GPUs); next uses
    // sorted, counting.
    for h in job.g + 1..shared.items.len() {
        let later = take(&shared.items[h]).ok_or(missing(h))?;
        let later_n = later.len as u32;
        let later_items = peer_copy::<u64>(&stream, ctx, &later, 0)?;
        let later_positions = peer_copy::<u32>(&stream, ctx, &later, 1)?;
        launch!(
            stream,
            &kernels.resolve,
            n,
            "memtune_reuse_resolve",
            &sorted_items,
            &sorted_positions,
            &n,
            &job.base,
            &job.total,
            &mut next,
            &later_items,
            &later_positions,
            &later_n
        );
        sync()?;
    }
    let (next, positions, mut counts) = sort_next(&stream, kernels, next, job.base)?;
    sync()?;
    if job.g > 0 {
        let (a, _) = next.device_ptr(&stream);
        put(
            &shared.next[job.g],
            Peer {
                ctx,
                ptrs: [a, 0],
                len: n as usize,
            },
        );
    }
    // The earlier parts have copied this part's sorted items: they may go.
    shared.phases.wait()?;
    drop((sorted_items, sorted_positions));
    lap(1);

    // Phase 3: smaller next uses of later parts counted; distances counted on the GPU.
    for h in job.g + 1..shared.next.len() {
        let later = take(&shared.next[h]).ok_or(missing(h))?;
        let later_n = later.len as u32;
        let later_next = peer_copy::<u32>(&stream, ctx, &later, 0)?;
        launch!(
            stream,
            &kernels.count_later,
            n,
            "memtune_reuse_count_later",
            &next,
            &mut counts,
            &n,
            &later_next,
            &later_n,
            &shared.bases[h],
            &job.total
        );
        sync()?;
    }
    let mut dense = zeros::<u32>(&stream, job.total as usize)?;
    let mut largest = zeros::<u32>(&stream, 1)?;
    launch!(
        stream,
        &kernels.histogram,
        n,
        "memtune_reuse_histogram",
        &next,
        &positions,
        &counts,
        &n,
        &job.total,
        &mut dense,
        &mut largest
    );
    let largest = stream.clone_dtoh(&largest).map_err(cuda("cuMemcpyDtoH"))?;
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
    let mut merged = Vec::new();
    if job.g == 0 {
        // Part 0 adds the others' counts into its own, GPU to GPU, and reads the sum.
        for h in 1..shared.dense.len() {
            let other = take(&shared.dense[h]).ok_or(missing(h))?;
            if other.len == 0 {
                continue;
            }
            let copy = peer_copy::<u32>(&stream, ctx, &other, 0)?;
            let len = other.len as u32;
            launch!(
                stream,
                &kernels.add,
                len,
                "memtune_reuse_add",
                &mut dense,
                &copy,
                &len
            );
            used = used.max(other.len);
        }
        if used > 0 {
            merged = stream
                .clone_dtoh(&dense.slice(..used))
                .map_err(cuda("cuMemcpyDtoH"))?;
        }
        sync()?;
    }
    // Part 0 has read every part's counts: they may go.
    shared.phases.wait()?;
    lap(2);
    Ok((merged, seconds, upload))
}

/// Where a part's sorted data lies on its GPU, for the earlier parts to copy.
#[derive(Debug, Clone, Copy)]
struct Peer {
    /// The owning context (`CUcontext`), as an address.
    ctx: usize,
    ptrs: [u64; 2],
    len: usize,
}

/// A copy on this GPU of `peer.ptrs[which]` (`peer.len` values of `T`), device to device.
fn peer_copy<T: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits>(
    stream: &Arc<cudarc::driver::CudaStream>,
    ctx: usize,
    peer: &Peer,
    which: usize,
) -> Result<CudaSlice<T>, Error> {
    let mut dst = zeros::<T>(stream, peer.len)?;
    {
        let (d, _guard) = dst.device_ptr_mut(stream);
        // SAFETY: `dst` holds `len` values of T on this context; the peer's buffer holds as
        // many on its context and lives until the barrier after this phase; the copy is
        // synchronised before then.
        unsafe {
            cudarc::driver::result::memcpy_peer_async(
                ctx as cudarc::driver::sys::CUcontext,
                d,
                peer.ctx as cudarc::driver::sys::CUcontext,
                peer.ptrs[which],
                peer.len * std::mem::size_of::<T>(),
                stream.cu_stream(),
            )
        }
        .map_err(cuda("cuMemcpyPeerAsync"))?;
    }
    Ok(dst)
}

/// Lets this thread's context read the memory of context `peer` directly (over NVLink
/// where there is one), so that copies from it take the direct path. Best effort: without
/// peer access (or with it already on) copies still work, through the host.
fn enable_peer_access(peer: usize) {
    // SAFETY: `peer` is a live context of another worker (they are dropped only after the
    // last barrier); the call only changes this context's mappings.
    let _ = unsafe {
        cudarc::driver::sys::cuCtxEnablePeerAccess(peer as cudarc::driver::sys::CUcontext, 0)
    };
}

fn put<T>(slot: &Mutex<Option<T>>, value: T) {
    if let Ok(mut s) = slot.lock() {
        *s = Some(value);
    }
}

fn take<T: Copy>(slot: &Mutex<Option<T>>) -> Option<T> {
    slot.lock().ok().and_then(|s| *s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_sorts_tiles_of_the_kernels_block() {
        assert_eq!(nextuse::TILE, k::BLOCK as usize);
    }

    #[test]
    fn refuses_what_it_cannot_take_before_touching_a_gpu() {
        assert!(matches!(analyze(&[1, 2], &[]), Err(GpuReuseError::NoGpu)));
        let empty = analyze(&[], &[0]).map(|a| a.histogram);
        assert!(matches!(empty, Ok(h) if h == Histogram::new()));
    }
}
