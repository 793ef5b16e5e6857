//! Unit tests of the profile model (`profile.rs`).

use super::*;

#[test]
fn uuid_format_matches_nvidia_smi() {
    let bytes = [
        0x5a, 0x1b, 0x2c, 0x3d, 0x4e, 0x5f, 0x60, 0x71, 0x82, 0x93, 0xa4, 0xb5, 0xc6, 0xd7, 0xe8,
        0xf9,
    ];
    let s = format_uuid(&bytes);
    assert_eq!(s, "GPU-5a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9");
    assert!(is_valid_uuid(&s));
    assert!(!is_valid_uuid("5a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9"));
    assert!(!is_valid_uuid("GPU-5A1B2C3D-4e5f-6071-8293-a4b5c6d7e8f9"));
    assert!(!is_valid_uuid("GPU-5a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f"));
    assert!(!is_valid_uuid("GPU-../../etc/passwd"));
}

#[test]
fn section_status_is_explicit_in_json() {
    let s: Section<RandomAccessCurve> = Section::not_measured("skipped by --quick");
    let v = serde_json::to_value(&s).unwrap();
    assert_eq!(v["status"], "not_measured");
    assert_eq!(v["reason"], "skipped by --quick");
    let m: Section<RandomAccessCurve> = Section::Measured(RandomAccessCurve {
        points: vec![],
        knee_bytes: Some(4096),
        draw_cost_relative: None,
        atomic_points: vec![],
    });
    let v = serde_json::to_value(&m).unwrap();
    assert_eq!(v["status"], "measured");
    assert_eq!(v["knee_bytes"], 4096);
    assert!(
        v.get("atomic_points").is_none(),
        "empty atomic points are left out"
    );
    let back: Section<RandomAccessCurve> = serde_json::from_value(v).unwrap();
    assert_eq!(back, m);
}

#[test]
fn atomic_points_round_trip_and_default_to_empty() {
    let point = |region_bytes, reads_per_second| RandomAccessPoint {
        region_bytes,
        reads_per_second,
    };
    let m: Section<RandomAccessCurve> = Section::Measured(RandomAccessCurve {
        points: vec![point(1 << 20, 5e10), point(1 << 30, 2.5e10)],
        knee_bytes: None,
        draw_cost_relative: Some(0.06),
        atomic_points: vec![point(1 << 20, 3e10), point(1 << 30, 9e9)],
    });
    let text = serde_json::to_string(&m).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["atomic_points"][1]["region_bytes"], 1u64 << 30);
    assert_eq!(v["atomic_points"][1]["reads_per_second"], 9e9);
    let back: Section<RandomAccessCurve> = serde_json::from_str(&text).unwrap();
    assert_eq!(back, m);
    // A profile written before the field existed reads as "not measured".
    let old = serde_json::json!({"status": "measured", "points": [], "knee_bytes": null});
    let old: Section<RandomAccessCurve> = serde_json::from_value(old).unwrap();
    assert_eq!(old.measured().map(|c| c.atomic_points.len()), Some(0));
}

#[test]
fn section_without_status_is_rejected() {
    let v = serde_json::json!({"points": [], "knee_bytes": null});
    assert!(serde_json::from_value::<Section<RandomAccessCurve>>(v).is_err());
}

#[test]
fn tlb_notes_default_to_empty_and_are_left_out_when_empty() {
    let old = serde_json::json!({
        "status": "measured", "levels": [], "swept_up_to_bytes": 1024,
        "base_latency_cycles": 300.0, "curves": []
    });
    let old: Section<TlbKind> = serde_json::from_value(old).unwrap();
    let mut tlb = old.measured().unwrap().clone();
    assert!(tlb.notes.is_empty());
    assert!(serde_json::to_value(&tlb).unwrap().get("notes").is_none());
    tlb.notes.push("16 x 16 MiB: dropped".to_string());
    let v = serde_json::to_value(&tlb).unwrap();
    assert_eq!(v["notes"][0], "16 x 16 MiB: dropped");
    assert_eq!(serde_json::from_value::<TlbKind>(v).unwrap(), tlb);
}

fn tlb_level(entries: u64, page_bytes: u64) -> TlbLevel {
    TlbLevel {
        entries,
        page_bytes,
        reach_bytes: entries * page_bytes,
        miss_penalty_cycles: 100.0,
        miss_penalty_ns: 50.0,
        confidence: 0.9,
        shared_by_sms: None,
    }
}

#[test]
fn tlb_unstable_levels_default_to_empty_and_are_left_out_when_empty() {
    let old = serde_json::json!({
        "status": "measured", "levels": [], "swept_up_to_bytes": 1024,
        "base_latency_cycles": 300.0, "curves": []
    });
    let old: Section<TlbKind> = serde_json::from_value(old).unwrap();
    let mut tlb = old.measured().unwrap().clone();
    assert!(tlb.unstable_levels.is_empty());
    let v = serde_json::to_value(&tlb).unwrap();
    assert!(v.get("unstable_levels").is_none());
    tlb.unstable_levels.push(tlb_level(4096, 4096));
    let v = serde_json::to_value(&tlb).unwrap();
    assert_eq!(v["unstable_levels"][0]["entries"], 4096);
    assert_eq!(serde_json::from_value::<TlbKind>(v).unwrap(), tlb);
}

#[test]
fn tlb_all_levels_merge_stable_and_unstable_by_reach() {
    let tlb = TlbKind {
        levels: vec![tlb_level(16, 2 << 20), tlb_level(2048, 2 << 20)],
        swept_up_to_bytes: 1 << 34,
        base_latency_cycles: 300.0,
        curves: Vec::new(),
        notes: Vec::new(),
        unstable_levels: vec![tlb_level(4096, 4096)],
    };
    let all: Vec<(u64, bool)> = tlb
        .all_levels()
        .into_iter()
        .map(|(l, stable)| (l.reach_bytes, stable))
        .collect();
    assert_eq!(
        all,
        vec![(16 << 20, false), (32 << 20, true), (4096 << 20, true)]
    );
}

#[test]
fn a_lower_bound_is_no_capacity_and_old_levels_read_as_exact() {
    let old = r#"{"name": "L2", "path": "l2", "carveout": "default", "size_bytes": 25165824,
        "line_bytes": null, "ways": null, "hit_latency_cycles": 279.5}"#;
    let mut l: CacheLevel = serde_json::from_str(old).expect("an older level reads");
    assert_eq!((l.size_is_lower_bound, l.shares_l1), (false, None));
    assert_eq!(l.capacity_bytes(), Some(25165824));
    assert_eq!(l.size_shown(|b| format!("{b} B")), "25165824 B");
    l.size_is_lower_bound = true;
    assert_eq!(l.capacity_bytes(), None);
    assert_eq!(l.size_shown(|b| format!("{b} B")), "≥ 25165824 B");
    assert_eq!(CachePath::ReadOnly.to_string(), "read_only");
}
