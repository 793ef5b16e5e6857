//! The simulated GPU: a [`MemorySystem`] answering from [`SimConfig`] through the cost models.

use super::allocation::allocated;
use super::cache::{
    chase_cycles as cache_chase_cycles, cold_stride_cycles, sharing_cycles, CacheGeometry,
    SharingPaths,
};
use super::config::{ReadOnlyConfig, SimConfig};
use super::limits::{MAX_TLB_CHASE_LOADS, TLB_STEP_WEIGHT, WORK_BUDGET_STEPS};
use super::model::KindModel;
use super::noise::Noise;
use crate::fault::{FaultOp, FaultSection, Faults};
use crate::{
    BackendError, Carveout, LoadPath, MemorySystem, RandomChaseSamples, CONSTANT_BANK_BYTES,
    TIMED_LOADS_CAP,
};
use memtune_core::profile::{format_uuid, ComputeCapability, DeviceIdentity, MemoryKind};
use std::collections::BTreeMap;

/// Reads each SM keeps in flight in the random-access model: enough warps to hide latency,
/// so throughput is set by latency (`sm_count * READS_IN_FLIGHT_PER_SM / cycles` reads per
/// cycle), as in seed 000 Figure 1, unless a level's `walks_in_flight` also limits it
/// (docs/simulator.md, "Random access").
pub const READS_IN_FLIGHT_PER_SM: f64 = 64.0;

/// What a simulated probe cost, in the units that matter on a real GPU.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SimStats {
    pub chase_calls: u64,
    pub pair_calls: u64,
    pub random_access_calls: u64,
    /// Loads a GPU would execute: each chain's warm-up walk plus its timed loads.
    pub loads: u64,
    /// The simulator's own work: cache lines compared and sets made, TLB pages handled.
    pub work_steps: u64,
}

/// A simulated GPU.
#[derive(Debug, Clone)]
pub struct Simulator {
    config: SimConfig,
    models: BTreeMap<MemoryKind, KindModel>,
    /// Allocations made of each kind after the first (`fresh_allocation`).
    allocations: BTreeMap<MemoryKind, u64>,
    noise: Noise,
    stats: SimStats,
    work_budget: u64,
    faults: Faults,
}

impl Simulator {
    /// A simulator of `config` that refuses calls once its work passes
    /// [`WORK_BUDGET_STEPS`](super::WORK_BUDGET_STEPS) (see [`Simulator::with_work_budget`]).
    pub fn new(config: SimConfig) -> Simulator {
        let models = config
            .memory_kinds
            .iter()
            .map(|(&kind, k)| {
                let first = allocated(k, kind, config.noise.seed, 0);
                (kind, KindModel::new(config.l2_hit_cycles, &first))
            })
            .collect();
        let noise = Noise::new(config.noise);
        Simulator {
            config,
            models,
            allocations: BTreeMap::new(),
            noise,
            stats: SimStats::default(),
            work_budget: WORK_BUDGET_STEPS,
            faults: Faults::none(),
        }
    }

    /// The same, failing the operations `faults` names as the GPU would (`MEMTUNE_FAULT`):
    /// the simulator allocates nothing, so `alloc` and `launch` of a section both fail its
    /// calls. Bandwidth and staging are not simulated; faults naming them never fire.
    pub fn with_faults(mut self, faults: Faults) -> Simulator {
        self.faults = faults;
        self
    }

    /// Fails a call of `section` that `faults` names.
    fn check_faults(&self, section: FaultSection) -> Result<(), BackendError> {
        self.faults.check(FaultOp::Alloc, section)?;
        self.faults.check(FaultOp::Launch, section)?;
        Ok(())
    }

    /// The same, with another bound on [`SimStats::work_steps`]: once past it, every chase
    /// fails with a launch error instead of running (a guard behind
    /// [`SimConfig::check_work`], which refuses such probes before they start).
    pub fn with_work_budget(mut self, steps: u64) -> Simulator {
        self.work_budget = steps;
        self
    }

    /// Refuses a call of `steps` more work that would pass the budget.
    fn check_budget(&self, steps: u64) -> Result<(), BackendError> {
        if self.stats.work_steps.saturating_add(steps) > self.work_budget {
            return Err(BackendError::Launch {
                message: format!(
                    "the simulated GPU `{}` has done {} steps of work, more than its bound of {}; simulate smaller caches, fewer ways or a lower max_chase_elements",
                    self.config.name, self.stats.work_steps, self.work_budget
                ),
            });
        }
        Ok(())
    }

    pub fn config(&self) -> &SimConfig {
        &self.config
    }

    /// The identity of the simulated GPU in its profiles: name, SM count and clock from the
    /// configuration, memory size the largest kind's, and a UUID derived from the name, so
    /// one configuration always gets the same UUID.
    pub fn identity(&self) -> DeviceIdentity {
        let name = &self.config().name;
        let hash =
            memtune_core::digest::of_value(&serde_json::json!(format!("memtune-sim:{name}")));
        let hex = &hash[memtune_core::digest::PREFIX.len()..];
        // The hash's first 16 bytes stand for the 16 the driver reports.
        let bytes: [u8; 16] = std::array::from_fn(|i| {
            u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("a digest is hex")
        });
        DeviceIdentity {
            uuid: format_uuid(&bytes),
            name: format!("{name} (simulated)"),
            compute_capability: ComputeCapability { major: 0, minor: 0 },
            sm_count: self.sm_count(),
            // What the driver would report: the whole L2, the last level the L2 path sees.
            l2_bytes: self
                .config
                .caches
                .iter()
                .rfind(|l| !l.is_l1())
                .map_or(0, |l| l.size_bytes),
            shared_memory_per_block_bytes: 0,
            shared_memory_per_block_optin_bytes: 0,
            shared_memory_per_sm_bytes: 0,
            global_memory_bytes: MemoryKind::ALL
                .iter()
                .map(|&k| self.max_footprint(k))
                .max()
                .unwrap_or(0),
            sm_clock_khz: (self.clock_mhz() * 1000.0) as u64,
            memory_clock_khz: 0,
            memory_bus_width_bits: 0,
            driver_version: String::new(),
            pci_bus_id: None,
        }
    }

    pub fn stats(&self) -> SimStats {
        self.stats
    }

    /// Allocations of `kind` made after the first (by [`MemorySystem::fresh_allocation`]).
    pub fn fresh_allocations(&self, kind: MemoryKind) -> u64 {
        self.allocations.get(&kind).copied().unwrap_or(0)
    }

    fn model(&self, kind: MemoryKind) -> Result<&KindModel, BackendError> {
        self.models
            .get(&kind)
            .ok_or_else(|| BackendError::UnsupportedKind {
                kind,
                message: format!(
                    "the simulated GPU `{}` has no {kind} memory",
                    self.config.name
                ),
            })
    }

    fn check_footprint(&self, kind: MemoryKind, bytes: u64) -> Result<(), BackendError> {
        let size = self.max_footprint(kind);
        if bytes > size {
            return Err(BackendError::Allocation {
                kind,
                bytes,
                message: format!(
                    "the simulated GPU `{}` has {size} bytes of {kind} memory",
                    self.config.name
                ),
            });
        }
        Ok(())
    }

    fn check_sm(&self, sm: u32) -> Result<(), BackendError> {
        if sm >= self.config.sm_count {
            return Err(BackendError::Launch {
                message: format!(
                    "SM {sm} does not exist: the simulated GPU has {} SMs",
                    self.config.sm_count
                ),
            });
        }
        Ok(())
    }

    /// The levels a cache chase through `path` at `carveout` goes through, and the cycles of
    /// a load that misses them all.
    fn cache_levels(
        &self,
        path: LoadPath,
        carveout: Carveout,
    ) -> Result<(Vec<CacheGeometry>, f64), BackendError> {
        let c = &self.config;
        let unsupported = |what: &str| BackendError::Unsupported {
            what: format!("the simulated GPU `{}` has no {what}", c.name),
        };
        match path {
            LoadPath::Constant => {
                let miss = c
                    .constant_miss_cycles
                    .filter(|_| !c.constant_caches.is_empty())
                    .ok_or_else(|| unsupported("constant-cache model"))?;
                let levels = c
                    .constant_caches
                    .iter()
                    .map(|l| CacheGeometry::new(l, l.size_bytes))
                    .collect();
                Ok((levels, miss))
            }
            LoadPath::ReadOnly => {
                let own = match &c.read_only {
                    None => return Err(unsupported("read-only path model")),
                    Some(ReadOnlyConfig::SharesL1) => None,
                    Some(ReadOnlyConfig::Own(level)) => Some(level),
                };
                let (mut levels, miss) = self.cache_levels(LoadPath::L1, carveout)?;
                if let Some(level) = own {
                    // Its own cache in place of the L1.
                    levels[self.l1_index().unwrap_or(0)] =
                        CacheGeometry::new(level, level.size_bytes);
                }
                Ok((levels, miss))
            }
            LoadPath::L1 | LoadPath::L2 => {
                let miss = c
                    .dram_cycles
                    .ok_or_else(|| unsupported("data-cache model"))?;
                let levels = c
                    .caches
                    .iter()
                    .filter(|l| path == LoadPath::L1 || !l.is_l1())
                    .map(|l| {
                        let size = match (carveout, l.max_carveout_size_bytes) {
                            (Carveout::MaxL1, Some(max)) if l.is_l1() => max,
                            _ => l.size_bytes,
                        };
                        CacheGeometry::new(l, size)
                    })
                    .collect();
                Ok((levels, miss))
            }
        }
    }

    /// Where the L1 is among the data caches (those of the L1 path).
    fn l1_index(&self) -> Option<usize> {
        self.config.caches.iter().position(|l| l.is_l1())
    }

    /// Checks a cache chase's ring: a positive stride and footprint, at most
    /// `max_chase_elements` elements; returns the element count.
    fn ring_elements(&self, stride: u64, footprint: u64) -> Result<u64, BackendError> {
        if stride == 0 || footprint == 0 {
            return Err(BackendError::Launch {
                message: format!(
                    "a chase needs a positive stride and footprint (got {stride} and {footprint})"
                ),
            });
        }
        let elements = (footprint / stride).max(1);
        if elements > self.config.max_chase_elements {
            return Err(BackendError::Launch {
                message: format!(
                    "a ring of {elements} elements ({footprint} bytes at stride {stride}) exceeds the {} elements a chase may have",
                    self.config.max_chase_elements
                ),
            });
        }
        Ok(elements)
    }

    /// Cycles per load of one chase, before noise; also counts its cost.
    fn chase_cycles(
        &mut self,
        kind: MemoryKind,
        stride: u64,
        footprint: u64,
        shared: Option<Vec<bool>>,
    ) -> Result<f64, BackendError> {
        if stride == 0 || footprint == 0 {
            return Err(BackendError::Launch {
                message: format!(
                    "a chase needs a positive stride and footprint (got {stride} and {footprint})"
                ),
            });
        }
        let loads = (footprint / stride).max(1);
        if loads > MAX_TLB_CHASE_LOADS {
            return Err(BackendError::Launch {
                message: format!(
                    "a chase of {loads} loads ({footprint} bytes at stride {stride}) exceeds the {MAX_TLB_CHASE_LOADS} the simulator walks"
                ),
            });
        }
        // Each level handles at most one page per load.
        let chains = if shared.is_some() { 2 } else { 1 };
        let levels = self.model(kind)?.levels.len() as u64 + 1;
        let steps = chains * loads * levels * TLB_STEP_WEIGHT;
        self.check_budget(steps)?;
        let cycles = self
            .model(kind)?
            .chase_cycles(stride, loads, shared.as_deref());
        self.stats.loads += chains * (loads + loads.min(TIMED_LOADS_CAP));
        self.stats.work_steps = self.stats.work_steps.saturating_add(steps);
        Ok(cycles)
    }
}

impl MemorySystem for Simulator {
    fn name(&self) -> String {
        format!("simulated {}", self.config.name)
    }

    fn clock_mhz(&self) -> f64 {
        self.config.clock_mhz
    }

    fn sm_count(&self) -> u32 {
        self.config.sm_count
    }

    fn kinds(&self) -> Vec<MemoryKind> {
        self.models.keys().copied().collect()
    }

    fn max_footprint(&self, kind: MemoryKind) -> u64 {
        self.config
            .memory_kinds
            .get(&kind)
            .map_or(0, |k| k.size_bytes)
    }

    fn chase(
        &mut self,
        kind: MemoryKind,
        stride_bytes: u64,
        footprint_bytes: u64,
        sm: u32,
    ) -> Result<f64, BackendError> {
        self.model(kind)?;
        self.check_sm(sm)?;
        self.check_footprint(kind, footprint_bytes)?;
        self.check_faults(FaultSection::Tlb(kind))?;
        self.stats.chase_calls += 1;
        let cycles = self.chase_cycles(kind, stride_bytes, footprint_bytes, None)?;
        Ok(self.noise.apply(cycles))
    }

    fn chase_pair(
        &mut self,
        kind: MemoryKind,
        stride_bytes: u64,
        footprint_bytes: u64,
        sm: u32,
        other_sm: u32,
    ) -> Result<f64, BackendError> {
        self.model(kind)?;
        self.check_sm(sm)?;
        self.check_sm(other_sm)?;
        if sm == other_sm {
            return Err(BackendError::Launch {
                message: format!("a chase pair needs two different SMs (got {sm} twice)"),
            });
        }
        self.check_footprint(kind, footprint_bytes.saturating_mul(2))?;
        self.check_faults(FaultSection::Tlb(kind))?;
        self.stats.pair_calls += 1;
        // Consecutive SMs share a copy: SM i uses copy i / shared_by_sms.
        let shared = self.config.memory_kinds[&kind]
            .tlb
            .iter()
            .map(|l| {
                let group = l.shared_by_sms.max(1);
                sm / group == other_sm / group
            })
            .collect();
        let cycles = self.chase_cycles(kind, stride_bytes, footprint_bytes, Some(shared))?;
        Ok(self.noise.apply(cycles))
    }

    /// The next allocation of `kind`: its levels' entries move as their
    /// `allocation_spread` says (`allocation.rs`).
    fn fresh_allocation(&mut self, kind: MemoryKind, bytes: u64) -> Result<bool, BackendError> {
        self.model(kind)?;
        self.check_footprint(kind, bytes)?;
        self.faults.check(FaultOp::Alloc, FaultSection::Tlb(kind))?;
        let count = self.allocations.entry(kind).or_insert(0);
        *count += 1;
        let next = allocated(
            &self.config.memory_kinds[&kind],
            kind,
            self.config.noise.seed,
            *count,
        );
        self.models
            .insert(kind, KindModel::new(self.config.l2_hit_cycles, &next));
        Ok(true)
    }

    fn random_access(&mut self, kind: MemoryKind, region_bytes: u64) -> Result<f64, BackendError> {
        let model = self.model(kind)?;
        let cycles = model.random_read_cycles(region_bytes);
        let walk_limit = model.random_read_walk_limit(region_bytes);
        self.check_footprint(kind, region_bytes)?;
        self.check_faults(FaultSection::Random(kind))?;
        self.stats.random_access_calls += 1;
        // Latency-bound (every SM keeps its reads in flight); where the levels' miss
        // handling (`walks_in_flight`) limits reads too, the two times per read add up.
        let latency_bound = f64::from(self.config.sm_count) * READS_IN_FLIGHT_PER_SM / cycles;
        let reads_per_cycle =
            walk_limit.map_or(latency_bound, |w| 1.0 / (1.0 / latency_bound + 1.0 / w));
        let reads_per_second = reads_per_cycle * self.config.clock_mhz * 1e6;
        // Noise applies to the time measured, so a spike lowers the throughput.
        let noisy_time = self.noise.apply(1.0);
        Ok(reads_per_second / noisy_time)
    }

    fn cache_chase(
        &mut self,
        path: LoadPath,
        carveout: Carveout,
        stride_bytes: u64,
        footprint_bytes: u64,
    ) -> Result<f64, BackendError> {
        let (levels, miss_cycles) = self.cache_levels(path, carveout)?;
        self.check_faults(FaultSection::Caches)?;
        let elements = self.ring_elements(stride_bytes, footprint_bytes)?;
        if path == LoadPath::Constant && footprint_bytes > CONSTANT_BANK_BYTES {
            return Err(BackendError::Launch {
                message: format!(
                    "a constant chase of {footprint_bytes} bytes exceeds the {CONSTANT_BANK_BYTES}-byte constant bank"
                ),
            });
        }
        if path != LoadPath::Constant {
            self.check_footprint(MemoryKind::Device, footprint_bytes)?;
        }
        self.check_budget(elements)?;
        self.stats.chase_calls += 1;
        self.stats.loads += elements + elements.min(TIMED_LOADS_CAP);
        let (cycles, steps) = cache_chase_cycles(&levels, miss_cycles, stride_bytes, elements);
        self.stats.work_steps = self.stats.work_steps.saturating_add(steps);
        Ok(self.noise.apply(cycles))
    }

    /// The sharing test replayed through one cache state: the `.ca` ring through the L1
    /// path's levels, the read-only ring through the read-only path's (its own cache in
    /// the L1's place, or the L1 itself).
    fn cache_sharing(
        &mut self,
        other: LoadPath,
        stride_bytes: u64,
        l1_footprint: u64,
        other_footprint: u64,
    ) -> Result<(f64, f64), BackendError> {
        if other != LoadPath::ReadOnly {
            return Err(BackendError::Unsupported {
                what: format!("a sharing test of the {other:?} path"),
            });
        }
        self.cache_levels(LoadPath::ReadOnly, Carveout::Default)?;
        let (mut levels, miss_cycles) = self.cache_levels(LoadPath::L1, Carveout::Default)?;
        self.check_faults(FaultSection::Caches)?;
        let n = self.ring_elements(stride_bytes, l1_footprint)?;
        let m = self.ring_elements(stride_bytes, other_footprint)?;
        // A read-only cache of its own goes first: the `.ca` ring skips it, the read-only
        // ring skips the L1 (one place further on).
        let own = match &self.config.read_only {
            Some(ReadOnlyConfig::Own(level)) => {
                levels.insert(0, CacheGeometry::new(level, level.size_bytes));
                true
            }
            _ => false,
        };
        let l1 = self.l1_index().unwrap_or(0) + 1;
        let ca = |i: usize| !own || i != 0;
        let ro = |i: usize| !own || i != l1;
        self.check_budget(2 * (n + m))?;
        self.stats.chase_calls += crate::metered::SHARING_LAUNCHES;
        self.stats.loads +=
            crate::metered::sharing_loads(stride_bytes, l1_footprint, other_footprint);
        let paths = SharingPaths {
            l1: &ca,
            other: &ro,
        };
        let other = (m, crate::metered::SHARING_OTHER_PASSES);
        let ((before, after), steps) =
            sharing_cycles(&levels, miss_cycles, paths, stride_bytes, n, other);
        self.stats.work_steps = self.stats.work_steps.saturating_add(steps);
        Ok((self.noise.apply(before), self.noise.apply(after)))
    }

    fn max_chase_elements(&self) -> u64 {
        self.config.max_chase_elements
    }

    fn shared_memory_latency(&mut self) -> Result<f64, BackendError> {
        let cycles = self
            .config
            .shared_memory_cycles
            .ok_or_else(|| BackendError::Unsupported {
                what: format!(
                    "the simulated GPU `{}` has no shared-memory model",
                    self.config.name
                ),
            })?;
        self.check_faults(FaultSection::Caches)?;
        Ok(self.noise.apply(cycles))
    }

    /// The cold stride test replayed (`cache::cold_stride_cycles`): a miss costs
    /// `dram_cycles` and brings in the aligned `l2_fetch` block, a load of a block brought
    /// in costs the L2's `hit_cycles` (the first data cache past the L1); noise applies to
    /// each load. Without an L2 or `dram_cycles` it answers `Unsupported`.
    fn cold_stride_samples(
        &mut self,
        stride_bytes: u64,
        samples: u32,
    ) -> Result<RandomChaseSamples, BackendError> {
        let c = &self.config;
        let l2 = c.caches.iter().find(|l| !l.is_l1());
        let (Some(l2), Some(fetch), Some(miss)) = (l2, c.l2_fetch(), c.dram_cycles) else {
            return Err(BackendError::Unsupported {
                what: format!("the simulated GPU `{}` has no L2 model", c.name),
            });
        };
        let hit = l2.hit_cycles;
        self.check_faults(FaultSection::Caches)?;
        let count = u64::from(samples);
        if stride_bytes == 0 || count == 0 || count > TIMED_LOADS_CAP {
            return Err(BackendError::Launch {
                message: format!(
                    "a cold stride chain needs a positive stride and 1 to {TIMED_LOADS_CAP} loads (got {stride_bytes} and {samples})"
                ),
            });
        }
        let footprint = stride_bytes.saturating_mul(count);
        self.check_footprint(MemoryKind::Device, footprint)?;
        self.check_budget(count)?;
        self.stats.loads += count;
        self.stats.work_steps = self.stats.work_steps.saturating_add(count);
        let cycles = cold_stride_cycles(stride_bytes, count, fetch, hit, miss)
            .into_iter()
            .map(|y| self.noise.apply(y).round().max(1.0) as u64)
            .collect();
        Ok(RandomChaseSamples {
            footprint_bytes: footprint,
            stride_bytes,
            cycles,
        })
    }
}
