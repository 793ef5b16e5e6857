//! The TLB inference on curves recorded on a real GPU (committed under
//! `tests/fixtures/h200/`): the simulator's curves are clean by construction, these are not.
//! The truth is not known exactly, so the tests pin what the curves plainly show.

use memtune_core::profile::{MemoryKind, Profile, Section, TlbKind};
use memtune_probe::infer_tlb;

const H200: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/h200/GPU-61cccf85-710e-bc24-2d4b-64325410617d.json"
);

fn reinfer(kind: MemoryKind) -> TlbKind {
    reinfer_at(std::path::Path::new(H200), kind)
}

/// Re-infers `kind`'s TLB levels from the curves recorded in the profile at `path`.
fn reinfer_at(path: &std::path::Path, kind: MemoryKind) -> TlbKind {
    let profile: Profile = memtune_core::store::load_path(path).expect("recorded profile");
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

/// The first pinned TLB level of a recorded profile (under `tests/fixtures/h200`),
/// re-inferred from its curves: (page bytes, reach in MiB, penalty in cycles).
fn first_pinned_level(profile: &str) -> (u64, f64, f64) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/h200")
        .join(profile);
    let t = reinfer_at(&path, MemoryKind::Pinned);
    let first = &t.levels[0];
    let reach_mib = first.reach_bytes as f64 / (1 << 20) as f64;
    (first.page_bytes, reach_mib, first.miss_penalty_cycles)
}

/// Mapped host memory on nine H200s (provenance in `docs/calibration.md`): the 4 KiB-stride
/// chase climbs by 7-11% over 6-32 MiB in a staircase, and the 8 KiB one at twice the
/// footprints (the same number of loads). The probe reports it as a level of 4 KiB pages
/// with its middle at 12-22 MiB: the reach the planners' TLB-reach bet keeps zero-copy
/// passes within. Without the staircase and finest-level rules (`infer_tlb::finest_level`)
/// these curves give first levels of 23-1064 MiB.
#[test]
fn h200_pinned_memory_shows_its_finest_level() {
    for profile in [
        "GPU-9f7d556a-89da-7079-66f0-e8a5e9cdd775.json",
        "GPU-af2e01be-eaf5-74a0-c6a7-847748079011.json",
        "GPU-6ddbbc16-1cfd-6565-82f7-fd898073301e.json",
        "GPU-78df8647-bae4-4977-6093-661cf5a2df50.json",
        "GPU-e9016a24-d2b7-c42f-ff80-abbe43f3b522.json",
        "GPU-14f4e591-ace0-a7d4-10af-bee58efc2c40.json",
        "GPU-2eda6f3a-a5da-b9f5-67af-3fce4c31008e.json",
        "GPU-e7a919e5-af96-f04b-bf90-0f50e59d1451.json",
        "GPU-0d048cc6-e705-a89e-2d28-ad6ce7d2c2d5.json",
    ] {
        let (page, reach_mib, penalty) = first_pinned_level(profile);
        assert_eq!(page, 4096, "{profile}");
        assert!(
            (12.0..=22.0).contains(&reach_mib),
            "{profile}: {reach_mib} MiB"
        );
        assert!(
            (80.0..=250.0).contains(&penalty),
            "{profile}: +{penalty} cycles"
        );
    }
}

/// Two more shapes of the finest pinned level on H200s: a tilted staircase, and steps at the
/// same bytes. Without these readings the first pinned level reaches 1152 and 800 MiB, and
/// one pass over 256 MiB runs 1.074x and 1.088x the best.
#[test]
fn finest_levels_tilted_or_at_the_same_bytes_are_read() {
    for (profile, page_bytes, reach) in [
        // Tilted: the 4 KiB stride rises over 6-26 MiB, half up by 8 MiB (2048
        // loads); the 8 KiB stride over 20-64 MiB, half up at 38 MiB (4826 loads). No level
        // puts the second stride's boundary at more loads: the same loads, between the two.
        (
            "GPU-266b3189-83de-4bcd-ffb5-4a2d8c1fb294.json",
            4096,
            8.0..=19.0,
        ),
        // The same bytes: the 4 and 8 KiB strides rise at 17 and 19 MiB (4431 and
        // 2481 loads), the 16 KiB stride at 2663 loads: pages of 8 KiB.
        (
            "GPU-0604ef8d-302a-b6c3-ea77-518b61f7a1f3.json",
            8192,
            17.0..=22.0,
        ),
    ] {
        let (page, reach_mib, penalty) = first_pinned_level(profile);
        assert_eq!(page, page_bytes, "{profile}");
        assert!(reach.contains(&reach_mib), "{profile}: {reach_mib} MiB");
        assert!((80.0..=250.0).contains(&penalty), "{profile}: +{penalty}");
    }
}
