//! GPU test of `cargo tune bench`: runs only with `MEMTUNE_GPU_TESTS=1`.

use serde_json::Value;
use std::process::Command;

#[test]
fn bench_all_quick_writes_matching_results() {
    if !memtune_tests::gpu_tests_enabled("bench_all_quick_writes_matching_results") {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let out = Command::new(memtune_tests::cargo_tune_bin(env!(
        "CARGO_BIN_EXE_cargo-tune"
    )))
    .args(["bench", "all", "--quick", "--json", "--out"])
    .arg(dir.path())
    .output()
    .expect("run cargo-tune bench");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench failed: {stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("bench --json prints JSON");
    let reports = doc["reports"].as_array().expect("reports");
    assert_eq!(reports.len(), 3);
    for (report, name) in reports.iter().zip(["sampling", "grouping", "stencil"]) {
        assert_eq!(report["workload"], name);
        assert!(report["profile"]["source"].is_string());
        assert!(report["device"]["uuid"]
            .as_str()
            .unwrap()
            .starts_with("GPU-"));
        assert!(report["device_copy"]["gb_per_s"].as_f64().unwrap() > 0.0);
        assert_eq!(report["errors"].as_array().unwrap().len(), 0, "{report:#}");
        assert_eq!(report["results_match"], true, "{report:#}");
        let rows = report["rows"].as_array().expect("rows");
        // Every configuration is timed in rounds of `runs`, its runs pooled.
        let runs = report["runs"].as_u64().unwrap() * report["rounds"].as_u64().unwrap();
        assert_eq!(report["rounds"], if name == "sampling" { 2 } else { 1 });
        assert!(!rows.is_empty(), "{name}: no rows");
        for row in rows {
            assert_eq!(row["results_match"], true, "{row:#}");
            for v in ["untuned", "tuned", "best"] {
                assert!(row[v]["median_ms"].as_f64().unwrap() > 0.0, "{row:#}");
                assert_eq!(row[v]["runs_ms"].as_array().unwrap().len() as u64, runs);
                assert_eq!(row[v]["result"], row["untuned"]["result"]);
            }
            assert!(row["tuned_over_best"].as_f64().unwrap() >= 1.0 - 1e-9);
        }
        assert!(report["targets"].as_array().unwrap().len() >= 2);
        let file = dir.path().join(format!("bench-{name}.json"));
        let written: Value =
            serde_json::from_str(&std::fs::read_to_string(&file).expect("json written"))
                .expect("valid json");
        assert_eq!(written["workload"], name);
        let svg = std::fs::read_to_string(dir.path().join(format!("bench-{name}.svg")))
            .expect("svg written");
        // Untuned, model plan, autotuned and best, for each memory the workload ran in:
        // curves are the 2-px polylines (axes and grid lines are thinner).
        let lines = svg
            .split("<polyline")
            .skip(1)
            .filter(|p| {
                p.split("/>")
                    .next()
                    .is_some_and(|tag| tag.contains("stroke-width=\"2\""))
            })
            .count();
        assert!(lines >= 4 && lines % 4 == 0, "{name}: {lines} lines");
        // The flat table: every row autotuned on the bench's kernel, within the limits.
        let table = report["table"].as_array().expect("table");
        assert_eq!(table.len(), rows.len());
        for t in table {
            assert!(t["autotuned_ms"].as_f64().is_some_and(|x| x > 0.0), "{t:#}");
            let timed = t["candidates_timed"].as_u64().expect("candidates_timed");
            assert!((1..=5).contains(&timed), "{t:#}");
            assert_eq!(t["second_run_timed"], false, "{t:#}");
            for k in [
                "workload",
                "variant",
                "memory",
                "bytes",
                "untuned_ms",
                "plan_ms",
                "best_ms",
                "best_config",
                "tuning_ms",
            ] {
                assert!(!t[k].is_null(), "{k} missing: {t:#}");
            }
        }
    }
    let stencil = &reports[2];
    let rows = stencil["rows"].as_array().unwrap();
    assert!(rows
        .iter()
        .any(|r| r["case"] == "512x512x512 f32 x1" && r["tuned_gb_per_s"].as_f64().is_some()));
}
