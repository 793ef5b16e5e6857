//! The environment a verb runs in: memtune's environment variables, which GPU a verb runs
//! on, and the profile it plans with.

use crate::exit::{CliError, Exit};
use memtune::device;
use memtune_core::lookup::{self, LookupConfig, Wanted};
use memtune_core::{store, Profile, ProfileError};
use std::path::Path;

/// A memtune environment variable set wrong (`MEMTUNE_CACHE_DIR=""`, `MEMTUNE_DEVICE` not
/// a UUID) is a usage error; other profile errors keep their exit code.
pub(crate) fn env_error(e: ProfileError) -> CliError {
    match e {
        ProfileError::EmptyVariable { .. } | ProfileError::BadVariable { .. } => {
            CliError::new(Exit::Usage, e.to_string())
        }
        other => other.into(),
    }
}

/// `MEMTUNE_DEVICE`, as the lookup chain reads it: a GPU's UUID, or nothing.
fn device_env() -> Result<Option<String>, CliError> {
    Ok(Wanted::from_env().map_err(env_error)?.uuid)
}

/// The ordinal of the visible GPU `MEMTUNE_DEVICE` names; `None` when it is unset.
pub(crate) fn env_gpu() -> Result<Option<usize>, CliError> {
    let Some(uuid) = device_env()? else {
        return Ok(None);
    };
    let ids = device::list()?;
    let ordinal = ids.iter().position(|d| d.uuid == uuid).ok_or_else(|| {
        CliError::new(
            Exit::Usage,
            format!(
                "MEMTUNE_DEVICE={uuid} is none of the {} visible GPUs; `cargo tune devices` lists them: set it to one, pass the ordinal, or unset it",
                ids.len()
            ),
        )
    })?;
    Ok(Some(ordinal))
}

/// The GPU a verb runs on: the ordinal given, else the visible GPU `MEMTUNE_DEVICE` names,
/// else GPU 0.
pub(crate) fn gpu_ordinal(given: Option<usize>) -> Result<usize, CliError> {
    match given {
        Some(ordinal) => Ok(ordinal),
        None => Ok(env_gpu()?.unwrap_or(0)),
    }
}

/// What the lookup chain looks for: the GPU `MEMTUNE_DEVICE` names (with its model where
/// that GPU is visible), else GPU 0, else (no GPU) any device.
pub(crate) fn wanted_device() -> Result<Wanted, CliError> {
    if let Some(uuid) = device_env()? {
        let model = device::list()
            .ok()
            .and_then(|ids| ids.into_iter().find(|d| d.uuid == uuid))
            .map(|d| d.model());
        return Ok(Wanted {
            uuid: Some(uuid),
            model,
        });
    }
    Ok(match device::identity(0) {
        Ok(id) => Wanted {
            uuid: Some(id.uuid.clone()),
            model: Some(id.model()),
        },
        Err(_) => Wanted::default(),
    })
}

/// The profile at `path`, else the lookup chain's for `wanted` (its warnings on stderr
/// unless `quiet`), and where it came from.
pub(crate) fn profile(
    path: Option<&Path>,
    wanted: impl FnOnce() -> Result<Wanted, CliError>,
    quiet: bool,
) -> Result<(Profile, String), CliError> {
    if let Some(path) = path {
        return Ok((store::load_path(path)?, path.display().to_string()));
    }
    let wanted = wanted()?;
    let root = lookup::current_project_root();
    let config = LookupConfig::try_from_env(Some(&root)).map_err(env_error)?;
    let resolved = lookup::resolve(&config, &wanted)?;
    if !quiet {
        for w in &resolved.warnings {
            eprintln!("warning: {w}");
        }
    }
    Ok((resolved.profile, resolved.source.to_string()))
}
