//! `cargo tune reuse --replay SIM`: the trace replayed through a simulated GPU's
//! set-associative caches and TLB levels (`memtune_probe::sim::Replay`), each level's hit
//! ratio set beside the prediction the reuse histogram makes for the same level taken as
//! a fully associative LRU cache.

use crate::exit::{CliError, Exit};
use memtune_core::reuse::levels::{Level, LevelKind, Prediction};
use memtune_core::MemoryKind;
use memtune_probe::sim::{Replay, ReplayLevel, SimConfig};
use serde::Serialize;
use serde_json::{json, Value};
use std::ffi::OsStr;

/// One level: predicted (fully associative LRU) and replayed (set-associative, filtered by
/// the faster levels) hit ratios.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub level: ReplayLevel,
    pub predicted_hit_ratio: f64,
    pub replayed_hit_ratio: f64,
}

/// The simulator (`--replay` spec) set up for `memory`.
pub fn open(sim: &OsStr, memory: MemoryKind) -> Result<Replay, CliError> {
    let config = SimConfig::from_spec(sim).map_err(|e| {
        let exit = match e.class() {
            memtune_core::ErrorClass::NotFound => Exit::NotFound,
            memtune_core::ErrorClass::Io => Exit::Io,
            memtune_core::ErrorClass::Invalid => Exit::InvalidProfile,
        };
        CliError::new(exit, e.to_string())
    })?;
    Replay::new(&config, memory).map_err(|e| CliError::new(Exit::Usage, e.to_string()))
}

/// The replayed levels as the fully associative levels a prediction takes.
pub fn levels(replay: &Replay) -> Vec<Level> {
    replay
        .levels()
        .into_iter()
        .map(|l| Level {
            name: l.name,
            kind: if l.kind == "tlb" {
                LevelKind::Tlb
            } else {
                LevelKind::Cache
            },
            granularity: l.granularity,
            line_bytes: l.granularity,
            capacity: l.capacity,
            bytes: l.capacity.saturating_mul(l.granularity),
            assumed_granularity: false,
            cycles: None,
        })
        .collect()
}

/// Pairs each replayed level with its prediction (same order as [`levels`]).
pub fn compare(replay: &Replay, predictions: &[Prediction]) -> Vec<Check> {
    replay
        .levels()
        .into_iter()
        .zip(predictions)
        .map(|(level, p)| Check {
            replayed_hit_ratio: level.hit_ratio(),
            predicted_hit_ratio: p.hit_ratio,
            level,
        })
        .collect()
}

pub fn to_json(sim: &OsStr, checks: &[Check]) -> Value {
    json!({ "simulator": sim.to_string_lossy(), "levels": checks })
}

pub fn print(sim: &OsStr, memory: MemoryKind, checks: &[Check]) {
    println!(
        "\nreplayed through {} ({memory} memory): hit ratio at or above each level",
        sim.to_string_lossy()
    );
    println!(
        "  {:<20} {:>9} {:>6} {:>10} {:>9} {:>9}",
        "level", "capacity", "ways", "predicted", "replayed", "diff"
    );
    for c in checks {
        let l = &c.level;
        println!(
            "  {:<20} {:>9} {:>6} {:>10.4} {:>9.4} {:>+9.4}",
            l.name,
            l.capacity,
            l.ways,
            c.predicted_hit_ratio,
            c.replayed_hit_ratio,
            c.replayed_hit_ratio - c.predicted_hit_ratio
        );
    }
    if checks.is_empty() {
        println!("  the simulator has no data cache and no {memory} TLB level");
    }
}
