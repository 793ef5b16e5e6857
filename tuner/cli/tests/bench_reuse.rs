//! `cargo tune bench reuse`: the modes on a generated trace, their agreement and targets;
//! GPU modes run with `MEMTUNE_GPU_TESTS=1` and are skipped with a note otherwise.

mod common;

use common::Env;

fn rows(doc: &serde_json::Value) -> Vec<(String, serde_json::Value)> {
    doc["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| (r["mode"].as_str().unwrap_or("").to_string(), r.clone()))
        .collect()
}

#[test]
fn bench_reuse_runs_every_cpu_mode_against_exact() {
    let env = Env::new();
    let out = env.dir.path().join("out");
    let r = env.run(&[
        "bench",
        "reuse",
        "--refs",
        "200000",
        "--distinct",
        "20000",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    r.expect(0);
    let doc = r.json();
    assert_eq!(doc["references"], 200_000);
    assert_eq!(doc["distinct"], 20_000);
    assert_eq!(doc["cold"], 20_000);
    let rows = rows(&doc);
    let modes: Vec<&str> = rows.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(
        &modes[..4],
        ["exact-cpu", "hp-rda", "hp-rda --adjust seed", "sampled"]
    );
    for (m, row) in &rows {
        let s = row["median_seconds"].as_f64().unwrap();
        assert!(s > 0.0 && s.is_finite(), "{m}: {s}");
    }
    // HP-RDA over-estimates where sub-traces share items: the seed's formula 2 leaves some
    // error, bounded; the default overlap correction removes most of it on a trace without
    // locality.
    let overlap = rows[1].1["error"].as_f64().unwrap();
    let seed = rows[2].1["error"].as_f64().unwrap();
    assert!(
        seed > 0.0 && seed < 0.2,
        "hp-rda --adjust seed error {seed}"
    );
    assert!(overlap < seed, "overlap {overlap} against seed {seed}");
    let sampled = rows[3].1["error"].as_f64().unwrap();
    assert!(sampled < 0.05, "sampled miss-ratio error {sampled}");
    let targets = doc["targets"].as_array().unwrap();
    assert!(targets.iter().any(|t| t["name"]
        .as_str()
        .unwrap()
        .starts_with("exact-cpu references/s")));
    if modes.contains(&"exact-gpu") {
        for (m, row) in rows.iter().skip(3) {
            assert_eq!(
                row["equal"], true,
                "{m} differs from the histogram it must equal"
            );
        }
        assert_eq!(targets.len(), 7);
    } else {
        let notes = doc["notes"].to_string();
        assert!(notes.contains("GPU modes skipped"), "{notes}");
        assert_eq!(targets.len(), 6);
    }
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("bench-reuse.json")).unwrap()).unwrap();
    assert_eq!(written["rows"], doc["rows"]);
}

#[test]
fn bench_reuse_with_gpus_checks_the_gpu_modes() {
    if std::env::var("MEMTUNE_GPU_TESTS").as_deref() != Ok("1") {
        eprintln!("skipped: set MEMTUNE_GPU_TESTS=1 to run the GPU modes");
        return;
    }
    let env = Env::new();
    let mut cmd = env.cmd(&[
        "bench",
        "reuse",
        "--refs",
        "3000000",
        "--distinct",
        "300000",
        "--json",
    ]);
    cmd.env_remove("CUDA_VISIBLE_DEVICES");
    let out = cmd.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows(&doc);
    let gpu: Vec<_> = rows.iter().filter(|(m, _)| m.ends_with("-gpu")).collect();
    assert_eq!(gpu.len(), 3);
    for (m, row) in gpu {
        assert_eq!(row["equal"], true, "{m}");
        assert_eq!(row["runs_seconds"].as_array().unwrap().len(), 3, "{m}");
    }
}

#[test]
fn bench_reuse_refuses_bad_sizes_before_any_work() {
    let env = Env::new();
    env.run(&["bench", "reuse", "--refs", "100", "--distinct", "300"])
        .expect(2)
        .says_on_stderr("--distinct 300");
    env.run(&["bench", "reuse", "--refs", "0"]).expect(2);
    env.run(&["bench", "reuse", "--refs", "99999999999"])
        .expect(2)
        .says_on_stderr("--refs");
    // The options belong to the reuse bench alone.
    env.run(&["bench", "stencil", "--refs", "1000"])
        .expect(2)
        .says_on_stderr("cargo tune bench reuse");
}
