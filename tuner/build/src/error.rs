//! Errors of the build helper. Each names the file or variable involved and the fix.

use memtune_core::plan::PlanError;
use memtune_core::ProfileError;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("memtune build: {var} is not set; call Kernels::{setter} when running outside a build script")]
    NotInBuildScript {
        var: &'static str,
        setter: &'static str,
    },

    #[error("memtune build: the profile lookup failed: {0}")]
    Profile(#[from] ProfileError),

    #[error("memtune build: {var}={value:?}: {why}")]
    BadEnv {
        var: &'static str,
        value: String,
        why: String,
    },

    #[error("memtune build: plan `{name}` for profile {profile}: {source}; fix the workload given to Kernels::{method}")]
    Plan {
        name: String,
        method: &'static str,
        profile: String,
        #[source]
        source: Box<PlanError>,
    },

    #[error("memtune build: define `{name}`: {why}")]
    BadDefine { name: String, why: String },

    #[error("memtune build: architecture `{arch}` is not of the form sm_XY (e.g. sm_90); fix Kernels::arch or MEMTUNE_CUDA_ARCHS")]
    BadArch { arch: String },

    #[error("memtune build: {path}: {action} failed: {source}; {fix}")]
    Io {
        path: PathBuf,
        action: &'static str,
        fix: &'static str,
        #[source]
        source: std::io::Error,
    },

    #[error("memtune build: two kernel files are both named `{name}`; NVRTC and the embedded table know sources by file name: rename one")]
    DuplicateName { name: String },

    #[error("memtune build: nvcc: {0}; set NVCC to a working nvcc, or MEMTUNE_NVCC=0 to compile with NVRTC at run time")]
    Cc(#[from] cc::Error),

    #[error("memtune build: nvcc failed on {file} for {arch} ({status}):\n{log}\nfix the source, or set MEMTUNE_NVCC=0 to compile with NVRTC at run time")]
    Nvcc {
        file: PathBuf,
        arch: String,
        status: String,
        log: String,
    },

    #[error("memtune build: bindings for {header}: {detail}")]
    Bindings { header: PathBuf, detail: String },
}

impl BuildError {
    pub(crate) fn io(
        path: impl Into<PathBuf>,
        action: &'static str,
        fix: &'static str,
        source: std::io::Error,
    ) -> Self {
        BuildError::Io {
            path: path.into(),
            action,
            fix,
            source,
        }
    }
}
