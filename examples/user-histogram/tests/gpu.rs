//! GPU tests of the histogram: they run only with `MEMTUNE_GPU_TESTS=1`.

use memtune::core::plan::Approach;
use memtune::MemoryKind;
use memtune_example_support::testing::{assert_stored_decision_times_nothing, gpu0_or_skip};
use user_histogram::bench::{cpu_digest, run_once, split, tune_checked, SLOTS};
use user_histogram::gpu::Gpu;
use user_histogram::{reference, Case, Variant, SEED};

/// Every approach and split, in every placement of table and input, builds the CPU
/// model's table: the same digest and, read back, the same sum for every key.
#[test]
fn gpu_tables_equal_the_cpu_model_for_every_split() {
    let Some(gpu) = gpu0_or_skip("gpu_tables_equal_the_cpu_model_for_every_split", Gpu::new) else {
        return;
    };
    let mut digests = gpu.digests(SLOTS).expect("digest slots");
    let table_bytes = 4 << 20;
    // An odd row count: the last warp is partial.
    let rows = 1_000_003;
    for (table_memory, input_memory) in [
        (MemoryKind::Device, MemoryKind::Device),
        (MemoryKind::Device, MemoryKind::Pinned),
        (MemoryKind::Pinned, MemoryKind::Pinned),
        (MemoryKind::Pinned, MemoryKind::Device),
    ] {
        let data = gpu
            .data(table_memory, input_memory, table_bytes, rows)
            .expect("buffers");
        for work in [0, 7] {
            let case = Case {
                table_bytes,
                rows,
                variant: Variant { work },
            };
            gpu.fill(&data, &case).expect("the fill runs");
            let sums = reference::key_sums(SEED, rows, case.key_space(), work);
            let want = reference::expected_groups(&sums);
            assert_eq!(cpu_digest(&case), Some(reference::digest_of_sums(&sums)));
            let cpu = reference::digest_of_sums(&sums);
            for (passes, approach) in [
                (1, Approach::Unscoped),
                (3, Approach::Naive),
                (8, Approach::Naive),
                (3, Approach::Copy),
                (16, Approach::Copy),
            ] {
                let plan = split(table_bytes, passes, approach);
                assert_eq!(plan.passes, passes);
                let what = format!("{table_memory} table, {input_memory} input, work {work}, {approach:?} {passes}");
                let d = run_once(&gpu, &data, &case, &plan, &mut digests).expect(&what);
                assert_eq!(d, cpu, "{what}");
                let table = gpu.read_table(&data, &case).expect("read back");
                assert_eq!(reference::groups(&table).as_ref(), Ok(&want), "{what}");
            }
        }
    }
}

#[test]
fn a_stored_decision_times_nothing() {
    let Some(gpu) = gpu0_or_skip("a_stored_decision_times_nothing", Gpu::new) else {
        return;
    };
    let mut digests = gpu.digests(SLOTS).expect("digest slots");
    let case = Case {
        table_bytes: 64 << 20,
        rows: 4 << 20,
        variant: Variant { work: 2 },
    };
    let data = gpu
        .data(
            MemoryKind::Device,
            MemoryKind::Pinned,
            case.table_bytes,
            case.rows,
        )
        .expect("buffers");
    gpu.fill(&data, &case).expect("the fill runs");
    let untuned = split(case.table_bytes, 1, Approach::Unscoped);
    let expected = run_once(&gpu, &data, &case, &untuned, &mut digests).expect("runs");
    let uuid = gpu.identity().uuid.clone();
    let tunes = "tunes, every launch building the untuned table";
    let first = assert_stored_decision_times_nothing(&uuid, tunes, |tuner| {
        tune_checked(tuner, &gpu, &data, &case, expected)
    });
    let decision = first.tuned.decision.as_ref().expect("a decision");
    assert!(
        decision.candidates.iter().all(|c| c.stats.error.is_none()),
        "{:?}",
        decision.candidates
    );
}
