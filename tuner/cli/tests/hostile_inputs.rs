//! Inputs a hostile or careless user names: FIFOs and devices that never end, files too
//! large, non-UTF-8 names, a missing simulator file, a BOM, duplicate keys, and the
//! environment (`MEMTUNE_CACHE_DIR=""`, `MEMTUNE_DEVICE`). Each is refused quickly with a
//! clear message and its documented exit code, or works.

use memtune_tests::{json, profile, uuid};
mod common;

use common::{run_within, Env, Run};
use std::ffi::OsStr;
use std::fs::{self, File};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Every input here must be answered within this.
const QUICK: Duration = Duration::from_secs(10);

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo").arg(path).status().unwrap().success();
    assert!(ok, "mkfifo {}", path.display());
}

/// `args` with `path` appended, run with the deadline.
fn with_path(env: &Env, args: &[&str], path: &Path) -> Run {
    let mut cmd = env.cmd(args);
    cmd.arg(path);
    run_within(cmd, QUICK)
}

/// A path holding byte 0xff: not UTF-8.
fn non_utf8(dir: &Path, prefix: &str) -> PathBuf {
    let mut name = prefix.as_bytes().to_vec();
    name.push(0xff);
    name.extend_from_slice(b".json");
    dir.join(OsStr::from_bytes(&name))
}

/// Every verb that reads a profile file, on `path`.
fn profile_readers(env: &Env, path: &Path) -> Vec<Run> {
    [
        &["verify"][..],
        &["import"],
        &["show", "--path"],
        &["plan", "sampling", "--region", "1GiB", "--profile"],
        &["reuse", "-", "--profile"],
        &["probe", "-o", "-", "--simulate"],
    ]
    .iter()
    .map(|args| with_path(env, args, path))
    .collect()
}

#[test]
fn a_fifo_as_an_input_is_refused_without_hanging() {
    let env = Env::new();
    let fifo = env.dir.path().join("in.fifo");
    mkfifo(&fifo);
    for r in profile_readers(&env, &fifo) {
        r.expect(4).says("FIFO").says("regular file");
    }
    with_path(&env, &["decisions", "show"], &fifo)
        .expect(4)
        .says("FIFO");
    assert!(!env.cache().join(format!("{}.json", uuid(1))).exists());
}

#[test]
fn dev_zero_and_oversize_inputs_are_refused_quickly() {
    let env = Env::new();
    let start = Instant::now();
    for r in profile_readers(&env, Path::new("/dev/zero")) {
        r.expect(4).says("/dev/zero is a character device");
    }
    // Sparse files past each cap: refused by their size, not read.
    let big = env.dir.path().join("big.json");
    File::create(&big).unwrap().set_len(65 << 20).unwrap();
    with_path(&env, &["verify"], &big)
        .expect(4)
        .says("larger than");
    let big_sim = env.dir.path().join("big-sim.json");
    File::create(&big_sim).unwrap().set_len(2 << 20).unwrap();
    with_path(&env, &["probe", "-o", "-", "--simulate"], &big_sim)
        .expect(4)
        .says("larger than")
        .says("simulator config");
    assert!(start.elapsed() < Duration::from_secs(30));
}

#[test]
fn a_missing_simulator_file_exits_6() {
    let env = Env::new();
    let missing = env.dir.path().join("none.json");
    with_path(&env, &["probe", "-o", "out.json", "--simulate"], &missing)
        .expect(6)
        .says("none.json")
        .says("no such file");
    assert!(!env.dir.path().join("project/out.json").exists());
}

#[test]
fn non_utf8_input_paths_work() {
    let env = Env::new();
    let file = non_utf8(env.dir.path(), "good-");
    fs::write(&file, json(&profile(&uuid(3)))).unwrap();
    with_path(&env, &["verify"], &file).expect(0);
    with_path(&env, &["show", "--path"], &file).expect(0);
    with_path(&env, &["import"], &file).expect(0);
    let sim = non_utf8(env.dir.path(), "sim-");
    fs::write(
        &sim,
        memtune_probe::sim::SimConfig::builtin_json("k80").unwrap(),
    )
    .unwrap();
    let mut cmd = env.cmd(&["probe", "--no-random-access", "-o", "-", "--simulate"]);
    cmd.arg(&sim);
    run_within(cmd, Duration::from_secs(60)).expect(0);
    // Missing, it is still named.
    let missing = non_utf8(env.dir.path(), "missing-");
    with_path(&env, &["verify"], &missing)
        .expect(6)
        .says("missing-");
}

#[test]
fn an_empty_cache_dir_variable_is_an_error_that_says_so() {
    let env = Env::new();
    let good = env.file("good.json", &json(&profile(&uuid(1))));
    let run = |args: &[&OsStr]| Run(env.cmd(args).env("MEMTUNE_CACHE_DIR", "").output().unwrap());
    for args in [
        vec![OsStr::new("list")],
        vec![OsStr::new("path")],
        vec![OsStr::new("show")],
        vec![OsStr::new("import"), good.as_os_str()],
        vec![
            OsStr::new("export"),
            OsStr::new("GPU-00000000-0000-0000-0000-000000000001"),
            OsStr::new("-o"),
            OsStr::new("x.json"),
        ],
        vec![OsStr::new("decisions"), OsStr::new("list")],
        vec![
            OsStr::new("plan"),
            OsStr::new("sampling"),
            OsStr::new("--region"),
            OsStr::new("1GiB"),
        ],
    ] {
        run(&args)
            .expect(2)
            .says("MEMTUNE_CACHE_DIR is set but empty");
    }
}

#[test]
fn memtune_device_picks_the_profile_as_in_the_runtime() {
    let env = Env::new();
    for n in [1, 2] {
        let file = env.file(&format!("p{n}.json"), &json(&profile(&uuid(n))));
        env.run(&[OsStr::new("import"), file.as_os_str()]).expect(0);
    }
    let with_device = |value: &str, args: &[&str]| {
        Run(env.cmd(args).env("MEMTUNE_DEVICE", value).output().unwrap())
    };
    // Two stored profiles and no GPU: without MEMTUNE_DEVICE no store answers.
    env.run(&["show"]).expect(0).says("built-in");
    let picked = env.cache().join(format!("{}.json", uuid(2)));
    with_device(&uuid(2), &["show"])
        .expect(0)
        .says("source: user cache")
        .says(&picked.display().to_string());
    let r = with_device(
        &uuid(2),
        &["plan", "sampling", "--region", "4GiB", "--json"],
    );
    r.expect(0);
    assert_eq!(r.json()["profile"]["uuid"], uuid(2).as_str());
    with_device("GPU-0", &["show"])
        .expect(2)
        .says("MEMTUNE_DEVICE=GPU-0")
        .says("cargo tune devices");
    // A GPU verb: the device named must be visible (none is, here).
    with_device(&uuid(2), &["chase"]).expect(3);
}

#[test]
fn a_bom_is_accepted_and_duplicate_keys_are_refused() {
    let env = Env::new();
    let text = json(&profile(&uuid(4)));
    let bom = env.dir.path().join("bom.json");
    fs::write(&bom, [b"\xEF\xBB\xBF".as_slice(), text.as_bytes()].concat()).unwrap();
    with_path(&env, &["import"], &bom).expect(0);
    // The digest is over the parsed value, so a repeated key keeps it valid: refused anyway.
    let dup = text.replacen("{", r#"{"schema": "memtune-profile/1","#, 1);
    let dup_file = env.file("dup.json", &dup);
    with_path(&env, &["verify"], &dup_file)
        .expect(4)
        .says("duplicate key");
}

#[test]
fn simulator_configs_out_of_bounds_are_refused_before_running() {
    let env = Env::new();
    let base = memtune_probe::sim::SimConfig::builtin_json("gt200").unwrap();
    let cases: [(&str, &str, &str); 3] = [
        (r#""clock_mhz": 1296"#, r#""clock_mhz": 1e308"#, "clock_mhz"),
        (
            r#""size_bytes": 32768, "line_bytes": 256, "ways": 8"#,
            r#""size_bytes": 17179869184, "line_bytes": 256, "ways": 1"#,
            "constant_caches[2].size_bytes",
        ),
        (r#""line_bytes": 64"#, r#""line_bytes": 1"#, "line_bytes"),
    ];
    for (from, to, key) in cases {
        assert!(base.contains(from), "test bug: {from}");
        let file = env.file("hostile-sim.json", &base.replacen(from, to, 1));
        let start = Instant::now();
        with_path(&env, &["probe", "-o", "-", "--simulate"], &file)
            .expect(4)
            .says(key);
        assert!(start.elapsed() < Duration::from_secs(5), "{key}");
    }
    // At the edge of the clock range the profile is one memtune reads.
    let edge = env.file(
        "edge-sim.json",
        &base.replacen(r#""clock_mhz": 1296"#, r#""clock_mhz": 10000"#, 1),
    );
    let out = env.dir.path().join("edge.json");
    let mut cmd = env.cmd(&["probe", "--no-random-access", "--simulate"]);
    cmd.arg(&edge).arg("-o").arg(&out);
    run_within(cmd, Duration::from_secs(120)).expect(0);
    with_path(&env, &["verify"], &out).expect(0);
}
