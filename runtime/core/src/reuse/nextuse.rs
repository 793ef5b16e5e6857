//! Exact reuse distances from next uses: the method of the `exact-gpu` mode, modelled here
//! step for step on the CPU so that tests check it against the sequential analysis.
//!
//! 1. Sorting the references stably by item puts each item's uses in trace order: each
//!    reference `p` gets its next use `next[p]`; a last use gets `n + p`, above every real
//!    position and unique. The sort is a radix sort over the bits in which the items
//!    differ ([`super::radix`]).
//! 2. The reference at `i = next[p]` sees the distinct items of the `i - p - 1` positions
//!    between, less the positions whose item is used again before `i`:
//!    `d(i) = i - p - 1 - #{j > p : next[j] < next[p]}` (`next[j] < i` implies `j < i`).
//! 3. That count is the number of smaller values to the right of `p` in `next`. A merge
//!    sort counts it: at each merge, an entry of the left run gains the number of right-run
//!    entries below it. Each entry carries `v = p + count` beside its next use (one word,
//!    not two: the distance is `next - 1 - v`, and `v` stays below the trace's length).
//!
//! The merges within a tile of [`SORT_TILE`] entries place each entry by one binary
//! search in the other run, independently of all others (each GPU thread places a few;
//! [`merge_level`]); the levels above find each output's source by a merge-path diagonal
//! search over tiles of [`TILE`] outputs ([`merge_path_level`]), so a block reads and
//! writes contiguous slices. Contiguous parts of a trace (one per GPU) join exactly: a
//! part's last uses find their next use by a search in the later parts' items sorted,
//! and its entries count the smaller next uses of later parts by a search in their
//! sorted `next`.

use super::{radix, Distances, Histogram};

/// Most references the method takes: positions and `n + p` fit in a `u32`.
pub const MAX_REFERENCES: u64 = (1 << 31) - 1;

/// Entries of `run` before `key`: below it (`strict`) or at most it.
fn rank_in<K: Ord>(run: &[K], key: &K, strict: bool) -> usize {
    run.partition_point(|v| if strict { v < key } else { v <= key })
}

/// One merge level: runs of `width` entries of `keys` (with `v` alongside) are merged
/// pairwise into `2 * width`, stably. A left-run entry adds to its `v` the right-run
/// entries below it. Each entry's place is computed apart from the others, from the
/// level's input, as a GPU thread does.
pub fn merge_level<K: Ord + Copy>(keys: &[K], v: &[u32], width: usize) -> (Vec<K>, Vec<u32>) {
    let n = keys.len();
    let mut keys_out = keys.to_vec();
    let mut v_out = v.to_vec();
    for i in 0..n {
        let start = i / (2 * width) * (2 * width);
        let mid = (start + width).min(n);
        let end = (start + 2 * width).min(n);
        let (out, gained) = if i < mid {
            let r = rank_in(&keys[mid..end], &keys[i], true);
            (i + r, r)
        } else {
            let r = rank_in(&keys[start..mid], &keys[i], false);
            (start + (i - mid) + r, 0)
        };
        keys_out[out] = keys[i];
        v_out[out] = v[i] + gained as u32;
    }
    (keys_out, v_out)
}

/// Outputs of a block of the merge levels above the shared-memory sort: the block size
/// of the reuse kernels.
pub const TILE: usize = 1024;

/// Entries of a tile the GPU sorts in shared memory (a block of [`TILE`] threads, each
/// placing `SORT_TILE / TILE` entries a level).
pub const SORT_TILE: usize = 4096;

/// Of the first `d` entries of the stable merge of `a` and `b` (`a`'s first on ties), how
/// many come from `a`.
fn diagonal<K: Ord>(a: &[K], b: &[K], d: usize) -> usize {
    let (mut lo, mut hi) = (d.saturating_sub(b.len()), d.min(a.len()));
    while lo < hi {
        let mid = (lo + hi) / 2;
        if a[mid] <= b[d - 1 - mid] {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// [`merge_level`] as the GPU runs it for `width` a multiple of `tile`: each tile of
/// outputs takes the slices of the two runs that fill it (two diagonal searches), then
/// each output its source (a diagonal search within those slices). A left-run entry gains
/// the right-run entries placed before it.
pub fn merge_path_level<K: Ord + Copy>(
    keys: &[K],
    v: &[u32],
    width: usize,
    tile: usize,
) -> (Vec<K>, Vec<u32>) {
    let n = keys.len();
    let mut keys_out = keys.to_vec();
    let mut v_out = v.to_vec();
    for o0 in (0..n).step_by(tile.max(1)) {
        let start = o0 / (2 * width) * (2 * width);
        let mid = (start + width).min(n);
        let end = (start + 2 * width).min(n);
        let (a, b) = (&keys[start..mid], &keys[mid..end]);
        let (d0, d1) = (o0 - start, (o0 - start + tile).min(end - start));
        let (a0, a1) = (diagonal(a, b, d0), diagonal(a, b, d1));
        let (b0, b1) = (d0 - a0, d1 - a1);
        let (sa, sb) = (&a[a0..a1], &b[b0..b1]);
        for t in 0..d1 - d0 {
            let i = diagonal(sa, sb, t);
            let j = t - i;
            let left = j >= sb.len() || (i < sa.len() && sa[i] <= sb[j]);
            let (src, gained) = if left {
                (start + a0 + i, b0 + j)
            } else {
                (mid + b0 + j, 0)
            };
            keys_out[o0 + t] = keys[src];
            v_out[o0 + t] = v[src] + gained as u32;
        }
    }
    (keys_out, v_out)
}

/// Merge-sorts next uses with `v` level by level, as the GPU does: per-entry placement
/// within tiles of [`SORT_TILE`], merge path over tiles of [`TILE`] outputs above.
fn merge_sort<K: Ord + Copy>(mut keys: Vec<K>, mut v: Vec<u32>) -> (Vec<K>, Vec<u32>) {
    let mut width = 1;
    while width < keys.len() {
        (keys, v) = if width < SORT_TILE {
            merge_level(&keys, &v, width)
        } else {
            merge_path_level(&keys, &v, width, TILE)
        };
        width *= 2;
    }
    (keys, v)
}

/// One part of a trace: its references' items sorted stably, with their global positions.
struct Sorted {
    items: Vec<u64>,
    positions: Vec<u32>,
}

/// Next uses within a part (global positions; `total + p` for a use last in the part).
fn next_within(sorted: &Sorted, base: u32, total: u32) -> Vec<u32> {
    let n = sorted.items.len();
    let mut next = vec![0; n];
    for k in 0..n {
        let p = sorted.positions[k];
        next[(p - base) as usize] = if k + 1 < n && sorted.items[k + 1] == sorted.items[k] {
            sorted.positions[k + 1]
        } else {
            total + p
        };
    }
    next
}

/// Gives a part's unresolved last uses their first use in `later` (a later part).
fn resolve(sorted: &Sorted, base: u32, total: u32, next: &mut [u32], later: &Sorted) {
    for k in 0..sorted.items.len() {
        let slot = (sorted.positions[k] - base) as usize;
        if next[slot] < total {
            continue;
        }
        let r = rank_in(&later.items, &sorted.items[k], true);
        if r < later.items.len() && later.items[r] == sorted.items[k] {
            next[slot] = later.positions[r];
        }
    }
}

/// The exact histogram of `items`, analyzed in `parts` contiguous parts joined as the GPUs
/// join them. `items.len()` must be at most [`MAX_REFERENCES`].
pub fn histogram(items: &[u64], parts: usize) -> Histogram {
    assert!(items.len() as u64 <= MAX_REFERENCES, "trace too long");
    let total = items.len() as u32;
    let bounds = part_bounds(items.len(), parts);
    let sorted: Vec<Sorted> = bounds
        .iter()
        .map(|r| {
            let (items, positions) = radix::sort(items[r.clone()].to_vec(), r.start as u32);
            Sorted { items, positions }
        })
        .collect();
    let mut dense = Vec::new();
    let nexts: Vec<Vec<u32>> = (0..bounds.len())
        .map(|g| {
            let base = bounds[g].start as u32;
            let mut next = next_within(&sorted[g], base, total);
            for later in &sorted[g + 1..] {
                resolve(&sorted[g], base, total, &mut next, later);
            }
            next
        })
        .collect();
    // Each entry starts with v = its position: no smaller next use counted yet.
    let by_next: Vec<(Vec<u32>, Vec<u32>)> = (0..bounds.len())
        .map(|g| {
            merge_sort(
                nexts[g].clone(),
                bounds[g].clone().map(|p| p as u32).collect(),
            )
        })
        .collect();
    for g in 0..bounds.len() {
        let (keys, mut v) = by_next[g].clone();
        for (h, later) in by_next.iter().enumerate().skip(g + 1) {
            // Only next uses from the later part's start to the trace's end can have any.
            let later_base = bounds[h].start as u32;
            for k in 0..keys.len() {
                if (later_base..total).contains(&keys[k]) {
                    v[k] += rank_in(&later.0, &keys[k], true) as u32;
                }
            }
        }
        for k in 0..keys.len() {
            if let Some(d) = distance(keys[k], v[k], total) {
                count(&mut dense, d);
            }
        }
    }
    from_dense(items.len() as u64, &dense)
}

/// Adds one reference at distance `d` to dense counts (index = distance).
#[inline]
pub fn count(dense: &mut Vec<u64>, d: u32) {
    let d = d as usize;
    if d >= dense.len() {
        dense.resize((d + 1).next_power_of_two(), 0);
    }
    dense[d] += 1;
}

/// The histogram of `references` of which `dense[d]` had distance `d`; the rest are cold,
/// one per distinct item.
pub fn from_dense<N: Copy + Into<u64> + Sync>(references: u64, dense: &[N]) -> Histogram {
    from_dense_in(references, dense, Vec::new())
}

/// [`from_dense`], the histogram's pairs written into `buf` when it is long enough (see
/// [`Distances::from_dense_summed_in`]).
pub fn from_dense_in<N: Copy + Into<u64> + Sync>(
    references: u64,
    dense: &[N],
    buf: Vec<(u64, u64)>,
) -> Histogram {
    let (exact, finite) = Distances::from_dense_summed_in(dense, buf);
    let cold = references.saturating_sub(finite);
    Histogram {
        references,
        distinct: cold,
        cold,
        exact,
        sample: None,
    }
}

/// At most how many distinct finite distances a trace of `total` references has, cut into
/// parts with `sum` distinct items counted part by part and `most` in the part with the
/// most: every distance is below the trace's distinct items (at most `sum`), and each is
/// some reuse's (the references less the distinct items: at most `total - most`).
pub fn distances_bound(total: u64, sum: u64, most: u64) -> u64 {
    sum.min(total.saturating_sub(most))
}

/// The distance the next use `next` of a position `p` gets, `v` being `p` plus the smaller
/// next uses to the right of `p`; `None` for a last use. `v < next` for a next use below
/// `total`: every position counted lies strictly between `p` and `next`.
pub fn distance(next: u32, v: u32, total: u32) -> Option<u32> {
    (next < total).then(|| next - 1 - v)
}

/// `parts` contiguous ranges of `n` references, as even as can be (fewer when `n` is
/// smaller than `parts`; none for an empty trace).
pub fn part_bounds(n: usize, parts: usize) -> Vec<std::ops::Range<usize>> {
    let parts = parts.clamp(1, n.max(1));
    (0..parts)
        .map(|g| n * g / parts..n * (g + 1) / parts)
        .filter(|r| !r.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reuse::exact;

    #[test]
    fn the_distances_bound_holds_for_every_cut_of_a_trace() {
        for (n, items) in [(1usize, 1u64), (500, 500), (500, 7), (2000, 300), (64, 1)] {
            let trace = lcg(n as u64, n, items);
            let h = exact_histogram(&trace);
            for parts in 1..=4 {
                let d: Vec<u64> = part_bounds(n, parts)
                    .into_iter()
                    .map(|r| {
                        let mut part = trace[r].to_vec();
                        part.sort_unstable();
                        part.dedup();
                        part.len() as u64
                    })
                    .collect();
                let most = d.iter().copied().max().unwrap_or(0);
                let bound = distances_bound(n as u64, d.iter().sum(), most);
                assert!(
                    h.exact.len() as u64 <= bound,
                    "{n} refs over {items} items in {parts} parts: {} > {bound}",
                    h.exact.len()
                );
            }
        }
        // No reuse: no distance at all.
        assert_eq!(distances_bound(10, 10, 10), 0);
    }

    fn lcg(seed: u64, n: usize, items: u64) -> Vec<u64> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 33) % items
            })
            .collect()
    }

    #[test]
    fn merge_level_counts_smaller_right_entries() {
        let (k, v) = merge_level(&[3u32, 5, 1, 4], &[10, 20, 30, 40], 2);
        assert_eq!(k, vec![1, 3, 4, 5]);
        // 3 is above 1 (gains 1); 5 is above 1 and 4 (gains 2); right-run entries gain none.
        assert_eq!(v, vec![30, 11, 40, 22]);
    }

    #[test]
    fn merge_path_equals_placing_each_entry() {
        for (seed, n, items, tile) in [
            (1, 1, 1, 1),
            (2, 37, 5, 4),
            (3, 300, 40, 8),
            (4, 1000, 3, 16),
            (5, 513, 1000, 32),
        ] {
            let keys: Vec<u32> = lcg(seed, n, items).into_iter().map(|k| k as u32).collect();
            let v: Vec<u32> = lcg(seed + 9, n, 7).into_iter().map(|c| c as u32).collect();
            let (mut k, mut v) = (keys, v);
            let mut width = 1;
            // Runs sorted per-entry up to the tile, then each level both ways.
            while width < tile {
                (k, v) = merge_level(&k, &v, width);
                width *= 2;
            }
            while width < n {
                let want = merge_level(&k, &v, width);
                let got = merge_path_level(&k, &v, width, tile);
                assert_eq!(got, want, "seed {seed} width {width} tile {tile}");
                (k, v) = got;
                width *= 2;
            }
            assert!(k.windows(2).all(|w| w[0] <= w[1]));
        }
    }

    #[test]
    fn merge_sort_is_stable() {
        let (k, v) = merge_sort(vec![2u64, 1, 2, 1, 2], (0..5).collect());
        assert_eq!(k, vec![1, 1, 2, 2, 2]);
        // Each entry's index plus the entries after it with a smaller key.
        assert_eq!(v, vec![1, 3, 2, 3, 4]);
    }

    fn exact_histogram(trace: &[u64]) -> Histogram {
        Histogram::from_distances(
            exact::distances(trace)
                .into_iter()
                .map(|d| (d != exact::COLD).then_some(d)),
        )
    }

    #[test]
    fn equals_the_sequential_analysis_in_any_number_of_parts() {
        for (seed, n, items) in [
            (1, 1, 1),
            (2, 7, 3),
            (3, 200, 17),
            (4, 1000, 900),
            (5, 777, 1),
            (6, 5000, 700),
        ] {
            let trace = lcg(seed, n, items);
            let want = exact_histogram(&trace);
            for parts in [1, 2, 3, 8] {
                assert_eq!(histogram(&trace, parts), want, "seed {seed} parts {parts}");
            }
        }
    }

    #[test]
    fn equals_the_sequential_analysis_whichever_bits_vary() {
        let t = SORT_TILE;
        let cases: Vec<(&str, Vec<u64>)> = vec![
            (
                "lines of 64 B, merge levels above the tile",
                lcg(7, 5 * t + 3, 3000)
                    .iter()
                    .map(|x| 0x7f00_0000_0000 + x * 64)
                    .collect(),
            ),
            (
                "only the high bits differ",
                lcg(8, 2 * t + 1, 6)
                    .iter()
                    .map(|x| (x << 58) | 0x55)
                    .collect(),
            ),
            (
                "only the low bits differ",
                lcg(9, t - 1, 16)
                    .iter()
                    .map(|x| 0xabcd_0000_0000 | x)
                    .collect(),
            ),
            (
                "random 64-bit items, some reused",
                lcg(10, 3 * t, 5000)
                    .iter()
                    .map(|x| x.wrapping_mul(0x9e37_79b9_7f4a_7c15))
                    .collect(),
            ),
            ("all equal", vec![0xdead_beef; t + 1]),
            ("no reuse", (0..t as u64 + 5).map(|i| i << 20).collect()),
            (
                "a loop over three tiles",
                (0..4 * t as u64).map(|i| i % (3 * t as u64)).collect(),
            ),
        ];
        for (name, trace) in cases {
            let want = exact_histogram(&trace);
            for parts in [1, 2, 3] {
                assert_eq!(histogram(&trace, parts), want, "{name}, {parts} parts");
            }
        }
    }

    #[test]
    fn an_empty_trace_has_an_empty_histogram() {
        assert_eq!(histogram(&[], 2), Histogram::new());
        assert!(part_bounds(0, 4).is_empty());
        assert_eq!(part_bounds(3, 8).len(), 3);
        assert_eq!(part_bounds(10, 3), vec![0..3, 3..6, 6..10]);
    }
}
