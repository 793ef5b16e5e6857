//! A 3-D 6-neighbour stencil (seed 003), in the three forms `memtune-kernels` provides:
//! plain (every neighbour read from global memory), staged (each block first copies its
//! cells and a one-cell halo into shared memory), and streaming (a one-plane block marching
//! along z, each plane staged once, the planes above and below kept in registers).

use super::error::PlanError;
use crate::profile::{Profile, StagingEntry};
use serde::{Deserialize, Serialize};

/// The block with no staging data: 256 threads (seed 003: small blocks are slower on every
/// architecture), a warp's width along the contiguous x axis so that loads coalesce, and a
/// shallow z so that the block also fits thin volumes.
pub const DEFAULT_BLOCK: [u32; 3] = [32, 4, 2];

/// Staging is chosen only when measured at least 5% faster than the best plain block. Seed
/// 003 saw at most 12% on Kepler, and on Maxwell and Pascal "by some combination of SMem
/// size the calculation takes more time with SMem than without": smaller measured gains are
/// within noise and may not carry over to another grid.
const STAGING_MARGIN: f64 = 1.05;

/// Streaming is chosen when measured at least 2% faster than both plain and staged. It is
/// timed in the same run as they are, at the same grids, where medians repeat to about 1%
/// (H200); its gains carried over between the table's grids (400³ and 512³), so the
/// staging margin's doubt does not apply, and it would cost up to 5% (H200 512³ f64 x1:
/// streaming 4.6% faster than plain).
const STREAMING_MARGIN: f64 = 1.02;

/// CUDA's limits: blocks per grid along x and y (every variant loops over z, so depth is
/// unlimited); threads per block; block depth.
const GRID_LIMITS: [u64; 2] = [(1 << 31) - 1, 65_535];
const MAX_THREADS: u32 = 1024;
const MAX_BLOCK_Z: u32 = 64;
const AXES: [&str; 3] = ["dims[0]", "dims[1]", "dims[2]"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    F32,
    F64,
}

/// Bytes of the vector of x cells each thread of the streaming kernel moves: its rows must
/// be whole vectors, and its blocks whole warps along x (lanes pass x neighbours).
pub const STREAMING_VECTOR_BYTES: u32 = 16;

impl Dtype {
    /// Bytes of one cell.
    pub fn bytes(self) -> u32 {
        match self {
            Dtype::F32 => 4,
            Dtype::F64 => 8,
        }
    }

    /// The name serde writes, and the `dtype` of the profile's staging entries.
    pub fn as_str(self) -> &'static str {
        match self {
            Dtype::F32 => "f32",
            Dtype::F64 => "f64",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StencilWorkload {
    /// Cells along x (contiguous), y, z.
    pub dims: [u32; 3],
    pub dtype: Dtype,
    /// How many times each cell's neighbours are read per sweep (seed 003 uses 1, 6, 12).
    pub repeats: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Variant {
    /// A 3-D grid of blocks, neighbours read from global memory.
    Plain,
    /// A 3-D grid of blocks, each staging its cells and halo in shared memory.
    Staged,
    /// One-plane blocks (`block[2] == 1`) marching along z: each plane is staged once,
    /// the planes above and below are kept in registers (seed 003 Fig. 4's depth loop).
    Streaming,
}

impl Variant {
    /// The name serde writes: `plain`, `staged`, `streaming`.
    pub fn as_str(self) -> &'static str {
        match self {
            Variant::Plain => "plain",
            Variant::Staged => "staged",
            Variant::Streaming => "streaming",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StencilPlan {
    pub variant: Variant,
    /// Threads per block along x, y, z.
    pub block: [u32; 3],
    /// Whether cells are staged in shared memory: `variant != Plain`, spelled out for
    /// build-time defines.
    pub staging: bool,
    pub reasons: Vec<String>,
}

/// Plans a 3-D stencil of `workload` on the GPU `profile` describes.
pub fn plan(profile: &Profile, workload: &StencilWorkload) -> Result<StencilPlan, PlanError> {
    workload.check()?;
    let mut reasons = Vec::new();
    let (choice, block) = choose_staging(profile, workload, &mut reasons);

    let mut clamped = block;
    for (b, &d) in clamped.iter_mut().zip(&workload.dims) {
        *b = (*b).min(d);
    }
    if clamped != block {
        reasons.push(format!("block {block:?} clamped to the grid: {clamped:?}"));
    }

    check_grid(workload, clamped)?;
    let variant = match (choice, clamped[2]) {
        (Variant::Plain, _) => Variant::Plain,
        // Measured fastest as streaming: its block is one plane deep (checked).
        (Variant::Streaming, _) => Variant::Streaming,
        (Variant::Staged, 1) if streamable(workload, clamped).is_ok() => {
            // The same tile, but each plane is read once rather than as the halo of the
            // slabs above and below as well: seed 003's depth loop with one plane a step.
            reasons.push(
                "the staged block is one plane deep: streaming, which marches it along z and reads each plane once"
                    .to_string(),
            );
            Variant::Streaming
        }
        (Variant::Staged, _) => Variant::Staged,
    };
    Ok(StencilPlan {
        variant,
        block: clamped,
        staging: variant != Variant::Plain,
        reasons,
    })
}

/// The block of the untuned plan: [`DEFAULT_BLOCK`] clamped to the grid.
pub fn untuned_block(dims: [u32; 3]) -> [u32; 3] {
    let mut block = DEFAULT_BLOCK;
    for (b, &d) in block.iter_mut().zip(&dims) {
        *b = (*b).min(d).max(1);
    }
    block
}

/// The grid of `block`s over the workload fits the launch limits.
pub(crate) fn check_grid(workload: &StencilWorkload, block: [u32; 3]) -> Result<(), PlanError> {
    for (axis, &limit) in GRID_LIMITS.iter().enumerate() {
        let (value, b) = (workload.dims[axis], block[axis]);
        let blocks = u64::from(value).div_ceil(u64::from(b));
        if blocks > limit {
            return Err(PlanError::GridTooLarge {
                argument: AXES[axis],
                value,
                block: b,
                blocks,
                limit,
            });
        }
    }
    Ok(())
}

/// Which variant the staging table measured best (plain, staged or streaming), and its
/// block. A staged choice whose block turns out one plane deep becomes streaming in
/// [`plan`].
fn choose_staging(
    profile: &Profile,
    w: &StencilWorkload,
    reasons: &mut Vec<String>,
) -> (Variant, [u32; 3]) {
    let plain_default = |reasons: &mut Vec<String>, why: String| {
        reasons.push(format!(
            "{why}: plain with block {DEFAULT_BLOCK:?}; run `cargo tune` to measure staging"
        ));
        (Variant::Plain, DEFAULT_BLOCK)
    };
    let Some(table) = profile.shared_memory_staging.measured() else {
        let status = profile.shared_memory_staging.status_line();
        return plain_default(reasons, format!("no staging data ({status})"));
    };
    let dtype = w.dtype.as_str();
    let Some(entry) = nearest_entry(&table.entries, w) else {
        return plain_default(reasons, format!("no staging data for {dtype}"));
    };
    if !valid_block(entry.best_plain_block) || !valid_block(entry.best_staged_block) {
        return plain_default(
            reasons,
            format!(
                "the {dtype} staging entry's blocks are not launchable ({:?}, {:?})",
                entry.best_plain_block, entry.best_staged_block
            ),
        );
    }
    reasons.push(format!(
        "staging table, {dtype} x{} on {:?}: plain {:.3} ms with {:?}, staged {:.3} ms with {:?}, benefit {:.2}",
        entry.repeats,
        entry.grid,
        entry.best_plain_ms,
        entry.best_plain_block,
        entry.best_staged_ms,
        entry.best_staged_block,
        entry.benefit
    ));
    let streaming = streaming_choice(entry, reasons).and_then(|block| match streamable(w, block) {
        Ok(()) => Some(block),
        Err(why) => {
            reasons.push(format!("{why}: not streaming"));
            None
        }
    });
    if entry.benefit <= STAGING_MARGIN && streaming.is_none() {
        reasons.push(format!(
            "benefit {:.2} is not above {STAGING_MARGIN}: plain",
            entry.benefit
        ));
        return (Variant::Plain, entry.best_plain_block);
    }
    if entry.repeats > w.repeats {
        // Staging pays more as neighbours are read more often (seed 003 §4: on Kepler from
        // 6 reads on), so a gain measured with more repeats is not assumed for fewer.
        reasons.push(format!(
            "measured with {} repeats, more than this workload's {}; staging pays less with fewer reads: plain",
            entry.repeats, w.repeats
        ));
        return (Variant::Plain, entry.best_plain_block);
    }
    if let Some(block) = streaming {
        return (Variant::Streaming, block);
    }
    reasons.push(format!(
        "benefit {:.2} is above {STAGING_MARGIN}: staged",
        entry.benefit
    ));
    (Variant::Staged, entry.best_staged_block)
}

/// The entry's streaming block when streaming was measured and is the fastest of the
/// three by the streaming margin: more than [`STREAMING_MARGIN`] times faster than both
/// the best plain and the best staged block (so a streaming time within noise of staged
/// keeps the staged choice). `None` for entries without streaming data (older profiles).
fn streaming_choice(entry: &StagingEntry, reasons: &mut Vec<String>) -> Option<[u32; 3]> {
    let (Some(block), Some(ms)) = (entry.best_streaming_block, entry.best_streaming_ms) else {
        return None;
    };
    if !valid_block(block) || block[2] != 1 || !(ms.is_finite() && ms > 0.0) {
        reasons.push(format!(
            "the streaming measurement ({block:?}, {ms} ms) is not a launchable one-plane block with a positive time: ignored"
        ));
        return None;
    }
    let over_plain = entry.best_plain_ms / ms;
    let over_staged = entry.best_staged_ms / ms;
    if over_plain > STREAMING_MARGIN && over_staged > STREAMING_MARGIN {
        reasons.push(format!(
            "streaming {ms:.3} ms with {block:?} is {over_plain:.3}x plain and {over_staged:.3}x staged, both above {STREAMING_MARGIN}: streaming"
        ));
        Some(block)
    } else {
        reasons.push(format!(
            "streaming {ms:.3} ms with {block:?} ({over_plain:.3}x plain, {over_staged:.3}x staged) is not the fastest by more than {STREAMING_MARGIN}"
        ));
        None
    }
}

/// The entry of the workload's dtype with the nearest repeats (ratio-wise, fewer on a tie),
/// then the nearest grid volume.
fn nearest_entry<'a>(entries: &'a [StagingEntry], w: &StencilWorkload) -> Option<&'a StagingEntry> {
    let log_ratio = |a: f64, b: f64| (a.max(1.0) / b.max(1.0)).ln().abs();
    let volume = |d: [u32; 3]| d.iter().map(|&x| f64::from(x)).product::<f64>();
    entries
        .iter()
        .filter(|e| e.dtype == w.dtype.as_str())
        .min_by(|a, b| {
            let key = |e: &StagingEntry| {
                (
                    log_ratio(f64::from(e.repeats), f64::from(w.repeats)),
                    e.repeats > w.repeats,
                    log_ratio(volume(e.grid), volume(w.dims)),
                )
            };
            let (ka, kb) = (key(a), key(b));
            ka.0.total_cmp(&kb.0)
                .then(ka.1.cmp(&kb.1))
                .then(ka.2.total_cmp(&kb.2))
        })
}

/// Whether the streaming kernel takes `block` on this workload: whole warps along x, rows
/// of whole 16-byte vectors.
fn streamable(w: &StencilWorkload, block: [u32; 3]) -> Result<(), String> {
    let cells = STREAMING_VECTOR_BYTES / w.dtype.bytes();
    if block[0] % 32 != 0 {
        return Err(format!(
            "the streaming block {block:?} is not whole warps along x"
        ));
    }
    if w.dims[0] % cells != 0 {
        return Err(format!(
            "rows of {} {} cells are not whole {STREAMING_VECTOR_BYTES}-byte vectors of {cells}",
            w.dims[0],
            w.dtype.as_str()
        ));
    }
    Ok(())
}

fn valid_block(b: [u32; 3]) -> bool {
    let threads: u64 = b.iter().map(|&x| u64::from(x)).product();
    b.iter().all(|&x| x > 0) && threads <= u64::from(MAX_THREADS) && b[2] <= MAX_BLOCK_Z
}

impl StencilWorkload {
    fn check(&self) -> Result<(), PlanError> {
        if let Some(axis) = self.dims.iter().position(|&d| d == 0) {
            return Err(PlanError::Zero {
                argument: AXES[axis],
                fix: "pass the volume's size in cells along x, y and z, each at least 1",
            });
        }
        if self.repeats == 0 {
            return Err(PlanError::Zero {
                argument: "repeats",
                fix: "pass how many times each cell's neighbours are read (at least 1)",
            });
        }
        Ok(())
    }
}
