//! `cargo tune reuse --replay SIM`: the prediction from the reuse histogram (each level a
//! fully associative LRU cache) against the trace replayed through a simulated GPU's
//! set-associative caches and TLBs. On a real program's trace and on the access streams
//! of memtune's kernels they agree within 0.01 of hit ratio at every level; a trace built
//! to conflict in one set shows the replay catching what full associativity misses.

mod common;

use common::Env;
use serde_json::Value;

/// Two data caches (4- and 16-way) and two TLB levels (fully associative, then 8-way),
/// small enough that the traces below fill them.
const SIM: &str = r#"{
  "schema": "memtune-sim/1", "name": "replay-test", "sm_count": 13, "clock_mhz": 875,
  "l2_hit_cycles": 230, "dram_cycles": 500,
  "memory_kinds": { "device": { "size_bytes": 12884901888, "extra_cycles": 0, "tlb": [
    { "entries": 16, "page_bytes": 65536, "miss_cycles": 10, "shared_by_sms": 1 },
    { "entries": 128, "page_bytes": 2097152, "miss_cycles": 100, "ways": 8, "shared_by_sms": 1 }
  ] } },
  "caches": [
    { "name": "L1", "size_bytes": 16384, "line_bytes": 64, "ways": 4, "hit_cycles": 30 },
    { "name": "L2", "size_bytes": 262144, "line_bytes": 128, "ways": 16, "hit_cycles": 200 }
  ],
  "noise": { "jitter": 0.0, "outlier_rate": 0.0, "seed": 1 }
}"#;

/// Hit ratio tolerance between prediction and replay.
const TOLERANCE: f64 = 0.01;

/// `(name, predicted, replayed)` per level.
fn replay(env: &Env, trace: &str, format: &str) -> Vec<(String, f64, f64)> {
    let sim = env.file("sim.json", SIM);
    let r = env.run(&[
        "reuse",
        trace,
        "--format",
        format,
        "--replay",
        sim.to_str().unwrap(),
        "--json",
    ]);
    r.expect(0);
    let doc: Value = r.json();
    doc["replay"]["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["level"]["name"].as_str().unwrap().to_string(),
                c["predicted_hit_ratio"].as_f64().unwrap(),
                c["replayed_hit_ratio"].as_f64().unwrap(),
            )
        })
        .collect()
}

fn kernel_trace(env: &Env, name: &str, args: &[&str]) -> String {
    let out = env.dir.path().join(name);
    let mut all = vec!["trace"];
    all.extend_from_slice(args);
    all.extend(["-o", out.to_str().unwrap()]);
    env.run(&all).expect(0);
    out.to_str().unwrap().to_string()
}

#[test]
fn prediction_and_replay_agree_on_a_program_and_the_kernels() {
    let env = Env::new();
    let lackey = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/traces/true-lackey.txt.gz"
    );
    let traces = [
        ("lackey", lackey.to_string(), "lackey"),
        (
            "sampling",
            kernel_trace(
                &env,
                "s.u64",
                &[
                    "sampling",
                    "--region",
                    "1MiB",
                    "--threads",
                    "2048",
                    "--reads",
                    "32",
                ],
            ),
            "u64",
        ),
        (
            "grouping",
            kernel_trace(
                &env,
                "g.u64",
                &["grouping", "--keys", "100000", "--distinct", "20000"],
            ),
            "u64",
        ),
        (
            "stencil",
            kernel_trace(
                &env,
                "st.u64",
                &["stencil", "--nx", "32", "--ny", "32", "--nz", "16"],
            ),
            "u64",
        ),
    ];
    for (what, trace, format) in &traces {
        let levels = replay(&env, trace, format);
        assert_eq!(levels.len(), 4, "{what}: two caches and two TLB levels");
        for (name, predicted, replayed) in &levels {
            assert!(
                (predicted - replayed).abs() <= TOLERANCE,
                "{what} {name}: predicted {predicted:.4}, replayed {replayed:.4}"
            );
        }
        assert!(
            levels.iter().any(|l| l.2 > 0.05 && l.2 < 0.995),
            "{what}: some level neither always hits nor always misses: {levels:?}"
        );
    }
}

#[test]
fn a_one_set_conflict_is_what_the_replay_catches() {
    let env = Env::new();
    // 8 lines 4 KiB apart all map to set 0 of the 64-set, 4-way L1: a fully associative
    // cache of 256 lines keeps them, the real one thrashes.
    let text: String = (0..100)
        .flat_map(|_| (0..8u64).map(|i| format!("{:#x}\n", i * 4096)))
        .collect();
    let trace = env.file("conflict.txt", &text);
    let levels = replay(&env, trace.to_str().unwrap(), "text");
    let (name, predicted, replayed) = &levels[0];
    assert_eq!(name, "L1");
    assert!((predicted - 0.99).abs() < 1e-9, "{predicted}");
    assert_eq!(*replayed, 0.0);
}
