//! Per-chunk summaries that merge exactly (the HP-RDA seed's merge step, without its
//! approximation). A chunk analyzed alone knows every distance whose previous use lies inside it;
//! only its first uses wait for the chunks before it. The summary keeps, besides that
//! local histogram, the chunk's items in order of first use and in order of last use.
//!
//! Merging in trace order keeps the LRU stack of everything before the chunk. The `i`-th
//! first use of item `x` sees, between its previous use and itself, the `i` items first
//! used earlier in the chunk and the items still above `x` on the stack that the chunk has
//! not touched yet: so `distance = i + depth(x)`, where each resolved first use leaves the
//! stack as it is resolved. Then the chunk's items go back on top in last-use order, which
//! is the stack at the chunk's end. Cost: two stack operations per distinct item per chunk,
//! against one per reference for the chunk itself.

use serde::{Deserialize, Serialize};

use super::exact::WARM;
use super::histogram::Counts;
use super::stack::LruStack;
use super::{Histogram, ReuseError};

/// What a chunk hands to the merge; serializable so chunks can be analyzed elsewhere.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChunkSummary {
    /// The chunk analyzed alone: its finite distances are final; its cold references are
    /// the first uses in `first_uses`, resolved by the merge.
    pub local: Histogram,
    /// The chunk's distinct items in order of first use within it.
    pub first_uses: Vec<u64>,
    /// The same items in order of last use within it.
    pub last_uses: Vec<u64>,
}

impl ChunkSummary {
    /// Checks the summary's parts agree with each other (for summaries from elsewhere).
    pub fn check(&self) -> Result<(), ReuseError> {
        let n = self.first_uses.len() as u64;
        let finite: u64 = self.local.exact.values().sum();
        let ok = self.last_uses.len() as u64 == n
            && self.local.cold == n
            && self.local.distinct == n
            && self.local.references == self.local.cold + finite;
        if ok {
            Ok(())
        } else {
            Err(ReuseError::InvalidSummary(format!(
                "{} first uses, {} last uses, local histogram of {} references, {} cold, \
                 {} distinct",
                n,
                self.last_uses.len(),
                self.local.references,
                self.local.cold,
                self.local.distinct
            )))
        }
    }
}

/// Analyzes one chunk, streaming; reusable for the next chunk after `finish`.
#[derive(Debug, Default)]
pub struct ChunkAnalyzer {
    stack: LruStack,
    counts: Counts,
    first_uses: Vec<u64>,
}

impl ChunkAnalyzer {
    pub fn new() -> ChunkAnalyzer {
        ChunkAnalyzer::default()
    }

    /// References of the chunk, in order.
    pub fn push(&mut self, items: &[u64]) {
        let (counts, first_uses) = (&mut self.counts, &mut self.first_uses);
        self.stack.access_each(items, |item, d| {
            if d.is_none() {
                first_uses.push(item);
            }
            counts.record(d);
        });
    }

    /// Distinct items of the chunk so far.
    pub fn distinct(&self) -> u64 {
        self.stack.len() as u64
    }

    /// The chunk's summary; the analyzer is left empty, its allocations kept.
    pub fn finish(&mut self) -> ChunkSummary {
        let last_uses = self.stack.items_by_recency();
        let first_uses = std::mem::take(&mut self.first_uses);
        let local = std::mem::take(&mut self.counts).into_histogram(first_uses.len() as u64);
        self.stack.clear();
        ChunkSummary {
            local,
            first_uses,
            last_uses,
        }
    }

    /// Summary of a whole chunk.
    pub fn summarize(&mut self, items: &[u64]) -> ChunkSummary {
        self.push(items);
        self.finish()
    }
}

/// Summary of one chunk of items.
pub fn summarize(items: &[u64]) -> ChunkSummary {
    ChunkAnalyzer::new().summarize(items)
}

/// Merges chunk summaries in trace order into the histogram of the whole trace, equal to
/// the sequential analysis of the chunks joined.
#[derive(Debug, Default)]
pub struct Merger {
    stack: LruStack,
    counts: Counts,
}

impl Merger {
    pub fn new() -> Merger {
        Merger::default()
    }

    /// The next chunk in trace order.
    pub fn merge(&mut self, chunk: &ChunkSummary) -> Result<(), ReuseError> {
        chunk.check()?;
        self.counts.add_finite(&chunk.local);
        for (g, group) in chunk.first_uses.chunks(WARM).enumerate() {
            self.stack.warm(group);
            for (k, &item) in group.iter().enumerate() {
                let i = (g * WARM + k) as u64;
                let d = self.stack.remove(item).map(|depth| depth + i);
                self.counts.record(d);
            }
        }
        for group in chunk.last_uses.chunks(WARM) {
            self.stack.warm(group);
            for &item in group {
                self.stack.touch(item);
            }
        }
        Ok(())
    }

    /// References that follow the merged chunks, analyzed one by one: the merger's stack
    /// is the LRU stack of everything merged, so this continues the sequential analysis.
    pub fn push_references(&mut self, items: &[u64]) {
        let counts = &mut self.counts;
        self.stack.access_each(items, |_, d| counts.record(d));
    }

    /// Distinct items merged so far.
    pub fn distinct(&self) -> u64 {
        self.stack.len() as u64
    }

    pub fn finish(self) -> Histogram {
        let distinct = self.stack.len() as u64;
        self.counts.into_histogram(distinct)
    }
}

/// Histogram of the trace the chunks form, in order.
pub fn merge<'a>(
    chunks: impl IntoIterator<Item = &'a ChunkSummary>,
) -> Result<Histogram, ReuseError> {
    let mut m = Merger::new();
    for c in chunks {
        m.merge(c)?;
    }
    Ok(m.finish())
}
