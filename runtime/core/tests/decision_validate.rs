//! Decision records: every field is bounded, every time finite, the quantiles those of the
//! runs; a record that fails is neither read nor stored.

use memtune_core::plan::SamplingWorkload;
use memtune_core::tune::session::{self, Budget};
use memtune_core::tune::{candidates_digest, save_in, Decision, Tunable, TuneKey};
use memtune_core::MemoryKind;
use std::path::Path;

fn decision() -> Decision {
    let work = SamplingWorkload {
        region_bytes: 3 << 30,
        memory: MemoryKind::Pinned,
        reads_per_thread: 64,
    };
    let c = work
        .candidates(&memtune_core::default::builtin())
        .expect("candidates");
    let key = TuneKey {
        device_uuid: "GPU-00000000-0000-0000-0000-000000000001".into(),
        kernel: "gather/v1".into(),
        class: work.class(),
        profile_digest: "sha256:00".into(),
        memtune_version: "0.1.0".into(),
        candidates_digest: candidates_digest(c.iter().map(|c| c.label.as_str())),
    };
    let out = session::run(c.len(), &Budget::default(), |i| {
        Ok(if i == 1 { 1.0 } else { 2.0 })
    });
    Decision::from_outcome(key, &c, &out, 1_700_000_000)
}

type Edit = fn(&mut Decision);

/// (the field the message must name, the edit).
const BAD: [(&str, Edit); 24] = [
    ("tuning_ms", |d| d.tuning_ms = f64::NAN),
    ("tuning_ms", |d| d.tuning_ms = f64::INFINITY),
    ("tuning_ms", |d| d.tuning_ms = -1.0),
    ("tuning_ms", |d| d.tuning_ms = 1e300),
    ("cost_in_untuned", |d| d.cost_in_untuned = Some(f64::NAN)),
    ("candidates[0].stats.runs_ms[0]", |d| {
        d.candidates[0].stats.runs_ms[0] = f64::NEG_INFINITY
    }),
    ("candidates[0].stats.runs_ms", |d| {
        d.candidates[0].stats.runs_ms = vec![1.0; 5000]
    }),
    ("candidates[0].stats.warmup_ms", |d| {
        d.candidates[0].stats.warmup_ms = Some(f64::NAN)
    }),
    ("candidates[0].median_ms", |d| {
        d.candidates[0].median_ms = Some(0.001)
    }),
    ("candidates[0].p20_ms", |d| d.candidates[0].p20_ms = None),
    ("candidates[0].p80_ms", |d| {
        d.candidates[0].p80_ms = Some(f64::NAN)
    }),
    ("candidates[0].label", |d| d.candidates[0].label.clear()),
    ("candidates[0].stats.error", |d| {
        d.candidates[0].stats.error = Some("e".repeat(20_000))
    }),
    ("launches", |d| d.launches = u32::MAX),
    ("created_unix_s", |d| d.created_unix_s = u64::MAX),
    ("why", |d| d.why = "w".repeat(20_000)),
    ("key.device_uuid", |d| d.key.device_uuid = "GPU-0".into()),
    ("key.kernel", |d| d.key.kernel = String::new()),
    ("key.kernel", |d| d.key.kernel = "k\n".into()),
    ("key.profile_digest", |d| {
        d.key.profile_digest = "md5:1".into()
    }),
    ("key.class.workload", |d| {
        d.key.class.workload = "../x".into()
    }),
    ("key.class.elem_bytes", |d| d.key.class.elem_bytes = 0),
    ("key.class.size_class", |d| d.key.class.size_class = 500),
    ("chosen", |d| {
        d.all_failed = true;
        d.chosen = 1;
    }),
];

#[test]
fn a_tuned_decision_is_valid() {
    decision().validate().expect("valid");
}

#[test]
fn every_out_of_bounds_field_is_named() {
    for (i, (field, edit)) in BAD.iter().enumerate() {
        let mut d = decision();
        edit(&mut d);
        let err = d.validate().expect_err(field);
        assert!(
            err.starts_with(&format!("{field}:")),
            "#{i}: expected {field}: {err}"
        );
    }
}

#[test]
fn a_choice_past_the_candidates_is_refused() {
    let mut d = decision();
    d.chosen = 17;
    let err = d.validate().unwrap_err();
    assert!(err.starts_with("chosen 17 of 4 candidates"), "{err}");
}

#[test]
fn an_invalid_decision_is_never_stored_nor_read() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut d = decision();
    d.tuning_ms = f64::NAN;
    let err = save_in(dir.path(), &d, true).unwrap_err();
    assert!(err.to_string().contains("tuning_ms"), "{err}");
    assert_eq!(
        std::fs::read_dir(dir.path())
            .map(|r| r.count())
            .unwrap_or(0),
        0
    );

    let mut d = decision();
    d.created_unix_s = u64::MAX;
    let bytes = serde_json::to_vec(&d).expect("serialises");
    let err = Decision::from_slice(&bytes, Path::new("d.json")).unwrap_err();
    assert!(err.to_string().contains("created_unix_s"), "{err}");
}

#[test]
fn a_byte_order_mark_is_accepted() {
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend(serde_json::to_vec(&decision()).expect("serialises"));
    Decision::from_slice(&bytes, Path::new("d.json")).expect("read");
}
