//! Runs tuned-app's kernels on a GPU with the plans given (the compile-time ones, or those
//! re-made for this GPU) and checks each result against the CPU reference.

use crate::kernels::{ffi, KERNELS};
use crate::reference;
use cudarc::driver::{CudaContext, CudaModule, DeviceRepr, LaunchConfig, PushKernelArg};
use memtune::core::defines;
use memtune::core::plan::sampling::{SamplingPlan, SamplingWorkload};
use memtune::core::plan::stencil::{StencilPlan, StencilWorkload};
use memtune::kernels::embedded::Image;
use serde_json::{json, Value};
use std::error::Error;
use std::sync::Arc;

// SAFETY: plain C structs of integers and floats (bindgen's mirror of tuned_params.h),
// passed by value as the kernels declare them.
unsafe impl DeviceRepr for ffi::tuned_stencil_params {}
unsafe impl DeviceRepr for ffi::tuned_sampling_params {}

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// Threads of the sampling launch: each makes the workload's reads per thread.
const SAMPLING_BLOCKS: u32 = 4096;
const SAMPLING_BLOCK: u32 = 256;
const SEED: u64 = 0x5eed;

/// What one kernel did.
pub struct Checked {
    pub kernel: &'static str,
    /// `nvcc` (built with the crate) or `nvrtc` (compiled now).
    pub compiled_by: &'static str,
    pub correct: bool,
    pub detail: String,
}

impl Checked {
    pub fn json(&self) -> Value {
        json!({"kernel": self.kernel, "compiled_by": self.compiled_by, "correct": self.correct, "detail": self.detail})
    }
}

/// Loads `source` for this GPU: the build's image when the plan is the compile-time one
/// (`overrides` empty), else NVRTC with the re-made plan's defines.
fn module(
    ctx: &Arc<CudaContext>,
    source: &str,
    arch: &str,
    overrides: &[(String, String)],
) -> Result<(Arc<CudaModule>, &'static str)> {
    let image = if overrides.is_empty() {
        KERNELS.image(source, arch)?
    } else {
        let pairs: Vec<(&str, &str)> = overrides
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        Image::Compiled(KERNELS.compile_with(source, arch, &pairs)?)
    };
    let by = if image.is_prebuilt() { "nvcc" } else { "nvrtc" };
    Ok((ctx.load_module(image.to_cudarc())?, by))
}

/// The plans to run with. `recompile_*`: the plan differs from the compile-time one, so
/// the source is compiled again with its defines.
pub struct Plans<'a> {
    pub sampling: &'a SamplingPlan,
    pub sampling_workload: SamplingWorkload,
    pub recompile_sampling: bool,
    pub stencil: &'a StencilPlan,
    pub stencil_workload: StencilWorkload,
    pub recompile_stencil: bool,
}

/// Runs both kernels on GPU `ordinal` (architecture `arch`, e.g. `sm_90`).
pub fn run(ordinal: usize, arch: &str, plans: &Plans) -> Result<Vec<Checked>> {
    let (sampling, stencil) = (plans.sampling, plans.stencil);
    let (recompile_sampling, recompile_stencil) =
        (plans.recompile_sampling, plans.recompile_stencil);
    let region_bytes = plans.sampling_workload.region_bytes;
    let reads = plans.sampling_workload.reads_per_thread;
    let dims = plans.stencil_workload.dims;
    let ctx = CudaContext::new(ordinal)?;
    let mut out = Vec::new();

    let overrides = if recompile_sampling {
        defines::sampling("MEMTUNE_SAMPLING_", sampling)
    } else {
        Vec::new()
    };
    let (m, by) = module(&ctx, "sampling.cu", arch, &overrides)?;
    let got = run_sampling(&ctx, &m, sampling, region_bytes, reads)?;
    let threads = u64::from(SAMPLING_BLOCKS * SAMPLING_BLOCK);
    let want = reference::sampling_sum(threads, reads, region_bytes / 4, SEED);
    out.push(Checked {
        kernel: "tuned_sample",
        compiled_by: by,
        correct: got == want,
        detail: format!(
            "{} passes over scopes of {} bytes: sum {got}, CPU reference {want}",
            sampling.passes, sampling.scope_bytes
        ),
    });

    let overrides = if recompile_stencil {
        defines::stencil("MEMTUNE_STENCIL_", stencil)
    } else {
        Vec::new()
    };
    let (m, by) = module(&ctx, "stencil.cu", arch, &overrides)?;
    let (err, cells) = run_stencil(&ctx, &m, stencil, dims)?;
    out.push(Checked {
        kernel: "tuned_stencil",
        compiled_by: by,
        correct: err <= 1e-5,
        detail: format!(
            "{:?} block {:?}: {cells} cells, largest relative difference from the CPU reference {err:e}",
            stencil.variant, stencil.block
        ),
    });
    Ok(out)
}

fn run_sampling(
    ctx: &Arc<CudaContext>,
    m: &Arc<CudaModule>,
    plan: &SamplingPlan,
    region_bytes: u64,
    reads: u32,
) -> Result<u64> {
    let stream = ctx.default_stream();
    let n_words = region_bytes / 4;
    let mut data = stream.alloc_zeros::<u32>(usize::try_from(n_words)?)?;
    let mut sum = stream.alloc_zeros::<u64>(1)?;
    let fill = m.load_function("tuned_fill")?;
    let sample = m.load_function("tuned_sample")?;
    let mut launch = stream.launch_builder(&fill);
    launch.arg(&mut data).arg(&n_words);
    // SAFETY: tuned_fill writes words below n_words of `data`, which holds n_words.
    unsafe { launch.launch(LaunchConfig::for_num_elems(1 << 20)) }?;
    for pass in 0..plan.passes {
        let params = ffi::tuned_sampling_params {
            n_words,
            seed: SEED,
            reads,
            pass,
        };
        let mut launch = stream.launch_builder(&sample);
        launch.arg(&data).arg(&params).arg(&mut sum);
        let config = LaunchConfig {
            grid_dim: (SAMPLING_BLOCKS, 1, 1),
            block_dim: (SAMPLING_BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: tuned_sample reads words below n_words of `data` and adds to `sum[0]`.
        unsafe { launch.launch(config) }?;
    }
    let host = stream.clone_dtoh(&sum)?;
    stream.synchronize()?;
    Ok(host[0])
}

/// The largest relative difference from the CPU reference, and the cells compared.
fn run_stencil(
    ctx: &Arc<CudaContext>,
    m: &Arc<CudaModule>,
    plan: &StencilPlan,
    dims: [u32; 3],
) -> Result<(f32, usize)> {
    let stream = ctx.default_stream();
    let cells = dims.iter().map(|&d| d as usize).product::<usize>();
    let input: Vec<f32> = (0..cells)
        .map(|i| (reference::mix(i as u64) % 1000) as f32 / 1000.0)
        .collect();
    let d_in = stream.clone_htod(&input)?;
    let mut d_out = stream.alloc_zeros::<f32>(cells)?;
    let params = ffi::tuned_stencil_params {
        nx: dims[0],
        ny: dims[1],
        nz: dims[2],
        center: 0.4,
        neighbour: 0.1,
    };
    let f = m.load_function("tuned_stencil")?;
    let [bx, by, bz] = plan.block;
    let config = LaunchConfig {
        grid_dim: (
            dims[0].div_ceil(bx),
            dims[1].div_ceil(by),
            dims[2].div_ceil(bz),
        ),
        block_dim: (bx, by, bz),
        shared_mem_bytes: 0,
    };
    let mut launch = stream.launch_builder(&f);
    launch.arg(&d_in).arg(&mut d_out).arg(&params);
    // SAFETY: the kernel reads and writes cells below nx * ny * nz, which both buffers hold.
    unsafe { launch.launch(config) }?;
    let got = stream.clone_dtoh(&d_out)?;
    stream.synchronize()?;
    let want = reference::stencil(&input, dims, params.center, params.neighbour);
    Ok((reference::max_relative_error(&got, &want), cells))
}
