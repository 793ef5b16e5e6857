//! The TLB probe on memory systems that are not clean simulations: latency effects that are
//! not TLB misses make no level, a failed kind does not stop the others, allocation limits
//! lower the bound, missing kinds are errors, progress reaches the end, and random atomics
//! are kept for device memory (a failure leaves the read curve).

mod common;

use common::{
    assert_matches, custom, device, device_two_level_tlb, probe, tlb_of, Hooked, Hooks, GIB,
};
use memtune_core::profile::MemoryKind;
use memtune_probe::sim::{NoiseConfig, SimConfig, Simulator};
use memtune_probe::{probe_tlb, BackendError, MemorySystem, NoProgress, ProbeOptions};
use memtune_tests::rng::{mix, GOLDEN};

/// Latency effects that are not TLB misses, over a simulated GPU: a bump that comes back
/// down (for some chain lengths the chain's lines spread over far L2 partitions), a
/// persistent rise seen at one stride only, and a fixed offset per chain for short chains
/// (which partitions their few lines happen to live in).
struct WithL2Effects {
    bump: (u64, u64, f64),
    lone_rise: (u64, u64, f64),
}

impl Hooks for WithL2Effects {
    fn chase(
        &mut self,
        sim: &mut Simulator,
        kind: MemoryKind,
        stride: u64,
        footprint: u64,
        sm: u32,
    ) -> Result<f64, BackendError> {
        let cycles = sim.chase(kind, stride, footprint, sm)?;
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
            let z = mix(stride.wrapping_mul(GOLDEN) ^ loads);
            factor += (z % 11) as f64 / 1000.0 - 0.005;
        }
        Ok(cycles * factor)
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
            let mut system = Hooked::new(
                config.clone(),
                WithL2Effects {
                    bump: (160, 320, 0.015),
                    lone_rise: (256 * 1024, 24 * MIB, 0.015),
                },
            );
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
    failing: MemoryKind,
    allocation_limit: u64,
}

impl Hooks for Flaky {
    fn admit(&mut self, kind: MemoryKind, bytes: u64) -> Result<(), BackendError> {
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
    let others = r#"
            "pinned": {"size_bytes": 17179869184, "extra_cycles": 700, "tlb": []}"#;
    let config = custom(&(device_two_level_tlb(17179869184) + "," + others));
    let mut flaky = Hooked::new(
        config.clone(),
        Flaky {
            failing: MemoryKind::Pinned,
            allocation_limit: 6 * GIB,
        },
    );
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
    failing_from: Option<u64>,
}

impl Hooks for WithAtomics {
    fn random_atomic(
        &mut self,
        sim: &mut Simulator,
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
        Ok(Some(sim.random_access(kind, region)? / 2.0))
    }
}

#[test]
fn atomics_are_kept_for_device_memory_and_a_failure_leaves_the_read_curve() {
    let others = r#"
            "pinned": {"size_bytes": 1073741824, "extra_cycles": 700, "tlb": []}"#;
    let config = custom(&(device_two_level_tlb(4294967296) + "," + others));
    let options = ProbeOptions {
        quick: true,
        kinds: vec![MemoryKind::Device, MemoryKind::Pinned],
        ..ProbeOptions::default()
    };
    let mut system = Hooked::new(config.clone(), WithAtomics { failing_from: None });
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

    let mut system = Hooked::new(
        config,
        WithAtomics {
            failing_from: Some(1 << 20),
        },
    );
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

#[test]
fn a_kind_whose_every_allocation_fails_is_failed_not_measured_as_zeros() {
    let others = r#"
            "pinned": {"size_bytes": 17179869184, "extra_cycles": 700, "tlb": []}"#;
    let config = custom(&(device_two_level_tlb(17179869184) + "," + others));
    let mut flaky = Hooked::new(
        config,
        Flaky {
            failing: MemoryKind::Pinned,
            allocation_limit: 0,
        },
    );
    let result = probe_tlb(&mut flaky, &ProbeOptions::default(), &mut NoProgress);
    let sections = result.tlb_sections();
    assert!(
        sections.device.measured().is_none(),
        "{}",
        sections.device.status_line()
    );
    assert!(sections.device.status_line().starts_with("failed"));
}
