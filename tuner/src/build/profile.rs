//! The profile at build time: the lookup chain, as the macros run it, with every variable
//! and file it reads reported to cargo.
//!
//! There is no GPU at build time, so the wanted UUID comes from `MEMTUNE_DEVICE` when set;
//! without it, a store holding exactly one valid profile answers (see `lookup::resolve`).

use super::cargo::Instructions;
use super::error::BuildError;
use memtune_core::lookup::{self, LookupConfig, Resolved, Source, Wanted};
use memtune_core::profile::is_valid_uuid;
use std::path::Path;

/// The UUID of the device to build for, e.g. the deployment GPU's.
pub const ENV_DEVICE: &str = "MEMTUNE_DEVICE";

/// Runs the lookup chain for the crate at `manifest_dir`.
pub fn resolve(manifest_dir: &Path, cargo: &mut Instructions) -> Result<Resolved, BuildError> {
    cargo.read_elsewhere(&lookup::ENV_VARS);
    let uuid = match cargo.var(ENV_DEVICE) {
        Some(v) => {
            let uuid = v.to_string_lossy().into_owned();
            if !is_valid_uuid(&uuid) {
                return Err(BuildError::BadEnv {
                    var: ENV_DEVICE,
                    value: uuid,
                    why: "not a GPU UUID; set it to GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx as `cargo tune devices` prints it, or unset it".into(),
                });
            }
            Some(uuid)
        }
        None => None,
    };
    // The crate's own `.memtune/`, as the macros read it.
    let config = LookupConfig::from_env(Some(manifest_dir));
    // A profile added to or removed from `.memtune/` changes the answer.
    if let Some(dir) = &config.project_dir {
        cargo.file(dir);
    }
    let resolved = lookup::resolve(&config, &Wanted { uuid, model: None })?;
    if let Some(path) = resolved.source.path() {
        cargo.file(path);
    }
    if let Source::BuiltinDefault = resolved.source {
        // The cache directory appearing (after `cargo tune`) must rebuild with it.
        if let Some(dir) = &config.cache_dir {
            cargo.file(dir);
        }
    }
    for w in &resolved.warnings {
        cargo.warn(format!("memtune: {w}"));
    }
    Ok(resolved)
}
