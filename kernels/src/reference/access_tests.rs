use super::*;
use crate::reference::grouping::{run, Approach};
use crate::reference::sampling::positions;

fn within(regions: &[(&'static str, Range<u64>)], a: u64) -> bool {
    regions.iter().any(|(_, r)| r.contains(&a))
}

#[test]
fn one_thread_waves_are_the_reference_streams_in_thread_order() {
    let Ok(p) = SamplingParams::new(1000, 7, 42) else {
        panic!("valid params rejected")
    };
    let s = SamplingStream::new(&p, 5, u64::MAX, 1).expect("stream");
    assert_eq!(s.exact_len(), Some(35));
    let want: Vec<u64> = (0..5)
        .flat_map(|t| positions(&p, t))
        .map(|w| w * 4)
        .collect();
    assert_eq!(s.collect::<Vec<_>>(), want);
}

#[test]
fn scoped_passes_read_each_draw_once_and_stay_in_their_scope() {
    let Ok(p) = SamplingParams::new(1 << 12, 16, 9) else {
        panic!("valid params rejected")
    };
    let mut unscoped: Vec<u64> = SamplingStream::new(&p, 64, 1 << 12, 32)
        .expect("stream")
        .collect();
    let scoped: Vec<u64> = SamplingStream::new(&p, 64, 1 << 9, 32)
        .expect("stream")
        .collect();
    assert_eq!(scoped.len(), 64 * 16);
    // Passes run in scope order, so the addresses never go back to an earlier scope.
    let scope_of = |a: &u64| a / (4 << 9);
    assert!(scoped
        .windows(2)
        .all(|w| scope_of(&w[0]) <= scope_of(&w[1])));
    let mut sorted = scoped.clone();
    sorted.sort_unstable();
    unscoped.sort_unstable();
    assert_eq!(sorted, unscoped, "the same draws, reordered by scope");
}

#[test]
fn grouping_probes_the_table_the_reference_builds() {
    let (n, distinct) = (5000u64, 700u64);
    let keys: Vec<u32> = (0..n).map(|i| key(3, distinct, i)).collect();
    let params = GroupingParams::new(n, distinct).expect("params");
    let cap = params.capacity;
    for (drive, approach, scope) in [
        (GroupingDrive::Naive, Approach::Unscoped, cap),
        (GroupingDrive::Naive, Approach::Naive, cap / 4),
        (GroupingDrive::Copy, Approach::Copy, cap / 4),
    ] {
        let mut s = GroupingStream::new(n, distinct, 3, drive, scope, 1 << 20).expect("stream");
        let regions = s.regions();
        let addresses: Vec<u64> = s.by_ref().collect();
        assert!(addresses.iter().all(|&a| within(&regions, a)), "{drive:?}");
        let table = run(&keys, &params, approach, scope).expect("reference run");
        let claimed: Vec<u32> = table.buckets.iter().map(|b| b.key).collect();
        assert_eq!(s.table, claimed, "{drive:?} builds the reference's table");
        let key_reads = addresses.iter().filter(|&&a| a < n * 4).count() as u64;
        let probes = addresses
            .iter()
            .filter(|&&a| regions[1].1.contains(&a))
            .count() as u64;
        assert!(probes >= n, "every key probes at least once: {probes}");
        match drive {
            GroupingDrive::Naive if scope < cap => assert_eq!(key_reads, 4 * n),
            GroupingDrive::Naive => assert_eq!(key_reads, n),
            GroupingDrive::Copy => {
                assert_eq!(key_reads, n);
                assert!(regions.len() == 3 && addresses.iter().any(|a| regions[2].1.contains(a)));
            }
        }
    }
}

#[test]
fn stencil_reads_six_neighbours_per_repeat_and_writes_every_cell() {
    let p = StencilParams::new(4, 3, 3, 2).expect("params");
    let s = StencilStream::new(&p, 4).expect("stream");
    // 36 cells, 2 interior: 34 boundary cells read and write, interior ones 12 reads + 1.
    assert_eq!(s.exact_len(), Some(34 * 2 + 2 * 13));
    let regions = s.regions();
    let all: Vec<u64> = s.collect();
    assert_eq!(all.len(), 34 * 2 + 2 * 13);
    assert!(all.iter().all(|&a| within(&regions, a) && a % 4 == 0));
    // The first interior cell (1, 1, 1) = 17 reads 16, 18, 13, 21, 5, 29 twice.
    let at = all
        .windows(2)
        .position(|w| w == [16 * 4, 18 * 4])
        .expect("cell 17's reads");
    let words: Vec<u64> = all[at..at + 6].iter().map(|a| a / 4).collect();
    assert_eq!(words, [16, 18, 13, 21, 5, 29]);
    assert_eq!(all[at + 12], regions[1].1.start + 17 * 4, "then its write");
}
