//! The kernel source and its NVRTC compilation for the GPU present.

use memtune::kernels::{CompiledPtx, KernelSource};

/// `user_gather(data, sum, n_words, scope_begin, scope_end, seed, reads, work)`.
pub const GATHER: &str = "user_gather";
/// `user_gather_fill(data, n_words)`.
pub const FILL: &str = "user_gather_fill";
/// Threads per block (`USER_GATHER_BLOCK` in the source).
pub const BLOCK: u32 = 256;
/// Blocks per SM: the grid memtune's planner models (1024 threads per SM).
pub const BLOCKS_PER_SM: u32 = 4;

pub const SOURCE: KernelSource = KernelSource {
    name: "gather.cu",
    source: include_str!("../kernels/gather.cu"),
    entries: &[GATHER, FILL],
};

/// `(blocks, threads per block)` of a gather launch on a GPU with `sm_count` SMs.
pub fn grid(sm_count: u32) -> (u32, u32) {
    (sm_count.max(1) * BLOCKS_PER_SM, BLOCK)
}

/// Threads of a gather launch: what the CPU reference must model.
pub fn threads(sm_count: u32) -> u64 {
    let (blocks, block) = grid(sm_count);
    u64::from(blocks) * u64::from(block)
}

/// PTX of `kernels/gather.cu` for `arch`; NVRTC's warnings count as errors.
pub fn compile(arch: &str) -> Result<CompiledPtx, crate::GatherError> {
    memtune_example_support::gpu::compile(&SOURCE, arch).map_err(crate::GatherError::Compile)
}

#[cfg(test)]
mod tests {
    use super::*;
    use memtune::kernels::toolchain::nvrtc_or_skip;

    #[test]
    fn kernel_compiles_without_warnings() {
        if !nvrtc_or_skip("kernel_compiles_without_warnings") {
            return;
        }
        for a in ["sm_80", "sm_90"] {
            let ptx = compile(a).unwrap_or_else(|e| panic!("{a}: {e}"));
            assert!(ptx.text.contains(&format!(".target {a}")), "{a}");
        }
    }

    #[test]
    fn the_block_size_matches_the_source() {
        assert!(SOURCE
            .source
            .contains(&format!("#define USER_GATHER_BLOCK {BLOCK}")));
        assert_eq!(threads(132), 132 * 1024);
        assert_eq!(grid(0), (4, 256));
    }
}
