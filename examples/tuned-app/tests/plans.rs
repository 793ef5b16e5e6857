//! tuned-app built as a user would build it, once per profile: `MEMTUNE_PROFILE` naming a
//! simulated K80 and then a simulated P100 gives different compile-time plans, each equal to
//! what `cargo tune plan` says for that profile; editing the profile file rebuilds the app.
//!
//! Runs cargo itself (in its own target directory under the workspace's, so that it never
//! waits on the lock of the `cargo test` that runs it); only tuned-app is rebuilt per profile.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn cargo() -> Command {
    let mut c = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"))
        .join("tuned-app-plans");
    c.current_dir(workspace())
        .env("CARGO_TARGET_DIR", target)
        // Plans only: no GPU run, no nvcc, nothing from the host's lookup chain.
        .env("CUDA_VISIBLE_DEVICES", "")
        .env("MEMTUNE_NVCC", "0")
        .env_remove("MEMTUNE_DEVICE")
        .env_remove("MEMTUNE_OFFLINE")
        .env_remove("MEMTUNE_CUDA_ARCHS")
        .env_remove("RUSTFLAGS");
    c
}

fn json_of(mut cmd: Command) -> Value {
    let out = cmd.output().expect("cargo runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// `cargo run -p tuned-app -- --plans-json` with `MEMTUNE_PROFILE=profile`, and cargo's
/// stderr (to see whether tuned-app was compiled again).
fn tuned_app(profile: &Path, cache: &Path) -> (Value, String) {
    let mut c = cargo();
    c.args(["run", "-p", "tuned-app", "--", "--plans-json"])
        .env("MEMTUNE_PROFILE", profile)
        .env("MEMTUNE_CACHE_DIR", cache);
    let out = c.output().expect("cargo runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "tuned-app failed:\n{stdout}\n{stderr}"
    );
    let doc = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    (doc, stderr)
}

/// `cargo tune plan ... --json` for the workload tuned-app reports.
fn cargo_tune_plan(kind: &str, workload: &Value, profile: &Path) -> Value {
    let mut c = cargo();
    c.args([
        "run",
        "-q",
        "-p",
        "cargo-tune",
        "--bin",
        "cargo-tune",
        "--",
        "plan",
        kind,
    ]);
    match kind {
        "sampling" => {
            let region = workload["region_bytes"].to_string();
            let memory = workload["memory"].as_str().unwrap().to_string();
            let reads = workload["reads_per_thread"].to_string();
            c.args([
                "--region",
                &region,
                "--memory",
                &memory,
                "--reads-per-thread",
                &reads,
            ]);
        }
        _ => {
            let d = &workload["dims"];
            let dims = format!("{}x{}x{}", d[0], d[1], d[2]);
            let dtype = workload["dtype"].as_str().unwrap().to_string();
            let repeats = workload["repeats"].to_string();
            c.args(["--dims", &dims, "--dtype", &dtype, "--repeats", &repeats]);
        }
    }
    c.args(["--json", "--profile"]).arg(profile);
    json_of(c)
}

/// The app's compile-time plans equal `cargo tune plan`'s for `profile`, and name it.
fn assert_plans_match(app: &Value, profile: &Path) {
    let text = std::fs::read_to_string(profile).unwrap();
    let file: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(app["profile"]["digest"], file["digest"], "{app:#}");
    assert_eq!(app["profile"]["uuid"], file["device"]["uuid"]);
    assert_eq!(app["profile"]["source"], "env");
    assert_eq!(app["profile"]["simulated"], true);
    assert_eq!(app["build"]["agrees_with_macros"], true, "{app:#}");

    let s = &app["plans"]["sampling"];
    let want = cargo_tune_plan("sampling", &s["workload"], profile);
    assert_eq!(want["profile"]["digest"], file["digest"]);
    for field in ["scope_bytes", "passes"] {
        assert_eq!(
            s[field], want[field],
            "sampling {field}: app {s:#} vs cargo tune {want:#}"
        );
    }
    assert_eq!(
        app["defines"]["MEMTUNE_SAMPLING_PASSES"],
        want["passes"].to_string()
    );

    let t = &app["plans"]["stencil"];
    let want = cargo_tune_plan("stencil", &t["workload"], profile);
    for field in ["variant", "block", "staging"] {
        assert_eq!(
            t[field], want[field],
            "stencil {field}: app {t:#} vs cargo tune {want:#}"
        );
    }
    assert_eq!(
        app["defines"]["MEMTUNE_STENCIL_BLOCK_X"],
        want["block"][0].to_string()
    );
}

#[test]
fn k80_and_p100_profiles_give_their_own_plans_and_an_edited_profile_rebuilds() {
    let tmp = tempfile::TempDir::new().unwrap();
    let fixtures = workspace().join("tests/fixtures");
    let k80 = tmp.path().join("k80.json");
    let p100 = tmp.path().join("p100.json");
    std::fs::copy(fixtures.join("k80.json"), &k80).unwrap();
    std::fs::copy(fixtures.join("p100.json"), &p100).unwrap();
    let cache = tmp.path().join("cache");

    let (on_k80, _) = tuned_app(&k80, &cache);
    assert_plans_match(&on_k80, &k80);
    let (on_p100, _) = tuned_app(&p100, &cache);
    assert_plans_match(&on_p100, &p100);
    assert_ne!(
        on_k80["plans"], on_p100["plans"],
        "the two GPUs' TLBs differ, so should the plans"
    );

    // Same variable, same path, other content: cargo must rebuild tuned-app.
    std::fs::copy(&k80, &p100).unwrap();
    let (edited, stderr) = tuned_app(&p100, &cache);
    assert!(
        stderr.contains("Compiling tuned-app"),
        "not rebuilt:\n{stderr}"
    );
    assert_eq!(edited["profile"]["digest"], on_k80["profile"]["digest"]);
    assert_eq!(edited["plans"], on_k80["plans"]);
    assert_plans_match(&edited, &p100);
}
