use super::*;
use crate::plan::Dtype;
use crate::profile::CachePath;
use crate::profile::MemoryKind;
use crate::tune::pass_counts::{
    cache_edges, edge_passes, edge_past, refine_passes, ruled_out_passes,
};

fn sampling(region: u64, memory: MemoryKind) -> SamplingWorkload {
    SamplingWorkload {
        region_bytes: region,
        memory,
        reads_per_thread: 64,
    }
}

/// The launches split `words` into scopes of `scope_words`: the count must be `passes`.
fn splits_as_launched(total: u64, unit: u64, scope_bytes: u64, passes: u32) -> bool {
    let words = total / unit;
    let scope = scope_bytes / unit;
    scope > 0 && words.div_ceil(scope) == u64::from(passes)
}

#[test]
fn untuned_first_model_second_at_most_five_no_duplicates() {
    let profile = crate::default::builtin();
    for region in [96 << 20, 384 << 20, 1536 << 20, 3 << 30, 24 << 30] {
        for memory in [MemoryKind::Device, MemoryKind::Pinned] {
            let w = sampling(region, memory);
            let c = w.candidates(&profile).unwrap();
            assert!((2..=MAX_CANDIDATES).contains(&c.len()), "{c:?}");
            assert_eq!((c[0].origin, c[0].plan.passes), (Origin::Untuned, 1));
            let model = w.model(&profile).unwrap();
            if model.passes > 1 {
                assert_eq!(c[1].origin, Origin::Model);
                assert_eq!(c[1].plan, model);
            }
            for (i, a) in c.iter().enumerate() {
                assert!(c[i + 1..].iter().all(|b| b.label != a.label), "{c:?}");
                assert!(
                    a.plan.passes == 1
                        || splits_as_launched(region, 4, a.plan.scope_bytes, a.plan.passes),
                    "{a:?}"
                );
            }
        }
    }
}

#[test]
fn neighbours_halve_and_quarter_before_doubling() {
    assert_eq!(neighbour_passes(6, false), vec![3, 2, 12, 24]);
    assert_eq!(neighbour_passes(12, false), vec![6, 3, 24, 48]);
    assert_eq!(neighbour_passes(8, false), vec![4, 2, 16, 32]);
    assert_eq!(neighbour_passes(3, false), vec![2, 6, 12]);
    assert_eq!(neighbour_passes(2, false), vec![4, 8]);
    assert_eq!(neighbour_passes(1, false), vec![2, 4, 8]);
    // Pinned memory: half and double first.
    assert_eq!(neighbour_passes(6, true), vec![3, 12, 2, 24]);
    assert_eq!(neighbour_passes(1, true), vec![2, 4, 8]);
}

#[test]
fn refinement_fills_the_gap_beside_the_fastest() {
    // Fastest 4, its faster neighbour 2: the middle is 3 (a user's gather at 384 MiB).
    let t = [(1, 0.266), (2, 0.258), (4, 0.249), (8, 0.262)];
    assert_eq!(refine_passes(&t), Some(3));
    // The faster neighbour is above: between 4 and 8.
    let t = [(1, 0.266), (2, 0.262), (4, 0.249), (8, 0.255)];
    assert_eq!(refine_passes(&t), Some(6));
    // That gap closed (3 timed): the other side.
    let t = [(1, 0.3), (2, 0.26), (3, 0.25), (6, 0.27)];
    assert_eq!(refine_passes(&t), Some(4));
    // The most passes is fastest: half a doubling past, however little the times fell.
    let t = [(1, 9.0), (8, 4.0), (16, 3.6), (32, 3.2)];
    assert_eq!(refine_passes(&t), Some(45));
    let t = [(1, 4.0), (3, 3.5), (6, 2.57), (12, 2.45)];
    assert_eq!(refine_passes(&t), Some(17));
    // 17 timed too: between 12 and its faster neighbour, 17.
    let t = [(1, 4.0), (3, 3.5), (6, 2.57), (12, 2.45), (17, 2.5)];
    assert_eq!(refine_passes(&t), Some(14));
    // Untuned fastest next to 2 passes: nothing between 1 and 2.
    assert_eq!(refine_passes(&[(1, 1.0), (2, 1.1), (4, 1.3)]), None);
    // Every gap around the leader closed; timings without a median are ignored.
    assert_eq!(refine_passes(&[(2, 1.0), (3, 0.9), (4, 1.0)]), None);
    assert_eq!(refine_passes(&[(1, f64::NAN)]), None);
    assert_eq!(refine_passes(&[]), None);
}

#[test]
fn scoped_workloads_leave_a_slot_for_the_refinement() {
    let profile = crate::default::builtin();
    let w = sampling(384 << 20, MemoryKind::Device);
    let c = w.candidates(&profile).unwrap();
    assert_eq!(c.len(), MAX_CANDIDATES - 1, "{c:?}");
    let plans: Vec<_> = c.iter().map(|c| c.plan.clone()).collect();
    // The kernel is fastest at 3 passes; times fall towards it from both sides.
    let ms = |p: &SamplingPlan| (f64::from(p.passes).log2() - 3f64.log2()).abs() + 1.0;
    let timed: Vec<_> = plans.iter().map(|p| (p, Some(ms(p)))).collect();
    let r = w.refine(&profile, &timed).expect("a gap is left");
    assert!(
        r.passes >= 2 && c.iter().all(|x| x.plan.passes != r.passes),
        "{r:?}"
    );
    assert!(splits_as_launched(384 << 20, 4, r.scope_bytes, r.passes));
    // Stencils do not refine.
    let st = StencilWorkload {
        dims: [512, 512, 512],
        dtype: Dtype::F32,
        repeats: 1,
    };
    assert!(st.refine(&profile, &[]).is_none());
}

#[test]
fn split_recounts_passes_for_uneven_totals() {
    // 10 words in 3 passes: scopes of 4 words, 3 passes (4, 4, 2).
    assert_eq!(split(40, 3, 4), (16, 3));
    // 10 words in 4 passes: scopes of 3 words need 4 passes (3, 3, 3, 1).
    assert_eq!(split(40, 4, 4), (12, 4));
    // More passes than units: one unit each.
    assert_eq!(split(8, 5, 4), (4, 2));
}

#[test]
fn grouping_neighbours_keep_a_scoped_approach_and_split_in_buckets() {
    let profile = crate::default::builtin();
    let w = GroupingWorkload {
        table_bytes: 6 << 30,
        table_memory: MemoryKind::Pinned,
        input_memory: MemoryKind::Device,
        input_bytes: None,
    };
    let c = w.candidates(&profile).unwrap();
    assert_eq!(c[0].plan.approach, Approach::Unscoped);
    for x in &c[1..] {
        assert!(x.plan.passes >= 2, "{x:?}");
        assert!(splits_as_launched(
            6 << 30,
            8,
            x.plan.scope_bytes,
            x.plan.passes
        ));
    }
}

#[test]
fn stencil_candidates_have_launchable_blocks() {
    let profile = crate::default::builtin();
    for dims in [[512, 512, 512], [320, 200, 96], [40, 8, 3]] {
        for dtype in [Dtype::F32, Dtype::F64] {
            let w = StencilWorkload {
                dims,
                dtype,
                repeats: 1,
            };
            let c = w.candidates(&profile).unwrap();
            assert!(c.len() >= 2 && c.len() <= MAX_CANDIDATES, "{c:?}");
            assert_eq!(c[0].plan.variant, Variant::Plain);
            for x in &c {
                let b = x.plan.block;
                assert!(b.iter().product::<u32>() <= 1024, "{x:?}");
                assert!(b.iter().zip(&dims).all(|(b, d)| *b >= 1 && b <= d), "{x:?}");
                if x.plan.variant == Variant::Streaming {
                    assert_eq!(b[2], 1, "{x:?}");
                }
            }
        }
    }
}

#[test]
fn classes_separate_what_changes_the_best_plan() {
    let a = sampling(1 << 30, MemoryKind::Device).class();
    let mut reads = sampling(1 << 30, MemoryKind::Device);
    reads.reads_per_thread = 1024;
    assert_ne!(a, reads.class());
    assert_ne!(a, sampling(1 << 30, MemoryKind::Pinned).class());
    assert_eq!(
        a,
        sampling((1 << 30) + (1 << 20), MemoryKind::Device).class()
    );
}

#[test]
fn pass_counts_are_ruled_out_only_by_a_clear_rise() {
    // One pass 10 ms, four passes 40 ms: a pass costs at least 10 ms, so 8 passes take at
    // least 80 ms and cannot beat 10.
    let rising = [(1, 10.0), (4, 40.0)];
    assert!(ruled_out_passes(8, &rising, 10.0).is_some());
    // Two passes: a floor of 20 ms, 2x the fastest: ruled out; one pass never rises.
    assert!(ruled_out_passes(2, &rising, 10.0).is_some());
    assert!(ruled_out_passes(1, &rising, 10.0).is_none());
    // Falling times (scoping pays) or a rise within the noise rule nothing out.
    assert!(ruled_out_passes(32, &[(1, 10.0), (4, 4.0), (8, 3.0)], 3.0).is_none());
    assert!(ruled_out_passes(32, &[(1, 10.0), (4, 12.0)], 10.0).is_none());
    // Against a faster plan of another approach the floor is weighed the same way.
    assert!(ruled_out_passes(16, &[(1, 10.0), (2, 16.0)], 4.0).is_some());
    assert!(ruled_out_passes(3, &[], 1.0).is_none());
}

#[test]
fn a_cache_capacity_between_the_fastest_and_its_neighbour_is_tried_first() {
    let mib = 1u64 << 20;
    let edges = [25 * mib, 50 * mib];
    // 384 MiB: 12 passes of 32 MiB fastest, 6 of 64 MiB beside it; the 50 MiB L2 lies
    // between: 8 passes (48 MiB), the fewest within it.
    let t = [(1, 4.05), (3, 3.4), (6, 2.9), (12, 2.36)];
    assert_eq!(edge_passes(384 * mib, &t, &edges), Some(8));
    // 96 MiB: 6 of 16 MiB fastest, 3 of 32 MiB beside it: 4 of 24 MiB within 25 MiB.
    let t = [(1, 3.1), (2, 2.0), (3, 1.3), (6, 1.10)];
    assert_eq!(edge_passes(96 * mib, &t, &edges), Some(4));
    // 128 MiB: 4 of 32 MiB beside 8 of 16 MiB: 6 (21.33 MiB), as 5 (25.6 MiB) is over.
    let t = [(1, 3.4), (2, 2.5), (4, 1.5), (8, 1.2)];
    assert_eq!(edge_passes(128 * mib, &t, &edges), Some(6));
    // No capacity between the scopes, or its count already timed: nothing.
    let t = [(1, 4.0), (8, 2.0), (16, 2.1)];
    assert_eq!(edge_passes(4096 * mib, &t, &edges), None);
    let t = [(1, 4.05), (6, 2.9), (8, 2.2), (12, 2.36)];
    assert_eq!(edge_passes(384 * mib, &t, &edges), None);
    assert_eq!(edge_passes(384 * mib, &[], &edges), None);
}

#[test]
fn a_cache_capacity_past_the_most_passes_when_they_are_fastest() {
    let mib = 1u64 << 20;
    let edges = [25 * mib, 50 * mib];
    // A 256 MiB table: 8 passes of 32 MiB fastest and the most timed; the 25 MiB level
    // under its scope: 11 passes (23.27 MiB), within twice its count.
    let t = [(1, 112.0), (2, 110.0), (5, 101.6), (8, 99.3)];
    assert_eq!(edge_past(256 * mib, &t, &edges), Some(11));
    // The fastest is not the most passes, or the level is over twice its count away:
    // nothing.
    let t = [(1, 112.0), (5, 99.0), (8, 101.0)];
    assert_eq!(edge_past(256 * mib, &t, &edges), None);
    let t = [(1, 112.0), (2, 101.0)];
    assert_eq!(edge_past(256 * mib, &t, &edges), None);
}

#[test]
fn cache_edges_take_the_drivers_l2_size_for_a_level_just_under_it() {
    let mut profile = crate::default::builtin();
    let Some(caches) = profile.caches.measured() else {
        return;
    };
    let mib = 1u64 << 20;
    let levels: Vec<u64> = caches
        .levels
        .iter()
        .filter(|l| l.path == CachePath::L2 && l.size_bytes >= mib)
        .map(|l| l.size_bytes)
        .collect();
    let Some(&largest) = levels.iter().max() else {
        return;
    };
    // A driver L2 a tenth over the largest level: that level snaps to it.
    profile.device.l2_bytes = largest + largest / 10;
    assert!(cache_edges(&profile).contains(&profile.device.l2_bytes));
    // Twice the level: too far to be the same cache; the level stays as measured.
    profile.device.l2_bytes = 2 * largest + 4 * mib;
    assert!(cache_edges(&profile).contains(&largest));
}

#[test]
fn a_streaming_pick_of_two_warps_a_row_neighbours_its_one_warp_row() {
    let w = StencilWorkload {
        dims: [256, 256, 256],
        dtype: Dtype::F32,
        repeats: 1,
    };
    let pick = |block| StencilPlan {
        variant: Variant::Streaming,
        block,
        staging: true,
        reasons: vec![],
    };
    let blocks = |model| -> Vec<(Variant, [u32; 3])> {
        w.neighbours(&pick(model))
            .iter()
            .map(|p| (p.variant, p.block))
            .collect()
    };
    let two_warps = blocks([64, 4, 1]);
    assert!(
        two_warps.contains(&(Variant::Streaming, [32, 4, 1])),
        "{two_warps:?}"
    );
    let one_warp = blocks([32, 4, 1]);
    assert!(
        one_warp.contains(&(Variant::Streaming, [32, 8, 1])),
        "{one_warp:?}"
    );
}
#[test]
fn a_stencil_refines_the_fastest_variant_at_half_its_threads() {
    let work = StencilWorkload {
        dims: [384, 256, 192],
        dtype: crate::plan::Dtype::F32,
        repeats: 1,
    };
    let plain = |block| StencilPlan {
        variant: Variant::Plain,
        block,
        staging: false,
        reasons: vec![],
    };
    let (a, b, c) = (plain([32, 4, 2]), plain([64, 4, 1]), plain([32, 4, 1]));
    let profile = crate::default::builtin();
    // 64x4x1 leads: its half, 32x4x1, is next.
    let timed = [(&a, Some(1.1)), (&b, Some(1.0))];
    let next = work.refine(&profile, &timed).expect("a refinement");
    assert_eq!(next.block, [32, 4, 1]);
    assert_eq!(next.variant, Variant::Plain);
    // Its half already timed: the same threads in another shape.
    let timed = [(&a, Some(1.1)), (&b, Some(1.0)), (&c, None)];
    let next = work.refine(&profile, &timed).expect("a refinement");
    assert_eq!(next.block, [32, 8, 1]);
    // Nothing timed: nothing to refine.
    assert_eq!(work.refine(&profile, &[(&a, None)]), None);
}

#[test]
fn an_unstable_level_adds_a_plan_within_its_reach() {
    // A first probe of an H100 whose pinned levels are all unstable, the fastest
    // 5048 x 4 KiB (19.7 MiB of reach).
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/h100/GPU-911d4cb6-f8a5-c892-0467-5f962c4c6339.json");
    let profile = crate::store::load_path(&path).expect("the fixture loads");
    let reach = 5048 * 4096;
    for region in [128u64 << 20, 256 << 20, 512 << 20] {
        let w = sampling(region, MemoryKind::Pinned);
        let within = w
            .under_unstable_level(&profile)
            .expect("a plan within the reach");
        assert!(within.scope_bytes <= reach, "{within:?}");
        assert!(within.scope_bytes * 2 > reach, "{within:?}");
        let c = w.candidates(&profile).unwrap();
        assert_eq!(c[0].origin, Origin::Untuned);
        let label = SamplingWorkload::label;
        assert!(c.iter().any(|x| x.label == label(&within)), "{c:?}");
        assert!(c
            .iter()
            .any(|x| x.label == label(&w.model(&profile).unwrap())));
        assert!(c.len() <= MAX_CANDIDATES - REFINEMENTS);
    }
    // A region within the reach, and device memory (no unstable level): nothing to add.
    assert!(sampling(16 << 20, MemoryKind::Pinned)
        .under_unstable_level(&profile)
        .is_none());
    assert!(sampling(512 << 20, MemoryKind::Device)
        .under_unstable_level(&profile)
        .is_none());
}
