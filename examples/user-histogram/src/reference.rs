//! The CPU model of `kernels/histogram.cu`: the same rows, hash, per-row work, table and
//! digest, so a GPU result can be checked exactly; and a sequential model of the scoped
//! passes (naive and copy) that shows every split fills the table with the same groups.

use std::ops::Range;

use memtune::core::plan::grouping::BUCKET_BYTES;
use memtune::core::plan::{Approach, GroupingPlan};

use crate::{Digest, SLOT_BYTES};

/// splitmix64's output function.
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Row `i` (what `user_hist_fill` writes): `(key, value)`, the key below `key_space`.
pub fn row(seed: u64, i: u64, key_space: u64) -> (u32, u32) {
    let z = mix64(seed.wrapping_add(i.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15)));
    let key = ((z >> 32).wrapping_mul(key_space) >> 32) as u32;
    (key, z as u32)
}

/// lowbias32: the key's hash.
pub fn hash(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^ (x >> 16)
}

/// The home slot of `key` in a table of `slots` slots (a power of two, at most 2^32).
pub fn home(key: u32, slots: u64) -> u64 {
    u64::from(hash(key) & (slots.wrapping_sub(1) as u32))
}

/// A row's contribution: `work` multiply-xorshift rounds on its value, then an integer in
/// [1, 2^24].
pub fn contribution(value: u32, work: u32) -> u64 {
    let mut x = value;
    for _ in 0..work {
        x = x.wrapping_mul(0x2c1b_3c6d).wrapping_add(0x297a_2d39);
        x ^= x >> 13;
    }
    u64::from(x >> 8) + 1
}

/// One group's term of [`Digest::mix`].
pub fn digest_mix(key: u32, sum: u64) -> u64 {
    mix64(sum.wrapping_add(u64::from(key).wrapping_mul(0x9e37_79b9_7f4a_7c15)))
}

/// The slot ranges of `plan`'s passes over a table of `table_bytes`: memtune's scopes of
/// 8-byte buckets (`memtune::launch::grouping_scopes`, which checks the pass count), each
/// taken as the slots whose first byte lies in it. The ranges tile `[0, slots)`; with
/// scopes smaller than a slot some are empty (their passes insert nothing).
pub fn scopes(table_bytes: u64, plan: &GroupingPlan) -> Result<Vec<Range<u64>>, String> {
    let buckets = table_bytes / BUCKET_BYTES;
    let per_slot = SLOT_BYTES / BUCKET_BYTES;
    let found = memtune::launch::grouping_scopes(buckets, plan).map_err(|e| e.to_string())?;
    Ok(found
        .into_iter()
        .map(|r| r.start.div_ceil(per_slot)..r.end.div_ceil(per_slot))
        .collect())
}

/// Per-key sums of `rows` rows (index = key; 0 = a key that does not occur, since every
/// contribution is at least 1).
pub fn key_sums(seed: u64, rows: u64, key_space: u64, work: u32) -> Vec<u64> {
    let mut sums = vec![0u64; key_space as usize];
    for i in 0..rows {
        let (key, value) = row(seed, i, key_space);
        sums[key as usize] += contribution(value, work);
    }
    sums
}

/// The digest of per-key sums (what `user_hist_digest` gives for a correct table).
pub fn digest_of_sums(sums: &[u64]) -> Digest {
    let mut d = Digest::default();
    for (key, &sum) in sums.iter().enumerate() {
        if sum != 0 {
            d.groups += 1;
            d.mix = d.mix.wrapping_add(digest_mix(key as u32, sum));
            d.total = d.total.wrapping_add(sum);
        }
    }
    d
}

/// The groups of a table read back, `(key, sum)` sorted by key; `Err` names a slot with a
/// sum but no key, or a key held twice.
pub fn groups(table: &[Slot]) -> Result<Vec<(u32, u64)>, String> {
    let mut out = Vec::new();
    for (i, s) in table.iter().enumerate() {
        match (s.tag, s.sum) {
            (0, 0) => {}
            (0, sum) => return Err(format!("slot {i} is empty but holds the sum {sum}")),
            (tag, sum) => out.push((tag - 1, sum)),
        }
    }
    out.sort_unstable();
    if let Some(w) = out.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(format!("key {} is held by two slots", w[0].0));
    }
    Ok(out)
}

/// The non-zero per-key sums as `(key, sum)`, sorted by key: what [`groups`] gives for a
/// correct table.
pub fn expected_groups(sums: &[u64]) -> Vec<(u32, u64)> {
    sums.iter()
        .enumerate()
        .filter(|(_, &s)| s != 0)
        .map(|(k, &s)| (k as u32, s))
        .collect()
}

/// One slot as the kernel lays it out (`user_hist_slot`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Slot {
    pub tag: u32,
    pub pad: u32,
    pub sum: u64,
}

// SAFETY: plain integers, every bit pattern valid; the layout is the kernel's.
unsafe impl cudarc::driver::DeviceRepr for Slot {}
// SAFETY: all zeros is an empty slot.
unsafe impl cudarc::driver::ValidAsZeroBits for Slot {}

/// A sequential model of the kernel's passes: inserts `(key, value)` rows into `table`
/// with linear probing, as `user_hist_insert`; `Err` when a row finds no slot.
fn insert(table: &mut [Slot], key: u32, add: u64) -> Result<(), String> {
    let slots = table.len() as u64;
    let mut s = home(key, slots);
    for _ in 0..slots {
        let slot = &mut table[s as usize];
        if slot.tag == 0 {
            slot.tag = key + 1;
        }
        if slot.tag == key + 1 {
            slot.sum += add;
            return Ok(());
        }
        s = (s + 1) & (slots - 1);
    }
    Err(format!("key {key} found no slot in {slots}"))
}

/// The table `plan` builds from `rows` (in that order) in `slots` slots, pass by pass:
/// naive passes re-read every row; copy's first pass keeps the rows of later scopes (in
/// order) and the later passes read only those.
pub fn simulate(
    rows: &[(u32, u32)],
    slots: u64,
    plan: &GroupingPlan,
    work: u32,
) -> Result<Vec<Slot>, String> {
    let mut table = vec![Slot::default(); slots as usize];
    let passes = scopes(slots * SLOT_BYTES, plan)?;
    let mut spilled: Vec<(u32, u32)> = Vec::new();
    for (p, scope) in passes.iter().enumerate() {
        let copy = plan.approach == Approach::Copy && passes.len() > 1;
        let input: &[(u32, u32)] = if copy && p > 0 { &spilled } else { rows };
        let mut spill = Vec::new();
        for &(key, value) in input {
            if scope.contains(&home(key, slots)) {
                insert(&mut table, key, contribution(value, work))?;
            } else if copy && p == 0 {
                spill.push((key, value));
            }
        }
        if copy && p == 0 {
            spilled = spill;
        }
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(table: u64, passes: u32, approach: Approach) -> GroupingPlan {
        crate::bench::split(table, passes, approach)
    }

    #[test]
    fn rows_stay_in_the_key_space() {
        for key_space in [1u64, 2, 7, 1 << 20, 1 << 31] {
            for i in 0..1000 {
                assert!(u64::from(row(3, i, key_space).0) < key_space);
            }
        }
        // Keys spread over the space; another seed draws other rows.
        let keys: std::collections::HashSet<u32> = (0..1000).map(|i| row(1, i, 64).0).collect();
        assert_eq!(keys.len(), 64);
        assert_ne!(row(1, 5, 1 << 20), row(2, 5, 1 << 20));
    }

    #[test]
    fn contributions_are_positive_and_bounded() {
        for work in [0, 1, 16, 64] {
            for v in [0u32, 1, 255, 0xdead_beef, u32::MAX] {
                let c = contribution(v, work);
                assert!((1..=1 << 24).contains(&c), "{v} {work}: {c}");
            }
        }
        assert_eq!(contribution(0, 0), 1);
        assert_eq!(contribution(u32::MAX, 0), 1 << 24);
        assert_ne!(contribution(12345, 1), contribution(12345, 2));
    }

    #[test]
    fn homes_lie_in_the_table() {
        for slots in [4u64, 1 << 10, 1 << 32] {
            for key in [0u32, 1, 99, u32::MAX - 1] {
                assert!(home(key, slots) < slots);
            }
        }
        // Not memtune's fmix32: the user's own hash.
        assert_eq!(hash(0), 0);
        assert_ne!(hash(1), 0x514e_28b7);
    }

    #[test]
    fn scopes_tile_the_table() {
        let table = 1u64 << 20;
        let slots = table / SLOT_BYTES;
        for passes in [1, 2, 3, 4, 7, 16, 64] {
            for approach in [Approach::Naive, Approach::Copy] {
                let p = plan(table, passes, approach);
                let s = scopes(table, &p).expect("the plan fits");
                assert_eq!(s.len() as u32, p.passes);
                assert_eq!(s[0].start, 0);
                assert_eq!(s.last().map(|r| r.end), Some(slots));
                assert!(s.windows(2).all(|w| w[0].end == w[1].start));
            }
        }
        let mut bad = plan(table, 4, Approach::Naive);
        bad.passes = 5;
        assert!(scopes(table, &bad).is_err());
    }

    /// The kernel's promise: every split, naive or copy, and any row order, builds the
    /// same groups, each key in one slot with its exact sum, and the same digest.
    #[test]
    fn every_split_builds_the_same_groups() {
        let slots = 1u64 << 10;
        let key_space = slots / 2;
        let rows: Vec<(u32, u32)> = (0..5000).map(|i| row(7, i, key_space)).collect();
        for work in [0, 5] {
            let sums = key_sums(7, rows.len() as u64, key_space, work);
            let want = expected_groups(&sums);
            let digest = digest_of_sums(&sums);
            assert!(digest.groups > key_space / 2);
            let untuned = memtune::workload::grouping::untuned(slots * SLOT_BYTES);
            let one = simulate(&rows, slots, &untuned, work).expect("one pass");
            assert_eq!(groups(&one), Ok(want.clone()));
            let mut reversed = rows.clone();
            reversed.reverse();
            for passes in [2, 3, 4, 8, 13, 64, 512] {
                for approach in [Approach::Naive, Approach::Copy] {
                    let p = plan(slots * SLOT_BYTES, passes, approach);
                    for input in [&rows, &reversed] {
                        let t = simulate(input, slots, &p, work).expect("fits");
                        assert_eq!(groups(&t).as_ref(), Ok(&want), "{approach:?} {passes}");
                        assert_eq!(digest_of_table(&t), digest);
                    }
                }
            }
        }
    }

    /// The digest of a table as `user_hist_digest` computes it.
    fn digest_of_table(table: &[Slot]) -> Digest {
        let mut d = Digest::default();
        for s in table.iter().filter(|s| s.tag != 0) {
            d.groups += 1;
            d.mix = d.mix.wrapping_add(digest_mix(s.tag - 1, s.sum));
            d.total = d.total.wrapping_add(s.sum);
        }
        d
    }

    #[test]
    fn probes_wrap_and_a_full_table_is_an_error() {
        // Four slots, four keys: every slot taken, the probes wrap.
        let rows: Vec<(u32, u32)> = (0..4u32).map(|k| (k, k)).collect();
        let untuned = memtune::workload::grouping::untuned(4 * SLOT_BYTES);
        let t = simulate(&rows, 4, &untuned, 0).expect("four keys fit four slots");
        assert!(t.iter().all(|s| s.tag != 0));
        let five: Vec<(u32, u32)> = (0..5u32).map(|k| (k, k)).collect();
        assert!(simulate(&five, 4, &untuned, 0).is_err());
    }

    #[test]
    fn a_bad_table_is_reported() {
        let held_twice = [
            Slot {
                tag: 3,
                pad: 0,
                sum: 1,
            },
            Slot {
                tag: 3,
                pad: 0,
                sum: 2,
            },
        ];
        assert!(groups(&held_twice).is_err_and(|e| e.contains("two slots")));
        let orphan = [Slot {
            tag: 0,
            pad: 0,
            sum: 9,
        }];
        assert!(groups(&orphan).is_err_and(|e| e.contains("empty")));
    }
}
