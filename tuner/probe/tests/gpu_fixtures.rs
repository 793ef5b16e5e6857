//! The TLB inference on every recorded H100 and H200 profile (`tests/fixtures/h100/`,
//! `tests/fixtures/h200/`), re-inferred from the raw curves kept in each: what the
//! significance rule (`infer_tlb_gate.rs`) keeps and drops across machines.

use memtune_core::profile::{MemoryKind, Profile, Section, TlbKind};
use memtune_probe::infer_tlb;
use std::path::PathBuf;

/// The recorded profiles of one GPU model, by file name.
fn profiles(model: &str) -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(model);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fixture folder")
        .map(|e| e.expect("fixture entry").path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("GPU-") && n.ends_with(".json"))
        })
        .collect();
    paths.sort();
    paths
}

/// `kind`'s TLB levels re-inferred from the curves of the profile at `path`, if measured.
fn reinfer(path: &std::path::Path, kind: MemoryKind) -> Option<TlbKind> {
    let profile: Profile = memtune_core::store::load_path(path).expect("recorded profile");
    let Section::Measured(t) = profile.tlb.get(kind).clone() else {
        return None;
    };
    let clock = profile.device.sm_clock_khz as f64 / 1000.0;
    let again = infer_tlb(t.curves, t.swept_up_to_bytes, clock);
    let name = path.file_name().unwrap().to_string_lossy();
    for l in &again.levels {
        eprintln!(
            "{name} {kind}: {} x {} KiB, +{:.1} cycles, confidence {:.2}",
            l.entries,
            l.page_bytes >> 10,
            l.miss_penalty_cycles,
            l.confidence
        );
    }
    for n in &again.notes {
        eprintln!("{name} {kind}: note: {n}");
    }
    Some(again)
}

const GIB: u64 = 1 << 30;

/// Device memory (cudaMalloc) on Hopper has no TLB cliff below 64 GiB. What the curves do
/// show there, on every machine, is a step of 9-12 cycles (2-5% of a 275-300-cycle load)
/// at 16 loads of 16 MiB strides and beyond, at half height at 8 MiB (seed 000's Figure 2
/// pattern: 16 entries of 16 MiB), 5-30 standard errors above the curves' noise: a real
/// level of small cost, which the significance rule keeps (seed 000's P100 L1, +9 over 293
/// cycles, is the same size; the next test reads it on every machine). So: nothing else below 64 GiB, nothing costing more than 5%
/// of a load; on the H200s, whose sweeps reach 111 GiB, the level of about 2048 entries of
/// 32 MiB (64 GiB, +89-147 cycles) past it.
#[test]
fn device_memory_has_no_cliff_below_64_gib() {
    for path in profiles("h100").into_iter().chain(profiles("h200")) {
        let t = reinfer(&path, MemoryKind::Device).expect("device memory measured");
        let name = path.display();
        let base = t.base_latency_cycles;
        for l in &t.levels {
            let small = l.entries <= 64 && l.miss_penalty_cycles <= 0.05 * base;
            let past_64_gib = l.reach_bytes >= 60 * GIB && l.miss_penalty_cycles > 40.0;
            assert!(
                small || past_64_gib,
                "{name}: device level {} x {} B (+{} cycles)",
                l.entries,
                l.page_bytes,
                l.miss_penalty_cycles
            );
        }
        assert!(t.levels.len() <= 2, "{name}: {} levels", t.levels.len());
        let h200 = path.to_string_lossy().contains("/h200/");
        assert_eq!(
            t.levels.iter().any(|l| l.reach_bytes >= 60 * GIB),
            h200,
            "{name}: the 64 GiB level is seen where the sweep passes it"
        );
    }
}

/// The small device level is read on every machine, not on most: its fitted step, 9-11
/// cycles at the boundary, is what the size test weighs (the plateaus' difference, 1.3-4x
/// away, halves it on some machines). Its reach is about 256 MiB on every machine: 16 x
/// 16 MiB on all but three (64 x 4 MiB, 32 x 8 MiB or 16 x 32 MiB on one each), among them
/// `004d5b9e` and `19abbdb9`, whose 64-256 MiB strides creep by 2-4 cycles over 13-16 loads
/// before the step at 16-17 (`steps.rs` places such a ramp at its last rise).
#[test]
fn device_memory_reads_its_small_level_on_every_machine() {
    const MIB: u64 = 1 << 20;
    let (mut machines, mut near_256_mib, mut sixteen) = (0, 0, 0);
    for path in profiles("h100").into_iter().chain(profiles("h200")) {
        let t = reinfer(&path, MemoryKind::Device).expect("device memory measured");
        let name = path.display();
        machines += 1;
        let small: Vec<_> = t
            .levels
            .iter()
            .filter(|l| l.reach_bytes < 60 * GIB)
            .collect();
        assert_eq!(small.len(), 1, "{name}: levels below 64 GiB {small:?}");
        let l = small[0];
        let share = l.miss_penalty_cycles / t.base_latency_cycles;
        assert!(
            (0.025..0.05).contains(&share),
            "{name}: +{share:.3} of a load"
        );
        near_256_mib += usize::from((128 * MIB..=512 * MIB).contains(&l.reach_bytes));
        sixteen += usize::from(l.entries == 16 && l.page_bytes == 16 * MIB);
    }
    assert!(machines >= 20, "{machines} recorded profiles");
    assert_eq!(
        near_256_mib, machines,
        "reach near 256 MiB on {near_256_mib} of {machines}"
    );
    assert!(
        sixteen + 3 >= machines,
        "16 x 16 MiB on {sixteen} of {machines}"
    );
}

/// Managed memory: where both the small 16-entry step and the level of about 2100 entries
/// of 2 MiB pages are significant, their pages would shrink from one level to the next, and
/// the less significant (the small step) goes with a note.
#[test]
fn managed_pages_grow_with_the_level() {
    for path in profiles("h100").into_iter().chain(profiles("h200")) {
        let t = reinfer(&path, MemoryKind::Managed).expect("managed memory measured");
        for pair in t.levels.windows(2) {
            assert!(
                pair[0].page_bytes <= pair[1].page_bytes,
                "{}",
                path.display()
            );
        }
    }
}

/// Machines whose first level of mapped host memory the inference misses: (device UUID,
/// entries, page bytes it reads). `d234884c`'s 4 KiB curve rises by 120 cycles at 7.9 MiB
/// and its 8 and 16 KiB curves at 11-26 MiB and 18-44 MiB, out of step; the chains pair
/// 16 KiB steps into 3726 x 16 KiB (58 MiB), where the other H100s read 2600-5400 x 4 KiB.
const PINNED_FIRST_LEVEL_MISSED: [(&str, u64, u64); 1] =
    [("GPU-d234884c-78ac-e7f6-4bbb-8033755eec3c", 3726, 16 << 10)];

/// Mapped host memory on the eight H100s: the first level is the finest pages, 2600-5400
/// entries of 4 KiB (a0c8e126: 3529 of 8 KiB, its 4 and 8 KiB strides rising at the same
/// bytes; 1a03b07d: 1528, the noisiest machine, whose 4 KiB curve climbs in a staircase up to
/// 16 MiB) on every machine, significant against the curves' noise. Levels past it do not
/// agree between machines (pages of 32 KiB to 8 MiB, reaches of 120 MiB to 2.5 GiB: steps of
/// 100-300 cycles at coarse strides that each machine reads differently); they are kept
/// where significant and recorded below, not asserted. The machines of
/// [`PINNED_FIRST_LEVEL_MISSED`] are the exceptions, asserted to read as they do.
#[test]
fn h100_pinned_first_level_is_found_on_every_machine() {
    for path in profiles("h100") {
        let t = reinfer(&path, MemoryKind::Pinned).expect("pinned memory measured");
        let name = path.display();
        let first = t
            .levels
            .first()
            .unwrap_or_else(|| panic!("{name}: no level"));
        let missed = PINNED_FIRST_LEVEL_MISSED
            .iter()
            .find(|(uuid, ..)| name.to_string().contains(uuid));
        if let Some((_, entries, page)) = missed {
            assert_eq!(
                (first.entries, first.page_bytes),
                (*entries, *page),
                "{name}"
            );
            continue;
        }
        assert!(
            first.page_bytes <= 8192 && t.levels.iter().all(|l| l.page_bytes >= first.page_bytes),
            "{name}: first level of {} B pages",
            first.page_bytes
        );
        let reach_mib = first.reach_bytes as f64 / (1 << 20) as f64;
        assert!(
            (5.0..=28.0).contains(&reach_mib),
            "{name}: first level reaches {reach_mib} MiB"
        );
        assert!(
            (50.0..=250.0).contains(&first.miss_penalty_cycles),
            "{name}: +{} cycles",
            first.miss_penalty_cycles
        );
        for pair in t.levels.windows(2) {
            assert!(pair[0].page_bytes <= pair[1].page_bytes, "{name}");
        }
    }
}

/// Every level a profile reports passes the rule, and every level the chains found but the
/// profile leaves out has a note: re-inferring a profile changes nothing.
#[test]
fn notes_explain_what_is_left_out_and_inference_is_stable() {
    for path in profiles("h100") {
        for kind in MemoryKind::ALL {
            let t = reinfer(&path, kind).expect("measured");
            let again = infer_tlb(t.curves.clone(), t.swept_up_to_bytes, 1000.0);
            assert_eq!(again.levels.len(), t.levels.len(), "{}", path.display());
            assert_eq!(again.notes, t.notes, "{}", path.display());
            assert!(t.notes.iter().all(|n| n.contains("dropped")));
        }
    }
    // The chains read some of the pinned curves' wiggle as levels; the rule drops them.
    let insignificant = profiles("h100")
        .iter()
        .chain(&profiles("h200"))
        .filter_map(|p| reinfer(p, MemoryKind::Pinned))
        .flat_map(|t| t.notes)
        .filter(|n| n.contains("standard errors"))
        .count();
    assert!(insignificant > 0, "no pinned level was found insignificant");
}

/// Prints what every recorded profile re-infers to (`--ignored --nocapture`).
#[test]
#[ignore]
fn dump() {
    for path in profiles("h100").into_iter().chain(profiles("h200")) {
        for kind in MemoryKind::ALL {
            eprintln!("== {} {kind}", path.file_name().unwrap().to_string_lossy());
            reinfer(&path, kind);
        }
    }
}
