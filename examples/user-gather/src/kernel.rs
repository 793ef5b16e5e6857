//! The kernel source, its entries and its launch grid (`gpu::Gpu::new` compiles it for the
//! GPU present).

use memtune::kernels::KernelSource;
use memtune_example_support::gpu::Grid;

/// `user_gather(data, sum, n_words, scope_begin, scope_end, seed, reads, work)`.
pub const GATHER: &str = "user_gather";
/// `user_gather_fill(data, n_words)`.
pub const FILL: &str = "user_gather_fill";
/// A gather launch: blocks of `USER_GATHER_BLOCK` (in the source) threads, 4 per SM: the
/// grid memtune's planner models (1024 threads per SM).
pub const GRID: Grid = Grid::new(256, 4);

pub const SOURCE: KernelSource = KernelSource {
    name: "gather.cu",
    source: include_str!("../kernels/gather.cu"),
    entries: &[GATHER, FILL],
};

#[cfg(test)]
mod tests {
    use super::*;

    memtune_example_support::kernel_tests!(
        SOURCE,
        "USER_GATHER_BLOCK",
        GRID,
        [(0, (4, 256)), (132, (528, 256))]
    );
}
