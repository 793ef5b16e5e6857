//! Launch shapes and argument checks, without any CUDA call: what a [`super::Runtime`]
//! method works out before it touches the GPU, so bad arguments fail the same way on a
//! machine without one (and unit tests can check them here).

use std::ops::Range;

use memtune_core::plan::grouping::BUCKET_BYTES;
use memtune_core::plan::sampling::READ_BYTES;
use memtune_core::plan::stencil::STREAMING_VECTOR_BYTES;
use memtune_core::plan::{Approach, GroupingPlan, SamplingPlan, StencilPlan, Variant};
use memtune_kernels::params::{
    scopes, GroupingParams, StencilParams, MEMTUNE_BX, MEMTUNE_BY, MEMTUNE_BZ,
    MEMTUNE_GROUPING_BLOCK, MEMTUNE_SAMPLING_BLOCK,
};

use super::LaunchError;

/// Threads per block of every sampling launch: the kernel's default
/// `MEMTUNE_SAMPLING_BLOCK` (the runtime compiles `sampling.cu` without defines).
pub const SAMPLING_BLOCK: u32 = MEMTUNE_SAMPLING_BLOCK;
/// Sampling blocks per SM.
pub const SAMPLING_BLOCKS_PER_SM: u32 = 4;

/// The grid of every sampling launch on a GPU with `sm_count` SMs: `(blocks, threads per
/// block)` = `(max(sm_count, 1) x SAMPLING_BLOCKS_PER_SM, SAMPLING_BLOCK)`, 1-D.
///
/// The grid is part of a sampling result (each thread draws its own stream), so a CPU
/// reference must model exactly [`sampling_threads`] threads, e.g.
/// `memtune_kernels::reference::sampling::pass_sum(&params, sampling_threads(sm), ..)`.
pub fn sampling_grid(sm_count: u32) -> (u32, u32) {
    (sm_count.max(1) * SAMPLING_BLOCKS_PER_SM, SAMPLING_BLOCK)
}

/// Threads of one sampling launch on a GPU with `sm_count` SMs (see [`sampling_grid`]).
pub fn sampling_threads(sm_count: u32) -> u64 {
    let (blocks, block) = sampling_grid(sm_count);
    u64::from(blocks) * u64::from(block)
}

/// The word ranges of a sampling run's passes over `n_words` words: the whole region when
/// `plan.passes` is 1, else scopes of `plan.scope_bytes / 4` words (the last one shorter
/// when that does not divide the region), which must number exactly `plan.passes`.
pub fn sampling_scopes(n_words: u64, plan: &SamplingPlan) -> Result<Vec<Range<u64>>, LaunchError> {
    if n_words == 0 {
        return Err(LaunchError::Empty {
            what: "sampling data",
        });
    }
    match plan.passes {
        0 => Err(LaunchError::BadPlan(
            "a sampling plan needs at least one pass".into(),
        )),
        1 => Ok(std::iter::once(0..n_words).collect()),
        passes => {
            let scope_words = plan.scope_bytes / READ_BYTES;
            let found = scopes(n_words, scope_words).map_err(|_| {
                LaunchError::BadPlan(format!(
                    "sampling scope of {} bytes holds no 4-byte word",
                    plan.scope_bytes
                ))
            })?;
            check_pass_count(found, passes, || {
                format!("{n_words} words in scopes of {scope_words} words")
            })
        }
    }
}

/// Buckets of a grouping table for `n_keys` keys of which at most `distinct` are
/// distinct (`None`: assume all are): `GroupingParams::capacity_for`.
pub fn grouping_capacity(n_keys: u64, distinct: Option<u64>) -> Result<u64, LaunchError> {
    let distinct = distinct.unwrap_or(n_keys).min(n_keys);
    Ok(GroupingParams::capacity_for(distinct)?)
}

/// The bucket ranges of a grouping run's passes over a table of `capacity` buckets: the
/// whole table for [`Approach::Unscoped`] (which must have one pass), else scopes of
/// `plan.scope_bytes / 8` buckets, which must number exactly `plan.passes`.
pub fn grouping_scopes(capacity: u64, plan: &GroupingPlan) -> Result<Vec<Range<u64>>, LaunchError> {
    match (plan.approach, plan.passes) {
        (_, 0) => Err(LaunchError::BadPlan(
            "a grouping plan needs at least one pass".into(),
        )),
        (_, 1) => Ok(std::iter::once(0..capacity).collect()),
        (Approach::Unscoped, passes) => Err(LaunchError::BadPlan(format!(
            "an unscoped grouping plan has one pass, not {passes}"
        ))),
        (Approach::Naive | Approach::Copy, passes) => {
            let scope_len = plan.scope_bytes / BUCKET_BYTES;
            let found = scopes(capacity, scope_len).map_err(|_| {
                LaunchError::BadPlan(format!(
                    "grouping scope of {} bytes holds no {BUCKET_BYTES}-byte bucket",
                    plan.scope_bytes
                ))
            })?;
            check_pass_count(found, passes, || {
                format!("a table of {capacity} buckets in scopes of {scope_len} buckets")
            })
        }
    }
}

fn check_pass_count(
    found: Vec<Range<u64>>,
    passes: u32,
    what: impl FnOnce() -> String,
) -> Result<Vec<Range<u64>>, LaunchError> {
    if found.len() as u64 == u64::from(passes) {
        Ok(found)
    } else {
        Err(LaunchError::BadPlan(format!(
            "the plan has {passes} passes, but {} makes {}",
            what(),
            found.len()
        )))
    }
}

/// Grid blocks for a grid-stride grouping launch over `n` items.
pub(crate) fn grouping_blocks(n: u64, sm_count: u32) -> u32 {
    let needed = n.div_ceil(u64::from(MEMTUNE_GROUPING_BLOCK)).max(1);
    let most = u64::from(sm_count.max(1)) * 8;
    needed.min(most) as u32
}

/// Threads per block of every grouping launch (the kernels' default block).
pub const GROUPING_BLOCK: u32 = MEMTUNE_GROUPING_BLOCK;

/// Planes each block of the streaming stencil marches through (the last chunk may be
/// shorter): `gridDim.z = ceil(nz / STREAMING_PLANES)`. On an H200, 8 was the fastest
/// chunk of 8-128 at 256³ and 512³ in f32 and f64
/// (`git show 2317edf:benchmarks/results/2026-11-22-h200-kernel-explore/`): enough blocks
/// to fill the GPU, and the two extra planes a chunk starts with stay cheap.
pub const STREAMING_PLANES: u32 = 8;

/// Most blocks along a grid's y and z axes.
const GRID_YZ_LIMIT: u64 = 65_535;
/// Most blocks along x.
const GRID_X_LIMIT: u64 = (1 << 31) - 1;
/// The static shared memory the staged tiles may take (the kernel's static_assert).
const TILE_LIMIT_BYTES: u64 = 48 * 1024;

/// What one stencil sweep computes: a volume of `dims` cells (x fastest), each interior
/// cell summing its neighbours `repeats` times, `radius` of them each side along each axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StencilSweep {
    pub dims: [u32; 3],
    pub repeats: u32,
    pub radius: u32,
}

/// One stencil launch, worked out from the arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StencilLaunch {
    pub params: StencilParams,
    /// The kernel entry.
    pub entry: &'static str,
    /// `MEMTUNE_BX/BY/BZ` to compile with: the plan's block for staged and streaming;
    /// the header's defaults for plain, which does not use them.
    pub block_defines: [u32; 3],
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
}

/// Checks a stencil's arguments and works out its launch: `input_len` cells of
/// `elem_bytes` bytes forming `dims` (x fastest), `radius` neighbours each side along each
/// axis (1: 7-point, 2: 13-point).
///
/// Grid: x and y cover the volume, `ceil(n / block)` (streaming: `ceil(nx / (block x *
/// cells a 16-byte vector holds))` along x); z is `ceil(nz / block z)` (one block per slab)
/// for plain and staged, `ceil(nz / STREAMING_PLANES)` chunks for streaming, both capped
/// at 65 535 (the kernels loop over z, so a cap is still correct).
pub fn stencil_launch(
    dims: [u32; 3],
    input_len: usize,
    repeats: u32,
    plan: &StencilPlan,
    elem_bytes: u64,
    radius: u32,
) -> Result<StencilLaunch, LaunchError> {
    if input_len == 0 {
        return Err(LaunchError::Empty {
            what: "stencil input",
        });
    }
    let params = StencilParams::new(dims[0], dims[1], dims[2], repeats)?.with_radius(radius)?;
    if params.cells() != Some(input_len as u64) {
        return Err(LaunchError::BadSize(format!(
            "the input has {input_len} cells, the {}x{}x{} volume {}",
            dims[0],
            dims[1],
            dims[2],
            params.cells().unwrap_or(u64::MAX)
        )));
    }
    let [bx, by, bz] = plan.block;
    let bad_block = |why: String| LaunchError::BadBlock {
        block: plan.block,
        why,
    };
    if bx == 0 || by == 0 || bz == 0 {
        return Err(bad_block("every side must be at least 1".into()));
    }
    if u64::from(bx) * u64::from(by) * u64::from(bz) > 1024 || bx > 1024 || by > 1024 || bz > 64 {
        return Err(bad_block(
            "CUDA allows at most 1024 threads a block, x and y at most 1024, z at most 64".into(),
        ));
    }
    let (entry, block_defines, grid_z) = match plan.variant {
        Variant::Plain => (
            memtune_kernels::stencil::PLAIN,
            [MEMTUNE_BX, MEMTUNE_BY, MEMTUNE_BZ],
            dims[2].div_ceil(bz),
        ),
        Variant::Staged => (
            memtune_kernels::stencil::STAGED,
            plan.block,
            dims[2].div_ceil(bz),
        ),
        Variant::Streaming => {
            if bz != 1 {
                return Err(bad_block(
                    "the streaming variant needs a one-plane block (z = 1)".into(),
                ));
            }
            if bx % 32 != 0 {
                return Err(bad_block(
                    "the streaming variant needs whole warps along x (x a multiple of 32)".into(),
                ));
            }
            if by < radius {
                return Err(bad_block(format!(
                    "the streaming variant loads its y halo with one thread row a halo row: y must be at least the radius, {radius}"
                )));
            }
            (
                memtune_kernels::stencil::STREAMING,
                plan.block,
                dims[2].div_ceil(STREAMING_PLANES),
            )
        }
    };
    // Cells along x each thread covers: a 16-byte vector for streaming, one otherwise.
    let cells_per_thread = if plan.variant == Variant::Streaming {
        let cells = u64::from(STREAMING_VECTOR_BYTES) / elem_bytes.max(1);
        if u64::from(dims[0]) % cells != 0 {
            return Err(LaunchError::BadSize(format!(
                "the streaming variant moves {cells} cells along x at a time: dims[0] = {} must be a multiple of {cells}; use the plain or staged variant",
                dims[0]
            )));
        }
        cells
    } else {
        1
    };
    let halo = 2 * u64::from(radius);
    let tile = match plan.variant {
        Variant::Streaming => {
            u64::from(STREAMING_VECTOR_BYTES) * u64::from(bx) * (u64::from(by) + halo)
        }
        _ => {
            let [tx, ty, tz] = block_defines.map(|b| u64::from(b) + halo);
            elem_bytes * tx * ty * tz
        }
    };
    if tile > TILE_LIMIT_BYTES {
        return Err(bad_block(format!(
            "its shared tile takes {tile} bytes, more than the {TILE_LIMIT_BYTES} the kernel allows"
        )));
    }
    let grid_x = u64::from(dims[0]).div_ceil(u64::from(bx) * cells_per_thread);
    let grid_y = u64::from(dims[1].div_ceil(by));
    if grid_x > GRID_X_LIMIT || grid_y > GRID_YZ_LIMIT {
        return Err(bad_block(format!(
            "the grid would need {grid_x} x {grid_y} blocks; CUDA allows {GRID_X_LIMIT} x {GRID_YZ_LIMIT}"
        )));
    }
    let grid_z = u64::from(grid_z).clamp(1, GRID_YZ_LIMIT);
    Ok(StencilLaunch {
        params,
        entry,
        block_defines,
        grid: (grid_x as u32, grid_y as u32, grid_z as u32),
        block: (bx, by, bz),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sampling_plan(scope_bytes: u64, passes: u32) -> SamplingPlan {
        SamplingPlan {
            scope_bytes,
            passes,
            predicted_speedup: 1.0,
            reasons: vec![],
        }
    }

    #[test]
    fn the_planner_counts_the_threads_of_this_grid() {
        // The sampling planner prices cache reuse from the draws of a launch.
        for sm in [1, 132] {
            assert_eq!(
                sampling_threads(sm),
                u64::from(sm) * memtune_core::plan::sampling::THREADS_PER_SM
            );
        }
    }

    fn grouping_plan(scope_bytes: u64, passes: u32, approach: Approach) -> GroupingPlan {
        GroupingPlan {
            scope_bytes,
            passes,
            approach,
            reasons: vec![],
        }
    }

    fn stencil_plan(variant: Variant, block: [u32; 3]) -> StencilPlan {
        StencilPlan {
            variant,
            block,
            staging: variant != Variant::Plain,
            reasons: vec![],
        }
    }

    #[test]
    fn the_sampling_grid_is_fixed_by_the_sm_count() {
        assert_eq!(sampling_grid(132), (528, 256));
        assert_eq!(sampling_threads(132), 528 * 256);
        assert_eq!(sampling_grid(0), (4, 256));
    }

    #[test]
    fn sampling_scopes_match_the_plan() {
        assert_eq!(
            sampling_scopes(100, &sampling_plan(400, 1)).ok(),
            Some(std::iter::once(0..100).collect())
        );
        // 7 passes over 100 words: scopes of 15 words, the last one 10.
        let s = sampling_scopes(100, &sampling_plan(60, 7));
        assert!(
            s.as_ref().is_ok_and(|s| s.len() == 7 && s[6] == (90..100)),
            "{s:?}"
        );
        assert!(matches!(
            sampling_scopes(100, &sampling_plan(60, 0)),
            Err(LaunchError::BadPlan(_))
        ));
        assert!(matches!(
            sampling_scopes(100, &sampling_plan(60, 4)),
            Err(LaunchError::BadPlan(_))
        ));
        assert!(matches!(
            sampling_scopes(100, &sampling_plan(3, 4)),
            Err(LaunchError::BadPlan(_))
        ));
        assert!(matches!(
            sampling_scopes(0, &sampling_plan(4, 1)),
            Err(LaunchError::Empty { .. })
        ));
    }

    #[test]
    fn grouping_scopes_match_the_plan() {
        assert_eq!(grouping_capacity(1000, Some(50)).ok(), Some(128));
        assert_eq!(grouping_capacity(10, None).ok(), Some(32));
        let cap = 1 << 17;
        let s = grouping_scopes(cap, &grouping_plan(43_691 * 8, 3, Approach::Copy));
        assert!(
            s.as_ref().is_ok_and(|s| s.len() == 3 && s[2].end == cap),
            "{s:?}"
        );
        assert_eq!(
            grouping_scopes(cap, &grouping_plan(cap * 8, 1, Approach::Unscoped)).ok(),
            Some(std::iter::once(0..cap).collect())
        );
        for plan in [
            grouping_plan(cap * 8, 0, Approach::Naive),
            grouping_plan(cap * 8, 2, Approach::Unscoped),
            grouping_plan(4, 3, Approach::Naive),
            grouping_plan(cap * 4, 3, Approach::Naive),
        ] {
            assert!(
                matches!(grouping_scopes(cap, &plan), Err(LaunchError::BadPlan(_))),
                "{plan:?}"
            );
        }
    }

    #[test]
    fn a_wider_stencil_needs_a_wider_halo() {
        let dims = [64, 48, 40];
        let n = 64 * 48 * 40;
        let launch = |variant, block, elem, radius| {
            stencil_launch(dims, n, 1, &stencil_plan(variant, block), elem, radius)
        };
        let two = launch(Variant::Staged, [32, 4, 2], 4, 2);
        assert!(two.is_ok_and(|l| l.params.radius == 2));
        // Streaming loads a halo row a thread row: y must reach the radius.
        assert!(launch(Variant::Streaming, [32, 2, 1], 4, 2).is_ok());
        assert!(matches!(
            launch(Variant::Streaming, [32, 1, 1], 4, 2),
            Err(LaunchError::BadBlock { .. })
        ));
        assert!(launch(Variant::Streaming, [32, 1, 1], 4, 1).is_ok());
        // A 128x8x1 staged tile of f64: 30.5 KiB with a one-cell halo, 62 KiB with two.
        assert!(launch(Variant::Staged, [128, 8, 1], 8, 1).is_ok());
        assert!(matches!(
            launch(Variant::Staged, [128, 8, 1], 8, 2),
            Err(LaunchError::BadBlock { .. })
        ));
        for radius in [0, 3] {
            assert!(matches!(
                launch(Variant::Plain, [32, 4, 2], 4, radius),
                Err(LaunchError::Params(_))
            ));
        }
    }

    #[test]
    fn stencil_arguments_are_checked_before_any_launch() {
        let plain = stencil_plan(Variant::Plain, [32, 4, 2]);
        let l = stencil_launch([64, 48, 40], 64 * 48 * 40, 1, &plain, 4, 1);
        assert!(l.as_ref().is_ok_and(|l| l.grid == (2, 12, 20)), "{l:?}");
        assert!(matches!(
            stencil_launch([64, 48, 40], 64 * 48 * 39, 1, &plain, 4, 1),
            Err(LaunchError::BadSize(_))
        ));
        assert!(matches!(
            stencil_launch([64, 48, 40], 0, 1, &plain, 4, 1),
            Err(LaunchError::Empty { .. })
        ));
        assert!(matches!(
            stencil_launch([64, 48, 40], 64 * 48 * 40, 0, &plain, 4, 1),
            Err(LaunchError::Params(_))
        ));
        let n = 64 * 48 * 40;
        for (variant, block) in [
            (Variant::Plain, [0, 4, 2]),
            (Variant::Plain, [64, 8, 4]),
            (Variant::Streaming, [32, 4, 2]),
            (Variant::Staged, [1024, 1, 1]),
        ] {
            let r = stencil_launch([64, 48, 40], n, 1, &stencil_plan(variant, block), 8, 1);
            assert!(
                matches!(r, Err(LaunchError::BadBlock { .. })),
                "{variant:?} {block:?}: {r:?}"
            );
        }
        let streaming = stencil_launch(
            [64, 48, 40],
            n,
            6,
            &stencil_plan(Variant::Streaming, [32, 8, 1]),
            8,
            1,
        );
        // Two f64 cells a thread along x; chunks of STREAMING_PLANES planes along z.
        assert!(
            streaming
                .as_ref()
                .is_ok_and(|l| l.grid == (1, 6, 5) && l.block_defines == [32, 8, 1]),
            "{streaming:?}"
        );
        let f32_streaming = stencil_launch(
            [256, 48, 40],
            256 * 48 * 40,
            1,
            &stencil_plan(Variant::Streaming, [32, 4, 1]),
            4,
            1,
        );
        assert!(
            f32_streaming.as_ref().is_ok_and(|l| l.grid == (2, 12, 5)),
            "{f32_streaming:?}"
        );
        assert!(matches!(
            stencil_launch(
                [64, 48, 40],
                n,
                1,
                &stencil_plan(Variant::Streaming, [16, 8, 1]),
                4,
                1
            ),
            Err(LaunchError::BadBlock { .. })
        ));
        // A row whose length is not a whole number of vectors cannot be streamed.
        assert!(matches!(
            stencil_launch(
                [66, 48, 40],
                66 * 48 * 40,
                1,
                &stencil_plan(Variant::Streaming, [32, 8, 1]),
                4,
                1
            ),
            Err(LaunchError::BadSize(_))
        ));
    }
}
