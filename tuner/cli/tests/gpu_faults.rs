//! GPU tests of the probe's failure paths: run only with `MEMTUNE_GPU_TESTS=1`
//! (scripts/gpu-run.sh sets it); each says SKIPPED on stderr otherwise.
//!
//! `MEMTUNE_FAULT` fails a real allocation or launch: its section is marked failed with the
//! reason, the others are measured, the profile is whole and the exit code 7. Ctrl-C stops
//! a GPU probe with exit 130 and writes nothing.

mod common;

use memtune_tests::gpu_tests_enabled;
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::Duration;
use tempfile::TempDir;

fn cargo_tune(cache: &std::path::Path) -> Command {
    let mut c = Command::new(memtune_tests::cargo_tune_bin(env!(
        "CARGO_BIN_EXE_cargo-tune"
    )));
    c.env("MEMTUNE_CACHE_DIR", cache)
        .env_remove("MEMTUNE_PROFILE")
        .env_remove("MEMTUNE_FAULT");
    c
}

#[test]
fn injected_gpu_faults_fail_their_sections_keep_the_others_and_exit_7() {
    if !gpu_tests_enabled("injected_gpu_faults_fail_their_sections_keep_the_others_and_exit_7") {
        return;
    }
    let dir = TempDir::new().unwrap();
    let out = dir.path().join("p.json");
    let run = cargo_tune(dir.path())
        .args(["probe", "--quick", "--kinds", "device,pinned", "-o"])
        .arg(&out)
        .env("MEMTUNE_FAULT", "alloc:pinned,launch:staging")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(7), "stderr:\n{stderr}");
    let p: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    for section in ["tlb", "random_access"] {
        let pinned = &p[section]["pinned"];
        assert_eq!(pinned["status"], "failed", "{section}.pinned: {pinned}");
        let reason = pinned["reason"].as_str().unwrap();
        assert!(reason.contains("injected by MEMTUNE_FAULT"), "{reason}");
        assert_eq!(
            p[section]["device"]["status"], "measured",
            "{section}.device"
        );
    }
    let staging = &p["shared_memory_staging"];
    assert_eq!(staging["status"], "failed", "{staging}");
    assert!(staging["reason"]
        .as_str()
        .unwrap()
        .contains("(launch:staging)"));
    assert_eq!(p["caches"]["status"], "measured");
    assert_eq!(p["bandwidth"]["status"], "measured");
    let verify = cargo_tune(dir.path())
        .arg("verify")
        .arg(&out)
        .output()
        .unwrap();
    assert!(verify.status.success(), "the partial profile verifies");
}

#[test]
fn ctrl_c_stops_a_gpu_probe_with_130_and_writes_nothing() {
    if !gpu_tests_enabled("ctrl_c_stops_a_gpu_probe_with_130_and_writes_nothing") {
        return;
    }
    let dir = TempDir::new().unwrap();
    let out = dir.path().join("p.json");
    let mut child = cargo_tune(dir.path())
        .args(["probe", "-o"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Past the kernel compiles, into the sweeps that hold device memory.
    std::thread::sleep(Duration::from_secs(8));
    assert!(child.try_wait().unwrap().is_none(), "the probe ended early");
    let sent = common::send_sigint(&child);
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "stderr:\n{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert!(
        sent.elapsed() < Duration::from_secs(30),
        "took {:?}",
        sent.elapsed()
    );
    assert!(!out.exists(), "no profile is written");
}
