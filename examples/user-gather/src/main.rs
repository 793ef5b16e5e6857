//! user-gather: a user's own gather kernel, autotuned by memtune.
//!
//! `user-gather [--region 1536MiB] [--memory device|pinned] [--reads 64] [--work 0]`:
//! tunes the kernel for that region (a stored decision where there is one: then nothing is
//! timed), runs the chosen plan and checks its sum.
//! `user-gather --bench [--memory device|pinned] [--sizes ...] [--json FILE]`: untuned,
//! model, autotuned and exhaustive-best plans, timed. Exit codes: 0 success, 1 a failure
//! (CUDA, NVRTC, a wrong sum), 2 bad arguments or a size too large, 3 no GPU.

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use memtune_example_support::args::{self as support, OneSize, SizesBench};
use memtune_example_support::session::{self, Rows};

use memtune::autotune::Autotuner;
use memtune::core::size::format_bytes;
use memtune::core::tune::Tunable;
use memtune::{MemoryKind, SamplingConsts};
use user_gather::args::{self, Config};
use user_gather::bench::{self, SLOTS};
use user_gather::gpu::Gpu;
use user_gather::report::{self, Row};
use user_gather::{reference, GatherError, Variant, SEED};

/// The macro at compile time, for a fixed workload, before any GPU is seen: planned from a
/// recorded H100 profile (a user would commit their own to `.memtune/` with
/// `cargo tune --project` and drop the `profile` argument).
const SHOWN: SamplingConsts = memtune::sampling_plan!(
    region = 16 GiB,
    memory = pinned,
    profile = "../../tests/fixtures/h100.json"
);

/// Above this many draws (threads x reads) the default mode skips the CPU reference.
const CPU_CHECK_DRAWS: u64 = 1 << 26;

type Result<T> = std::result::Result<T, GatherError>;

fn main() -> ExitCode {
    let parsed = args::parse(std::env::args_os().skip(1));
    session::main("user-gather", parsed, |c| &c.mode, run_tune, run_bench)
}

/// The GPU (exit 3 without one), its autotuner (profile and decision store from the
/// environment) and the kernel compiled for it.
fn open() -> Result<(Autotuner, Gpu)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (tuner, gpu) = session::open(root, Gpu::new)?;
    let line = session::device_line(gpu.identity(), "kernel");
    println!("{line}; {} threads per launch", gpu.threads());
    Ok((tuner, gpu))
}

/// `--check-free`: every size must fit 80% of the free device memory, or a quarter of the
/// available host memory for pinned memory.
fn check_free(config: &Config, gpu: &Gpu, largest: u64) -> Result<()> {
    if !config.check_free {
        return Ok(());
    }
    let (device, pinned) = match config.memory {
        MemoryKind::Pinned => (0, largest),
        _ => (largest, 0),
    };
    let free = || gpu.free_device_bytes();
    support::check_free(device, pinned, free, "pass a smaller size")
}

fn show_compile_time_plan() {
    println!(
        "compile-time plan (memtune::sampling_plan!, {} of {} memory, {} reads per thread): {}",
        format_bytes(SHOWN.workload.region_bytes),
        SHOWN.workload.memory,
        SHOWN.workload.reads_per_thread,
        bench::label(&SHOWN.to_plan()),
    );
    session::print_planned(&SHOWN.profile, SHOWN.reasons);
}

fn run_tune(config: &Config, case: &OneSize<Variant>, expect_stored: bool) -> Result<()> {
    let OneSize { bytes, variant } = *case;
    show_compile_time_plan();
    let (tuner, gpu) = open()?;
    check_free(config, &gpu, bytes)?;
    let t0 = Instant::now();
    let region = gpu.region(config.memory, bytes)?;
    let mut sums = gpu.sums(SLOTS)?;
    let n_words = region.words();
    println!(
        "region: {} of {} memory, filled in {:.0} ms; {}, kernel key `{}`",
        format_bytes(bytes),
        config.memory,
        t0.elapsed().as_secs_f64() * 1e3,
        variant.name(),
        variant.kernel_key()
    );

    let work = bench::workload(&region, n_words, variant);
    let untuned = work.untuned();
    let expected = bench::run_once(&gpu, &region, n_words, &untuned, variant, &mut sums)?;
    let draws = gpu.threads() * u64::from(variant.reads);
    if draws <= CPU_CHECK_DRAWS {
        let cpu = reference::unscoped_sum(gpu.threads(), n_words, SEED, variant);
        if cpu != expected {
            return Err(GatherError::Mismatch(format!(
                "the untuned GPU sum {expected} differs from the CPU reference {cpu}"
            )));
        }
        println!("untuned sum {expected} = the CPU reference");
    } else {
        println!("untuned sum {expected} ({draws} draws: CPU reference skipped)");
    }

    let tuning = bench::tune_checked(&tuner, &gpu, &region, n_words, variant, &mut sums, expected)?;
    session::print_tuning(&tuner, &tuning, 24, |c| c.stats.dropped.as_deref());
    let tuned = &tuning.tuned;

    let mut sum = 0;
    let ms = gpu.time(|| {
        sums.reset()?;
        let slot = sums.take()?;
        gpu.launch(&region, n_words, &tuned.plan, variant, slot)
    })?;
    if let Some(&s) = sums.read()?.first() {
        sum = s;
    }
    if sum != expected {
        return Err(GatherError::Mismatch(format!(
            "the chosen plan summed {sum}, the untuned plan {expected}"
        )));
    }
    println!(
        "ran {}: {ms:.3} ms, sum {sum} ({:.6} as a float) = untuned",
        tuned.label,
        sum as f64 / f64::from(reference::FIXED_ONE)
    );
    session::expect_stored(expect_stored, tuning.launches).map_err(GatherError::Autotune)
}

fn run_bench(config: &Config, cases: &SizesBench<Variant>, json: Option<&Path>) -> Result<()> {
    let (tuner, gpu) = open()?;
    let largest = cases.largest();
    check_free(config, &gpu, largest)?;
    let bench = session::bench(&gpu, &tuner);
    // One region of the largest size; smaller sizes are its prefixes (the data of a word
    // depends only on its index).
    let t0 = Instant::now();
    let region = gpu.region(config.memory, largest)?;
    let mut sums = gpu.sums(SLOTS)?;
    eprintln!(
        "bench: {} of {} memory filled in {:.0} ms",
        format_bytes(largest),
        config.memory,
        t0.elapsed().as_secs_f64() * 1e3
    );
    let mut rows = Rows::default();
    for OneSize { bytes, variant } in cases.cases() {
        let size = format_bytes(bytes);
        let case = format!("{} {size}, {}", config.memory, variant.name());
        rows.run(&case, || {
            bench::row(&bench, &region, bytes / 4, variant, &mut sums)
        });
    }
    rows.finish(&bench, report::table, Row::json, json)
}
