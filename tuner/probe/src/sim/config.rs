//! The simulator's input, schema `memtune-sim/1`: the configuration types, their errors,
//! and the entry points that read a file, a built-in or a `--simulate` spec.
//!
//! Parsing goes through `serde_json::Value` by hand rather than derived `Deserialize`, so
//! that every error names the file, the full key path and the fix (`parse.rs`, with the
//! field readers in `parse_fields.rs`).

use super::limits::{check_relations, check_work_of};
use super::parse::Parser;
use crate::ProbeOptions;
use memtune_core::profile::MemoryKind;
use memtune_core::userio::{self, InputKind, UserIoError};
use memtune_core::ErrorClass;
use serde_json::Value;
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::Path;

/// The schema name every simulator file carries.
pub const SCHEMA: &str = "memtune-sim/1";

/// The built-in simulated GPUs, usable wherever a simulator file is accepted.
pub const BUILTIN_NAMES: [&str; 3] = ["k80", "p100", "gt200"];

const BUILTIN_K80: &str = include_str!("builtin/k80.json");
const BUILTIN_P100: &str = include_str!("builtin/p100.json");
const BUILTIN_GT200: &str = include_str!("builtin/gt200.json");

/// Where to read about the format; appended to errors that need it.
const DOCS: &str = "see docs/simulator.md";

/// A simulated GPU. Build it with [`SimConfig::from_json_str`], [`SimConfig::builtin`] or
/// [`SimConfig::from_spec`]; those validate, limits and the work of a default probe
/// included (`limits.rs`). The fields are public so that tests can vary a validated
/// configuration (e.g. its noise).
#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    pub name: String,
    pub sm_count: u32,
    pub clock_mhz: f64,
    /// Cycles of a chase load when every translation hits.
    pub l2_hit_cycles: f64,
    pub memory_kinds: BTreeMap<MemoryKind, KindConfig>,
    /// Data caches of device memory, fastest first (empty: none modelled).
    pub caches: Vec<CacheLevelConfig>,
    /// Constant caches, fastest first.
    pub constant_caches: Vec<CacheLevelConfig>,
    /// The read-only data path (`ld.global.nc`): through the L1 or a cache of its own;
    /// `None`: not modelled (its chases are unsupported).
    pub read_only: Option<ReadOnlyConfig>,
    /// Cycles of a cache chase load that misses every data cache; required with `caches`.
    pub dram_cycles: Option<f64>,
    /// What one DRAM miss brings into the L2 (the data caches past the L1), in the cold
    /// stride test (`MemorySystem::cold_stride_samples`); `None`: [`SimConfig::l2_fetch`]'s
    /// default. The chase model's misses bring in a sector (`sector_bytes`) as before.
    pub l2_fetch_bytes: Option<u64>,
    /// Cycles of a constant load that misses every constant cache (default `dram_cycles`).
    pub constant_miss_cycles: Option<f64>,
    pub shared_memory_cycles: Option<f64>,
    /// The most elements one cache-chase ring may have (the GPU's limit, 65536 by default).
    pub max_chase_elements: u64,
    pub noise: NoiseConfig,
}

/// One simulated cache level: LRU per set, set = line address mod sets.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheLevelConfig {
    /// `L1` levels are skipped by the L2 path (`ld.global.cg`) and follow the carveout.
    pub name: String,
    pub size_bytes: u64,
    pub line_bytes: u64,
    /// What one miss brings in, a power of two dividing the line (`None`: the whole line).
    /// A line's tag holds its sectors; a load of a present line's absent sector misses and
    /// fetches that sector without allocating.
    pub sector_bytes: Option<u64>,
    pub ways: u64,
    pub hit_cycles: f64,
    /// The size at the largest L1 carveout (`L1` only; default `size_bytes`).
    pub max_carveout_size_bytes: Option<u64>,
}

impl CacheLevelConfig {
    /// `size_bytes / (line_bytes * ways)`; validation makes it whole and at least 1.
    pub fn sets(&self) -> u64 {
        self.size_bytes / (self.line_bytes * self.ways).max(1)
    }

    /// What one miss fetches: `sector_bytes`, else the line.
    pub fn sector(&self) -> u64 {
        self.sector_bytes.unwrap_or(self.line_bytes)
    }

    pub fn is_l1(&self) -> bool {
        self.name == "L1"
    }
}

/// Where the read-only path's loads are cached (`"read_only"` in a simulator file).
#[derive(Debug, Clone, PartialEq)]
pub enum ReadOnlyConfig {
    /// `"l1"`: in the L1 itself (one storage, as on Volta and later), then as the L1 path.
    SharesL1,
    /// A cache level object: a cache of its own (as Kepler's 48 KiB read-only cache), then
    /// the levels past the L1.
    Own(CacheLevelConfig),
}

/// The default of `l2_fetch_bytes` (where the L2's line is at least this): an H100's L2
/// fills two 32 B sectors of a 128 B line from one DRAM access (`L2_FILL_BYTES` of
/// `memtune_core::reuse`, docs/calibration.md).
pub const DEFAULT_L2_FETCH_BYTES: u64 = 64;

/// The default of `max_chase_elements`: what the GPU backend allows.
pub const DEFAULT_MAX_CHASE_ELEMENTS: u64 = 65536;

/// One kind of memory of the simulated GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct KindConfig {
    pub size_bytes: u64,
    /// Added to `l2_hit_cycles` for every load of this kind (e.g. the PCIe trip of pinned memory).
    pub extra_cycles: f64,
    /// Fastest level first.
    pub tlb: Vec<TlbLevelConfig>,
}

/// One simulated TLB level.
#[derive(Debug, Clone, PartialEq)]
pub struct TlbLevelConfig {
    pub entries: u64,
    pub page_bytes: u64,
    pub miss_cycles: f64,
    /// Set-associative with this many ways when given; fully associative otherwise.
    pub ways: Option<u64>,
    /// Consecutive SMs sharing one copy of the level (1: private).
    pub shared_by_sms: u32,
    /// Misses of this level the whole GPU can have outstanding at once (each held for
    /// `miss_cycles`): a throughput limit of random access, not of a chase. `None`: unlimited.
    pub walks_in_flight: Option<f64>,
    /// How far the entries this level shows move from one allocation to the next, as a
    /// share of `entries` either way (0: the same in every allocation); see
    /// `allocation.rs`. Mapped host memory on an H100 showed a first level of 3715, 4652
    /// and 5004 entries in three probes in a row.
    pub allocation_spread: f64,
}

/// Measurement noise of the simulated GPU.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct NoiseConfig {
    /// Relative standard deviation of the Gaussian noise on each measurement.
    pub jitter: f64,
    /// Probability that a measurement is a 3-10x spike.
    pub outlier_rate: f64,
    pub seed: u64,
}

/// Why a simulator configuration was rejected. Every message names the file (or built-in),
/// the key and the fix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimConfigError {
    /// The file could not be read as a simulator config: missing, not a regular file, too
    /// large, not UTF-8 or unreadable; `class` says which, for exit codes.
    #[error("{origin}: cannot read the simulator file: {message}")]
    Input {
        origin: String,
        message: String,
        class: ErrorClass,
    },
    #[error("{origin}: not valid JSON ({message}); a simulator file is one JSON object, {DOCS}")]
    Json { origin: String, message: String },
    #[error("{origin}: `schema` is {found}, expected \"{SCHEMA}\"; set `\"schema\": \"{SCHEMA}\"` ({DOCS})")]
    Schema { origin: String, found: String },
    #[error("{origin}: missing key `{key}`; {fix}")]
    Missing {
        origin: String,
        key: String,
        fix: String,
    },
    #[error("{origin}: `{key}` {problem}; {fix}")]
    Invalid {
        origin: String,
        key: String,
        problem: String,
        fix: String,
    },
    #[error("unknown built-in simulator `{name}`; use one of k80, p100, gt200, or the path of a {SCHEMA} JSON file")]
    UnknownBuiltin { name: String },
}

impl SimConfigError {
    /// Missing input, unreadable input, or anything else (an invalid config).
    pub fn class(&self) -> ErrorClass {
        match self {
            SimConfigError::Input { class, .. } => *class,
            _ => ErrorClass::Invalid,
        }
    }
}

impl SimConfig {
    /// The L2's line: the first data cache's past the L1 (the level the probe names `L2`);
    /// `None` where there is none.
    pub fn l2_line(&self) -> Option<u64> {
        self.caches
            .iter()
            .find(|l| !l.is_l1())
            .map(|l| l.line_bytes)
    }

    /// What one DRAM miss brings into the L2: `l2_fetch_bytes`, else
    /// [`DEFAULT_L2_FETCH_BYTES`] or the L2's line where shorter; `None` without an L2.
    pub fn l2_fetch(&self) -> Option<u64> {
        let line = self.l2_line()?;
        Some(
            self.l2_fetch_bytes
                .unwrap_or(DEFAULT_L2_FETCH_BYTES.min(line)),
        )
    }

    /// Parses and validates a `memtune-sim/1` document, refusing one that a default probe
    /// could not finish within the simulator's bounds ([`SimConfig::check_work`]).
    /// `origin` (a path or a built-in name) is only used in error messages.
    pub fn from_json_str(text: &str, origin: &str) -> Result<SimConfig, SimConfigError> {
        let value: Value = serde_json::from_str(text).map_err(|e| SimConfigError::Json {
            origin: origin.to_string(),
            message: e.to_string(),
        })?;
        let config = Parser { origin }.config(&value)?;
        check_relations(&config, origin)?;
        check_work_of(&config, &ProbeOptions::default(), origin)?;
        Ok(config)
    }

    /// One of [`BUILTIN_NAMES`].
    pub fn builtin(name: &str) -> Result<SimConfig, SimConfigError> {
        let text = match name {
            "k80" => BUILTIN_K80,
            "p100" => BUILTIN_P100,
            "gt200" => BUILTIN_GT200,
            _ => {
                return Err(SimConfigError::UnknownBuiltin {
                    name: name.to_string(),
                })
            }
        };
        SimConfig::from_json_str(text, &format!("built-in simulator `{name}`"))
    }

    /// The JSON text of a built-in, for users who want a starting point for their own file.
    pub fn builtin_json(name: &str) -> Option<&'static str> {
        match name {
            "k80" => Some(BUILTIN_K80),
            "p100" => Some(BUILTIN_P100),
            "gt200" => Some(BUILTIN_GT200),
            _ => None,
        }
    }

    /// What `--simulate` accepts: a built-in name, the path of a simulator file (any
    /// bytes, read through [`userio::read_text`]: a regular file of at most 1 MiB), or `-`
    /// for stdin.
    pub fn from_spec(spec: impl AsRef<OsStr>) -> Result<SimConfig, SimConfigError> {
        let spec = spec.as_ref();
        if let Some(name) = spec.to_str().filter(|s| BUILTIN_NAMES.contains(s)) {
            return SimConfig::builtin(name);
        }
        let path = Path::new(spec);
        let shown = path.display().to_string();
        let looks_like_path = shown.contains(['/', '\\', '.']) || userio::is_stdio(path);
        if !looks_like_path && std::fs::symlink_metadata(path).is_err() {
            return Err(SimConfigError::UnknownBuiltin { name: shown });
        }
        let text = userio::read_text(path, InputKind::SimulatorConfig).map_err(|e| {
            let message = match &e {
                UserIoError::NotFound { .. } => {
                    "no such file; check the path, or use a built-in (k80, p100, gt200)".to_string()
                }
                other => other.to_string(),
            };
            SimConfigError::Input {
                origin: shown.clone(),
                message,
                class: e.class(),
            }
        })?;
        SimConfig::from_json_str(&text, &shown)
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
