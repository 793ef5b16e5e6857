//! user-histogram: what a user of memtune writes to autotune a hash-grouping kernel of
//! their own.
//!
//! The kernel (`kernels/histogram.cu`) is a group-by-key aggregate with per-row work, into
//! an open-addressing table of 16-byte slots; memtune does not know it. Its TLB scoping is
//! the user's: pass k inserts only the rows whose home slot lies in the k-th scope of the
//! [`GroupingPlan`](memtune::core::plan::GroupingPlan) memtune's autotuner hands to the
//! launch closure. The binary (`src/main.rs`) tunes it (default mode) or benchmarks
//! untuned, model, autotuned and exhaustive plans (`--bench`).

pub mod args;
pub mod bench;
pub mod gpu;
pub mod kernel;
pub mod reference;
pub mod report;

use std::fmt;

/// The seed of every run: the rows the fill kernel draws.
pub const SEED: u64 = 0x0005_eed0_4a11_0c8e;

/// Bytes of one table slot: a 4-byte tag (key + 1), 4 bytes of padding, a 64-bit sum.
pub const SLOT_BYTES: u64 = 16;

/// Bytes of one input row: a 4-byte key and a 4-byte value, in two columns.
pub const ROW_BYTES: u64 = 8;

/// Smallest table: four slots (a key space of two keys).
pub const MIN_TABLE_BYTES: u64 = 4 * SLOT_BYTES;

/// Largest table: 2^32 slots, what the kernel's 32-bit hash mask reaches.
pub const MAX_TABLE_BYTES: u64 = SLOT_BYTES << 32;

/// The kernel's parameter besides the sizes: integer mixing rounds per row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variant {
    pub work: u32,
}

impl Variant {
    /// The bench's variants: memory-bound, and per-row arithmetic.
    pub const BENCH: [Variant; 2] = [Variant { work: 0 }, Variant { work: 16 }];

    /// `work 0`, `work 16`.
    pub fn name(&self) -> String {
        format!("work {}", self.work)
    }

    /// The kernel name a decision is stored under. The workload class holds the table's
    /// size class and the two memory kinds but nothing of the kernel's own parameters, so
    /// `work` (which moves the best plan) goes into the name, with a version to bump when
    /// the kernel changes.
    pub fn kernel_key(&self) -> String {
        format!("user-histogram-v1-work{}", self.work)
    }
}

/// The sizes of one run: a table of `table_bytes` (a power of two) and `rows` input rows
/// drawn from a key space of half the table's slots (fill factor at most 0.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case {
    pub table_bytes: u64,
    pub rows: u64,
    pub variant: Variant,
}

impl Case {
    pub fn slots(&self) -> u64 {
        self.table_bytes / SLOT_BYTES
    }

    /// Distinct keys the rows are drawn from: half the slots.
    pub fn key_space(&self) -> u64 {
        (self.slots() / 2).max(1)
    }
}

/// What a table holds, summed over its occupied slots; equal for every split into passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Digest {
    /// Occupied slots: distinct keys.
    pub groups: u64,
    /// Wrapping sum of `reference::digest_mix(key, sum)` over the groups.
    pub mix: u64,
    /// Wrapping sum of all sums.
    pub total: u64,
    /// Rows that found no slot (the table was too small); must be 0.
    pub dropped: u64,
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} groups, total {}, digest {:016x}",
            self.groups, self.total, self.mix
        )?;
        if self.dropped > 0 {
            write!(f, ", {} rows DROPPED", self.dropped)?;
        }
        Ok(())
    }
}

/// Why a run failed, and its exit code (`Compile` names `kernels/histogram.cu`).
pub type HistError = memtune_example_support::Error;
