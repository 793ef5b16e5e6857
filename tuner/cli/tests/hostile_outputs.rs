//! Outputs a hostile or careless user names: a device, a FIFO, a symbolic link, a full
//! disk, a folder that is a file, a non-UTF-8 name. Nothing but a regular file (or stdout
//! for `-`) is ever written, what is refused is left as it was, and every failure exits
//! non-zero with the path and the fix.

use memtune_core::plan::SamplingWorkload;
use memtune_core::tune::session::{self, Budget};
use memtune_core::tune::{candidates_digest, save_in, Decision, Tunable, TuneKey};
use memtune_core::MemoryKind;
use memtune_tests::{json, profile, uuid};
mod common;

use common::{run_within, Env};
use serde_json::Value;
use std::ffi::OsStr;
use std::fs::{self, File};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, FileTypeExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// A path holding byte 0xff: not UTF-8.
fn non_utf8(dir: &Path, prefix: &str) -> PathBuf {
    let mut name = prefix.as_bytes().to_vec();
    name.push(0xff);
    name.extend_from_slice(b".json");
    dir.join(OsStr::from_bytes(&name))
}

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo").arg(path).status().unwrap().success();
    assert!(ok, "mkfifo {}", path.display());
}

/// A stored (imported) profile's UUID.
fn stored(env: &Env) -> String {
    let file = env.file("good.json", &json(&profile(&uuid(1))));
    env.run(&[OsStr::new("import"), file.as_os_str()]).expect(0);
    uuid(1)
}

fn is_char_device(path: &str) -> bool {
    fs::metadata(path).unwrap().file_type().is_char_device()
}

#[test]
fn dev_null_as_output_is_refused_and_stays_a_device() {
    let env = Env::new();
    env.run(&["probe", "--simulate", "p100", "-o", "/dev/null"])
        .expect(5)
        .says("/dev/null is a character device")
        .says("`-` to write to stdout");
    assert!(is_char_device("/dev/null"));
    let id = stored(&env);
    env.run(&["export", &id, "-o", "/dev/null"])
        .expect(5)
        .says("/dev/null");
    assert!(is_char_device("/dev/null"));
}

#[test]
fn export_to_dev_full_fails_and_a_failed_stdout_write_is_an_error() {
    let env = Env::new();
    let id = stored(&env);
    let r = env.run(&["export", &id, "-o", "/dev/full"]);
    assert_ne!(r.code(), 0, "{}", r.stderr());
    assert!(is_char_device("/dev/full"));
    // `-o -` with stdout on a full disk: the write error is reported.
    let out = env
        .cmd(&["export", &id, "-o", "-"])
        .stdout(File::create("/dev/full").unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("No space left"));
}

#[test]
fn dash_writes_the_profile_to_stdout_and_the_summary_to_stderr() {
    let env = Env::new();
    let r = env.run(&[
        "probe",
        "--simulate",
        "k80",
        "-o",
        "-",
        "--no-random-access",
    ]);
    r.expect(0);
    let doc: Value = serde_json::from_str(&r.stdout()).unwrap();
    assert_eq!(doc["schema"], "memtune-profile/1");
    assert!(r.stderr().contains("profile written to stdout"));
    let id = stored(&env);
    let r = env.run(&["export", &id, "-o", "-"]);
    r.expect(0);
    let doc: Value = serde_json::from_str(&r.stdout()).unwrap();
    assert_eq!(doc["device"]["uuid"], id.as_str());
    env.run(&["export", &id, "-o", "-", "--json"])
        .expect(2)
        .says("stdout");
}

#[test]
fn symlink_is_refused_unless_followed() {
    let env = Env::new();
    let target = env.file("target.json", "keep me");
    let link = env.dir.path().join("link.json");
    symlink(&target, &link).unwrap();
    let args = |extra: &[&str]| {
        let mut v = vec!["probe", "--simulate", "k80", "--no-random-access", "-o"];
        v.push(link.to_str().unwrap());
        v.extend_from_slice(extra);
        env.run(&v)
    };
    args(&[])
        .expect(5)
        .says("symbolic link")
        .says("--follow-symlinks");
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(fs::read_to_string(&target).unwrap(), "keep me");
    args(&["--follow-symlinks"]).expect(0);
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    env.run(&["verify", target.to_str().unwrap()]).expect(0);
}

#[test]
fn fifo_as_output_is_refused_without_hanging_and_stays_a_fifo() {
    let env = Env::new();
    let fifo = env.dir.path().join("out.fifo");
    mkfifo(&fifo);
    let cmd = env.cmd(&[
        OsStr::new("probe"),
        OsStr::new("--simulate"),
        OsStr::new("p100"),
        OsStr::new("-o"),
        fifo.as_os_str(),
    ]);
    run_within(cmd, Duration::from_secs(30))
        .expect(5)
        .says("FIFO");
    assert!(fs::metadata(&fifo).unwrap().file_type().is_fifo());
    let id = stored(&env);
    let mut cmd = env.cmd(&["export", &id, "-o"]);
    cmd.arg(&fifo);
    run_within(cmd, Duration::from_secs(10)).expect(5);
    assert!(fs::metadata(&fifo).unwrap().file_type().is_fifo());
}

#[test]
fn plot_and_bench_folders_must_be_folders() {
    let env = Env::new();
    let probe_plotting_to = |plots: &Path| {
        env.run(&[
            "probe",
            "--simulate",
            "k80",
            "-o",
            "-",
            "--plot",
            plots.to_str().unwrap(),
        ])
    };
    let file = env.file("not-a-dir", "x");
    probe_plotting_to(&file)
        .expect(5)
        .says("not-a-dir")
        .says("directory");
    assert_eq!(fs::read_to_string(&file).unwrap(), "x");
    // Refused before any GPU is looked for.
    env.run(&["bench", "sampling", "--out", file.to_str().unwrap()])
        .expect(5)
        .says("not-a-dir");
    // A chart name taken by a link is refused too.
    let plots = env.dir.path().join("plots");
    fs::create_dir(&plots).unwrap();
    symlink(&file, plots.join("tlb-device.svg")).unwrap();
    probe_plotting_to(&plots).expect(5).says("tlb-device.svg");
    assert_eq!(fs::read_to_string(&file).unwrap(), "x");
}

/// A valid decision file, as the autotuner writes it.
fn decision_file(env: &Env) -> PathBuf {
    let workload = SamplingWorkload {
        region_bytes: 3 << 30,
        memory: MemoryKind::Pinned,
        reads_per_thread: 64,
    };
    let c = workload
        .candidates(&memtune_core::default::builtin())
        .unwrap();
    let key = TuneKey {
        device_uuid: uuid(1),
        kernel: "k".into(),
        class: workload.class(),
        profile_digest: "sha256:00".into(),
        memtune_version: "0.1.0".into(),
        candidates_digest: candidates_digest(c.iter().map(|c| c.label.as_str())),
    };
    let out = session::run(c.len(), &Budget::default(), |i| Ok(1.0 + i as f64));
    let d = Decision::from_outcome(key, &c, &out, 1_700_000_000);
    save_in(&env.dir.path().join("decisions"), &d, true).unwrap()
}

#[test]
fn decisions_export_refuses_a_device_a_fifo_and_a_link() {
    let env = Env::new();
    let file = decision_file(&env);
    let export = |to: &Path, extra: &[&str]| {
        let mut cmd = env.cmd(&[OsStr::new("decisions"), OsStr::new("export")]);
        cmd.arg(&file).arg("-o").arg(to).args(extra);
        run_within(cmd, Duration::from_secs(10))
    };
    export(Path::new("/dev/null"), &["--force"])
        .expect(5)
        .says("character device");
    assert!(is_char_device("/dev/null"));
    let fifo = env.dir.path().join("d.fifo");
    mkfifo(&fifo);
    export(&fifo, &["--force"]).expect(5).says("FIFO");
    assert!(fs::metadata(&fifo).unwrap().file_type().is_fifo());
    let target = env.file("other.json", "keep");
    let link = env.dir.path().join("d-link.json");
    symlink(&target, &link).unwrap();
    export(&link, &["--force"]).expect(5).says("symbolic link");
    assert_eq!(fs::read_to_string(&target).unwrap(), "keep");
    let r = export(Path::new("-"), &[]);
    r.expect(0);
    assert_eq!(r.0.stdout, fs::read(&file).unwrap());
}

#[test]
fn non_utf8_output_paths_work() {
    let env = Env::new();
    let out = non_utf8(env.dir.path(), "profile-");
    let mut plots = non_utf8(env.dir.path(), "plots-");
    plots.set_extension("");
    let r = env.run(&[
        OsStr::new("probe"),
        OsStr::new("--simulate"),
        OsStr::new("k80"),
        OsStr::new("--json"),
        OsStr::new("-o"),
        out.as_os_str(),
        OsStr::new("--plot"),
        plots.as_os_str(),
    ]);
    r.expect(0);
    assert!(r.json()["path"]
        .as_str()
        .unwrap()
        .starts_with(env.dir.path().join("profile-").to_str().unwrap()));
    assert!(out.is_file());
    assert!(plots.join("tlb-device.svg").is_file());
    env.run(&[OsStr::new("verify"), out.as_os_str()]).expect(0);
    let id = stored(&env);
    let copy = non_utf8(env.dir.path(), "export-");
    let r = env.run(&[
        OsStr::new("export"),
        OsStr::new(&id),
        OsStr::new("--json"),
        OsStr::new("-o"),
        copy.as_os_str(),
    ]);
    r.expect(0);
    assert!(copy.is_file());
    // The same bytes as any other output: stdout to a pipe read by the test.
    let out = env
        .cmd(&[OsStr::new("verify"), copy.as_os_str()])
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}
