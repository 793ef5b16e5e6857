//! Exact reuse distances, sequentially: the reference every other mode is checked against.
//! One LRU stack (`stack.rs`: a hash table of last-use times and counted marks on a time
//! window), O(log n) per reference, memory O(distinct items).

use super::histogram::Counts;
use super::stack::{LruStack, MAX_ITEMS};
use super::{Histogram, ReuseError};

/// References whose cache lines are loaded ahead of the sequential pass: their lines
/// (two or three each) stay within L1/L2.
pub(crate) const WARM: usize = 128;

/// References between two checks of the item limit.
const CHECK_EVERY: usize = 4096;

/// Distance of a first use in [`distances`]: infinite, a miss in every cache.
pub const COLD: u64 = u64::MAX;

/// Streaming exact analyzer: feed items (addresses already divided by the granularity)
/// in trace order, then [`ExactAnalyzer::finish`].
#[derive(Debug, Default)]
pub struct ExactAnalyzer {
    stack: LruStack,
    counts: Counts,
    limit: Option<u64>,
}

impl ExactAnalyzer {
    pub fn new() -> ExactAnalyzer {
        ExactAnalyzer::default()
    }

    /// Stops with [`ReuseError::TooManyItems`] once more than `limit` distinct items are held.
    pub fn with_limit(limit: u64) -> ExactAnalyzer {
        ExactAnalyzer {
            limit: Some(limit),
            ..ExactAnalyzer::default()
        }
    }

    /// One reference; returns its distance (`None` on first use).
    #[inline]
    pub fn access(&mut self, item: u64) -> Option<u64> {
        let d = self.stack.access(item);
        self.counts.record(d);
        d
    }

    /// A batch of references in trace order.
    pub fn push(&mut self, items: &[u64]) -> Result<(), ReuseError> {
        for group in items.chunks(CHECK_EVERY) {
            let counts = &mut self.counts;
            self.stack.access_each(group, |_, d| counts.record(d));
            check_items(self.stack.len(), self.limit, "exact-cpu")?;
        }
        Ok(())
    }

    /// Distinct items so far.
    pub fn distinct(&self) -> u64 {
        self.stack.len() as u64
    }

    pub fn finish(self) -> Histogram {
        let distinct = self.stack.len() as u64;
        self.counts.into_histogram(distinct)
    }
}

/// Errors once a stack holds more items than the user's limit or than [`MAX_ITEMS`].
pub(crate) fn check_items(
    held: usize,
    limit: Option<u64>,
    mode: &'static str,
) -> Result<(), ReuseError> {
    let limit = limit.unwrap_or(MAX_ITEMS).min(MAX_ITEMS);
    if held as u64 > limit {
        return Err(ReuseError::TooManyItems { limit, mode });
    }
    Ok(())
}

/// Exact histogram of a trace of items; fails only past 2^31 distinct items.
pub fn histogram(items: &[u64]) -> Result<Histogram, ReuseError> {
    let mut a = ExactAnalyzer::new();
    a.push(items)?;
    Ok(a.finish())
}

/// Distance of every reference, [`COLD`] for first uses: for tests and for checking other
/// implementations reference by reference.
pub fn distances(items: &[u64]) -> Vec<u64> {
    let mut stack = LruStack::new();
    items
        .iter()
        .map(|&item| stack.access(item).unwrap_or(COLD))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_figure_1() {
        // Ding et al.'s example: b's second use sees c, g, e, f, a in between: 5.
        let t: Vec<u64> = "dacbcgefafbabaga".bytes().map(u64::from).collect();
        let d = distances(&t);
        assert_eq!(d[10], 5);
        let h = histogram(&t).unwrap();
        assert_eq!(h.references, 16);
        assert_eq!(h.distinct, 7);
        assert_eq!(h.cold, 7);
    }

    #[test]
    fn limit_is_an_error() {
        let mut a = ExactAnalyzer::with_limit(3);
        assert!(a.push(&[1, 2, 3, 1]).is_ok());
        let err = a.push(&[4]).unwrap_err();
        assert!(matches!(err, ReuseError::TooManyItems { limit: 3, .. }));
    }
}
