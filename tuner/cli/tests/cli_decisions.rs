//! `cargo tune decisions list|show|clear|export` through the built binary, on decision files
//! made by the library (candidates from the built-in profile, a session with a fake timer).

use memtune_core::plan::{SamplingPlan, SamplingWorkload};
use memtune_core::tune::session::{self, Budget};
use memtune_core::tune::{candidates_digest, save_in, Candidate, Decision, Tunable, TuneKey};
use memtune_core::MemoryKind;
mod common;

use common::{Env, Run};
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};

/// The user cache's decisions folder.
fn local(env: &Env) -> PathBuf {
    env.cache().join("decisions")
}

/// The project's `.memtune/decisions/`.
fn project(env: &Env) -> PathBuf {
    env.project().join("decisions")
}

/// `cargo tune decisions ARGS`.
fn run(env: &Env, args: &[&str]) -> Run {
    let mut all = vec!["decisions"];
    all.extend_from_slice(args);
    env.run(&all)
}

fn workload() -> SamplingWorkload {
    SamplingWorkload {
        region_bytes: 3 << 30,
        memory: MemoryKind::Pinned,
        reads_per_thread: 64,
    }
}

fn candidates() -> Vec<Candidate<SamplingPlan>> {
    workload()
        .candidates(&memtune_core::default::builtin())
        .expect("candidates")
}

/// A decision for `kernel` where candidate `fastest` takes 1 ms and every other 2 ms.
fn decision(kernel: &str, fastest: usize) -> Decision {
    let c = candidates();
    assert!(c.len() > fastest, "{} candidates", c.len());
    let key = TuneKey {
        device_uuid: "GPU-00000000-0000-0000-0000-000000000001".into(),
        kernel: kernel.into(),
        class: workload().class(),
        profile_digest: "sha256:00".into(),
        memtune_version: "0.1.0".into(),
        candidates_digest: candidates_digest(c.iter().map(|c| c.label.as_str())),
    };
    let out = session::run(c.len(), &Budget::default(), |i| {
        Ok(if i == fastest { 1.0 } else { 2.0 })
    });
    Decision::from_outcome(key, &c, &out, 1_700_000_000)
}

fn name_of(path: &Path) -> String {
    path.file_name().unwrap().to_str().unwrap().to_string()
}

/// Every file of a folder and its bytes, sorted.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<_> = fs::read_dir(dir)
        .map(|rd| {
            rd.map(|e| {
                let e = e.unwrap();
                (name_of(&e.path()), fs::read(e.path()).unwrap())
            })
            .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn list_says_where_it_looked_when_empty() {
    let env = Env::new();
    run(&env, &["list"])
        .expect(0)
        .says("no stored decisions")
        .says(&local(&env).display().to_string())
        .says(".memtune/decisions");
    let r = run(&env, &["list", "--json"]);
    r.expect(0);
    assert_eq!(r.json()["decisions"], serde_json::json!([]));
}

#[test]
fn list_shows_local_and_project_decisions_with_their_ratio() {
    let env = Env::new();
    let local = save_in(&local(&env), &decision("gather-v1", 1), false).unwrap();
    let project = save_in(&project(&env), &decision("gather-v2", 2), false).unwrap();
    let labels: Vec<String> = candidates().into_iter().map(|c| c.label).collect();

    let r = run(&env, &["list", "--json"]);
    r.expect(0);
    let rows = r.json()["decisions"].as_array().unwrap().clone();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0]["source"], "local");
    assert_eq!(rows[0]["path"], local.to_str().unwrap());
    assert_eq!(rows[0]["decision"]["key"]["kernel"], "gather-v1");
    assert_eq!(rows[0]["chosen_label"], labels[1].as_str());
    assert_eq!(rows[0]["decision"]["chosen"], 1);
    assert_eq!(rows[1]["source"], "project");
    assert_eq!(rows[1]["path"], project.to_str().unwrap());
    assert_eq!(rows[1]["chosen_label"], labels[2].as_str());
    for row in &rows {
        // 1 ms chosen against 2 ms untuned.
        assert_eq!(row["untuned_median_ms"], 2.0);
        assert_eq!(row["chosen_median_ms"], 1.0);
        assert_eq!(row["speedup_vs_untuned"], 2.0);
        let n = row["decision"]["candidates"].as_array().unwrap().len();
        assert_eq!(n, labels.len());
    }

    let r = run(&env, &["list"]);
    r.expect(0)
        .says("gather-v1")
        .says("gather-v2")
        .says(&format!("chose `{}`", labels[1]))
        .says("1.0000 ms vs 2.0000 ms untuned (2.00x)")
        .says("pinned")
        .says(&local.display().to_string())
        .says(&project.display().to_string());
    // One entry per decision, local first, each with its file on the entry's last line.
    let out = r.stdout();
    let firsts: Vec<&str> = out.lines().filter(|l| !l.starts_with(' ')).collect();
    assert_eq!(firsts.len(), 2, "{out}");
    assert!(
        firsts[0].starts_with("local    sampling  gather-v1"),
        "{out}"
    );
    assert!(
        firsts[1].starts_with("project  sampling  gather-v2"),
        "{out}"
    );
}

#[test]
fn an_invalid_file_is_flagged_not_fatal() {
    let env = Env::new();
    save_in(&local(&env), &decision("gather-v1", 1), false).unwrap();
    fs::write(
        local(&env).join("broken.json"),
        "{\"schema\": \"memtune-deci",
    )
    .unwrap();
    let r = run(&env, &["list"]);
    r.expect(0)
        .says("INVALID")
        .says("broken.json")
        .says("not a valid decision")
        .says("gather-v1");
    let r = run(&env, &["list", "--json"]);
    r.expect(0);
    let rows = r.json()["decisions"].as_array().unwrap().clone();
    assert_eq!(rows.len(), 2);
    let bad: Vec<&Value> = rows.iter().filter(|r| r.get("error").is_some()).collect();
    assert_eq!(bad.len(), 1, "{rows:?}");
    assert!(bad[0]["path"].as_str().unwrap().ends_with("broken.json"));
    assert!(bad[0].get("decision").is_none());
    // Showing it is an invalid-file error, exit 4, naming the file.
    run(&env, &["show", "broken.json"])
        .expect(4)
        .says("broken.json")
        .says("not a valid decision");
}

#[test]
fn show_by_name_and_by_path() {
    let env = Env::new();
    let d = decision("gather-v1", 1);
    let path = save_in(&project(&env), &d, false).unwrap();
    let name = name_of(&path);
    let r = run(&env, &["show", &name]);
    r.expect(0)
        .says(&path.display().to_string())
        .says("gather-v1")
        .says("why")
        .says(&d.why)
        .says("dropped: over 1.5x the leader")
        .says(&format!("*1 {}", d.candidates[1].label));
    // Every candidate on its own line: label, origin and median.
    let out = r.stdout();
    for c in &d.candidates {
        let origin = serde_json::to_value(c.origin).unwrap();
        let median = format!("median {:.4}", c.median_ms.unwrap());
        let line = out.lines().find(|l| l.contains(&format!("{} ", c.label)));
        let line = line.unwrap_or_else(|| panic!("no line for {}: {out}", c.label));
        assert!(line.contains(origin.as_str().unwrap()), "{line}");
        assert!(line.contains(&median), "{line}");
    }
    // Without `.json`, and by path.
    run(&env, &["show", name.trim_end_matches(".json")])
        .expect(0)
        .says("gather-v1");
    let r = run(&env, &["show", path.to_str().unwrap(), "--json"]);
    r.expect(0);
    let shown: Decision = serde_json::from_value(r.json()["decision"].clone()).unwrap();
    assert_eq!(shown, d);
    run(&env, &["show", "nothing-here.json"])
        .expect(6)
        .says("nothing-here.json")
        .says("cargo tune decisions list");
}

#[test]
fn clear_lists_without_yes_and_removes_only_local_decisions_of_the_kernel() {
    let env = Env::new();
    let v1 = save_in(&local(&env), &decision("gather-v1", 1), false).unwrap();
    let v3 = save_in(&local(&env), &decision("gather-v3", 2), false).unwrap();
    fs::write(local(&env).join("junk.json"), "not json").unwrap();
    save_in(&project(&env), &decision("gather-v1", 1), false).unwrap();
    let (local_before, project_before) = (snapshot(&local(&env)), snapshot(&project(&env)));
    assert_eq!(local_before.len(), 3);

    // Without --yes: a list, nothing removed.
    run(&env, &["clear"])
        .expect(0)
        .says("would remove 3")
        .says(&name_of(&v1))
        .says("junk.json")
        .says("--yes");
    let r = run(&env, &["clear", "--kernel", "gather-v1", "--json"]);
    r.expect(0);
    assert_eq!(r.json()["dry_run"], true);
    assert_eq!(r.json()["paths"], serde_json::json!([v1]));
    assert_eq!(snapshot(&local(&env)), local_before);

    // --yes --kernel: that kernel's local decision only.
    run(&env, &["clear", "--yes", "--kernel", "gather-v1"])
        .expect(0)
        .says("removed 1");
    assert!(!v1.exists());
    assert!(v3.exists());
    assert!(local(&env).join("junk.json").exists());
    assert_eq!(snapshot(&project(&env)), project_before);

    // A plain --yes removes the rest, junk included; the project's stays.
    let r = run(&env, &["clear", "--yes", "--json"]);
    r.expect(0);
    assert_eq!(r.json()["count"], 2);
    assert!(snapshot(&local(&env)).is_empty());
    assert_eq!(snapshot(&project(&env)), project_before);
}

#[test]
fn export_copies_bytes_into_a_folder_and_never_overwrites_a_different_file() {
    let env = Env::new();
    let src = save_in(&local(&env), &decision("gather-v1", 1), false).unwrap();
    let name = name_of(&src);
    fs::create_dir_all(project(&env)).unwrap();
    let project = project(&env);
    run(&env, &["export", &name, "-o", project.to_str().unwrap()])
        .expect(0)
        .says("exported");
    let shipped = project.join(&name);
    assert_eq!(fs::read(&shipped).unwrap(), fs::read(&src).unwrap());
    // Exporting the same bytes again is fine; no temporary file is left behind.
    run(&env, &["export", &name, "-o", project.to_str().unwrap()]).expect(0);
    assert_eq!(snapshot(&project).len(), 1, "{:?}", snapshot(&project));

    // A different decision under that name is not overwritten without --force.
    let other = env.dir.path().join("other.json");
    fs::write(&other, "mine").unwrap();
    run(&env, &["export", &name, "-o", other.to_str().unwrap()])
        .expect(5)
        .says("other.json")
        .says("--force");
    assert_eq!(fs::read(&other).unwrap(), b"mine");
    run(
        &env,
        &["export", &name, "-o", other.to_str().unwrap(), "--force"],
    )
    .expect(0);
    assert_eq!(fs::read(&other).unwrap(), fs::read(&src).unwrap());
}

#[test]
fn export_refuses_an_invalid_decision() {
    let env = Env::new();
    let d = decision("gather-v1", 1);
    let mut edited = serde_json::to_value(&d).unwrap();
    edited["chosen"] = serde_json::json!(17);
    fs::create_dir_all(local(&env)).unwrap();
    let bad = local(&env).join(d.key.file_name());
    fs::write(&bad, serde_json::to_vec(&edited).unwrap()).unwrap();
    let out = env.dir.path().join("out.json");
    run(
        &env,
        &["export", &name_of(&bad), "-o", out.to_str().unwrap()],
    )
    .expect(4)
    .says(&name_of(&bad))
    .says("chosen 17");
    assert!(!out.exists());
    run(
        &env,
        &["export", "missing.json", "-o", out.to_str().unwrap()],
    )
    .expect(6);
}
