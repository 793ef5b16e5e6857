//! The finite reuse distances of a histogram with their counts: one sorted vector, built
//! in one pass from the analyzers' dense counts (a tree map of millions of distances took
//! several times longer to build and to free) and read in order by every summary.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// `(distance, references with it)`, distances ascending and distinct, no zero count.
/// JSON: `[distance, count]` pairs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Distances(Vec<(u64, u64)>);

impl Distances {
    /// From dense counts: index = distance; zero counts are left out.
    pub fn from_dense<N: Copy + Into<u64>>(dense: &[N]) -> Distances {
        Distances(
            dense
                .iter()
                .enumerate()
                .map(|(d, &n)| (d as u64, n.into()))
                .filter(|&(_, n)| n > 0)
                .collect(),
        )
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

/// Any `(distance, count)` pairs: sorted, counts of one distance added, zeros dropped.
impl FromIterator<(u64, u64)> for Distances {
    fn from_iter<I: IntoIterator<Item = (u64, u64)>>(pairs: I) -> Distances {
        let mut v: Vec<(u64, u64)> = pairs.into_iter().filter(|&(_, n)| n > 0).collect();
        v.sort_unstable_by_key(|&(d, _)| d);
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
