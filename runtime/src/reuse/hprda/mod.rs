//! HP-RDA on one GPU (`cargo tune reuse --mode hp-rda-gpu`): the kernels of
//! [`memtune_kernels::hprda`], whose method [`memtune_core::reuse::hprda_model`] follows on
//! the CPU step for step. The histogram equals the CPU form's
//! ([`memtune_core::reuse::hprda`]) for the same ST, NB, NTB and adjustment.
//!
//! The trace goes to the GPU whole (through exact-gpu's pinned ring, the bits in which its
//! items differ reduced as it arrives) and is preprocessed there; then each launch of
//! NTB × NB × ST kept references is analyzed (`run.rs`): one thread per sub-trace, its
//! records sorted by item with exact-gpu's radix sort (one pass per digit of 8 bits that
//! covers the trace's varying bits), block- and grid-level merges. The grid table carries
//! each item's last block from launch to launch; the distance counts stay on the GPU until
//! the end. The launches' buffers are allocated once, for the largest launch.

mod overlap;
mod run;

use std::time::Instant;

use memtune_core::reuse::hprda::{HpRdaConfig, Totals};
use memtune_core::reuse::{Histogram, ReuseError};
use memtune_kernels::hprda as k;

use super::radix::scan_lens;
use super::upload::Ring;
use crate::gpu::{Context, Error};
use run::{load, run};

/// Most references of a trace (positions and distances are 32-bit on the GPU).
pub const MAX_REFERENCES: u64 = (1 << 31) - 1;

/// Why an HP-RDA analysis on the GPU could not run.
#[derive(Debug, thiserror::Error)]
pub enum HpRdaGpuError {
    #[error("the trace has {references} references; hp-rda-gpu takes at most {MAX_REFERENCES} (--mode hp-rda runs the same analysis on the CPU, streaming)")]
    TooLong { references: u64 },
    #[error(transparent)]
    Config(#[from] ReuseError),
    #[error("GPU {ordinal}: hp-rda-gpu needs {needed} bytes of device memory for this trace, {free} are free (--mode hp-rda runs the same analysis on the CPU, holding one launch at a time)")]
    TooBig {
        ordinal: usize,
        needed: u64,
        free: u64,
    },
    #[error("GPU {ordinal}: {source}")]
    Gpu {
        ordinal: usize,
        #[source]
        source: Error,
    },
    #[error("GPU {ordinal}: {count} distances fell outside the histogram (an internal error; please report it)")]
    Lost { ordinal: usize, count: u32 },
}

/// An HP-RDA analysis on one GPU and where its time went.
#[derive(Debug, Clone, PartialEq)]
pub struct HpRdaGpu {
    pub histogram: Histogram,
    pub ordinal: usize,
    /// The GPU's UUID; `None` for an empty trace, which needs no GPU.
    pub uuid: Option<String>,
    /// References left by preprocessing.
    pub kept: u64,
    pub launches: u64,
    /// Radix passes of each launch's sort of its records by item: one per digit of 8 bits
    /// that covers the bits in which the trace's items differ.
    pub radix_passes: usize,
    /// Seconds from the trace in host memory to the distance counts read back: the sum of
    /// the phases below (compiling the kernels and opening the GPU not counted).
    pub seconds: f64,
    /// Copying the trace to the GPU.
    pub upload_seconds: f64,
    /// Dropping the repeats, then allocating the launches' buffers.
    pub preprocess_seconds: f64,
    /// Thread-level analysis, every launch.
    pub thread_seconds: f64,
    /// Sorting the records, block- and grid-level merges, every launch.
    pub merge_seconds: f64,
    /// Reading the counts back (with the overlap correction, applying it on the GPU first).
    pub read_seconds: f64,
    /// Turning the counts into the [`Histogram`] on the CPU, formulas 2 and 3 included
    /// (the overlap correction runs on the GPU).
    pub histogram_seconds: f64,
}

/// Slots of a sub-trace's hash table: at least twice its references (the paper's 2 × N),
/// a power of two.
pub(super) fn table_slots(sub_trace: u64) -> u64 {
    (2 * sub_trace).next_power_of_two()
}

/// Slots of the grid table (the extra slot for item 0 aside): at least twice the kept
/// references, the most distinct items there can be.
pub(super) fn grid_slots(kept: u64) -> u64 {
    (2 * kept).max(2).next_power_of_two()
}

/// Bytes of device memory preprocessing `n` references takes: the raw and the kept trace
/// (8 bytes a reference each, the kept one at most as long), the tiles' sums and the
/// trace's varying bits.
pub fn preprocess_bytes(n: u64) -> u64 {
    16 * n + 12 * n.div_ceil(u64::from(k::BLOCK)) + 16
}

/// Bytes of device memory the analysis of `kept` references (after preprocessing) takes:
/// the kept trace (8 a reference), the distance counts inside and between sub-traces (4
/// each), the grid table (16 a slot),
/// and the largest launch's buffers: the sub-traces' hash tables (16 a slot), live bits,
/// records (12 a reference), and the sorted records with the radix sort's buffers (40 a
/// record: keys and positions twice, origin, sub-trace, first and latest) and its digit
/// counts.
pub fn analysis_bytes(kept: u64, config: &HpRdaConfig) -> Result<u64, ReuseError> {
    let launch = (config.launch_len()? as u64).min(kept);
    let st = config.sub_trace as u64;
    let subs = launch.div_ceil(st);
    let blocks = subs.div_ceil(config.threads_per_block as u64);
    let (digits, digit_sums) = scan_lens(launch);
    let per_launch = 16 * table_slots(st) * subs
        + 4 * st.div_ceil(32) * subs
        + 52 * launch
        + 4 * (digits + digit_sums)
        + 20 * subs
        + 12 * blocks
        + (1 << 20);
    // The overlap correction's counts (one per distinct item, at most the kept references)
    // and its tiles' sums and offsets.
    let overlap = 4 * kept + 32 * kept.div_ceil(u64::from(k::BLOCK)) + 64;
    Ok(16 * kept + 16 * (grid_slots(kept) + 1) + per_launch + overlap)
}

/// The bytes of device memory `analyze` needs at most for `n` references of which `kept`
/// are left by preprocessing.
pub fn device_bytes(n: u64, kept: u64, config: &HpRdaConfig) -> Result<u64, ReuseError> {
    Ok(preprocess_bytes(n).max(analysis_bytes(kept, config)?))
}

/// HP-RDA's histogram of `items` (addresses already divided by the granularity) on GPU
/// `ordinal`.
pub fn analyze(
    items: &[u64],
    config: HpRdaConfig,
    ordinal: usize,
) -> Result<HpRdaGpu, HpRdaGpuError> {
    config.launch_len()?;
    let n = items.len() as u64;
    if n > MAX_REFERENCES {
        return Err(HpRdaGpuError::TooLong { references: n });
    }
    let mut out = HpRdaGpu {
        histogram: Histogram::new(),
        ordinal,
        uuid: None,
        kept: 0,
        launches: 0,
        radix_passes: 0,
        seconds: 0.0,
        upload_seconds: 0.0,
        preprocess_seconds: 0.0,
        thread_seconds: 0.0,
        merge_seconds: 0.0,
        read_seconds: 0.0,
        histogram_seconds: 0.0,
    };
    if items.is_empty() {
        return Ok(out);
    }
    let failed = |e: Error| match e {
        Error::OutOfMemory { needed, free } => HpRdaGpuError::TooBig {
            ordinal,
            needed,
            free,
        },
        source => HpRdaGpuError::Gpu { ordinal, source },
    };
    let gpu = Context::open(ordinal).map_err(failed)?;
    out.uuid = Some(gpu.identity().uuid.clone());
    let (hp, kernels) = load(&gpu).map_err(failed)?;
    gpu.check_free(preprocess_bytes(n)).map_err(failed)?;
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let mut ring = Ring::new(&gpu, items.len(), cores).map_err(failed)?;
    let counted = run(&gpu, &hp, &kernels, &mut ring, items, &config, &mut out).map_err(failed)?;
    if counted.lost > 0 {
        return Err(HpRdaGpuError::Lost {
            ordinal,
            count: counted.lost,
        });
    }
    let building = Instant::now();
    let totals = Totals {
        references: n,
        repeats: n - out.kept,
        distinct: counted.distinct,
        thread_counts: counted.thread_counts,
    };
    out.histogram = if counted.adjusted {
        totals.histogram_adjusted(&counted.dense, &counted.cross)
    } else {
        // The dense counts adjusted slice by slice on every core.
        totals.histogram_dense(&counted.dense, &counted.cross, config.adjust)
    };
    out.histogram_seconds = building.elapsed().as_secs_f64();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_it_cannot_take_before_touching_a_gpu() {
        let bad = HpRdaConfig {
            sub_trace: 8,
            ..HpRdaConfig::default()
        };
        assert!(matches!(
            analyze(&[1, 2], bad, 0),
            Err(HpRdaGpuError::Config(_))
        ));
        let empty = analyze(&[], HpRdaConfig::default(), 0);
        assert!(matches!(empty, Ok(a) if a.histogram == Histogram::new() && a.uuid.is_none()));
    }

    #[test]
    fn memory_grows_with_the_trace_and_the_launch() {
        let c = HpRdaConfig::default();
        let bytes = |n: u64| device_bytes(n, n, &c).unwrap_or(0);
        assert!(bytes(1) > 0);
        assert!(bytes(1 << 20) < bytes(1 << 24));
        let small = HpRdaConfig { blocks: 1, ..c };
        let n = 1 << 26;
        assert!(analysis_bytes(n, &small).unwrap_or(0) < analysis_bytes(n, &c).unwrap_or(0));
        // Preprocessing takes the raw and the kept trace.
        assert!(preprocess_bytes(n) >= 16 * n);
    }

    #[test]
    fn hash_tables_hold_twice_their_keys() {
        assert_eq!(table_slots(2048), 4096);
        assert_eq!(table_slots(100), 256);
        assert_eq!(grid_slots(0), 2);
        assert!(grid_slots(1_000_000) >= 2_000_000);
    }
}
