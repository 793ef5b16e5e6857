//! user-stencil: a user's own 27-point stencil, autotuned by memtune.
//!
//! `user-stencil [--dims 384x256x192] [--dtype f32|f64] [--repeats 1]`: tunes the kernel
//! for that volume (a stored decision where there is one: then nothing is timed), runs the
//! chosen plan and checks its output.
//! `user-stencil --bench [--grids ...] [--json FILE]`: untuned, model, autotuned and
//! sweep-best plans, timed. Exit codes: 0 success, 1 a failure (CUDA, NVRTC, a wrong
//! output), 2 bad arguments or a volume too large, 3 no GPU.

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use memtune_example_support::args::device_limit;
use memtune_example_support::session::{self, Rows};

use memtune::autotune::Autotuner;
use memtune::core::plan::Dtype;
use memtune::core::size::format_bytes;
use memtune::StencilConsts;
use user_stencil::args::{self, Config};
use user_stencil::bench;
use user_stencil::gpu::{Gpu, Volume};
use user_stencil::reference::{self, Real};
use user_stencil::report::{self, Row};
use user_stencil::{Case, StencilError};

/// The macro at compile time, for a fixed workload, before any GPU is seen: planned from a
/// recorded H100 profile (a user would commit their own to `.memtune/` with
/// `cargo tune --project` and drop the `profile` argument).
const SHOWN: StencilConsts = memtune::stencil_plan!(
    dims = 512x512x512,
    dtype = f32,
    repeats = 1,
    profile = "../../tests/fixtures/h100.json"
);

/// Up to this many cells (x repeats) the default mode also checks the CPU reference (the
/// default volume, 18.9 M cells, is checked).
const CPU_CHECK_CELLS: u64 = 1 << 25;

type Result<T> = std::result::Result<T, StencilError>;

fn main() -> ExitCode {
    let parsed = args::parse(std::env::args_os().skip(1));
    session::main(
        "user-stencil",
        parsed,
        |c| &c.mode,
        run_tune,
        |c, cases, json| run_bench(c, cases, json),
    )
}

/// The GPU (exit 3 without one), its autotuner (profile and decision store from the
/// environment) and the kernels compiled for it.
fn open() -> Result<(Autotuner, Gpu)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (tuner, gpu) = session::open(root, Gpu::new)?;
    println!("{}", session::device_line(gpu.identity(), "kernels"));
    Ok((tuner, gpu))
}

fn show_compile_time_plan() {
    let [x, y, z] = SHOWN.block;
    println!(
        "compile-time plan (memtune::stencil_plan!, {:?} {} x{}): {} {x}x{y}x{z}",
        SHOWN.workload.dims,
        SHOWN.workload.dtype.as_str(),
        SHOWN.workload.repeats,
        SHOWN.variant.as_str(),
    );
    session::print_planned(&SHOWN.profile, SHOWN.reasons);
}

/// Compares the untuned output with the CPU model, bit for bit.
fn check_cpu<T>(gpu: &Gpu, volume: &Volume) -> Result<()>
where
    T: Real + cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits,
{
    let case = volume.case;
    let got: Vec<T> = gpu.read_output(volume)?;
    let want = reference::sweep(&reference::input::<T>(case.dims), case.dims, case.repeats);
    match reference::first_difference(&got, &want) {
        None => Ok(()),
        Some((i, g, w, n)) => Err(StencilError::Mismatch(format!(
            "the untuned GPU output differs from the CPU reference in {n} cells, first at element {i}: {g:#x} vs {w:#x}"
        ))),
    }
}

fn run_tune(config: &Config, case: &Case, expect_stored: bool) -> Result<()> {
    let case = *case;
    show_compile_time_plan();
    let (tuner, gpu) = open()?;
    if config.check_free {
        args::check_fits(&case, device_limit(gpu.free_device_bytes()?))?;
    }
    let t0 = Instant::now();
    let volume = gpu.volume(case)?;
    println!(
        "volume: {} ({} a buffer), filled in {:.0} ms; kernel key `{}`",
        case.name(),
        format_bytes(case.bytes()),
        t0.elapsed().as_secs_f64() * 1e3,
        case.kernel_key()
    );

    let untuned = bench::run_untuned(&gpu, &volume)?;
    if case.cells() * u64::from(case.repeats) <= CPU_CHECK_CELLS {
        match case.dtype {
            Dtype::F32 => check_cpu::<f32>(&gpu, &volume)?,
            Dtype::F64 => check_cpu::<f64>(&gpu, &volume)?,
        }
        println!(
            "untuned ({}) output = the CPU reference, bit for bit",
            bench::label(&untuned)
        );
    } else {
        println!(
            "untuned ({}) output kept ({} cells: CPU reference skipped)",
            bench::label(&untuned),
            case.cells()
        );
    }
    gpu.check(&volume)?;

    let tuning = bench::tune_checked(&tuner, &gpu, &volume)?;
    session::print_tuning(&tuner, &tuning, 24, |c| {
        c.stats.dropped.as_deref().or(c.stats.error.as_deref())
    });
    let tuned = &tuning.tuned;

    let ms = gpu.time(|| gpu.launch(&volume, &tuned.plan))?;
    gpu.check(&volume)?;
    println!(
        "ran {}: {ms:.3} ms ({:.0} GB/s read + write), output = untuned, bit for bit",
        tuned.label,
        report::gb_per_s(case.bytes(), ms)
    );
    session::expect_stored(expect_stored, tuning.launches).map_err(StencilError::Autotune)
}

fn run_bench(config: &Config, cases: &[Case], json: Option<&Path>) -> Result<()> {
    let (tuner, gpu) = open()?;
    let bench = session::bench(&gpu, &tuner);
    let mut rows = Rows::default();
    let mut skipped = 0;
    for &case in cases {
        let name = case.name();
        if config.check_free {
            // Volumes are freed after each row: each case is sized against the memory
            // free when it starts.
            if let Err(e) = args::check_fits(&case, device_limit(gpu.free_device_bytes()?)) {
                eprintln!("bench: {name}: skipped, {e}");
                skipped += 1;
                continue;
            }
        }
        rows.run(&name, || {
            let volume = gpu.volume(case)?;
            bench::row(&bench, &volume)
        });
    }
    rows.finish(&bench, report::table, Row::json, json)?;
    if rows.rows.is_empty() && skipped > 0 {
        return Err(StencilError::TooLarge(format!(
            "--check-free: all {skipped} grids were too large for the free memory"
        )));
    }
    Ok(())
}
