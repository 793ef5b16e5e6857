//! `cargo tune reuse --mode exact-gpu [--gpus all] [--speedup]`: the exact analysis on one
//! or several GPUs (`memtune::reuse`). The trace is held in memory (8 bytes a reference, at
//! most `nextuse::MAX_REFERENCES`), then cut into one part per GPU. `--mode hp-rda-gpu`:
//! HP-RDA on one GPU (`memtune::reuse::hprda`), the trace held the same way.

use super::reuse::ReuseArgs;
use crate::exit::{CliError, Exit};
use memtune::reuse::hprda::{self as gpu_hprda, HpRdaGpu, HpRdaGpuError};
use memtune::reuse::replay::{self, ReplayError, Replayed};
use memtune::reuse::{self as gpu_reuse, GpuAnalysis, GpuReuseError};
use memtune_core::profile::{MemoryKind, Profile, Section};
use memtune_core::reuse::hprda::{
    Adjust, DEFAULT_BLOCKS, DEFAULT_SUB_TRACE, DEFAULT_THREADS_PER_BLOCK,
};
use memtune_core::reuse::levels::{self, Prediction};
use memtune_core::reuse::nextuse::MAX_REFERENCES;
use memtune_core::reuse::{Analyzer, Histogram, HpRdaConfig, Mode, ReuseError};
use serde_json::{json, Value};

/// How the histogram is computed: a CPU mode, exact on these GPUs, or HP-RDA on one.
#[derive(Debug, Clone, PartialEq)]
pub enum Method {
    Cpu(Mode),
    Gpu(Vec<usize>),
    HpRdaGpu { config: HpRdaConfig, ordinal: usize },
}

impl Method {
    pub fn name(&self) -> &'static str {
        match self {
            Method::Cpu(m) => m.name(),
            Method::Gpu(_) => "exact-gpu",
            Method::HpRdaGpu { .. } => "hp-rda-gpu",
        }
    }

    /// HP-RDA's parameters, on the CPU or the GPU.
    pub fn hp_rda(&self) -> Option<&HpRdaConfig> {
        match self {
            Method::Cpu(Mode::HpRda(c)) | Method::HpRdaGpu { config: c, .. } => Some(c),
            _ => None,
        }
    }
}

/// `--adjust`'s value.
pub(super) fn parse_adjust(s: &str) -> Result<Adjust, String> {
    s.parse().map_err(|e: ReuseError| e.to_string())
}

/// HP-RDA's parameters from `--sub-trace`, `--threads-per-block`, `--blocks`, `--adjust`
/// and `--no-adjust` (the paper's defaults where not given); a launch past the bound is
/// usage.
pub fn hp_rda_config(args: &ReuseArgs) -> Result<HpRdaConfig, CliError> {
    let config = HpRdaConfig {
        sub_trace: args.sub_trace.map_or(DEFAULT_SUB_TRACE, |v| v as usize),
        threads_per_block: args
            .threads_per_block
            .map_or(DEFAULT_THREADS_PER_BLOCK, |v| v as usize),
        blocks: args.blocks.map_or(DEFAULT_BLOCKS, |v| v as usize),
        adjust: match (args.adjust, args.no_adjust) {
            (_, true) => Adjust::None,
            (a, false) => a.unwrap_or_default(),
        },
    };
    config
        .launch_len()
        .map_err(|e| CliError::new(Exit::Usage, e.to_string()))?;
    Ok(config)
}

/// The GPUs of `--gpus`: `all`, or ordinals separated by commas; without it, the GPU of
/// `MEMTUNE_DEVICE`, else GPU 0.
pub fn parse_gpus(arg: Option<&str>) -> Result<Vec<usize>, CliError> {
    let usage = |m: String| CliError::new(Exit::Usage, m);
    let Some(arg) = arg else {
        return Ok(vec![crate::env::gpu_ordinal(None)?]);
    };
    if arg.trim() == "all" {
        let n = memtune::device::list()?.len();
        return Ok((0..n).collect());
    }
    let mut ordinals = Vec::new();
    for part in arg.split(',') {
        let o: usize = part.trim().parse().map_err(|_| {
            usage(format!(
                "--gpus {arg}: give `all` or GPU ordinals separated by commas (`cargo tune devices` lists them)"
            ))
        })?;
        if ordinals.contains(&o) {
            return Err(usage(format!("--gpus {arg}: GPU {o} is named twice")));
        }
        ordinals.push(o);
    }
    Ok(ordinals)
}

/// Buffers a granularity's items for the GPUs.
pub struct GpuEngine {
    items: Vec<u64>,
    ordinals: Vec<usize>,
}

/// Buffers a granularity's items for HP-RDA on one GPU.
pub struct HpRdaEngine {
    items: Vec<u64>,
    config: HpRdaConfig,
    ordinal: usize,
}

/// An analyzer of any kind, fed batch by batch.
pub enum Engine {
    Cpu(Box<Analyzer>),
    Gpu(GpuEngine),
    HpRdaGpu(HpRdaEngine),
}

impl Engine {
    pub fn push(&mut self, items: &[u64]) -> Result<(), CliError> {
        match self {
            Engine::Cpu(a) => a.push(items).map_err(super::reuse::reuse_error),
            Engine::Gpu(g) => {
                let n = g.items.len() as u64 + items.len() as u64;
                if n > MAX_REFERENCES {
                    return Err(gpu_error(GpuReuseError::TooLong { references: n }));
                }
                g.items.extend_from_slice(items);
                Ok(())
            }
            Engine::HpRdaGpu(h) => {
                let n = h.items.len() as u64 + items.len() as u64;
                if n > gpu_hprda::MAX_REFERENCES {
                    return Err(hp_rda_error(HpRdaGpuError::TooLong { references: n }));
                }
                h.items.extend_from_slice(items);
                Ok(())
            }
        }
    }

    /// Whether it runs on a GPU once the trace is read.
    pub fn on_gpu(&self) -> bool {
        !matches!(self, Engine::Cpu(_))
    }

    /// The histogram; on GPUs with what each did, and with `speedup` (several GPUs) the
    /// same analysis on the first GPU alone.
    pub fn finish(self, speedup: bool) -> Result<(Histogram, Option<GpuReport>), CliError> {
        match self {
            Engine::Cpu(a) => Ok((a.finish().map_err(super::reuse::reuse_error)?, None)),
            Engine::Gpu(g) => {
                let all = gpu_reuse::analyze(&g.items, &g.ordinals).map_err(gpu_error)?;
                let one = if speedup && g.ordinals.len() > 1 {
                    Some(gpu_reuse::analyze(&g.items, &g.ordinals[..1]).map_err(gpu_error)?)
                } else {
                    None
                };
                let histogram = all.histogram.clone();
                Ok((histogram, Some(GpuReport::Exact { all, one })))
            }
            Engine::HpRdaGpu(h) => {
                let run =
                    gpu_hprda::analyze(&h.items, h.config, h.ordinal).map_err(hp_rda_error)?;
                let histogram = run.histogram.clone();
                Ok((histogram, Some(GpuReport::HpRda(run))))
            }
        }
    }
}

/// A new engine for `method`, CPU analyzers taking `options`.
pub fn engine(
    method: &Method,
    options: &memtune_core::reuse::Options,
) -> Result<Engine, ReuseError> {
    Ok(match method {
        Method::Cpu(mode) => Engine::Cpu(Box::new(Analyzer::new(*mode, options)?)),
        Method::Gpu(ordinals) => Engine::Gpu(GpuEngine {
            items: Vec::new(),
            ordinals: ordinals.clone(),
        }),
        Method::HpRdaGpu { config, ordinal } => Engine::HpRdaGpu(HpRdaEngine {
            items: Vec::new(),
            config: *config,
            ordinal: *ordinal,
        }),
    })
}

fn gpu_error(e: GpuReuseError) -> CliError {
    let exit = match e {
        GpuReuseError::TooLong { .. } | GpuReuseError::NoGpu => Exit::Usage,
        GpuReuseError::Gpu {
            source: memtune::gpu::Error::Device(_),
            ..
        } => Exit::NoGpu,
        _ => Exit::Internal,
    };
    CliError::new(exit, format!("exact-gpu: {e}"))
}

fn hp_rda_error(e: HpRdaGpuError) -> CliError {
    let exit = match &e {
        HpRdaGpuError::TooLong { .. } | HpRdaGpuError::Config(_) => Exit::Usage,
        HpRdaGpuError::TooBig { .. } => Exit::InvalidProfile,
        HpRdaGpuError::Gpu {
            source: memtune::gpu::Error::Device(_),
            ..
        } => {
            return CliError::new(
                Exit::NoGpu,
                format!(
                    "hp-rda-gpu: {e}\n--mode hp-rda runs the same analysis on the CPU, with \
                     the same histogram"
                ),
            )
        }
        HpRdaGpuError::Gpu { .. } | HpRdaGpuError::Lost { .. } => Exit::Internal,
    };
    CliError::new(exit, format!("hp-rda-gpu: {e}"))
}

/// What the GPUs did.
pub enum GpuReport {
    /// exact-gpu: the analysis on every GPU asked, and on the first alone.
    Exact {
        all: GpuAnalysis,
        one: Option<GpuAnalysis>,
    },
    /// hp-rda-gpu, on one GPU.
    HpRda(HpRdaGpu),
}

impl GpuReport {
    /// One GPU's seconds over all GPUs' seconds.
    pub fn speedup(&self) -> Option<f64> {
        let GpuReport::Exact { all, one } = self else {
            return None;
        };
        let one = one.as_ref()?;
        (all.seconds > 0.0).then(|| one.seconds / all.seconds)
    }

    /// Whether the one-GPU histogram equals the all-GPU one (it must).
    pub fn agrees(&self) -> Option<bool> {
        let GpuReport::Exact { all, one } = self else {
            return None;
        };
        Some(one.as_ref()?.histogram == all.histogram)
    }

    pub fn to_json(&self) -> Value {
        let (all, one) = match self {
            GpuReport::Exact { all, one } => (all, one),
            GpuReport::HpRda(h) => return hp_rda_json(h),
        };
        let parts: Vec<Value> = all
            .parts
            .iter()
            .map(|p| {
                json!({"ordinal": p.ordinal, "uuid": p.uuid, "references": p.references,
                "seconds": p.seconds, "phase_seconds": p.phase_seconds,
                "upload_seconds": p.upload_seconds, "radix_passes": p.radix_passes})
            })
            .collect();
        json!({
            "seconds": all.seconds,
            "histogram_seconds": all.histogram_seconds,
            "parts": parts,
            "one_gpu_seconds": one.as_ref().map(|o| o.seconds),
            "speedup": self.speedup(),
            "one_gpu_histogram_equal": self.agrees(),
        })
    }

    pub fn print(&self) {
        let (all, one) = match self {
            GpuReport::Exact { all, one } => (all, one),
            GpuReport::HpRda(h) => return hp_rda_print(h),
        };
        println!(
            "\nexact-gpu: {:.3} s on {} GPU(s), from the trace in memory to the distance counts merged (reading the trace, compiling the kernels and freeing the GPUs not counted); {:.3} s more to build the histogram on the CPU",
            all.seconds,
            all.parts.len(),
            all.histogram_seconds
        );
        for p in &all.parts {
            let [a, b, c] = p.phase_seconds;
            println!(
                "  GPU {} {}: {} references, {:.3} s (upload and sort items {a:.3} s, of which upload {:.3} s, {} radix passes; resolve and sort next uses {b:.3} s; count {c:.3} s)",
                p.ordinal, p.uuid, p.references, p.seconds, p.upload_seconds, p.radix_passes
            );
        }
        if let (Some(one), Some(s), Some(same)) = (one, self.speedup(), self.agrees()) {
            println!(
                "  one GPU alone: {:.3} s; speed-up {s:.2}x; histograms {}",
                one.seconds,
                if same { "identical" } else { "DIFFER" }
            );
        }
    }
}

fn hp_rda_json(h: &HpRdaGpu) -> Value {
    json!({
        "ordinal": h.ordinal,
        "uuid": h.uuid,
        "kept_references": h.kept,
        "launches": h.launches,
        "radix_passes": h.radix_passes,
        "seconds": h.seconds,
        "upload_seconds": h.upload_seconds,
        "preprocess_seconds": h.preprocess_seconds,
        "thread_seconds": h.thread_seconds,
        "merge_seconds": h.merge_seconds,
        "read_seconds": h.read_seconds,
        "histogram_seconds": h.histogram_seconds,
    })
}

fn hp_rda_print(h: &HpRdaGpu) {
    println!(
        "\nhp-rda-gpu: {:.3} s on GPU {} {}, from the trace in memory to the distance counts read back (reading the trace, compiling the kernels and freeing the GPU not counted); {:.3} s more to build the histogram on the CPU",
        h.seconds,
        h.ordinal,
        h.uuid.as_deref().unwrap_or("(no GPU needed)"),
        h.histogram_seconds
    );
    println!(
        "  upload {:.3} s; preprocessing {:.3} s ({} references kept); {} launch(es): thread level {:.3} s, sort ({} radix passes) and merges {:.3} s; read back {:.3} s",
        h.upload_seconds,
        h.preprocess_seconds,
        h.kept,
        h.launches,
        h.thread_seconds,
        h.radix_passes,
        h.merge_seconds,
        h.read_seconds
    );
}

/// `--gpu-replay`: the trace's addresses, kept for the replay after the analysis.
pub struct GpuReplay {
    addresses: Vec<u64>,
}

impl GpuReplay {
    /// `Some` when asked; the replay runs in device memory, so its prediction is of
    /// device memory's TLB levels.
    pub fn new(asked: bool, memory: MemoryKind) -> Result<Option<GpuReplay>, CliError> {
        if asked && memory != MemoryKind::Device {
            return Err(CliError::new(
                Exit::Usage,
                "--gpu-replay runs in device memory: give --memory device",
            ));
        }
        Ok(asked.then(|| GpuReplay {
            addresses: Vec::new(),
        }))
    }

    pub fn push(&mut self, batch: &[u64]) -> Result<(), CliError> {
        let n = self.addresses.len() as u64 + batch.len() as u64;
        if n > replay::MAX_REFERENCES {
            return Err(replay_error(ReplayError::TooLong(n)));
        }
        self.addresses.extend_from_slice(batch);
        Ok(())
    }

    /// Replays on the GPU and predicts from `predictions` and the profile's DRAM latency.
    pub fn run(
        self,
        profile: Option<&Profile>,
        predictions: &[Prediction],
    ) -> Result<ReplayReport, CliError> {
        let dram = profile.and_then(|p| match &p.caches {
            Section::Measured(c) => c.dram_latency_cycles,
            _ => None,
        });
        let predicted = dram.and_then(|d| levels::mean_latency(predictions, d));
        // The L1 hit latency a pointer chase measured: the replay loop's extra cost per
        // load is its time on an L1 hit beyond that.
        let l1 = predictions
            .iter()
            .filter(|p| p.level.kind == levels::LevelKind::Cache)
            .min_by_key(|p| p.level.bytes)
            .and_then(|p| p.level.cycles);
        let ordinal = crate::env::gpu_ordinal(None)?;
        let measured = replay::replay(ordinal, &self.addresses).map_err(replay_error)?;
        let overhead = l1.map(|l| (measured.l1_loop_cycles - l).max(0.0));
        Ok(ReplayReport {
            measured,
            predicted,
            overhead,
        })
    }
}

fn replay_error(e: ReplayError) -> CliError {
    let exit = match &e {
        ReplayError::TooLong(_) | ReplayError::TooWide(_) => Exit::InvalidProfile,
        ReplayError::Gpu(memtune::gpu::Error::Device(_)) => Exit::NoGpu,
        ReplayError::Gpu(_) => Exit::Internal,
    };
    CliError::new(exit, format!("--gpu-replay: {e}"))
}

/// The replay's mean latency beside the prediction.
pub struct ReplayReport {
    pub measured: Replayed,
    /// `None` when the profile has no cache section.
    pub predicted: Option<f64>,
    /// The replay loop's cycles per load beyond the profile's L1 hit latency (measured on
    /// an L1 hit), taken off the measured mean; `None` without an L1 level.
    pub overhead: Option<f64>,
}

impl ReplayReport {
    /// The measured mean latency: the replay's cycles per load less its loop overhead.
    pub fn latency(&self) -> f64 {
        self.measured.mean_cycles - self.overhead.unwrap_or(0.0)
    }

    /// Predicted over measured mean latency.
    pub fn ratio(&self) -> Option<f64> {
        let m = self.latency();
        self.predicted.filter(|_| m > 0.0).map(|p| p / m)
    }

    pub fn to_json(&self) -> Value {
        json!({
            "loads": self.measured.loads,
            "span_bytes": self.measured.span_bytes,
            "chunked": self.measured.chunked,
            "replay_cycles": self.measured.mean_cycles,
            "l1_loop_cycles": self.measured.l1_loop_cycles,
            "loop_overhead_cycles": self.overhead,
            "measured_cycles": self.latency(),
            "predicted_cycles": self.predicted,
            "predicted_over_measured": self.ratio(),
        })
    }

    pub fn print(&self) {
        let predicted = self.predicted.map_or_else(
            || "no prediction (the profile has no cache section)".to_string(),
            |p| format!("{p:.1} cycles predicted from the levels above"),
        );
        let ratio = self
            .ratio()
            .map_or(String::new(), |r| format!(" (predicted/measured {r:.3})"));
        let overhead = self.overhead.map_or(String::new(), |o| {
            format!(
                " ({:.1} less the loop's {o:.1} beyond an L1 hit)",
                self.measured.mean_cycles
            )
        });
        println!(
            "\nGPU replay (device memory, one thread, dependent loads): {} loads, {:.1} cycles each measured{overhead}; {predicted}{ratio}",
            self.measured.loads,
            self.latency()
        );
    }
}
