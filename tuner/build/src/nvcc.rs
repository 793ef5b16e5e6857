//! nvcc through `cc`: cc finds and configures the compiler (`NVCC`, `-ccbin` with the host
//! C++ compiler, target flags, its own `rerun-if-env-changed`), we add the device-code
//! flags and run it once per output. Where no nvcc is found, nothing is compiled here and
//! the runtime compiles the embedded sources with NVRTC.

use super::cargo::Instructions;
use super::error::BuildError;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `MEMTUNE_NVCC=0` skips nvcc even where it exists (NVRTC at run time instead).
pub const ENV_NVCC_SWITCH: &str = "MEMTUNE_NVCC";
/// Where a CUDA toolkit may be; cc reads `NVCC` itself.
const TOOLKIT_VARS: [&str; 3] = ["MEMTUNE_CUDA_PREFIX", "CUDA_HOME", "CUDA_PATH"];

/// A working nvcc.
#[derive(Debug, Clone)]
pub struct Nvcc {
    path: PathBuf,
    /// The `release X.Y, VX.Y.Z` part of `nvcc --version`.
    pub version: String,
}

/// Finds nvcc: `NVCC`, else the toolkit variables, `PATH`, `/usr/local/cuda`. `None` when
/// there is none (not an error: NVRTC compiles at run time).
pub fn find(cargo: &mut Instructions) -> Option<Nvcc> {
    if cargo
        .var(ENV_NVCC_SWITCH)
        .is_some_and(|v| v == "0" || v == "false")
    {
        return None;
    }
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(explicit) = cargo.var("NVCC") {
        candidates.push(PathBuf::from(explicit));
    }
    for var in TOOLKIT_VARS {
        if let Some(root) = cargo.var(var) {
            let root = PathBuf::from(root);
            // A prefix filled by scripts/install-cuda.sh --nvcc, or a toolkit root.
            candidates.push(root.join("nvidia/cu13/bin/nvcc"));
            candidates.push(root.join("bin/nvcc"));
        }
    }
    candidates.push(PathBuf::from("nvcc"));
    candidates.push(PathBuf::from("/usr/local/cuda/bin/nvcc"));
    cargo.read_elsewhere(&["PATH"]);
    candidates.into_iter().find_map(|path| {
        let out = Command::new(&path).arg("--version").output().ok()?;
        if !out.status.success() {
            return None;
        }
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let version = text
            .lines()
            .find_map(|l| l.split_once("release ").map(|(_, v)| v.trim().to_string()))
            .unwrap_or_else(|| "unknown version".into());
        Some(Nvcc { path, version })
    })
}

/// What to produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One PTX file per source and architecture.
    Ptx,
    /// One fatbin per source: SASS for every architecture, PTX of the lowest.
    Fatbin,
}

/// One nvcc run.
pub struct Job<'a> {
    pub file: &'a Path,
    pub include_dirs: &'a [PathBuf],
    pub defines: &'a [(String, String)],
    /// Architectures, lowest first.
    pub archs: &'a [String],
    pub format: Format,
    pub output: &'a Path,
}

impl Nvcc {
    /// Compiles `job` through the compiler `cc` configures for `build`.
    pub fn run(&self, build: &cc::Build, job: &Job) -> Result<(), BuildError> {
        let mut build = build.clone();
        build.cuda(true).env("NVCC", &self.path);
        let tool = build.try_get_compiler()?;
        let mut cmd = tool.to_command();
        cmd.arg("--std=c++17");
        let arch_label;
        match job.format {
            Format::Ptx => {
                let arch = &job.archs[0];
                arch_label = arch.clone();
                cmd.arg("--ptx").arg(format!("-arch={arch}"));
            }
            Format::Fatbin => {
                arch_label = job.archs.join(",");
                cmd.arg("--fatbin");
                for arch in job.archs {
                    let n = arch.trim_start_matches("sm_");
                    cmd.arg(format!("-gencode=arch=compute_{n},code={arch}"));
                }
                // PTX of the lowest, so newer GPUs than any built can JIT it.
                let lowest = job.archs[0].trim_start_matches("sm_");
                cmd.arg(format!(
                    "-gencode=arch=compute_{lowest},code=compute_{lowest}"
                ));
            }
        }
        for dir in job.include_dirs {
            let mut flag = OsString::from("-I");
            flag.push(dir);
            cmd.arg(flag);
        }
        for (name, value) in job.defines {
            cmd.arg(format!("-D{name}={value}"));
        }
        cmd.arg("-o").arg(job.output).arg(job.file);
        let out = cmd.output().map_err(|e| {
            BuildError::io(
                &self.path,
                "running nvcc",
                "set NVCC to a working nvcc, or MEMTUNE_NVCC=0",
                e,
            )
        })?;
        if !out.status.success() {
            let mut log = String::from_utf8_lossy(&out.stderr).into_owned();
            log.push_str(&String::from_utf8_lossy(&out.stdout));
            return Err(BuildError::Nvcc {
                file: job.file.to_path_buf(),
                arch: arch_label,
                status: out.status.to_string(),
                log,
            });
        }
        Ok(())
    }
}
