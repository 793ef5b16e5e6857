//! `cargo-tune` through the built binary: every verb, every bad input, the exit codes.

use memtune_tests::{json, profile, reseal, uuid};
mod common;

use common::{Env, Run, GROUPING_8GIB};
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};

fn value(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

fn good(env: &Env, n: u32) -> PathBuf {
    env.file(&format!("good{n}.json"), &json(&profile(&uuid(n))))
}

fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<_> = fs::read_dir(dir)
        .map(|rd| {
            rd.map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().into_string().unwrap(),
                    fs::read(e.path()).unwrap(),
                )
            })
            .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn cargo_passes_tune_as_first_argument_and_both_forms_work() {
    let env = Env::new();
    let a = env.run(&["tune", "path", "--json"]);
    let b = env.run(&["path", "--json"]);
    a.expect(0);
    b.expect(0);
    assert_eq!(a.json(), b.json());
    assert_eq!(a.json()["cache_dir"], env.cache().to_str().unwrap());
}

#[test]
fn usage_errors_exit_2() {
    let env = Env::new();
    env.run(&["frobnicate"])
        .expect(2)
        .says("unrecognized subcommand");
    env.run(&["verify"]).expect(2);
    env.run(&["show", "not-a-uuid"])
        .expect(2)
        .says("is not a GPU UUID");
    env.run(&["export", "../../etc/passwd", "-o", "x"])
        .expect(2);
    env.run(&["--help"]).expect(0).says("Exit codes");
    // Refused before any GPU is opened.
    env.run(&["sample", "--atomic", "--kind", "managed"])
        .expect(2)
        .says("--atomic measures device or pinned memory");
}

#[test]
fn without_a_gpu_tune_and_devices_exit_3_and_write_nothing() {
    let env = Env::new();
    // No driver here, or (on a GPU machine) no visible GPU: both are exit 3.
    let r = env.run(&["devices", "--json"]);
    r.expect(3).says("no CUDA");
    assert_eq!(r.json()["error"]["kind"], "no_gpu");
    let r = env.run(&["devices"]);
    r.expect(3).says("no GPUs: no CUDA");
    assert_eq!(
        r.stderr().trim().lines().count(),
        1,
        "one line: {}",
        r.stderr()
    );
    // Every GPU verb names the way on without a GPU: simulate, import, the exit codes.
    for verb in [
        &[][..],
        &["--one-at-a-time"],
        &["probe", "-o", "p.json"],
        &["bench", "all"],
        &["chase"],
    ] {
        env.run(verb)
            .expect(3)
            .says("no CUDA")
            .says("cargo tune probe --simulate p100")
            .says("cargo tune import")
            .says("exit code 3");
    }
    assert!(!env.cache().exists(), "nothing written");
}

#[test]
fn import_list_show_export_round_trip() {
    let env = Env::new();
    env.run(&["list"]).expect(0).says("no stored profiles");
    let src = good(&env, 1);
    env.run(&["import", src.to_str().unwrap()])
        .expect(0)
        .says(&uuid(1));
    let stored = env.cache().join(format!("{}.json", uuid(1)));
    assert_eq!(fs::read(&stored).unwrap(), fs::read(&src).unwrap());

    let list = env.run(&["list", "--json"]);
    list.expect(0);
    let rows = list.json()["profiles"].as_array().unwrap().clone();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["uuid"], uuid(1));
    assert_eq!(rows[0]["store"], "cache");

    env.run(&["show", &uuid(1)])
        .expect(0)
        .says("NVIDIA H100 80GB HBM3")
        .says("TLB, device memory: not measured");
    let shown = env.run(&["show", &uuid(1), "--json"]);
    assert_eq!(shown.json()["profile"]["device"]["sm_count"], 132);
    env.run(&["show", "--path", src.to_str().unwrap()])
        .expect(0)
        .says(&uuid(1));

    let out = env.dir.path().join("exported.json");
    env.run(&["export", &uuid(1), "-o", out.to_str().unwrap()])
        .expect(0);
    assert_eq!(fs::read(&out).unwrap(), fs::read(&src).unwrap());

    env.run(&["import", "--project", src.to_str().unwrap()])
        .expect(0);
    assert!(env.project().join(format!("{}.json", uuid(1))).exists());
    let list = env.run(&["list", "--json"]).json();
    assert_eq!(list["profiles"].as_array().unwrap().len(), 2);
}

#[test]
fn show_without_arguments_uses_the_lookup_chain_and_reports_its_source() {
    let env = Env::new();
    let r = env.run(&["show"]);
    r.expect(0)
        .says("source: built-in conservative default")
        .says("cargo tune");
    let src = good(&env, 4);
    env.run(&["import", src.to_str().unwrap()]).expect(0);
    env.run(&["show"]).expect(0).says("source: user cache");
    let r = Run(env
        .cmd(&["show"])
        .env("MEMTUNE_PROFILE", &src)
        .output()
        .unwrap());
    r.expect(0).says("source: MEMTUNE_PROFILE=");
}

#[test]
fn unknown_profiles_exit_6() {
    let env = Env::new();
    env.run(&["show", &uuid(7)])
        .expect(6)
        .says("cargo tune import");
    env.run(&["export", &uuid(7), "-o", "x.json"]).expect(6);
    env.run(&["verify", "/nonexistent.json"])
        .expect(6)
        .says("/nonexistent.json");
    env.run(&["import", "/nonexistent.json"]).expect(6);
    let r = Run(env
        .cmd(&["show"])
        .env("MEMTUNE_PROFILE", "/nowhere/p.json")
        .output()
        .unwrap());
    r.expect(6)
        .says("MEMTUNE_PROFILE=/nowhere/p.json")
        .says("unset MEMTUNE_PROFILE");
}

/// Every bad file: exit 4 from verify and import, a message naming the file and a fix,
/// and the profile already stored left exactly as it was.
#[test]
fn every_bad_input_is_refused_clearly_and_changes_nothing() {
    let env = Env::new();
    let src = good(&env, 1);
    env.run(&["import", src.to_str().unwrap()]).expect(0);
    let before = snapshot(&env.cache());

    let text = json(&profile(&uuid(1)));
    let mut other_schema = value(&text);
    other_schema["schema"] = Value::from("memtune-sim/1");
    let mut newer = value(&text);
    newer["schema"] = Value::from("memtune-profile/2");
    let mut tampered = value(&text);
    tampered["device"]["l2_bytes"] = Value::from(1);

    let cases: Vec<(&str, String, &str)> = vec![
        (
            "truncated.json",
            text[..text.len() - 40].to_string(),
            "not valid JSON",
        ),
        (
            "other-schema.json",
            reseal(other_schema),
            "not a memtune profile",
        ),
        ("newer-major.json", reseal(newer), "upgrade memtune"),
        (
            "tampered.json",
            serde_json::to_string(&tampered).unwrap(),
            "digest mismatch",
        ),
        (
            &*Box::leak(format!("{}.json", uuid(2)).into_boxed_str()),
            text.clone(),
            "rename it",
        ),
    ];
    for (name, body, message) in &cases {
        let path = env.file(name, body);
        let p = path.to_str().unwrap();
        env.run(&["verify", p]).expect(4).says(name).says(message);
        env.run(&["import", p]).expect(4).says(name).says(message);
        env.run(&["show", "--path", p]).expect(4).says(message);
        let r = env.run(&["verify", "--json", p]);
        r.expect(4);
        assert_eq!(r.json()["files"][0]["valid"], false);
        assert_eq!(snapshot(&env.cache()), before, "{name} changed the store");
    }
    // One bad among good ones still fails the whole verify, and says which.
    let bad = env.dir.path().join("tampered.json");
    env.run(&["verify", src.to_str().unwrap(), bad.to_str().unwrap()])
        .expect(4)
        .says("ok ")
        .says("INVALID")
        .says("1 of 2 profiles invalid");
}

#[test]
fn a_stored_file_under_the_wrong_name_is_reported_by_list_and_show() {
    let env = Env::new();
    memtune_tests::write(
        &env.cache(),
        &format!("{}.json", uuid(2)),
        &profile(&uuid(1)),
    );
    env.run(&["list"])
        .expect(0)
        .says("INVALID")
        .says("rename it");
    env.run(&["show", &uuid(2)]).expect(4).says("rename it");
}

#[test]
fn an_unusable_cache_directory_is_an_io_error_exit_5() {
    let env = Env::new();
    let not_dir = env.file("cache-is-a-file", "x");
    let src = good(&env, 1);
    let r = Run(env
        .cmd(&["import", src.to_str().unwrap()])
        .env("MEMTUNE_CACHE_DIR", &not_dir)
        .output()
        .unwrap());
    r.expect(5)
        .says("cache-is-a-file")
        .says("MEMTUNE_CACHE_DIR");
    let r = Run(env
        .cmd(&["list"])
        .env("MEMTUNE_CACHE_DIR", &not_dir)
        .output()
        .unwrap());
    r.expect(5).says("cache-is-a-file");
    assert_eq!(fs::read_to_string(&not_dir).unwrap(), "x");
}

#[test]
fn json_errors_are_machine_readable() {
    let env = Env::new();
    let r = env.run(&["show", &uuid(7), "--json"]);
    r.expect(6);
    let doc = r.json();
    assert_eq!(doc["error"]["exit_code"], 6);
    assert_eq!(doc["error"]["kind"], "not_found");
}

#[test]
fn probe_simulate_writes_a_verifiable_simulated_profile_that_is_never_stored() {
    let env = Env::new();
    let out = env.dir.path().join("p100.json");
    let plots = env.dir.path().join("plots");
    let r = env.run(&[
        "probe",
        "--simulate",
        "p100",
        "-o",
        out.to_str().unwrap(),
        "--plot",
        plots.to_str().unwrap(),
        "--json",
    ]);
    r.expect(0);
    let doc = r.json();
    assert_eq!(doc["simulated"], true);
    let levels = &doc["profile"]["tlb"]["device"]["levels"];
    assert_eq!(levels.as_array().unwrap().len(), 2, "{levels}");
    assert_eq!(doc["profile"]["tlb"]["pinned"]["status"], "not_measured");
    env.run(&["verify", out.to_str().unwrap()]).expect(0);
    assert!(plots.join("tlb-device.svg").exists());
    assert!(plots.join("random-access-device.svg").exists());
    env.run(&["show", "--path", out.to_str().unwrap()])
        .expect(0)
        .says("SIMULATED")
        .says("entries");
    env.run(&["import", out.to_str().unwrap()])
        .expect(4)
        .says("simulated");
    assert!(!env.cache().exists());
}

#[test]
fn probe_no_tlb_confirm_is_recorded_and_keeps_steady_levels_alike() {
    let env = Env::new();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "probe",
            "--simulate",
            "p100",
            "--no-random-access",
            "-o",
            "-",
        ];
        args.extend_from_slice(extra);
        let r = env.run(&args);
        r.expect(0);
        r.json()
    };
    let confirmed = run(&[]);
    let skipped = run(&["--no-tlb-confirm"]);
    let option = |doc: &serde_json::Value| doc["provenance"]["options"]["tlb_confirm"].clone();
    assert_eq!(option(&confirmed), true);
    assert_eq!(option(&skipped), false);
    // The simulated P100's levels hold still from one allocation to the next: confirmed,
    // every one stays.
    let levels = |doc: &serde_json::Value| doc["tlb"]["device"]["levels"].clone();
    assert_eq!(levels(&confirmed).as_array().map(Vec::len), Some(2));
    assert_eq!(levels(&confirmed), levels(&skipped));
    assert!(confirmed["tlb"]["device"]["unstable_levels"].is_null());
}

#[test]
fn probe_simulate_rejects_bad_simulator_files_clearly() {
    let env = Env::new();
    let out = env.dir.path().join("x.json");
    let o = out.to_str().unwrap();
    let wrong = env.file("wrong.json", r#"{"schema": "memtune-profile/1"}"#);
    env.run(&["probe", "--simulate", wrong.to_str().unwrap(), "-o", o])
        .expect(4)
        .says("wrong.json")
        .says("memtune-sim/1");
    env.run(&["probe", "--simulate", "k90", "-o", o])
        .expect(4)
        .says("k80, p100, gt200");
    env.run(&["probe", "--simulate", "/nonexistent.json", "-o", o])
        .expect(6)
        .says("/nonexistent.json");
    assert!(!out.exists(), "nothing written on failure");
}

#[test]
fn plan_prints_scope_and_passes_for_a_profile_file() {
    let env = Env::new();
    let out = env.dir.path().join("p100.json");
    env.run(&["probe", "--simulate", "p100", "-o", out.to_str().unwrap()])
        .expect(0);
    let p = out.to_str().unwrap();
    let r = env.run(&[
        "plan",
        "sampling",
        "--region",
        "16GiB",
        "--memory",
        "device",
        "--profile",
        p,
        "--json",
    ]);
    r.expect(0);
    let doc = r.json();
    assert!(doc["scope_bytes"].as_u64().unwrap() > 0);
    assert!(doc["passes"].as_u64().unwrap() >= 1);
    assert_eq!(doc["profile"]["source"], p);
    let r = env.run(&[&["plan"][..], &GROUPING_8GIB, &["--profile", p, "--json"]].concat());
    r.expect(0);
    assert!(["unscoped", "naive", "copy"].contains(&r.json()["approach"].as_str().unwrap()));
    let r = env.run(&[
        "plan",
        "stencil",
        "--dims",
        "512x512x512",
        "--dtype",
        "f32",
        "--repeats",
        "6",
        "--profile",
        p,
        "--json",
    ]);
    r.expect(0);
    let doc = r.json();
    assert_eq!(doc["block"].as_array().unwrap().len(), 3);
    assert!(doc["staging"].is_boolean());
    env.run(&["plan", "stencil", "--dims", "512x512", "--profile", p])
        .expect(2)
        .says("XxYxZ");
    env.run(&["plan", "sampling", "--region", "0", "--profile", p])
        .expect(2);
}

/// A simulated profile, as `cargo tune probe --simulate` writes it.
fn simulated(n: u32) -> memtune_core::Profile {
    let mut p = profile(&uuid(n));
    p.provenance.simulator = Some("k80".to_string());
    p
}

#[test]
fn check_passes_a_good_project_and_fails_each_bad_file_with_its_reason() {
    let env = Env::new();
    // Nothing committed yet: exit 6 naming the command that makes one.
    env.run(&["check"])
        .expect(6)
        .says("no such directory")
        .says("cargo tune --project");
    fs::create_dir_all(env.project()).unwrap();
    env.run(&["check"]).expect(6).says("no profiles");

    memtune_tests::store(&env.project(), &profile(&uuid(1)));
    memtune_tests::store(&env.project(), &profile(&uuid(2)));
    env.run(&["check"]).expect(0).says(&uuid(1)).says(&uuid(2));
    let all_good = env.run(&["check", "--json"]);
    all_good.expect(0);
    assert_eq!(all_good.json()["ok"], true);
    assert_eq!(all_good.json()["files"].as_array().unwrap().len(), 2);

    let bad = |name: &str, text: String, reason: &str| {
        let path = env.project().join(name);
        fs::write(&path, text).unwrap();
        let r = env.run(&["check", "--json"]);
        r.expect(8);
        let doc = r.json();
        assert_eq!(doc["ok"], false);
        let item = doc["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["path"] == path.to_str().unwrap())
            .cloned()
            .unwrap_or_else(|| panic!("{name} not reported: {doc:#}"));
        assert_eq!(item["valid"], false, "{item:#}");
        assert_eq!(item["reason"], reason, "{item:#}");
        assert_eq!(doc["failed"], 1, "only {name} fails: {doc:#}");
        // The human output names the file and why, and the exit code is the same.
        env.run(&["check"]).expect(8).says(name).says("FAILED");
        fs::remove_file(&path).unwrap();
        env.run(&["check"]).expect(0);
    };

    // Tampered: a value changed after sealing.
    let tampered = json(&profile(&uuid(3))).replace("\"sm_count\": 132", "\"sm_count\": 133");
    assert!(tampered.contains("133"));
    bad(&format!("{}.json", uuid(3)), tampered, "digest");
    // Simulated: refused unless allowed.
    bad(
        &format!("{}.json", uuid(4)),
        json(&simulated(4)),
        "simulated",
    );
    // Another schema, correctly sealed.
    let mut other = value(&json(&profile(&uuid(5))));
    other["schema"] = Value::String("memtune-profile/9".into());
    bad(&format!("{}.json", uuid(5)), reseal(other), "newer_schema");
    let mut foreign = value(&json(&profile(&uuid(5))));
    foreign["schema"] = Value::String("something-else/1".into());
    bad(&format!("{}.json", uuid(5)), reseal(foreign), "schema");
    // A valid profile under another UUID's name.
    bad(
        &format!("{}.json", uuid(6)),
        json(&profile(&uuid(7))),
        "file_name",
    );
    // Truncated.
    bad(
        &format!("{}.json", uuid(8)),
        "{\"schema\": ".into(),
        "parse",
    );
}

#[test]
fn check_allows_simulated_profiles_when_asked_and_takes_a_directory() {
    let env = Env::new();
    let dir = env.dir.path().join("fixtures");
    memtune_tests::store(&dir, &simulated(4));
    let d = dir.to_str().unwrap();
    env.run(&["check", d])
        .expect(8)
        .says("simulated")
        .says("--allow-simulated");
    env.run(&["check", "--allow-simulated", d])
        .expect(0)
        .says("(simulated)");
}

#[test]
fn import_project_says_when_it_replaces_a_different_profile() {
    let env = Env::new();
    let first = good(&env, 1);
    env.run(&["import", "--project", first.to_str().unwrap()])
        .expect(0);
    // The same profile again: nothing to say.
    let again = env.run(&["import", "--project", first.to_str().unwrap()]);
    again.expect(0);
    assert!(!again.stderr().contains("replacing"), "{}", again.stderr());
    // Another profile of the same GPU, made earlier than the stored one.
    let mut older = profile(&uuid(1));
    older.provenance.created_at = "2020-01-01T00:00:00Z".into();
    let older = env.file("older.json", &json(&older));
    let r = env.run(&["import", "--project", older.to_str().unwrap(), "--json"]);
    r.expect(0).says("replacing a NEWER profile");
    assert!(r.json()["replaced"]
        .as_str()
        .is_some_and(|s| s.contains(&uuid(1))));
}
