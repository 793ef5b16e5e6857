//! `cargo tune check`: validates every profile committed in `.memtune/`, for users' CI, as
//! `cargo sqlx prepare --check` does for `.sqlx/`.

use crate::exit::{CliError, Exit};
use crate::files::path_json;
use memtune_core::store::Store;
use memtune_core::ProfileError;
use serde_json::json;
use std::path::Path;

/// A short stable name for why a file failed, for `--json` and scripts.
fn reason(e: &ProfileError) -> &'static str {
    match e {
        ProfileError::Parse { .. } => "parse",
        ProfileError::WrongSchema { .. } => "schema",
        ProfileError::NewerMajor { .. } => "newer_schema",
        ProfileError::DigestMismatch { .. } => "digest",
        ProfileError::UuidMismatch { .. } => "file_name",
        ProfileError::Io { .. } => "io",
        ProfileError::NotFound { .. } => "not_found",
        _ => "invalid",
    }
}

/// Checks `dir`; every file gets one line (or one JSON item). Exit 8 when any fails.
pub fn run(dir: &Path, allow_simulated: bool, json_out: bool) -> Result<Exit, CliError> {
    if !dir.is_dir() {
        return Err(CliError::new(
            Exit::NotFound,
            format!(
                "{}: no such directory; run `cargo tune --project` on each target GPU (or `cargo tune import FILE --project`) and commit it, or pass the directory to check",
                dir.display()
            ),
        ));
    }
    let entries = Store::new(dir).list()?;
    if entries.is_empty() {
        return Err(CliError::new(
            Exit::NotFound,
            format!(
                "{}: no profiles (*.json) to check; run `cargo tune --project` on each target GPU and commit them",
                dir.display()
            ),
        ));
    }
    let mut items = Vec::new();
    let mut failed = 0;
    for entry in &entries {
        let verdict = match &entry.profile {
            Ok(p) if p.is_simulated() && !allow_simulated => Err((
                "simulated",
                format!(
                    "{}: simulated profile (`{}`) describes no real GPU; replace it with `cargo tune --project` on the device, or pass --allow-simulated",
                    entry.path.display(),
                    p.provenance.simulator.as_deref().unwrap_or_default()
                ),
            )),
            Ok(p) => Ok(p),
            Err(e) => Err((reason(e), e.to_string())),
        };
        match verdict {
            Ok(p) => {
                if !json_out {
                    println!(
                        "ok       {}  {}  {}{}",
                        entry.path.display(),
                        p.device.uuid,
                        p.device.name,
                        if p.is_simulated() {
                            "  (simulated)"
                        } else {
                            ""
                        }
                    );
                }
                items.push(
                    json!({"path": path_json(&entry.path), "valid": true, "uuid": p.device.uuid,
                    "name": p.device.name, "digest": p.digest, "simulated": p.is_simulated()}),
                );
            }
            Err((kind, message)) => {
                failed += 1;
                if !json_out {
                    println!("FAILED   {message}");
                }
                items.push(
                    json!({"path": path_json(&entry.path), "valid": false, "reason": kind, "error": message}),
                );
            }
        }
    }
    if json_out {
        println!(
            "{:#}",
            json!({"dir": path_json(dir), "ok": failed == 0, "failed": failed, "files": items})
        );
    }
    if failed == 0 {
        Ok(Exit::Ok)
    } else {
        eprintln!(
            "error: {failed} of {} profiles in {} failed the check",
            entries.len(),
            dir.display()
        );
        Ok(Exit::CheckFailed)
    }
}
