//! What the CLI tests share: a scratch project and user cache, a finished run, and Ctrl-C.
#![allow(dead_code)]

use serde_json::Value;
use std::ffi::OsStr;
use std::fs;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// `cargo tune plan` arguments of an 8 GiB grouping table in device memory, its input
/// pinned.
pub const GROUPING_8GIB: [&str; 7] = [
    "grouping",
    "--table",
    "8GiB",
    "--table-memory",
    "device",
    "--input-memory",
    "pinned",
];

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
    /// Runs `args`, which need a GPU: with the GPUs visible when GPU tests run
    /// (`MEMTUNE_GPU_TESTS=1`), hidden as in every other test otherwise. The JSON output of
    /// a run that succeeded (as it must with GPU tests on); `None` for a run without a GPU,
    /// which must exit 3 naming `needs` on stderr.
    #[track_caller]
    pub fn gpu_json(&self, args: &[&str], needs: &str) -> Option<Value> {
        let gpu = std::env::var("MEMTUNE_GPU_TESTS").as_deref() == Ok("1");
        let mut cmd = self.cmd(args);
        if gpu {
            cmd.env_remove("CUDA_VISIBLE_DEVICES");
        }
        let r = Run(cmd.output().expect("cargo-tune runs"));
        if gpu || r.code() == 0 {
            r.expect(0);
            Some(r.json())
        } else {
            r.expect(3).says_on_stderr(needs);
            None
        }
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

/// Sends SIGINT (what Ctrl-C sends) to `child`; returns when it was sent.
pub fn send_sigint(child: &Child) -> Instant {
    let sent = Instant::now();
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    sent
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
    pub fn says_on_stderr(&self, needle: &str) -> &Self {
        assert!(self.stderr().contains(needle), "{}", self.stderr());
        self
    }
    #[track_caller]
    pub fn says(&self, needle: &str) -> &Self {
        let all = self.stdout() + &self.stderr();
        assert!(all.contains(needle), "expected {needle:?} in:\n{all}");
        self
    }
}
