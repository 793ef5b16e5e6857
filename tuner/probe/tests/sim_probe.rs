//! The simulated probe recovers the hierarchies it simulates: the paper GPUs of seed 000
//! Table 2 and seed 002 IV.I, and hierarchies of our own. Every expectation comes from the
//! configuration itself, never from a number written into the test.

use memtune_core::profile::{MemoryKind, TlbKind};
use memtune_probe::sim::{KindConfig, NoiseConfig, SimConfig, Simulator};
use memtune_probe::{
    probe_tlb, BackendError, MemorySystem, NoProgress, PerKindResult, ProbeOptions,
};

const GIB: u64 = 1 << 30;

fn quiet(mut config: SimConfig) -> SimConfig {
    config.noise = NoiseConfig::default();
    config
}

fn noisy(mut config: SimConfig, seed: u64, outlier_rate: f64) -> SimConfig {
    config.noise = NoiseConfig {
        jitter: 0.02,
        outlier_rate,
        seed,
    };
    config
}

fn probe(config: &SimConfig, options: &ProbeOptions) -> PerKindResult {
    let mut sim = Simulator::new(config.clone());
    probe_tlb(&mut sim, options, &mut NoProgress)
}

fn tlb_of(result: &PerKindResult, kind: MemoryKind) -> &TlbKind {
    match result.tlb.get(&kind) {
        Some(Ok(tlb)) => tlb,
        other => panic!("{kind}: no TLB result: {other:?}"),
    }
}

/// Compares the inferred hierarchy with the configuration: the levels whose reach lies in
/// the swept range, in order; exact count and page size, entries and reach within 10%,
/// miss penalty within 20%.
fn assert_matches(config: &KindConfig, tlb: &TlbKind, what: &str) {
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

fn assert_probe_matches(config: &SimConfig, options: &ProbeOptions, what: &str) -> PerKindResult {
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

fn device(config: &SimConfig) -> &KindConfig {
    &config.memory_kinds[&MemoryKind::Device]
}

fn custom(kinds: &str) -> SimConfig {
    let text = format!(
        r#"{{"schema": "memtune-sim/1", "name": "custom", "sm_count": 16, "clock_mhz": 1000,
            "l2_hit_cycles": 300, "memory_kinds": {{ {kinds} }} }}"#
    );
    match SimConfig::from_json_str(&text, "test config") {
        Ok(config) => config,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn paper_gpus_reproduce_table_2_without_noise() {
    for name in ["k80", "p100"] {
        let config = quiet(SimConfig::builtin(name).unwrap());
        let result = assert_probe_matches(&config, &ProbeOptions::default(), name);
        let tlb = tlb_of(&result, MemoryKind::Device);
        assert_eq!(
            tlb.base_latency_cycles, config.l2_hit_cycles,
            "{name}: base latency"
        );
        for level in &tlb.levels {
            let ns = level.miss_penalty_cycles * 1000.0 / config.clock_mhz;
            assert!(
                (level.miss_penalty_ns - ns).abs() < 0.01,
                "{name}: ns from the clock"
            );
            assert!(
                level.confidence > 0.8,
                "{name}: clean curves give high confidence: {level:?}"
            );
        }
    }
}

#[test]
fn paper_gpus_reproduce_table_2_with_noise_for_ten_seeds() {
    for name in ["k80", "p100"] {
        for seed in 1..=10 {
            let outlier_rate = [0.001, 0.005, 0.01][seed as usize % 3];
            let config = noisy(SimConfig::builtin(name).unwrap(), seed, outlier_rate);
            assert_probe_matches(
                &config,
                &ProbeOptions::default(),
                &format!("{name}, seed {seed}, outliers {outlier_rate}"),
            );
        }
    }
}

#[test]
fn gt200_recovers_its_levels() {
    let config = SimConfig::builtin("gt200").unwrap();
    assert_probe_matches(&quiet(config.clone()), &ProbeOptions::default(), "gt200");
    for seed in 1..=3 {
        assert_probe_matches(
            &noisy(config.clone(), seed, 0.005),
            &ProbeOptions::default(),
            &format!("gt200 seed {seed}"),
        );
    }
}

#[test]
fn builtin_noise_as_shipped() {
    for name in ["k80", "p100", "gt200"] {
        assert_probe_matches(
            &SimConfig::builtin(name).unwrap(),
            &ProbeOptions::default(),
            name,
        );
    }
}

/// Our own hierarchies: 1 to 4 levels, set-associative levels, a very large reach, a kind
/// with no boundary in range, pinned host memory with 4 KiB pages.
fn own_hierarchies() -> Vec<(&'static str, SimConfig)> {
    vec![
        (
            "one level",
            custom(
                r#""device": {"size_bytes": 8589934592, "tlb": [
                {"entries": 32, "page_bytes": 65536, "miss_cycles": 40}]}"#,
            ),
        ),
        (
            "four levels",
            custom(
                r#""device": {"size_bytes": 68719476736, "tlb": [
                {"entries": 8, "page_bytes": 65536, "miss_cycles": 12},
                {"entries": 32, "page_bytes": 2097152, "miss_cycles": 30, "ways": 4},
                {"entries": 256, "page_bytes": 2097152, "miss_cycles": 60},
                {"entries": 512, "page_bytes": 33554432, "miss_cycles": 150}]}"#,
            ),
        ),
        (
            "set-associative",
            custom(
                r#""device": {"size_bytes": 34359738368, "tlb": [
                {"entries": 64, "page_bytes": 65536, "miss_cycles": 20, "ways": 4},
                {"entries": 512, "page_bytes": 2097152, "miss_cycles": 100, "ways": 16}]}"#,
            ),
        ),
        (
            "very large reach",
            custom(
                r#""managed": {"size_bytes": 274877906944, "extra_cycles": 50, "tlb": [
                {"entries": 16, "page_bytes": 2097152, "miss_cycles": 10},
                {"entries": 2048, "page_bytes": 33554432, "miss_cycles": 200}]}"#,
            ),
        ),
        (
            "no boundary in range",
            custom(
                r#""device": {"size_bytes": 1073741824, "tlb": [
                {"entries": 1024, "page_bytes": 2097152, "miss_cycles": 100}]},
              "managed": {"size_bytes": 1073741824, "tlb": []}"#,
            ),
        ),
        (
            "pinned 4 KiB pages",
            custom(
                r#""pinned": {"size_bytes": 34359738368, "extra_cycles": 700, "tlb": [
                {"entries": 64, "page_bytes": 4096, "miss_cycles": 40},
                {"entries": 1024, "page_bytes": 4096, "miss_cycles": 300}]}"#,
            ),
        ),
    ]
}

#[test]
fn own_hierarchies_without_noise() {
    for (what, config) in own_hierarchies() {
        assert_probe_matches(&config, &ProbeOptions::default(), what);
    }
}

#[test]
fn own_hierarchies_with_noise() {
    for (what, config) in own_hierarchies() {
        for seed in 1..=3 {
            let config = noisy(config.clone(), seed, 0.005);
            assert_probe_matches(
                &config,
                &ProbeOptions::default(),
                &format!("{what}, seed {seed}"),
            );
        }
    }
}

#[test]
fn no_boundary_reads_no_miss_up_to_the_bound() {
    let config = own_hierarchies().remove(4).1;
    let result = probe(&config, &ProbeOptions::default());
    for kind in [MemoryKind::Device, MemoryKind::Managed] {
        let tlb = tlb_of(&result, kind);
        assert!(tlb.levels.is_empty(), "{kind}: {:?}", tlb.levels);
        assert_eq!(
            tlb.swept_up_to_bytes, config.memory_kinds[&kind].size_bytes,
            "{kind}"
        );
    }
}

#[test]
fn three_kinds_at_once_and_quick_mode() {
    let config = custom(
        r#""device": {"size_bytes": 17179869184, "tlb": [
                {"entries": 16, "page_bytes": 2097152, "miss_cycles": 9},
                {"entries": 65, "page_bytes": 33554432, "miss_cycles": 110, "ways": 8}]},
            "pinned": {"size_bytes": 17179869184, "extra_cycles": 700, "tlb": [
                {"entries": 32, "page_bytes": 65536, "miss_cycles": 60}]},
            "managed": {"size_bytes": 17179869184, "extra_cycles": 20, "tlb": [
                {"entries": 16, "page_bytes": 2097152, "miss_cycles": 20},
                {"entries": 512, "page_bytes": 2097152, "miss_cycles": 200}]}"#,
    );
    let result = assert_probe_matches(
        &noisy(config.clone(), 3, 0.005),
        &ProbeOptions::default(),
        "three kinds",
    );
    assert_eq!(result.tlb.len(), 3);
    let quick = ProbeOptions {
        quick: true,
        ..ProbeOptions::default()
    };
    let quick_result = assert_probe_matches(&noisy(config, 3, 0.005), &quick, "three kinds, quick");
    assert!(quick_result.loads < result.loads, "quick mode is cheaper");
}

#[test]
fn tlb_sharing_is_recovered() {
    for name in ["p100", "k80"] {
        let config = SimConfig::builtin(name).unwrap();
        let options = ProbeOptions {
            tlb_sharing: true,
            random_access: false,
            ..ProbeOptions::default()
        };
        let result = probe(&config, &options);
        let tlb = tlb_of(&result, MemoryKind::Device);
        assert!(result.warnings.is_empty(), "{:?}", result.warnings);
        for (level, want) in tlb.levels.iter().zip(&device(&config).tlb) {
            assert_eq!(
                level.shared_by_sms,
                Some(want.shared_by_sms),
                "{name}: {level:?}"
            );
        }
    }
    // Without the option, sharing is not measured.
    let result = probe(
        &SimConfig::builtin("p100").unwrap(),
        &ProbeOptions::default(),
    );
    assert!(tlb_of(&result, MemoryKind::Device)
        .levels
        .iter()
        .all(|l| l.shared_by_sms.is_none()));
}

#[test]
fn random_access_knee_is_at_the_costliest_reach() {
    // Seed 000 section 2.1: the big fall starts at about 2 GB on both GPUs. The knee is the
    // last region before it: the largest power of two within the costliest level's reach.
    for name in ["k80", "p100"] {
        let config = SimConfig::builtin(name).unwrap();
        let result = probe(&config, &ProbeOptions::default());
        let curve = match &result.random_access[&MemoryKind::Device] {
            Ok(curve) => curve,
            Err(e) => panic!("{name}: {e}"),
        };
        let costliest = device(&config)
            .tlb
            .iter()
            .max_by(|a, b| a.miss_cycles.total_cmp(&b.miss_cycles))
            .unwrap();
        let reach = costliest.entries * costliest.page_bytes;
        let expected = 1u64 << (63 - reach.leading_zeros());
        assert_eq!(curve.knee_bytes, Some(expected), "{name}");
        // The simulator does not model the cost of a skipped draw.
        assert_eq!(curve.draw_cost_relative, None, "{name}");
        // Nor atomics: no atomic points, inserts are priced as reads.
        assert!(curve.atomic_points.is_empty(), "{name}");
        assert!(curve
            .points
            .iter()
            .any(|p| p.region_bytes == device(&config).size_bytes));
    }
}

#[test]
fn sweep_cost_fits_a_gpu_budget() {
    // A chase costs about 0.5-1 µs per load on a GPU: the whole default probe of three
    // kinds must stay well under 20 s, i.e. about 20 million loads at 1 µs.
    let config = noisy(SimConfig::builtin("p100").unwrap(), 1, 0.001);
    let result = probe(&config, &ProbeOptions::default());
    assert!(
        result.loads * 3 < 20_000_000,
        "{} loads for one kind",
        result.loads
    );
    assert!(
        result.chase_calls * 3 < 20_000,
        "{} chase calls for one kind",
        result.chase_calls
    );
}

/// Latency effects that are not TLB misses, over a simulated GPU: a bump that comes back
/// down (for some chain lengths the chain's lines spread over far L2 partitions), a
/// persistent rise seen at one stride only, and a fixed offset per chain for short chains
/// (which partitions their few lines happen to live in).
struct WithL2Effects {
    inner: Simulator,
    bump: (u64, u64, f64),
    lone_rise: (u64, u64, f64),
}

impl MemorySystem for WithL2Effects {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn clock_mhz(&self) -> f64 {
        self.inner.clock_mhz()
    }
    fn sm_count(&self) -> u32 {
        self.inner.sm_count()
    }
    fn kinds(&self) -> Vec<MemoryKind> {
        self.inner.kinds()
    }
    fn max_footprint(&self, kind: MemoryKind) -> u64 {
        self.inner.max_footprint(kind)
    }
    fn chase(
        &mut self,
        kind: MemoryKind,
        stride: u64,
        footprint: u64,
        sm: u32,
    ) -> Result<f64, BackendError> {
        let cycles = self.inner.chase(kind, stride, footprint, sm)?;
        let (from, to, bump) = self.bump;
        let (rise_stride, rise_from, rise) = self.lone_rise;
        let loads = footprint / stride;
        let mut factor = 1.0;
        if (from..to).contains(&loads) {
            factor += bump;
        }
        if stride == rise_stride && footprint >= rise_from {
            factor += rise;
        }
        if loads < 16 {
            // Fixed per chain, -0.5%..+0.5% (a SplitMix64 finaliser as the hash).
            let mut z = stride.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ loads;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            factor += ((z ^ (z >> 31)) % 11) as f64 / 1000.0 - 0.005;
        }
        Ok(cycles * factor)
    }
    fn chase_pair(
        &mut self,
        kind: MemoryKind,
        stride: u64,
        footprint: u64,
        sm: u32,
        other: u32,
    ) -> Result<f64, BackendError> {
        self.inner.chase_pair(kind, stride, footprint, sm, other)
    }
    fn random_access(&mut self, kind: MemoryKind, region: u64) -> Result<f64, BackendError> {
        self.inner.random_access(kind, region)
    }
}

#[test]
fn latency_effects_that_are_not_tlb_make_no_level() {
    const MIB: u64 = 1 << 20;
    for name in ["p100", "k80"] {
        for (jitter, seed) in [(0.0, 0), (0.01, 1), (0.01, 2)] {
            let mut config = SimConfig::builtin(name).unwrap();
            config.noise = NoiseConfig {
                jitter,
                outlier_rate: 0.0,
                seed,
            };
            let mut system = WithL2Effects {
                inner: Simulator::new(config.clone()),
                bump: (160, 320, 0.015),
                lone_rise: (256 * 1024, 24 * MIB, 0.015),
            };
            let options = ProbeOptions {
                random_access: false,
                ..ProbeOptions::default()
            };
            let result = probe_tlb(&mut system, &options, &mut NoProgress);
            let what = format!("{name} with L2 effects, jitter {jitter}");
            assert_matches(device(&config), tlb_of(&result, MemoryKind::Device), &what);
        }
    }
}

/// A memory system that fails one kind and refuses large allocations of another.
struct Flaky {
    inner: Simulator,
    failing: MemoryKind,
    allocation_limit: u64,
}

impl MemorySystem for Flaky {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn clock_mhz(&self) -> f64 {
        self.inner.clock_mhz()
    }
    fn sm_count(&self) -> u32 {
        self.inner.sm_count()
    }
    fn kinds(&self) -> Vec<MemoryKind> {
        self.inner.kinds()
    }
    fn max_footprint(&self, kind: MemoryKind) -> u64 {
        self.inner.max_footprint(kind)
    }
    fn chase(
        &mut self,
        kind: MemoryKind,
        stride: u64,
        footprint: u64,
        sm: u32,
    ) -> Result<f64, BackendError> {
        self.check(kind, footprint)?;
        self.inner.chase(kind, stride, footprint, sm)
    }
    fn chase_pair(
        &mut self,
        kind: MemoryKind,
        stride: u64,
        footprint: u64,
        sm: u32,
        other: u32,
    ) -> Result<f64, BackendError> {
        self.check(kind, footprint)?;
        self.inner.chase_pair(kind, stride, footprint, sm, other)
    }
    fn random_access(&mut self, kind: MemoryKind, region: u64) -> Result<f64, BackendError> {
        self.check(kind, region)?;
        self.inner.random_access(kind, region)
    }
}

impl Flaky {
    fn check(&self, kind: MemoryKind, bytes: u64) -> Result<(), BackendError> {
        if kind == self.failing {
            return Err(BackendError::Launch {
                message: "injected failure".to_string(),
            });
        }
        if bytes > self.allocation_limit {
            return Err(BackendError::Allocation {
                kind,
                bytes,
                message: "injected out of memory".to_string(),
            });
        }
        Ok(())
    }
}

#[test]
fn a_failed_kind_does_not_stop_the_others_and_allocation_limits_lower_the_bound() {
    let config = custom(
        r#""device": {"size_bytes": 17179869184, "tlb": [
                {"entries": 16, "page_bytes": 2097152, "miss_cycles": 9},
                {"entries": 65, "page_bytes": 33554432, "miss_cycles": 110, "ways": 8}]},
            "pinned": {"size_bytes": 17179869184, "extra_cycles": 700, "tlb": []}"#,
    );
    let mut flaky = Flaky {
        inner: Simulator::new(config.clone()),
        failing: MemoryKind::Pinned,
        allocation_limit: 6 * GIB,
    };
    let result = probe_tlb(&mut flaky, &ProbeOptions::default(), &mut NoProgress);
    assert!(matches!(
        result.tlb[&MemoryKind::Pinned],
        Err(BackendError::Launch { .. })
    ));
    let tlb = tlb_of(&result, MemoryKind::Device);
    assert!(tlb.swept_up_to_bytes <= 6 * GIB);
    assert_matches(
        device(&config),
        tlb,
        "device under a 6 GiB allocation limit",
    );
    let sections = result.tlb_sections();
    assert!(sections
        .pinned
        .status_line()
        .starts_with("failed: kernel launch failed"));
    assert!(sections.device.measured().is_some());
    assert!(sections.managed.status_line().starts_with("not measured"));
}

#[test]
fn kinds_can_be_chosen_and_missing_ones_are_errors() {
    let options = ProbeOptions {
        kinds: vec![MemoryKind::Managed],
        random_access: false,
        ..ProbeOptions::default()
    };
    let result = probe(&SimConfig::builtin("p100").unwrap(), &options);
    assert_eq!(result.tlb.len(), 1);
    let err = result.tlb[&MemoryKind::Managed].as_ref().unwrap_err();
    assert!(err.to_string().contains("no managed memory"), "{err}");
}

#[test]
fn progress_reaches_the_end() {
    let mut events = Vec::new();
    let mut sim = Simulator::new(SimConfig::builtin("k80").unwrap());
    let mut sink = |e: &memtune_probe::ProgressEvent| events.push(*e);
    probe_tlb(&mut sim, &ProbeOptions::default(), &mut sink);
    assert!(events.len() > 5);
    assert!(
        events.windows(2).all(|w| w[1].fraction >= w[0].fraction),
        "monotone"
    );
    assert_eq!(events.last().map(|e| e.fraction), Some(1.0));
}

/// A simulated GPU that also answers random atomics on device memory: at half the read
/// rate, or failing its check from some region on.
struct WithAtomics {
    inner: Simulator,
    failing_from: Option<u64>,
}

impl MemorySystem for WithAtomics {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn clock_mhz(&self) -> f64 {
        self.inner.clock_mhz()
    }
    fn sm_count(&self) -> u32 {
        self.inner.sm_count()
    }
    fn kinds(&self) -> Vec<MemoryKind> {
        self.inner.kinds()
    }
    fn max_footprint(&self, kind: MemoryKind) -> u64 {
        self.inner.max_footprint(kind)
    }
    fn chase(
        &mut self,
        kind: MemoryKind,
        stride: u64,
        footprint: u64,
        sm: u32,
    ) -> Result<f64, BackendError> {
        self.inner.chase(kind, stride, footprint, sm)
    }
    fn chase_pair(
        &mut self,
        kind: MemoryKind,
        stride: u64,
        footprint: u64,
        sm: u32,
        other: u32,
    ) -> Result<f64, BackendError> {
        self.inner.chase_pair(kind, stride, footprint, sm, other)
    }
    fn random_access(&mut self, kind: MemoryKind, region: u64) -> Result<f64, BackendError> {
        self.inner.random_access(kind, region)
    }
    fn random_atomic(
        &mut self,
        kind: MemoryKind,
        region: u64,
    ) -> Result<Option<f64>, BackendError> {
        if kind != MemoryKind::Device {
            return Ok(None);
        }
        if self.failing_from.is_some_and(|from| region >= from) {
            return Err(BackendError::Launch {
                message: "the words sum to 1, not 2".to_string(),
            });
        }
        Ok(Some(self.inner.random_access(kind, region)? / 2.0))
    }
}

#[test]
fn atomics_are_kept_for_device_memory_and_a_failure_leaves_the_read_curve() {
    let config = custom(
        r#""device": {"size_bytes": 4294967296, "tlb": [
                {"entries": 16, "page_bytes": 2097152, "miss_cycles": 9},
                {"entries": 65, "page_bytes": 33554432, "miss_cycles": 110, "ways": 8}]},
            "pinned": {"size_bytes": 1073741824, "extra_cycles": 700, "tlb": []}"#,
    );
    let options = ProbeOptions {
        quick: true,
        kinds: vec![MemoryKind::Device, MemoryKind::Pinned],
        ..ProbeOptions::default()
    };
    let mut system = WithAtomics {
        inner: Simulator::new(config.clone()),
        failing_from: None,
    };
    let result = probe_tlb(&mut system, &options, &mut NoProgress);
    let device = result.random_access[&MemoryKind::Device].as_ref().unwrap();
    let mut regions: Vec<u64> = device.points.iter().map(|p| p.region_bytes).collect();
    regions.dedup();
    let atomic_regions: Vec<u64> = device
        .atomic_points
        .iter()
        .map(|p| p.region_bytes)
        .collect();
    assert_eq!(atomic_regions, regions, "one atomic point per region");
    assert!(device
        .atomic_points
        .iter()
        .all(|p| p.reads_per_second > 0.0));
    let pinned = result.random_access[&MemoryKind::Pinned].as_ref().unwrap();
    assert!(
        pinned.atomic_points.is_empty(),
        "atomics on device memory only"
    );
    assert!(result.warnings.iter().all(|w| !w.contains("atomics")));

    let mut system = WithAtomics {
        inner: Simulator::new(config),
        failing_from: Some(1 << 20),
    };
    let result = probe_tlb(&mut system, &options, &mut NoProgress);
    let device = result.random_access[&MemoryKind::Device].as_ref().unwrap();
    assert!(!device.points.is_empty(), "the read curve stands");
    assert!(device.atomic_points.is_empty());
    assert!(
        result
            .warnings
            .iter()
            .any(|w| w.contains("device: random atomics not measured") && w.contains("sum to 1")),
        "{:?}",
        result.warnings
    );
}
