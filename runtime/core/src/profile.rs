//! The hardware profile model, schema `memtune-profile/1` (documented in `docs/profile.md`).
//!
//! Every measured part of the profile is a [`Section`]: it is either measured (and then
//! carries its inferred values beside the raw curves), not measured (with a reason), or
//! failed (with the error). Readers match on it, so "absent" never reads as "zero".

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

pub use crate::profile_caches::{
    CacheCarveout, CacheCurve, CacheCurveKind, CacheHierarchy, CacheLevel, CachePath, CachePoint,
};
pub use crate::profile_latency::LatencyDistribution;

/// The schema name and major version written into every profile.
pub const SCHEMA: &str = "memtune-profile/1";
/// The schema family; the number after the `/` is the major version.
pub const SCHEMA_FAMILY: &str = "memtune-profile";
/// The major version this build reads and writes.
pub const SCHEMA_MAJOR: u32 = 1;
/// The minor version this build writes. Newer minors only add fields, which older readers
/// ignore (see `docs/profile.md`, "Compatibility").
pub const SCHEMA_MINOR: u32 = 1;

/// A complete hardware profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    pub schema: String,
    pub schema_minor: u32,
    /// `sha256:<hex>` over the canonical form of everything else (see [`crate::digest`]).
    pub digest: String,
    pub device: DeviceIdentity,
    pub provenance: Provenance,
    pub tlb: PerMemoryKind<TlbKind>,
    pub random_access: PerMemoryKind<RandomAccessCurve>,
    pub caches: Section<CacheHierarchy>,
    pub shared_memory_staging: Section<StagingTable>,
    pub bandwidth: Section<Bandwidth>,
}

/// Who the profile describes. Matches what `nvidia-smi -q` prints for the same GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceIdentity {
    /// `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, as `nvidia-smi -L` prints it.
    pub uuid: String,
    pub name: String,
    pub compute_capability: ComputeCapability,
    pub sm_count: u32,
    pub l2_bytes: u64,
    pub shared_memory_per_block_bytes: u64,
    /// The opt-in maximum a kernel gets after raising its dynamic shared-memory limit.
    pub shared_memory_per_block_optin_bytes: u64,
    pub shared_memory_per_sm_bytes: u64,
    pub global_memory_bytes: u64,
    pub sm_clock_khz: u64,
    pub memory_clock_khz: u64,
    pub memory_bus_width_bits: u32,
    /// `major.minor` of the CUDA driver API, e.g. `13.0`.
    pub driver_version: String,
    /// PCI bus id (`00000000:19:00.0`), when the driver reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci_bus_id: Option<String>,
}

impl DeviceIdentity {
    /// The model key used for the lookup chain's "same model" step.
    pub fn model(&self) -> DeviceModel {
        DeviceModel {
            name: self.name.clone(),
            compute_capability: self.compute_capability,
            sm_count: self.sm_count,
        }
    }
}

/// What makes two GPUs "the same model" for profile reuse.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceModel {
    pub name: String,
    pub compute_capability: ComputeCapability,
    pub sm_count: u32,
}

impl fmt::Display for DeviceModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (sm_{}{}, {} SMs)",
            self.name, self.compute_capability.major, self.compute_capability.minor, self.sm_count
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ComputeCapability {
    pub major: u32,
    pub minor: u32,
}

impl fmt::Display for ComputeCapability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// How and when the profile was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    pub memtune_version: String,
    pub probe_version: u32,
    /// RFC 3339, UTC.
    pub created_at: String,
    pub duration_seconds: f64,
    /// The probe options as given on the command line (e.g. `quick`, footprint bounds).
    #[serde(default)]
    pub options: BTreeMap<String, serde_json::Value>,
    /// Set when the profile came from the simulator (`cargo tune probe --simulate`): the
    /// simulated hardware's name. Such profiles are never stored as a real device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simulator: Option<String>,
}

/// One part of the profile and whether it was measured.
///
/// Serialised with a `status` tag beside the content, so a measured TLB section reads
/// `{"status": "measured", "levels": [...], ...}` and an unmeasured one
/// `{"status": "not_measured", "reason": "..."}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Section<T> {
    Measured(T),
    NotMeasured { reason: String },
    Failed { reason: String },
}

impl<T> Section<T> {
    pub fn not_measured(reason: impl Into<String>) -> Self {
        Section::NotMeasured {
            reason: reason.into(),
        }
    }

    pub fn failed(reason: impl Into<String>) -> Self {
        Section::Failed {
            reason: reason.into(),
        }
    }

    /// The measured content, or `None` when the section was not measured or failed.
    pub fn measured(&self) -> Option<&T> {
        match self {
            Section::Measured(t) => Some(t),
            _ => None,
        }
    }

    /// `measured`, `not measured: <reason>` or `failed: <reason>`, for human output.
    pub fn status_line(&self) -> String {
        match self {
            Section::Measured(_) => "measured".to_string(),
            Section::NotMeasured { reason } => format!("not measured: {reason}"),
            Section::Failed { reason } => format!("failed: {reason}"),
        }
    }
}

/// The three kinds of memory a kernel can read, each probed on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryKind {
    /// Plain device allocation.
    Device,
    /// Page-locked host memory mapped into the GPU (zero-copy).
    Pinned,
    /// Managed (unified) memory, populated on the GPU.
    Managed,
}

impl MemoryKind {
    pub const ALL: [MemoryKind; 3] = [MemoryKind::Device, MemoryKind::Pinned, MemoryKind::Managed];

    pub fn as_str(self) -> &'static str {
        match self {
            MemoryKind::Device => "device",
            MemoryKind::Pinned => "pinned",
            MemoryKind::Managed => "managed",
        }
    }
}

impl fmt::Display for MemoryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for MemoryKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        MemoryKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| {
                format!("unknown memory kind `{s}` (expected device, pinned or managed)")
            })
    }
}

/// A section per memory kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PerMemoryKind<T> {
    pub device: Section<T>,
    pub pinned: Section<T>,
    pub managed: Section<T>,
}

impl<T> PerMemoryKind<T> {
    pub fn not_measured(reason: &str) -> Self {
        PerMemoryKind {
            device: Section::not_measured(reason),
            pinned: Section::not_measured(reason),
            managed: Section::not_measured(reason),
        }
    }

    pub fn get(&self, kind: MemoryKind) -> &Section<T> {
        match kind {
            MemoryKind::Device => &self.device,
            MemoryKind::Pinned => &self.pinned,
            MemoryKind::Managed => &self.managed,
        }
    }

    pub fn get_mut(&mut self, kind: MemoryKind) -> &mut Section<T> {
        match kind {
            MemoryKind::Device => &mut self.device,
            MemoryKind::Pinned => &mut self.pinned,
            MemoryKind::Managed => &mut self.managed,
        }
    }
}

/// The TLB hierarchy of one memory kind, as inferred from pointer-chase curves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TlbKind {
    /// Fastest level first. Empty when no miss was seen in the swept range, or when every
    /// level seen was unstable (then in `unstable_levels`). These are the levels the
    /// planners use: the probe keeps a level here only where a confirmation on a fresh
    /// allocation found it again.
    pub levels: Vec<TlbLevel>,
    /// The largest footprint swept. With no levels, this reads "no TLB miss up to N bytes".
    pub swept_up_to_bytes: u64,
    /// Cycles per chase load when every translation hits (the L2 hit latency of this kind).
    pub base_latency_cycles: f64,
    /// Raw pointer-chase curves, one per stride.
    pub curves: Vec<ChaseCurve>,
    /// Why levels the curves suggested are not reported (not significant against the
    /// curves' noise, pages out of order), for a human to read beside the curves.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Levels the sweep found whose step the probe's confirmation did not find again on a
    /// fresh allocation (another reach, another page, or no step), fastest first, each with
    /// a note saying what the confirmation saw; for a human to read, never for planners
    /// (the autotuner times one plan within the fastest one's reach, `tune::candidates`).
    ///
    /// They are kept apart from `levels` rather than flagged inside it so that every
    /// reader of `levels`, an older build's included (which ignores this field), plans
    /// with stable levels only; a profile without the field (older, or with every level
    /// stable) has all its levels in `levels`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unstable_levels: Vec<TlbLevel>,
}

impl TlbKind {
    /// Stable and unstable levels together, fastest (smallest reach) first, each with
    /// whether it is stable: what a human is shown.
    pub fn all_levels(&self) -> Vec<(&TlbLevel, bool)> {
        let mut all: Vec<(&TlbLevel, bool)> = self
            .levels
            .iter()
            .map(|l| (l, true))
            .chain(self.unstable_levels.iter().map(|l| (l, false)))
            .collect();
        all.sort_by_key(|(l, _)| l.reach_bytes);
        all
    }
}

/// One TLB level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TlbLevel {
    pub entries: u64,
    /// The apparent page size (seed 000, Figure 2).
    pub page_bytes: u64,
    /// `entries * page_bytes`: the footprint this level translates without missing.
    pub reach_bytes: u64,
    pub miss_penalty_cycles: f64,
    pub miss_penalty_ns: f64,
    /// 0..1: how clearly the curves show this level.
    pub confidence: f64,
    /// SMs sharing one copy of this level, when `--tlb-sharing` measured it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_by_sms: Option<u32>,
}

/// Latency per load against footprint, for one stride.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChaseCurve {
    pub stride_bytes: u64,
    pub points: Vec<ChasePoint>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ChasePoint {
    pub footprint_bytes: u64,
    pub cycles_per_load: f64,
}

/// Threads per SM of one launch of the random-atomic measurement (`atomic_points`).
pub const RANDOM_ATOMIC_THREADS_PER_SM: u32 = 1024;
/// Atomic updates per thread of that launch. A launch thus makes `sm_count × 1024 × 64`
/// updates: the planner needs that count to compare how often a workload updates one word
/// with how often the curve's launches did.
pub const RANDOM_ATOMIC_UPDATES_PER_THREAD: u32 = 64;

/// Random-sampling throughput against region size (seed 000, section 2.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RandomAccessCurve {
    pub points: Vec<RandomAccessPoint>,
    /// The region size where throughput falls off, if it does inside the swept range.
    pub knee_bytes: Option<u64>,
    /// What drawing a random position and skipping it costs (a scoped pass does this for
    /// every position outside its scope), relative to the fastest random read of `points`.
    /// Absent when not measured (older profiles, the simulator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draw_cost_relative: Option<f64>,
    /// The same draws as random atomic increments (`atomicAdd` of a 4-byte word, a hash
    /// grouping insert's count update), at the regions of `points`; `reads_per_second` is
    /// then atomics per second, from launches of [`RANDOM_ATOMIC_THREADS_PER_SM`] threads
    /// per SM making [`RANDOM_ATOMIC_UPDATES_PER_THREAD`] updates each. Device memory only (a hash table lives there); empty, and
    /// left out of the JSON, when not measured (older profiles, other kinds, the simulator).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub atomic_points: Vec<RandomAccessPoint>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RandomAccessPoint {
    pub region_bytes: u64,
    pub reads_per_second: f64,
}

impl From<(u64, f64)> for RandomAccessPoint {
    /// `(region_bytes, reads_per_second)`.
    fn from((region_bytes, reads_per_second): (u64, f64)) -> Self {
        RandomAccessPoint {
            region_bytes,
            reads_per_second,
        }
    }
}

/// The benefit of staging a 3-D stencil in shared memory (seed 003), per (dtype, repeats).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StagingTable {
    pub entries: Vec<StagingEntry>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StagingEntry {
    pub dtype: String,
    pub repeats: u32,
    pub grid: [u32; 3],
    pub best_plain_block: [u32; 3],
    pub best_plain_ms: f64,
    pub best_staged_block: [u32; 3],
    pub best_staged_ms: f64,
    /// `best_plain_ms / best_staged_ms`: above 1 means staging pays.
    pub benefit: f64,
    /// The fastest one-plane block of the streaming variant (z marching, planes kept in
    /// registers). Absent in profiles written before streaming was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_streaming_block: Option<[u32; 3]>,
    /// Its median time in milliseconds; absent with `best_streaming_block`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_streaming_ms: Option<f64>,
}

/// Copy bandwidths and the host link, in bytes per second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bandwidth {
    /// Bytes read plus bytes written per second.
    pub device_to_device: f64,
    pub host_to_device: f64,
    pub device_to_host: f64,
    /// Zero-copy reads of pinned host memory, per access pattern (seed 001).
    pub zero_copy_read: BTreeMap<String, f64>,
    /// Bytes read per second from a device region L2 holds (a quarter of the L2, read
    /// over and over by the whole grid with 16-byte loads that skip L1); absent where not
    /// measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2_read: Option<L2Read>,
}

/// How fast L2 serves reads, and how that was measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct L2Read {
    /// Bytes read per second.
    pub bytes_per_second: f64,
    /// The region read, bytes.
    pub region_bytes: u64,
    /// Times the region was read in one launch.
    pub repeats: u32,
}

impl Profile {
    /// A profile with the identity filled in and every measured section marked not measured.
    /// The digest is computed by [`crate::codec::seal`] when the profile is written.
    pub fn identity_only(device: DeviceIdentity, provenance: Provenance) -> Profile {
        let reason = "not probed yet: run `cargo tune` on this GPU";
        Profile {
            schema: SCHEMA.to_string(),
            schema_minor: SCHEMA_MINOR,
            digest: String::new(),
            device,
            provenance,
            tlb: PerMemoryKind::not_measured(reason),
            random_access: PerMemoryKind::not_measured(reason),
            caches: Section::not_measured(reason),
            shared_memory_staging: Section::not_measured(reason),
            bandwidth: Section::not_measured(reason),
        }
    }

    pub fn is_simulated(&self) -> bool {
        self.provenance.simulator.is_some()
    }
}

/// Checks a UUID is printed as `nvidia-smi` prints it.
pub fn is_valid_uuid(uuid: &str) -> bool {
    let Some(hex) = uuid.strip_prefix("GPU-") else {
        return false;
    };
    let groups: Vec<&str> = hex.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups.iter().all(|g| {
            g.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        })
}

/// Formats the 16 raw UUID bytes the driver reports as `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
pub fn format_uuid(bytes: &[u8; 16]) -> String {
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

#[cfg(test)]
#[path = "profile_tests.rs"]
mod tests;
