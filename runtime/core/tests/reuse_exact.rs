//! Exact reuse distances: hand-computed traces, brute force on random traces, granularity,
//! the empty trace, and the histogram's derived forms.

use std::collections::HashSet;

use memtune_core::reuse::{
    analyze_slice, exact, log2_bin, Distances, ExactAnalyzer, Histogram, Mode, Options, COLD,
};
use memtune_tests::rng::SplitMix64;

/// O(N^2) definition: distinct items strictly between the previous use and this one.
fn brute(t: &[u64]) -> Vec<u64> {
    (0..t.len())
        .map(|i| match (0..i).rev().find(|&j| t[j] == t[i]) {
            None => COLD,
            Some(j) => t[j + 1..i].iter().collect::<HashSet<_>>().len() as u64,
        })
        .collect()
}

/// O(N * distinct) LRU list: the depth of the item, then move it to the top.
fn lru_list(t: &[u64]) -> Vec<u64> {
    let mut stack: Vec<u64> = Vec::new();
    t.iter()
        .map(|&x| match stack.iter().rev().position(|&y| y == x) {
            None => {
                stack.push(x);
                COLD
            }
            Some(d) => {
                let i = stack.len() - 1 - d;
                stack.remove(i);
                stack.push(x);
                d as u64
            }
        })
        .collect()
}

fn letters(s: &str) -> Vec<u64> {
    s.bytes().map(u64::from).collect()
}

#[test]
fn reuse_hand_computed() {
    assert_eq!(
        exact::distances(&letters("abca")),
        vec![COLD, COLD, COLD, 2]
    );
    assert_eq!(exact::distances(&letters("aaaa")), vec![COLD, 0, 0, 0]);
    assert_eq!(exact::distances(&letters("abab")), vec![COLD, COLD, 1, 1]);
    assert_eq!(
        exact::distances(&letters("abcbca")),
        vec![COLD, COLD, COLD, 1, 1, 2]
    );
    // Seed 004, figure 1: the second b sees c, g, e, f, a.
    let d = exact::distances(&letters("dacbcgefafbabaga"));
    assert_eq!(d[10], 5);
}

#[test]
fn reuse_exact_equals_brute_force_on_random_traces() {
    let mut rng = SplitMix64(1);
    for case in 0..300 {
        let len = rng.below(400) as usize;
        let alphabet = 1 + rng.below(if case % 3 == 0 { 8 } else { 60 });
        let t: Vec<u64> = (0..len).map(|_| rng.below(alphabet) * 0x1000).collect();
        let want = brute(&t);
        assert_eq!(exact::distances(&t), want, "case {case}: {t:?}");
        let h = exact::histogram(&t).unwrap();
        assert_eq!(
            h,
            Histogram::from_distances(want.iter().map(|&d| (d != COLD).then_some(d)))
        );
    }
}

#[test]
fn reuse_exact_equals_lru_list_through_window_compactions() {
    // Long enough to renumber the time window many times, with locality and without.
    let mut rng = SplitMix64(2);
    for (len, alphabet) in [(30_000usize, 200u64), (20_000, 3_000), (20_000, 5)] {
        let t: Vec<u64> = (0..len)
            .map(|i| {
                if i % 2 == 0 {
                    rng.below(alphabet)
                } else {
                    (i as u64 / 7) % alphabet
                }
            })
            .collect();
        let want = lru_list(&t);
        assert_eq!(exact::distances(&t), want, "{len} {alphabet}");
        // The batch path (prefetched ahead of each reference) counts the same distances.
        assert_eq!(
            exact::histogram(&t).unwrap(),
            Histogram::from_distances(want.iter().map(|&d| (d != COLD).then_some(d))),
            "{len} {alphabet}"
        );
    }
    assert_eq!(brute(&letters("abcbcadd")), lru_list(&letters("abcbcadd")));
}

#[test]
fn reuse_analyzer_streams_in_batches() {
    let mut rng = SplitMix64(3);
    let t: Vec<u64> = (0..10_000).map(|_| rng.below(500)).collect();
    let mut a = ExactAnalyzer::new();
    for part in t.chunks(777) {
        a.push(part).unwrap();
    }
    assert_eq!(a.finish(), exact::histogram(&t).unwrap());
}

#[test]
fn reuse_empty_trace_gives_empty_histogram() {
    for mode in [Mode::ExactCpu, Mode::ExactCpuParallel] {
        let h = analyze_slice(&[], mode, &Options::default()).unwrap();
        assert_eq!(h, Histogram::new());
        assert!(h.log2_bins().is_empty());
        assert!(h.cdf().is_empty());
        assert_eq!(h.miss_ratio(10), 0.0);
    }
}

#[test]
fn reuse_granularity_groups_addresses() {
    // 64-byte lines: 0 and 63 share a line, 64 does not.
    let t = [0u64, 64, 63, 128, 0];
    let opts = |g| Options {
        granularity: g,
        ..Options::default()
    };
    let h = analyze_slice(&t, Mode::ExactCpu, &opts(64)).unwrap();
    assert_eq!((h.references, h.distinct, h.cold), (5, 3, 3));
    assert_eq!(h.exact, Distances::from([(1, 2)])); // items 0 1 0 2 0
                                                    // A granularity that is not a power of two: 0..=99 and 100..=199.
    let h = analyze_slice(&[5, 150, 99, 100], Mode::ExactCpu, &opts(100)).unwrap();
    assert_eq!(h.exact, Distances::from([(1, 2)]));
    assert!(analyze_slice(&t, Mode::ExactCpu, &opts(0)).is_err());
}

#[test]
fn reuse_histogram_forms() {
    // distances: cold x3, then 2, 0, 1, 2
    let t = letters("abcaabc");
    let h = exact::histogram(&t).unwrap();
    assert_eq!(exact::distances(&t), vec![COLD, COLD, COLD, 2, 0, 2, 2]);
    assert_eq!(h.exact, Distances::from([(0, 1), (2, 3)]));
    let bins = h.log2_bins();
    assert_eq!(bins.len(), 3);
    assert_eq!((bins[0].lo, bins[0].hi, bins[0].count), (0, 0, 1));
    assert_eq!((bins[1].lo, bins[1].hi, bins[1].count), (1, 1, 0));
    assert_eq!((bins[2].lo, bins[2].hi, bins[2].count), (2, 3, 3));
    assert_eq!(log2_bin(u64::MAX), 64);
    let cdf = h.cdf();
    assert_eq!(cdf, vec![(0, 1.0 / 7.0), (2, 4.0 / 7.0)]);
    assert_eq!(h.miss_ratio(0), 1.0);
    assert_eq!(h.miss_ratio(1), 6.0 / 7.0);
    assert_eq!(h.miss_ratio(3), 3.0 / 7.0);
    assert_eq!(h.miss_ratio(1_000), 3.0 / 7.0);
    let mrc = h.miss_ratio_curve();
    for c in 0..6 {
        assert_eq!(mrc.at(c), h.miss_ratio(c), "capacity {c}");
    }
    assert_eq!(h.mean_absolute_error(&h, &[1, 2, 3]), 0.0);
}

#[test]
fn reuse_histogram_json() {
    let h = exact::histogram(&letters("abcaabc")).unwrap();
    let json = serde_json::to_value(&h).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "references": 7, "distinct": 3, "cold": 3, "histogram": [[0, 1], [2, 3]]
        })
    );
    let back: Histogram = serde_json::from_value(json).unwrap();
    assert_eq!(back, h);
}
