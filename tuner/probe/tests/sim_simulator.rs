//! The simulated GPU answers as `docs/simulator.md` says: costs, consultation order,
//! associativity, sharing, random access, noise, errors, and speed.

use memtune_core::profile::MemoryKind;
use memtune_probe::sim::{NoiseConfig, SimConfig, Simulator, READS_IN_FLIGHT_PER_SM};
use memtune_probe::{BackendError, MemorySystem, TIMED_LOADS_CAP};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

fn simulator(kinds: &str) -> Simulator {
    let text = format!(
        r#"{{"schema": "memtune-sim/1", "name": "t", "sm_count": 8, "clock_mhz": 1000,
            "l2_hit_cycles": 300, "memory_kinds": {{ {kinds} }} }}"#
    );
    Simulator::new(SimConfig::from_json_str(&text, "test").unwrap())
}

fn two_levels() -> Simulator {
    simulator(
        r#""device": {"size_bytes": 17179869184, "tlb": [
             {"entries": 16, "page_bytes": 2097152, "miss_cycles": 10, "shared_by_sms": 2},
             {"entries": 64, "page_bytes": 33554432, "miss_cycles": 100, "ways": 8}]},
           "pinned": {"size_bytes": 1073741824, "extra_cycles": 700, "tlb": []}"#,
    )
}

fn chase(sim: &mut Simulator, stride: u64, footprint: u64) -> f64 {
    sim.chase(MemoryKind::Device, stride, footprint, 0).unwrap()
}

#[test]
fn load_cost_is_base_plus_missed_levels() {
    let mut sim = two_levels();
    // Everything hits.
    assert_eq!(chase(&mut sim, 2 * MIB, 32 * MIB), 300.0);
    // 17 pages of 2 MiB: the first level misses on every load, the second holds them.
    assert_eq!(chase(&mut sim, 2 * MIB, 34 * MIB), 310.0);
    // Strides of 32 MiB beyond 64 x 32 MiB: both levels miss on every load.
    assert_eq!(chase(&mut sim, 32 * MIB, 72 * 32 * MIB), 410.0);
    // Half-page stride: one miss per page, i.e. every other load.
    assert_eq!(chase(&mut sim, MIB, 34 * MIB), 305.0);
    // Extra cycles of the kind; no TLB at all.
    assert_eq!(sim.chase(MemoryKind::Pinned, 4096, GIB, 0).unwrap(), 1000.0);
}

#[test]
fn second_level_is_consulted_only_after_a_first_level_miss() {
    let mut sim = simulator(
        r#""device": {"size_bytes": 17179869184, "tlb": [
             {"entries": 64, "page_bytes": 2097152, "miss_cycles": 10},
             {"entries": 16, "page_bytes": 2097152, "miss_cycles": 100}]}"#,
    );
    // 32 pages thrash the 16-entry second level, but the first level holds them all.
    assert_eq!(chase(&mut sim, 2 * MIB, 64 * MIB), 300.0);
    assert_eq!(chase(&mut sim, 2 * MIB, 130 * MIB), 410.0);
}

#[test]
fn set_associative_levels_spread_uneven_entries() {
    // One 8-way level of `entries` 2 MiB pages.
    let eight_ways = |entries: u32| {
        simulator(&format!(
            r#""device": {{"size_bytes": 17179869184, "tlb": [
             {{"entries": {entries}, "page_bytes": 2097152, "miss_cycles": 100, "ways": 8}}]}}"#
        ))
    };
    // 64 entries, 8 ways: 8 sets of 8. Pages 8 apart all land in one set, so 9 of them
    // thrash it, while 64 consecutive pages fit.
    let mut sim = eight_ways(64);
    assert_eq!(chase(&mut sim, 16 * MIB, 8 * 16 * MIB), 300.0);
    assert_eq!(chase(&mut sim, 16 * MIB, 9 * 16 * MIB), 400.0);
    assert_eq!(chase(&mut sim, 2 * MIB, 64 * 2 * MIB), 300.0);
    // 65 entries, 8 ways: the first set holds 9.
    let mut sim = eight_ways(65);
    assert_eq!(chase(&mut sim, 16 * MIB, 9 * 16 * MIB), 300.0);
    assert_eq!(chase(&mut sim, 16 * MIB, 10 * 16 * MIB), 400.0);
    // Pages 9 apart visit every set: 65 consecutive-ish pages fit, as in a full level.
    assert_eq!(chase(&mut sim, 18 * MIB, 65 * 18 * MIB), 300.0);
}

#[test]
fn sharing_groups_consecutive_sms() {
    let mut sim = two_levels();
    let (kind, stride, footprint) = (MemoryKind::Device, 2 * MIB, 12 * 2 * MIB);
    assert_eq!(sim.chase(kind, stride, footprint, 1).unwrap(), 300.0);
    // SMs 0 and 1 share the first level (groups of 2): 24 pages thrash its 16 entries.
    assert_eq!(
        sim.chase_pair(kind, stride, footprint, 0, 1).unwrap(),
        310.0
    );
    assert_eq!(
        sim.chase_pair(kind, stride, footprint, 2, 3).unwrap(),
        310.0
    );
    assert_eq!(
        sim.chase_pair(kind, stride, footprint, 1, 2).unwrap(),
        300.0
    );
    // The second level is private: a pair that overflows it only if shared does not.
    let footprint = 40 * 32 * MIB;
    assert_eq!(
        sim.chase_pair(kind, 32 * MIB, footprint, 0, 1).unwrap(),
        310.0
    );
}

#[test]
fn random_access_follows_the_documented_model() {
    let mut sim = two_levels();
    let per_second = |cycles: f64| 8.0 * READS_IN_FLIGHT_PER_SM / cycles * 1000.0 * 1e6;
    let small = sim.random_access(MemoryKind::Device, 16 * MIB).unwrap();
    assert!((small - per_second(300.0)).abs() < 1.0);
    // 64 MiB: half the pages are outside the first level's 32 MiB reach.
    let mid = sim.random_access(MemoryKind::Device, 64 * MIB).unwrap();
    assert!((mid - per_second(305.0)).abs() < 1.0);
    // 4 GiB: the second level (2 GiB reach) misses half the time.
    let big = sim.random_access(MemoryKind::Device, 4 * GIB).unwrap();
    let cycles = 300.0 + 10.0 * (1.0 - 32.0 / 4096.0) + 100.0 * 0.5;
    assert!((big - per_second(cycles)).abs() < 1.0);
}

#[test]
fn noise_is_seeded_and_bounded() {
    let mut config = SimConfig::builtin("p100").unwrap();
    config.noise = NoiseConfig {
        jitter: 0.02,
        outlier_rate: 0.01,
        seed: 11,
    };
    let run = |config: &SimConfig| {
        let mut sim = Simulator::new(config.clone());
        (0..2000)
            .map(|_| chase(&mut sim, 2 * MIB, 32 * MIB))
            .collect::<Vec<_>>()
    };
    let a = run(&config);
    assert_eq!(a, run(&config), "same seed, same samples");
    config.noise.seed = 12;
    assert_ne!(a, run(&config), "another seed, other samples");
    let spikes = a.iter().filter(|&&y| y > 293.0 * 2.5).count();
    assert!((5..=45).contains(&spikes), "{spikes} spikes in 2000 at 1%");
    let calm: Vec<f64> = a.iter().copied().filter(|&y| y < 293.0 * 2.5).collect();
    let mean = calm.iter().sum::<f64>() / calm.len() as f64;
    let sd = (calm.iter().map(|y| (y - mean).powi(2)).sum::<f64>() / calm.len() as f64).sqrt();
    assert!(
        (mean - 293.0).abs() < 1.0 && (sd / 293.0 - 0.02).abs() < 0.003,
        "{mean} {sd}"
    );
}

#[test]
fn errors() {
    let mut sim = two_levels();
    let e = sim.chase(MemoryKind::Managed, 4096, MIB, 0).unwrap_err();
    assert!(
        matches!(
            e,
            BackendError::UnsupportedKind {
                kind: MemoryKind::Managed,
                ..
            }
        ),
        "{e}"
    );
    let e = sim.chase(MemoryKind::Pinned, 4096, 2 * GIB, 0).unwrap_err();
    assert!(
        matches!(e, BackendError::Allocation { bytes, .. } if bytes == 2 * GIB),
        "{e}"
    );
    assert!(
        e.to_string().contains("1073741824 bytes of pinned memory"),
        "{e}"
    );
    let e = sim.chase(MemoryKind::Device, 4096, MIB, 8).unwrap_err();
    assert!(
        matches!(e, BackendError::Launch { .. }) && e.to_string().contains("SM 8"),
        "{e}"
    );
    let e = sim.chase(MemoryKind::Device, 0, MIB, 0).unwrap_err();
    assert!(matches!(e, BackendError::Launch { .. }), "{e}");
    let e = sim
        .chase_pair(MemoryKind::Device, 4096, MIB, 3, 3)
        .unwrap_err();
    assert!(e.to_string().contains("two different SMs"), "{e}");
    // A pair needs room for two chains.
    let e = sim
        .chase_pair(MemoryKind::Pinned, 4096, 600 * MIB, 0, 1)
        .unwrap_err();
    assert!(matches!(e, BackendError::Allocation { .. }), "{e}");
    let e = sim.random_access(MemoryKind::Pinned, 2 * GIB).unwrap_err();
    assert!(matches!(e, BackendError::Allocation { .. }), "{e}");
}

#[test]
fn describes_itself() {
    let sim = Simulator::new(SimConfig::builtin("k80").unwrap());
    assert_eq!(sim.sm_count(), 13);
    assert_eq!(sim.clock_mhz(), 875.0);
    assert_eq!(sim.kinds(), vec![MemoryKind::Device]);
    assert_eq!(sim.max_footprint(MemoryKind::Device), 12 * GIB);
    assert_eq!(sim.max_footprint(MemoryKind::Pinned), 0);
    assert!(sim.name().contains("paper-k80"));
}

#[test]
fn big_chases_are_fast_and_counted() {
    let mut sim = Simulator::new(SimConfig::builtin("k80").unwrap());
    let start = std::time::Instant::now();
    for _ in 0..100 {
        sim.chase(MemoryKind::Device, 2 * MIB, 12 * GIB, 0).unwrap();
    }
    // 100 walks of 6144 loads in well under a second, even unoptimised.
    assert!(start.elapsed().as_secs_f64() < 1.0, "{:?}", start.elapsed());
    let stats = sim.stats();
    assert_eq!(stats.chase_calls, 100);
    assert_eq!(stats.loads, 100 * (6144 + 6144.min(TIMED_LOADS_CAP)));
}
