//! The kernel source, its entries and its launch grid (`gpu::Gpu::new` compiles it for the
//! GPU present).

use memtune::kernels::KernelSource;
use memtune_example_support::gpu::Grid;

/// `user_hist_fill(keys, values, n_rows, key_space, seed)`.
pub const FILL: &str = "user_hist_fill";
/// `user_hist_clear(table, slots, counters)`.
pub const CLEAR: &str = "user_hist_clear";
/// `user_hist_insert_rows(keys, values, n_rows, table, slots, begin, end, work, counters)`.
pub const INSERT_ROWS: &str = "user_hist_insert_rows";
/// As `INSERT_ROWS`, then `spill_keys, spill_values`: the copy approach's first pass.
pub const INSERT_SPILL: &str = "user_hist_insert_spill";
/// `user_hist_insert_spilled(spill_keys, spill_values, table, slots, begin, end, work,
/// counters)`: the copy approach's later passes.
pub const INSERT_SPILLED: &str = "user_hist_insert_spilled";
/// `user_hist_digest(table, slots, counters, out)`.
pub const DIGEST: &str = "user_hist_digest";

/// Every launch: blocks of `USER_HIST_BLOCK` (in the source) threads, 8 per SM: 2048
/// threads, a full H100 SM; every loop is grid-stride.
pub const GRID: Grid = Grid::new(256, 8);

pub const SOURCE: KernelSource = KernelSource {
    name: "histogram.cu",
    source: include_str!("../kernels/histogram.cu"),
    entries: &[
        FILL,
        CLEAR,
        INSERT_ROWS,
        INSERT_SPILL,
        INSERT_SPILLED,
        DIGEST,
    ],
};

#[cfg(test)]
mod tests {
    use super::*;

    memtune_example_support::kernel_tests!(
        SOURCE,
        "USER_HIST_BLOCK",
        GRID,
        [(0, (8, 256)), (132, (1056, 256))]
    );

    #[test]
    fn the_slot_layout_matches_the_source() {
        assert_eq!(
            std::mem::size_of::<crate::reference::Slot>() as u64,
            crate::SLOT_BYTES
        );
        assert!(SOURCE.source.contains("unsigned int tag;"));
        assert!(SOURCE.source.contains("unsigned long long sum;"));
    }
}
