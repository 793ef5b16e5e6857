//! Tuning with result checks, and `--bench`: per table size and variant, the untuned
//! plan, the untimed plan (the model's pick where it is sure, else one pass), the
//! autotuned plan (a fresh decision store, so it tunes) and the exhaustive best over pass
//! counts and approaches, timed alike. Every launch's table is digested on the GPU and the
//! digest checked against the untuned one before its time is trusted; the table is cleared
//! before every launch, outside the timed span.

use std::cell::{Cell, RefCell};

use memtune::autotune::Autotuner;
use memtune::core::plan::{Approach, GroupingPlan, GroupingWorkload};
use memtune::core::tune::Tunable;
use memtune_example_support::bench::{self as support, PlanTimes};

use crate::gpu::{Data, Digests, Gpu};
use crate::report::{Row, Timed};
use crate::{reference, Case, Digest, HistError, ROW_BYTES, SEED, SLOT_BYTES};

type Result<T> = std::result::Result<T, HistError>;

pub use memtune_example_support::bench::{Tuning, RUNS};
/// The exhaustive sweep's pass counts, each with the naive and the copy approach.
pub const SWEEP_PASSES: [u32; 12] = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64];
/// Digest slots checked at once.
pub const SLOTS: usize = 256;
/// Up to this many rows (and keys) the untuned table is also checked against the CPU model.
pub const CPU_CHECK_ROWS: u64 = 1 << 26;

/// A plan's label, as the autotuner writes it (`1 pass`, `copy 4 passes of 256 MiB`).
pub fn label(plan: &GroupingPlan) -> String {
    <GroupingWorkload as Tunable>::label(plan)
}

/// The workload the autotuner and the planner see. The planner prices 4-byte keys into
/// 8-byte buckets; this kernel moves 8-byte rows into 16-byte slots, so its sizes are given
/// in bytes as they are (the copy buffer it sizes from `input_bytes` is the real one).
pub fn workload(data: &Data, case: &Case) -> GroupingWorkload {
    GroupingWorkload {
        table_bytes: case.table_bytes,
        table_memory: data.table_memory(),
        input_memory: data.input_memory(),
        input_bytes: Some(case.rows * ROW_BYTES),
    }
}

/// `p` equal scopes of whole slots over a table of `table_bytes` with `approach`, the
/// passes recounted for that scope; one pass is the untuned, unscoped plan.
pub fn split(table_bytes: u64, p: u32, approach: Approach) -> GroupingPlan {
    let slots = (table_bytes / SLOT_BYTES).max(1);
    let scope_slots = slots.div_ceil(u64::from(p.max(1))).max(1);
    let passes = u32::try_from(slots.div_ceil(scope_slots)).unwrap_or(u32::MAX);
    if passes <= 1 {
        return memtune::workload::grouping::untuned(table_bytes);
    }
    GroupingPlan {
        scope_bytes: scope_slots * SLOT_BYTES,
        passes,
        approach,
        reasons: vec![format!("the sweep's {p} passes")],
    }
}

/// The sweep's distinct plans: one pass, then naive and copy at every pass count.
pub fn sweep(table_bytes: u64) -> Vec<GroupingPlan> {
    let mut out: Vec<GroupingPlan> = Vec::new();
    for approach in [Approach::Naive, Approach::Copy] {
        for p in SWEEP_PASSES {
            let plan = split(table_bytes, p, approach);
            if !out.iter().any(|q| same(q, &plan)) {
                out.push(plan);
            }
        }
    }
    out
}

/// Whether two plans launch the same passes.
pub fn same(a: &GroupingPlan, b: &GroupingPlan) -> bool {
    match (a.passes, b.passes) {
        (1, 1) => true,
        (p, q) => p == q && a.approach == b.approach && a.scope_bytes == b.scope_bytes,
    }
}

/// The digest the CPU model gives for `case`, where it is small enough to compute here.
pub fn cpu_digest(case: &Case) -> Option<Digest> {
    (case.rows <= CPU_CHECK_ROWS && case.key_space() <= CPU_CHECK_ROWS).then(|| {
        let sums = reference::key_sums(SEED, case.rows, case.key_space(), case.variant.work);
        reference::digest_of_sums(&sums)
    })
}

/// One launch of `plan` on a cleared table, synchronised; its table's digest.
pub fn run_once(
    gpu: &Gpu,
    data: &Data,
    case: &Case,
    plan: &GroupingPlan,
    digests: &mut Digests,
) -> Result<Digest> {
    digests.reset()?;
    let slot = digests.take()?;
    gpu.clear(data, case)?;
    gpu.launch(data, case, plan)?;
    gpu.digest(data, case, slot)?;
    gpu.sync()?;
    let d = digests.read()?[slot.index];
    if d.dropped > 0 {
        return Err(HistError::Mismatch(format!(
            "{}: {d}: the table is too small for the rows",
            label(plan)
        )));
    }
    Ok(d)
}

/// `tuner.tune_checked` on the kernel: the closure only launches the plan's passes on a
/// cleared table; the check (outside the timed span) digests the table, compares it with
/// `expected` and clears the table for the next launch. A candidate with a wrong table is
/// dropped by the autotuner and fails this call.
pub fn tune_checked(
    tuner: &Autotuner,
    gpu: &Gpu,
    data: &Data,
    case: &Case,
    expected: Digest,
) -> Result<Tuning<GroupingPlan>> {
    let work = workload(data, case);
    let mut digests = gpu.digests(1)?;
    // The table is cleared before each launch: here, or by the check after the last one.
    // A launch whose check did not run (it failed) leaves it dirty; the next launch then
    // clears it first, inside its timed span, so that its result stays right.
    let dirty = Cell::new(false);
    let wrong = RefCell::new(Vec::new());
    gpu.clear(data, case)?;
    let tuned = tuner
        .tune_checked(
            gpu.stream(),
            &case.variant.kernel_key(),
            &work,
            |plan| {
                if dirty.replace(true) {
                    gpu.clear(data, case)?;
                }
                gpu.launch(data, case, plan)
            },
            |plan| {
                let got = (|| {
                    digests.reset()?;
                    let slot = digests.take()?;
                    gpu.digest(data, case, slot)?;
                    gpu.sync()?;
                    let d = digests.read()?[slot.index];
                    gpu.clear(data, case)?;
                    dirty.set(false);
                    Ok::<Digest, HistError>(d)
                })()
                .map_err(|e| e.to_string())?;
                if got == expected {
                    return Ok(());
                }
                let m = format!("{}: {got}, the untuned plan {expected}", label(plan));
                wrong.borrow_mut().push(m.clone());
                Err(m)
            },
        )
        .map_err(|e| HistError::Autotune(e.to_string()))?;
    gpu.sync()?;
    let wrong = wrong.into_inner();
    if !wrong.is_empty() {
        return Err(HistError::Mismatch(format!(
            "tuning launches built other tables: {}",
            wrong.join("; ")
        )));
    }
    Ok(Tuning {
        launches: tuned.launches_now as usize,
        tuned,
    })
}

/// Times `plans` round robin (one warm-up round, then [`RUNS`] rounds): each launch on a
/// table cleared outside the timing, its digest checked against `expected`.
pub fn time_plans(
    gpu: &Gpu,
    data: &Data,
    case: &Case,
    plans: &[GroupingPlan],
    digests: &mut Digests,
    expected: Digest,
) -> Result<Vec<Timed>> {
    support::time_into_slots(
        plans,
        digests,
        SLOTS,
        &expected,
        |plan, slot| {
            gpu.clear(data, case)?;
            let ms = gpu.time(|| gpu.launch(data, case, plan))?;
            gpu.digest(data, case, slot)?;
            Ok(ms)
        },
        |plan, got| format!("{}: {got}, the untuned plan {expected}", label(plan)),
        label,
    )
}

/// What every row of one bench shares.
pub type Bench<'a> = support::Bench<'a, Gpu>;

/// One row: `case` on `data` (the input is drawn again for its key space).
pub fn row(bench: &Bench, data: &Data, case: &Case, digests: &mut Digests) -> Result<Row> {
    let gpu = bench.gpu;
    gpu.fill(data, case)?;
    let work = workload(data, case);
    let untuned = work.untuned();
    let expected = run_once(gpu, data, case, &untuned, digests)?;
    if let Some(cpu) = cpu_digest(case) {
        if cpu != expected {
            return Err(HistError::Mismatch(format!(
                "the untuned table ({expected}) differs from the CPU model ({cpu})"
            )));
        }
    }
    let model = memtune::core::plan::grouping_untimed(bench.profile, &work)
        .map_err(|e| HistError::Autotune(format!("the planner: {e}")))?;

    let tuned = bench.tune_twice(|tuner| tune_checked(tuner, gpu, data, case, expected), same)?;

    // Every plan timed alike, each distinct launch sequence once.
    let swept = sweep(case.table_bytes);
    let plans = support::distinct(
        [&untuned, &model, &tuned.first.tuned.plan]
            .into_iter()
            .chain(&swept),
        same,
    );
    let times = time_plans(gpu, data, case, &plans, digests, expected)?;
    let timed = PlanTimes::new(&plans, &times, label, same);
    // The best and the plans it is compared with, timed again beside each other.
    let timings = timed.confirmed_timings(&untuned, &model, &tuned, &swept, |p| {
        time_plans(gpu, data, case, p, digests, expected)
    })?;
    Ok(Row {
        variant: case.variant.name(),
        memory: data.table_memory(),
        input_memory: data.input_memory(),
        bytes: case.table_bytes,
        rows: case.rows,
        timings,
        digest: expected,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_plans_launch_as_labelled() {
        let table = 1u64 << 30;
        let plans = sweep(table);
        // One pass, then 11 pass counts for each of the two approaches.
        assert_eq!(plans.len(), 1 + 2 * (SWEEP_PASSES.len() - 1));
        assert_eq!(label(&plans[0]), "1 pass");
        assert_eq!(label(&plans[3]), "naive 4 passes of 256 MiB");
        assert_eq!(label(&plans[12]), "copy 2 passes of 512 MiB");
        for p in &plans {
            let scopes = reference::scopes(table, p).expect("the plan fits");
            assert_eq!(scopes.len() as u32, p.passes);
            assert_eq!(scopes.last().map(|s| s.end), Some(table / SLOT_BYTES));
        }
    }

    #[test]
    fn small_tables_dedupe_pass_counts() {
        // 10 slots: 6 and 8 passes both make 5 scopes of 2 slots; 12 and more, 10 of 1.
        let plans = sweep(10 * SLOT_BYTES);
        let passes: Vec<u32> = plans.iter().map(|p| p.passes).collect();
        assert_eq!(passes, vec![1, 2, 3, 4, 5, 10, 2, 3, 4, 5, 10]);
        for p in &plans {
            assert_eq!(
                reference::scopes(10 * SLOT_BYTES, p).map(|s| s.len() as u32),
                Ok(p.passes)
            );
        }
    }

    #[test]
    fn same_ignores_the_scope_of_one_pass() {
        let a = split(1 << 20, 1, Approach::Copy);
        let b = memtune::workload::grouping::untuned(1 << 20);
        assert!(same(&a, &b));
        assert_eq!(a.approach, Approach::Unscoped);
        assert!(!same(
            &split(1 << 20, 4, Approach::Naive),
            &split(1 << 20, 4, Approach::Copy)
        ));
        assert!(!same(
            &split(1 << 20, 2, Approach::Naive),
            &split(1 << 20, 4, Approach::Naive)
        ));
    }

    #[test]
    fn the_autotuners_candidates_fit_the_kernel() {
        // Whatever the model picks, its neighbours are whole 8-byte buckets: each must
        // launch as many passes as it says on the kernel's 16-byte slots.
        let profile = memtune::core::default::builtin();
        for (table, table_memory, input_memory) in [
            (
                64u64 << 20,
                memtune::MemoryKind::Device,
                memtune::MemoryKind::Pinned,
            ),
            (
                1 << 30,
                memtune::MemoryKind::Device,
                memtune::MemoryKind::Device,
            ),
            (
                2 << 30,
                memtune::MemoryKind::Pinned,
                memtune::MemoryKind::Pinned,
            ),
        ] {
            let w = GroupingWorkload {
                table_bytes: table,
                table_memory,
                input_memory,
                input_bytes: Some(32 << 20),
            };
            let model = w.model(&profile).expect("the model plans");
            for p in std::iter::once(w.untuned())
                .chain(std::iter::once(model.clone()))
                .chain(w.neighbours(&model))
            {
                let s = reference::scopes(table, &p).unwrap_or_else(|e| panic!("{p:?}: {e}"));
                assert_eq!(s.len() as u32, p.passes, "{}", label(&p));
            }
        }
    }

    #[test]
    fn cpu_digests_only_for_small_cases() {
        let small = Case {
            table_bytes: 1 << 12,
            rows: 1000,
            variant: crate::Variant { work: 3 },
        };
        let d = cpu_digest(&small).expect("small");
        assert!(d.groups > 0 && d.groups <= small.key_space());
        let big = Case {
            rows: CPU_CHECK_ROWS + 1,
            ..small
        };
        assert_eq!(cpu_digest(&big), None);
    }
}
