//! What the simulated-probe tests share: quiet and noisy variants of a configuration, a
//! probe run, a custom configuration from its memory kinds, the check that an inferred
//! TLB hierarchy matches the configured one, and a simulator whose answers a test alters.
#![allow(dead_code)]

use memtune_core::profile::{MemoryKind, TlbKind};
use memtune_probe::sim::{KindConfig, NoiseConfig, SimConfig, Simulator};
use memtune_probe::{
    probe_tlb, BackendError, Carveout, LoadPath, MemorySystem, NoProgress, PerKindResult,
    ProbeOptions,
};

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

/// The `"device"` entry of a [`custom`] config: `size_bytes` of device memory behind two
/// TLB levels (16 entries of 2 MiB pages, then 65 of 32 MiB pages in 8 ways).
pub fn device_two_level_tlb(size_bytes: u64) -> String {
    format!(
        r#""device": {{"size_bytes": {size_bytes}, "tlb": [
                {{"entries": 16, "page_bytes": 2097152, "miss_cycles": 9}},
                {{"entries": 65, "page_bytes": 33554432, "miss_cycles": 110, "ways": 8}}]}}"#
    )
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

/// What a test changes in a simulated GPU's measurements ([`Hooked`]). Every method is
/// given the simulator and, unless a test overrides it, answers as the simulator does.
pub trait Hooks {
    /// Called before each chase, chase pair and random-access measurement with the memory
    /// it uses (a pair: one ring's): an error fails the measurement.
    fn admit(&mut self, kind: MemoryKind, bytes: u64) -> Result<(), BackendError> {
        let _ = (kind, bytes);
        Ok(())
    }
    fn chase(
        &mut self,
        sim: &mut Simulator,
        kind: MemoryKind,
        stride: u64,
        footprint: u64,
        sm: u32,
    ) -> Result<f64, BackendError> {
        sim.chase(kind, stride, footprint, sm)
    }
    fn random_atomic(
        &mut self,
        sim: &mut Simulator,
        kind: MemoryKind,
        region: u64,
    ) -> Result<Option<f64>, BackendError> {
        sim.random_atomic(kind, region)
    }
    fn fresh_allocation(
        &mut self,
        sim: &mut Simulator,
        kind: MemoryKind,
        bytes: u64,
    ) -> Result<bool, BackendError> {
        sim.fresh_allocation(kind, bytes)
    }
    fn cache_chase(
        &mut self,
        sim: &mut Simulator,
        path: LoadPath,
        carveout: Carveout,
        stride: u64,
        footprint: u64,
    ) -> Result<f64, BackendError> {
        sim.cache_chase(path, carveout, stride, footprint)
    }
}

/// A simulated GPU whose measurements go through `hooks`; everything else (identity,
/// sizes, draw cost, shared memory) is the simulator's.
pub struct Hooked<H> {
    pub sim: Simulator,
    pub hooks: H,
}

impl<H> Hooked<H> {
    pub fn new(config: SimConfig, hooks: H) -> Hooked<H> {
        Hooked {
            sim: Simulator::new(config),
            hooks,
        }
    }
}

impl<H: Hooks> MemorySystem for Hooked<H> {
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
    fn chase(
        &mut self,
        kind: MemoryKind,
        stride: u64,
        footprint: u64,
        sm: u32,
    ) -> Result<f64, BackendError> {
        self.hooks.admit(kind, footprint)?;
        self.hooks.chase(&mut self.sim, kind, stride, footprint, sm)
    }
    fn chase_pair(
        &mut self,
        kind: MemoryKind,
        stride: u64,
        footprint: u64,
        sm: u32,
        other: u32,
    ) -> Result<f64, BackendError> {
        self.hooks.admit(kind, footprint)?;
        self.sim.chase_pair(kind, stride, footprint, sm, other)
    }
    fn fresh_allocation(&mut self, kind: MemoryKind, bytes: u64) -> Result<bool, BackendError> {
        self.hooks.admit(kind, bytes)?;
        self.hooks.fresh_allocation(&mut self.sim, kind, bytes)
    }
    fn random_access(&mut self, kind: MemoryKind, region: u64) -> Result<f64, BackendError> {
        self.hooks.admit(kind, region)?;
        self.sim.random_access(kind, region)
    }
    fn draw_cost(&mut self, kind: MemoryKind, region: u64) -> Result<Option<f64>, BackendError> {
        self.sim.draw_cost(kind, region)
    }
    fn random_atomic(
        &mut self,
        kind: MemoryKind,
        region: u64,
    ) -> Result<Option<f64>, BackendError> {
        self.hooks.random_atomic(&mut self.sim, kind, region)
    }
    fn cache_chase(
        &mut self,
        path: LoadPath,
        carveout: Carveout,
        stride: u64,
        footprint: u64,
    ) -> Result<f64, BackendError> {
        self.hooks
            .cache_chase(&mut self.sim, path, carveout, stride, footprint)
    }
    fn max_chase_elements(&self) -> u64 {
        self.sim.max_chase_elements()
    }
    fn shared_memory_latency(&mut self) -> Result<f64, BackendError> {
        self.sim.shared_memory_latency()
    }
}
