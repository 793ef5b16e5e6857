//! The TLB inference on curves recorded on a real GPU (committed under
//! `benchmarks/results/`): the simulator's curves are clean by construction, these are not.
//! The truth is not known exactly, so the tests pin what the curves plainly show.

use memtune_core::profile::{MemoryKind, Profile, Section, TlbKind};
use memtune_tuner::probe::infer_tlb;

const H200: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../benchmarks/results/2026-11-21-h200-probe-first/profiles/GPU-61cccf85-710e-bc24-2d4b-64325410617d.json"
);

fn reinfer(kind: MemoryKind) -> TlbKind {
    let profile: Profile =
        memtune_core::store::load_path(std::path::Path::new(H200)).expect("recorded profile");
    let Section::Measured(t) = profile.tlb.get(kind).clone() else {
        panic!("{kind} was measured in the recorded run");
    };
    let clock = profile.device.sm_clock_khz as f64 / 1000.0;
    let again = infer_tlb(t.curves.clone(), t.swept_up_to_bytes, clock);
    for l in &again.levels {
        eprintln!(
            "{kind}: {} x {} B = {} B reach, +{:.0} cycles, confidence {:.2}",
            l.entries, l.page_bytes, l.reach_bytes, l.miss_penalty_cycles, l.confidence
        );
    }
    again
}

const GIB: f64 = (1u64 << 30) as f64;

/// Re-infers `kind` and checks it has a level with a large miss penalty whose reach lies
/// in `reach_gib`, and at most `max_levels` levels.
fn assert_big_level(kind: MemoryKind, reach_gib: std::ops::RangeInclusive<f64>, max_levels: usize) {
    let t = reinfer(kind);
    let big = t
        .levels
        .iter()
        .find(|l| l.miss_penalty_cycles > 40.0)
        .expect("a level with a large miss penalty");
    let reach = big.reach_bytes as f64 / GIB;
    assert!(reach_gib.contains(&reach), "{kind}: reach {reach} GiB");
    assert!(
        t.levels.len() <= max_levels,
        "{kind}: {} levels",
        t.levels.len()
    );
}

/// Device memory on the H200: latency flat to about 64 GiB, then a ramp of some 80-90
/// cycles at strides of 16 and 32 MiB (the curves are in the recorded profile).
#[test]
fn h200_device_memory_shows_its_64_gib_level() {
    assert_big_level(MemoryKind::Device, 58.0..=72.0, 2);
}

/// Managed memory: the boundary doubles with the stride from 2 to 32 MiB at about 2100
/// loads, a level of about 2100 entries that device memory does not have below 64 GiB.
#[test]
fn h200_managed_memory_shows_a_level_of_about_2100_entries() {
    assert_big_level(MemoryKind::Managed, 3.5..=6.0, 3);
}

/// Pinned memory crosses the host link at about 2000 cycles a load, with several percent
/// of noise: whatever is inferred, it must not be a pile of levels.
#[test]
fn h200_pinned_memory_does_not_read_noise_as_levels() {
    let t = reinfer(MemoryKind::Pinned);
    assert!(t.levels.len() <= 3, "{} levels", t.levels.len());
}
