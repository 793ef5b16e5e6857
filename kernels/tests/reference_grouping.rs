//! The grouping reference and its host model of the kernels' passes: counts sum to the
//! input length, and the naive and copy scoped approaches build exactly the groups of
//! one unscoped pass, for many scope counts including ones that do not divide the table.

use std::collections::BTreeMap;

use memtune_kernels::params::{scopes, GroupingParams, EMPTY_KEY};
use memtune_kernels::reference::grouping::{
    group_counts, home_bucket, run, Approach, GroupingError,
};

/// splitmix64: deterministic test input without a dependency.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `n` keys uniform in [0, groups) (the paper's input), every `sentinel_every`-th key
/// replaced by the empty-bucket sentinel (0 = never).
fn keys(n: usize, groups: u64, sentinel_every: usize, seed: u64) -> Vec<u32> {
    let mut state = seed;
    (0..n)
        .map(|i| {
            if sentinel_every != 0 && i % sentinel_every == 0 {
                EMPTY_KEY
            } else {
                (splitmix(&mut state) % groups) as u32
            }
        })
        .collect()
}

/// Inputs: (keys, distinct keys besides the sentinel).
fn inputs() -> Vec<(Vec<u32>, u64)> {
    let mut out = vec![
        (vec![], 0),
        (vec![42; 1000], 1),
        (vec![EMPTY_KEY; 10], 0),
        ((0..5000u32).collect(), 5000),
        ((0..3000u32).map(|i| u32::MAX - 1 - i % 700).collect(), 700),
    ];
    for (n, groups, sentinel_every, seed) in [
        (10_000, 10, 0, 1),
        (20_000, 1000, 97, 2),
        (50_000, 20_000, 0, 3),
        (30_000, 1 << 31, 13, 4),
    ] {
        let k = keys(n, groups, sentinel_every, seed);
        let distinct = group_counts(&k)
            .keys()
            .filter(|&&key| key != EMPTY_KEY)
            .count();
        out.push((k, distinct as u64));
    }
    out
}

fn params(keys: &[u32], distinct: u64) -> GroupingParams {
    GroupingParams::new(keys.len() as u64, distinct).unwrap_or_else(|e| panic!("{e}"))
}

fn groups(keys: &[u32], p: &GroupingParams, approach: Approach, len: u64) -> BTreeMap<u32, u64> {
    run(keys, p, approach, len)
        .and_then(|t| t.groups())
        .unwrap_or_else(|e| panic!("{approach:?}, scope length {len}: {e}"))
}

#[test]
fn counts_sum_to_the_input_length() {
    for (keys, distinct) in inputs() {
        let expected = group_counts(&keys);
        assert_eq!(expected.values().sum::<u64>(), keys.len() as u64);
        let p = params(&keys, distinct);
        let got = groups(&keys, &p, Approach::Unscoped, p.capacity);
        assert_eq!(got.values().sum::<u64>(), keys.len() as u64);
        assert_eq!(got, expected);
    }
}

#[test]
fn scoped_approaches_equal_the_unscoped_groups() {
    let mut non_divisible = 0;
    for (keys, distinct) in inputs() {
        let p = params(&keys, distinct);
        let expected = group_counts(&keys);
        // 1, 2, 3, 5, 7 and 16 scopes, one scope longer than the table, and for small
        // tables every bucket its own scope.
        let mut lens: Vec<u64> = [1, 2, 3, 5, 7, 16]
            .iter()
            .map(|&parts| p.capacity.div_ceil(parts))
            .collect();
        lens.push(p.capacity + 1);
        if p.capacity <= 256 {
            lens.push(1);
        }
        for len in lens {
            non_divisible += usize::from(p.capacity % len != 0);
            for approach in [Approach::Naive, Approach::Copy] {
                assert_eq!(
                    groups(&keys, &p, approach, len),
                    expected,
                    "{approach:?}, capacity {}, scope length {len}",
                    p.capacity
                );
            }
        }
    }
    assert!(
        non_divisible > 10,
        "too few non-divisible scope sizes exercised"
    );
}

#[test]
fn the_copy_approach_spills_exactly_the_other_scopes_keys() {
    for (keys, distinct) in inputs() {
        let p = params(&keys, distinct);
        for len in [p.capacity.div_ceil(3), p.capacity.div_ceil(7).max(1)] {
            let first = scopes(p.capacity, len)
                .ok()
                .and_then(|s| s.first().cloned())
                .unwrap_or_else(|| panic!("no scopes for capacity {}", p.capacity));
            let outside = keys
                .iter()
                .filter(|&&k| !first.contains(&home_bucket(k, p.capacity)))
                .count() as u64;
            let table = run(&keys, &p, Approach::Copy, len).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(table.counters.spilled, outside);
            assert_eq!(table.counters.dropped, 0);
        }
    }
}

#[test]
fn sentinel_keys_are_counted_apart_from_the_buckets() {
    let keys = keys(5000, 50, 7, 9);
    let p = params(&keys, 50);
    let table =
        run(&keys, &p, Approach::Naive, p.capacity.div_ceil(3)).unwrap_or_else(|e| panic!("{e}"));
    let sentinels = keys.iter().filter(|&&k| k == EMPTY_KEY).count() as u64;
    assert_eq!(table.counters.sentinel_count, sentinels);
    assert!(table
        .buckets
        .iter()
        .all(|b| (b.key == EMPTY_KEY) == (b.count == 0)));
}

#[test]
fn an_undersized_table_is_an_error_not_a_wrong_answer() {
    let keys: Vec<u32> = (0..100).collect();
    // Sized for 40 distinct keys: 128 buckets, enough; for 20: 64 buckets, too few.
    assert!(run(&keys, &params(&keys, 40), Approach::Copy, 50)
        .and_then(|t| t.groups())
        .is_ok());
    let small = run(&keys, &params(&keys, 20), Approach::Copy, 50).and_then(|t| t.groups());
    assert_eq!(small, Err(GroupingError::Dropped { dropped: 36 }));
}

#[test]
fn probes_may_cross_scope_ends_and_wrap_around() {
    // Capacity 8, scopes 0..4 and 4..8: three keys homed at bucket 7 probe 7, 0, 1,
    // i.e. past their scope's end and around the table into the first scope, where a
    // key homed at 0 lives too.
    let homed = |home: u64, n: usize| -> Vec<u32> {
        (0u32..)
            .filter(|&k| home_bucket(k, 8) == home)
            .take(n)
            .collect()
    };
    let mut keys = homed(7, 3);
    keys.extend(homed(0, 1));
    keys.extend(keys.clone());
    let p = params(&keys, 4);
    assert_eq!(p.capacity, 8);
    let expected = group_counts(&keys);
    for approach in [Approach::Unscoped, Approach::Naive, Approach::Copy] {
        assert_eq!(groups(&keys, &p, approach, 4), expected, "{approach:?}");
    }
}
