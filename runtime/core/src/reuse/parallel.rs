//! Exact analysis on every core: references are gathered into batches of `threads`
//! chunks; the chunks of a batch are summarized in parallel while the calling thread
//! merges the summaries of the batch before, in trace order. The histogram is identical to
//! the sequential one. It pays off when chunks hold far fewer distinct items than
//! references: the merge costs two stack operations per distinct item per chunk, on one
//! thread. On a trace with little locality (uniform over 10^7 items, chunks almost all
//! distinct) the merge would do twice the sequential work on one thread: when a batch's
//! chunks hold more than [`FALLBACK_DISTINCT_SHARE`] of their references as distinct items,
//! the analyzer merges what it has and continues sequentially on the merged stack.

use std::thread;

use super::chunk::{ChunkAnalyzer, ChunkSummary, Merger};
use super::exact::check_items;
use super::{Histogram, ReuseError};

/// Default references per chunk: 16 MiB of items, large enough that a chunk's distinct
/// items are few against its references on traces with locality.
pub const DEFAULT_CHUNK_LEN: usize = 1 << 21;

/// Distinct items per reference of a batch's chunks above which summaries do not pay.
pub const FALLBACK_DISTINCT_SHARE: f64 = 0.5;
/// Batches shorter than this never fall back: their merge is cheap, and small chunks are
/// how tests exercise the merge.
const FALLBACK_MIN_BATCH: usize = 1 << 16;

#[derive(Debug)]
pub struct ParallelAnalyzer {
    chunk_len: usize,
    /// References waiting for a full batch.
    batch: Vec<u64>,
    /// One chunk analyzer per worker, kept between batches.
    workers: Vec<ChunkAnalyzer>,
    /// Summaries of the last batch, merged while the next one is analyzed.
    pending: Vec<ChunkSummary>,
    merger: Merger,
    limit: Option<u64>,
    /// Set once summaries did not shrink: references go straight to the merger's stack.
    sequential: bool,
}

impl ParallelAnalyzer {
    /// `threads` 0: every core; `chunk_len` 0: [`DEFAULT_CHUNK_LEN`].
    pub fn new(threads: usize, chunk_len: usize) -> ParallelAnalyzer {
        let threads = match threads {
            0 => thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        let chunk_len = if chunk_len == 0 {
            DEFAULT_CHUNK_LEN
        } else {
            chunk_len
        };
        ParallelAnalyzer {
            chunk_len,
            batch: Vec::new(),
            workers: (0..threads).map(|_| ChunkAnalyzer::new()).collect(),
            pending: Vec::new(),
            merger: Merger::new(),
            limit: None,
            sequential: false,
        }
    }

    /// Stops with [`ReuseError::TooManyItems`] past `limit` distinct items.
    pub fn with_limit(mut self, limit: u64) -> ParallelAnalyzer {
        self.limit = Some(limit);
        self
    }

    /// Worker threads (0 once the analyzer fell back to the sequential analysis).
    pub fn threads(&self) -> usize {
        self.workers.len()
    }

    /// Whether the analyzer fell back to the sequential analysis.
    pub fn is_sequential(&self) -> bool {
        self.sequential
    }

    fn batch_len(&self) -> usize {
        self.chunk_len.saturating_mul(self.workers.len())
    }

    /// References in trace order.
    pub fn push(&mut self, mut items: &[u64]) -> Result<(), ReuseError> {
        while !items.is_empty() {
            if self.sequential {
                return self.push_sequential(items);
            }
            let room = self.batch_len() - self.batch.len();
            let (now, rest) = items.split_at(room.min(items.len()));
            self.batch.extend_from_slice(now);
            items = rest;
            if self.batch.len() == self.batch_len() {
                self.run_batch()?;
            }
        }
        Ok(())
    }

    /// After the fallback: references straight onto the merged stack.
    fn push_sequential(&mut self, items: &[u64]) -> Result<(), ReuseError> {
        for part in items.chunks(self.chunk_len) {
            self.merger.push_references(part);
            let held = self.merger.distinct() as usize;
            check_items(held, self.limit, "exact-cpu-parallel")?;
        }
        Ok(())
    }

    pub fn finish(mut self) -> Result<Histogram, ReuseError> {
        if !self.batch.is_empty() {
            self.run_batch()?;
        }
        for s in std::mem::take(&mut self.pending) {
            self.merger.merge(&s)?;
        }
        Ok(self.merger.finish())
    }

    /// Summarizes the batch's chunks in parallel and merges the previous batch meanwhile.
    fn run_batch(&mut self) -> Result<(), ReuseError> {
        let threads = self.workers.len();
        // A full batch is `threads` chunks of `chunk_len`; the last, partial one is split evenly.
        let len = self.batch.len().div_ceil(threads).max(1);
        let previous = std::mem::take(&mut self.pending);
        let (batch, workers, merger) = (&self.batch, &mut self.workers, &mut self.merger);
        let (summaries, merged) = thread::scope(|s| {
            let handles: Vec<_> = batch
                .chunks(len)
                .zip(workers.iter_mut())
                .map(|(chunk, w)| s.spawn(move || w.summarize(chunk)))
                .collect();
            let merged = previous.iter().try_for_each(|sum| merger.merge(sum));
            let summaries: Vec<ChunkSummary> = handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect();
            (summaries, merged)
        });
        merged?;
        let distinct: usize = summaries.iter().map(|s| s.first_uses.len()).sum();
        let refs = self.batch.len();
        self.batch.clear();
        if refs >= FALLBACK_MIN_BATCH && distinct as f64 > FALLBACK_DISTINCT_SHARE * refs as f64 {
            for sum in &summaries {
                self.merger.merge(sum)?;
            }
            self.sequential = true;
            self.workers = Vec::new();
        } else {
            self.pending = summaries;
        }
        check_items(
            self.merger.distinct() as usize,
            self.limit,
            "exact-cpu-parallel",
        )
    }
}

/// Exact histogram of a trace of items on `threads` threads (0: every core).
/// Fails only past 2^31 distinct items.
pub fn histogram(items: &[u64], threads: usize, chunk_len: usize) -> Result<Histogram, ReuseError> {
    let mut a = ParallelAnalyzer::new(threads, chunk_len);
    a.push(items)?;
    a.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uniform(n: usize, items: u64, seed: u64) -> Vec<u64> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                (x >> 20) % items
            })
            .collect()
    }

    #[test]
    fn a_trace_without_locality_falls_back_to_the_sequential_analysis() {
        // Two chunks of 2^15 references over 2^22 items: nearly every reference distinct.
        let trace = uniform((1 << 16) + (1 << 12), 1 << 22, 5);
        let mut a = ParallelAnalyzer::new(2, 1 << 15);
        a.push(&trace).expect("push");
        assert!(a.is_sequential());
        assert_eq!(
            a.finish().expect("finish"),
            crate::reuse::exact::histogram(&trace).expect("exact")
        );
    }

    #[test]
    fn a_trace_with_locality_keeps_merging_summaries() {
        let trace = uniform((1 << 16) + (1 << 12), 1 << 10, 6);
        let mut a = ParallelAnalyzer::new(2, 1 << 15);
        a.push(&trace).expect("push");
        assert!(!a.is_sequential());
        assert_eq!(
            a.finish().expect("finish"),
            crate::reuse::exact::histogram(&trace).expect("exact")
        );
    }
}
