//! Running the probe (on the GPU or the simulator) and putting its results into a profile.

use super::render::bytes;
use super::stage_times::StageTimes;
use crate::exit::CliError;
use crate::plot;
use crate::progress::Bar;
use crate::size;
use clap::Args;
use memtune_core::profile::{CacheHierarchy, CachePath, MemoryKind, Profile, Section};
use memtune_core::userio::WriteOptions;
use memtune_probe::{
    probe_caches, probe_tlb, CacheProbeResult, MemorySystem, PerKindResult, ProbeOptions,
    ProgressEvent, Stage,
};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Options of the probe, shared by `cargo tune` and `cargo tune probe`.
#[derive(Debug, Args, Clone)]
pub struct ProbeArgs {
    /// Coarser sweeps (boundaries within about 8% instead of 4%), for a first look.
    #[arg(long)]
    pub quick: bool,
    /// Memory kinds to probe, comma-separated (default: device,pinned,managed).
    #[arg(long, value_delimiter = ',')]
    pub kinds: Vec<MemoryKind>,
    /// Upper bound on every footprint and region.
    #[arg(long, value_parser = size::parse, value_name = "SIZE")]
    pub max_footprint: Option<u64>,
    /// Upper bound on device memory taken (default: 80% of the free memory).
    #[arg(long, value_parser = size::parse, value_name = "SIZE")]
    pub max_device: Option<u64>,
    /// Upper bound on pinned host memory taken (default: a quarter of the available host
    /// memory, shared among the GPUs probed at once, at most 8 GiB each).
    #[arg(long, value_parser = size::parse, value_name = "SIZE")]
    pub max_pinned: Option<u64>,
    /// Upper bound on managed memory taken (default and ceiling: half the free device
    /// memory; more could hang the GPU).
    #[arg(long, value_parser = size::parse, value_name = "SIZE")]
    pub max_managed: Option<u64>,
    /// Also find which SMs share each TLB level (slower).
    #[arg(long)]
    pub tlb_sharing: bool,
    /// Skip the confirmation of TLB levels (each level measured again on a fresh
    /// allocation; unconfirmed levels are then all kept as found).
    #[arg(long)]
    pub no_tlb_confirm: bool,
    /// Skip the random-access throughput curves.
    #[arg(long)]
    pub no_random_access: bool,
    /// Skip the copy and zero-copy bandwidths (GPU only).
    #[arg(long)]
    pub no_bandwidth: bool,
    /// Skip the shared-memory staging table of the 3-D stencil (GPU only).
    #[arg(long)]
    pub no_staging: bool,
    /// Skip the cache hierarchy (L1, L2, constant caches, DRAM and shared-memory latency).
    #[arg(long)]
    pub no_caches: bool,
    /// Write SVG charts (TLB curves and random-access throughput per kind, cache latency
    /// per load path) into DIR.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
}

impl ProbeArgs {
    pub fn options(&self) -> ProbeOptions {
        ProbeOptions {
            kinds: self.kinds.clone(),
            max_footprint_bytes: self.max_footprint,
            quick: self.quick,
            tlb_sharing: self.tlb_sharing,
            random_access: !self.no_random_access,
            confirm_tlb: !self.no_tlb_confirm,
            cancel: crate::interrupt::token(),
            ..ProbeOptions::default()
        }
    }

    /// The options as recorded in the profile's provenance.
    pub fn record(&self) -> BTreeMap<String, Value> {
        let mut m = BTreeMap::new();
        m.insert("quick".into(), json!(self.quick));
        m.insert("kinds".into(), json!(self.kinds));
        m.insert("max_footprint_bytes".into(), json!(self.max_footprint));
        m.insert("max_device_bytes".into(), json!(self.max_device));
        m.insert("max_pinned_bytes".into(), json!(self.max_pinned));
        m.insert("max_managed_bytes".into(), json!(self.max_managed));
        m.insert("tlb_sharing".into(), json!(self.tlb_sharing));
        m.insert("tlb_confirm".into(), json!(!self.no_tlb_confirm));
        m.insert("random_access".into(), json!(!self.no_random_access));
        m.insert("bandwidth".into(), json!(!self.no_bandwidth));
        m.insert("staging".into(), json!(!self.no_staging));
        m.insert("caches".into(), json!(!self.no_caches));
        m
    }
}

fn describe(event: &ProgressEvent) -> String {
    let kind = event.kind;
    match event.stage {
        Stage::TlbSweep { stride_bytes } => {
            format!("{kind}: TLB sweep, stride {}", bytes(stride_bytes))
        }
        Stage::TlbConfirm { window, windows } => {
            format!("{kind}: confirming TLB levels, {window}/{windows}")
        }
        Stage::TlbSharing { level } => format!("{kind}: sharing of level {}", level + 1),
        Stage::RandomAccess { region_bytes } => {
            format!("{kind}: random access, {}", bytes(region_bytes))
        }
        Stage::KindDone => format!("{kind}: done"),
        Stage::Caches { path, carveout } => {
            format!("caches: {path:?} path, {carveout:?} carveout")
        }
    }
}

/// Runs the TLB probe with a progress bar on stderr.
pub fn run(
    system: &mut dyn MemorySystem,
    args: &ProbeArgs,
    label: &str,
    quiet: bool,
) -> PerKindResult {
    let mut bar = Bar::new(label, quiet);
    let mut times = StageTimes::start();
    let result = probe_tlb(system, &args.options(), &mut |e: &ProgressEvent| {
        times.record(e);
        bar.update(e.fraction, &describe(e))
    });
    bar.finish(&format!(
        "{} chases, {} random-access runs ({})",
        result.chase_calls,
        result.random_access_calls,
        times.summary()
    ));
    result
}

/// Runs the cache probe with a progress bar on stderr; `None` with `--no-caches`.
pub fn run_caches(
    system: &mut dyn MemorySystem,
    args: &ProbeArgs,
    label: &str,
    quiet: bool,
) -> Option<CacheProbeResult> {
    if args.no_caches {
        return None;
    }
    let mut bar = Bar::new(label, quiet);
    let mut times = StageTimes::start();
    let result = probe_caches(system, &args.options(), &mut |e: &ProgressEvent| {
        times.record(e);
        bar.update(e.fraction, &describe(e))
    });
    bar.finish(&format!(
        "{} cache chases: {} ({})",
        result.chase_calls,
        result.section.status_line(),
        times.summary()
    ));
    Some(result)
}

/// Puts the cache section into the profile, with the L2 size cross-checked against the
/// device attribute; returns whether it failed.
pub fn apply_caches(profile: &mut Profile, result: Option<&CacheProbeResult>) -> bool {
    profile.caches = match result {
        None => Section::not_measured("skipped (--no-caches)"),
        Some(r) => r.section.clone(),
    };
    let attribute = profile.device.l2_bytes;
    if let Section::Measured(h) = &mut profile.caches {
        if let Some(l2) = whole_l2(h) {
            let measured = l2.size_bytes as f64;
            if attribute > 0 && (measured - attribute as f64).abs() > 0.1 * attribute as f64 {
                l2.attribute_bytes = Some(attribute);
            }
        }
    }
    matches!(profile.caches, Section::Failed { .. })
}

/// The last level of the L2 path: the whole L2 (past a partition plateau, if any).
fn whole_l2(h: &mut CacheHierarchy) -> Option<&mut memtune_core::profile::CacheLevel> {
    h.levels.iter_mut().rev().find(|l| l.path == CachePath::L2)
}

/// Lines for the summary: one per cache level, then DRAM and shared memory.
pub fn cache_summary(profile: &Profile) -> Vec<String> {
    let Section::Measured(h) = &profile.caches else {
        return vec![profile.caches.status_line()];
    };
    let mut lines: Vec<String> = h
        .levels
        .iter()
        .map(|l| {
            let mut line = format!(
                "{} ({} path, {}): {}, line {}, {} ways, {:.0} cycles",
                l.name,
                l.path,
                l.carveout,
                l.size_shown(bytes),
                crate::report::cache_line(l).unwrap_or_else(|| "unknown".to_string()),
                l.ways.map_or("unknown".to_string(), |w| w.to_string()),
                l.hit_latency_cycles
            );
            if let Some(n) = crate::report::sharing_note(l) {
                line.push_str(&format!("; {n}"));
            }
            if let Some(a) = l.attribute_bytes {
                line.push_str(&format!(
                    "; the device reports {} ({:+.0}%)",
                    bytes(a),
                    (l.size_bytes as f64 / a as f64 - 1.0) * 100.0
                ));
            }
            line
        })
        .collect();
    let cycles =
        |c: Option<f64>| c.map_or("not measured".to_string(), |c| format!("{c:.0} cycles"));
    lines.push(format!(
        "DRAM {}, shared memory {}",
        cycles(h.dram_latency_cycles),
        cycles(h.shared_memory_latency_cycles)
    ));
    if let Some(d) = &h.dram_latency_distribution {
        lines.push(format!("DRAM {d}"));
    }
    lines
}

/// Puts the probe's sections into the profile; returns whether any kind failed.
pub fn apply(profile: &mut Profile, result: &PerKindResult) -> bool {
    profile.tlb = result.tlb_sections();
    profile.random_access = result.random_access_sections();
    MemoryKind::ALL.iter().any(|&k| {
        matches!(profile.tlb.get(k), Section::Failed { .. })
            || matches!(profile.random_access.get(k), Section::Failed { .. })
    })
}

/// One line per kind for the summary: levels (unstable ones marked) or "no TLB miss up to
/// N", or why not.
pub fn summary(profile: &Profile) -> Vec<String> {
    MemoryKind::ALL
        .iter()
        .map(|&k| match profile.tlb.get(k) {
            Section::Measured(t) if t.levels.is_empty() && t.unstable_levels.is_empty() => {
                format!("{k}: no TLB miss up to {}", bytes(t.swept_up_to_bytes))
            }
            Section::Measured(t) => {
                let levels: Vec<String> = t
                    .all_levels()
                    .into_iter()
                    .map(|(l, stable)| {
                        format!(
                            "{} x {} (+{:.0} cycles){}",
                            l.entries,
                            bytes(l.page_bytes),
                            l.miss_penalty_cycles,
                            if stable { "" } else { " unstable" }
                        )
                    })
                    .collect();
                format!("{k}: {}", levels.join(", "))
            }
            other => format!("{k}: {}", other.status_line()),
        })
        .collect()
}

/// Writes `tlb-<kind>.svg` and `random-access-<kind>.svg` for every measured kind, and
/// `caches-<path>.svg` per load path measured, into `dir` (created if missing; a chart
/// there is replaced only if it is a regular file).
pub fn write_plots(
    dir: &Path,
    profile: &Profile,
    opts: WriteOptions,
) -> Result<Vec<PathBuf>, CliError> {
    let dir = &crate::files::output_dir(dir, opts)?;
    let name = &profile.device.name;
    let mut charts = Vec::new();
    for kind in MemoryKind::ALL {
        if let Section::Measured(t) = profile.tlb.get(kind) {
            charts.push((format!("tlb-{kind}.svg"), plot::tlb_chart(name, kind, t)));
        }
        if let Section::Measured(r) = profile.random_access.get(kind) {
            charts.push((
                format!("random-access-{kind}.svg"),
                plot::random_access_chart(name, kind, r),
            ));
        }
    }
    if let Section::Measured(h) = &profile.caches {
        for path in [CachePath::L1, CachePath::L2, CachePath::Constant] {
            if let Some(chart) = plot::cache_chart(name, path, h) {
                charts.push((format!("caches-{path}.svg"), chart));
            }
        }
    }
    let mut svgs: Vec<(String, String)> = charts
        .into_iter()
        .map(|(file, chart)| (file, chart.to_svg()))
        .collect();
    if let Section::Measured(t) = &profile.shared_memory_staging {
        svgs.push((
            "staging.svg".to_string(),
            crate::plot::staging::staging_svg(name, t),
        ));
    }
    let mut written = Vec::new();
    for (file, svg) in svgs {
        let path = dir.join(file);
        crate::files::write_file(&path, svg.as_bytes(), opts)?;
        written.push(path);
    }
    Ok(written)
}
