//! The verbs on stored profiles and profile files: `devices`, `list`, `show`, `path`,
//! `verify`, `export` and `import`, and the warning said before a stored profile is
//! replaced.

use super::commands::{check_uuid, print_json, Ctx};
use super::render;
use super::tune::plots;
use crate::env::{env_error, wanted_device};
use crate::exit::{CliError, Exit};
use crate::files::{self, opt_path_json, path_json, paths_json};
use memtune::device;
use memtune_core::codec;
use memtune_core::lookup;
use memtune_core::profile::{DeviceIdentity, Profile};
use memtune_core::store::{self, Store};
use memtune_core::userio;
use serde_json::json;
use std::path::{Path, PathBuf};

pub(super) fn devices(ctx: &Ctx) -> Result<Exit, CliError> {
    let ids = device::list().map_err(|e| match e {
        // One line: there is nothing to list, and that is the whole answer.
        device::DeviceError::NoDriver => CliError::new(
            Exit::NoGpu,
            "no GPUs: no CUDA driver on this machine (libcuda.so.1 not found)",
        ),
        device::DeviceError::NoGpu { detail } => CliError::new(
            Exit::NoGpu,
            format!("no GPUs: no CUDA GPU is visible ({detail})"),
        ),
        other => other.into(),
    })?;
    let stores: Vec<Store> = [Some(ctx.project()), ctx.cache()?]
        .into_iter()
        .flatten()
        .collect();
    let stored = |uuid: &str| -> Option<PathBuf> {
        stores.iter().map(|s| s.path_for(uuid)).find(|p| p.exists())
    };
    // Where a GPU has none of its own, the profile of another GPU of its model that the
    // lookup chain would use. A listing, so a store it cannot read just shows none.
    let same_model = |d: &DeviceIdentity| -> Option<PathBuf> {
        let mut skipped = Vec::new();
        lookup::same_model(&stores, &d.model(), &mut skipped)
            .ok()
            .flatten()
            .map(|(path, _)| path)
    };
    let found: Vec<(Option<PathBuf>, Option<PathBuf>)> = ids
        .iter()
        .map(|d| match stored(&d.uuid) {
            Some(own) => (Some(own), None),
            None => (None, same_model(d)),
        })
        .collect();
    if ctx.json {
        let items: Vec<_> = ids
            .iter()
            .zip(&found)
            .enumerate()
            .map(|(i, (d, (own, twin)))| {
                json!({"ordinal": i, "identity": d, "profile": opt_path_json(own.as_deref()),
                    "same_model_profile": opt_path_json(twin.as_deref())})
            })
            .collect();
        print_json(&json!({ "devices": items }));
    } else {
        for (i, (d, found)) in ids.iter().zip(&found).enumerate() {
            println!("GPU {i}: {} (UUID: {})", d.name, d.uuid);
            println!(
                "  sm_{}{}, {} SMs, {:.1} GiB, L2 {} MiB, driver {}",
                d.compute_capability.major,
                d.compute_capability.minor,
                d.sm_count,
                d.global_memory_bytes as f64 / (1u64 << 30) as f64,
                d.l2_bytes >> 20,
                d.driver_version
            );
            match found {
                (Some(p), _) => println!("  profile: {}", p.display()),
                (None, Some(p)) => {
                    println!("  profile: none of its own; same model: {}", p.display())
                }
                (None, None) => println!("  profile: none (run `cargo tune`)"),
            }
        }
    }
    Ok(Exit::Ok)
}

pub(super) fn list(ctx: &Ctx) -> Result<Exit, CliError> {
    let mut rows = Vec::new();
    for (place, store) in [("project", Some(ctx.project())), ("cache", ctx.cache()?)] {
        let Some(store) = store else { continue };
        for entry in store.list()? {
            rows.push((place, entry));
        }
    }
    if ctx.json {
        let items: Vec<_> = rows
            .iter()
            .map(|(place, e)| match &e.profile {
                Ok(p) => json!({"store": place, "path": path_json(&e.path), "valid": true, "uuid": p.device.uuid,
                    "name": p.device.name, "created_at": p.provenance.created_at, "digest": p.digest}),
                Err(err) => json!({"store": place, "path": path_json(&e.path), "valid": false, "error": err.to_string()}),
            })
            .collect();
        print_json(&json!({ "profiles": items }));
    } else if rows.is_empty() {
        println!("no stored profiles (run `cargo tune` on a GPU, or `cargo tune import FILE`)");
    } else {
        for (place, e) in &rows {
            match &e.profile {
                Ok(p) => println!(
                    "{place:<8} {}  {}  {}\n         {}",
                    p.device.uuid,
                    p.device.name,
                    p.provenance.created_at,
                    e.path.display()
                ),
                Err(err) => println!("{place:<8} INVALID  {err}"),
            }
        }
    }
    Ok(Exit::Ok)
}

/// The stored profile of `uuid`: the project's first, then the user cache.
fn find_stored(ctx: &Ctx, uuid: &str) -> Result<(PathBuf, Profile), CliError> {
    for store in [Some(ctx.project()), ctx.cache()?].into_iter().flatten() {
        if let Some(p) = store.load(uuid)? {
            return Ok((store.path_for(uuid), p));
        }
    }
    Err(CliError::new(
        Exit::NotFound,
        format!("no stored profile for {uuid}; run `cargo tune` on that GPU, or `cargo tune import FILE`"),
    ))
}

/// Loads any profile file; one named like a UUID must hold that UUID's profile.
fn load_file(path: &Path) -> Result<Profile, CliError> {
    let profile = store::load_path(path)?;
    store::check_file_name(path, &profile)?;
    Ok(profile)
}

pub(super) fn show(
    ctx: &Ctx,
    uuid: Option<&str>,
    path: Option<&Path>,
    plot: Option<&Path>,
) -> Result<Exit, CliError> {
    let (profile, source) = pick_profile(ctx, uuid, path)?;
    let charts = plots(ctx, plot, &profile)?;
    if ctx.json {
        print_json(&json!({ "source": source, "profile": profile, "charts": paths_json(&charts) }));
    } else {
        println!("source: {source}");
        print!("{}", render::profile(&profile));
    }
    Ok(Exit::Ok)
}

/// The profile a verb shows: a file, a stored UUID, or the lookup chain's for GPU 0; and
/// where it came from.
pub(super) fn pick_profile(
    ctx: &Ctx,
    uuid: Option<&str>,
    path: Option<&Path>,
) -> Result<(Profile, String), CliError> {
    Ok(match (uuid, path) {
        (_, Some(path)) => (load_file(path)?, path.display().to_string()),
        (Some(uuid), None) => {
            check_uuid(uuid)?;
            let (path, p) = find_stored(ctx, uuid)?;
            (p, path.display().to_string())
        }
        (None, None) => {
            // The lookup chain for MEMTUNE_DEVICE's GPU, else GPU 0, else "any device".
            let wanted = wanted_device()?;
            let resolved = lookup::resolve(&ctx.lookup_config()?, &wanted)?;
            for w in &resolved.warnings {
                ctx.note(&format!("warning: {w}"));
            }
            (resolved.profile, resolved.source.to_string())
        }
    })
}

pub(super) fn path(ctx: &Ctx) -> Result<Exit, CliError> {
    let cache = lookup::cache_dir_from_env().map_err(env_error)?;
    let env_profile = std::env::var_os(lookup::ENV_PROFILE).map(PathBuf::from);
    let project = ctx.project().dir().to_path_buf();
    if ctx.json {
        print_json(&json!({"cache_dir": opt_path_json(cache.as_deref()),
            "project_dir": path_json(&project), "env_profile": opt_path_json(env_profile.as_deref())}));
    } else {
        match &cache {
            Some(c) => println!("cache:   {}", c.display()),
            None => println!("cache:   none on this platform (set MEMTUNE_CACHE_DIR)"),
        }
        println!("project: {}", project.display());
        if let Some(p) = env_profile {
            println!(
                "{}: {} (takes precedence)",
                lookup::ENV_PROFILE,
                p.display()
            );
        }
    }
    Ok(Exit::Ok)
}

pub(super) fn verify(ctx: &Ctx, files: &[PathBuf]) -> Result<Exit, CliError> {
    let mut first_failure: Option<CliError> = None;
    let mut items = Vec::new();
    for file in files {
        match load_file(file) {
            Ok(p) => {
                if !ctx.json {
                    println!(
                        "ok       {}  {}  {}",
                        file.display(),
                        p.device.uuid,
                        p.device.name
                    );
                }
                items.push(json!({"path": path_json(file), "valid": true, "uuid": p.device.uuid, "digest": p.digest, "simulated": p.is_simulated()}));
            }
            Err(e) => {
                if !ctx.json {
                    println!("INVALID  {}", e.message);
                }
                items.push(json!({"path": path_json(file), "valid": false, "exit_code": e.exit as i32, "error": e.message}));
                first_failure.get_or_insert(e);
            }
        }
    }
    if ctx.json {
        print_json(&json!({ "files": items }));
    }
    match first_failure {
        None => Ok(Exit::Ok),
        Some(e) => {
            // Each verdict is printed already; the summary goes to stderr so that --json
            // output stays one document.
            let n = items.iter().filter(|i| i["valid"] == false).count();
            eprintln!("error: {n} of {} profiles invalid", files.len());
            Ok(e.exit)
        }
    }
}

/// Copies a stored profile to `output` (stdout for `-`, the note then on stderr).
pub(super) fn export(ctx: &Ctx, uuid: &str, output: &Path) -> Result<Exit, CliError> {
    check_uuid(uuid)?;
    let to_stdout = userio::is_stdout(output);
    if to_stdout && ctx.json {
        return Err(CliError::new(
            Exit::Usage,
            "--json and -o - would both write to stdout; export to a file, or drop --json",
        ));
    }
    let (from, profile) = find_stored(ctx, uuid)?;
    // Copy the verified bytes, not a re-serialisation: fields of a newer minor survive.
    let bytes = store::read_file(&from)?;
    codec::from_slice(&bytes, &from)?;
    files::write_output(output, &bytes, ctx.write)?;
    if ctx.json {
        print_json(
            &json!({"uuid": uuid, "from": path_json(&from), "path": path_json(output),
            "digest": profile.digest}),
        );
    } else {
        let name = &profile.device.name;
        let note = format!("exported {uuid} ({name}) to {}", output.display());
        if to_stdout {
            ctx.note(&note);
        } else {
            println!("{note}");
        }
    }
    Ok(Exit::Ok)
}

/// What storing `new` would replace, said before it is replaced: a stored profile of the
/// same UUID that differs (a newer one above all) or one that is not valid. `None` when
/// nothing is there or the same profile is.
pub(super) fn replacing(store: &Store, new: &Profile) -> Option<String> {
    let path = store.path_for(&new.device.uuid);
    if !path.exists() {
        return None;
    }
    match store::read_file(&path).and_then(|b| codec::from_slice(&b, &path)) {
        Ok(old) if old.digest == new.digest => None,
        Ok(old) => {
            let newer = if old.provenance.created_at > new.provenance.created_at {
                "a NEWER profile "
            } else {
                ""
            };
            Some(format!(
                "replacing {newer}{} (created {}, {}) with a different one (created {}, {}); in a project, git keeps the old one",
                path.display(),
                old.provenance.created_at,
                old.digest,
                new.provenance.created_at,
                new.digest
            ))
        }
        Err(e) => Some(format!(
            "replacing {}, which is not valid: {e}",
            path.display()
        )),
    }
}

pub(super) fn import(ctx: &Ctx, file: &Path, project: bool) -> Result<Exit, CliError> {
    let store = if project {
        ctx.project()
    } else {
        ctx.cache_store()?
    };
    let bytes = store::read_file(file)?;
    let replaced = match codec::from_slice(&bytes, file) {
        Ok(p) => replacing(&store, &p),
        // store.import reports the error with the fix.
        Err(_) => None,
    };
    let (path, profile) = store.import(&bytes, file)?;
    if let Some(note) = &replaced {
        ctx.note(&format!("warning: {note}"));
    }
    if ctx.json {
        print_json(
            &json!({"uuid": profile.device.uuid, "name": profile.device.name, "path": path_json(&path), "digest": profile.digest, "replaced": replaced}),
        );
    } else {
        println!(
            "imported {} ({}) to {}",
            profile.device.uuid,
            profile.device.name,
            path.display()
        );
    }
    Ok(Exit::Ok)
}
