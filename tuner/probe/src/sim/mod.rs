//! The simulated GPU, schema `memtune-sim/1` (see `docs/simulator.md`): a [`Simulator`] is a
//! [`MemorySystem`](crate::MemorySystem) whose TLBs, latencies and noise come from a
//! [`SimConfig`], so the probe's sweeps and inference run on any machine.

mod allocation;
mod cache;
mod config;
mod limits;
mod model;
mod noise;
mod parse;
mod parse_fields;
mod replay;
mod simulator;

pub use config::{
    CacheLevelConfig, KindConfig, NoiseConfig, ReadOnlyConfig, SimConfig, SimConfigError,
    TlbLevelConfig, BUILTIN_NAMES, DEFAULT_L2_FETCH_BYTES, DEFAULT_MAX_CHASE_ELEMENTS, SCHEMA,
};
pub use limits::{
    WorkEstimate, CLOCK_MHZ, MAX_CACHE_BYTES, MAX_CACHE_LEVELS, MAX_CACHE_WAYS, MAX_CHASE_ELEMENTS,
    MAX_CYCLES, MAX_LINE_BYTES, MAX_LOAD_CYCLES, MAX_LOAD_NS, MAX_MEMORY_USE, MAX_READS_PER_SECOND,
    MAX_SETS, MAX_TLB_CHASE_LOADS, MAX_WORK_STEPS, MIN_LINE_BYTES, WORK_BUDGET_STEPS,
};
pub use replay::{Replay, ReplayError, ReplayLevel, MAX_REPLAY_ENTRIES};
pub use simulator::{SimStats, Simulator, READS_IN_FLIGHT_PER_SM};
