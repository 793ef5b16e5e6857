//! The profile at build time: the lookup chain, as the macros run it, with every variable
//! and file it reads reported to cargo.
//!
//! There is no GPU at build time, so the wanted UUID comes from `MEMTUNE_DEVICE` when set;
//! without it, a store holding exactly one valid profile answers (see `lookup::resolve`).

use super::cargo::Instructions;
use super::error::BuildError;
use memtune_core::lookup::{self, LookupConfig, Resolved, Source, Wanted};
use std::path::Path;

/// Runs the lookup chain for the crate at `manifest_dir`.
pub fn resolve(manifest_dir: &Path, cargo: &mut Instructions) -> Result<Resolved, BuildError> {
    cargo.read_elsewhere(&lookup::ENV_VARS);
    let device = cargo
        .var(lookup::ENV_DEVICE)
        .map(|v| v.to_string_lossy().into_owned())
        .unwrap_or_default();
    let wanted = Wanted::for_device_var(&device)?;
    // The crate's own `.memtune/`, as the macros read it.
    let config = LookupConfig::from_env(Some(manifest_dir));
    // A profile added to or removed from `.memtune/` changes the answer.
    if let Some(dir) = &config.project_dir {
        cargo.file(dir);
    }
    let resolved = lookup::resolve(&config, &wanted)?;
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
