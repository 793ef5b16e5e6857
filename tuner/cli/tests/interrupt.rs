//! Ctrl-C during a probe, through the built binary: a long simulated probe gets SIGINT,
//! exits 130, says it was interrupted and writes nothing (no `-o` file, nothing on stdout
//! for `-o -`).
#![cfg(unix)]

mod common;

use common::Env;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Three kinds of three TLB levels each, two caches and sharing: several seconds of
/// simulated probing in a debug build (about 13 s on two slow cores), within the
/// simulator's bounds.
const LONG: &str = r#"{
  "schema": "memtune-sim/1", "name": "long", "sm_count": 64, "clock_mhz": 1000,
  "l2_hit_cycles": 200,
  "memory_kinds": {
    "device": { "size_bytes": 68719476736,
      "tlb": [ { "entries": 16, "page_bytes": 65536, "miss_cycles": 20, "shared_by_sms": 2 },
               { "entries": 64, "page_bytes": 2097152, "miss_cycles": 60, "shared_by_sms": 4 },
               { "entries": 1024, "page_bytes": 2097152, "miss_cycles": 150, "ways": 8, "shared_by_sms": 16 } ] },
    "pinned": { "size_bytes": 68719476736, "extra_cycles": 400,
      "tlb": [ { "entries": 16, "page_bytes": 4096, "miss_cycles": 20, "shared_by_sms": 2 },
               { "entries": 512, "page_bytes": 65536, "miss_cycles": 90, "shared_by_sms": 8 },
               { "entries": 2048, "page_bytes": 2097152, "miss_cycles": 200, "ways": 16, "shared_by_sms": 32 } ] },
    "managed": { "size_bytes": 68719476736, "extra_cycles": 100,
      "tlb": [ { "entries": 16, "page_bytes": 65536, "miss_cycles": 20, "shared_by_sms": 2 },
               { "entries": 256, "page_bytes": 2097152, "miss_cycles": 90, "shared_by_sms": 8 },
               { "entries": 2048, "page_bytes": 2097152, "miss_cycles": 200, "ways": 16, "shared_by_sms": 32 } ] }
  },
  "caches": [ { "name": "L1", "size_bytes": 131072, "line_bytes": 128, "ways": 4, "hit_cycles": 30 },
              { "name": "L2", "size_bytes": 16777216, "line_bytes": 128, "ways": 16, "hit_cycles": 200 } ],
  "dram_cycles": 500, "shared_memory_cycles": 25, "max_chase_elements": 1048576,
  "noise": { "jitter": 0.05, "outlier_rate": 0.01, "seed": 3 }
}"#;

/// Waits until process `pid` catches SIGINT (its handler is installed, so the probe has
/// begun): read from `/proc/PID/status` where there is one, else `fallback` of sleep. A
/// fixed sleep alone would let a fast machine finish the probe first.
fn wait_for_handler(pid: u32, fallback: Duration) {
    let status = format!("/proc/{pid}/status");
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        let Ok(text) = std::fs::read_to_string(&status) else {
            std::thread::sleep(fallback);
            return;
        };
        let caught = text
            .lines()
            .find_map(|l| l.strip_prefix("SigCgt:"))
            .and_then(|m| u64::from_str_radix(m.trim(), 16).ok());
        // SIGINT is signal 2: bit 1 of the mask.
        if caught.is_some_and(|m| m & (1 << 1) != 0) {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Starts the long probe writing to `out`, sends SIGINT once it handles it, and returns the
/// exit code, stdout and stderr, and how long it took to end after the signal.
fn interrupt(env: &Env, out: &str, after: Duration) -> (i32, String, String, Duration) {
    let config = env.file("long.json", LONG);
    let mut child = env
        .cmd(&[
            "probe",
            "--simulate",
            config.to_str().unwrap(),
            "--tlb-sharing",
            "-o",
            out,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_handler(child.id(), after);
    assert!(
        child.try_wait().unwrap().is_none(),
        "the probe ended before the signal: make LONG longer"
    );
    let sent = common::send_sigint(&child);
    // The probe notices between two measurements: well under a second.
    while child.try_wait().unwrap().is_none() {
        if sent.elapsed() > Duration::from_secs(30) {
            child.kill().unwrap();
            panic!("still running 30 s after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = sent.elapsed();
    let output = child.wait_with_output().unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
        took,
    )
}

#[test]
fn ctrl_c_during_a_probe_writes_nothing_and_exits_130() {
    let env = Env::new();
    let out = env.dir.path().join("p.json");
    let (code, _, stderr, took) =
        interrupt(&env, out.to_str().unwrap(), Duration::from_millis(1500));
    assert_eq!(code, 130, "stderr:\n{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert!(stderr.contains("nothing was written"), "{stderr}");
    assert!(!out.exists(), "no profile is written");
    let left: Vec<_> = std::fs::read_dir(env.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        left.iter().all(|n| n == "project" || n == "long.json"),
        "nothing else is left behind: {left:?}"
    );
    assert!(took < Duration::from_secs(5), "took {took:?} to stop");
}

#[test]
fn ctrl_c_with_the_profile_on_stdout_prints_none_of_it() {
    let env = Env::new();
    let (code, stdout, stderr, _) = interrupt(&env, "-", Duration::from_millis(1500));
    assert_eq!(code, 130, "stderr:\n{stderr}");
    assert!(stdout.is_empty(), "stdout: {stdout}");
}
