//! What the CLI tests share: a scratch project and user cache, and a finished run.
#![allow(dead_code)]

use serde_json::Value;
use std::ffi::OsStr;
use std::fs;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// A scratch project (with a Cargo.toml) and user cache, isolated from the real ones.
pub struct Env {
    pub dir: TempDir,
}

impl Env {
    pub fn new() -> Env {
        let dir = TempDir::new().unwrap();
        fs::create_dir_all(dir.path().join("project")).unwrap();
        fs::write(dir.path().join("project/Cargo.toml"), "[package]\n").unwrap();
        Env { dir }
    }
    pub fn cache(&self) -> PathBuf {
        self.dir.path().join("cache")
    }
    pub fn project(&self) -> PathBuf {
        self.dir.path().join("project/.memtune")
    }
    pub fn file(&self, name: &str, text: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        fs::write(&p, text).unwrap();
        p
    }
    pub fn cmd<S: AsRef<OsStr>>(&self, args: &[S]) -> Command {
        let mut c = Command::new(memtune_tests::cargo_tune_bin(env!(
            "CARGO_BIN_EXE_cargo-tune"
        )));
        c.args(args)
            .current_dir(self.dir.path().join("project"))
            .env("MEMTUNE_CACHE_DIR", self.cache())
            // These tests are about files: hide any GPU so the lookup chain is the same
            // on every machine.
            .env("CUDA_VISIBLE_DEVICES", "")
            .env_remove("MEMTUNE_PROFILE")
            .env_remove("MEMTUNE_OFFLINE")
            .env_remove("MEMTUNE_DEVICE");
        c
    }
    pub fn run<S: AsRef<OsStr>>(&self, args: &[S]) -> Run {
        Run(self.cmd(args).output().unwrap())
    }
}

/// Runs `cmd` to its end, failing the test (and killing it) if it takes more than `limit`:
/// for inputs that could hang. Its output is read while it runs.
pub fn run_within(mut cmd: Command, limit: Duration) -> Run {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let drain = |mut from: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            from.read_to_end(&mut bytes).unwrap();
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > limit {
            child.kill().unwrap();
            child.wait().unwrap();
            let stderr = stderr.join().unwrap();
            panic!(
                "still running after {limit:?}: {cmd:?}\nstderr:\n{}",
                String::from_utf8_lossy(&stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Run(Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    })
}

pub struct Run(pub Output);

impl Run {
    pub fn code(&self) -> i32 {
        self.0.status.code().unwrap_or(-1)
    }
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.0.stdout).into_owned()
    }
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.0.stderr).into_owned()
    }
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout()).unwrap_or_else(|e| panic!("{e}: {}", self.stdout()))
    }
    #[track_caller]
    pub fn expect(&self, code: i32) -> &Self {
        assert_eq!(
            self.code(),
            code,
            "stdout:\n{}\nstderr:\n{}",
            self.stdout(),
            self.stderr()
        );
        self
    }
    #[track_caller]
    pub fn says(&self, needle: &str) -> &Self {
        let all = self.stdout() + &self.stderr();
        assert!(all.contains(needle), "expected {needle:?} in:\n{all}");
        self
    }
}
