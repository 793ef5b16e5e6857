//! user-histogram: a user's own hash-grouping kernel, autotuned by memtune.
//!
//! `user-histogram [--table 1GiB] [--memory device|pinned] [--input device|pinned]
//! [--rows N] [--work 0]`: tunes the kernel for that table (a stored decision where there
//! is one: then nothing is timed), runs the chosen plan and checks its table.
//! `user-histogram --bench [--memory device|pinned] [--sizes ...] [--json FILE]`: untuned,
//! model, autotuned and exhaustive-best plans, timed. Exit codes: 0 success, 1 a failure
//! (CUDA, NVRTC, a wrong table), 2 bad arguments or a size too large, 3 no GPU.

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use memtune_example_support::args::{self as support, OneSize, SizesBench};
use memtune_example_support::session::{self, Rows};

use memtune::autotune::Autotuner;
use memtune::core::size::format_bytes;
use memtune::core::tune::Tunable;
use memtune::GroupingConsts;
use user_histogram::args::{self, Config};
use user_histogram::bench::{self, SLOTS};
use user_histogram::gpu::{self, Data, Gpu};
use user_histogram::report::{self, Row};
use user_histogram::{kernel, reference, Case, HistError, Variant, SEED};

/// The macro at compile time, for a fixed workload, before any GPU is seen: planned from a
/// recorded H100 profile (a user would commit their own to `.memtune/` with
/// `cargo tune --project` and drop the `profile` argument).
const SHOWN: GroupingConsts = memtune::grouping_plan!(
    table = 2 GiB,
    table_memory = pinned,
    input_memory = pinned,
    profile = "../../tests/fixtures/h100.json"
);

/// Up to this table size the default mode also reads the untuned table back and compares
/// it key by key with the CPU model (where the CPU model runs: `bench::CPU_CHECK_ROWS`).
const READBACK_TABLE_BYTES: u64 = 256 << 20;

type Result<T> = std::result::Result<T, HistError>;

fn main() -> ExitCode {
    let parsed = args::parse(std::env::args_os().skip(1));
    session::main("user-histogram", parsed, |c| &c.mode, run_tune, run_bench)
}

/// The GPU (exit 3 without one), its autotuner (profile and decision store from the
/// environment) and the kernels compiled for it.
fn open() -> Result<(Autotuner, Gpu)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (tuner, gpu) = session::open(root, Gpu::new)?;
    let id = gpu.identity();
    let (blocks, block) = kernel::GRID.of(id.sm_count);
    let line = session::device_line(id, "kernels");
    println!("{line}; {blocks} blocks of {block}");
    Ok((tuner, gpu))
}

/// `--check-free`: the device memory a run takes (a device table, device input, the
/// spill buffers) must fit 80% of the free device memory, and the pinned memory (a pinned
/// table or input) a quarter of the available host memory.
fn check_free(config: &Config, gpu: &Gpu, largest: u64) -> Result<()> {
    if !config.check_free {
        return Ok(());
    }
    let (table, input, rows) = (config.memory, config.input, config.rows);
    support::check_free(
        gpu::device_bytes(table, input, largest, rows),
        gpu::pinned_bytes(table, input, largest, rows),
        || gpu.free_device_bytes(),
        "pass a smaller table or fewer rows",
    )
}

fn show_compile_time_plan() {
    println!(
        "compile-time plan (memtune::grouping_plan!, a {} table in {} memory, input in {}): {}",
        format_bytes(SHOWN.workload.table_bytes),
        SHOWN.workload.table_memory,
        SHOWN.workload.input_memory,
        bench::label(&SHOWN.to_plan()),
    );
    session::print_planned(&SHOWN.profile, SHOWN.reasons);
}

/// The untuned table checked against the CPU model where that is small enough: the digest,
/// and for small tables every key's sum read back.
fn check_against_cpu(
    gpu: &Gpu,
    data: &Data,
    case: &Case,
    untuned: user_histogram::Digest,
) -> Result<()> {
    if bench::cpu_digest(case).is_none() {
        println!(
            "untuned table: {untuned} (CPU model skipped: {} rows)",
            case.rows
        );
        return Ok(());
    }
    let sums = reference::key_sums(SEED, case.rows, case.key_space(), case.variant.work);
    let cpu = reference::digest_of_sums(&sums);
    if cpu != untuned {
        return Err(HistError::Mismatch(format!(
            "the untuned table ({untuned}) differs from the CPU model ({cpu})"
        )));
    }
    if case.table_bytes <= READBACK_TABLE_BYTES {
        // The table of the last launch (the untuned one) is still there.
        let got = reference::groups(&gpu.read_table(data, case)?).map_err(HistError::Mismatch)?;
        if got != reference::expected_groups(&sums) {
            return Err(HistError::Mismatch(
                "the untuned table's per-key sums differ from the CPU model's".into(),
            ));
        }
        println!("untuned table: {untuned} = the CPU model, key by key");
    } else {
        println!("untuned table: {untuned} = the CPU model's digest");
    }
    Ok(())
}

fn run_tune(config: &Config, case: &OneSize<Variant>, expect_stored: bool) -> Result<()> {
    let OneSize {
        bytes: table,
        variant,
    } = *case;
    show_compile_time_plan();
    let (tuner, gpu) = open()?;
    check_free(config, &gpu, table)?;
    let case = Case {
        table_bytes: table,
        rows: config.rows,
        variant,
    };
    let t0 = Instant::now();
    let data = gpu.data(config.memory, config.input, table, case.rows)?;
    gpu.fill(&data, &case)?;
    let mut digests = gpu.digests(SLOTS)?;
    println!(
        "table: {} of {} memory ({} slots); {} rows over {} keys in {} memory, drawn in {:.0} ms; {}, kernel key `{}`",
        format_bytes(table),
        config.memory,
        case.slots(),
        case.rows,
        case.key_space(),
        config.input,
        t0.elapsed().as_secs_f64() * 1e3,
        variant.name(),
        variant.kernel_key()
    );

    let work = bench::workload(&data, &case);
    let expected = bench::run_once(&gpu, &data, &case, &work.untuned(), &mut digests)?;
    check_against_cpu(&gpu, &data, &case, expected)?;

    let tuning = bench::tune_checked(&tuner, &gpu, &data, &case, expected)?;
    session::print_tuning(&tuner, &tuning, 32, |c| {
        c.stats.error.as_deref().or(c.stats.dropped.as_deref())
    });
    let tuned = &tuning.tuned;

    digests.reset()?;
    let slot = digests.take()?;
    gpu.clear(&data, &case)?;
    let ms = gpu.time(|| gpu.launch(&data, &case, &tuned.plan))?;
    gpu.digest(&data, &case, slot)?;
    gpu.sync()?;
    let got = digests.read()?[slot.index];
    if got != expected {
        return Err(HistError::Mismatch(format!(
            "the chosen plan built {got}, the untuned plan {expected}"
        )));
    }
    println!("ran {}: {ms:.3} ms, {got} = untuned", tuned.label);
    session::expect_stored(expect_stored, tuning.launches).map_err(HistError::Autotune)
}

fn run_bench(config: &Config, cases: &SizesBench<Variant>, json: Option<&Path>) -> Result<()> {
    let (tuner, gpu) = open()?;
    let largest = cases.largest();
    check_free(config, &gpu, largest)?;
    let bench = session::bench(&gpu, &tuner);
    // One table of the largest size; smaller tables are its prefixes.
    let t0 = Instant::now();
    let data = gpu.data(config.memory, config.input, largest, config.rows)?;
    let mut digests = gpu.digests(SLOTS)?;
    eprintln!(
        "bench: a {} table in {} memory, {} rows in {} memory, allocated in {:.0} ms",
        format_bytes(largest),
        config.memory,
        config.rows,
        config.input,
        t0.elapsed().as_secs_f64() * 1e3
    );
    let mut rows = Rows::default();
    for OneSize { bytes, variant } in cases.cases() {
        let case = Case {
            table_bytes: bytes,
            rows: config.rows,
            variant,
        };
        let label = format!(
            "{} table {}, {} rows in {}, {}",
            config.memory,
            format_bytes(bytes),
            case.rows,
            config.input,
            variant.name()
        );
        rows.run(&label, || bench::row(&bench, &data, &case, &mut digests));
    }
    rows.finish(&bench, report::table, Row::json, json)
}
