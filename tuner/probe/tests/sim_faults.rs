//! Fault injection (`memtune_probe::fault`) and cancellation on the simulated GPU: the
//! named section fails with the injected error, the others are measured as without it; a
//! cancelled probe stops asking the backend and fails what is left.

use memtune_core::profile::Section;
use memtune_core::MemoryKind;
use memtune_probe::fault::Faults;
use memtune_probe::sim::{SimConfig, Simulator};
use memtune_probe::{
    probe_caches, probe_tlb, BackendError, Cancel, NoProgress, ProbeOptions, ProgressEvent,
};
use memtune_tests::SIM_TWO_KINDS;

fn sim(faults: &str) -> Simulator {
    let config = SimConfig::from_json_str(SIM_TWO_KINDS, "two-kinds").unwrap();
    let faults = if faults.is_empty() {
        Faults::none()
    } else {
        Faults::parse(faults).unwrap()
    };
    Simulator::new(config).with_faults(faults)
}

fn injected<T: std::fmt::Debug>(r: Option<&Result<T, BackendError>>, what: &str) -> String {
    match r {
        Some(Err(e @ BackendError::Injected(_))) => e.to_string(),
        other => panic!("{what}: expected an injected failure, got {other:?}"),
    }
}

#[test]
fn an_injected_allocation_fails_its_kind_and_keeps_the_other() {
    let clean = probe_tlb(&mut sim(""), &ProbeOptions::default(), &mut NoProgress);
    let result = probe_tlb(
        &mut sim("alloc:pinned"),
        &ProbeOptions::default(),
        &mut NoProgress,
    );
    let why = injected(result.tlb.get(&MemoryKind::Pinned), "pinned TLB");
    assert!(why.contains("MEMTUNE_FAULT (alloc:tlb-pinned)"), "{why}");
    injected(
        result.random_access.get(&MemoryKind::Pinned),
        "pinned random access",
    );
    // Device memory is measured exactly as without the fault (same noise-free model).
    assert_eq!(
        result.tlb.get(&MemoryKind::Device),
        clean.tlb.get(&MemoryKind::Device)
    );
    assert!(matches!(
        result.random_access.get(&MemoryKind::Device),
        Some(Ok(_))
    ));
    // In the profile: the failed kind says why, the measured one stays.
    let sections = result.tlb_sections();
    assert!(
        matches!(sections.get(MemoryKind::Pinned), Section::Failed { reason } if reason.contains("injected"))
    );
    assert!(matches!(
        sections.get(MemoryKind::Device),
        Section::Measured(_)
    ));
}

#[test]
fn a_fault_of_one_part_leaves_the_other_part_of_its_kind() {
    let result = probe_tlb(
        &mut sim("launch:random-device"),
        &ProbeOptions::default(),
        &mut NoProgress,
    );
    assert!(matches!(result.tlb.get(&MemoryKind::Device), Some(Ok(_))));
    let why = injected(
        result.random_access.get(&MemoryKind::Device),
        "device random access",
    );
    assert!(why.contains("kernel launch"), "{why}");
    assert!(matches!(
        result.random_access.get(&MemoryKind::Pinned),
        Some(Ok(_))
    ));
}

#[test]
fn an_injected_cache_fault_fails_the_cache_section() {
    let config = SimConfig::builtin("gt200").unwrap();
    let faults = Faults::parse("launch:caches").unwrap();
    let mut sim = Simulator::new(config).with_faults(faults);
    let options = ProbeOptions::default();
    let caches = probe_caches(&mut sim, &options, &mut NoProgress);
    match &caches.section {
        Section::Failed { reason } => assert!(reason.contains("launch:caches"), "{reason}"),
        other => panic!("expected the caches to fail, got {other:?}"),
    }
    // The TLB probe of the same simulator is untouched by a cache fault.
    let tlb = probe_tlb(&mut sim, &options, &mut NoProgress);
    assert!(matches!(tlb.tlb.get(&MemoryKind::Device), Some(Ok(_))));
}

#[test]
fn a_cancelled_probe_stops_asking_and_fails_what_is_left() {
    let full = probe_tlb(&mut sim(""), &ProbeOptions::default(), &mut NoProgress);
    let cancel = Cancel::new();
    let options = ProbeOptions {
        cancel: cancel.clone(),
        ..ProbeOptions::default()
    };
    // Cancelled after the first progress event, as Ctrl-C would mid-sweep.
    let mut on_event = |_: &ProgressEvent| cancel.cancel();
    let result = probe_tlb(&mut sim(""), &options, &mut on_event);
    assert!(
        result.chase_calls < full.chase_calls / 2,
        "{} chases after the cancel, {} in a full probe",
        result.chase_calls,
        full.chase_calls
    );
    for kind in [MemoryKind::Device, MemoryKind::Pinned] {
        assert!(
            matches!(result.tlb.get(&kind), Some(Err(BackendError::Cancelled))),
            "{kind}: {:?}",
            result.tlb.get(&kind).map(|r| r.as_ref().err())
        );
    }
    let caches = probe_caches(
        &mut Simulator::new(SimConfig::builtin("gt200").unwrap()),
        &options,
        &mut NoProgress,
    );
    assert_eq!(caches.chase_calls, 0);
    assert!(matches!(caches.section, Section::Failed { .. }));
}
