//! Which profile, at compile time: the macro's `profile = "..."`, else the lookup chain of
//! `memtune-core` run inside the compiler, with the crate's directory as the project root
//! and `MEMTUNE_DEVICE` standing in for the GPU (there is none to ask).

use memtune_core::lookup::{self, LookupConfig, Source, Wanted};
use memtune_core::{store, Profile};
use proc_macro2::Span;
use std::path::{Path, PathBuf};
use syn::{Error, LitStr};

/// The profile a macro plans with, and where it was found.
pub struct Found {
    pub profile: Profile,
    /// The stamp's source: `argument`, or `Source::kind`.
    pub source: &'static str,
    /// The file read, absolute (for `include_bytes!`); `None` for the built-in default.
    pub path: Option<PathBuf>,
    /// Why the built-in default is in use, for the compile warning.
    pub default_note: Option<String>,
}

/// The crate being compiled: its `.memtune/` and the base of relative `profile = "..."`.
pub fn manifest_dir() -> Result<PathBuf, Error> {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .ok_or_else(|| {
            Error::new(
                Span::call_site(),
                "memtune: CARGO_MANIFEST_DIR is not set; build with cargo, or pass `profile = \"/absolute/path.json\"`",
            )
        })
}

/// Finds the profile for `macro_name`; errors sit at the `profile` argument, or at the call
/// when the environment chose.
pub fn find(explicit: Option<&LitStr>, macro_name: &str) -> Result<Found, Error> {
    if let Some(lit) = explicit {
        let given = PathBuf::from(lit.value());
        let path = if given.is_absolute() {
            given
        } else {
            manifest_dir()?.join(given)
        };
        let profile = store::load_path(&path)
            .and_then(|p| store::check_file_name(&path, &p).map(|()| p))
            .map_err(|e| Error::new(lit.span(), format!("{macro_name}: {e}")))?;
        return Ok(Found {
            profile,
            source: "argument",
            path: Some(absolute(&path)),
            default_note: None,
        });
    }
    let at_call =
        |e: memtune_core::ProfileError| Error::new(Span::call_site(), format!("{macro_name}: {e}"));
    let wanted = Wanted::from_env().map_err(at_call)?;
    let config = LookupConfig::from_env(Some(&manifest_dir()?));
    let resolved = lookup::resolve(&config, &wanted).map_err(at_call)?;
    let default_note = (resolved.source == Source::BuiltinDefault).then(|| {
        format!(
            "memtune: {}; or set MEMTUNE_PROFILE, or commit a profile to .memtune/ with `cargo tune --project`",
            resolved.warnings.join("; ")
        )
    });
    Ok(Found {
        profile: resolved.profile,
        source: resolved.source.kind(),
        path: resolved.source.path().map(absolute),
        default_note,
    })
}

/// `include_bytes!` resolves relative paths against the source file, the lookup against
/// the compiler's directory: hand it the file the lookup read.
fn absolute(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}
