//! The interface the probe measures through: the real GPU, or the simulator (`crate::sim`).
//!
//! Cost model the sweeps are designed for (a real chase costs about 0.5-1 µs per load): a
//! `chase` call walks its chain once untimed, then times at most
//! `min(loads, TIMED_LOADS_CAP)` loads. A uniform cyclic chain is in its steady state after
//! the warm-up walk, so any window of it is representative as long as it spans a few of the
//! largest pages; the sweeps never ask for more than `ProbeOptions::max_loads_per_walk`
//! loads per walk, and spend repeats only on short chains (see `sweep.rs`).

use memtune_core::profile::MemoryKind;

/// The load instruction a cache chase issues (seed 002, section III).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LoadPath {
    /// `ld.global.ca`: cached in L1 and L2.
    L1,
    /// `ld.global.cg`: cached in L2 only, so hits beyond L1's size show L2.
    L2,
    /// `ld.const`: through the constant caches; footprints up to [`CONSTANT_BANK_BYTES`].
    Constant,
    /// `ld.global.nc`: the read-only (texture) data path, at the default carveout.
    ReadOnly,
}

/// The largest constant-memory footprint a chase can use (one constant bank).
pub const CONSTANT_BANK_BYTES: u64 = 64 * 1024;

/// The share of an SM's unified L1/shared-memory storage given to L1 while a chase runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Carveout {
    /// What the driver picks for a kernel without a preference.
    Default,
    /// The largest L1 the SM allows (preferred shared-memory carveout 0).
    MaxL1,
}

/// The most loads a backend needs to time per `chase` call, after its warm-up walk.
pub const TIMED_LOADS_CAP: u64 = 2048;

/// What [`MemorySystem::random_chase_samples`] measured: the cycles of each timed load of a
/// chain of `footprint_bytes / stride_bytes` nodes visited in a random order; or what
/// [`MemorySystem::cold_stride_samples`] measured, the nodes visited in address order.
#[derive(Debug, Clone, PartialEq)]
pub struct RandomChaseSamples {
    /// The bytes the chain spans.
    pub footprint_bytes: u64,
    /// The distance between nodes.
    pub stride_bytes: u64,
    /// One per timed load, in walk order.
    pub cycles: Vec<u64>,
}

/// A GPU memory system, as the probe sees it.
pub trait MemorySystem {
    fn name(&self) -> String;
    fn clock_mhz(&self) -> f64;
    fn sm_count(&self) -> u32;
    /// The kinds of memory this system has.
    fn kinds(&self) -> Vec<MemoryKind>;
    /// The largest footprint a sweep of `kind` may use, in bytes.
    fn max_footprint(&self, kind: MemoryKind) -> u64;
    /// Mean cycles per load of a pointer chase with `stride_bytes` over `footprint_bytes` of
    /// `kind` (`footprint_bytes / stride_bytes` loads, at least one), run on SM `sm`, timed
    /// after one full warm-up walk of the chain.
    fn chase(
        &mut self,
        kind: MemoryKind,
        stride_bytes: u64,
        footprint_bytes: u64,
        sm: u32,
    ) -> Result<f64, BackendError>;
    /// Same, while SM `other_sm` concurrently walks its own chain of the same shape (for TLB
    /// sharing, seed 000 section 3.3).
    fn chase_pair(
        &mut self,
        kind: MemoryKind,
        stride_bytes: u64,
        footprint_bytes: u64,
        sm: u32,
        other_sm: u32,
    ) -> Result<f64, BackendError>;
    /// Makes the chases of `kind` that follow run on a newly allocated buffer of at least
    /// `bytes`, on other physical pages than the one before where the system can place it
    /// so (the TLB confirmation re-measures levels there: mapped host pages translate as
    /// each allocation lays them out). Returns whether a new buffer was allocated; systems
    /// that keep no buffer between chases answer `false`.
    fn fresh_allocation(&mut self, kind: MemoryKind, bytes: u64) -> Result<bool, BackendError> {
        let _ = (kind, bytes);
        Ok(false)
    }
    /// Random-sampling throughput, in reads per second, over a region of `region_bytes` of
    /// `kind` (seed 000 section 2.1).
    fn random_access(&mut self, kind: MemoryKind, region_bytes: u64) -> Result<f64, BackendError>;
    /// What drawing a random position and skipping it costs (as a TLB-scoped pass does for
    /// every position outside its scope) against reading it, both by the sampling kernel
    /// over `region_bytes` of `kind`: seconds per skipped draw over seconds per read. `None`
    /// where the system does not model it (the simulator).
    fn draw_cost(
        &mut self,
        kind: MemoryKind,
        region_bytes: u64,
    ) -> Result<Option<f64>, BackendError> {
        let _ = (kind, region_bytes);
        Ok(None)
    }
    /// Random atomic increments per second over a region of `region_bytes` of `kind`: the
    /// draws of `random_access`, each an `atomicAdd` of one 4-byte word, as a hash-grouping
    /// insert updates its bucket's count. `None` where the system does not measure it: the
    /// simulator (its model has no atomics), and memory other than device memory on the GPU
    /// (a hash table lives in device memory).
    fn random_atomic(
        &mut self,
        kind: MemoryKind,
        region_bytes: u64,
    ) -> Result<Option<f64>, BackendError> {
        let _ = (kind, region_bytes);
        Ok(None)
    }
    /// Mean cycles per load of a single-thread chase of device memory through `path`, with
    /// `stride_bytes` over `footprint_bytes` (`footprint / stride` elements, at most
    /// [`MemorySystem::max_chase_elements`]), at `carveout`, timed after one full warm-up
    /// walk. Systems without caches answer [`BackendError::Unsupported`].
    fn cache_chase(
        &mut self,
        path: LoadPath,
        carveout: Carveout,
        stride_bytes: u64,
        footprint_bytes: u64,
    ) -> Result<f64, BackendError> {
        let _ = (path, carveout, stride_bytes, footprint_bytes);
        Err(BackendError::Unsupported {
            what: format!("{} has no cache model", self.name()),
        })
    }
    /// The sharing test of the read-only path, two launches at the default carveout: one
    /// thread walks a `.ca` ring of `l1_footprint` bytes at `stride` once, then times it
    /// (`before`); in the second launch it walks the `.ca` ring once, then a ring of
    /// `other_footprint` bytes through `other`, placed past it, twice, then times the `.ca`
    /// ring (`after`). The `.ca` lines are brought in once and never hit before the other
    /// ring's walk, so a replacement that protects lines hit before (an H100's L1 does
    /// not act as LRU) cannot keep them. Returns `(before, after)` in cycles per load; `after` rises
    /// toward the L2's latency where `other`'s lines evict the L1's. Systems without such a
    /// model answer [`BackendError::Unsupported`].
    fn cache_sharing(
        &mut self,
        other: LoadPath,
        stride_bytes: u64,
        l1_footprint: u64,
        other_footprint: u64,
    ) -> Result<(f64, f64), BackendError> {
        let _ = (other, stride_bytes, l1_footprint, other_footprint);
        Err(BackendError::Unsupported {
            what: format!("{} has no cache-sharing model", self.name()),
        })
    }
    /// The most elements one cache-chase ring may have. The GPU allows 2^22: a cache shows
    /// its size only once the ring has more lines than it holds (about 470 000 lines of
    /// 128 B in an H200's L2), and a warm walk of 2^22 loads costs about a second there.
    fn max_chase_elements(&self) -> u64 {
        u64::MAX
    }
    /// Cycles of one dependent shared-memory load.
    fn shared_memory_latency(&mut self) -> Result<f64, BackendError> {
        Err(BackendError::Unsupported {
            what: format!("{} has no shared-memory model", self.name()),
        })
    }
    /// Main-memory latency as a distribution (mt4g's): one thread follows a chain that
    /// visits the nodes of a large device array in a random order, `warm` hops untimed,
    /// then times each of `samples` dependent loads (`ld.global.cg`) on its own. The system
    /// picks the footprint and stride. Systems without such a model answer
    /// [`BackendError::Unsupported`].
    fn random_chase_samples(
        &mut self,
        warm: u32,
        samples: u32,
    ) -> Result<RandomChaseSamples, BackendError> {
        let _ = (warm, samples);
        Err(BackendError::Unsupported {
            what: format!("{} has no main-memory latency model", self.name()),
        })
    }
    /// What one DRAM miss brings into the L2 (its fetch granularity), as loads: one thread
    /// walks a chain of `samples` nodes in address order, `stride_bytes` apart from a
    /// line-aligned start (node `k` points to node `k + 1`), over memory that was evicted
    /// from the L2 just before (the chain's own lines are not read by the eviction), and
    /// times each dependent load (`ld.global.cg`) on its own, with no untimed hop: load `i`
    /// reads the node at `i * stride_bytes` from the start, so the first load of each line
    /// misses and the others hit where an earlier miss brought their bytes in. Systems
    /// without such a model answer [`BackendError::Unsupported`].
    fn cold_stride_samples(
        &mut self,
        stride_bytes: u64,
        samples: u32,
    ) -> Result<RandomChaseSamples, BackendError> {
        let _ = (stride_bytes, samples);
        Err(BackendError::Unsupported {
            what: format!("{} has no L2 fetch model", self.name()),
        })
    }
}

/// Why a measurement could not be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BackendError {
    /// The footprint could not be allocated. The TLB sweep answers this by lowering its
    /// footprint bound rather than giving up on the kind.
    #[error("cannot allocate {bytes} bytes of {kind} memory: {message}")]
    Allocation {
        kind: MemoryKind,
        bytes: u64,
        message: String,
    },
    #[error("kernel launch failed: {message}")]
    Launch { message: String },
    #[error("{kind} memory is not available: {message}")]
    UnsupportedKind { kind: MemoryKind, message: String },
    /// The system cannot make this kind of measurement at all.
    #[error("not supported: {what}")]
    Unsupported { what: String },
    /// An allocation or launch failed on purpose (`MEMTUNE_FAULT`, [`crate::fault`]).
    #[error(transparent)]
    Injected(#[from] crate::fault::InjectedFault),
    /// The probe was cancelled ([`crate::Cancel`]) before this measurement.
    #[error("cancelled (interrupted)")]
    Cancelled,
}
