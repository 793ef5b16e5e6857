//! The kernel source, its entries and its launch grid (`gpu::Gpu::new` compiles it for the
//! GPU present).

use memtune::kernels::KernelSource;

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

#[cfg(test)]
mod tests {
    use super::*;
    use memtune_example_support::testing::compiles_without_warnings;

    #[test]
    fn kernel_compiles_without_warnings() {
        compiles_without_warnings("kernel_compiles_without_warnings", &SOURCE);
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
