//! Tuning with result checks, and `--bench`: per case, the untuned plan, the untimed model
//! plan, the autotuned plan (a fresh decision store, so it tunes) and the best of a block
//! sweep, timed alike; every launch's output is checked bit for bit against the untuned
//! output before its time counts.

use memtune::autotune::Autotuner;
use memtune::core::plan::{StencilPlan, StencilWorkload, Variant};
use memtune::core::tune::Tunable;
use memtune_example_support::bench::{self as support, PlanTimes};

use crate::gpu::{Gpu, Volume};
use crate::report::{Row, Timed};
use crate::StencilError;

type Result<T> = std::result::Result<T, StencilError>;

pub use memtune_example_support::bench::{Tuning, RUNS};
/// The sweep's block widths along x for plain and staged blocks, heights along y and
/// depths along z; blocks of [`SWEEP_MIN_THREADS`] to 1024 threads.
pub const SWEEP_X: [u32; 3] = [32, 64, 128];
pub const SWEEP_Y: [u32; 5] = [1, 2, 4, 8, 16];
pub const SWEEP_Z: [u32; 4] = [1, 2, 4, 8];
/// The sweep's one-plane streaming blocks: widths and heights.
pub const SWEEP_STREAM_X: [u32; 4] = [32, 64, 128, 256];
pub const SWEEP_STREAM_Y: [u32; 6] = [1, 2, 4, 8, 16, 32];
pub const SWEEP_MIN_THREADS: u32 = 64;

/// A plan's label, as the autotuner writes it (`plain 32x4x2`).
pub fn label(plan: &StencilPlan) -> String {
    <StencilWorkload as Tunable>::label(plan)
}

/// A plan of `variant` with `block`.
pub fn plan(variant: Variant, block: [u32; 3], why: &str) -> StencilPlan {
    StencilPlan {
        variant,
        block,
        staging: variant != Variant::Plain,
        reasons: vec![why.to_string()],
    }
}

/// The sweep over `dims`: every plain and staged block of [`SWEEP_X`] x [`SWEEP_Y`] x
/// [`SWEEP_Z`] and every streaming block of [`SWEEP_STREAM_X`] x [`SWEEP_STREAM_Y`] x 1
/// with 64 to 1024 threads, clamped to the volume as the autotuner's candidates are,
/// duplicates dropped.
pub fn sweep(dims: [u32; 3]) -> Vec<StencilPlan> {
    let mut blocks: Vec<(Variant, [u32; 3])> = Vec::new();
    for variant in [Variant::Plain, Variant::Staged] {
        for x in SWEEP_X {
            for y in SWEEP_Y {
                for z in SWEEP_Z {
                    blocks.push((variant, [x, y, z]));
                }
            }
        }
    }
    for x in SWEEP_STREAM_X {
        for y in SWEEP_STREAM_Y {
            blocks.push((Variant::Streaming, [x, y, 1]));
        }
    }
    let mut out: Vec<StencilPlan> = Vec::new();
    for (variant, block) in blocks {
        let threads: u32 = block.iter().product();
        if !(SWEEP_MIN_THREADS..=1024).contains(&threads) {
            continue;
        }
        let clamped = clamp(block, dims);
        if !out
            .iter()
            .any(|p| p.variant == variant && p.block == clamped)
        {
            out.push(plan(variant, clamped, "the sweep"));
        }
    }
    out
}

/// `block` clamped to the volume on each axis (at least 1).
pub fn clamp(mut block: [u32; 3], dims: [u32; 3]) -> [u32; 3] {
    for (b, &d) in block.iter_mut().zip(&dims) {
        *b = (*b).min(d).max(1);
    }
    block
}

/// Whether two plans launch the same kernel with the same block.
pub fn same(a: &StencilPlan, b: &StencilPlan) -> bool {
    a.variant == b.variant && a.block == b.block
}

/// One sweep of `plan`, synchronised, its output then checked against the untuned output
/// (and poisoned).
pub fn run_checked(gpu: &Gpu, volume: &Volume, plan: &StencilPlan) -> Result<()> {
    gpu.launch(volume, plan)?;
    gpu.sync()?;
    gpu.check(volume)
        .map_err(|e| StencilError::Mismatch(format!("{}: {e}", label(plan))))
}

/// The untuned sweep, kept as the output every other plan is checked against.
pub fn run_untuned(gpu: &Gpu, volume: &Volume) -> Result<StencilPlan> {
    let untuned = volume.case.workload().untuned();
    gpu.launch(volume, &untuned)?;
    gpu.keep_expected(volume)?;
    Ok(untuned)
}

/// `tuner.tune_checked` on the stencil: after each launch, outside the timed span, its
/// output is compared bit for bit with the untuned output, so a wrong plan is dropped
/// before its time counts. Any wrong output then fails the call: every variant must give
/// the untuned bits.
pub fn tune_checked(tuner: &Autotuner, gpu: &Gpu, volume: &Volume) -> Result<Tuning<StencilPlan>> {
    let mut launches = 0usize;
    let mut wrong: Vec<String> = Vec::new();
    let case = volume.case;
    let tuned = tuner
        .tune_checked(
            gpu.stream(),
            case.kernel_key(),
            &case.workload(),
            |plan| {
                launches += 1;
                gpu.launch(volume, plan)
            },
            |plan| {
                gpu.check(volume).map_err(|e| {
                    let m = format!("{}: {e}", label(plan));
                    wrong.push(m.clone());
                    m
                })
            },
        )
        .map_err(|e| StencilError::Autotune(e.to_string()))?;
    if let Some(first) = wrong.first() {
        return Err(StencilError::Mismatch(format!(
            "{} tuning launches gave another output than untuned, first {first}",
            wrong.len()
        )));
    }
    Ok(Tuning { tuned, launches })
}

/// Times `plans` round robin (one warm-up round, then [`RUNS`] rounds), each launch's
/// output checked after its timed span. `Err` names the first plan whose output differs.
pub fn time_plans(gpu: &Gpu, volume: &Volume, plans: &[StencilPlan]) -> Result<Vec<Timed>> {
    let runs = support::round_robin(plans, |_, plan| {
        let ms = gpu.time(|| gpu.launch(volume, plan))?;
        gpu.check(volume)
            .map_err(|e| StencilError::Mismatch(format!("{}: {e}", label(plan))))?;
        Ok::<f64, StencilError>(ms)
    })?;
    support::medians(&runs, plans, label).map_err(StencilError::Autotune)
}

/// The device copy of the volume (input to output), timed as the plans are.
pub fn time_copy(gpu: &Gpu, volume: &Volume) -> Result<Timed> {
    let runs = support::round_robin(&[()], |_, ()| gpu.time(|| gpu.copy(volume)))?;
    gpu.poison(volume)?;
    gpu.sync()?;
    Timed::of(&runs[0]).ok_or_else(|| StencilError::Autotune("the copy: no timed run".into()))
}

/// What every row of one bench shares.
pub type Bench<'a> = support::Bench<'a, Gpu>;

/// One row: the volume's untuned, model, autotuned and best plans, and the copy.
pub fn row(bench: &Bench, volume: &Volume) -> Result<Row> {
    let gpu = bench.gpu;
    let case = volume.case;
    let work = case.workload();
    let untuned = run_untuned(gpu, volume)?;
    gpu.check(volume)?;
    let model = work
        .untimed(bench.profile)
        .map_err(|e| StencilError::Autotune(format!("the planner: {e}")))?;

    let tuned = bench.tune_twice(|tuner| tune_checked(tuner, gpu, volume), same)?;

    // Every plan timed alike, each distinct launch once: the sweep, and the
    // autotuner's candidates where the sweep lacks them.
    let candidates: Vec<StencilPlan> = work
        .candidates(bench.profile)
        .map_err(|e| StencilError::Autotune(format!("the candidates: {e}")))?
        .into_iter()
        .map(|c| c.plan)
        .collect();
    let swept = sweep(case.dims);
    let launchable = [&untuned, &model, &tuned.first.tuned.plan]
        .into_iter()
        .chain(&candidates)
        .chain(&swept)
        .filter(|p| gpu.geometry(&case, p).is_ok());
    let plans = support::distinct(launchable, same);
    let times = time_plans(gpu, volume, &plans)?;
    let copy = time_copy(gpu, volume)?;
    let timed = PlanTimes::new(&plans, &times, label, same);
    // The best and the plans it is compared with, timed again beside each other.
    let timings = timed.confirmed_timings(&untuned, &model, &tuned, &plans, |p| {
        time_plans(gpu, volume, p)
    })?;
    Ok(Row {
        variant: case.name(),
        dims: case.dims,
        bytes: case.bytes(),
        timings,
        copy,
        plans_timed: plans.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::geometry;
    use memtune::core::plan::Dtype;

    #[test]
    fn the_sweep_launches_on_the_bench_volumes() {
        for dims in [[200, 200, 200], [384, 256, 192], [512, 512, 512]] {
            let plans = sweep(dims);
            assert!(plans.len() > 80, "{dims:?}: {}", plans.len());
            for p in &plans {
                for dtype in [Dtype::F32, Dtype::F64] {
                    geometry(p, dims, dtype, 132, 227 << 10)
                        .unwrap_or_else(|e| panic!("{dims:?} {}: {e}", label(p)));
                }
            }
            for v in [Variant::Plain, Variant::Staged, Variant::Streaming] {
                assert!(plans.iter().any(|p| p.variant == v), "{v:?}");
            }
            // The untuned block is in the sweep.
            assert!(plans
                .iter()
                .any(|p| p.variant == Variant::Plain && p.block == [32, 4, 2]));
        }
    }

    #[test]
    fn small_volumes_clamp_and_dedupe() {
        let plans = sweep([5, 3, 2]);
        for p in &plans {
            assert!(
                p.block[0] <= 5 && p.block[1] <= 3 && p.block[2] <= 2,
                "{}",
                label(p)
            );
        }
        let mut labels: Vec<String> = plans.iter().map(label).collect();
        let n = labels.len();
        labels.sort();
        labels.dedup();
        assert_eq!(labels.len(), n);
        assert_eq!(
            label(&plan(Variant::Staged, [32, 4, 2], "x")),
            "staged 32x4x2"
        );
    }

    /// The autotuner's candidates for the bench volumes launch: a candidate that cannot
    /// would be dropped, not timed.
    #[test]
    fn the_autotuners_candidates_launch() {
        let profile = memtune::core::default::builtin();
        for dims in [[200, 200, 200], [384, 256, 192], [7, 5, 3]] {
            for dtype in [Dtype::F32, Dtype::F64] {
                let work = StencilWorkload {
                    dims,
                    dtype,
                    repeats: 1,
                };
                let candidates = work.candidates(&profile).expect("candidates");
                // Volumes narrower than a warp keep only the untuned plan: the
                // neighbours are whole warps along x.
                let least = if dims[0] >= 32 { 4 } else { 1 };
                assert!(candidates.len() >= least, "{dims:?}: {}", candidates.len());
                for c in candidates {
                    geometry(&c.plan, dims, dtype, 132, 48 << 10)
                        .unwrap_or_else(|e| panic!("{dims:?} {}: {e}", c.label));
                }
            }
        }
    }
}
