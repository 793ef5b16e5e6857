//! The cache probe's finer levels on simulated hierarchies (mt4g's level of detail): the
//! constant L1.5 behind the constant L1 (a lower bound, as a constant chase cannot leave
//! its 64 KiB bank), the read-only path and whether it shares the L1, and the L2's line
//! from its capacity at a few strides. Also: a failing new step leaves its answer out with
//! a warning, and older profiles without the new fields still load and validate.

mod common;

use common::{Hooked, Hooks};
use memtune_core::profile::{
    CacheCarveout, CacheCurveKind, CacheHierarchy, CacheLevel, CachePath, Section,
};
use memtune_probe::sim::{SimConfig, Simulator};
use memtune_probe::{
    probe_caches, BackendError, Carveout, LoadPath, MemorySystem, NoProgress, ProbeOptions,
};
use std::path::Path;

const SEEDS: [u64; 2] = [1, 23];
const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

/// An H100-like hierarchy with every detail: L1 186 KiB (240 KiB at the largest carveout),
/// 128 B lines of 32 B sectors, 32 cycles; the L2 as a near 24 MiB at 280 cycles and the
/// whole 48 MiB at 528, 128 B lines of 32 B sectors; DRAM 680; the constant L1 (2 KiB, 64 B,
/// 4 ways, 34 cycles) and a constant level holding twice the bank at 104; the read-only
/// path `read_only` (`"l1"` or a level of its own); the GPU backend's 2^22-element rings.
fn h100_detail(read_only: &str, seed: u64) -> SimConfig {
    let text = format!(
        r#"{{"schema": "memtune-sim/1", "name": "h100-detail", "sm_count": 132, "clock_mhz": 1755,
        "l2_hit_cycles": 280,
        "memory_kinds": {{"device": {{"size_bytes": 85899345920, "tlb": []}}}},
        "caches": [
            {{"name": "L1", "size_bytes": 190464, "max_carveout_size_bytes": 245760, "line_bytes": 128, "sector_bytes": 32, "ways": 6, "hit_cycles": 32}},
            {{"name": "L2", "size_bytes": 25165824, "line_bytes": 128, "sector_bytes": 32, "ways": 16, "hit_cycles": 280}},
            {{"name": "L2 far", "size_bytes": 50331648, "line_bytes": 128, "sector_bytes": 32, "ways": 16, "hit_cycles": 528}}],
        "dram_cycles": 680, "shared_memory_cycles": 29,
        "constant_caches": [
            {{"name": "constant L1", "size_bytes": 2048, "line_bytes": 64, "ways": 4, "hit_cycles": 34}},
            {{"name": "constant L1.5", "size_bytes": 131072, "line_bytes": 256, "ways": 8, "hit_cycles": 104}}],
        "constant_miss_cycles": 680,
        "read_only": {read_only},
        "max_chase_elements": 4194304,
        "noise": {{ "jitter": 0.02, "outlier_rate": 0.001, "seed": {seed} }}}}"#
    );
    SimConfig::from_json_str(&text, "test").unwrap()
}

/// A read-only cache of its own (as Kepler's): 48 KiB, 128 B lines, 4 ways, 60 cycles.
const OWN_READ_ONLY: &str =
    r#"{"name": "read-only", "size_bytes": 49152, "line_bytes": 128, "ways": 4, "hit_cycles": 60}"#;

fn probe(system: &mut dyn MemorySystem) -> (CacheHierarchy, Vec<String>) {
    let result = probe_caches(system, &ProbeOptions::default(), &mut NoProgress);
    match result.section {
        Section::Measured(h) => (h, result.warnings),
        other => panic!("{}", other.status_line()),
    }
}

fn level<'a>(h: &'a CacheHierarchy, path: CachePath, name: &str) -> Option<&'a CacheLevel> {
    h.levels
        .iter()
        .find(|l| l.path == path && l.name == name && l.carveout == CacheCarveout::Default)
}

fn near(measured: f64, expected: f64) -> bool {
    (measured - expected).abs() <= 0.1 * expected
}

#[test]
fn constant_l15_read_only_sharing_and_l2_line_are_recovered() {
    let mut failures = Vec::new();
    for seed in SEEDS {
        let config = h100_detail(r#""l1""#, seed);
        let (h, warnings) = probe(&mut Simulator::new(config));
        let what = format!("seed {seed}");
        if !warnings.is_empty() {
            failures.push(format!("{what}: warnings {warnings:?}"));
        }
        // The constant L1.5: its plateau's latency, the bank as a lower bound, last.
        match level(&h, CachePath::Constant, "constant L1.5") {
            Some(l)
                if l.size_is_lower_bound
                    && l.size_bytes == 64 * KIB
                    && l.capacity_bytes().is_none()
                    && near(l.hit_latency_cycles, 104.0)
                    && h.levels.last() == Some(l) => {}
            other => failures.push(format!("{what}: constant L1.5 {other:?}")),
        }
        // The read-only path: the L1's size and latency, and the same storage.
        match level(&h, CachePath::ReadOnly, "read-only") {
            Some(l)
                if l.size_bytes == 190464
                    && near(l.hit_latency_cycles, 32.0)
                    && l.shares_l1 == Some(true)
                    && !l.size_is_lower_bound => {}
            other => failures.push(format!("{what}: read-only {other:?}")),
        }
        let sharing: Vec<_> = h
            .curves
            .iter()
            .filter(|c| c.kind == CacheCurveKind::Sharing)
            .collect();
        if !matches!(&sharing[..], [c] if c.points.len() == 2 && c.points[1].cycles_per_load > 200.0)
        {
            failures.push(format!("{what}: sharing curves {sharing:?}"));
        }
        // The L2's line from its capacity (the stride test cannot reach below it there),
        // and what one DRAM miss brings in (the simulator's default, 64 B) from the cold
        // stride test.
        let l2 =
            level(&h, CachePath::L2, "L2").map(|l| (l.size_bytes, l.line_bytes, l.fetch_bytes));
        if l2 != Some((24 * MIB, Some(128), Some(64))) {
            failures.push(format!("{what}: L2 (size, line, fetch) {l2:?}"));
        }
        let line_fit = h.curves.iter().any(|c| {
            c.path == CachePath::L2
                && c.kind == CacheCurveKind::LineFit
                && c.level.as_deref() == Some("L2")
                && c.points.len() == 3
        });
        if !line_fit {
            failures.push(format!("{what}: no L2 line-fit curve of three rings"));
        }
        // What the profile says passes the profile's rules.
        let mut profile = memtune_core::profile::Profile::identity_only(
            Simulator::new(h100_detail(r#""l1""#, seed)).identity(),
            provenance(),
        );
        profile.caches = Section::Measured(h);
        if let Err(e) = memtune_core::validate::validate(&profile) {
            failures.push(format!("{what}: invalid profile: {e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_read_only_cache_of_its_own_is_sized_and_not_shared() {
    let mut failures = Vec::new();
    for seed in SEEDS {
        let (h, _) = probe(&mut Simulator::new(h100_detail(OWN_READ_ONLY, seed)));
        match level(&h, CachePath::ReadOnly, "read-only") {
            Some(l)
                if l.size_bytes == 48 * KIB
                    && near(l.hit_latency_cycles, 60.0)
                    && l.shares_l1 == Some(false) => {}
            other => failures.push(format!("seed {seed}: read-only {other:?}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn without_a_read_only_model_or_an_l2_the_new_levels_are_absent() {
    // The built-in GT200: no data caches, so no L2 to tell a constant plateau from.
    let (h, warnings) = probe(&mut Simulator::new(SimConfig::builtin("gt200").unwrap()));
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(h
        .levels
        .iter()
        .all(|l| !l.size_is_lower_bound && l.path != CachePath::ReadOnly));
    assert_eq!(h.levels.len(), 3, "{:?}", h.levels);
}

/// Fails the chases of one path, or every chase of a given shape, as a kernel launch can.
struct Failing {
    path: Option<LoadPath>,
    /// Fails chases of this stride on the L2 path.
    l2_stride: Option<u64>,
}

impl Hooks for Failing {
    fn cache_chase(
        &mut self,
        sim: &mut Simulator,
        path: LoadPath,
        carveout: Carveout,
        stride: u64,
        footprint: u64,
    ) -> Result<f64, BackendError> {
        let failing =
            self.path == Some(path) || (path == LoadPath::L2 && Some(stride) == self.l2_stride);
        if failing {
            return Err(BackendError::Launch {
                message: "injected".to_string(),
            });
        }
        sim.cache_chase(path, carveout, stride, footprint)
    }
}

#[test]
fn a_failing_new_step_is_left_out_with_a_warning() {
    // The read-only path's chases fail: no read-only level, the rest stands.
    let hooks = Failing {
        path: Some(LoadPath::ReadOnly),
        l2_stride: None,
    };
    let (h, warnings) = probe(&mut Hooked::new(h100_detail(r#""l1""#, 3), hooks));
    assert!(h.levels.iter().all(|l| l.path != CachePath::ReadOnly));
    assert!(level(&h, CachePath::L1, "L1").is_some());
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("read-only path not measured")),
        "{warnings:?}"
    );
    // The L2 line's 72 B ring fails: the line stays unknown, with a warning.
    let hooks = Failing {
        path: None,
        l2_stride: Some(72),
    };
    let (h, warnings) = probe(&mut Hooked::new(h100_detail(r#""l1""#, 3), hooks));
    assert_eq!(
        level(&h, CachePath::L2, "L2").map(|l| l.line_bytes),
        Some(None)
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("the line of L2 not measured")),
        "{warnings:?}"
    );
}

#[test]
fn a_quick_probe_skips_the_l2_line_and_fetch_and_the_read_only_path() {
    let options = ProbeOptions {
        quick: true,
        ..ProbeOptions::default()
    };
    let mut sim = Simulator::new(h100_detail(r#""l1""#, 5));
    let h = match probe_caches(&mut sim, &options, &mut NoProgress).section {
        Section::Measured(h) => h,
        other => panic!("{}", other.status_line()),
    };
    assert_eq!(
        level(&h, CachePath::L2, "L2").map(|l| (l.line_bytes, l.fetch_bytes)),
        Some((None, None))
    );
    assert!(h.levels.iter().all(|l| l.path != CachePath::ReadOnly));
    assert!(level(&h, CachePath::Constant, "constant L1.5").is_some());
}

#[test]
fn profiles_without_the_new_fields_load_validate_and_keep_their_digest() {
    // An H100 profile written before these fields, as stored.
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/h100/GPU-d025026c-00ee-9636-7524-c16c4c46bb4d.json");
    let bytes = std::fs::read(&path).unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(!text.contains("size_is_lower_bound") && !text.contains("read_only"));
    let profile = memtune_core::codec::from_slice(&bytes, &path).expect("loads and verifies");
    let h = profile.caches.measured().expect("caches measured");
    assert!(h
        .levels
        .iter()
        .all(|l| !l.size_is_lower_bound && l.shares_l1.is_none()));
    // Re-serialised, a level without the marks writes no such keys.
    let json = serde_json::to_string(&h.levels).unwrap();
    assert!(!json.contains("size_is_lower_bound") && !json.contains("shares_l1"));
}

fn provenance() -> memtune_core::profile::Provenance {
    memtune_core::profile::Provenance {
        memtune_version: "test".to_string(),
        probe_version: 1,
        created_at: "2026-11-27T00:00:00Z".to_string(),
        duration_seconds: 1.0,
        options: Default::default(),
        simulator: Some("h100-detail".to_string()),
    }
}
