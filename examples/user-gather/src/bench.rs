//! Tuning with result checks, and `--bench`: per size and variant, the untuned plan, the
//! untimed plan (the model's pick where it is sure, else one pass), the autotuned plan (a fresh decision store, so it tunes)
//! and the exhaustive best over pass counts, timed alike; every launch's sum is checked
//! against the untuned sum before its time is trusted.

use memtune::autotune::Autotuner;
use memtune::core::plan::sampling::{SamplingPlan, SamplingWorkload};
use memtune::core::tune::Tunable;
use memtune_example_support::bench::{self as support, PlanTimes};

use crate::gpu::{Gpu, Region, Sums};
use crate::report::{Row, Timed};
use crate::{GatherError, Variant};

type Result<T> = std::result::Result<T, GatherError>;

pub use memtune_example_support::bench::{Tuning, RUNS};
/// The exhaustive sweep's pass counts.
pub const SWEEP_PASSES: [u32; 12] = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64];
/// Result slots: a tuning session launches at most 5 candidates x 8 times.
pub const SLOTS: usize = 256;

/// A plan's label, as the autotuner writes it (`1 pass`, `4 passes of 384 MiB`).
pub fn label(plan: &SamplingPlan) -> String {
    <SamplingWorkload as Tunable>::label(plan)
}

/// The workload the autotuner and the planner see for `n_words` words of `region`.
pub fn workload(region: &Region, n_words: u64, variant: Variant) -> SamplingWorkload {
    SamplingWorkload {
        region_bytes: n_words * 4,
        memory: region.kind(),
        reads_per_thread: variant.reads,
    }
}

/// `p` equal scopes of whole words over `n_words`, the passes recounted for that scope.
pub fn split(n_words: u64, p: u32) -> SamplingPlan {
    let scope_words = n_words.div_ceil(u64::from(p.max(1))).max(1);
    let passes = u32::try_from(n_words.div_ceil(scope_words)).unwrap_or(u32::MAX);
    SamplingPlan {
        scope_bytes: if passes <= 1 {
            n_words * 4
        } else {
            scope_words * 4
        },
        passes,
        predicted_speedup: 1.0,
        reasons: vec![format!("the sweep's {p} passes")],
    }
}

/// The sweep's distinct plans over `n_words`.
pub fn sweep(n_words: u64) -> Vec<SamplingPlan> {
    let mut out: Vec<SamplingPlan> = Vec::new();
    for p in SWEEP_PASSES {
        let plan = split(n_words, p);
        if !out.iter().any(|q| same(q, &plan)) {
            out.push(plan);
        }
    }
    out
}

/// Whether two plans launch the same passes.
pub fn same(a: &SamplingPlan, b: &SamplingPlan) -> bool {
    a.passes == b.passes && (a.passes <= 1 || a.scope_bytes == b.scope_bytes)
}

/// One launch of `plan` into a fresh slot, synchronised; its sum.
pub fn run_once(
    gpu: &Gpu,
    region: &Region,
    n_words: u64,
    plan: &SamplingPlan,
    variant: Variant,
    sums: &mut Sums,
) -> Result<u64> {
    sums.reset()?;
    let slot = sums.take()?;
    gpu.launch(region, n_words, plan, variant, slot)?;
    gpu.sync()?;
    Ok(sums.read()?[slot.index])
}

/// `tuner.tune` on the gather, each launch into its own slot; afterwards every launch's
/// sum must equal `expected`, or the tuning's times are not trusted.
pub fn tune_checked(
    tuner: &Autotuner,
    gpu: &Gpu,
    region: &Region,
    n_words: u64,
    variant: Variant,
    sums: &mut Sums,
    expected: u64,
) -> Result<Tuning<SamplingPlan>> {
    sums.reset()?;
    let mut launched: Vec<(String, usize)> = Vec::new();
    let work = workload(region, n_words, variant);
    let tuned = tuner
        .tune(gpu.stream(), &variant.kernel_key(), &work, |plan| {
            let slot = sums.take()?;
            launched.push((label(plan), slot.index));
            gpu.launch(region, n_words, plan, variant, slot)
        })
        .map_err(|e| GatherError::Autotune(e.to_string()))?;
    gpu.sync()?;
    let got = sums.read()?;
    for (config, i) in &launched {
        if got[*i] != expected {
            return Err(GatherError::Mismatch(format!(
                "tuning launch {i} ({config}) summed {}, the untuned plan {expected}",
                got[*i]
            )));
        }
    }
    Ok(Tuning {
        tuned,
        launches: launched.len(),
    })
}

/// Times `plans` round robin (one warm-up round, then [`RUNS`] rounds), each launch's sum
/// checked against `expected`. `Err` names the first plan whose sum differs.
pub fn time_plans(
    gpu: &Gpu,
    region: &Region,
    n_words: u64,
    variant: Variant,
    plans: &[SamplingPlan],
    sums: &mut Sums,
    expected: u64,
) -> Result<Vec<Timed>> {
    support::time_into_slots(
        plans,
        sums,
        SLOTS,
        &expected,
        |plan, slot| gpu.time(|| gpu.launch(region, n_words, plan, variant, slot)),
        |plan, got| format!("{} summed {got}, the untuned plan {expected}", label(plan)),
        label,
    )
}

/// What every row of one bench shares.
pub type Bench<'a> = support::Bench<'a, Gpu>;

/// One row: `n_words` words of `region` with `variant`.
pub fn row(
    bench: &Bench,
    region: &Region,
    n_words: u64,
    variant: Variant,
    sums: &mut Sums,
) -> Result<Row> {
    let gpu = bench.gpu;
    let work = workload(region, n_words, variant);
    let untuned = work.untuned();
    let expected = run_once(gpu, region, n_words, &untuned, variant, sums)?;
    let model = memtune::core::plan::sampling_untimed(bench.profile, &work)
        .map_err(|e| GatherError::Autotune(format!("the planner: {e}")))?;

    let tuned = bench.tune_twice(
        |tuner| tune_checked(tuner, gpu, region, n_words, variant, sums, expected),
        same,
    )?;

    // Every plan timed alike, each distinct launch sequence once.
    let swept = sweep(n_words);
    let plans = support::distinct(
        [&untuned, &model, &tuned.first.tuned.plan]
            .into_iter()
            .chain(&swept),
        same,
    );
    let times = time_plans(gpu, region, n_words, variant, &plans, sums, expected)?;
    let timed = PlanTimes::new(&plans, &times, label, same);
    // The best and the plans it is compared with, timed again beside each other.
    let timings = timed.confirmed_timings(&untuned, &model, &tuned, &swept, |p| {
        time_plans(gpu, region, n_words, variant, p, sums, expected)
    })?;
    Ok(Row {
        variant: variant.name(),
        memory: region.kind(),
        bytes: n_words * 4,
        timings,
        sum: expected,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use memtune::launch::sampling_scopes;

    #[test]
    fn sweep_plans_launch_as_labelled() {
        let n_words = (1536u64 << 20) / 4;
        let plans = sweep(n_words);
        assert_eq!(plans.len(), SWEEP_PASSES.len());
        assert_eq!(label(&plans[0]), "1 pass");
        assert_eq!(label(&plans[3]), "4 passes of 384 MiB");
        for p in &plans {
            let scopes = sampling_scopes(n_words, p).expect("the plan fits");
            assert_eq!(scopes.len() as u32, p.passes);
            assert_eq!(scopes.last().map(|s| s.end), Some(n_words));
        }
    }

    #[test]
    fn small_regions_dedupe_pass_counts() {
        // 10 words: 6 and 8 passes both make 5 scopes of 2 words; 12 and more, 10 of 1.
        let plans = sweep(10);
        let passes: Vec<u32> = plans.iter().map(|p| p.passes).collect();
        assert_eq!(passes, vec![1, 2, 3, 4, 5, 10]);
        for p in &plans {
            assert_eq!(
                sampling_scopes(10, p).map(|s| s.len() as u32).ok(),
                Some(p.passes)
            );
        }
    }

    #[test]
    fn same_ignores_the_scope_of_one_pass() {
        let mut a = split(100, 1);
        let b = split(100, 1);
        a.scope_bytes = 4;
        assert!(same(&a, &b));
        assert!(!same(&split(100, 2), &split(100, 4)));
    }
}
