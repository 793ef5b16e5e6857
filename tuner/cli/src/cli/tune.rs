//! Probing one GPU into a profile (for bare `cargo tune`, in `tune_gpus.rs`, and for
//! `cargo tune probe`), `cargo tune probe` itself (one GPU or a simulated one, into a
//! file), the profile's provenance, the `--quick` bounds and the end-of-probe summary.

use super::commands::{print_json, Ctx};
use super::probe::{self, ProbeArgs};
use crate::env::gpu_ordinal;
use crate::exit::{CliError, Exit};
use crate::files::{self, path_json, paths_json};
use crate::interrupt;
use memtune::device;
use memtune_core::profile::{DeviceIdentity, MemoryKind, Profile, Provenance, Section};
use memtune_core::userio;
use memtune_core::{codec, time, validate, ErrorClass};
use memtune_probe::fault::{FaultSection, Faults, FAULT_VARIABLE};
use memtune_probe::gpu::{Bounds, Gpu};
use memtune_probe::sim::{SimConfig, SimConfigError, Simulator};
use memtune_probe::{cross_check, crosses_probes};
use serde_json::json;
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The version of the probe's method; bumped when what it measures or infers changes.
pub const PROBE_VERSION: u32 = 1;

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

/// The probe's memory bounds; `at_once` GPUs probed together share the host's pinned memory.
fn bounds(args: &ProbeArgs, at_once: usize) -> Bounds {
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
        probed_at_once: at_once,
    }
}

/// What `--quick` shortens, printed with its results.
pub(super) const QUICK_NOTE: &str = "quick: TLB boundaries to 8% with fewer repeats, pinned memory up to 1 GiB and managed up to 8 GiB (unless --max-pinned/--max-managed), random access at every fourth power of two, staging in f32 on 256³ with 1 and 6 repeats, cache sizes past 64K-element rings to 8%, no line for such levels";

/// One line each for the bandwidth and staging sections of the end-of-probe summary.
pub(super) fn section_summary(p: &Profile) -> Vec<String> {
    let gbs = |b: f64| format!("{:.0} GB/s", b / 1e9);
    let bandwidth = match &p.bandwidth {
        Section::Measured(b) => {
            let zero_copy: Vec<String> = b
                .zero_copy_read
                .iter()
                .map(|(k, v)| format!("{k} {}", gbs(*v)))
                .collect();
            let l2 = b.l2_read.as_ref().map_or(String::new(), |l2| {
                format!(", L2 reads {}", gbs(l2.bytes_per_second))
            });
            format!(
                "bandwidth: device copy {}, host-to-device {}, device-to-host {}, zero-copy reads {}{l2}",
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

/// `MEMTUNE_FAULT`: operations of the probe to fail on purpose, for tests of its failure
/// paths ([`memtune_probe::fault`]); set but not a valid list is a usage error.
pub(super) fn faults_from_env(ctx: &Ctx) -> Result<Faults, CliError> {
    let Some(value) = std::env::var_os(FAULT_VARIABLE) else {
        return Ok(Faults::none());
    };
    let text = value.to_str().ok_or_else(|| {
        CliError::new(
            Exit::Usage,
            format!(
                "{FAULT_VARIABLE} is not valid UTF-8; give op:section items such as alloc:pinned"
            ),
        )
    })?;
    let faults = Faults::parse(text).map_err(|e| CliError::new(Exit::Usage, e.to_string()))?;
    ctx.note(&format!(
        "warning: {FAULT_VARIABLE}={text}: these operations fail on purpose"
    ));
    Ok(faults)
}

/// Pinned and managed memory a `--quick` probe takes at most, unless given.
pub const QUICK_MAX_PINNED: u64 = 1 << 30;
pub const QUICK_MAX_MANAGED: u64 = 8 << 30;

/// Probes GPU `ordinal` into a profile. A probe that cannot start marks every section it
/// would have filled as failed, with the reason; the identity is kept either way. Ctrl-C
/// stops it between measurements: `Err` (exit 130) once the GPU's buffers are freed.
/// `at_once` is how many GPUs are probed at the same time (by worker processes), which
/// share the host's pinned memory.
pub(super) fn probe_gpu(
    ctx: &Ctx,
    ordinal: usize,
    id: DeviceIdentity,
    args: &ProbeArgs,
    options: BTreeMap<String, serde_json::Value>,
    faults: &Faults,
    at_once: usize,
) -> Result<(Profile, bool), CliError> {
    let start = Instant::now();
    let unwritten = "nothing was written or stored";
    let mut profile = Profile::identity_only(id.clone(), provenance(options, None));
    let opened = Gpu::open(ordinal, id.clone(), &bounds(args, at_once))
        .map(|gpu| gpu.with_faults(faults.clone()));
    let mut failed = match opened {
        Ok(mut gpu) => {
            // The caches first, on a quiet GPU, before the sections that allocate their own.
            let caches =
                probe::run_caches(&mut gpu, args, &format!("GPU {ordinal}: caches"), ctx.quiet);
            let caches_failed = probe::apply_caches(&mut profile, caches.as_ref());
            for w in caches.iter().flat_map(|c| &c.warnings) {
                ctx.note(&format!("warning: {w}"));
            }
            let result = probe::run(&mut gpu, args, &format!("GPU {ordinal}"), ctx.quiet);
            // Frees the probe's buffers before the sections that allocate their own.
            drop(gpu);
            interrupt::check(unwritten)?;
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
        let measured = memtune_probe::gpu::bandwidth::measure(ordinal, &id, args.quick, faults);
        section_of(measured, bar, unwritten, &mut failed)?
    };
    profile.shared_memory_staging = if args.no_staging {
        Section::not_measured("skipped (--no-staging)")
    } else {
        let mut bar = crate::progress::Bar::new(format!("GPU {ordinal}: staging"), ctx.quiet);
        let cancel = interrupt::token();
        let measured = memtune::launch::Runtime::open(ordinal)
            .map_err(memtune_probe::gpu::staging::StagingError::from)
            .and_then(|mut rt| {
                memtune_probe::gpu::staging::measure(
                    &mut rt,
                    args.quick,
                    faults,
                    &cancel,
                    &mut |f, d| bar.update(f, d),
                )
            });
        section_of(measured, bar, unwritten, &mut failed)?
    };
    if !args.no_tlb_confirm {
        cross_check_previous(ctx, &mut profile);
    }
    profile.provenance.duration_seconds = start.elapsed().as_secs_f64();
    Ok((profile, failed))
}

/// Checks the pinned and managed TLB levels against the previous probe of this GPU in the
/// user cache, else the project's `.memtune/` (`memtune_probe::cross_check`): a level stays
/// stable only where both probes found it.
fn cross_check_previous(ctx: &Ctx, profile: &mut Profile) {
    let uuid = profile.device.uuid.clone();
    let previous = [ctx.cache().ok().flatten(), Some(ctx.project())]
        .into_iter()
        .flatten()
        .find_map(|store| store.load(&uuid).ok().flatten());
    let when = previous
        .as_ref()
        .map_or(String::new(), |p| p.provenance.created_at.clone());
    for kind in MemoryKind::ALL.into_iter().filter(|&k| crosses_probes(k)) {
        let Section::Measured(tlb) = profile.tlb.get_mut(kind) else {
            continue;
        };
        let before = previous.as_ref().and_then(|p| p.tlb.get(kind).measured());
        cross_check(tlb, before.map(|b| (b, when.as_str())));
    }
}

/// The profile's section for the measurement `bar` showed, or `Err` if a Ctrl-C came
/// during it. The bar ends saying how it went; a failed measurement sets `failed`.
fn section_of<T, E: std::fmt::Display>(
    measured: Result<T, E>,
    bar: crate::progress::Bar,
    unwritten: &str,
    failed: &mut bool,
) -> Result<Section<T>, CliError> {
    interrupt::check(unwritten)?;
    bar.finish(if measured.is_ok() {
        "measured"
    } else {
        "failed"
    });
    Ok(measured.map_or_else(
        |e| {
            *failed = true;
            Section::failed(e.to_string())
        },
        Section::Measured,
    ))
}

/// Writes charts if asked, and reports where.
pub(super) fn plots(
    ctx: &Ctx,
    dir: Option<&Path>,
    profile: &Profile,
) -> Result<Vec<PathBuf>, CliError> {
    let Some(dir) = dir else {
        return Ok(Vec::new());
    };
    let written = probe::write_plots(dir, profile, ctx.write)?;
    for p in &written {
        ctx.note(&format!("chart: {}", p.display()));
    }
    Ok(written)
}

/// `cargo tune probe`: one GPU or a simulated one, into a file (or stdout for `-`). The
/// output is checked before the probe runs, and the profile validated before it is
/// written.
pub(super) fn probe_to_file(
    ctx: &Ctx,
    simulate: Option<&OsStr>,
    output: &Path,
    gpu: Option<usize>,
    args: &ProbeArgs,
) -> Result<Exit, CliError> {
    let to_stdout = userio::is_stdout(output);
    if to_stdout && ctx.json {
        return Err(CliError::new(
            Exit::Usage,
            "--json and -o - would both write to stdout; write the profile to a file, or drop --json",
        ));
    }
    files::check_output(output, ctx.write)?;
    if let Some(dir) = &args.plot {
        files::output_dir(dir, ctx.write)?;
    }
    let faults = faults_from_env(ctx)?;
    interrupt::install()?;
    let (mut profile, failed) = match simulate {
        Some(spec) => probe_simulated(ctx, spec, args, &faults)?,
        None => {
            let ordinal = gpu_ordinal(gpu)?;
            let id = device::identity(ordinal)?;
            probe_gpu(ctx, ordinal, id, args, args.record(), &faults, 1)?
        }
    };
    interrupt::check(&format!("nothing was written to {}", output.display()))?;
    let text = codec::to_json(&mut profile);
    validate::validate(&profile).map_err(|e| {
        CliError::new(
            Exit::InvalidProfile,
            format!(
                "the probe made a profile memtune would refuse to read: {e}; nothing was written to {}",
                output.display()
            ),
        )
    })?;
    files::write_output(output, text.as_bytes(), ctx.write)?;
    let charts = plots(ctx, args.plot.as_deref(), &profile)?;
    if ctx.json {
        print_json(
            &json!({"path": path_json(output), "uuid": profile.device.uuid, "simulated": profile.is_simulated(),
            "digest": profile.digest, "tlb": probe::summary(&profile), "caches": probe::cache_summary(&profile),
            "charts": paths_json(&charts), "profile": profile}),
        );
    } else {
        // With the profile on stdout, the summary goes to stderr.
        let say = |line: String| {
            if to_stdout {
                eprintln!("{line}");
            } else {
                println!("{line}");
            }
        };
        say(profile.device.name.clone());
        for line in probe::summary(&profile) {
            say(format!("  TLB {line}"));
        }
        for line in probe::cache_summary(&profile) {
            say(format!("  caches: {line}"));
        }
        let shown = if to_stdout {
            "stdout".into()
        } else {
            output.display().to_string()
        };
        say(format!("  profile written to {shown}"));
    }
    Ok(Exit::of_probe(failed))
}

/// A simulator error: a missing file exits 6, an unreadable one 5, any other 4.
fn sim_error(e: SimConfigError) -> CliError {
    let exit = match e.class() {
        ErrorClass::NotFound => Exit::NotFound,
        ErrorClass::Io => Exit::Io,
        ErrorClass::Invalid => Exit::InvalidProfile,
    };
    CliError::new(exit, e.to_string())
}

/// Probes the simulated GPU of `spec` (a built-in or a file), once its configuration and
/// the probe's work within the simulator's bounds are checked.
fn probe_simulated(
    ctx: &Ctx,
    spec: &OsStr,
    args: &ProbeArgs,
    faults: &Faults,
) -> Result<(Profile, bool), CliError> {
    let config = SimConfig::from_spec(spec).map_err(sim_error)?;
    config.check_work(&args.options()).map_err(sim_error)?;
    let start = Instant::now();
    let name = config.name.clone();
    for (op, section) in faults.iter() {
        if matches!(section, FaultSection::Bandwidth | FaultSection::Staging) {
            ctx.note(&format!(
                "warning: {FAULT_VARIABLE}: {}:{section} never fires: the simulator has no {section} section",
                op.as_str()
            ));
        }
    }
    let mut sim = Simulator::new(config).with_faults(faults.clone());
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
    let failed =
        probe::apply(&mut profile, &result) | probe::apply_caches(&mut profile, caches.as_ref());
    let unmodelled = "the simulator models TLBs, random access and caches only";
    profile.shared_memory_staging = Section::not_measured(unmodelled);
    profile.bandwidth = Section::not_measured(unmodelled);
    profile.provenance.duration_seconds = start.elapsed().as_secs_f64();
    Ok((profile, failed))
}

fn simulated_options(args: &ProbeArgs, spec: &OsStr) -> BTreeMap<String, serde_json::Value> {
    let mut options = args.record();
    options.insert("simulate".to_string(), json!(spec.to_string_lossy()));
    options
}
