//! Rebuild tracking on stable Rust: a tiny crate using `grouping_plan!` is built with cargo
//! with `MEMTUNE_PROFILE` at a simulated K80 profile, then at a P100 profile (the variable
//! changed: rebuilt, another plan), then with the P100 file overwritten by the K80's (the file
//! changed: rebuilt, the K80's plan again), then with nothing changed (not rebuilt). Each
//! printed plan equals the planner's for that profile.
//!
//! Slow the first time (it builds `memtune` in its own target directory, kept under
//! `target/tests/macros-rebuild` for later runs).

use memtune::core::plan::grouping::GroupingWorkload;
use memtune::core::store;
use memtune::MemoryKind;
use std::path::{Path, PathBuf};
use std::process::Command;

const MAIN: &str = r#"
const PLAN: memtune::GroupingConsts = memtune::grouping_plan!(
    table = 8 GiB,
    table_memory = device,
    input_memory = pinned
);

fn main() {
    println!("{} {} {} {}", PLAN.profile.digest, PLAN.passes, PLAN.scope_bytes, PLAN.approach.as_str());
}
"#;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is in the workspace")
        .to_path_buf()
}

/// What the crate prints for a profile file: the planner's decision and the digest.
fn expected(profile: &Path) -> String {
    let profile = store::load_path(profile).expect("fixture");
    let workload = GroupingWorkload {
        table_bytes: 8 << 30,
        table_memory: MemoryKind::Device,
        input_memory: MemoryKind::Pinned,
        input_bytes: None,
    };
    let plan = memtune::core::plan::grouping_untimed(&profile, &workload).expect("plannable");
    format!(
        "{} {} {} {}",
        profile.digest,
        plan.passes,
        plan.scope_bytes,
        plan.approach.as_str()
    )
}

struct Probe {
    dir: PathBuf,
    target: PathBuf,
    cache: PathBuf,
}

impl Probe {
    /// Builds with `MEMTUNE_PROFILE=profile`; returns what it printed and whether the crate
    /// itself was compiled.
    fn build_and_run(&self, profile: &Path) -> (String, bool) {
        let mut cargo = Command::new(env!("CARGO"));
        cargo
            .args(["build", "--manifest-path"])
            .arg(self.dir.join("Cargo.toml"))
            .env("CARGO_TARGET_DIR", &self.target)
            .env("MEMTUNE_PROFILE", profile)
            .env("MEMTUNE_CACHE_DIR", &self.cache)
            .env_remove("MEMTUNE_OFFLINE")
            .env_remove("MEMTUNE_DEVICE");
        let out = cargo.output().expect("run cargo");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        let compiled = stderr.contains("Compiling memtune-rebuild-probe");
        let run = Command::new(self.target.join("debug/memtune-rebuild-probe"))
            .output()
            .expect("run the probe");
        assert!(run.status.success());
        (
            String::from_utf8_lossy(&run.stdout).trim().to_string(),
            compiled,
        )
    }
}

#[test]
fn editing_the_profile_or_its_variable_rebuilds_with_the_new_plan() {
    let ws = workspace();
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("probe");
    std::fs::create_dir_all(dir.join("src")).expect("probe dir");
    let manifest = format!(
        "[package]\nname = \"memtune-rebuild-probe\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
         [dependencies]\nmemtune = {{ path = {:?} }}\n\n[workspace]\n",
        ws.join("runtime")
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).expect("manifest");
    std::fs::write(dir.join("src/main.rs"), MAIN).expect("main.rs");
    // The workspace's lock: the same dependency versions, nothing to resolve.
    std::fs::copy(ws.join("Cargo.lock"), dir.join("Cargo.lock")).expect("Cargo.lock");
    let cache = tmp.path().join("empty-cache");
    std::fs::create_dir_all(&cache).expect("cache dir");
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is <target>/tmp")
        .join("tests/macros-rebuild");
    let probe = Probe { dir, target, cache };

    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let k80 = tmp.path().join("k80.json");
    let p100 = tmp.path().join("p100.json");
    std::fs::copy(fixtures.join("k80.json"), &k80).expect("copy k80");
    std::fs::copy(fixtures.join("p100.json"), &p100).expect("copy p100");
    let (want_k80, want_p100) = (expected(&k80), expected(&p100));
    assert_ne!(want_k80, want_p100);

    let (printed, _) = probe.build_and_run(&k80);
    assert_eq!(printed, want_k80);

    let (printed, compiled) = probe.build_and_run(&p100);
    assert!(compiled, "changing MEMTUNE_PROFILE must rebuild");
    assert_eq!(printed, want_p100);

    // Let the edit's mtime be clearly after the last build's.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    std::fs::copy(&k80, &p100).expect("overwrite p100 with k80");
    let (printed, compiled) = probe.build_and_run(&p100);
    assert!(compiled, "editing the profile file must rebuild");
    assert_eq!(printed, want_k80);

    let (printed, compiled) = probe.build_and_run(&p100);
    assert!(!compiled, "nothing changed: no rebuild");
    assert_eq!(printed, want_k80);
}
