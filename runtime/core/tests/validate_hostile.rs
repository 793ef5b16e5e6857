//! Hostile profiles: a valid fixture turned into nonsense one field at a time, re-signed
//! with the real digest so that only semantic validation stands between it and a planner.
//! Every variant must be refused by decode and by import, naming the offending field, and
//! a refused import must leave the stored profile as it was.

use memtune_core::{codec, digest, store, validate, ProfileError, Store};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixture_text() -> String {
    std::fs::read_to_string(repo().join("tests/fixtures/h100.json")).expect("h100 fixture")
}

/// The fixture with its raw chase curves cut to 8 points each (still valid, and ten times
/// smaller, so that a hundred variants decode quickly).
fn fixture() -> Value {
    let mut v: Value = serde_json::from_str(&fixture_text()).expect("fixture JSON");
    for curves in [
        "/tlb/device/curves",
        "/tlb/pinned/curves",
        "/tlb/managed/curves",
        "/caches/curves",
    ] {
        for curve in v
            .pointer_mut(curves)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Some(points) = curve["points"].as_array_mut() {
                points.truncate(8);
            }
        }
    }
    v
}

/// Re-signs `v` with the digest of its content, as an attacker with the code would.
fn resign(v: &mut Value) -> Vec<u8> {
    v["digest"] = Value::String(digest::of_value(v));
    serde_json::to_vec_pretty(v).expect("serialises")
}

/// Sets the value at a JSON pointer, adding the last key to an object if missing.
fn set(v: &mut Value, pointer: &str, new: Value) {
    let (parent, key) = pointer.rsplit_once('/').expect("a pointer");
    let parent = v
        .pointer_mut(parent)
        .unwrap_or_else(|| panic!("{pointer}: no parent"));
    match parent {
        Value::Object(map) => {
            map.insert(key.to_string(), new);
        }
        Value::Array(items) => {
            let i: usize = key.parse().expect("an index");
            items[i] = new;
        }
        _ => panic!("{pointer}: parent is not a container"),
    }
}

fn remove(v: &mut Value, pointer: &str) {
    let (parent, key) = pointer.rsplit_once('/').expect("a pointer");
    let parent = v.pointer_mut(parent).and_then(Value::as_object_mut);
    parent.expect("an object").remove(key).expect("present");
}

/// One change per line: a JSON pointer, then the new JSON value (`-`: remove the key),
/// then, where the message names another field than the pointer's, `=> that.path`.
const CHANGES: &str = r#"
/device/sm_count 0
/device/sm_count 100000
/device/sm_count -1
/device/sm_clock_khz 1e308
/device/sm_clock_khz 999
/device/sm_clock_khz 20000000
/device/memory_clock_khz 18446744073709551615
/device/memory_clock_khz -5
/device/l2_bytes 1152921504606846976
/device/global_memory_bytes 4611686018427387904
/device/shared_memory_per_block_bytes 300000
/device/shared_memory_per_block_optin_bytes 300000
/device/shared_memory_per_sm_bytes 1099511627776
/device/memory_bus_width_bits 1000000
/device/compute_capability/major 1000
/device/compute_capability/minor "nine"
/device/name ""
/device/uuid "GPU-../../etc/passwd"
/device/driver_version "13.0\n\u0007"
/provenance/duration_seconds -1.0
/provenance/duration_seconds 1e308
/provenance/memtune_version ""
/provenance/created_at null
/provenance/probe_version -3
/tlb/pinned/levels/1/page_bytes 3000
/tlb/pinned/levels/0/page_bytes 0
/tlb/pinned/levels/0/page_bytes 512
/tlb/pinned/levels/0/page_bytes 1099511627776
/tlb/pinned/levels/0/page_bytes 4096.5
/tlb/pinned/levels/0/entries 0
/tlb/pinned/levels/0/entries -16
/tlb/pinned/levels/0/entries 1073741824
/tlb/pinned/levels/2/entries "many"
/tlb/pinned/levels/0/reach_bytes 12345
/tlb/pinned/levels/0/miss_penalty_cycles 0
/tlb/pinned/levels/0/miss_penalty_cycles -5.0
/tlb/pinned/levels/0/miss_penalty_cycles 1e308
/tlb/pinned/levels/0/miss_penalty_ns -1.0
/tlb/pinned/levels/0/miss_penalty_ns 1000.0
/tlb/pinned/levels/0/confidence 1.5
/tlb/pinned/levels/0/confidence -0.1
/tlb/device/levels/0/shared_by_sms 0
/tlb/device/levels/0/shared_by_sms 500
/tlb/device/swept_up_to_bytes 0
/tlb/device/swept_up_to_bytes 1024 => tlb.device.levels[0].reach_bytes
/tlb/device/base_latency_cycles 0
/tlb/device/base_latency_cycles 1e308
/tlb/device/curves/0/stride_bytes 0
/tlb/device/curves/0/points/3/cycles_per_load -1.0
/tlb/device/curves/0/points/3/footprint_bytes 1
/tlb/device/curves/0/points/5/footprint_bytes 4096
/tlb/managed/status "weird"
/random_access/device/points/0/reads_per_second 0
/random_access/device/points/0/reads_per_second -1e9
/random_access/device/points/0/reads_per_second 1e308
/random_access/device/points/0/region_bytes 0
/random_access/device/points/3/region_bytes 1
/random_access/device/knee_bytes 1
/random_access/device/knee_bytes 1152921504606846976
/random_access/device/knee_bytes -1
/random_access/device/draw_cost_relative 0
/random_access/device/draw_cost_relative -0.5
/random_access/device/draw_cost_relative 1e308
/random_access/device/atomic_points/0/reads_per_second 0
/random_access/pinned/points/0/region_bytes -65536
/caches/levels/0/line_bytes 48
/caches/levels/0/line_bytes 0
/caches/levels/0/line_bytes 1048576
/caches/levels/0/fetch_bytes 48
/caches/levels/0/fetch_bytes 64
/caches/levels/2/fetch_bytes 32
/caches/levels/0/size_bytes 0
/caches/levels/3/size_bytes 1000
/caches/levels/0/hit_latency_cycles 0
/caches/levels/0/hit_latency_cycles 500.0
/caches/dram_latency_cycles 100.0
/caches/dram_latency_cycles -1.0
/caches/shared_memory_latency_cycles 0
/caches/levels/4/ways 0
/caches/levels/4/ways 1000000
/caches/levels/0/name ""
/caches/levels/0/path "l9"
/caches/levels/2/attribute_bytes 0
/caches/curves/0/points/0/stride_bytes 0
/caches/curves/0/points/0/cycles_per_load 1e308
/caches/curves/0/points/1/footprint_bytes 1
/caches/status "measured-ish"
/shared_memory_staging/entries/0/best_staged_ms 0
/shared_memory_staging/entries/0/best_staged_ms -1.0
/shared_memory_staging/entries/0/best_plain_ms 1e308
/shared_memory_staging/entries/0/benefit 5.0
/shared_memory_staging/entries/0/repeats 0
/shared_memory_staging/entries/0/grid/0 0
/shared_memory_staging/entries/0/grid [400,400]
/shared_memory_staging/entries/0/best_plain_block [64,64,1]
/shared_memory_staging/entries/0/best_staged_block/2 0
/shared_memory_staging/entries/0/best_staged_block/2 128
/shared_memory_staging/entries/0/dtype ""
/shared_memory_staging/entries/0/dtype "f32; rm -rf"
/shared_memory_staging/entries/0/best_streaming_ms 0
/bandwidth/device_to_device 0
/bandwidth/host_to_device -1.0
/bandwidth/device_to_host 1e308
/bandwidth/zero_copy_read/grid_stride 0
/tlb/managed/status -
/tlb/device/levels/0/miss_penalty_cycles -
/shared_memory_staging/entries/0/best_streaming_ms -
"#;

type Edit = fn(&mut Value);

/// Changes a line of [`CHANGES`] cannot say.
const EDITS: [(&str, Edit); 8] = [
    ("tlb.pinned.unstable_levels[0].page_bytes", |v| {
        let mut level = v["tlb"]["pinned"]["levels"][0].clone();
        level["page_bytes"] = json!(3000);
        v["tlb"]["pinned"]["unstable_levels"] = json!([level]);
    }),
    ("tlb.pinned.unstable_levels[1].reach_bytes", |v| {
        let level = v["tlb"]["pinned"]["levels"][0].clone();
        v["tlb"]["pinned"]["unstable_levels"] = json!([level.clone(), level]);
    }),
    ("tlb.pinned.levels[1].reach_bytes", |v| {
        v["tlb"]["pinned"]["levels"]
            .as_array_mut()
            .expect("levels")
            .swap(0, 1)
    }),
    ("tlb.managed.levels[1].reach_bytes", |v| {
        v["tlb"]["managed"]["levels"][1] = v["tlb"]["managed"]["levels"][0].clone()
    }),
    ("tlb.pinned.levels", |v| {
        let level = v["tlb"]["pinned"]["levels"][0].clone();
        v["tlb"]["pinned"]["levels"] = Value::Array(vec![level; 20]);
    }),
    ("device.name", |v| {
        v["device"]["name"] = json!("x".repeat(5000))
    }),
    ("bandwidth.reason", |v| {
        v["bandwidth"] = json!({"status": "failed", "reason": "x".repeat(20_000)})
    }),
    ("bandwidth.zero_copy_read", |v| {
        v["bandwidth"]["zero_copy_read"][""] = json!(5e9)
    }),
];

/// `/tlb/pinned/levels/1/page_bytes` as the message writes it: `tlb.pinned.levels[1].page_bytes`.
fn json_path(pointer: &str) -> String {
    let mut out = String::new();
    for part in pointer.trim_start_matches('/').split('/') {
        if part.bytes().all(|b| b.is_ascii_digit()) {
            out.push_str(&format!("[{part}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(part);
        }
    }
    out
}

/// Every hostile variant, re-signed, with the JSON path its refusal must name.
fn hostile_variants() -> Vec<(String, Vec<u8>)> {
    let base = fixture();
    let mut out = Vec::new();
    for line in CHANGES.lines().filter(|l| !l.trim().is_empty()) {
        let (change, expected) = match line.split_once(" => ") {
            Some((c, e)) => (c, Some(e.to_string())),
            None => (line, None),
        };
        let (pointer, new) = change.split_once(' ').expect("pointer and value");
        let mut v = base.clone();
        if new == "-" {
            remove(&mut v, pointer);
        } else {
            let new: Value = serde_json::from_str(new).unwrap_or_else(|e| panic!("{line}: {e}"));
            set(&mut v, pointer, new);
        }
        out.push((
            expected.unwrap_or_else(|| json_path(pointer)),
            resign(&mut v),
        ));
    }
    for (expected, edit) in EDITS {
        let mut v = base.clone();
        edit(&mut v);
        out.push((expected.to_string(), resign(&mut v)));
    }
    out
}

#[test]
fn the_fixture_itself_is_valid() {
    let bytes = resign(&mut fixture());
    codec::from_slice(&bytes, Path::new("h100.json")).expect("the untouched fixture decodes");
}

#[test]
fn ninety_and_more_distinct_nonsense_profiles_are_rejected_naming_the_field() {
    let variants = hostile_variants();
    assert!(variants.len() >= 90, "only {} variants", variants.len());
    let distinct: std::collections::HashSet<&Vec<u8>> = variants.iter().map(|(_, b)| b).collect();
    assert_eq!(distinct.len(), variants.len(), "every variant differs");

    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::new(dir.path());
    let good = resign(&mut fixture());
    let (stored_path, _) = store
        .import(&good, Path::new("h100.json"))
        .expect("the good profile imports");
    let stored = std::fs::read(&stored_path).expect("stored");

    let mut failures = Vec::new();
    for (i, (field, bytes)) in variants.iter().enumerate() {
        let origin = PathBuf::from(format!("hostile-{i}.json"));
        match codec::from_slice(bytes, &origin) {
            Ok(_) => failures.push(format!("#{i} {field}: decoded")),
            Err(e) => {
                let msg = e.to_string();
                if !msg.contains(field.as_str()) {
                    failures.push(format!("#{i} {field}: message does not name it: {msg}"));
                }
                if matches!(
                    e,
                    ProfileError::DigestMismatch { .. } | ProfileError::Parse { .. }
                ) {
                    failures.push(format!("#{i} {field}: refused before validation: {msg}"));
                }
            }
        }
        match store.import(bytes, &origin) {
            Ok(_) => failures.push(format!("#{i} {field}: imported")),
            Err(e) if !e.to_string().contains(field) => failures.push(format!(
                "#{i} {field}: import message does not name it: {e}"
            )),
            Err(_) => {}
        }
        assert_eq!(
            std::fs::read(&stored_path).expect("still stored"),
            stored,
            "#{i} {field}: a refused import changed the stored profile"
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let files = std::fs::read_dir(dir.path()).expect("store").count();
    assert_eq!(files, 1, "no stray files in the store");
}

#[test]
fn a_semantic_error_names_the_path_in_the_documented_form() {
    let mut v = fixture();
    set(&mut v, "/tlb/pinned/levels/1/page_bytes", json!(3000));
    let err = codec::from_slice(&resign(&mut v), Path::new("p.json")).unwrap_err();
    assert!(matches!(err, ProfileError::Semantic { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("tlb.pinned.levels[1].page_bytes: 3000 is not a power of two"),
        "{err}"
    );
    assert_eq!(err.class(), memtune_core::ErrorClass::Invalid);
}

#[test]
fn duplicate_keys_are_rejected_even_with_a_matching_digest() {
    // The digest is taken on the parsed value, where the last duplicate wins: the file
    // still verifies, yet says two things.
    let text = fixture_text().replacen(r#""sm_count":132"#, r#""sm_count":1,"sm_count":132"#, 1);
    assert_ne!(text, fixture_text());
    let err = codec::from_slice(text.as_bytes(), Path::new("dup.json")).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("device.sm_count: duplicate key `sm_count`"),
        "{msg}"
    );
    let nested = fixture_text().replacen(r#""entries":64,"#, r#""entries":64,"entries":64,"#, 1);
    assert_ne!(nested, fixture_text());
    let err = codec::from_slice(nested.as_bytes(), Path::new("dup.json")).unwrap_err();
    assert!(
        err.to_string()
            .contains("tlb.device.levels[0].entries: duplicate key"),
        "{err}"
    );
}

#[test]
fn a_utf8_byte_order_mark_is_accepted_and_not_stored() {
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend_from_slice(fixture_text().as_bytes());
    codec::from_slice(&bytes, Path::new("bom.json")).expect("a BOM is dropped");
    let dir = tempfile::tempdir().expect("temp dir");
    let (path, _) = Store::new(dir.path())
        .import(&bytes, Path::new("bom.json"))
        .expect("imports");
    let stored = std::fs::read(path).expect("stored");
    assert!(!stored.starts_with(b"\xEF\xBB\xBF"));
    assert_eq!(stored, fixture_text().as_bytes());
}

#[test]
fn a_profile_that_fails_validation_is_never_saved() {
    let mut p =
        codec::from_slice(fixture_text().as_bytes(), Path::new("h100.json")).expect("valid");
    if let Some(t) = p.shared_memory_staging.measured().cloned() {
        let mut t = t;
        t.entries[0].best_staged_ms = 0.0;
        p.shared_memory_staging = memtune_core::Section::Measured(t);
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let err = Store::new(dir.path()).save(&mut p).unwrap_err();
    assert!(
        err.to_string()
            .contains("shared_memory_staging.entries[0].best_staged_ms"),
        "{err}"
    );
    assert!(p.validate().is_err());
    assert_eq!(
        std::fs::read_dir(dir.path())
            .map(|d| d.count())
            .unwrap_or(0),
        0
    );
}

/// Every profile committed in the repository (fixtures, embedded, examples, benchmark
/// results) passes validation: a rule that fails a real measurement is a wrong rule.
#[test]
fn every_committed_profile_is_valid() {
    let root = repo();
    let mut files = Vec::new();
    for dir in [
        "tests/fixtures",
        "runtime/tests/embedded",
        "examples",
        "benchmarks/results",
    ] {
        collect_json(&root.join(dir), &mut files);
    }
    let mut checked = 0;
    let mut failures = Vec::new();
    for path in files {
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let is_profile = serde_json::from_slice::<Value>(&bytes)
            .ok()
            .is_some_and(|v| v.get("schema") == Some(&json!("memtune-profile/1")));
        if !is_profile {
            continue;
        }
        checked += 1;
        if let Err(e) = store::load_path(&path) {
            failures.push(format!("{}: {e}", path.display()));
        }
    }
    assert!(checked >= 10, "only {checked} profiles found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    validate(&memtune_core::default::builtin()).expect("the built-in default is valid");
}

fn collect_json(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_json(&path, out);
        } else if path.extension().is_some_and(|x| x == "json") {
            out.push(path);
        }
    }
}
