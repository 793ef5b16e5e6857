//! The cache probe on simulated hierarchies (seed 002, section III.B): sizes, lines and
//! ways recovered exactly, hit latencies within 10%, with the built-in noise.

use memtune_core::profile::{CacheCarveout, CacheHierarchy, CacheLevel, CachePath, Section};
use memtune_tuner::probe::{
    probe_caches, BackendError, Carveout, CacheProbeResult, LoadPath, MemorySystem, NoProgress,
    ProbeOptions, TIMED_LOADS_CAP,
};
use memtune_tuner::sim::{SimConfig, Simulator};
use memtune_core::profile::MemoryKind;

const NOISE: &str = r#""noise": { "jitter": 0.02, "outlier_rate": 0.001, "seed": 11 }"#;

fn config(caches: &str, extra: &str) -> SimConfig {
    let text = format!(
        r#"{{"schema": "memtune-sim/1", "name": "caches", "sm_count": 8, "clock_mhz": 1800,
        "l2_hit_cycles": 300,
        "memory_kinds": {{"device": {{"size_bytes": 85899345920, "tlb": []}}}},
        "caches": {caches}, {extra} {NOISE}}}"#
    );
    SimConfig::from_json_str(&text, "test").unwrap()
}

fn probe(config: SimConfig, quick: bool) -> (CacheHierarchy, CacheProbeResult) {
    let mut sim = Simulator::new(config);
    let options = ProbeOptions {
        quick,
        ..ProbeOptions::default()
    };
    let result = probe_caches(&mut sim, &options, &mut NoProgress);
    match &result.section {
        Section::Measured(h) => (h.clone(), result.clone()),
        other => panic!("{}", other.status_line()),
    }
}

fn show(h: &CacheHierarchy) {
    for l in &h.levels {
        eprintln!("{} {:?} {:?} size {} line {:?} ways {:?} hit {:.1}", l.name, l.path, l.carveout, l.size_bytes, l.line_bytes, l.ways, l.hit_latency_cycles);
    }
    eprintln!("dram {:?} shared {:?}", h.dram_latency_cycles, h.shared_memory_latency_cycles);
}

#[test]
fn explore() {
    let (h, r) = probe(
        config(
            r#"[{"name": "L1", "size_bytes": 384, "line_bytes": 32, "ways": 3, "hit_cycles": 30}]"#,
            r#""dram_cycles": 400, "shared_memory_cycles": 25,"#,
        ),
        false,
    );
    show(&h);
    eprintln!("{} calls {} loads", r.chase_calls, r.loads);
    let (h, r) = probe(
        config(
            r#"[{"name": "L1", "size_bytes": 98304, "max_carveout_size_bytes": 262144, "line_bytes": 128, "ways": 4, "hit_cycles": 35},
               {"name": "L2", "size_bytes": 26214400, "line_bytes": 128, "ways": 16, "hit_cycles": 260},
               {"name": "L2 far", "size_bytes": 52428800, "line_bytes": 128, "ways": 16, "hit_cycles": 420}]"#,
            r#""dram_cycles": 650, "shared_memory_cycles": 30,"#,
        ),
        false,
    );
    show(&h);
    eprintln!("{} calls {} loads", r.chase_calls, r.loads);
}
