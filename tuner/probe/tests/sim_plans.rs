//! The planners on profiles the real probe measures from the simulated P100 and K80, against
//! what seed 000 (Karnagel et al., DaMoN'17) §6 found worked on those GPUs. The checks
//! (`memtune_tests::seed000`, with the sentences they test) are those
//! `runtime/core/tests/plan_seed000.rs` runs on hand-built profiles; here the TLB levels
//! and the random-access curve come from `probe_tlb` on
//! `Simulator::new(SimConfig::builtin(..))`, put into a profile as `cargo tune --simulate`
//! does (`tuner/cli/src/cli/probe.rs::apply`, `tuner/cli/src/cli/commands.rs::simulated_identity`).

use memtune_core::profile::{MemoryKind, Profile, Provenance, Section};
use memtune_probe::sim::{KindConfig, SimConfig, Simulator, TlbLevelConfig};
use memtune_probe::{probe_tlb, NoProgress, ProbeOptions};
use memtune_tests::seed000::{self, PaperGpus};
use std::collections::BTreeMap;
use std::sync::OnceLock;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// Probes `config` with the default options (noise as the file gives it) and builds the
/// profile the CLI would write.
fn profile_of(config: SimConfig) -> Profile {
    let mut sim = Simulator::new(config);
    let result = probe_tlb(&mut sim, &ProbeOptions::default(), &mut NoProgress);
    let provenance = Provenance {
        memtune_version: "test".to_string(),
        probe_version: 1,
        created_at: "2017-05-15T00:00:00Z".to_string(),
        duration_seconds: 0.0,
        options: BTreeMap::new(),
        simulator: Some(sim.config().name.clone()),
    };
    let mut profile = Profile::identity_only(sim.identity(), provenance);
    profile.tlb = result.tlb_sections();
    profile.random_access = result.random_access_sections();
    assert!(
        matches!(profile.tlb.device, Section::Measured(_))
            && matches!(profile.random_access.device, Section::Measured(_)),
        "{:#?}",
        result
    );
    profile
}

fn p100() -> &'static Profile {
    static P: OnceLock<Profile> = OnceLock::new();
    P.get_or_init(|| profile_of(SimConfig::builtin("p100").unwrap()))
}

/// The P100 without measurement noise: for the one statement whose number the noise moves
/// (see `p100_sixteen_gb_in_two_gb_scopes_is_twice_as_fast`).
fn quiet_p100() -> &'static Profile {
    static P: OnceLock<Profile> = OnceLock::new();
    P.get_or_init(|| {
        let mut config = SimConfig::builtin("p100").unwrap();
        config.noise = Default::default();
        profile_of(config)
    })
}

fn k80() -> &'static Profile {
    static P: OnceLock<Profile> = OnceLock::new();
    P.get_or_init(|| profile_of(SimConfig::builtin("k80").unwrap()))
}

/// The simulated GPUs' profiles, with the reaches their files give.
fn gpus() -> PaperGpus<'static> {
    PaperGpus {
        p100: p100(),
        k80: k80(),
        p100_l2_reach: reach("p100", 1),
        k80_l2_reach: reach("k80", 1),
        k80_l3_reach: reach("k80", 2),
    }
}

/// Reach of the level the file describes at `index` (device memory).
fn reach(name: &str, index: usize) -> u64 {
    let config = SimConfig::builtin(name).unwrap();
    let level = &config.memory_kinds[&MemoryKind::Device].tlb[index];
    level.entries * level.page_bytes
}

/// Largest over smallest-region throughput of the measured device curve.
fn measured_slowdown(profile: &Profile) -> f64 {
    let curve = profile.random_access.device.measured().unwrap();
    let first = curve.points.first().unwrap().reads_per_second;
    let last = curve.points.last().unwrap().reads_per_second;
    first / last
}

#[test]
fn simulated_curves_fall_as_seed_000_measured() {
    // §2.3, P100: "the slowdown for memory accesses >2GB is still significant with factors
    // of 4.3x for random sampling"; §1: "≈13.3x runtime decrease". The built-ins'
    // walks_in_flight are calibrated on these (noise of 2% per sample allowed).
    let p = measured_slowdown(p100());
    assert!((4.0..4.6).contains(&p), "P100 {p}");
    let k = measured_slowdown(k80());
    assert!((12.4..14.2).contains(&k), "K80 {k}");
}

memtune_tests::seed000_tests!(gpus());

#[test]
fn p100_sixteen_gb_in_two_gb_scopes_is_twice_as_fast() {
    // The plan holds on the noisy profile; the predicted speedup is checked on the noise-free
    // one (2.25x): with the built-in noise (seed 7) the single 16 GiB sample lands 5.5% low
    // and the fastest sample, the planner's unit, 2% high, so the prediction reads 2.42x.
    seed000::p100_sixteen_gb_in_two_gb_scopes(p100());
    let plan = seed000::p100_sixteen_gb_in_two_gb_scopes(quiet_p100());
    assert!((1.8..2.3).contains(&plan.predicted_speedup), "{plan:#?}");
}

#[test]
fn no_boundary_in_range_is_not_scoped() {
    // A GPU of our own whose only level reaches beyond its memory: the probe finds no level,
    // and sampling the whole memory is not scoped.
    let mut config = SimConfig::builtin("p100").unwrap();
    config.name = "no-boundary".to_string();
    config.memory_kinds.insert(
        MemoryKind::Device,
        KindConfig {
            size_bytes: 4 * GIB,
            extra_cycles: 0.0,
            tlb: vec![TlbLevelConfig {
                entries: 16,
                page_bytes: GIB,
                miss_cycles: 100.0,
                ways: None,
                shared_by_sms: 1,
                walks_in_flight: Some(10.0),
                allocation_spread: 0.0,
            }],
        },
    );
    let profile = profile_of(config);
    let tlb = profile.tlb.device.measured().unwrap();
    assert!(tlb.levels.is_empty(), "{tlb:#?}");
    for region in [256 * MIB, GIB, 4 * GIB] {
        let plan = seed000::sample(&profile, region);
        assert_eq!((plan.passes, plan.scope_bytes), (1, region), "{plan:#?}");
    }
}
