//! What the simulated-probe tests share: quiet and noisy variants of a configuration, a
//! probe run, a custom configuration from its memory kinds, and the check that an inferred
//! TLB hierarchy matches the configured one.
#![allow(dead_code)]

use memtune_core::profile::{MemoryKind, TlbKind};
use memtune_probe::sim::{KindConfig, NoiseConfig, SimConfig, Simulator};
use memtune_probe::{probe_tlb, NoProgress, PerKindResult, ProbeOptions};

pub const GIB: u64 = 1 << 30;

pub fn quiet(mut config: SimConfig) -> SimConfig {
    config.noise = NoiseConfig::default();
    config
}

pub fn noisy(mut config: SimConfig, seed: u64, outlier_rate: f64) -> SimConfig {
    config.noise = NoiseConfig {
        jitter: 0.02,
        outlier_rate,
        seed,
    };
    config
}

pub fn probe(config: &SimConfig, options: &ProbeOptions) -> PerKindResult {
    let mut sim = Simulator::new(config.clone());
    probe_tlb(&mut sim, options, &mut NoProgress)
}

pub fn tlb_of(result: &PerKindResult, kind: MemoryKind) -> &TlbKind {
    match result.tlb.get(&kind) {
        Some(Ok(tlb)) => tlb,
        other => panic!("{kind}: no TLB result: {other:?}"),
    }
}

/// Compares the inferred hierarchy with the configuration: the levels whose reach lies in
/// the swept range, in order; exact count and page size, entries and reach within 10%,
/// miss penalty within 20%.
pub fn assert_matches(config: &KindConfig, tlb: &TlbKind, what: &str) {
    let expected: Vec<_> = config
        .tlb
        .iter()
        .filter(|l| l.entries * l.page_bytes < tlb.swept_up_to_bytes)
        .collect();
    let found: Vec<String> = tlb
        .levels
        .iter()
        .map(|l| {
            format!(
                "{} x {} KiB, {} cycles",
                l.entries,
                l.page_bytes >> 10,
                l.miss_penalty_cycles
            )
        })
        .collect();
    assert_eq!(
        tlb.levels.len(),
        expected.len(),
        "{what}: level count; found {found:?}"
    );
    for (i, (want, got)) in expected.iter().zip(&tlb.levels).enumerate() {
        let ctx = format!("{what}, level {}: found {found:?}", i + 1);
        assert_eq!(got.page_bytes, want.page_bytes, "{ctx}: page");
        let within = |a: f64, b: f64, tolerance: f64| (a - b).abs() <= tolerance * b;
        assert!(
            within(got.entries as f64, want.entries as f64, 0.1),
            "{ctx}: entries"
        );
        let reach = (want.entries * want.page_bytes) as f64;
        assert!(within(got.reach_bytes as f64, reach, 0.1), "{ctx}: reach");
        assert!(
            within(got.miss_penalty_cycles, want.miss_cycles, 0.2),
            "{ctx}: penalty"
        );
        assert!((0.0..=1.0).contains(&got.confidence), "{ctx}: confidence");
    }
}

pub fn assert_probe_matches(
    config: &SimConfig,
    options: &ProbeOptions,
    what: &str,
) -> PerKindResult {
    let result = probe(config, options);
    for (kind, kind_config) in &config.memory_kinds {
        assert_matches(
            kind_config,
            tlb_of(&result, *kind),
            &format!("{what} ({kind})"),
        );
    }
    result
}

pub fn device(config: &SimConfig) -> &KindConfig {
    &config.memory_kinds[&MemoryKind::Device]
}

pub fn custom(kinds: &str) -> SimConfig {
    let text = format!(
        r#"{{"schema": "memtune-sim/1", "name": "custom", "sm_count": 16, "clock_mhz": 1000,
            "l2_hit_cycles": 300, "memory_kinds": {{ {kinds} }} }}"#
    );
    match SimConfig::from_json_str(&text, "test config") {
        Ok(config) => config,
        Err(e) => panic!("{e}"),
    }
}
