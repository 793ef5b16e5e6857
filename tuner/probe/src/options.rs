//! What the caller can ask of a probe.

use crate::Cancel;
use memtune_core::profile::MemoryKind;

/// Options of [`probe_tlb`](super::probe_tlb).
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeOptions {
    /// Kinds to probe; empty: every kind the system has.
    pub kinds: Vec<MemoryKind>,
    /// Upper bound on any footprint, below the system's own bound.
    pub max_footprint_bytes: Option<u64>,
    /// Coarser, cheaper sweeps: boundaries within about 8% instead of 4%, at most eight
    /// repeats, strides up to twice the largest page instead of four times; random access
    /// at every other power of two.
    pub quick: bool,
    /// The first stride. 4 KiB is the smallest page any GPU memory kind uses (host pages).
    pub min_stride_bytes: u64,
    /// The longest chain the TLB sweep walks. Bounds the cost of one chase (a real chase
    /// costs about 0.5-1 µs per load), keeps the chain's cache lines inside the L2 so that
    /// every latency step is a TLB step, and sets the largest number of entries a level may
    /// have and still be seen.
    pub max_loads_per_walk: u64,
    /// Loads (warm-up walks plus timed loads) the TLB sweep of one kind may spend before it
    /// turns frugal: one sample per point, boundaries to 10%. At 1-2 µs per load on a GPU,
    /// the default is a few seconds per kind.
    pub load_budget_per_kind: u64,
    /// Re-measure each TLB level found (on fresh allocations of pinned and managed memory)
    /// and keep only those found again as stable (`confirm.rs`); the others go to
    /// `TlbKind::unstable_levels`.
    pub confirm_tlb: bool,
    /// Also find which SMs share each level (`TlbLevel::shared_by_sms`).
    pub tlb_sharing: bool,
    /// Also measure random-sampling throughput against region size.
    pub random_access: bool,
    /// Set from outside (Ctrl-C) to stop the probe: every later measurement fails with
    /// [`BackendError::Cancelled`](crate::BackendError::Cancelled).
    pub cancel: Cancel,
}

impl Default for ProbeOptions {
    fn default() -> ProbeOptions {
        ProbeOptions {
            kinds: Vec::new(),
            max_footprint_bytes: None,
            quick: false,
            min_stride_bytes: 4096,
            max_loads_per_walk: 16384,
            load_budget_per_kind: 3_000_000,
            confirm_tlb: true,
            tlb_sharing: false,
            random_access: true,
            cancel: Cancel::default(),
        }
    }
}
