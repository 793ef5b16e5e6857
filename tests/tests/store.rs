//! The profile store and the lookup chain, on real files.

use memtune_core::lookup::{resolve, LookupConfig, Source, Wanted};
use memtune_core::profile::{Profile, SCHEMA};
use memtune_core::{codec, store, ProfileError, Store};
use memtune_tests::{json, profile, profile_of_model, reseal, uuid};
use serde_json::Value;
use std::fs;
use std::path::Path;
use tempfile::TempDir;

fn value_of(p: &Profile) -> Value {
    serde_json::from_str(&json(p)).unwrap()
}

#[test]
fn save_then_load_round_trips() {
    let dir = TempDir::new().unwrap();
    let store = Store::new(dir.path().join("profiles"));
    let mut p = profile(&uuid(1));
    let path = store.save(&mut p).unwrap();
    assert_eq!(
        path,
        dir.path()
            .join("profiles")
            .join(format!("{}.json", uuid(1)))
    );
    let back = store.load(&uuid(1)).unwrap().expect("stored");
    assert_eq!(back, p);
    assert!(back.digest.starts_with("sha256:"));
    assert_eq!(store.load(&uuid(2)).unwrap(), None);
}

#[test]
fn any_edit_is_detected_but_reformatting_is_not_an_edit() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("p.json");
    let mut v = value_of(&profile(&uuid(1)));

    // Same content, other layout: still valid.
    fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
    store::load_path(&path).unwrap();

    v["device"]["sm_count"] = Value::from(133);
    fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
    let err = store::load_path(&path).unwrap_err();
    assert!(matches!(err, ProfileError::DigestMismatch { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("p.json") && msg.contains("cargo tune"),
        "{msg}"
    );

    v.as_object_mut().unwrap().remove("digest");
    fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
    let err = store::load_path(&path).unwrap_err();
    assert!(err.to_string().contains("no `digest` field"), "{err}");
}

#[test]
fn truncated_json_is_a_parse_error_naming_the_file() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("cut.json");
    let text = json(&profile(&uuid(1)));
    fs::write(&path, &text[..text.len() / 2]).unwrap();
    let err = store::load_path(&path).unwrap_err();
    assert!(matches!(err, ProfileError::Parse { .. }), "{err}");
    assert!(err.to_string().contains("cut.json"));
}

#[test]
fn other_schemas_are_refused_and_newer_majors_say_upgrade() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("x.json");
    let mut v = value_of(&profile(&uuid(1)));

    v["schema"] = Value::from("memtune-sim/1");
    fs::write(&path, reseal(v.clone())).unwrap();
    let err = store::load_path(&path).unwrap_err();
    assert!(matches!(err, ProfileError::WrongSchema { .. }), "{err}");
    assert!(err.to_string().contains(SCHEMA));

    fs::write(&path, r#"{"name": "package.json, not a profile"}"#).unwrap();
    let err = store::load_path(&path).unwrap_err();
    assert!(matches!(err, ProfileError::WrongSchema { .. }), "{err}");

    v["schema"] = Value::from("memtune-profile/2");
    fs::write(&path, reseal(v)).unwrap();
    let err = store::load_path(&path).unwrap_err();
    assert!(matches!(err, ProfileError::NewerMajor { .. }), "{err}");
    assert!(err.to_string().contains("upgrade memtune"), "{err}");
}

#[test]
fn newer_minor_fields_are_accepted_covered_by_the_digest_and_kept_by_import() {
    let dir = TempDir::new().unwrap();
    let mut v = value_of(&profile(&uuid(1)));
    v["schema_minor"] = Value::from(7);
    v["future_section"] = serde_json::json!({"status": "measured", "x": [1, 2, 3]});
    v["device"]["future_field"] = Value::from("kept");
    let text = reseal(v.clone());
    let src = dir.path().join("newer.json");
    fs::write(&src, &text).unwrap();

    let p = store::load_path(&src).expect("a newer minor reads");
    assert_eq!(p.schema_minor, 7);

    let store = Store::new(dir.path().join("cache"));
    let (dest, _) = store.import(text.as_bytes(), &src).unwrap();
    assert_eq!(
        fs::read_to_string(dest).unwrap(),
        text,
        "import keeps the bytes"
    );

    // The unknown fields are covered by the digest.
    v["future_section"]["x"] = serde_json::json!([1, 2, 4]);
    let mut tampered = reseal(v.clone());
    let stored_digest = serde_json::from_str::<Value>(&text).unwrap()["digest"].clone();
    let mut tv: Value = serde_json::from_str(&tampered).unwrap();
    tv["digest"] = stored_digest;
    tampered = serde_json::to_string(&tv).unwrap();
    fs::write(&src, tampered).unwrap();
    assert!(matches!(
        store::load_path(&src),
        Err(ProfileError::DigestMismatch { .. })
    ));
}

#[test]
fn a_profile_under_another_uuid_s_name_is_refused() {
    let dir = TempDir::new().unwrap();
    let store = Store::new(dir.path());
    memtune_tests::write(dir.path(), &format!("{}.json", uuid(2)), &profile(&uuid(1)));
    let err = store.load(&uuid(2)).unwrap_err();
    assert!(matches!(err, ProfileError::UuidMismatch { .. }), "{err}");
    assert!(
        err.to_string().contains(&format!("{}.json", uuid(1))),
        "{err}"
    );
}

#[test]
fn a_bad_import_changes_nothing() {
    let dir = TempDir::new().unwrap();
    let store = Store::new(dir.path().join("cache"));
    let good = store.save(&mut profile(&uuid(1))).unwrap();
    let before = fs::read(&good).unwrap();

    let mut v = value_of(&profile(&uuid(1)));
    v["device"]["name"] = Value::from("tampered");
    let bad = serde_json::to_vec(&v).unwrap();
    let err = store.import(&bad, Path::new("bad.json")).unwrap_err();
    assert!(matches!(err, ProfileError::DigestMismatch { .. }), "{err}");
    assert_eq!(fs::read(&good).unwrap(), before);
    assert_eq!(
        fs::read_dir(dir.path().join("cache")).unwrap().count(),
        1,
        "no stray files"
    );
}

#[test]
fn simulated_profiles_are_never_stored_as_devices() {
    let dir = TempDir::new().unwrap();
    let store = Store::new(dir.path());
    let mut p = profile(&uuid(1));
    p.provenance.simulator = Some("p100".to_string());
    let err = store.save(&mut p).unwrap_err();
    assert!(err.to_string().contains("simulated"), "{err}");
    let text = json(&p);
    assert!(store
        .import(text.as_bytes(), Path::new("sim.json"))
        .is_err());
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_cache_path_that_is_not_a_directory_is_an_io_error() {
    let dir = TempDir::new().unwrap();
    let file = dir.path().join("not-a-dir");
    fs::write(&file, "x").unwrap();
    let store = Store::new(&file);
    let err = store.list().unwrap_err();
    assert_eq!(err.class(), memtune_core::ErrorClass::Io, "{err}");
    assert!(err.to_string().contains("not-a-dir"));
    let err = store.save(&mut profile(&uuid(1))).unwrap_err();
    assert_eq!(err.class(), memtune_core::ErrorClass::Io, "{err}");
    assert_eq!(fs::read_to_string(&file).unwrap(), "x");
}

#[test]
fn concurrent_writers_leave_one_complete_profile_and_readers_never_see_a_torn_file() {
    let dir = TempDir::new().unwrap();
    let store = Store::new(dir.path());
    let id = uuid(9);
    store.save(&mut profile(&id)).unwrap();
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let store = store.clone();
            let id = id.clone();
            std::thread::spawn(move || {
                for i in 0..40 {
                    let mut p = profile(&id);
                    // Different content (and size) per write.
                    p.device.name = format!("writer {w} write {i} {}", "x".repeat(i * 50));
                    store.save(&mut p).unwrap();
                }
            })
        })
        .collect();
    let reader = {
        let store = store.clone();
        let id = id.clone();
        std::thread::spawn(move || {
            for _ in 0..400 {
                store
                    .load(&id)
                    .unwrap()
                    .expect("always there, always valid");
            }
        })
    };
    for w in writers {
        w.join().unwrap();
    }
    reader.join().unwrap();
    let last = store.load(&id).unwrap().unwrap();
    assert!(last.device.name.starts_with("writer "));
    let names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, vec![format!("{id}.json")], "no temporary files left");
}

/// Sets up every source of the lookup chain, each holding a profile it can be told apart by.
struct Chain {
    _dir: TempDir,
    config: LookupConfig,
    env_file: std::path::PathBuf,
}

fn chain() -> Chain {
    let dir = TempDir::new().unwrap();
    let project = dir.path().join("project/.memtune");
    let cache = dir.path().join("cache");
    let mut env_p = profile(&uuid(100));
    env_p.device.name = "from env".into();
    let env_file = memtune_tests::write(dir.path(), "env.json", &env_p);
    memtune_tests::store(&project, &profile(&uuid(1)));
    memtune_tests::store(&cache, &profile(&uuid(1)));
    memtune_tests::store(&cache, &profile(&uuid(2)));
    memtune_tests::store(&cache, &profile_of_model(&uuid(3), "NVIDIA H200", 132));
    Chain {
        config: LookupConfig {
            profile_path: None,
            project_dir: Some(project),
            offline: false,
            cache_dir: Some(cache),
        },
        env_file,
        _dir: dir,
    }
}

fn wanted(n: u32, name: &str) -> Wanted {
    let p = profile_of_model(&uuid(n), name, 132);
    Wanted {
        uuid: Some(p.device.uuid.clone()),
        model: Some(p.device.model()),
    }
}

#[test]
fn lookup_chain_precedence_with_every_source() {
    let mut c = chain();
    let h100 = "NVIDIA H100 80GB HBM3";

    // Project before cache (uuid 1 is in both).
    let r = resolve(&c.config, &wanted(1, h100)).unwrap();
    assert!(matches!(r.source, Source::Project(_)), "{:?}", r.source);
    // Cache when the project has nothing for it.
    let r = resolve(&c.config, &wanted(2, h100)).unwrap();
    assert!(matches!(r.source, Source::Cache(_)), "{:?}", r.source);
    assert_eq!(r.profile.device.uuid, uuid(2));
    // Same model when no profile of this UUID exists: an H200 finds uuid 3.
    let r = resolve(&c.config, &wanted(50, "NVIDIA H200")).unwrap();
    assert!(matches!(r.source, Source::SameModel(_)), "{:?}", r.source);
    assert_eq!(r.profile.device.uuid, uuid(3));
    // Nothing of this model: the default, with a warning naming `cargo tune`.
    let r = resolve(&c.config, &wanted(51, "NVIDIA A100")).unwrap();
    assert_eq!(r.source, Source::BuiltinDefault);
    assert!(r.warnings.iter().any(|w| w.contains("cargo tune")));
    assert!(
        r.profile.tlb.device.measured().is_none(),
        "the default claims nothing"
    );
    // MEMTUNE_PROFILE before everything.
    c.config.profile_path = Some(c.env_file.clone());
    let r = resolve(&c.config, &wanted(1, h100)).unwrap();
    assert!(matches!(r.source, Source::EnvPath(_)));
    assert_eq!(r.profile.device.name, "from env");
}

#[test]
fn offline_uses_the_project_directory_alone() {
    let mut c = chain();
    c.config.offline = true;
    let r = resolve(&c.config, &wanted(1, "NVIDIA H100 80GB HBM3")).unwrap();
    assert!(matches!(r.source, Source::Project(_)));
    let err = resolve(&c.config, &wanted(2, "NVIDIA H100 80GB HBM3")).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("MEMTUNE_OFFLINE") && msg.contains("cargo tune --project"),
        "{msg}"
    );
}

#[test]
fn memtune_profile_pointing_nowhere_is_an_error_not_a_fallback() {
    let mut c = chain();
    c.config.profile_path = Some("/nonexistent/profile.json".into());
    let err = resolve(&c.config, &wanted(1, "NVIDIA H100 80GB HBM3")).unwrap_err();
    assert_eq!(err.class(), memtune_core::ErrorClass::NotFound);
    let msg = err.to_string();
    assert!(
        msg.contains("MEMTUNE_PROFILE=/nonexistent/profile.json"),
        "{msg}"
    );
}

#[test]
fn an_invalid_profile_for_the_wanted_uuid_is_reported_not_skipped() {
    let c = chain();
    let path = c
        .config
        .cache_dir
        .as_ref()
        .unwrap()
        .join(format!("{}.json", uuid(2)));
    let text = fs::read_to_string(&path).unwrap().replace("132", "131");
    fs::write(&path, text).unwrap();
    let err = resolve(&c.config, &wanted(2, "NVIDIA H100 80GB HBM3")).unwrap_err();
    assert!(matches!(err, ProfileError::DigestMismatch { .. }), "{err}");
}

#[test]
fn without_a_uuid_the_only_stored_profile_answers() {
    let dir = TempDir::new().unwrap();
    let cache = dir.path().join("cache");
    memtune_tests::store(&cache, &profile(&uuid(5)));
    let config = LookupConfig {
        cache_dir: Some(cache.clone()),
        ..Default::default()
    };
    let r = resolve(&config, &Wanted::default()).unwrap();
    assert_eq!(r.profile.device.uuid, uuid(5));
    memtune_tests::store(&cache, &profile(&uuid(6)));
    let r = resolve(&config, &Wanted::default()).unwrap();
    assert_eq!(r.source, Source::BuiltinDefault, "two candidates: no guess");
}

#[test]
fn sealing_is_stable() {
    let mut p = profile(&uuid(1));
    let a = codec::to_json(&mut p);
    let b = codec::to_json(&mut p);
    assert_eq!(a, b);
}

#[test]
fn measured_floats_survive_the_round_trip_exactly() {
    use memtune_core::profile::{RandomAccessCurve, RandomAccessPoint, Section};
    // Values whose shortest decimal form needs exact parsing (serde_json's float_roundtrip):
    // without it, a reloaded profile hashed differently from the one written.
    let awkward = [
        0.1 + 0.2,
        1e-300,
        5e-324,
        2.225_073_858_507_201e-308,
        123_456.789_012_345_68,
        1.0 / 3.0,
    ];
    let mut p = profile(&uuid(1));
    p.random_access.device = Section::Measured(RandomAccessCurve {
        points: awkward
            .iter()
            .enumerate()
            .map(|(i, &v)| RandomAccessPoint {
                region_bytes: 1 << (20 + i),
                reads_per_second: v * 7.77e9,
            })
            .collect(),
        knee_bytes: None,
        draw_cost_relative: None,
        atomic_points: vec![],
    });
    let dir = TempDir::new().unwrap();
    let store = Store::new(dir.path());
    store.save(&mut p).unwrap();
    assert_eq!(store.load(&uuid(1)).unwrap().unwrap(), p);
}
