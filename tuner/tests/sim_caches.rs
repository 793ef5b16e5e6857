//! The cache probe on simulated hierarchies (seed 002, section III.B): sizes, lines and
//! ways recovered exactly, hit latencies within 10%, with the built-in noise (2% jitter,
//! 0.1% spikes), and the probe's cost on an H100-like hierarchy.

use memtune_core::profile::{CacheCarveout, CacheHierarchy, CachePath, MemoryKind, Section};
use memtune_tuner::probe::{
    probe_caches, BackendError, Carveout, LoadPath, MemorySystem, NoProgress, ProbeOptions,
    TIMED_LOADS_CAP,
};
use memtune_tuner::sim::{CacheLevelConfig, SimConfig, Simulator};

fn config(caches: &str, extra: &str, seed: u64) -> SimConfig {
    let text = format!(
        r#"{{"schema": "memtune-sim/1", "name": "caches", "sm_count": 8, "clock_mhz": 1800,
        "l2_hit_cycles": 300,
        "memory_kinds": {{"device": {{"size_bytes": 85899345920, "tlb": []}}}},
        "caches": {caches}, {extra}
        "noise": {{ "jitter": 0.02, "outlier_rate": 0.001, "seed": {seed} }}}}"#
    );
    SimConfig::from_json_str(&text, "test").unwrap()
}

fn measured(system: &mut dyn MemorySystem, quick: bool) -> CacheHierarchy {
    let options = ProbeOptions {
        quick,
        ..ProbeOptions::default()
    };
    match probe_caches(system, &options, &mut NoProgress).section {
        Section::Measured(h) => h,
        other => panic!("{}", other.status_line()),
    }
}

fn within(measured: f64, expected: f64, what: &str) {
    assert!(
        (measured - expected).abs() <= 0.1 * expected,
        "{what}: measured {measured:.1}, expected {expected:.1}"
    );
}

/// The levels a path should show: `L1` (at the carveout) on the L1 path, every other level on
/// the L2 path.
fn expected(
    config: &SimConfig,
    path: CachePath,
    carveout: CacheCarveout,
) -> Vec<(u64, &CacheLevelConfig)> {
    config
        .caches
        .iter()
        .filter(|l| (path == CachePath::L1) == l.is_l1())
        .map(|l| {
            let size = match carveout {
                CacheCarveout::MaxL1 => l.max_carveout_size_bytes.unwrap_or(l.size_bytes),
                CacheCarveout::Default => l.size_bytes,
            };
            (size, l)
        })
        .collect()
}

/// Checks every level of every path, `unknown_lines` naming the levels whose line no ring
/// of `max_chase_elements` can show.
fn check(config: &SimConfig, h: &CacheHierarchy, unknown_lines: &[&str]) {
    let carveouts: &[CacheCarveout] = &[CacheCarveout::Default, CacheCarveout::MaxL1];
    for (path, carveouts) in [(CachePath::L1, carveouts), (CachePath::L2, &carveouts[..1])] {
        for &carveout in carveouts {
            let want = expected(config, path, carveout);
            let got: Vec<_> = h
                .levels
                .iter()
                .filter(|l| l.path == path && l.carveout == carveout)
                .collect();
            assert_eq!(got.len(), want.len(), "{path} {carveout}: {:#?}", h.levels);
            for (g, (size, w)) in got.iter().zip(want) {
                let what = format!("{} ({path}, {carveout})", w.name);
                assert_eq!(g.size_bytes, size, "{what} size");
                assert_eq!(g.ways, Some(w.ways as u32), "{what} ways");
                if unknown_lines.contains(&w.name.as_str()) {
                    assert_eq!(g.line_bytes, None, "{what} line");
                } else {
                    assert_eq!(g.line_bytes, Some(w.line_bytes), "{what} line");
                }
                within(g.hit_latency_cycles, w.hit_cycles, &format!("{what} hit"));
            }
        }
    }
    within(
        h.dram_latency_cycles.unwrap(),
        config.dram_cycles.unwrap(),
        "DRAM",
    );
    match config.shared_memory_cycles {
        Some(c) => within(h.shared_memory_latency_cycles.unwrap(), c, "shared memory"),
        None => assert_eq!(h.shared_memory_latency_cycles, None),
    }
}

#[test]
fn wong_fig4_example_exactly() {
    // Seed 002, Fig. 4: 384 B, 3-way, 4 sets, 32 B lines.
    let config = config(
        r#"[{"name": "L1", "size_bytes": 384, "line_bytes": 32, "ways": 3, "hit_cycles": 30}]"#,
        r#""dram_cycles": 400, "shared_memory_cycles": 25,"#,
        7,
    );
    let h = measured(&mut Simulator::new(config.clone()), false);
    check(&config, &h, &[]);
    assert!(!h.curves.is_empty());
}

#[test]
fn two_level_1kib_and_64kib() {
    let config = config(
        r#"[{"name": "L1", "size_bytes": 1024, "line_bytes": 32, "ways": 2, "hit_cycles": 20},
            {"name": "L2", "size_bytes": 65536, "line_bytes": 64, "ways": 8, "hit_cycles": 120}]"#,
        r#""dram_cycles": 450,"#,
        1,
    );
    let h = measured(&mut Simulator::new(config.clone()), false);
    check(&config, &h, &[]);
}

#[test]
fn three_levels_with_a_larger_l1_carveout() {
    let config = config(
        r#"[{"name": "L1", "size_bytes": 16384, "max_carveout_size_bytes": 49152, "line_bytes": 64, "ways": 4, "hit_cycles": 28},
            {"name": "L2", "size_bytes": 524288, "line_bytes": 128, "ways": 8, "hit_cycles": 150},
            {"name": "L3", "size_bytes": 4194304, "line_bytes": 128, "ways": 16, "hit_cycles": 300}]"#,
        r#""dram_cycles": 500, "shared_memory_cycles": 24, "max_chase_elements": 262144,"#,
        2,
    );
    let h = measured(&mut Simulator::new(config.clone()), false);
    check(&config, &h, &[]);
}

#[test]
fn six_mib_l2_with_64_byte_lines() {
    // 6 MiB = 64 B x 12 ways x 8192 sets; a ring of 2^18 elements lets a 32 B stride run
    // past it, so its line shows.
    let config = config(
        r#"[{"name": "L1", "size_bytes": 49152, "max_carveout_size_bytes": 98304, "line_bytes": 128, "ways": 6, "hit_cycles": 33},
            {"name": "L2", "size_bytes": 6291456, "line_bytes": 64, "ways": 12, "hit_cycles": 210}]"#,
        r#""dram_cycles": 520, "max_chase_elements": 262144,"#,
        3,
    );
    let h = measured(&mut Simulator::new(config.clone()), false);
    check(&config, &h, &[]);
}

#[test]
fn sixty_four_mib_l2() {
    let config = config(
        r#"[{"name": "L1", "size_bytes": 32768, "line_bytes": 32, "ways": 4, "hit_cycles": 25},
            {"name": "L2", "size_bytes": 67108864, "line_bytes": 128, "ways": 16, "hit_cycles": 300}]"#,
        r#""dram_cycles": 700, "max_chase_elements": 2097152,"#,
        4,
    );
    let h = measured(&mut Simulator::new(config.clone()), false);
    check(&config, &h, &[]);
}

/// An H100-like hierarchy: L1 96 KiB by default, 256 KiB at the largest carveout; the L2 as
/// two 25 MiB partitions, the far one slower; the GPU's 65536-element rings.
fn h100_like() -> SimConfig {
    config(
        r#"[{"name": "L1", "size_bytes": 98304, "max_carveout_size_bytes": 262144, "line_bytes": 128, "ways": 4, "hit_cycles": 35},
            {"name": "L2", "size_bytes": 26214400, "line_bytes": 128, "ways": 16, "hit_cycles": 260},
            {"name": "L2 far", "size_bytes": 52428800, "line_bytes": 128, "ways": 16, "hit_cycles": 420}]"#,
        r#""dram_cycles": 650, "shared_memory_cycles": 30,"#,
        5,
    )
}

/// A simulator that also adds up what its chases would take on a GPU: per call about 20 µs
/// of launch, plus the warm-up walk and the timed loads at the latency measured, at 1.8 GHz.
struct Timed {
    sim: Simulator,
    calls: u64,
    loads: u64,
    seconds: f64,
    /// Chases of this path fail, as a kernel launch can.
    fail: Option<LoadPath>,
}

impl MemorySystem for Timed {
    fn name(&self) -> String {
        self.sim.name()
    }
    fn clock_mhz(&self) -> f64 {
        self.sim.clock_mhz()
    }
    fn sm_count(&self) -> u32 {
        self.sim.sm_count()
    }
    fn kinds(&self) -> Vec<MemoryKind> {
        self.sim.kinds()
    }
    fn max_footprint(&self, kind: MemoryKind) -> u64 {
        self.sim.max_footprint(kind)
    }
    fn chase(&mut self, k: MemoryKind, s: u64, f: u64, sm: u32) -> Result<f64, BackendError> {
        self.sim.chase(k, s, f, sm)
    }
    fn chase_pair(
        &mut self,
        k: MemoryKind,
        s: u64,
        f: u64,
        sm: u32,
        other: u32,
    ) -> Result<f64, BackendError> {
        self.sim.chase_pair(k, s, f, sm, other)
    }
    fn random_access(&mut self, k: MemoryKind, region: u64) -> Result<f64, BackendError> {
        self.sim.random_access(k, region)
    }
    fn cache_chase(
        &mut self,
        path: LoadPath,
        carveout: Carveout,
        stride: u64,
        footprint: u64,
    ) -> Result<f64, BackendError> {
        if self.fail == Some(path) {
            return Err(BackendError::Launch {
                message: "injected".to_string(),
            });
        }
        let cycles = self.sim.cache_chase(path, carveout, stride, footprint)?;
        let elements = (footprint / stride).max(1);
        let loads = elements + elements.min(TIMED_LOADS_CAP);
        self.calls += 1;
        self.loads += loads;
        self.seconds += 20e-6 + loads as f64 * cycles / 1.8e9;
        Ok(cycles)
    }
    fn max_chase_elements(&self) -> u64 {
        self.sim.max_chase_elements()
    }
    fn shared_memory_latency(&mut self) -> Result<f64, BackendError> {
        self.sim.shared_memory_latency()
    }
}

#[test]
fn h100_like_hierarchy_within_the_budget() {
    for (quick, budget) in [(false, 5.0), (true, 2.5)] {
        let config = h100_like();
        let mut timed = Timed {
            sim: Simulator::new(config.clone()),
            calls: 0,
            loads: 0,
            seconds: 0.0,
            fail: None,
        };
        let h = measured(&mut timed, quick);
        // No chase ring of 65536 elements can use a stride below a line past 25 MiB.
        check(&config, &h, &["L2", "L2 far"]);
        let far = &h.levels[3];
        assert_eq!(far.name, "L2 far partition");
        eprintln!(
            "H100-like, quick {quick}: {} calls, {} loads, about {:.2} s on a GPU",
            timed.calls, timed.loads, timed.seconds
        );
        assert!(timed.seconds < budget, "{:.2} s", timed.seconds);
    }
}

#[test]
fn gt200_constant_caches_and_uncached_global_memory() {
    let config = SimConfig::builtin("gt200").unwrap();
    let h = measured(&mut Simulator::new(config.clone()), false);
    // No data cache: every level is a constant one.
    let constant: Vec<_> = h
        .levels
        .iter()
        .filter(|l| l.path == CachePath::Constant)
        .collect();
    assert_eq!(constant.len(), h.levels.len(), "{:#?}", h.levels);
    assert_eq!(constant.len(), config.constant_caches.len());
    for (g, w) in constant.iter().zip(&config.constant_caches) {
        assert_eq!(g.size_bytes, w.size_bytes, "{}", w.name);
        assert_eq!(g.line_bytes, Some(w.line_bytes), "{}", w.name);
        assert_eq!(g.ways, Some(w.ways as u32), "{}", w.name);
        within(g.hit_latency_cycles, w.hit_cycles, &w.name);
    }
    within(h.dram_latency_cycles.unwrap(), 440.0, "DRAM");
    within(
        h.shared_memory_latency_cycles.unwrap(),
        38.0,
        "shared memory",
    );
}

#[test]
fn a_system_without_caches_is_not_measured() {
    let mut sim = Simulator::new(SimConfig::builtin("p100").unwrap());
    let result = probe_caches(&mut sim, &ProbeOptions::default(), &mut NoProgress);
    match result.section {
        Section::NotMeasured { reason } => assert!(reason.contains("p100"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_failing_chase_fails_the_section() {
    let mut timed = Timed {
        sim: Simulator::new(h100_like()),
        calls: 0,
        loads: 0,
        seconds: 0.0,
        fail: Some(LoadPath::Constant),
    };
    let mut config = h100_like();
    config.constant_caches = SimConfig::builtin("gt200").unwrap().constant_caches;
    config.constant_miss_cycles = Some(476.0);
    timed.sim = Simulator::new(config);
    let result = probe_caches(&mut timed, &ProbeOptions::default(), &mut NoProgress);
    match result.section {
        Section::Failed { reason } => assert!(reason.contains("launch failed"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn config_errors_name_the_key_and_the_fix() {
    let parse = |caches: &str, extra: &str| {
        let text = format!(
            r#"{{"schema": "memtune-sim/1", "name": "x", "sm_count": 1, "clock_mhz": 1000,
            "l2_hit_cycles": 100, "memory_kinds": {{"device": {{"size_bytes": 1048576, "tlb": []}}}},
            "caches": {caches} {extra}}}"#
        );
        SimConfig::from_json_str(&text, "bad.json")
            .unwrap_err()
            .to_string()
    };
    let err = parse(
        r#"[{"name": "L1", "size_bytes": 400, "line_bytes": 32, "ways": 3, "hit_cycles": 30}]"#,
        r#", "dram_cycles": 400"#,
    );
    assert!(
        err.contains("bad.json") && err.contains("caches[0].size_bytes") && err.contains("384"),
        "{err}"
    );
    let err = parse(
        r#"[{"name": "L2", "size_bytes": 384, "max_carveout_size_bytes": 768, "line_bytes": 32, "ways": 3, "hit_cycles": 30}]"#,
        r#", "dram_cycles": 400"#,
    );
    assert!(err.contains("caches[0].max_carveout_size_bytes"), "{err}");
    let err = parse(
        r#"[{"name": "L1", "size_bytes": 384, "line_bytes": 32, "ways": 3, "hit_cycles": 30}]"#,
        "",
    );
    assert!(err.contains("dram_cycles"), "{err}");
    let err = parse(
        r#"[{"name": "L1", "size_bytes": 384, "line_bytes": 32, "ways": 3, "hit_cycles": 30},
            {"name": "L1", "size_bytes": 768, "line_bytes": 32, "ways": 3, "hit_cycles": 60}]"#,
        r#", "dram_cycles": 400"#,
    );
    assert!(err.contains("caches[1].name"), "{err}");
}

#[test]
fn ring_limit_is_enforced() {
    let mut sim = Simulator::new(h100_like());
    let err = sim
        .cache_chase(LoadPath::L2, Carveout::Default, 32, 32 * 65537)
        .unwrap_err();
    assert!(matches!(err, BackendError::Launch { .. }), "{err}");
    assert!(sim
        .cache_chase(LoadPath::Constant, Carveout::Default, 32, 1024)
        .is_err_and(|e| matches!(e, BackendError::Unsupported { .. })));
}
