//! The simulated GPU, schema `memtune-sim/1` (see `docs/simulator.md`): a [`Simulator`] is a
//! [`MemorySystem`](crate::MemorySystem) whose TLBs, latencies and noise come from a
//! [`SimConfig`], so the probe's sweeps and inference run on any machine.

mod cache;
mod config;
mod model;
mod noise;
mod parse;
mod parse_fields;
mod simulator;

pub use config::{
    CacheLevelConfig, KindConfig, NoiseConfig, SimConfig, SimConfigError, TlbLevelConfig,
    BUILTIN_NAMES, DEFAULT_MAX_CHASE_ELEMENTS, SCHEMA,
};
pub use simulator::{SimStats, Simulator, READS_IN_FLIGHT_PER_SM};
