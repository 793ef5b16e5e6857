//! The kernel source, its entries and its launch grid (`gpu::Gpu::new` compiles it for the
//! GPU present).

use memtune::kernels::KernelSource;

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

/// Threads per block (`USER_HIST_BLOCK` in the source).
pub const BLOCK: u32 = 256;
/// Blocks per SM: 2048 threads, a full H100 SM; every loop is grid-stride.
pub const BLOCKS_PER_SM: u32 = 8;

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

/// `(blocks, threads per block)` of every launch on a GPU with `sm_count` SMs.
pub fn grid(sm_count: u32) -> (u32, u32) {
    (sm_count.max(1) * BLOCKS_PER_SM, BLOCK)
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
            .contains(&format!("#define USER_HIST_BLOCK {BLOCK}")));
        assert_eq!(grid(0), (8, 256));
        assert_eq!(grid(132), (1056, 256));
    }

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
