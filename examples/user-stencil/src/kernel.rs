//! The kernel source, its entries, and the launch geometry of a plan (pure: checked here
//! without a GPU); `gpu::Gpu::new` compiles it for the GPU present.

use memtune::core::plan::{Dtype, StencilPlan, Variant};
use memtune::kernels::KernelSource;

pub const SOURCE: KernelSource = KernelSource {
    name: "stencil27.cu",
    source: include_str!("../kernels/stencil27.cu"),
    entries: &[
        "user_stencil_plain_f32",
        "user_stencil_staged_f32",
        "user_stencil_streaming_f32",
        "user_stencil_fill_f32",
        "user_stencil_plain_f64",
        "user_stencil_staged_f64",
        "user_stencil_streaming_f64",
        "user_stencil_fill_f64",
        COMPARE,
    ],
};

/// `user_stencil_compare(a, b, n_words, result)`.
pub const COMPARE: &str = "user_stencil_compare";

/// The entry of `variant` for `dtype`: `user_stencil_staged_f64`.
pub fn entry(variant: Variant, dtype: Dtype) -> String {
    format!("user_stencil_{}_{}", variant.as_str(), dtype.as_str())
}

/// The fill entry for `dtype`.
pub fn fill_entry(dtype: Dtype) -> String {
    format!("user_stencil_fill_{}", dtype.as_str())
}

/// CUDA's limits: threads per block, block depth, blocks along y and z.
pub const MAX_THREADS: u32 = 1024;
pub const MAX_BLOCK_Z: u32 = 64;
pub const MAX_GRID_X: u64 = (1 << 31) - 1;
pub const MAX_GRID_YZ: u64 = 65_535;
/// Threads an SM holds at once (H100, A100): the streaming grid fills one wave of them.
pub const THREADS_PER_SM: u32 = 2048;
/// Fewest planes a streaming block marches: each chunk reads two planes beyond its own.
pub const MIN_CHUNK: u32 = 8;

/// How a plan launches on a volume.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    /// Dynamic shared memory: the staged tile or the streaming plane.
    pub shared_bytes: u32,
    /// Streaming: output planes per block along z (0 for the others).
    pub chunk: u32,
}

/// The launch of `plan` on a `dims` volume of `dtype`, on a GPU with `sm_count` SMs that
/// gives a block at most `max_shared` bytes of dynamic shared memory. `Err` says why the
/// plan cannot run (the autotuner then drops that candidate).
pub fn geometry(
    plan: &StencilPlan,
    dims: [u32; 3],
    dtype: Dtype,
    sm_count: u32,
    max_shared: u32,
) -> Result<Geometry, String> {
    let [bx, by, bz] = plan.block;
    let threads = u64::from(bx) * u64::from(by) * u64::from(bz);
    if bx == 0 || by == 0 || bz == 0 || threads > u64::from(MAX_THREADS) || bz > MAX_BLOCK_Z {
        return Err(format!(
            "block {:?} is not 1 to {MAX_THREADS} threads with a depth of at most {MAX_BLOCK_Z}",
            plan.block
        ));
    }
    if let Some(axis) = dims.iter().position(|&d| d == 0) {
        return Err(format!("the volume has no cells along axis {axis}"));
    }
    if plan.variant == Variant::Streaming && bz != 1 {
        return Err(format!(
            "streaming takes one-plane blocks (depth 1), not {:?}",
            plan.block
        ));
    }
    let blocks = |d: u32, b: u32| u64::from(d).div_ceil(u64::from(b));
    let (gx, gy) = (blocks(dims[0], bx), blocks(dims[1], by));
    if gx > MAX_GRID_X || gy > MAX_GRID_YZ {
        return Err(format!(
            "{gx} x {gy} blocks along x and y for block {:?} exceed CUDA's grid",
            plan.block
        ));
    }
    let eb = u64::from(dtype.bytes());
    let (gz, shared, chunk) = match plan.variant {
        Variant::Plain => (blocks(dims[2], bz).min(MAX_GRID_YZ), 0, 0),
        Variant::Staged => {
            let tile = (u64::from(bx) + 2) * (u64::from(by) + 2) * (u64::from(bz) + 2) * eb;
            (blocks(dims[2], bz).min(MAX_GRID_YZ), tile, 0)
        }
        Variant::Streaming => {
            let plane = (u64::from(bx) + 2) * (u64::from(by) + 2) * eb;
            // One wave of blocks over the SMs, in chunks of at least MIN_CHUNK planes.
            let per_sm = u64::from((THREADS_PER_SM / (bx * by)).max(1));
            let wave = u64::from(sm_count.max(1)) * per_sm;
            let most = blocks(dims[2], MIN_CHUNK).clamp(1, MAX_GRID_YZ);
            let chunks = wave.div_ceil(gx * gy).clamp(1, most);
            let chunk = u64::from(dims[2]).div_ceil(chunks);
            (u64::from(dims[2]).div_ceil(chunk), plane, chunk)
        }
    };
    if shared > u64::from(max_shared) {
        return Err(format!(
            "{} {:?} needs {shared} bytes of shared memory, above the {max_shared} a block may take here",
            plan.variant.as_str(),
            plan.block
        ));
    }
    // Every value fits u32: gx, gy, gz are bounded above, shared by max_shared, chunk by nz.
    let narrow = |v: u64| u32::try_from(v).map_err(|_| format!("{v} does not fit a launch"));
    Ok(Geometry {
        grid: (narrow(gx)?, narrow(gy)?, narrow(gz)?),
        block: (bx, by, bz),
        shared_bytes: narrow(shared)?,
        chunk: narrow(chunk)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use memtune_example_support::testing::compiles_without_warnings;

    fn plan(variant: Variant, block: [u32; 3]) -> StencilPlan {
        StencilPlan {
            variant,
            block,
            staging: variant != Variant::Plain,
            reasons: Vec::new(),
        }
    }

    #[test]
    fn kernel_compiles_without_warnings() {
        compiles_without_warnings("kernel_compiles_without_warnings", &SOURCE);
    }

    #[test]
    fn entries_are_named_for_each_variant_and_dtype() {
        for v in [Variant::Plain, Variant::Staged, Variant::Streaming] {
            for d in [Dtype::F32, Dtype::F64] {
                let name = entry(v, d);
                assert!(SOURCE.entries.contains(&name.as_str()), "{name}");
                assert!(SOURCE
                    .source
                    .contains(&format!("user_stencil_{}", v.as_str())));
            }
        }
        assert!(SOURCE.entries.contains(&fill_entry(Dtype::F64).as_str()));
    }

    #[test]
    fn plain_and_staged_cover_the_volume() {
        let g = geometry(
            &plan(Variant::Plain, [32, 4, 2]),
            [200, 200, 200],
            Dtype::F32,
            132,
            48 << 10,
        )
        .expect("launchable");
        assert_eq!(g.grid, (7, 50, 100));
        assert_eq!((g.shared_bytes, g.chunk), (0, 0));
        let g = geometry(
            &plan(Variant::Staged, [32, 4, 2]),
            [200, 200, 200],
            Dtype::F64,
            132,
            48 << 10,
        )
        .expect("launchable");
        assert_eq!(g.shared_bytes, 34 * 6 * 4 * 8);
        // Deep volumes loop over z beyond 65535 blocks.
        let g = geometry(
            &plan(Variant::Plain, [32, 1, 1]),
            [32, 1, 200_000],
            Dtype::F32,
            132,
            48 << 10,
        )
        .expect("launchable");
        assert_eq!(g.grid.2, 65_535);
    }

    #[test]
    fn streaming_chunks_fill_a_wave_and_cover_z() {
        for (dims, block) in [
            ([512, 512, 512], [32, 8, 1]),
            ([200, 200, 200], [32, 4, 1]),
            ([33, 7, 5], [32, 8, 1]),
            ([16, 16, 100_000], [32, 1, 1]),
        ] {
            let g = geometry(
                &plan(Variant::Streaming, block),
                dims,
                Dtype::F32,
                132,
                48 << 10,
            )
            .expect("launchable");
            let (gz, chunk) = (u64::from(g.grid.2), u64::from(g.chunk));
            assert!(gz * chunk >= u64::from(dims[2]), "{dims:?}: {gz} x {chunk}");
            assert!(
                (gz - 1) * chunk < u64::from(dims[2]),
                "{dims:?}: an empty chunk"
            );
            assert!(
                chunk >= u64::from(MIN_CHUNK.min(dims[2])),
                "{dims:?}: {chunk}"
            );
            assert_eq!(g.shared_bytes, (block[0] + 2) * (block[1] + 2) * 4);
        }
    }

    #[test]
    fn unlaunchable_plans_say_why() {
        let d = [64, 64, 64];
        let err = |p: StencilPlan| geometry(&p, d, Dtype::F64, 132, 48 << 10).expect_err("refused");
        assert!(err(plan(Variant::Plain, [64, 32, 1])).contains("1 to 1024"));
        assert!(err(plan(Variant::Plain, [0, 4, 1])).contains("1 to 1024"));
        assert!(err(plan(Variant::Plain, [1, 1, 128])).contains("depth"));
        assert!(err(plan(Variant::Streaming, [32, 4, 2])).contains("one-plane"));
        assert!(err(plan(Variant::Staged, [1024, 1, 1])).contains("shared memory"));
        let e = geometry(
            &plan(Variant::Plain, [32, 1, 1]),
            [64, 70_000, 4],
            Dtype::F32,
            1,
            1 << 16,
        );
        assert!(e.expect_err("too many y blocks").contains("grid"));
        let e = geometry(
            &plan(Variant::Plain, [32, 1, 1]),
            [64, 0, 4],
            Dtype::F32,
            1,
            1 << 16,
        );
        assert!(e.expect_err("empty").contains("no cells"));
    }
}
