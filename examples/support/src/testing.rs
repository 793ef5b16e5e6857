//! For the examples' tests: the `MEMTUNE_GPU_TESTS` switch and the GPU they open, and the
//! checks they share (NVRTC compilation, argument parsing, a stored decision reused, the
//! fields of a bench row) with the fixtures of a bench row.

use std::fmt::Debug;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaStream};
use memtune::autotune::{Autotuner, Mode};
use memtune::core::tune::DecisionStore;
use memtune::kernels::toolchain::nvrtc_or_skip;
use memtune::kernels::KernelSource;
use memtune::{DeviceIdentity, PlanSource};
use serde_json::Value;

use crate::args::{self, Parsed};
use crate::bench::{DecisionSummary, Tuning};
use crate::gpu::compile;
use crate::report::{document, Timed, Timings, ROW_FIELDS};

/// True with `MEMTUNE_GPU_TESTS=1`; otherwise the test is skipped with one `SKIPPED` line.
pub fn gpu_tests(test: &str) -> bool {
    if std::env::var("MEMTUNE_GPU_TESTS").is_ok_and(|v| v == "1") {
        return true;
    }
    // Written to the stream itself, past the test harness's capture, so it shows.
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: GPU test; set MEMTUNE_GPU_TESTS=1 on a machine with a GPU to run it"
    );
    false
}

/// GPU 0's identity and the default stream of a fresh context on it; panics without a GPU.
pub fn gpu0() -> (DeviceIdentity, Arc<CudaStream>) {
    let identity = memtune::device::identity(0).expect("a GPU");
    let ctx = CudaContext::new(0).expect("a context");
    (identity, ctx.default_stream())
}

/// The example's `Gpu` on GPU 0, made by `new` from [`gpu0`], with `MEMTUNE_GPU_TESTS=1`;
/// `None` without (the test is skipped: [`gpu_tests`]). Panics when `new` fails.
pub fn gpu0_or_skip<G, E: Debug>(
    test: &str,
    new: impl FnOnce(DeviceIdentity, Arc<CudaStream>) -> Result<G, E>,
) -> Option<G> {
    if !gpu_tests(test) {
        return None;
    }
    let (identity, stream) = gpu0();
    Some(new(identity, stream).expect("the example's kernels compile and load"))
}

/// `source` compiles to PTX for sm_80 and sm_90 with every entry it names (NVRTC's
/// warnings count as errors); skipped (as `test`) without NVRTC.
pub fn compiles_without_warnings(test: &str, source: &KernelSource) {
    if !nvrtc_or_skip(test) {
        return;
    }
    for a in ["sm_80", "sm_90"] {
        let ptx = compile(source, a).unwrap_or_else(|e| panic!("{a}: {e}"));
        assert!(ptx.text.contains(&format!(".target {a}")), "{a}");
    }
}

/// The `#[test]`s of an example's kernel `source` (a `KernelSource`) launched on `grid` (a
/// [`Grid`](crate::gpu::Grid)): `kernel_compiles_without_warnings`, and
/// `the_block_size_matches_the_source`: the source has `#define BLOCK_DEFINE grid.block`,
/// and a GPU of each `sm_count` gets the `(blocks, threads per block)` given.
#[macro_export]
macro_rules! kernel_tests {
    ($source:expr, $block_define:literal, $grid:expr, [$(($sm_count:expr, $want:expr)),+ $(,)?]) => {
        #[test]
        fn kernel_compiles_without_warnings() {
            $crate::testing::compiles_without_warnings("kernel_compiles_without_warnings", &$source);
        }

        #[test]
        fn the_block_size_matches_the_source() {
            let define = format!("#define {} {}", $block_define, $grid.block);
            assert!($source.source.contains(&define), "{define}");
            $(assert_eq!($grid.of($sm_count), $want, "{} SMs", $sm_count);)+
        }
    };
}

/// What `parse` makes of `args`; panics on an error.
pub fn parsed<T: Debug>(args: &[&str], parse: impl Fn(&[&str]) -> Parsed<T>) -> T {
    match parse(args) {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => panic!("{args:?}: {e}"),
        Err(e) => panic!("{args:?}: {e}"),
    }
}

/// The message of the error `parse` makes of `args`, clap's or the example's: either
/// exits with 2. Panics when `args` parse.
pub fn usage<T: Debug>(args: &[&str], parse: impl Fn(&[&str]) -> Parsed<T>) -> String {
    match parse(args) {
        Ok(Err(e)) => {
            assert_eq!(e.exit_code(), 2, "{e}");
            e.to_string()
        }
        Err(e) => {
            assert_eq!(e.exit_code(), 2, "{e}");
            e.to_string()
        }
        Ok(Ok(c)) => panic!("{args:?} parsed: {c:?}"),
    }
}

/// The case and `--expect-stored` of the default mode; panics on a bench.
pub fn tune_mode<T: Debug, B: Debug>(mode: args::Mode<T, B>) -> (T, bool) {
    match mode {
        args::Mode::Tune {
            case,
            expect_stored,
        } => (case, expect_stored),
        m => panic!("not the default mode: {m:?}"),
    }
}

/// The cases and `--json` of a bench; panics on the default mode.
pub fn bench_mode<T: Debug, B: Debug>(mode: args::Mode<T, B>) -> (B, Option<PathBuf>) {
    match mode {
        args::Mode::Bench { cases, json } => (cases, json),
        m => panic!("not a bench: {m:?}"),
    }
}

/// The usage errors of the arguments that choose the mode, as `usage` gives them: the
/// default mode's `one` argument (`["--region", "1MiB"]`) or `--expect-stored` with
/// `--bench`, the bench's `list` argument or `--json` without; and an unknown flag.
pub fn assert_mode_errors(usage: impl Fn(&[&str]) -> String, one: [&str; 2], list: [&str; 2]) {
    assert!(usage(&["--bench", one[0], one[1]]).contains(list[0]));
    assert!(usage(&["--json", "x.json"]).contains("--bench"));
    assert!(usage(&list).contains("--bench"));
    assert!(usage(&["--bench", "--expect-stored"]).contains("default mode"));
    assert!(usage(&["--frobnicate"]).contains("--frobnicate"));
}

/// Two tuning calls by `tune` on a fresh store (in a temporary folder) with the built-in
/// profile for the GPU `uuid`: the first (`Mode::Always`; `tunes` says what it must do)
/// tunes, launching; the second (`Mode::Auto`) finds its decision, launches nothing and
/// keeps the plan. The first call, for further checks.
pub fn assert_stored_decision_times_nothing<P: PartialEq + Debug, E: Debug>(
    uuid: &str,
    tunes: &str,
    mut tune: impl FnMut(&Autotuner) -> Result<Tuning<P>, E>,
) -> Tuning<P> {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let store = DecisionStore::new(Some(dir.path().to_path_buf()), None);
    let profile = memtune::core::default::builtin();
    let tuner = |mode| Autotuner::new(profile.clone(), uuid, store.clone(), mode);
    let first = tune(&tuner(Mode::Always)).expect(tunes);
    assert!(first.launches > 0);
    assert_eq!(first.tuned.source, PlanSource::Tuned);
    let second = tune(&tuner(Mode::Auto)).expect("finds the decision");
    assert_eq!(second.launches, 0);
    assert!(
        matches!(second.tuned.source, PlanSource::Stored(_)),
        "{}",
        second.tuned.source
    );
    assert_eq!(second.tuned.plan, first.tuned.plan);
    first
}

/// A time of `ms`, its runs 1% either side.
pub fn timed(ms: f64) -> Timed {
    Timed {
        median_ms: ms,
        min_ms: ms * 0.99,
        max_ms: ms * 1.01,
    }
}

/// A row's timings: `ms` the medians of the untuned, model, autotuned and best plans,
/// `configs` the last three's labels; 4 of 5 candidates timed in 60 ms (20 launches, the
/// cost of 20 untuned ones), the second run timing nothing.
pub fn timings(ms: [f64; 4], configs: [&str; 3]) -> Timings {
    let [untuned, plan, autotuned, best] = ms.map(timed);
    let [plan_config, autotuned_config, best_config] = configs.map(String::from);
    Timings {
        untuned,
        plan_config,
        plan,
        autotuned_config,
        autotuned,
        best_config,
        best,
        tuning: DecisionSummary {
            candidates_timed: 4,
            candidates: 5,
            tuning_ms: 60.0,
            launches: 20,
            cost_in_untuned: Some(20.0),
            why: "fastest median".into(),
        },
        second_run_timed: false,
    }
}

/// `text` contains each of `wants`.
pub fn assert_contains(text: &str, wants: &[&str]) {
    for want in wants {
        assert!(text.contains(want), "{want}: {text}");
    }
}

/// [`assert_row_fields`] of the JSON `row`, and its `workload`, `memory` and `bytes`, with
/// the second run timing nothing (as [`timings`] has it).
pub fn assert_row(row: &Value, own: &[&str], workload: &str, memory: &str, bytes: u64) {
    assert_row_fields(row, own);
    assert_eq!(row["workload"], workload);
    assert_eq!(row["memory"], memory);
    assert_eq!(row["bytes"], bytes);
    assert_eq!(row["second_run_timed"], false);
}

/// The fields of the JSON `row` are exactly the [`ROW_FIELDS`] and `own`, and a `--json`
/// document holds it as its first row.
pub fn assert_row_fields(row: &Value, own: &[&str]) {
    let mut keys: Vec<&str> = row
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    let mut want: Vec<&str> = ROW_FIELDS.iter().chain(own).copied().collect();
    want.sort_unstable();
    assert_eq!(keys, want);
    let doc = document("NVIDIA H100", "GPU-x", "cache", vec![row.clone()], &[]);
    assert_eq!(doc["uuid"], "GPU-x");
    assert_eq!(doc["rows"][0], *row);
}
