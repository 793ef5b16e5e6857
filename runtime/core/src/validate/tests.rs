use super::json::{find_duplicate_key, locate_type_error};
use super::*;
use crate::default::builtin;
use serde_json::json;

#[test]
fn the_builtin_default_is_valid() {
    validate(&builtin()).expect("valid");
}

#[test]
fn an_unprobed_identity_may_not_claim_measurements() {
    let mut p = builtin();
    p.bandwidth = Section::Measured(crate::profile::Bandwidth {
        device_to_device: 1e12,
        host_to_device: 5e10,
        device_to_host: 5e10,
        zero_copy_read: Default::default(),
        l2_read: None,
    });
    let err = validate(&p).unwrap_err();
    assert_eq!(err.violations[0].path, "device.sm_count");
}

#[test]
fn violations_are_all_listed_then_counted() {
    let mut p = builtin();
    p.device.name = String::new();
    p.provenance.duration_seconds = f64::NAN;
    p.device.sm_clock_khz = 1;
    let err = validate(&p).unwrap_err();
    let paths: Vec<&str> = err.violations.iter().map(|v| v.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "device.name",
            "device.sm_clock_khz",
            "provenance.duration_seconds"
        ]
    );
    assert!(
        err.to_string().contains("NaN is not a finite number"),
        "{err}"
    );

    let mut c = Checker::default();
    for i in 0..MAX_LISTED + 5 {
        c.fail(&idx("x", i), "bad");
    }
    let err = c.finish().unwrap_err();
    assert_eq!(err.violations.len(), MAX_LISTED);
    assert!(err.to_string().ends_with("; and 5 more"), "{err}");
}

#[test]
fn duplicate_keys_are_found_with_their_path() {
    assert_eq!(
        find_duplicate_key(br#"{"a": [1, {"b": 1}], "c": {}}"#),
        None
    );
    let found = find_duplicate_key(br#"{"a": [1, {"b": 1, "b": 2}]}"#).expect("found");
    assert_eq!(
        found,
        "a[1].b: duplicate key `b` in `a[1]`; a key may appear once"
    );
    let top = find_duplicate_key(br#"{"a": 1, "a": 1}"#).expect("found");
    assert!(top.contains("in the top-level object"), "{top}");
}

#[test]
fn typing_errors_are_located_inside_tagged_sections() {
    let mut v = serde_json::to_value(builtin()).expect("serialises");
    v["tlb"]["pinned"] = json!({
        "status": "measured",
        "swept_up_to_bytes": 1,
        "base_latency_cycles": 1.0,
        "curves": [],
        "levels": [{"entries": 1, "page_bytes": 4096, "reach_bytes": 4096,
                    "miss_penalty_cycles": 1.0, "miss_penalty_ns": 0.0, "confidence": -1}]
    });
    assert_eq!(locate_type_error(&v), None, "a negative float types fine");
    v["tlb"]["pinned"]["levels"][0]["entries"] = json!(-7);
    let (path, msg) = locate_type_error(&v).expect("located");
    assert_eq!(path, "tlb.pinned.levels[0].entries");
    assert!(msg.contains("integer `-7`"), "{msg}");
    v["tlb"]["pinned"]["levels"][0]["entries"] = json!(1e300);
    let (path, _) = locate_type_error(&v).expect("located");
    assert_eq!(path, "tlb.pinned.levels[0].entries");
    v["tlb"]["pinned"]["levels"][0]
        .as_object_mut()
        .expect("object")
        .remove("entries");
    let (path, msg) = locate_type_error(&v).expect("located");
    assert_eq!(path, "tlb.pinned.levels[0].entries");
    assert!(msg.contains("missing field"), "{msg}");
}

#[test]
fn an_l2_read_is_checked_and_round_trips() {
    let text = include_str!(
        "../../../../tests/fixtures/h100/GPU-4cb44b00-746e-ef0d-e563-1b303c5eaaff.json"
    );
    let mut p: crate::profile::Profile = serde_json::from_str(text).expect("a profile");
    let Section::Measured(b) = &mut p.bandwidth else {
        panic!("the fixture's bandwidth is measured");
    };
    assert_eq!(b.l2_read, None, "profiles without it still read");
    b.l2_read = Some(crate::profile::L2Read {
        bytes_per_second: 5e12,
        region_bytes: 50 << 18,
        repeats: 328,
    });
    validate(&p).expect("valid");
    let back: crate::profile::Profile =
        serde_json::from_str(&serde_json::to_string(&p).expect("serialize")).expect("parse");
    assert_eq!(back.bandwidth, p.bandwidth);
    for (bytes_per_second, repeats) in [(f64::NAN, 328), (5e12, 0)] {
        let mut q = p.clone();
        if let Section::Measured(b) = &mut q.bandwidth {
            b.l2_read = Some(crate::profile::L2Read {
                bytes_per_second,
                region_bytes: 50 << 18,
                repeats,
            });
        }
        let err = validate(&q).unwrap_err();
        assert!(
            err.violations[0].path.starts_with("bandwidth.l2_read"),
            "{err}"
        );
    }
}

#[test]
fn a_dram_latency_distribution_is_checked_and_round_trips() {
    let text = include_str!(
        "../../../../tests/fixtures/h100/GPU-4cb44b00-746e-ef0d-e563-1b303c5eaaff.json"
    );
    let mut p: crate::profile::Profile = serde_json::from_str(text).expect("a profile");
    let Section::Measured(h) = &mut p.caches else {
        panic!("the fixture's caches are measured");
    };
    assert_eq!(
        h.dram_latency_distribution, None,
        "profiles without it still read"
    );
    let good = crate::profile::LatencyDistribution {
        footprint_bytes: 1 << 30,
        stride_bytes: 1 << 10,
        samples: 2048,
        mean_cycles: 880.0,
        stdev_cycles: 60.0,
        p50_cycles: 864.0,
        p95_cycles: 1020.0,
        p99_cycles: 1100.0,
    };
    h.dram_latency_distribution = Some(good.clone());
    validate(&p).expect("valid");
    let back: crate::profile::Profile =
        serde_json::from_str(&serde_json::to_string(&p).expect("serialize")).expect("parse");
    assert_eq!(back.caches, p.caches);

    type Spoil = fn(&mut crate::profile::LatencyDistribution);
    let bad: [(&str, Spoil); 7] = [
        ("p95_cycles", |d| d.p95_cycles = 800.0),
        ("p99_cycles", |d| d.p99_cycles = 1000.0),
        ("p50_cycles", |d| d.p50_cycles = f64::NAN),
        ("mean_cycles", |d| d.mean_cycles = 0.0),
        ("samples", |d| d.samples = 0),
        ("stride_bytes", |d| d.stride_bytes = 0),
        ("footprint_bytes", |d| d.footprint_bytes = 512),
    ];
    for (field, spoil) in bad {
        let mut q = p.clone();
        if let Section::Measured(h) = &mut q.caches {
            let mut d = good.clone();
            spoil(&mut d);
            h.dram_latency_distribution = Some(d);
        }
        let err = validate(&q).unwrap_err();
        assert_eq!(
            err.violations[0].path,
            format!("caches.dram_latency_distribution.{field}"),
            "{err}"
        );
    }
}

#[test]
fn a_lower_bound_and_read_only_sharing_are_checked_and_round_trip() {
    use crate::profile::{CacheCarveout, CacheLevel, CachePath};
    let text = include_str!(
        "../../../../tests/fixtures/h100/GPU-4cb44b00-746e-ef0d-e563-1b303c5eaaff.json"
    );
    let mut p: crate::profile::Profile = serde_json::from_str(text).expect("a profile");
    let Section::Measured(h) = &mut p.caches else {
        panic!("the fixture's caches are measured");
    };
    assert!(
        h.levels
            .iter()
            .all(|l| !l.size_is_lower_bound && l.shares_l1.is_none()),
        "profiles without the marks read as exact sizes, untested sharing"
    );
    let level = |name: &str, path, size, hit| CacheLevel {
        name: name.to_string(),
        path,
        carveout: CacheCarveout::Default,
        size_bytes: size,
        line_bytes: None,
        fetch_bytes: None,
        ways: None,
        hit_latency_cycles: hit,
        attribute_bytes: None,
        size_is_lower_bound: false,
        shares_l1: None,
    };
    let mut read_only = level("read-only", CachePath::ReadOnly, 190464, 33.0);
    read_only.shares_l1 = Some(true);
    let mut plateau = level("constant L1.5", CachePath::Constant, 65536, 104.0);
    plateau.size_is_lower_bound = true;
    h.levels.push(read_only);
    h.levels.push(plateau);
    validate(&p).expect("valid");
    let text = serde_json::to_string(&p).expect("serialize");
    assert!(text.contains(r#""size_is_lower_bound":true"#) && text.contains(r#""shares_l1":true"#));
    assert!(text.contains(r#""path":"read_only""#));
    let back: crate::profile::Profile = serde_json::from_str(&text).expect("parse");
    assert_eq!(back.caches, p.caches);

    // A lower bound followed by a larger level of its path, sharing claimed off the
    // read-only path: each named.
    let mut q = p.clone();
    let Section::Measured(h) = &mut q.caches else {
        unreachable!()
    };
    let n = h.levels.len();
    h.levels
        .push(level("constant L3", CachePath::Constant, 131072, 300.0));
    h.levels[0].shares_l1 = Some(false);
    let err = validate(&q).unwrap_err();
    let paths: Vec<&str> = err.violations.iter().map(|v| v.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "caches.levels[0].shares_l1".to_string(),
            format!("caches.levels[{}].size_is_lower_bound", n - 1)
        ]
    );
}
