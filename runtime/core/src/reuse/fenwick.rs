//! A Fenwick (binary indexed) tree of counts: prefix sums with O(log n) updates.

/// Counts fit `u32`: the stack never holds more than `MAX_ITEMS` (2^31) marks.
#[derive(Debug, Clone, Default)]
pub(crate) struct Fenwick {
    /// 1-based: `tree[i]` sums the marks of positions `(i - lowbit(i), i]`.
    tree: Vec<u32>,
}

impl Fenwick {
    /// A tree over the given counts, built in O(n).
    pub(crate) fn from_counts(counts: impl IntoIterator<Item = u32>) -> Fenwick {
        let mut tree = vec![0u32];
        tree.extend(counts);
        let n = tree.len();
        for i in 1..n {
            let j = i + (i & i.wrapping_neg());
            if j < n {
                tree[j] = tree[j].wrapping_add(tree[i]);
            }
        }
        Fenwick { tree }
    }

    /// Adds `delta` (wrapping: `u32::MAX` subtracts 1) at `pos` (0-based).
    #[inline]
    pub(crate) fn add(&mut self, pos: usize, delta: u32) {
        let n = self.tree.len();
        let mut i = pos + 1;
        while i < n {
            self.tree[i] = self.tree[i].wrapping_add(delta);
            i += i & i.wrapping_neg();
        }
    }

    /// Sum over positions `0..=pos`.
    #[inline]
    pub(crate) fn prefix(&self, pos: usize) -> u32 {
        let mut i = (pos + 1).min(self.tree.len().saturating_sub(1));
        let mut sum = 0u32;
        while i > 0 {
            sum = sum.wrapping_add(self.tree[i]);
            i &= i - 1;
        }
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_matches_marks() {
        for len in [0usize, 1, 2, 7, 16, 33] {
            for ones in 0..=len {
                let f = Fenwick::from_counts((0..len).map(|p| u32::from(p < ones)));
                for pos in 0..len {
                    assert_eq!(
                        f.prefix(pos) as usize,
                        (pos + 1).min(ones),
                        "{len} {ones} {pos}"
                    );
                }
            }
        }
    }

    #[test]
    fn mark_unmark_prefix() {
        let mut f = Fenwick::from_counts([0; 10]);
        f.add(3, 1);
        f.add(7, 1);
        assert_eq!(f.prefix(2), 0);
        assert_eq!(f.prefix(3), 1);
        assert_eq!(f.prefix(9), 2);
        f.add(3, u32::MAX);
        assert_eq!(f.prefix(6), 0);
        assert_eq!(f.prefix(7), 1);
    }
}
