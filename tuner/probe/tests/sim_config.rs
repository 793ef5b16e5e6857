//! `memtune-sim/1` input: bad files are refused with errors that name the file, the key and
//! the fix; good ones (built-ins included) load.

use memtune_core::profile::MemoryKind;
use memtune_probe::sim::{SimConfig, SimConfigError, BUILTIN_NAMES, SCHEMA};

const GOOD: &str = r#"{
  "schema": "memtune-sim/1",
  "name": "test-gpu",
  "sm_count": 8,
  "clock_mhz": 1000,
  "l2_hit_cycles": 300,
  "memory_kinds": {
    "device": {
      "size_bytes": 1073741824,
      "extra_cycles": 0,
      "tlb": [
        { "entries": 16, "page_bytes": 2097152, "miss_cycles": 10 },
        { "entries": 64, "page_bytes": 2097152, "miss_cycles": 100, "ways": 8, "shared_by_sms": 4 }
      ]
    }
  },
  "noise": { "jitter": 0.01, "outlier_rate": 0.001, "seed": 3 }
}"#;

/// `GOOD` with one text replaced (which must occur).
fn with(from: &str, to: &str) -> String {
    assert!(GOOD.contains(from), "test bug: {from}");
    GOOD.replacen(from, to, 1)
}

fn error_of(text: &str) -> String {
    match SimConfig::from_json_str(text, "gpus/test.json") {
        Ok(_) => panic!("accepted: {text}"),
        Err(e) => e.to_string(),
    }
}

fn assert_mentions(message: &str, parts: &[&str]) {
    for part in parts {
        assert!(message.contains(part), "`{part}` missing from: {message}");
    }
}

/// For each `(from, to, parts)`: `GOOD` with `from` replaced by `to` is refused with an
/// error that mentions every one of `parts`.
fn assert_edits_refused(cases: &[(&str, &str, &[&str])]) {
    for (from, to, parts) in cases {
        assert_mentions(&error_of(&with(from, to)), parts);
    }
}

#[test]
fn good_file_loads_with_defaults() {
    let config = SimConfig::from_json_str(GOOD, "gpus/test.json").unwrap();
    assert_eq!(config.name, "test-gpu");
    assert_eq!(config.sm_count, 8);
    let device = &config.memory_kinds[&MemoryKind::Device];
    assert_eq!(device.tlb.len(), 2);
    assert_eq!(device.tlb[0].ways, None);
    assert_eq!(device.tlb[0].shared_by_sms, 1);
    assert_eq!(device.tlb[1].ways, Some(8));
    assert_eq!(device.tlb[1].shared_by_sms, 4);
    assert_eq!(config.noise.seed, 3);
}

#[test]
fn extra_keys_and_optional_keys() {
    let text = with(
        r#""name": "test-gpu","#,
        r#""name": "test-gpu", "comment": "anything", "vendor": {"x": 1},"#,
    );
    assert!(SimConfig::from_json_str(&text, "x").is_ok());
    let text = with(r#""extra_cycles": 0,"#, "");
    assert_eq!(
        SimConfig::from_json_str(&text, "x").unwrap().memory_kinds[&MemoryKind::Device]
            .extra_cycles,
        0.0
    );
    let text = with(
        r#",
  "noise": { "jitter": 0.01, "outlier_rate": 0.001, "seed": 3 }"#,
        "",
    );
    assert_eq!(
        SimConfig::from_json_str(&text, "x").unwrap().noise.jitter,
        0.0
    );
}

#[test]
fn wrong_or_missing_schema() {
    let e = error_of(&with("memtune-sim/1", "memtune-sim/2"));
    assert_mentions(&e, &["gpus/test.json", "schema", "memtune-sim/2", SCHEMA]);
    let e = error_of(&with(r#""schema": "memtune-sim/1","#, ""));
    assert_mentions(&e, &["gpus/test.json", "schema", "missing", SCHEMA]);
    let e = error_of(&with(r#""memtune-sim/1""#, "1"));
    assert_mentions(&e, &["schema", SCHEMA]);
}

#[test]
fn not_json() {
    let e = error_of("{ \"schema\": ");
    assert_mentions(&e, &["gpus/test.json", "not valid JSON"]);
    let e = error_of("[1, 2]");
    assert_mentions(&e, &["gpus/test.json", "not an object"]);
}

#[test]
fn missing_keys_name_their_path() {
    let e = error_of(&with(r#""l2_hit_cycles": 300,"#, ""));
    assert_mentions(
        &e,
        &[
            "gpus/test.json",
            "missing key `l2_hit_cycles`",
            "docs/simulator.md",
        ],
    );
    let e = error_of(&with(
        r#""page_bytes": 2097152, "miss_cycles": 10"#,
        r#""miss_cycles": 10"#,
    ));
    assert_mentions(&e, &["missing key `memory_kinds.device.tlb[0].page_bytes`"]);
    let e = error_of(&with(r#""size_bytes": 1073741824,"#, ""));
    assert_mentions(&e, &["memory_kinds.device.size_bytes"]);
}

#[test]
fn zero_and_negative_values() {
    assert_edits_refused(&[
        (
            r#""size_bytes": 1073741824"#,
            r#""size_bytes": 0"#,
            &[
                "gpus/test.json",
                "`memory_kinds.device.size_bytes`",
                "must be positive",
            ],
        ),
        (
            r#""entries": 16"#,
            r#""entries": -16"#,
            &[
                "`memory_kinds.device.tlb[0].entries`",
                "-16",
                "must be positive",
            ],
        ),
        (
            r#""clock_mhz": 1000"#,
            r#""clock_mhz": 0"#,
            &["`clock_mhz`", "must be positive", "MHz"],
        ),
        (
            r#""sm_count": 8"#,
            r#""sm_count": -2"#,
            &["`sm_count`", "must be positive"],
        ),
        (
            r#""miss_cycles": 10"#,
            r#""miss_cycles": -1"#,
            &[
                "`memory_kinds.device.tlb[0].miss_cycles`",
                "must be positive",
            ],
        ),
        (
            r#""extra_cycles": 0"#,
            r#""extra_cycles": -5"#,
            &["`memory_kinds.device.extra_cycles`", "must not be negative"],
        ),
        (
            r#""entries": 16"#,
            r#""entries": 1.5"#,
            &["`memory_kinds.device.tlb[0].entries`", "not a whole number"],
        ),
        (
            r#""entries": 16"#,
            r#""entries": "16""#,
            &["`memory_kinds.device.tlb[0].entries`", "not a number"],
        ),
    ]);
}

#[test]
fn pages_larger_than_memory_or_not_powers_of_two() {
    assert_edits_refused(&[
        (
            r#""size_bytes": 1073741824"#,
            r#""size_bytes": 1048576"#,
            &[
                "`memory_kinds.device.tlb[0].page_bytes`",
                "larger than the memory",
                "1048576",
            ],
        ),
        (
            r#""page_bytes": 2097152, "miss_cycles": 10"#,
            r#""page_bytes": 3000000, "miss_cycles": 10"#,
            &[
                "`memory_kinds.device.tlb[0].page_bytes`",
                "not a power of two",
            ],
        ),
    ]);
}

#[test]
fn ways_and_sharing_must_make_sense() {
    assert_edits_refused(&[
        (
            r#""ways": 8"#,
            r#""ways": 65"#,
            &[
                "`memory_kinds.device.tlb[1].ways`",
                "more than the level's 64 entries",
            ],
        ),
        (
            r#""ways": 8"#,
            r#""ways": 0"#,
            &["`memory_kinds.device.tlb[1].ways`", "must be positive"],
        ),
        (
            r#""shared_by_sms": 4"#,
            r#""shared_by_sms": 9"#,
            &[
                "`memory_kinds.device.tlb[1].shared_by_sms`",
                "more than sm_count (8)",
            ],
        ),
    ]);
    // Ways that do not divide the entries are fine: the remainder spreads over the sets.
    assert!(SimConfig::from_json_str(&with(r#""ways": 8"#, r#""ways": 7"#), "x").is_ok());
}

#[test]
fn unknown_memory_kind_and_empty_kinds() {
    let e = error_of(&with(r#""device": {"#, r#""texture": {"#));
    assert_mentions(
        &e,
        &[
            "gpus/test.json",
            "`memory_kinds.texture`",
            "device, pinned or managed",
        ],
    );
    let text = r#"{"schema": "memtune-sim/1", "name": "x", "sm_count": 1, "clock_mhz": 1,
        "l2_hit_cycles": 1, "memory_kinds": {}}"#;
    assert_mentions(&error_of(text), &["`memory_kinds`", "is empty"]);
}

#[test]
fn noise_bounds() {
    let e = error_of(&with(r#""jitter": 0.01"#, r#""jitter": 0.7"#));
    assert_mentions(&e, &["`noise.jitter`", "above 0.5"]);
    let e = error_of(&with(r#""outlier_rate": 0.001"#, r#""outlier_rate": 2"#));
    assert_mentions(&e, &["`noise.outlier_rate`", "probability"]);
    let e = error_of(&with(r#""seed": 3"#, r#""seed": -3"#));
    assert_mentions(&e, &["`noise.seed`", "non-negative integer"]);
}

#[test]
fn builtins_and_specs() {
    for name in BUILTIN_NAMES {
        let config = SimConfig::from_spec(name).unwrap();
        let text = SimConfig::builtin_json(name).unwrap();
        assert_eq!(
            SimConfig::from_json_str(text, name).unwrap(),
            config,
            "{name}"
        );
    }
    let e = SimConfig::builtin("v100").unwrap_err();
    assert!(matches!(e, SimConfigError::UnknownBuiltin { .. }));
    assert_mentions(&e.to_string(), &["v100", "k80, p100, gt200"]);
    assert_mentions(
        &SimConfig::from_spec("v100").unwrap_err().to_string(),
        &["unknown built-in"],
    );

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("my-gpu.json");
    std::fs::write(&path, GOOD).unwrap();
    let spec = path.to_str().unwrap();
    assert_eq!(SimConfig::from_spec(spec).unwrap().name, "test-gpu");
    std::fs::write(&path, with("memtune-sim/1", "memtune-sim/0")).unwrap();
    assert_mentions(
        &SimConfig::from_spec(spec).unwrap_err().to_string(),
        &[spec, "schema"],
    );
    let missing = dir.path().join("none.json");
    let e = SimConfig::from_spec(missing.to_str().unwrap()).unwrap_err();
    assert_mentions(&e.to_string(), &["none.json", "cannot read"]);
}
