//! The verbs of `cargo tune`.

use super::probe::{self, ProbeArgs};
use super::render;
use super::{Cli, Command, TuneArgs};
use crate::exit::{CliError, Exit};
use memtune::device;
use memtune_core::lookup::{self, LookupConfig, Wanted, PROJECT_DIR};
use memtune_core::profile::{is_valid_uuid, Profile, Provenance};
use memtune_core::profile::{DeviceIdentity, MemoryKind, Section};
use memtune_core::store::{self, Store};
use memtune_core::{codec, time};
use memtune_probe::gpu::{Bounds, Gpu};
use memtune_probe::sim::{SimConfig, Simulator};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The version of the probe's method; bumped when what it measures or infers changes.
pub const PROBE_VERSION: u32 = 1;

/// What every verb needs: output mode and the two stores.
struct Ctx {
    json: bool,
    quiet: bool,
    project_root: PathBuf,
}

impl Ctx {
    fn project(&self) -> Store {
        Store::new(self.project_root.join(PROJECT_DIR))
    }

    fn cache(&self) -> Result<Store, CliError> {
        lookup::default_cache_dir().map(Store::new).ok_or_else(|| {
            CliError::new(
                Exit::Io,
                "this platform has no user cache directory; set MEMTUNE_CACHE_DIR to a writable directory",
            )
        })
    }

    fn note(&self, msg: &str) {
        if !self.quiet {
            eprintln!("{msg}");
        }
    }

    fn lookup_config(&self) -> LookupConfig {
        LookupConfig::from_env(Some(&self.project_root))
    }
}

pub fn dispatch(cli: Cli) -> Result<Exit, CliError> {
    let ctx = Ctx {
        json: cli.global.json,
        quiet: cli.global.quiet,
        project_root: lookup::current_project_root(),
    };
    match cli.command {
        None => tune(&ctx, &cli.tune),
        Some(Command::Devices) => devices(&ctx),
        Some(Command::List) => list(&ctx),
        Some(Command::Show { uuid, path, plot }) => {
            show(&ctx, uuid.as_deref(), path.as_deref(), plot.as_deref())
        }
        Some(Command::Probe {
            simulate,
            output,
            gpu,
            probe,
        }) => probe_to_file(&ctx, simulate.as_deref(), &output, gpu, &probe),
        Some(Command::Path) => path(&ctx),
        Some(Command::Verify { files }) => verify(&ctx, &files),
        Some(Command::Check {
            dir,
            allow_simulated,
        }) => {
            let dir = dir.unwrap_or_else(|| ctx.project().dir().to_path_buf());
            super::check::run(&dir, allow_simulated, ctx.json)
        }
        Some(Command::Export { uuid, output }) => export(&ctx, &uuid, &output),
        Some(Command::Import { file, project }) => import(&ctx, &file, project),
        Some(Command::Plan(command)) => super::plan::run(&command, ctx.json, ctx.quiet),
        Some(Command::Chase(args)) => super::raw::chase(ctx.json, &args),
        Some(Command::Sample(args)) => super::raw::sample(ctx.json, &args),
        Some(Command::Bench(args)) => crate::bench::run(&args, ctx.json, ctx.quiet),
        Some(Command::Decisions(cmd)) => {
            super::decisions::run(&cmd, ctx.json, ctx.quiet, &ctx.project_root)
        }
    }
}

fn check_uuid(uuid: &str) -> Result<(), CliError> {
    if is_valid_uuid(uuid) {
        Ok(())
    } else {
        Err(CliError::new(
            Exit::Usage,
            format!("`{uuid}` is not a GPU UUID; expected GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx as `cargo tune devices` prints it"),
        ))
    }
}

fn print_json(value: &serde_json::Value) {
    println!("{value:#}");
}

fn provenance(
    options: BTreeMap<String, serde_json::Value>,
    simulator: Option<String>,
) -> Provenance {
    Provenance {
        memtune_version: env!("CARGO_PKG_VERSION").to_string(),
        probe_version: PROBE_VERSION,
        created_at: time::now_rfc3339(),
        duration_seconds: 0.0,
        options,
        simulator,
    }
}

fn bounds(args: &ProbeArgs) -> Bounds {
    // Quick mode bounds the host-backed kinds unless told otherwise: pinning 8 GiB took
    // 5 s and populating tens of GiB of managed memory 7 s on an H200, most of a quick
    // probe. The H200's managed TLB reaches about 4.2 GiB, inside the bound with the quick
    // sweep's margin; pinned levels past 1 GiB are left to the full probe.
    let quick = |given: Option<u64>, bound: u64| match given {
        None if args.quick => Some(bound),
        other => other,
    };
    Bounds {
        device: args.max_device,
        pinned: quick(args.max_pinned, QUICK_MAX_PINNED),
        managed: quick(args.max_managed, QUICK_MAX_MANAGED),
    }
}

/// What `--quick` shortens, printed with its results.
const QUICK_NOTE: &str = "quick: TLB boundaries to 8% with fewer repeats, pinned memory up to 1 GiB and managed up to 8 GiB (unless --max-pinned/--max-managed), random access at every fourth power of two, staging in f32 on 256³ with 1 and 6 repeats, cache sizes past 64K-element rings to 8%, no line for such levels";

/// One line each for the bandwidth and staging sections of the end-of-probe summary.
fn section_summary(p: &Profile) -> Vec<String> {
    let gbs = |b: f64| format!("{:.0} GB/s", b / 1e9);
    let bandwidth = match &p.bandwidth {
        Section::Measured(b) => {
            let zero_copy: Vec<String> = b
                .zero_copy_read
                .iter()
                .map(|(k, v)| format!("{k} {}", gbs(*v)))
                .collect();
            format!(
                "bandwidth: device copy {}, host-to-device {}, device-to-host {}, zero-copy reads {}",
                gbs(b.device_to_device),
                gbs(b.host_to_device),
                gbs(b.device_to_host),
                zero_copy.join(", ")
            )
        }
        other => format!("bandwidth: {}", other.status_line()),
    };
    let staging = match &p.shared_memory_staging {
        Section::Measured(t) => {
            let pays = t.entries.iter().filter(|e| e.benefit > 1.0).count();
            let best = t
                .entries
                .iter()
                .max_by(|a, b| a.benefit.total_cmp(&b.benefit));
            match best {
                Some(e) => format!(
                    "staging: pays in {pays} of {} cases; best benefit {:.2}x ({} x{} on {}³)",
                    t.entries.len(),
                    e.benefit,
                    e.dtype,
                    e.repeats,
                    e.grid[0]
                ),
                None => "staging: no case measured".to_string(),
            }
        }
        other => format!("staging: {}", other.status_line()),
    };
    vec![bandwidth, staging]
}

/// Pinned and managed memory a `--quick` probe takes at most, unless given.
pub const QUICK_MAX_PINNED: u64 = 1 << 30;
pub const QUICK_MAX_MANAGED: u64 = 8 << 30;

/// Probes GPU `ordinal` into a profile. A probe that cannot start marks every section it
/// would have filled as failed, with the reason; the identity is kept either way.
fn probe_gpu(
    ctx: &Ctx,
    ordinal: usize,
    id: DeviceIdentity,
    args: &ProbeArgs,
    options: BTreeMap<String, serde_json::Value>,
) -> (Profile, bool) {
    let start = Instant::now();
    let mut profile = Profile::identity_only(id.clone(), provenance(options, None));
    let mut failed = match Gpu::open(ordinal, id.clone(), &bounds(args)) {
        Ok(mut gpu) => {
            // The caches first, on a quiet GPU, before the sections that allocate their own.
            let caches =
                probe::run_caches(&mut gpu, args, &format!("GPU {ordinal}: caches"), ctx.quiet);
            let caches_failed = probe::apply_caches(&mut profile, caches.as_ref());
            let result = probe::run(&mut gpu, args, &format!("GPU {ordinal}"), ctx.quiet);
            // Frees the probe's buffers before the sections that allocate their own.
            drop(gpu);
            for w in &result.warnings {
                ctx.note(&format!("warning: {w}"));
            }
            probe::apply(&mut profile, &result) || caches_failed
        }
        Err(e) => {
            let reason = format!("the probe could not start: {e}");
            for kind in MemoryKind::ALL {
                *profile.tlb.get_mut(kind) = Section::failed(&reason);
                *profile.random_access.get_mut(kind) = Section::failed(&reason);
            }
            if !args.no_caches {
                profile.caches = Section::failed(&reason);
            }
            true
        }
    };
    profile.bandwidth = if args.no_bandwidth {
        Section::not_measured("skipped (--no-bandwidth)")
    } else {
        let bar = crate::progress::Bar::new(format!("GPU {ordinal}: bandwidth"), ctx.quiet);
        let measured = memtune_probe::gpu::bandwidth::measure(ordinal, &id, args.quick);
        bar.finish(if measured.is_ok() {
            "measured"
        } else {
            "failed"
        });
        measured.map_or_else(
            |e| {
                failed = true;
                Section::failed(e.to_string())
            },
            Section::Measured,
        )
    };
    profile.shared_memory_staging = if args.no_staging {
        Section::not_measured("skipped (--no-staging)")
    } else {
        let mut bar = crate::progress::Bar::new(format!("GPU {ordinal}: staging"), ctx.quiet);
        let measured = memtune::launch::Runtime::open(ordinal).and_then(|mut rt| {
            memtune_probe::gpu::staging::measure(&mut rt, args.quick, &mut |f, d| bar.update(f, d))
        });
        bar.finish(if measured.is_ok() {
            "measured"
        } else {
            "failed"
        });
        measured.map_or_else(
            |e| {
                failed = true;
                Section::failed(e.to_string())
            },
            Section::Measured,
        )
    };
    profile.provenance.duration_seconds = start.elapsed().as_secs_f64();
    (profile, failed)
}

/// Writes charts if asked, and reports where.
fn plots(ctx: &Ctx, dir: Option<&Path>, profile: &Profile) -> Result<Vec<PathBuf>, CliError> {
    let Some(dir) = dir else {
        return Ok(Vec::new());
    };
    let written = probe::write_plots(dir, profile)?;
    for p in &written {
        ctx.note(&format!("chart: {}", p.display()));
    }
    Ok(written)
}

/// Bare `cargo tune`: probe each visible GPU and store its profile in the cache (or project).
fn tune(ctx: &Ctx, args: &TuneArgs) -> Result<Exit, CliError> {
    let ids = match args.device {
        Some(ordinal) => vec![(ordinal, device::identity(ordinal)?)],
        None => device::list()?.into_iter().enumerate().collect(),
    };
    let store = if args.project {
        ctx.project()
    } else {
        ctx.cache()?
    };
    let mut written = Vec::new();
    let mut any_failed = false;
    for (ordinal, id) in ids {
        ctx.note(&format!("GPU {ordinal}: {} {}", id.name, id.uuid));
        let mut options = args.probe.record();
        options.insert("project".to_string(), json!(args.project));
        let (mut profile, failed) = probe_gpu(ctx, ordinal, id, &args.probe, options);
        any_failed |= failed;
        if args.project {
            // A committed profile is replaced only with a word about it.
            codec::seal(&mut profile);
            if let Some(note) = replacing(&store, &profile) {
                ctx.note(&format!("warning: {note}"));
            }
        }
        let path = store.save(&mut profile)?;
        let charts = plots(ctx, args.probe.plot.as_deref(), &profile)?;
        written.push((ordinal, profile, path, charts));
    }
    if ctx.json {
        let items: Vec<_> = written
            .iter()
            .map(|(o, p, path, charts)| {
                json!({"ordinal": o, "uuid": p.device.uuid, "name": p.device.name,
                "digest": p.digest, "path": path, "duration_seconds": p.provenance.duration_seconds,
                "tlb": probe::summary(p), "caches": probe::cache_summary(p),
                "sections": section_summary(p),
                "quick": args.probe.quick.then_some(QUICK_NOTE), "charts": charts})
            })
            .collect();
        print_json(&json!({ "profiles": items }));
    } else {
        for (o, p, path, _) in &written {
            println!(
                "GPU {o}  {}  {}  ({:.1} s)",
                p.device.name, p.device.uuid, p.provenance.duration_seconds
            );
            for line in probe::summary(p) {
                println!("  TLB {line}");
            }
            for line in probe::cache_summary(p) {
                println!("  caches: {line}");
            }
            for line in section_summary(p) {
                println!("  {line}");
            }
            if args.probe.quick {
                println!("  {QUICK_NOTE}");
            }
            println!("  profile written to {}", path.display());
        }
    }
    Ok(if any_failed { Exit::Partial } else { Exit::Ok })
}

/// `cargo tune probe`: one GPU or a simulated one, into a file.
fn probe_to_file(
    ctx: &Ctx,
    simulate: Option<&str>,
    output: &Path,
    gpu: usize,
    args: &ProbeArgs,
) -> Result<Exit, CliError> {
    let (mut profile, failed) = match simulate {
        Some(spec) => {
            let config = SimConfig::from_spec(spec)
                .map_err(|e| CliError::new(Exit::InvalidProfile, e.to_string()))?;
            let start = Instant::now();
            let name = config.name.clone();
            let mut sim = Simulator::new(config);
            let identity = sim.identity();
            let caches = probe::run_caches(
                &mut sim,
                args,
                &format!("simulated {name}: caches"),
                ctx.quiet,
            );
            let result = probe::run(&mut sim, args, &format!("simulated {name}"), ctx.quiet);
            let mut profile = Profile::identity_only(
                identity,
                provenance(simulated_options(args, spec), Some(name.clone())),
            );
            let failed = probe::apply(&mut profile, &result)
                | probe::apply_caches(&mut profile, caches.as_ref());
            let unmodelled = "the simulator models TLBs, random access and caches only";
            profile.shared_memory_staging = Section::not_measured(unmodelled);
            profile.bandwidth = Section::not_measured(unmodelled);
            profile.provenance.duration_seconds = start.elapsed().as_secs_f64();
            (profile, failed)
        }
        None => {
            let id = device::identity(gpu)?;
            probe_gpu(ctx, gpu, id, args, args.record())
        }
    };
    let text = codec::to_json(&mut profile);
    store::write_atomic(output, text.as_bytes()).map_err(|e| {
        CliError::new(
            Exit::Io,
            format!(
                "{}: cannot write the profile: {e}; choose a writable path",
                output.display()
            ),
        )
    })?;
    let charts = plots(ctx, args.plot.as_deref(), &profile)?;
    if ctx.json {
        print_json(
            &json!({"path": output, "uuid": profile.device.uuid, "simulated": profile.is_simulated(),
            "digest": profile.digest, "tlb": probe::summary(&profile), "caches": probe::cache_summary(&profile),
            "charts": charts, "profile": profile}),
        );
    } else {
        println!("{}", profile.device.name);
        for line in probe::summary(&profile) {
            println!("  TLB {line}");
        }
        for line in probe::cache_summary(&profile) {
            println!("  caches: {line}");
        }
        println!("  profile written to {}", output.display());
    }
    Ok(if failed { Exit::Partial } else { Exit::Ok })
}

fn simulated_options(args: &ProbeArgs, spec: &str) -> BTreeMap<String, serde_json::Value> {
    let mut options = args.record();
    options.insert("simulate".to_string(), json!(spec));
    options
}

fn devices(ctx: &Ctx) -> Result<Exit, CliError> {
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
    let cache = ctx.cache().ok();
    let stored = |uuid: &str| -> Option<PathBuf> {
        [Some(ctx.project()), cache.clone()]
            .into_iter()
            .flatten()
            .map(|s| s.path_for(uuid))
            .find(|p| p.exists())
    };
    if ctx.json {
        let items: Vec<_> = ids
            .iter()
            .enumerate()
            .map(|(i, d)| json!({"ordinal": i, "identity": d, "profile": stored(&d.uuid)}))
            .collect();
        print_json(&json!({ "devices": items }));
    } else {
        for (i, d) in ids.iter().enumerate() {
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
            match stored(&d.uuid) {
                Some(p) => println!("  profile: {}", p.display()),
                None => println!("  profile: none (run `cargo tune`)"),
            }
        }
    }
    Ok(Exit::Ok)
}

fn list(ctx: &Ctx) -> Result<Exit, CliError> {
    let mut rows = Vec::new();
    for (place, store) in [
        ("project", Some(ctx.project())),
        ("cache", ctx.cache().ok()),
    ] {
        let Some(store) = store else { continue };
        for entry in store.list()? {
            rows.push((place, entry));
        }
    }
    if ctx.json {
        let items: Vec<_> = rows
            .iter()
            .map(|(place, e)| match &e.profile {
                Ok(p) => json!({"store": place, "path": e.path, "valid": true, "uuid": p.device.uuid,
                    "name": p.device.name, "created_at": p.provenance.created_at, "digest": p.digest}),
                Err(err) => json!({"store": place, "path": e.path, "valid": false, "error": err.to_string()}),
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
    for store in [Some(ctx.project()), ctx.cache().ok()]
        .into_iter()
        .flatten()
    {
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

fn show(
    ctx: &Ctx,
    uuid: Option<&str>,
    path: Option<&Path>,
    plot: Option<&Path>,
) -> Result<Exit, CliError> {
    let (profile, source) = match (uuid, path) {
        (_, Some(path)) => (load_file(path)?, path.display().to_string()),
        (Some(uuid), None) => {
            check_uuid(uuid)?;
            let (path, p) = find_stored(ctx, uuid)?;
            (p, path.display().to_string())
        }
        (None, None) => {
            // The lookup chain for GPU 0 when there is one, else for "any device".
            let wanted = match device::identity(0) {
                Ok(id) => Wanted {
                    uuid: Some(id.uuid.clone()),
                    model: Some(id.model()),
                },
                Err(_) => Wanted::default(),
            };
            let resolved = lookup::resolve(&ctx.lookup_config(), &wanted)?;
            for w in &resolved.warnings {
                ctx.note(&format!("warning: {w}"));
            }
            (resolved.profile, resolved.source.to_string())
        }
    };
    let charts = plots(ctx, plot, &profile)?;
    if ctx.json {
        print_json(&json!({ "source": source, "profile": profile, "charts": charts }));
    } else {
        println!("source: {source}");
        print!("{}", render::profile(&profile));
    }
    Ok(Exit::Ok)
}

fn path(ctx: &Ctx) -> Result<Exit, CliError> {
    let cache = lookup::default_cache_dir();
    let env_profile = std::env::var_os(lookup::ENV_PROFILE).map(PathBuf::from);
    let project = ctx.project().dir().to_path_buf();
    if ctx.json {
        print_json(
            &json!({"cache_dir": cache, "project_dir": project, "env_profile": env_profile}),
        );
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

fn verify(ctx: &Ctx, files: &[PathBuf]) -> Result<Exit, CliError> {
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
                items.push(json!({"path": file, "valid": true, "uuid": p.device.uuid, "digest": p.digest, "simulated": p.is_simulated()}));
            }
            Err(e) => {
                if !ctx.json {
                    println!("INVALID  {}", e.message);
                }
                items.push(json!({"path": file, "valid": false, "exit_code": e.exit as i32, "error": e.message}));
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

fn export(ctx: &Ctx, uuid: &str, output: &Path) -> Result<Exit, CliError> {
    check_uuid(uuid)?;
    let (from, profile) = find_stored(ctx, uuid)?;
    // Copy the verified bytes, not a re-serialisation: fields of a newer minor survive.
    let bytes = store::read_file(&from)?;
    codec::from_slice(&bytes, &from)?;
    store::write_atomic(output, &bytes).map_err(|e| {
        CliError::new(
            Exit::Io,
            format!(
                "{}: writing the export failed: {e}; choose a writable path",
                output.display()
            ),
        )
    })?;
    if ctx.json {
        print_json(&json!({"uuid": uuid, "from": from, "path": output, "digest": profile.digest}));
    } else {
        println!(
            "exported {uuid} ({}) to {}",
            profile.device.name,
            output.display()
        );
    }
    Ok(Exit::Ok)
}

/// What storing `new` would replace, said before it is replaced: a stored profile of the
/// same UUID that differs (a newer one above all) or one that is not valid. `None` when
/// nothing is there or the same profile is.
fn replacing(store: &Store, new: &Profile) -> Option<String> {
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

fn import(ctx: &Ctx, file: &Path, project: bool) -> Result<Exit, CliError> {
    let store = if project { ctx.project() } else { ctx.cache()? };
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
            &json!({"uuid": profile.device.uuid, "name": profile.device.name, "path": path, "digest": profile.digest, "replaced": replaced}),
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
