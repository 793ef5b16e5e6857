//! The L2's fetch granularity (what one DRAM miss brings into the L2) on simulated
//! hierarchies: the cold stride test finds the configured `l2_fetch_bytes` (and the
//! simulator's default) under several noise seeds, a quick probe leaves it out, the
//! profile with it validates, and the simulator file refuses fetches the L2 cannot have.

use memtune_core::profile::{CacheCarveout, CacheHierarchy, CachePath, Section};
use memtune_probe::sim::{SimConfig, Simulator, DEFAULT_L2_FETCH_BYTES};
use memtune_probe::{probe_caches, MemorySystem, NoProgress, ProbeOptions};

const SEEDS: std::ops::RangeInclusive<u64> = 1..=4;

/// A small two-level hierarchy (L1 1 KiB of 32 B lines, L2 64 KiB of `l2_line` B lines)
/// whose L2 lines the stride test finds, with `fetch` as the file's `l2_fetch_bytes` key
/// (empty: the default), with the built-ins' noise (2% jitter, 0.1% spikes).
fn config(l2_line: u64, fetch: &str, seed: u64) -> Result<SimConfig, String> {
    let text = format!(
        r#"{{"schema": "memtune-sim/1", "name": "fetch", "sm_count": 8, "clock_mhz": 1800,
        "l2_hit_cycles": 300,
        "memory_kinds": {{"device": {{"size_bytes": 85899345920, "tlb": []}}}},
        "caches": [{{"name": "L1", "size_bytes": 1024, "line_bytes": 32, "ways": 2, "hit_cycles": 20}},
                   {{"name": "L2", "size_bytes": 65536, "line_bytes": {l2_line}, "ways": 8, "hit_cycles": 120}}],
        "dram_cycles": 450, {fetch}
        "noise": {{ "jitter": 0.02, "outlier_rate": 0.001, "seed": {seed} }}}}"#
    );
    SimConfig::from_json_str(&text, "test").map_err(|e| e.to_string())
}

fn measured(config: SimConfig, quick: bool) -> (CacheHierarchy, Vec<String>) {
    let options = ProbeOptions {
        quick,
        ..ProbeOptions::default()
    };
    let result = probe_caches(&mut Simulator::new(config), &options, &mut NoProgress);
    match result.section {
        Section::Measured(h) => (h, result.warnings),
        other => panic!("{}", other.status_line()),
    }
}

/// The `L2` level's `(line, fetch)`.
fn l2(h: &CacheHierarchy) -> Option<(Option<u64>, Option<u64>)> {
    h.levels
        .iter()
        .find(|l| l.path == CachePath::L2 && l.name == "L2" && l.carveout == CacheCarveout::Default)
        .map(|l| (l.line_bytes, l.fetch_bytes))
}

#[test]
fn the_configured_fetch_is_found_on_every_seed() {
    let mut wrong = Vec::new();
    let cases = [
        (128, "32", 32),
        (128, "64", 64),
        (128, "128", 128),
        (128, "", DEFAULT_L2_FETCH_BYTES),
        (256, "128", 128),
        // The default on a line shorter than it: the line.
        (32, "", 32),
    ];
    for (line, fetch, expected) in cases {
        for seed in SEEDS {
            let key = if fetch.is_empty() {
                String::new()
            } else {
                format!(r#""l2_fetch_bytes": {fetch},"#)
            };
            let config = config(line, &key, seed).expect("valid");
            assert_eq!(config.l2_fetch(), Some(expected));
            let (h, warnings) = measured(config, false);
            // A 32 B line has no offsets to tell fetches apart: the test is skipped.
            let want = (line >= 64).then_some(expected);
            if l2(&h) != Some((Some(line), want)) || !warnings.is_empty() {
                wrong.push(format!(
                    "line {line}, fetch {fetch:?}, seed {seed}: L2 {:?}, warnings {warnings:?}",
                    l2(&h)
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_quick_probe_leaves_the_fetch_out() {
    let (h, warnings) = measured(config(128, "", 1).expect("valid"), true);
    assert!(matches!(l2(&h), Some((_, None))), "{:?}", l2(&h));
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn a_profile_with_the_l2_fetch_validates() {
    let config = config(128, "", 2).expect("valid");
    let identity = Simulator::new(config.clone()).identity();
    let (h, _) = measured(config, false);
    assert_eq!(l2(&h), Some((Some(128), Some(64))));
    let provenance = memtune_core::profile::Provenance {
        memtune_version: "test".to_string(),
        probe_version: 1,
        created_at: "2026-11-27T00:00:00Z".to_string(),
        duration_seconds: 1.0,
        options: Default::default(),
        simulator: Some("fetch".to_string()),
    };
    let mut profile = memtune_core::profile::Profile::identity_only(identity, provenance);
    profile.caches = Section::Measured(h);
    memtune_core::validate::validate(&profile).expect("valid profile");
}

#[test]
fn the_samples_follow_the_fetch() {
    let mut sim = Simulator::new(config(128, r#""l2_fetch_bytes": 64,"#, 3).expect("valid"));
    let s = sim.cold_stride_samples(32, 16).expect("modelled");
    assert_eq!((s.footprint_bytes, s.stride_bytes), (512, 32));
    // Misses near 450 cycles at every other 32 B load, hits near 120 between.
    for (i, &c) in s.cycles.iter().enumerate() {
        let expected = if i % 2 == 0 { 450.0 } else { 120.0 };
        let spike = c as f64 > 3.0 * expected * 0.9;
        assert!(
            spike || (c as f64 - expected).abs() <= 0.1 * expected,
            "load {i}: {c}"
        );
    }
    assert!(sim.cold_stride_samples(0, 16).is_err());
    assert!(sim.cold_stride_samples(32, 0).is_err());
    assert!(sim.cold_stride_samples(32, 4096).is_err());
}

#[test]
fn fetches_the_l2_cannot_have_are_refused() {
    for fetch in ["256", "48", "2", "0", "\"64\""] {
        let err = config(128, &format!(r#""l2_fetch_bytes": {fetch},"#), 1).unwrap_err();
        assert!(err.contains("l2_fetch_bytes"), "{fetch}: {err}");
    }
    // Without an L2 there is nothing to fetch into.
    let text = r#"{"schema": "memtune-sim/1", "name": "x", "sm_count": 1, "clock_mhz": 1000,
        "l2_hit_cycles": 300, "memory_kinds": {"device": {"size_bytes": 1048576, "tlb": []}},
        "caches": [{"name": "L1", "size_bytes": 1024, "line_bytes": 32, "ways": 2, "hit_cycles": 20}],
        "dram_cycles": 450, "l2_fetch_bytes": 64}"#;
    let err = SimConfig::from_json_str(text, "test")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("l2_fetch_bytes") && err.contains("needs an L2"),
        "{err}"
    );
}
