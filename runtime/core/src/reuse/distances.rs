//! The finite reuse distances of a histogram with their counts: one sorted vector, built
//! in one pass from the analyzers' dense counts (a tree map of millions of distances took
//! several times longer to build and to free) and read in order by every summary.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// `(distance, references with it)`, distances ascending and distinct, no zero count.
/// JSON: `[distance, count]` pairs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Distances(Vec<(u64, u64)>);

impl Distances {
    /// From dense counts: index = distance; zero counts are left out. Long ones are read
    /// on every core: the nonzero counts of each slice counted, then each slice written
    /// into its place (one vector, no merge), so the GPU modes' counts of millions of
    /// distances become the histogram in a few milliseconds.
    pub fn from_dense<N: Copy + Into<u64> + Sync>(dense: &[N]) -> Distances {
        Distances::from_dense_summed(dense).0
    }

    /// [`Distances::from_dense`] and the sum of the counts, taken in the same pass.
    pub fn from_dense_summed<N: Copy + Into<u64> + Sync>(dense: &[N]) -> (Distances, u64) {
        Distances::from_dense_summed_in(dense, Vec::new())
    }

    /// [`Distances::from_dense_summed`], the pairs written into `buf` when it is long
    /// enough (whatever it holds; its pages may have been touched ahead, while the counts
    /// were made elsewhere), else into fresh memory.
    pub fn from_dense_summed_in<N: Copy + Into<u64> + Sync>(
        dense: &[N],
        buf: Vec<(u64, u64)>,
    ) -> (Distances, u64) {
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(dense.len() / PARALLEL_SLICE);
        if threads <= 1 {
            let sum = dense.iter().map(|&n| n.into()).sum();
            return (Distances(nonzero(dense, 0).collect()), sum);
        }
        let slice = dense.len().div_ceil(threads);
        let slices: Vec<&[N]> = dense.chunks(slice).collect();
        let counts: Vec<(usize, u64)> = std::thread::scope(|s| {
            let handles: Vec<_> = slices
                .iter()
                .map(|c| {
                    s.spawn(move || {
                        c.iter().fold((0, 0), |(k, sum), &n| {
                            let n: u64 = n.into();
                            (k + usize::from(n > 0), sum + n)
                        })
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        });
        let pairs = counts.iter().map(|c| c.0).sum();
        let mut out = if buf.len() >= pairs {
            buf
        } else {
            vec![(0u64, 0u64); pairs]
        };
        out.truncate(pairs);
        std::thread::scope(|s| {
            let mut rest = out.as_mut_slice();
            for (i, (c, &(k, _))) in slices.iter().zip(&counts).enumerate() {
                let (mine, tail) = rest.split_at_mut(k);
                rest = tail;
                let base = (i * slice) as u64;
                s.spawn(move || {
                    for (slot, pair) in mine.iter_mut().zip(nonzero(c, base)) {
                        *slot = pair;
                    }
                });
            }
        });
        // A longer buffer's rest goes back (in place: no copy).
        out.shrink_to_fit();
        (Distances(out), counts.iter().map(|c| c.1).sum())
    }

    /// From pairs in ascending order of distance (equal distances next to each other are
    /// added, zero counts dropped): one pass. Pairs out of order are sorted after all, so
    /// the result is right for any input; only the speed counts on the order.
    pub fn from_ascending(pairs: impl IntoIterator<Item = (u64, u64)>) -> Distances {
        let mut pairs = pairs.into_iter();
        let mut v: Vec<(u64, u64)> = Vec::with_capacity(pairs.size_hint().0);
        for (d, n) in pairs.by_ref() {
            if n == 0 {
                continue;
            }
            match v.last_mut() {
                Some(last) if last.0 == d => last.1 += n,
                Some(last) if last.0 > d => {
                    v.push((d, n));
                    v.extend(pairs);
                    return v.into_iter().collect();
                }
                _ => v.push((d, n)),
            }
        }
        Distances(v)
    }

    /// Both histograms' distances, the counts of a distance in both added: one pass.
    pub fn merge(&self, other: &Distances) -> Distances {
        Distances::merge_slices(&self.0, &other.0)
    }

    /// Pairs already ascending and distinct with no zero count, kept as they are (checked
    /// in one pass; pairs that are not are sorted after all).
    pub fn from_vec(v: Vec<(u64, u64)>) -> Distances {
        let sorted = v.windows(2).all(|w| w[0].0 < w[1].0) && v.iter().all(|&(_, n)| n > 0);
        if sorted {
            Distances(v)
        } else {
            v.into_iter().collect()
        }
    }

    /// Pairs ascending and distinct with no zero count by their construction (checked in
    /// debug builds only).
    pub(crate) fn from_ascending_vec(v: Vec<(u64, u64)>) -> Distances {
        debug_assert!(v.windows(2).all(|w| w[0].0 < w[1].0) && v.iter().all(|&(_, n)| n > 0));
        Distances(v)
    }

    /// Adds `small` (few distances, each ascending and distinct) to these: only the prefix
    /// of these up to the largest distance of `small` is merged, the rest stays in place
    /// (HP-RDA's local and repeat counts beside its millions of cross distances).
    pub(crate) fn merge_small(self, small: &[&[(u64, u64)]]) -> Distances {
        let small = Distances::merge_all(small);
        let Some((max, _)) = small.last() else {
            return self;
        };
        let mut v = self.0;
        let p = v.partition_point(|&(d, _)| d <= max);
        let head = Distances::merge_slices(&v[..p], &small.0);
        v.splice(..p, head.0);
        Distances(v)
    }

    /// Every part's distances (each ascending and distinct), the counts of a distance in
    /// several added: one pass and one allocation, however many parts.
    pub fn merge_all(parts: &[&[(u64, u64)]]) -> Distances {
        let mut out = Vec::with_capacity(parts.iter().map(|p| p.len()).sum());
        let mut at = vec![0usize; parts.len()];
        loop {
            let next = parts
                .iter()
                .zip(&at)
                .filter_map(|(p, &i)| p.get(i).map(|&(d, _)| d))
                .min();
            let Some(d) = next else { break };
            let mut n = 0;
            for (p, i) in parts.iter().zip(at.iter_mut()) {
                if let Some(&(pd, pn)) = p.get(*i) {
                    if pd == d {
                        n += pn;
                        *i += 1;
                    }
                }
            }
            out.push((d, n));
        }
        Distances(out)
    }

    /// [`Distances::merge`] of two slices of ascending, distinct distances.
    pub fn merge_slices(a: &[(u64, u64)], b: &[(u64, u64)]) -> Distances {
        let mut out = Vec::with_capacity(a.len() + b.len());
        let (mut i, mut j) = (0, 0);
        while i < a.len() && j < b.len() {
            let (x, y) = (a[i], b[j]);
            if x.0 < y.0 {
                out.push(x);
                i += 1;
            } else if y.0 < x.0 {
                out.push(y);
                j += 1;
            } else {
                out.push((x.0, x.1 + y.1));
                i += 1;
                j += 1;
            }
        }
        out.extend_from_slice(&a[i..]);
        out.extend_from_slice(&b[j..]);
        Distances(out)
    }

    /// The pairs, distances ascending.
    pub fn as_slice(&self) -> &[(u64, u64)] {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// References at `distance`, `None` for none.
    pub fn get(&self, distance: u64) -> Option<u64> {
        self.0
            .binary_search_by_key(&distance, |&(d, _)| d)
            .ok()
            .map(|i| self.0[i].1)
    }

    /// The largest distance with its count.
    pub fn last(&self) -> Option<(u64, u64)> {
        self.0.last().copied()
    }

    pub fn iter(&self) -> std::slice::Iter<'_, (u64, u64)> {
        self.0.iter()
    }

    pub fn keys(&self) -> impl Iterator<Item = u64> + '_ {
        self.0.iter().map(|&(d, _)| d)
    }

    pub fn values(&self) -> impl Iterator<Item = u64> + '_ {
        self.0.iter().map(|&(_, n)| n)
    }

    /// The distances at or above `distance`.
    pub fn from_distance(&self, distance: u64) -> &[(u64, u64)] {
        &self.0[self.0.partition_point(|&(d, _)| d < distance)..]
    }
}

/// Dense counts shorter than this many per core are read on one thread.
const PARALLEL_SLICE: usize = 1 << 18;

/// The nonzero counts of `dense` as `(distance, count)`, `base` the distance of its first.
fn nonzero<N: Copy + Into<u64>>(dense: &[N], base: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
    dense
        .iter()
        .enumerate()
        .map(move |(d, &n)| (base + d as u64, n.into()))
        .filter(|&(_, n)| n > 0)
}

/// Any `(distance, count)` pairs: sorted, counts of one distance added, zeros dropped.
/// The sort is the stable one, which finds ascending runs and merges them: HP-RDA's
/// adjusted distances arrive as two sorted runs, merged in linear time.
impl FromIterator<(u64, u64)> for Distances {
    fn from_iter<I: IntoIterator<Item = (u64, u64)>>(pairs: I) -> Distances {
        let mut v: Vec<(u64, u64)> = pairs.into_iter().filter(|&(_, n)| n > 0).collect();
        v.sort_by_key(|&(d, _)| d);
        v.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                kept.1 += later.1;
            }
            same
        });
        Distances(v)
    }
}

impl<const N: usize> From<[(u64, u64); N]> for Distances {
    fn from(pairs: [(u64, u64); N]) -> Distances {
        pairs.into_iter().collect()
    }
}

impl<'a> IntoIterator for &'a Distances {
    type Item = &'a (u64, u64);
    type IntoIter = std::slice::Iter<'a, (u64, u64)>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl IntoIterator for Distances {
    type Item = (u64, u64);
    type IntoIter = std::vec::IntoIter<(u64, u64)>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl Serialize for Distances {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|&(d, n)| [d, n]))
    }
}

/// Pairs in any order, repeated distances added up, zero counts dropped.
impl<'de> Deserialize<'de> for Distances {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Distances, D::Error> {
        Ok(Vec::<(u64, u64)>::deserialize(d)?.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_small_equals_merge_all() {
        let big: Vec<(u64, u64)> = (0..1000u64).map(|d| (3 * d + 1, d + 1)).collect();
        let cases: [&[(u64, u64)]; 4] = [&[], &[(0, 5)], &[(1, 2), (2, 2), (40, 1)], &[(5000, 9)]];
        for small in cases {
            let want = Distances::merge_all(&[&big, small, &[(4, 1)]]);
            let got = Distances(big.clone()).merge_small(&[small, &[(4, 1)]]);
            assert_eq!(got, want, "{small:?}");
        }
    }

    #[test]
    fn pairs_in_any_order_sort_and_add_up() {
        let d: Distances = [(5, 1), (2, 3), (5, 2), (9, 0), (0, 1)].into();
        assert_eq!(
            d.iter().copied().collect::<Vec<_>>(),
            vec![(0, 1), (2, 3), (5, 3)]
        );
        assert_eq!(
            (d.get(5), d.get(3), d.last()),
            (Some(3), None, Some((5, 3)))
        );
        assert_eq!(d.from_distance(2), &[(2, 3), (5, 3)]);
        assert_eq!(d.from_distance(6), &[]);
        assert_eq!(d.keys().collect::<Vec<_>>(), vec![0, 2, 5]);
        assert_eq!(d.values().sum::<u64>(), 7);
    }

    #[test]
    fn dense_counts_keep_their_nonzero_distances() {
        let d = Distances::from_dense(&[0u32, 4, 0, 1]);
        assert_eq!(d, Distances::from([(1, 4), (3, 1)]));
        assert!(Distances::from_dense::<u64>(&[]).is_empty());
        assert_eq!(Distances::from_dense_summed(&[0u32, 4, 0, 1]).1, 5);
    }

    #[test]
    fn long_dense_counts_read_on_every_core_match_one_thread() {
        // Past the parallel threshold on any machine with two cores; gaps cross slices.
        let dense: Vec<u32> = (0..3 * PARALLEL_SLICE as u32 + 17)
            .map(|i| {
                if i % 7 == 0 || i % 1000 < 3 {
                    0
                } else {
                    i % 11
                }
            })
            .collect();
        let serial = Distances(nonzero(&dense, 0).collect());
        let (d, sum) = Distances::from_dense_summed(&dense);
        assert_eq!(d, serial);
        assert_eq!(sum, dense.iter().map(|&n| u64::from(n)).sum::<u64>());
        // Into a buffer of any length and content: the same.
        for len in [0, 10, d.len(), d.len() + 1000] {
            let (into, s) = Distances::from_dense_summed_in(&dense, vec![(7, 7); len]);
            assert_eq!((&into, s), (&d, sum), "a buffer of {len}");
        }
        assert!(d.iter().all(|&(_, n)| n > 0));
        assert!(d.keys().zip(d.keys().skip(1)).all(|(a, b)| a < b));
    }

    #[test]
    fn ascending_pairs_add_up_and_any_order_still_sorts() {
        let d = Distances::from_ascending([(1, 1), (1, 2), (3, 0), (4, 1)]);
        assert_eq!(d, Distances::from([(1, 3), (4, 1)]));
        let late = Distances::from_ascending([(2, 1), (5, 1), (1, 1), (5, 2)]);
        assert_eq!(late, Distances::from([(1, 1), (2, 1), (5, 3)]));
        let a = Distances::from([(1, 1), (4, 2), (9, 1)]);
        let b = Distances::from([(0, 5), (4, 1), (10, 1)]);
        assert_eq!(
            a.merge(&b),
            Distances::from([(0, 5), (1, 1), (4, 3), (9, 1), (10, 1)])
        );
        assert_eq!(a.merge(&Distances::default()), a);
        let all = Distances::merge_all(&[a.as_slice(), b.as_slice(), &[(4, 10)]]);
        assert_eq!(
            all,
            Distances::from([(0, 5), (1, 1), (4, 13), (9, 1), (10, 1)])
        );
        assert_eq!(Distances::merge_all(&[]), Distances::default());
        assert_eq!(
            Distances::from_vec(vec![(3, 1), (1, 1)]),
            Distances::from([(1, 1), (3, 1)])
        );
    }

    #[test]
    fn two_sorted_runs_merge_into_one() {
        let d: Distances = [(1, 1), (4, 1), (9, 1), (0, 2), (4, 2), (5, 1)].into();
        assert_eq!(d, Distances::from([(0, 2), (1, 1), (4, 3), (5, 1), (9, 1)]));
    }

    #[test]
    fn json_is_distance_count_pairs() {
        let d = Distances::from([(3, 1), (1, 2)]);
        let text = serde_json::to_string(&d).unwrap_or_default();
        assert_eq!(text, "[[1,2],[3,1]]");
        let back: Distances = serde_json::from_str("[[3,1],[1,2],[3,4],[7,0]]").unwrap_or_default();
        assert_eq!(back, Distances::from([(1, 2), (3, 5)]));
    }
}
