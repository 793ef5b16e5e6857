//! HP-RDA's adjustment applied to the GPU form's dense counts (index = distance) on every
//! core: the same histogram as [`Totals::histogram`] over the same counts, without turning
//! tens of millions of counts into pairs first. Each adjustment maps distances
//! monotonically (formula 2 above `M`, the overlap correction everywhere), so slices of
//! the counts are mapped on their own and their outputs laid end to end.

use super::hprda_adjust::{overlap_of, Adjust, Totals};
use super::{Distances, Histogram};

/// Counts shorter than this many per core are mapped on one thread.
const SLICE: usize = 1 << 18;

impl Totals {
    /// [`Totals::histogram`] of dense counts: `local[d]` references at distance `d` inside
    /// sub-traces, `cross[d]` across them.
    pub fn histogram_dense(&self, local: &[u32], cross: &[u32], adjust: Adjust) -> Histogram {
        let m = self.distinct;
        let local = Distances::from_dense(local);
        let repeats = [(0, self.repeats)];
        let repeats = &repeats[..usize::from(self.repeats > 0)];
        let exact = match adjust {
            Adjust::None => Distances::from_dense(cross),
            Adjust::Seed if self.thread_counts == 0 => Distances::from_dense(cross),
            Adjust::Seed => {
                // Formula 2 scales the distances above M; those up to M stay.
                let ef = m as f64 / self.thread_counts as f64;
                let split = usize::try_from(m.saturating_add(1))
                    .map_or(cross.len(), |s| s.min(cross.len()));
                let kept = Distances::from_dense(&cross[..split]);
                let scaled = map_slices(&cross[split..], |first, slice| {
                    let pairs = nonzero(slice, (split + first) as u64);
                    Distances::from_ascending(
                        pairs.map(|(d, n)| ((d as f64 * ef).round() as u64, n)),
                    )
                });
                if scaled.is_empty() {
                    kept
                } else {
                    kept.merge(&scaled)
                }
            }
            Adjust::Overlap => overlap_dense(cross, self.thread_counts, m),
        };
        // The local distances (shorter than a sub-trace) and the repeats (0) join the
        // cross ones' first few.
        self.finish(exact.merge_small(&[local.as_slice(), repeats]))
    }
}

impl Totals {
    /// [`Totals::histogram_dense`] with [`Adjust::Overlap`] where the correction was
    /// already applied (by the GPU): `adjusted[a]` cross references at corrected distance
    /// `a`.
    pub fn histogram_adjusted(&self, local: &[u32], adjusted: &[u32]) -> Histogram {
        let local = Distances::from_dense(local);
        let repeats = [(0, self.repeats)];
        let repeats = &repeats[..usize::from(self.repeats > 0)];
        self.finish(Distances::from_dense(adjusted).merge_small(&[local.as_slice(), repeats]))
    }
}

/// The overlap correction of dense cross counts: each distance `D` less
/// `(D · below − sum) / S`, `below` and `sum` the count and total length (`l + 1` each) of
/// the distances `l ≤ D − 2`, rounded, at most `M − 1` (`hprda_adjust::overlap`, whose
/// integer sums these are, so both give the same histogram). Each slice starts from the
/// totals of the slices before it.
fn overlap_dense(cross: &[u32], s: u64, m: u64) -> Distances {
    let slice = slice_len(cross.len());
    let term = |l: usize| {
        let n = u64::from(cross[l]);
        (n, (l as u64 + 1) * n)
    };
    // Totals of each slice: references and their lengths.
    let totals = par_slices(cross, slice, |first, c| {
        (0..c.len()).fold((0u64, 0u64), |(b, l), j| {
            let (n, len) = term(first + j);
            (b + n, l + len)
        })
    });
    map_slices(cross, |first, c| {
        // The distances l ≤ first − 2: every slice before, less the last distance of the
        // one just before.
        let (mut below, mut sum) = totals[..first / slice]
            .iter()
            .fold((0u64, 0u64), |(b, l), &(tb, tl)| (b + tb, l + tl));
        if let Some(last) = first.checked_sub(1) {
            let (n, len) = term(last);
            below -= n;
            sum -= len;
        }
        // Adjusted distances ascend, equal ones added up as they come, except where a
        // correction clamps a distance at 0: `from_vec` keeps ascending pairs without a
        // copy and sorts the others.
        let mut out: Vec<(u64, u64)> = Vec::with_capacity(c.len());
        for (j, &n) in c.iter().enumerate() {
            let d = first + j;
            if n > 0 {
                let a = overlap_of(d as u64, below, sum, s, m);
                match out.last_mut() {
                    Some(last) if last.0 == a => last.1 += u64::from(n),
                    _ => out.push((a, u64::from(n))),
                }
            }
            // From D = d + 1 on, distance d − 1 counts too.
            if let Some(l) = d.checked_sub(1) {
                let (n, len) = term(l);
                below += n;
                sum += len;
            }
        }
        Distances::from_vec(out)
    })
}

/// The nonzero counts of `dense` as `(distance, count)`, `base` the distance of its first.
fn nonzero(dense: &[u32], base: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
    dense
        .iter()
        .enumerate()
        .filter(|&(_, &n)| n > 0)
        .map(move |(d, &n)| (base + d as u64, u64::from(n)))
}

/// Slice length for `len` counts over the cores.
fn slice_len(len: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    len.div_ceil(cores.min(len / SLICE).max(1)).max(1)
}

/// `f(first, slice)` over slices of `dense` of `slice` counts each, on every core, in
/// order.
fn par_slices<T, F>(dense: &[u32], slice: usize, f: F) -> Vec<T>
where
    T: Send,
    F: Fn(usize, &[u32]) -> T + Sync,
{
    std::thread::scope(|s| {
        let f = &f;
        let handles: Vec<_> = dense
            .chunks(slice.max(1))
            .enumerate()
            .map(|(i, c)| s.spawn(move || f(i * slice, c)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

/// `f(first, slice)` over slices of `dense` on every core, each giving ascending
/// distances no larger than the next slice's, laid end to end: one copy, a distance at the
/// seam of two slices added up.
fn map_slices<F>(dense: &[u32], f: F) -> Distances
where
    F: Fn(usize, &[u32]) -> Distances + Sync,
{
    let parts = par_slices(dense, slice_len(dense.len()), f);
    // Where each part goes: its first pair is added to the pair before when their
    // distances meet at the seam.
    let mut skips = Vec::with_capacity(parts.len());
    let mut seams = Vec::new();
    let (mut len, mut last) = (0usize, None::<u64>);
    for part in &parts {
        let p = part.as_slice();
        let skip = match (last, p.first()) {
            (Some(l), Some(&(d, n))) if l == d => {
                seams.push((len - 1, n));
                1
            }
            // A correction larger than the distance clamps it low: pairs out of order
            // across slices are sorted after all.
            (Some(l), Some(&(d, _))) if d < l => return sorted_parts(&parts),
            _ => 0,
        };
        skips.push(skip);
        len += p.len() - skip;
        last = p.last().map(|&(d, _)| d).or(last);
    }
    let mut out = vec![(0u64, 0u64); len];
    std::thread::scope(|s| {
        let mut rest = out.as_mut_slice();
        for (part, &skip) in parts.iter().zip(&skips) {
            let from = &part.as_slice()[skip..];
            let (mine, tail) = rest.split_at_mut(from.len());
            rest = tail;
            s.spawn(move || mine.copy_from_slice(from));
        }
    });
    for (at, n) in seams {
        out[at].1 += n;
    }
    Distances::from_ascending_vec(out)
}

/// The parts joined and sorted, equal distances added.
fn sorted_parts(parts: &[Distances]) -> Distances {
    parts.iter().flat_map(|p| p.iter().copied()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts with gaps and runs, long enough to be cut into slices on two cores.
    fn counts(len: usize, seed: u64) -> Vec<u32> {
        let mut x = seed;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if x % 3 == 0 {
                    0
                } else {
                    (x % 50) as u32
                }
            })
            .collect()
    }

    #[test]
    fn dense_counts_give_the_pairs_histogram_for_every_adjustment() {
        let local = counts(2048, 3);
        for (len, m, s) in [
            (3 * SLICE + 77, 900_000u64, 2_000_000u64),
            (5000, 1200, 9000),
        ] {
            let cross = counts(len, 11);
            let totals = Totals {
                references: 10_000_000,
                repeats: 17,
                distinct: m,
                thread_counts: s,
            };
            for adjust in [Adjust::Seed, Adjust::Overlap, Adjust::None] {
                let pairs = totals.histogram(nonzero(&local, 0), nonzero(&cross, 0), adjust);
                let dense = totals.histogram_dense(&local, &cross, adjust);
                assert_eq!(dense, pairs, "{adjust:?} over {len} counts");
            }
        }
    }

    #[test]
    fn counts_adjusted_elsewhere_give_the_dense_histogram() {
        // What `memtune_hprda_overlap_apply` does, one distance at a time.
        let (m, s) = (900_000u64, 2_000_000u64);
        let local = counts(2048, 5);
        let cross = counts(3 * SLICE + 77, 13);
        let mut adjusted = vec![0u32; m as usize];
        let (mut below, mut sum) = (0u64, 0u64);
        for (d, &n) in cross.iter().enumerate() {
            if d >= 2 {
                below += u64::from(cross[d - 2]);
                sum += (d as u64 - 1) * u64::from(cross[d - 2]);
            }
            if n > 0 {
                adjusted[overlap_of(d as u64, below, sum, s, m) as usize] += n;
            }
        }
        let totals = Totals {
            references: 10_000_000,
            repeats: 17,
            distinct: m,
            thread_counts: s,
        };
        assert_eq!(
            totals.histogram_adjusted(&local, &adjusted),
            totals.histogram_dense(&local, &cross, Adjust::Overlap)
        );
    }

    #[test]
    fn empty_counts_give_only_the_repeats() {
        let totals = Totals {
            references: 5,
            repeats: 5,
            distinct: 1,
            thread_counts: 1,
        };
        let h = totals.histogram_dense(&[], &[], Adjust::Overlap);
        assert_eq!(h.exact, Distances::from([(0, 5)]));
    }
}
