//! Finding NVRTC 13 without `LD_LIBRARY_PATH`.
//!
//! cudarc (feature `dynamic-loading`) dlopens NVRTC by bare names (`libnvrtc.so`, ...,
//! `libnvrtc.so.13`) on first use and panics when none loads. [`ensure_nvrtc`] runs first:
//! when the bare soname does not resolve, it loads `libnvrtc.so.13` by absolute path from
//! the usual places and keeps it loaded for the process lifetime. glibc's `dlopen` matches
//! a bare name against the `DT_SONAME` of libraries already loaded, so cudarc's later
//! `dlopen("libnvrtc.so.13")` returns that library instead of failing.
//!
//! Caveat: cudarc tries the unversioned `libnvrtc.so` first, so an NVRTC of another major
//! version reachable under that name would win; [`ensure_nvrtc`] detects this through
//! `nvrtcVersion` and reports it as [`ToolchainError::WrongVersion`].

use std::ffi::c_int;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libloading::Library;

/// The soname cudarc's `cuda-13000` bindings need.
pub const NVRTC_SONAME: &str = "libnvrtc.so.13";
/// NVRTC 13.0 dlopens this by bare name when it compiles (it holds the builtin headers).
pub const BUILTINS_SONAME: &str = "libnvrtc-builtins.so.13.0";
/// The NVRTC major version memtune is built and pinned for.
pub const NVRTC_MAJOR: i32 = 13;

/// Where NVRTC came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NvrtcLocation {
    /// `libnvrtc.so.13` resolved by bare name (`LD_LIBRARY_PATH`, ldconfig cache, ...).
    SearchPath { version: (i32, i32) },
    /// Loaded from this directory by absolute path; stays loaded until the process exits.
    Preloaded { dir: PathBuf, version: (i32, i32) },
}

impl NvrtcLocation {
    /// NVRTC's (major, minor) version.
    pub fn version(&self) -> (i32, i32) {
        match self {
            Self::SearchPath { version } | Self::Preloaded { version, .. } => *version,
        }
    }
}

/// Why NVRTC is not usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolchainError {
    #[error(
        "NVRTC 13 ({NVRTC_SONAME}) not found. Looked at:\n{}\
         Fix: run scripts/install-cuda.sh, or set CUDA_HOME to a CUDA 13 toolkit.",
        bullet_list(.looked_at)
    )]
    NotFound {
        /// Every place tried, with what happened there.
        looked_at: Vec<String>,
    },
    #[error(
        "NVRTC {found_major}.{found_minor} was loaded, but memtune needs NVRTC {NVRTC_MAJOR}.x \
         (cudarc loads the first of libnvrtc.so, ..., {NVRTC_SONAME} it finds). \
         Fix: run scripts/install-cuda.sh, or set CUDA_HOME to a CUDA 13 toolkit, and remove \
         the other NVRTC from LD_LIBRARY_PATH."
    )]
    WrongVersion { found_major: i32, found_minor: i32 },
    #[error("nvrtcVersion failed: {0}")]
    Version(String),
}

fn bullet_list(items: &[String]) -> String {
    items.iter().fold(String::new(), |mut s, item| {
        let _ = writeln!(s, "  - {item}");
        s
    })
}

/// Libraries loaded here; the static is never dropped, so they stay loaded.
struct Loaded {
    location: NvrtcLocation,
    _libs: Vec<Library>,
}

/// Makes NVRTC 13 loadable by cudarc; call before any `cudarc::nvrtc` function.
///
/// The search runs once per process; later calls return the first answer.
pub fn ensure_nvrtc() -> Result<NvrtcLocation, ToolchainError> {
    static STATE: OnceLock<Result<Loaded, ToolchainError>> = OnceLock::new();
    match STATE.get_or_init(find_and_load) {
        Ok(loaded) => Ok(loaded.location.clone()),
        Err(e) => Err(e.clone()),
    }
}

fn find_and_load() -> Result<Loaded, ToolchainError> {
    let mut looked_at = Vec::new();

    // SAFETY: loading NVRTC runs no initialisers with preconditions on our side.
    match unsafe { Library::new(NVRTC_SONAME) } {
        Ok(lib) => {
            let version = nvrtc_version()?;
            let location = NvrtcLocation::SearchPath { version };
            return Ok(Loaded {
                location,
                _libs: vec![lib],
            });
        }
        Err(e) => looked_at.push(format!(
            "{NVRTC_SONAME} by bare name (LD_LIBRARY_PATH, ldconfig): {}",
            describe(&e)
        )),
    }

    for dir in candidate_dirs() {
        let path = dir.join(NVRTC_SONAME);
        if !path.exists() {
            looked_at.push(format!("{}: no such file", path.display()));
            continue;
        }
        match load_from(&dir) {
            Ok(libs) => {
                let version = nvrtc_version()?;
                let location = NvrtcLocation::Preloaded { dir, version };
                return Ok(Loaded {
                    location,
                    _libs: libs,
                });
            }
            Err(e) => looked_at.push(format!("{}: {}", path.display(), describe(&e))),
        }
    }
    Err(ToolchainError::NotFound { looked_at })
}

/// libloading's message with the dlerror() text it keeps as the error's source.
fn describe(e: &libloading::Error) -> String {
    match std::error::Error::source(e) {
        Some(cause) => format!("{e}: {cause}"),
        None => e.to_string(),
    }
}

/// Directories that may hold `libnvrtc.so.13`, in priority order.
fn candidate_dirs() -> Vec<PathBuf> {
    let env_dir = |var: &str| {
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let mut dirs = Vec::new();
    if let Some(prefix) = env_dir("MEMTUNE_CUDA_PREFIX") {
        // A prefix filled by scripts/install-cuda.sh, or a toolkit root.
        dirs.push(prefix.join("nvidia/cu13/lib"));
        dirs.push(prefix.join("lib64"));
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(root) = env_dir(var) {
            dirs.push(root.join("lib64"));
        }
    }
    dirs.push(PathBuf::from("/usr/local/cuda/lib64"));
    // scripts/install-cuda.sh's default prefix in this checkout (the crate is kernels/).
    if let Some(repo) = Path::new(env!("CARGO_MANIFEST_DIR")).parent() {
        dirs.push(repo.join(".cuda/nvidia/cu13/lib"));
    }
    dirs
}

/// Loads NVRTC from `dir` by absolute path, and the builtins library next to it: NVRTC
/// dlopens that by bare name only (not from its own directory), so without the preload
/// every compile fails with "failed to open libnvrtc-builtins.so.13.0".
fn load_from(dir: &Path) -> Result<Vec<Library>, libloading::Error> {
    // SAFETY: as above; the libraries are never unloaded while in use (kept forever).
    let mut libs = vec![unsafe { Library::new(dir.join(NVRTC_SONAME)) }?];
    let builtins = dir.join(BUILTINS_SONAME);
    if builtins.exists() {
        libs.push(unsafe { Library::new(builtins) }?);
    }
    Ok(libs)
}

/// Asks the NVRTC cudarc resolves for its version. Only called once `libnvrtc.so.13` is
/// known to load, so cudarc's loader cannot panic.
fn nvrtc_version() -> Result<(i32, i32), ToolchainError> {
    let (mut major, mut minor): (c_int, c_int) = (0, 0);
    // SAFETY: both pointers are valid for writes for the duration of the call.
    unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|e| ToolchainError::Version(e.to_string()))?;
    if major != NVRTC_MAJOR {
        return Err(ToolchainError::WrongVersion {
            found_major: major,
            found_minor: minor,
        });
    }
    Ok((major, minor))
}

/// For tests that compile kernels: true when NVRTC 13 is usable. Without it the test is
/// skipped with one `SKIPPED <test>` line on stderr, unless `CI=true` or
/// `MEMTUNE_REQUIRE_NVRTC=1` is set: there a missing toolchain fails the test, naming it, so
/// that CI never skips silently.
#[doc(hidden)]
pub fn nvrtc_or_skip(test: &str) -> bool {
    let Err(e) = ensure_nvrtc() else {
        return true;
    };
    let set = |var: &str, value: &str| std::env::var(var).is_ok_and(|v| v == value);
    if set("CI", "true") || set("MEMTUNE_REQUIRE_NVRTC", "1") {
        panic!("{test}: NVRTC 13 is required here (CI=true or MEMTUNE_REQUIRE_NVRTC=1): {e}");
    }
    // Written to the stream itself, past the test harness's capture, so it shows.
    use std::io::Write as _;
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: needs NVRTC 13, run ./scripts/test.sh"
    );
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_error_names_places_and_fix() {
        let e = ToolchainError::NotFound {
            looked_at: vec!["/a/libnvrtc.so.13: no such file".into(), "/b: x".into()],
        };
        let msg = e.to_string();
        assert!(msg.contains("/a/libnvrtc.so.13: no such file"), "{msg}");
        assert!(msg.contains("/b: x"), "{msg}");
        assert!(msg.contains("scripts/install-cuda.sh"), "{msg}");
        assert!(msg.contains("CUDA_HOME"), "{msg}");
    }

    #[test]
    fn candidates_end_with_repo_prefix() {
        let dirs = candidate_dirs();
        assert!(dirs.contains(&PathBuf::from("/usr/local/cuda/lib64")));
        let last = dirs
            .last()
            .map(|d| d.to_string_lossy().into_owned())
            .unwrap_or_default();
        assert!(last.ends_with(".cuda/nvidia/cu13/lib"), "{last}");
    }
}
