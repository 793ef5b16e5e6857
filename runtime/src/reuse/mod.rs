//! Exact reuse distances on one or several GPUs (`exact-gpu`): the method of
//! [`memtune_core::reuse::nextuse`] (items sorted by [`memtune_core::reuse::radix`]),
//! whose CPU model the tests check against the sequential analysis, run by the kernels of
//! [`memtune_kernels::reuse`].
//!
//! With several GPUs the trace is cut into contiguous parts, one per GPU, each worked by
//! its own thread and context. Three phases, with a barrier between them: upload the
//! part and sort its items (next uses within the part); resolve the part's last uses
//! against the later parts' sorted items and sort the next uses, counting; count the later
//! parts' smaller next uses and compute the distances. What a GPU needs of another part
//! is copied GPU to GPU. The histogram equals the one-GPU (and the CPU) histogram exactly.
//! Each part's device memory ([`device_bytes`]) is allocated before the analysis starts.
//!
//! [`hprda`] runs HP-RDA, an approximation, on one GPU (`hp-rda-gpu`), its records sorted
//! by the same radix sort.

/// Runs `f`'s launch in the shape `cfg`, naming `what` on failure.
macro_rules! launch {
    ($stream:expr, $f:expr, $cfg:expr, $what:literal, $($arg:expr),+) => {{
        let mut l = $stream.launch_builder($f);
        $( l.arg($arg); )+
        // SAFETY: every buffer argument holds at least the entries the kernel touches in
        // this shape (a part's workspace is sized for its references, HP-RDA's buffers for
        // its largest launch) and lives until the stream is synchronised.
        unsafe { l.launch($cfg) }
            .map_err($crate::gpu::cuda(concat!("cuLaunchKernel(", $what, ")")))?;
    }};
}

mod barrier;
pub mod hprda;
mod kernels;
mod peer;
mod phases;
mod prefault;
mod radix;
pub mod replay;
mod upload;
mod workspace;

use std::sync::atomic::AtomicU64;
use std::sync::Mutex;
use std::time::Instant;

use memtune_core::reuse::nextuse::{self, MAX_REFERENCES};
use memtune_core::reuse::Histogram;
use memtune_kernels::compile_ptx;
use memtune_kernels::reuse as k;

use crate::gpu::{Context, Error};
use barrier::Phases;
use kernels::load;
use peer::{enable_peer_access, put, take, Peer};
use phases::{phases, Step};
use upload::Ring;
pub use workspace::device_bytes;
use workspace::Workspace;

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
    /// Of the first phase, the seconds copying the part from host memory to its GPU (with
    /// the OR of its items' differences, reduced on each chunk as it arrives): the rest of
    /// the analysis runs on a trace already on the GPU.
    pub upload_seconds: f64,
    /// Radix passes of the part's sort by item: one per digit of 8 bits that covers the
    /// bits in which its items differ (none when they are all equal).
    pub radix_passes: usize,
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
        distinct: AtomicU64::new(0),
        most_distinct: AtomicU64::new(0),
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
    let mut pairs = Vec::new();
    let mut out = Vec::new();
    let mut ended = None::<Instant>;
    for (d, p, part, end) in results.into_iter().flatten() {
        // Part 0 brings the sum and the pairs' buffer (the others bring nothing): taken,
        // not copied.
        if pairs.is_empty() {
            pairs = p;
        }
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
    let histogram = nextuse::from_dense_in(total, &dense, pairs);
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

/// The distance counts of every part (index = distance) and a buffer for the histogram's
/// pairs (part 0 returns them, the others nothing), what its GPU did, and when it ended.
type Finished = (Vec<u32>, Vec<(u64, u64)>, GpuPart, Instant);

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
    /// The parts' distinct items, summed (each counted within its part), and the most of
    /// one part.
    distinct: AtomicU64,
    most_distinct: AtomicU64,
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
        let later = job.later.unwrap_or(0);
        gpu.check_free(device_bytes(n, later, job.total.into()))?;
        let reuse = compile_ptx(&k::SOURCE, gpu.arch(), &[])?;
        let radix = compile_ptx(&k::RADIX_SOURCE, gpu.arch(), &[])?;
        // The host's cores shared between the parts' uploads.
        let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
        let ring = Ring::new(&gpu, items.len(), cores / job.parts)?;
        let adds_others = job.g == 0 && job.parts > 1;
        let ws = Workspace::new(gpu.stream(), n, later, job.total.into(), adds_others)?;
        Ok((load(&gpu, &reuse, &radix)?, ring, ws))
    };
    let (kernels, mut ring, mut ws) = run().map_err(gpu_err)?;
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
    let done =
        phases(&gpu, &kernels, &mut ring, &mut ws, items, job, shared).map_err(|e| match e {
            Step::Gpu(source) => GpuReuseError::Gpu { ordinal, source },
            Step::Other(e) => e,
        })?;
    let part = GpuPart {
        ordinal,
        uuid: gpu.identity().uuid.clone(),
        references: items.len() as u64,
        seconds: began.elapsed().as_secs_f64(),
        phase_seconds: done.seconds,
        upload_seconds: done.upload,
        radix_passes: done.passes,
    };
    // The buffers and the context are freed after this, outside the analysis's time.
    Ok((done.merged, done.pairs, part, Instant::now()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_models_sizes_are_the_kernels() {
        use memtune_core::reuse::radix;
        assert_eq!(nextuse::TILE, k::BLOCK as usize);
        assert_eq!(nextuse::SORT_TILE, k::SORT_TILE as usize);
        assert_eq!(radix::TILE, k::RADIX_TILE as usize);
        assert_eq!(radix::SCAN_TILE, k::RADIX_TILE as usize);
        assert_eq!(radix::THREADS, k::RADIX_THREADS as usize);
        assert_eq!(radix::RADIX_BITS, k::RADIX_BITS);
        assert_eq!(radix::RADIX, k::RADIX as usize);
        let per_thread = k::RADIX_TILE / k::RADIX_THREADS;
        for (source, define, value) in [
            (&k::SOURCE, "MEMTUNE_REUSE_TILE", k::BLOCK),
            (&k::SOURCE, "MEMTUNE_REUSE_SORT_TILE", k::SORT_TILE),
            (&k::RADIX_SOURCE, "MEMTUNE_RADIX_BITS", k::RADIX_BITS),
            (&k::RADIX_SOURCE, "MEMTUNE_RADIX", k::RADIX),
            (&k::RADIX_SOURCE, "MEMTUNE_RADIX_THREADS", k::RADIX_THREADS),
            (&k::RADIX_SOURCE, "MEMTUNE_RADIX_PER_THREAD", per_thread),
        ] {
            let line = format!("#define {define} {value}\n");
            assert!(source.source.contains(&line), "{}: {line}", source.name);
        }
    }

    #[test]
    fn refuses_what_it_cannot_take_before_touching_a_gpu() {
        assert!(matches!(analyze(&[1, 2], &[]), Err(GpuReuseError::NoGpu)));
        let empty = analyze(&[], &[0]).map(|a| a.histogram);
        assert!(matches!(empty, Ok(h) if h == Histogram::new()));
    }
}
