//! The lookup chain: which profile describes the device at hand, and where it came from.
//!
//! First hit wins: `MEMTUNE_PROFILE=path` → the project's `.memtune/` (with
//! `MEMTUNE_OFFLINE=1`, nothing else) → the user cache → a stored profile of the same model
//! → the built-in conservative default, with a warning naming `cargo tune`.

use crate::error::ProfileError;
use crate::profile::{DeviceModel, Profile};
use crate::store::{self, Store};
use std::fmt;
use std::path::{Path, PathBuf};

pub const ENV_PROFILE: &str = "MEMTUNE_PROFILE";
pub const ENV_OFFLINE: &str = "MEMTUNE_OFFLINE";
pub const ENV_CACHE_DIR: &str = "MEMTUNE_CACHE_DIR";
/// The UUID a profile is wanted for where no GPU can be asked (at compile time).
pub const ENV_DEVICE: &str = "MEMTUNE_DEVICE";
/// Every environment variable the lookup chain reads (for `rerun-if-env-changed`).
pub const ENV_VARS: [&str; 4] = [ENV_PROFILE, ENV_OFFLINE, ENV_CACHE_DIR, ENV_DEVICE];
/// The project directory of committed profiles, beside `Cargo.toml`.
pub const PROJECT_DIR: &str = ".memtune";

/// Where the lookup chain looks.
#[derive(Debug, Clone, Default)]
pub struct LookupConfig {
    /// `MEMTUNE_PROFILE`.
    pub profile_path: Option<PathBuf>,
    /// The project's `.memtune/`, if there is a project.
    pub project_dir: Option<PathBuf>,
    /// `MEMTUNE_OFFLINE=1`: the project directory alone.
    pub offline: bool,
    /// The user cache; `None` when the platform has no cache directory.
    pub cache_dir: Option<PathBuf>,
}

impl LookupConfig {
    /// Reads the environment. `project_root` is the directory holding `.memtune/` (the
    /// crate's or workspace's root), if any. An empty `MEMTUNE_CACHE_DIR` leaves the user
    /// cache out (never the default in its place); [`LookupConfig::try_from_env`] says so.
    pub fn from_env(project_root: Option<&Path>) -> LookupConfig {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        LookupConfig {
            profile_path: var(ENV_PROFILE).map(PathBuf::from),
            project_dir: project_root.map(|r| r.join(PROJECT_DIR)),
            offline: var(ENV_OFFLINE).is_some_and(|v| v != "0"),
            cache_dir: default_cache_dir(),
        }
    }

    /// [`LookupConfig::from_env`], but an empty `MEMTUNE_CACHE_DIR` is an error.
    pub fn try_from_env(project_root: Option<&Path>) -> Result<LookupConfig, ProfileError> {
        let cache_dir = cache_dir_from_env()?;
        Ok(LookupConfig {
            cache_dir,
            ..LookupConfig::from_env(project_root)
        })
    }
}

/// The project root for `start`: the nearest ancestor holding `.memtune/`, else the nearest
/// holding `Cargo.toml`, else `start` (as cargo finds `Cargo.toml`).
pub fn find_project_root(start: &Path) -> PathBuf {
    let nearest = |marker: &str| start.ancestors().find(|d| d.join(marker).exists());
    nearest(PROJECT_DIR)
        .or_else(|| nearest("Cargo.toml"))
        .unwrap_or(start)
        .to_path_buf()
}

/// [`find_project_root`] of the current directory.
pub fn current_project_root() -> PathBuf {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    find_project_root(&cwd)
}

/// `MEMTUNE_CACHE_DIR`, else `<user cache>/memtune/profiles`; `None` where the platform
/// has no cache directory, and where `MEMTUNE_CACHE_DIR` is set but empty (use
/// [`cache_dir_from_env`] to report that).
pub fn default_cache_dir() -> Option<PathBuf> {
    cache_dir_from_env().ok().flatten()
}

/// `MEMTUNE_CACHE_DIR`, else `<user cache>/memtune/profiles` (`None` where the platform has
/// no cache directory). Set but empty, it is an error rather than a silent fallback: the
/// user meant some directory.
pub fn cache_dir_from_env() -> Result<Option<PathBuf>, ProfileError> {
    cache_dir_for(std::env::var_os(ENV_CACHE_DIR))
}

/// [`cache_dir_from_env`] for a given value of `MEMTUNE_CACHE_DIR` (`None`: unset).
pub fn cache_dir_for(value: Option<std::ffi::OsString>) -> Result<Option<PathBuf>, ProfileError> {
    match value {
        Some(dir) if dir.is_empty() => Err(ProfileError::EmptyVariable {
            name: ENV_CACHE_DIR,
        }),
        Some(dir) => Ok(Some(PathBuf::from(dir))),
        None => Ok(dirs::cache_dir().map(|d| d.join("memtune").join("profiles"))),
    }
}

/// What device a profile is wanted for. With no UUID (no GPU at hand, e.g. at compile time)
/// a store that holds exactly one valid profile answers.
#[derive(Debug, Clone, Default)]
pub struct Wanted {
    pub uuid: Option<String>,
    pub model: Option<DeviceModel>,
}

impl Wanted {
    /// What `MEMTUNE_DEVICE` asks for where there is no GPU to ask (at compile time): that
    /// UUID, or, unset, any device (a store's only profile). No model: nothing to match by.
    pub fn from_env() -> Result<Wanted, ProfileError> {
        let value = std::env::var(ENV_DEVICE).unwrap_or_default();
        Wanted::for_device_var(&value)
    }

    /// `from_env` for a given value of `MEMTUNE_DEVICE` (empty: unset).
    pub fn for_device_var(value: &str) -> Result<Wanted, ProfileError> {
        let value = value.trim();
        if value.is_empty() {
            return Ok(Wanted::default());
        }
        if !crate::profile::is_valid_uuid(value) {
            return Err(ProfileError::BadVariable {
                name: ENV_DEVICE,
                value: value.to_string(),
            });
        }
        Ok(Wanted {
            uuid: Some(value.to_string()),
            model: None,
        })
    }
}

/// Where the answer came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    EnvPath(PathBuf),
    Project(PathBuf),
    Cache(PathBuf),
    /// A profile of another GPU of the same model.
    SameModel(PathBuf),
    BuiltinDefault,
}

impl Source {
    /// A short stable name for JSON output.
    pub fn kind(&self) -> &'static str {
        match self {
            Source::EnvPath(_) => "env",
            Source::Project(_) => "project",
            Source::Cache(_) => "cache",
            Source::SameModel(_) => "same_model",
            Source::BuiltinDefault => "builtin_default",
        }
    }

    pub fn path(&self) -> Option<&Path> {
        match self {
            Source::EnvPath(p) | Source::Project(p) | Source::Cache(p) | Source::SameModel(p) => {
                Some(p)
            }
            Source::BuiltinDefault => None,
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::EnvPath(p) => write!(f, "{ENV_PROFILE}={}", p.display()),
            Source::Project(p) => write!(f, "project profile {}", p.display()),
            Source::Cache(p) => write!(f, "user cache {}", p.display()),
            Source::SameModel(p) => write!(f, "profile of the same model {}", p.display()),
            Source::BuiltinDefault => f.write_str("built-in conservative default"),
        }
    }
}

/// The lookup chain's answer.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub profile: Profile,
    pub source: Source,
    /// Things the user should know (skipped invalid files, the default in use).
    pub warnings: Vec<String>,
}

/// Runs the lookup chain.
pub fn resolve(config: &LookupConfig, wanted: &Wanted) -> Result<Resolved, ProfileError> {
    let mut warnings = Vec::new();
    if let Some(path) = &config.profile_path {
        if crate::userio::is_stdio(path) {
            return Err(ProfileError::Invalid {
                path: path.clone(),
                detail: format!("{ENV_PROFILE}=- would read stdin, which the lookup chain never does; name a profile file"),
            });
        }
        let profile = store::load_path(path).map_err(|e| match e {
            ProfileError::NotFound { .. } => ProfileError::NotFound {
                what: format!(
                    "{ENV_PROFILE}={} names no file; fix the path or unset {ENV_PROFILE}",
                    path.display()
                ),
            },
            other => other,
        })?;
        return Ok(Resolved {
            profile,
            source: Source::EnvPath(path.clone()),
            warnings,
        });
    }

    let project = config.project_dir.as_ref().map(Store::new);
    if let Some(store) = &project {
        if let Some((path, profile)) = exact(store, wanted)? {
            return Ok(found(profile, Source::Project(path), warnings));
        }
    }
    if config.offline {
        let dir = config
            .project_dir
            .as_ref()
            .map_or_else(|| PROJECT_DIR.to_string(), |d| d.display().to_string());
        return Err(ProfileError::NotFound {
            what: format!(
                "{ENV_OFFLINE}=1 but {dir} holds no profile for {}; run `cargo tune --project` on that GPU and commit {PROJECT_DIR}/, or unset {ENV_OFFLINE}",
                describe(wanted)
            ),
        });
    }

    let cache = config.cache_dir.as_ref().map(Store::new);
    if let Some(store) = &cache {
        if let Some((path, profile)) = exact(store, wanted)? {
            return Ok(found(profile, Source::Cache(path), warnings));
        }
    }

    if let Some(model) = &wanted.model {
        if let Some((path, p)) =
            same_model(project.iter().chain(cache.iter()), model, &mut warnings)?
        {
            return Ok(found(p, Source::SameModel(path), warnings));
        }
    }

    warnings.push(format!(
        "no profile for {}: using the built-in conservative default; run `cargo tune` on this machine to measure it",
        describe(wanted)
    ));
    Ok(Resolved {
        profile: crate::default::builtin(),
        source: Source::BuiltinDefault,
        warnings,
    })
}

/// The first measured (not simulated) profile of a GPU of `model` in `stores`, in their
/// order: the lookup chain's [`Source::SameModel`] step. Invalid files on the way are
/// skipped, each with a line in `warnings`.
pub fn same_model<'a>(
    stores: impl IntoIterator<Item = &'a Store>,
    model: &DeviceModel,
    warnings: &mut Vec<String>,
) -> Result<Option<(PathBuf, Profile)>, ProfileError> {
    for store in stores {
        for entry in store.list()? {
            match entry.profile {
                Ok(p) if !p.is_simulated() && p.device.model() == *model => {
                    return Ok(Some((entry.path, p)));
                }
                Ok(_) => {}
                Err(e) => warnings.push(format!("skipped invalid profile: {e}")),
            }
        }
    }
    Ok(None)
}

fn found(profile: Profile, source: Source, warnings: Vec<String>) -> Resolved {
    Resolved {
        profile,
        source,
        warnings,
    }
}

fn describe(wanted: &Wanted) -> String {
    match (&wanted.uuid, &wanted.model) {
        (Some(uuid), Some(model)) => format!("{uuid} ({model})"),
        (Some(uuid), None) => uuid.clone(),
        (None, Some(model)) => model.to_string(),
        (None, None) => "any device".to_string(),
    }
}

/// The profile of the wanted UUID in `store`; with no UUID, the store's only valid profile.
fn exact(store: &Store, wanted: &Wanted) -> Result<Option<(PathBuf, Profile)>, ProfileError> {
    match &wanted.uuid {
        Some(uuid) => Ok(store.load(uuid)?.map(|p| (store.path_for(uuid), p))),
        None => {
            let mut valid: Vec<(PathBuf, Profile)> = store
                .list()?
                .into_iter()
                .filter_map(|e| e.profile.ok().map(|p| (e.path, p)))
                .collect();
            Ok(if valid.len() == 1 { valid.pop() } else { None })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memtune_device_names_a_uuid_or_nothing() {
        assert!(Wanted::for_device_var("").unwrap().uuid.is_none());
        assert!(Wanted::for_device_var("  ").unwrap().uuid.is_none());
        let uuid = "GPU-5a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9";
        let wanted = Wanted::for_device_var(uuid).unwrap();
        assert_eq!(wanted.uuid.as_deref(), Some(uuid));
        assert!(wanted.model.is_none());
        let err = Wanted::for_device_var("0").unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("MEMTUNE_DEVICE=0") && msg.contains("cargo tune devices"),
            "{msg}"
        );
        assert!(ENV_VARS.contains(&ENV_DEVICE));
    }

    #[test]
    fn an_empty_cache_dir_variable_is_an_error_not_the_default() {
        let err = cache_dir_for(Some("".into())).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("MEMTUNE_CACHE_DIR is set but empty"), "{msg}");
        assert_eq!(
            cache_dir_for(Some("/x".into())).unwrap(),
            Some(PathBuf::from("/x"))
        );
        assert_eq!(
            cache_dir_for(None).unwrap(),
            dirs::cache_dir().map(|d| d.join("memtune").join("profiles"))
        );
    }
}
