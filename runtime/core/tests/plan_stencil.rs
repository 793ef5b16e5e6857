//! The stencil planner against seed 003 (Korpala): staging pays on Kepler in double precision
//! from 6 neighbour reads on, not on Pascal, and in single precision everywhere; a one-plane
//! staged block streams.

use memtune_core::default::builtin;
use memtune_core::plan::{stencil, Dtype, StencilPlan, StencilWorkload, Variant};
use memtune_core::{Profile, Section, StagingEntry, StagingTable};

/// (dtype, repeats, plain block, plain ms, staged block, staged ms) on seed 003's 400³ grid.
type Row = (&'static str, u32, [u32; 3], f64, [u32; 3], f64);

fn profile(rows: &[Row]) -> Profile {
    let entries = rows
        .iter()
        .map(
            |&(
                dtype,
                repeats,
                best_plain_block,
                best_plain_ms,
                best_staged_block,
                best_staged_ms,
            )| StagingEntry {
                dtype: dtype.to_string(),
                repeats,
                grid: [400, 400, 400],
                best_plain_block,
                best_plain_ms,
                best_staged_block,
                best_staged_ms,
                benefit: best_plain_ms / best_staged_ms,
                best_streaming_block: None,
                best_streaming_ms: None,
            },
        )
        .collect();
    let mut p = builtin();
    p.shared_memory_staging = Section::Measured(StagingTable { entries });
    p
}

/// Kepler as seed 003 Fig. 5 and 8 describe it: double precision gains from 6 reads on (up
/// to 12%), single precision gains a lot.
fn kepler() -> Profile {
    profile(&[
        ("f64", 1, [32, 4, 4], 10.0, [16, 8, 4], 10.4),
        ("f64", 6, [32, 4, 4], 56.0, [16, 8, 4], 50.0),
        ("f64", 12, [32, 4, 4], 112.0, [32, 4, 4], 100.0),
        ("f32", 6, [32, 8, 2], 40.0, [32, 8, 4], 25.0),
    ])
}

fn plan_for(p: &Profile, dims: [u32; 3], dtype: Dtype, repeats: u32) -> StencilPlan {
    stencil::plan(
        p,
        &StencilWorkload {
            dims,
            dtype,
            repeats,
        },
    )
    .unwrap()
}

#[test]
fn kepler_double_precision_stages_from_six_reads_on() {
    // §4: "The benefit of using of SMem in Kepler begins by 6 time access and size of blocks
    // of more than 4 cells."
    let p = kepler();
    let six = plan_for(&p, [400, 400, 400], Dtype::F64, 6);
    assert_eq!(
        (six.variant, six.block, six.staging),
        (Variant::Staged, [16, 8, 4], true),
        "{six:#?}"
    );
    let one = plan_for(&p, [400, 400, 400], Dtype::F64, 1);
    assert_eq!(
        (one.variant, one.block, one.staging),
        (Variant::Plain, [32, 4, 4], false),
        "{one:#?}"
    );
    // More reads than any measurement: the nearest, 12, which stages.
    let many = plan_for(&p, [400, 400, 400], Dtype::F64, 24);
    assert_eq!(
        (many.variant, many.block),
        (Variant::Staged, [32, 4, 4]),
        "{many:#?}"
    );
}

#[test]
fn gains_measured_with_more_reads_are_not_assumed_for_fewer() {
    // 3 reads: nearest is the 6-read entry, whose gain need not hold with fewer reads.
    let plan = plan_for(&kepler(), [400, 400, 400], Dtype::F64, 3);
    assert_eq!(
        (plan.variant, plan.block),
        (Variant::Plain, [32, 4, 4]),
        "{plan:#?}"
    );
    assert!(
        plan.reasons
            .iter()
            .any(|r| r.contains("measured with 6 repeats")),
        "{plan:#?}"
    );
}

#[test]
fn pascal_double_precision_stays_plain() {
    // §4: "The test performance shows that SMem by Maxwell and Pascal gives no benefit by
    // calculation time." and "By some combination of SMem size the calculation takes more
    // time with SMem than without."
    let pascal = profile(&[("f64", 6, [64, 4, 2], 20.0, [32, 4, 4], 20.6)]);
    let plan = plan_for(&pascal, [400, 400, 400], Dtype::F64, 6);
    assert_eq!(
        (plan.variant, plan.block, plan.staging),
        (Variant::Plain, [64, 4, 2], false),
        "{plan:#?}"
    );
}

#[test]
fn single_precision_stages_everywhere() {
    // §4: "The results of calculation time with the sum of 6 neighbours and with six times
    // access to each cell is illustrated in figure 8. Here the benefit of using SMem is
    // large for all GPUs."
    let plan = plan_for(&kepler(), [400, 400, 400], Dtype::F32, 6);
    assert_eq!(
        (plan.variant, plan.block, plan.staging),
        (Variant::Staged, [32, 8, 4], true),
        "{plan:#?}"
    );
}

#[test]
fn a_gain_within_the_margin_is_not_acted_on() {
    let p = profile(&[("f64", 6, [32, 4, 4], 10.3, [16, 8, 4], 10.0)]);
    let plan = plan_for(&p, [400, 400, 400], Dtype::F64, 6);
    assert_eq!(
        (plan.variant, plan.block),
        (Variant::Plain, [32, 4, 4]),
        "{plan:#?}"
    );
}

#[test]
fn no_entry_for_the_dtype_falls_back_to_the_default() {
    let p = profile(&[("f32", 6, [32, 8, 2], 40.0, [32, 8, 4], 25.0)]);
    let plan = plan_for(&p, [400, 400, 400], Dtype::F64, 6);
    assert_eq!(
        (plan.variant, plan.block),
        (Variant::Plain, stencil::DEFAULT_BLOCK)
    );
    assert!(plan
        .reasons
        .iter()
        .any(|r| r.contains("no staging data for f64") && r.contains("`cargo tune`")));
}

#[test]
fn an_unlaunchable_block_falls_back_to_the_default() {
    let p = profile(&[("f64", 6, [64, 32, 1], 10.0, [16, 8, 4], 5.0)]);
    let plan = plan_for(&p, [400, 400, 400], Dtype::F64, 6);
    assert_eq!(
        (plan.variant, plan.block),
        (Variant::Plain, stencil::DEFAULT_BLOCK),
        "{plan:#?}"
    );
}

#[test]
fn a_one_plane_staged_block_streams() {
    // Seed 003 Fig. 4: "3D blocks stacked in 2D grid (loops calculate the entire calculation
    // volume)". When the best staged block is one plane deep, marching it along z reads each
    // plane once instead of also as the halo of its neighbours.
    let p = profile(&[("f32", 6, [32, 8, 2], 40.0, [32, 8, 1], 24.0)]);
    let plan = plan_for(&p, [400, 400, 400], Dtype::F32, 6);
    assert_eq!(
        (plan.variant, plan.block, plan.staging),
        (Variant::Streaming, [32, 8, 1], true),
        "{plan:#?}"
    );
    // Every variant loops over z: any depth is fine.
    let deep = plan_for(&kepler(), [64, 64, u32::MAX], Dtype::F64, 6);
    assert_eq!(deep.variant, Variant::Staged, "{deep:#?}");
}

#[test]
fn blocks_are_clamped_to_small_grids() {
    let plan = plan_for(&kepler(), [8, 400, 2], Dtype::F64, 6);
    assert_eq!(plan.block, [8, 8, 2], "{plan:#?}");
    assert!(
        plan.reasons.iter().any(|r| r.contains("clamped")),
        "{plan:#?}"
    );
}

/// `profile(rows)` with streaming measured in the first entry.
fn with_streaming(rows: &[Row], block: [u32; 3], ms: f64) -> Profile {
    let mut p = profile(rows);
    if let Section::Measured(t) = &mut p.shared_memory_staging {
        t.entries[0].best_streaming_block = Some(block);
        t.entries[0].best_streaming_ms = Some(ms);
    }
    p
}

#[test]
fn streaming_fastest_by_the_margin_streams() {
    // Streaming 20.0 ms: 2.0x plain, 1.25x staged.
    let p = with_streaming(
        &[("f32", 6, [32, 8, 2], 40.0, [32, 8, 4], 25.0)],
        [64, 4, 1],
        20.0,
    );
    let plan = plan_for(&p, [400, 400, 400], Dtype::F32, 6);
    assert_eq!(
        (plan.variant, plan.block, plan.staging),
        (Variant::Streaming, [64, 4, 1], true),
        "{plan:#?}"
    );
    assert!(
        plan.reasons.iter().any(|r| r.contains(": streaming")),
        "{plan:#?}"
    );
}

#[test]
fn streaming_within_the_margin_of_staged_keeps_staged() {
    // Streaming 24.8 ms vs staged 25.0 ms: 1.008x, within noise.
    let p = with_streaming(
        &[("f32", 6, [32, 8, 2], 40.0, [32, 8, 4], 25.0)],
        [64, 4, 1],
        24.8,
    );
    let plan = plan_for(&p, [400, 400, 400], Dtype::F32, 6);
    assert_eq!(
        (plan.variant, plan.block),
        (Variant::Staged, [32, 8, 4]),
        "{plan:#?}"
    );
}

#[test]
fn streaming_a_few_percent_faster_than_plain_streams() {
    // An H200's 512³ f64 x1 entry (2026-11-22): plain 0.649 ms, staged 1.076 ms, streaming
    // 0.620 ms, 1.046x plain. The bench measured the same order (plain 0.655, streaming
    // 0.622), so staying plain lost 5.6%.
    let p = with_streaming(
        &[("f64", 1, [32, 4, 1], 0.649, [32, 4, 2], 1.076)],
        [32, 4, 1],
        0.620,
    );
    let plan = plan_for(&p, [512, 512, 512], Dtype::F64, 1);
    assert_eq!(
        (plan.variant, plan.block),
        (Variant::Streaming, [32, 4, 1]),
        "{plan:#?}"
    );
    // 1.5% faster is within noise: plain stands.
    let p = with_streaming(
        &[("f64", 1, [32, 4, 1], 0.649, [32, 4, 2], 1.076)],
        [32, 4, 1],
        0.640,
    );
    let plan = plan_for(&p, [512, 512, 512], Dtype::F64, 1);
    assert_eq!(plan.variant, Variant::Plain, "{plan:#?}");
}

#[test]
fn streaming_can_pay_where_staging_does_not() {
    // Pascal-like double precision: staged no faster than plain, streaming 1.25x both.
    let p = with_streaming(
        &[("f64", 6, [64, 4, 2], 20.0, [32, 4, 4], 20.6)],
        [32, 8, 1],
        16.0,
    );
    let plan = plan_for(&p, [400, 400, 400], Dtype::F64, 6);
    assert_eq!(
        (plan.variant, plan.block, plan.staging),
        (Variant::Streaming, [32, 8, 1], true),
        "{plan:#?}"
    );
    // Fewer reads than measured: no staging variant at all.
    let fewer = plan_for(&p, [400, 400, 400], Dtype::F64, 3);
    assert_eq!(
        (fewer.variant, fewer.block),
        (Variant::Plain, [64, 4, 2]),
        "{fewer:#?}"
    );
}

#[test]
fn streaming_slower_or_unusable_is_ignored() {
    let rows: &[Row] = &[("f64", 6, [64, 4, 2], 20.0, [32, 4, 4], 20.6)];
    let slower = plan_for(
        &with_streaming(rows, [32, 8, 1], 30.0),
        [400, 400, 400],
        Dtype::F64,
        6,
    );
    assert_eq!(
        (slower.variant, slower.block),
        (Variant::Plain, [64, 4, 2]),
        "{slower:#?}"
    );
    // Not one plane deep, or no positive time: ignored, with a reason.
    for (block, ms) in [([32, 8, 2], 5.0), ([32, 8, 1], 0.0), ([32, 8, 1], f64::NAN)] {
        let plan = plan_for(
            &with_streaming(rows, block, ms),
            [400, 400, 400],
            Dtype::F64,
            6,
        );
        assert_eq!(plan.variant, Variant::Plain, "{plan:#?}");
        assert!(
            plan.reasons.iter().any(|r| r.contains("ignored")),
            "{plan:#?}"
        );
    }
}

#[test]
fn old_entries_without_streaming_still_parse() {
    let json = r#"{"dtype":"f32","repeats":6,"grid":[400,400,400],
        "best_plain_block":[32,8,2],"best_plain_ms":40.0,
        "best_staged_block":[32,8,4],"best_staged_ms":25.0,"benefit":1.6}"#;
    let e: StagingEntry = serde_json::from_str(json).unwrap();
    assert_eq!((e.best_streaming_block, e.best_streaming_ms), (None, None));
    let back = serde_json::to_string(&e).unwrap();
    assert!(!back.contains("streaming"), "{back}");
}

#[test]
fn streaming_needs_rows_of_whole_vectors_and_warps() {
    // Streaming measured fastest (2.0x plain, 1.25x staged) on rows of whole vectors.
    let p = with_streaming(
        &[("f32", 6, [32, 8, 2], 40.0, [32, 8, 4], 25.0)],
        [64, 4, 1],
        20.0,
    );
    // 401 f32 cells are not whole 16-byte vectors: the staged choice stands.
    let odd = plan_for(&p, [401, 400, 400], Dtype::F32, 6);
    assert_eq!(
        (odd.variant, odd.block),
        (Variant::Staged, [32, 8, 4]),
        "{odd:#?}"
    );
    assert!(
        odd.reasons.iter().any(|r| r.contains("not streaming")),
        "{odd:#?}"
    );
    // 402 f64 cells are whole vectors of two.
    let f64_rows = with_streaming(
        &[("f64", 6, [64, 4, 2], 20.0, [32, 4, 4], 20.6)],
        [32, 8, 1],
        16.0,
    );
    let even = plan_for(&f64_rows, [402, 400, 400], Dtype::F64, 6);
    assert_eq!(even.variant, Variant::Streaming, "{even:#?}");
    // Not streamable and staging not worth it: plain.
    let plain = plan_for(&f64_rows, [401, 400, 400], Dtype::F64, 6);
    assert_eq!(
        (plain.variant, plain.block),
        (Variant::Plain, [64, 4, 2]),
        "{plain:#?}"
    );
    // A one-plane staged block that is not whole warps along x stays staged.
    let narrow = profile(&[("f32", 6, [32, 8, 2], 40.0, [16, 8, 1], 24.0)]);
    let plan = plan_for(&narrow, [400, 400, 400], Dtype::F32, 6);
    assert_eq!(
        (plan.variant, plan.block),
        (Variant::Staged, [16, 8, 1]),
        "{plan:#?}"
    );
}

/// An f64 entry at `grid`³ with 6 repeats: plain 32x4x1 at `plain_ms`, staged 32x4x2
/// slower, streaming 32x4x1 at `streaming_ms`.
fn f64_entry(grid: u32, plain_ms: f64, streaming_ms: f64) -> StagingEntry {
    StagingEntry {
        dtype: "f64".into(),
        repeats: 6,
        grid: [grid; 3],
        best_plain_block: [32, 4, 1],
        best_plain_ms: plain_ms,
        best_staged_block: [32, 4, 2],
        best_staged_ms: plain_ms * 1.3,
        benefit: 1.0 / 1.3,
        best_streaming_block: Some([32, 4, 1]),
        best_streaming_ms: Some(streaming_ms),
    }
}

#[test]
fn each_grid_takes_the_verdict_of_its_nearest_measured_volume() {
    // As an H100 measured f64: streaming 7.7% faster at 256³, plain 3% faster at 512³.
    let mut p = builtin();
    p.shared_memory_staging = Section::Measured(StagingTable {
        entries: vec![
            f64_entry(400, 0.40, 0.41),
            f64_entry(512, 0.79, 0.815),
            f64_entry(256, 0.1135, 0.1054),
        ],
    });
    let small = plan_for(&p, [256, 256, 256], Dtype::F64, 6);
    assert_eq!(
        (small.variant, small.block),
        (Variant::Streaming, [32, 4, 1]),
        "{small:#?}"
    );
    let near_small = plan_for(&p, [240, 256, 272], Dtype::F64, 6);
    assert_eq!(near_small.variant, Variant::Streaming, "{near_small:#?}");
    let large = plan_for(&p, [512, 512, 512], Dtype::F64, 6);
    assert_eq!(
        (large.variant, large.block),
        (Variant::Plain, [32, 4, 1]),
        "{large:#?}"
    );
    let middle = plan_for(&p, [400, 400, 400], Dtype::F64, 6);
    assert_eq!(middle.variant, Variant::Plain, "{middle:#?}");
}
