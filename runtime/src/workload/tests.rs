use super::*;
use crate::launch::{grouping_scopes, sampling_scopes, stencil_launch};
use memtune_core::plan::Dtype;

const GIB: u64 = 1 << 30;

fn machine(free: u64, host: u64) -> Machine {
    Machine {
        device_free_bytes: free,
        host_bytes: host,
    }
}

#[test]
fn size_lists() {
    assert_eq!(geometric(64, 512), vec![64, 128, 256, 512]);
    assert!(geometric(64, 63).is_empty());
    assert_eq!(floor_pow2(100), 64);
    assert_eq!(floor_pow2(0), 0);
    // An H200 with ~139 GiB free: 64 MiB .. 64 GiB, 11 sizes.
    let free = 139 * GIB;
    let device = sampling::device_sizes(free, false);
    assert_eq!(device.first(), Some(&(64 * MIB)));
    assert_eq!(device.last(), Some(&(64 * GIB)));
    assert_eq!(device.len(), 11);
    let quick = sampling::device_sizes(free, true);
    assert_eq!(quick, vec![64 * MIB, GIB, 16 * GIB, 64 * GIB]);
    // 128 GiB of host memory: pinned by powers of two up to 8 GiB, then 12 and 24 GiB;
    // 16 GiB: up to 4 GiB, 3 GiB among them.
    let pinned = sampling::pinned_sizes(128 * GIB, false);
    assert_eq!(pinned.last(), Some(&(24 * GIB)));
    assert!(pinned.contains(&(8 * GIB)) && pinned.contains(&(3 * GIB)));
    assert!(pinned.windows(2).all(|w| w[0] < w[1]));
    let small = sampling::pinned_sizes(16 * GIB, false);
    assert_eq!(small.last(), Some(&(4 * GIB)));
    assert!(small.contains(&(3 * GIB)));
    // Device cases: every odd size once a variant, the heavy one with work.
    let cases = sampling::device_cases(free, false);
    let heavy = cases
        .iter()
        .filter(|c| c.work == sampling::HEAVY_WORK)
        .count();
    assert_eq!(heavy, 4);
    assert_eq!(cases.iter().filter(|c| c.reads == 64).count(), 4);
    assert_eq!(
        sampling::pinned_sizes(128 * GIB, true),
        vec![64 * MIB, 512 * MIB, 2 * GIB]
    );
    assert_eq!(grouping::table_sizes(free, false).len(), 7);
    assert_eq!(grouping::table_sizes(free, false).last(), Some(&(4 * GIB)));
    assert_eq!(
        grouping::table_sizes(free, true),
        vec![64 * MIB, 512 * MIB, 4 * GIB]
    );
    assert_eq!(stencil::grids(true).len(), 2);
    assert_eq!(stencil::grids(false).len(), 4);
    let m = machine(free, 512 * GIB);
    for (quick, rows, wide) in [(true, 5, 1), (false, 12, 4)] {
        let pick = Pick {
            quick,
            ..Pick::default()
        };
        let cases = Stencil::cases(&m, &pick, &mut Vec::new());
        assert_eq!(cases.len(), rows, "quick {quick}");
        let wide_rows = cases.iter().filter(|c| c.radius == stencil::WIDE_RADIUS);
        assert_eq!(wide_rows.count(), wide, "quick {quick}");
    }
}

#[test]
fn pass_counts_keep_scopes_at_least_16_mib() {
    assert_eq!(pass_counts(16 * MIB), vec![1]);
    assert_eq!(pass_counts(64 * MIB), vec![1, 2, 4]);
    assert_eq!(pass_counts(256 * MIB), vec![1, 2, 4, 8, 16]);
    assert_eq!(pass_counts(64 * GIB), PASSES.to_vec());
}

#[test]
fn heavy_grouping_rows_are_a_few_tables() {
    let free = 139 * GIB;
    let heavy: Vec<u64> = grouping::table_sizes(free, false)
        .into_iter()
        .filter(|&t| grouping::heavy(t, false, false, false))
        .collect();
    assert_eq!(heavy, vec![256 * MIB, 512 * MIB, GIB]);
    assert!(grouping::heavy(256 * MIB, true, false, false));
    assert!(!grouping::heavy(GIB, true, false, false));
    assert!(grouping::heavy(12 * GIB, true, false, true));
}

#[test]
fn pinned_tables_stay_within_the_host() {
    assert_eq!(
        grouping::pinned_table_sizes(64 * GIB, false),
        vec![256 * MIB, GIB, 2 * GIB, 4 * GIB, 8 * GIB]
    );
    assert_eq!(
        grouping::pinned_table_sizes(20 * GIB, false),
        vec![256 * MIB, GIB, 2 * GIB, 4 * GIB]
    );
    assert_eq!(
        grouping::pinned_table_sizes(6 * GIB, false),
        vec![256 * MIB, GIB]
    );
    assert_eq!(grouping::pinned_table_sizes(64 * GIB, true), vec![64 * MIB]);
    assert_eq!(
        grouping::pinned_table_sizes(2 * GIB, false),
        vec![256 * MIB]
    );
    assert!(grouping::pinned_table_sizes(512 * MIB, false).is_empty());
    assert_eq!(
        grouping::pinned_table_sizes(512 * MIB, true),
        vec![64 * MIB]
    );
}

#[test]
fn sweeps_are_launchable_plans() {
    for region in [64 * MIB, 3 * GIB, 64 * GIB] {
        for plan in sampling::sweep(region) {
            let scopes = sampling_scopes(region / 4, &plan).expect("valid sampling plan");
            assert_eq!(scopes.len() as u32, plan.passes);
        }
    }
    let table = 4 * GIB;
    let sweep = grouping::sweep(table);
    assert_eq!(sweep.len(), 1 + 2 * 5);
    for plan in &sweep {
        grouping_scopes(table / 8, plan).expect("valid grouping plan");
    }
    let all = stencil::sweep();
    assert_eq!(all.len(), 8 + 8 + 4);
    for plan in all.iter().chain([&stencil::untuned()]) {
        for (elem, radius) in [(4, 1), (8, 1), (4, 2), (8, 2)] {
            let n = 256u32;
            stencil_launch([n, n, n], (n as usize).pow(3), 1, plan, elem, radius)
                .expect("launchable stencil block");
        }
    }
    assert_eq!(stencil::untuned().block, [32, 4, 2]);
    assert_eq!(stencil::label(&stencil::untuned()), "plain 32x4x2");
    assert_eq!(grouping::label(&sweep[3]), "naive 8 x 512 MiB");
    assert_eq!(
        sampling::label(&sampling::sweep(GIB)[2]),
        "4 passes x 256 MiB"
    );
}

#[test]
fn names_are_unique_and_in_bench_order() {
    assert_eq!(names(), vec!["sampling", "grouping", "stencil"]);
}

/// Checks every workload's cases on one machine: names unique, the untuned plan and every
/// sweep entry labelled uniquely, the untuned plan among the sweep's labels or its own.
struct Consistent {
    machine: Machine,
    pick_sizes: Option<Vec<u64>>,
    seen: Vec<&'static str>,
}

impl Visitor for Consistent {
    fn visit<W: Workload>(&mut self) {
        let pick = Pick {
            quick: false,
            sizes: self.pick_sizes.as_deref(),
            memory: None,
        };
        let mut notes = Vec::new();
        let cases = W::cases(&self.machine, &pick, &mut notes);
        assert!(!cases.is_empty(), "{} has no case", W::NAME);
        let mut names: Vec<String> = cases.iter().map(W::name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), cases.len(), "{}: case names repeat", W::NAME);
        for c in &cases {
            assert!(W::size_bytes(c) > 0);
            let mut labels: Vec<String> = W::sweep(c).iter().map(W::label).collect();
            assert!(
                !labels.is_empty(),
                "{}: {} has no sweep",
                W::NAME,
                W::name(c)
            );
            let n = labels.len();
            labels.sort();
            labels.dedup();
            assert_eq!(labels.len(), n, "{}: sweep labels repeat", W::NAME);
            let class = W::tunable(c).class();
            assert_eq!(class.workload, W::NAME);
        }
        self.seen.push(W::NAME);
    }
}

#[test]
fn every_workload_gives_named_cases_and_labelled_sweeps() {
    let mut v = Consistent {
        machine: machine(79 * GIB, 128 * GIB),
        pick_sizes: None,
        seen: Vec::new(),
    };
    visit(&mut v);
    assert_eq!(v.seen, names());
}

#[test]
fn picked_sizes_outside_the_memory_are_noted_not_run() {
    let m = machine(8 * GIB, 32 * GIB);
    let sizes = [256 * MIB, 40 * GIB];
    let pick = Pick {
        quick: false,
        sizes: Some(&sizes),
        memory: Some(MemoryKind::Device),
    };
    let mut notes = Vec::new();
    let cases = Sampling::cases(&m, &pick, &mut notes);
    // Three variants of the one size that fits; the other noted.
    assert_eq!(cases.len(), 3);
    assert!(cases.iter().all(|c| c.region_bytes == 256 * MIB));
    assert!(cases.iter().all(|c| c.memory == MemoryKind::Device));
    assert_eq!(notes.len(), 1);
    assert!(notes[0].contains("40 GiB"), "{}", notes[0]);
    // Picked grouping sizes all run light and heavy.
    let mut notes = Vec::new();
    let tables = Grouping::cases(&m, &pick, &mut notes);
    assert_eq!(tables.len(), 2);
    assert_eq!(tables[1].work, grouping::HEAVY_WORK);
}

#[test]
fn grouping_keys_follow_the_table() {
    // Device tables: at least the fixed input, and capacity/2 keys for large tables.
    let small = grouping::Case::new(64 * MIB, MemoryKind::Device, 64 << 20, 0);
    assert_eq!(small.keys, 64 << 20);
    let large = grouping::Case::new(4 * GIB, MemoryKind::Device, 64 << 20, 0);
    assert_eq!(large.keys, (4 * GIB / 8) / 2);
    // Pinned tables: at most 16 Mi keys.
    let pinned = grouping::Case::new(2 * GIB, MemoryKind::Pinned, 64 << 20, 0);
    assert_eq!(pinned.keys, 16 << 20);
    assert_eq!(
        Grouping::name(&pinned),
        "table 2 GiB (pinned), 16777216 keys pinned"
    );
}

#[test]
fn case_names_and_what_is_sure() {
    let s = sampling::Case {
        region_bytes: 3 * GIB,
        memory: MemoryKind::Device,
        reads: 1024,
        work: 256,
    };
    assert_eq!(Sampling::name(&s), "device 3 GiB, 1024 reads, work 256");
    assert!(!Sampling::sure(&s));
    assert!(Sampling::sure(&sampling::Case {
        memory: MemoryKind::Pinned,
        ..s
    }));
    let st = stencil::Case {
        dims: [512; 3],
        dtype: Dtype::F32,
        repeats: 1,
        radius: 1,
    };
    assert_eq!(Some(Stencil::name(&st)), Stencil::bandwidth_case());
    assert_eq!(Stencil::moved_bytes(&st), Some(2 * 512 * 512 * 512 * 4));
    assert!(Stencil::sure(&st));
    let wide = stencil::Case { radius: 2, ..st };
    assert_eq!(Stencil::name(&wide), "512x512x512 f32 x1, 13-point");
    assert!(!Stencil::sure(&wide));
    assert_eq!(Sampling::check("7", "7"), Ok(()));
    assert!(Sampling::check("7", "8").unwrap_err().contains("differs"));
}

#[test]
fn sizes_pick_fits_the_memory_and_kind() {
    let mut notes = Vec::new();
    let given = [3 << 30, 12 << 30, 24 << 30];
    let pick = Pick {
        quick: false,
        sizes: Some(&given),
        memory: Some(MemoryKind::Pinned),
    };
    assert_eq!(
        pick.sizes(16 << 30, &mut notes, vec![1]),
        vec![3 << 30, 12 << 30]
    );
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("24 GiB"), "{notes:?}");
    assert!(pick.wants(MemoryKind::Pinned) && !pick.wants(MemoryKind::Device));
    let default = Pick::default();
    assert_eq!(default.sizes(1, &mut notes, vec![7, 8]), vec![7, 8]);
    assert_eq!(notes.len(), 1);
    assert!(default.wants(MemoryKind::Device) && default.wants(MemoryKind::Pinned));
}
