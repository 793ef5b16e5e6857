//! HP-RDA (Cui, Yi, Xue, Wang, Yang, Feng: "A Highly Parallel Reuse Distance Analysis
//! Algorithm on GPUs") run on the CPU with the GPU algorithm's data-parallel
//! structure. The GPU runs it as `memtune::reuse::hprda` (`kernels/cuda/hprda.cu`), whose
//! method [`super::hprda_model`] follows step for step; both give this histogram.
//!
//! 1. Preprocessing: a reference repeating the one before has distance 0 and is dropped.
//! 2. A launch of `blocks × threads_per_block × sub_trace` references is split into
//!    thread-local sub-traces of `sub_trace` (ST) references.
//! 3. Each "thread" analyzes its sub-trace with a hash table (item -> last index) and a
//!    local array whose live entries are the latest use of each item: a reuse's distance is
//!    the live entries between its two uses (a bitset here; the paper zeroes array slots).
//!    It leaves an `access_info` per item (distinct items before its first use, `first`,
//!    and after its last, `latest`) and its distinct count.
//! 4. Merging, at block level (a block's threads) then grid level (every block, across
//!    launches too): the uses of an item in sub-traces `i < j`, absent in between, are
//!    `latest_i + Σ count[k] (i < k < j) + first_j` apart (formula 1). Distinct items seen
//!    in several sub-traces are counted once per sub-trace, so this over-estimates.
//! 5. Adjustment, once the trace ends ([`Totals::histogram`]): the seed's formula 2/3
//!    (every distance above `M`, the distinct items of the whole trace, becomes
//!    `distance × ef` with the effective factor `ef = M / Σ count` over every sub-trace),
//!    or an estimate of the over-count itself, or none.
//!
//! Blocks run on worker threads (the GPU's blocks in parallel); the grid merge is split by
//! item hash over the workers (the GPU's threads over groups of distinct items). A block's
//! distinct count is exact (the paper reads it from its hash-node pool), its `first` and
//! `latest` come from formula 1 over its threads.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use std::thread;

use super::exact::check_items;
use super::histogram::Counts;
pub use super::hprda_adjust::{Adjust, Totals};
use super::table::TimeTable;
use super::{Histogram, ReuseError};

/// The paper's ST (its Figure 16-17 choice).
pub const DEFAULT_SUB_TRACE: usize = 2048;
/// ST accepted: the local-array scan is O(ST) per reuse.
pub const SUB_TRACE_RANGE: RangeInclusive<usize> = 64..=65536;
/// The paper's NB (threads per block), fixed by shared memory.
pub const DEFAULT_THREADS_PER_BLOCK: usize = 64;
/// NB accepted (a CUDA block holds at most 1024 threads).
pub const THREADS_PER_BLOCK_RANGE: RangeInclusive<usize> = 1..=1024;
/// NTB so that a launch is the paper's N = 0x4000000 references at the default ST and NB.
pub const DEFAULT_BLOCKS: usize = 512;
/// NTB accepted (a CUDA grid's y/z extent).
pub const BLOCKS_RANGE: RangeInclusive<usize> = 1..=65535;
/// Most references per launch (buffered as u64: 2 GiB).
pub const MAX_LAUNCH: usize = 1 << 28;

/// Stored merge offsets are biased so a negative one never meets the table's free marker.
const BIAS: u64 = 1 << 63;

/// HP-RDA's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HpRdaConfig {
    /// ST: references per thread-local sub-trace.
    pub sub_trace: usize,
    /// NB: sub-traces per block.
    pub threads_per_block: usize,
    /// NTB: blocks per launch; a launch is `NTB × NB × ST` references.
    pub blocks: usize,
    /// The adjustment of merged distances (the paper's `-disable-adjusting`:
    /// [`Adjust::None`]).
    pub adjust: Adjust,
}

impl Default for HpRdaConfig {
    fn default() -> HpRdaConfig {
        HpRdaConfig {
            sub_trace: DEFAULT_SUB_TRACE,
            threads_per_block: DEFAULT_THREADS_PER_BLOCK,
            blocks: DEFAULT_BLOCKS,
            adjust: Adjust::default(),
        }
    }
}

impl HpRdaConfig {
    /// References per launch (N), when the parameters are within bounds.
    pub fn launch_len(&self) -> Result<usize, ReuseError> {
        let bad = |what: &str, v: usize, r: &RangeInclusive<usize>| {
            ReuseError::InvalidOption(format!(
                "hp-rda {what} {v} is outside {}..={}",
                r.start(),
                r.end()
            ))
        };
        for (what, v, r) in [
            ("sub-trace length", self.sub_trace, SUB_TRACE_RANGE),
            (
                "threads per block",
                self.threads_per_block,
                THREADS_PER_BLOCK_RANGE,
            ),
            ("blocks", self.blocks, BLOCKS_RANGE),
        ] {
            if !r.contains(&v) {
                return Err(bad(what, v, &r));
            }
        }
        let n = self.sub_trace * self.threads_per_block * self.blocks;
        if n > MAX_LAUNCH {
            return Err(ReuseError::InvalidOption(format!(
                "hp-rda launch of {n} references (blocks × threads per block × sub-trace) \
                 is more than {MAX_LAUNCH}"
            )));
        }
        Ok(n)
    }
}

/// An item's `access_info` in one sub-trace (or block): distinct other items before its
/// first use and after its last use there.
#[derive(Debug, Clone, Copy)]
struct AccessInfo {
    item: u64,
    first: u64,
    latest: u64,
}

/// Live entries of `live` in positions `lo..hi`.
pub(super) fn count_live(live: &[u64], lo: usize, hi: usize) -> u64 {
    if lo >= hi {
        return 0;
    }
    let (wl, wh) = (lo / 64, (hi - 1) / 64);
    let lo_mask = !0u64 << (lo % 64);
    let hi_mask = !0u64 >> (63 - (hi - 1) % 64);
    if wl == wh {
        return u64::from((live[wl] & lo_mask & hi_mask).count_ones());
    }
    let ends = (live[wl] & lo_mask).count_ones() + (live[wh] & hi_mask).count_ones();
    let mid: u32 = live[wl + 1..wh].iter().map(|w| w.count_ones()).sum();
    u64::from(ends + mid)
}

/// One "CUDA thread": the hash table and local array of its sub-trace, reused.
#[derive(Debug, Default)]
struct ThreadScratch {
    table: TimeTable,
    live: Vec<u64>,
    /// Live entries after each position, filled once the sub-trace is done.
    after: Vec<u64>,
}

impl ThreadScratch {
    /// Analyzes one sub-trace (Figure 5c): records its local reuses in `counts`, appends an
    /// `access_info` per distinct item to `out`, returns the distinct count.
    fn analyze(&mut self, trace: &[u64], counts: &mut Counts, out: &mut Vec<AccessInfo>) -> u64 {
        self.table.clear();
        self.live.clear();
        self.live.resize(trace.len().div_ceil(64), 0);
        let start = out.len();
        let mut distinct = 0u64;
        for (i, &item) in trace.iter().enumerate() {
            match self.table.insert(item, i as u64) {
                Some(t) => {
                    let t = t as usize;
                    counts.record(Some(count_live(&self.live, t + 1, i)));
                    self.live[t / 64] &= !(1u64 << (t % 64));
                }
                None => {
                    out.push(AccessInfo {
                        item,
                        first: distinct,
                        latest: 0,
                    });
                    distinct += 1;
                }
            }
            self.live[i / 64] |= 1u64 << (i % 64);
        }
        self.after.clear();
        self.after.resize(trace.len(), 0);
        let mut seen = 0u64;
        for i in (0..trace.len()).rev() {
            self.after[i] = seen;
            seen += (self.live[i / 64] >> (i % 64)) & 1;
        }
        for info in &mut out[start..] {
            if let Some(last) = self.table.get(info.item) {
                info.latest = self.after[last as usize];
            }
        }
        distinct
    }
}

/// Formula 1 as one subtraction: with `P` the distinct counts summed over the earlier
/// pieces, an item last used in piece `i` stores `P_(i+1) - latest_i`, and its next use,
/// first in piece `j`, is `P_j + first_j - stored` away.
#[derive(Debug, Default)]
struct FormulaOne {
    table: TimeTable,
}

impl FormulaOne {
    /// An item's use in the piece starting at `prefix` and holding `count` distinct items;
    /// returns its distance from its previous piece, or `None` if it had none.
    #[inline]
    fn visit(&mut self, info: &AccessInfo, prefix: u64, count: u64) -> Option<u64> {
        let stored = (prefix + count)
            .wrapping_sub(info.latest)
            .wrapping_add(BIAS);
        self.table
            .insert(info.item, stored)
            .map(|old| (prefix + info.first).wrapping_sub(old.wrapping_sub(BIAS)))
    }

    /// `latest` of an item within all pieces so far (whose counts sum to `prefix`).
    fn latest(&self, item: u64, prefix: u64) -> u64 {
        self.table
            .get(item)
            .map_or(0, |s| prefix.wrapping_sub(s.wrapping_sub(BIAS)))
    }
}

/// A block's result: its items' `access_info`, split by grid-merge partition.
#[derive(Debug)]
struct BlockSummary {
    /// Distinct items of the block (exact).
    count: u64,
    /// Σ of its sub-traces' distinct counts.
    thread_counts: u64,
    parts: Vec<Vec<AccessInfo>>,
}

/// One worker: runs blocks one after another, their threads in order.
#[derive(Debug, Default)]
struct BlockWorker {
    thread: ThreadScratch,
    merge: FormulaOne,
    /// Block items in order of first use, with their block-level `first`.
    order: Vec<(u64, u64)>,
    infos: Vec<AccessInfo>,
    /// Distances inside sub-traces (exact).
    local: Counts,
    /// Distances between the block's sub-traces (formula 1).
    cross: Counts,
}

/// Grid-merge partition of an item: high hash bits, independent of the table's slot bits.
fn partition(item: u64, parts: usize) -> usize {
    let h = item.wrapping_mul(0xD6E8_FEB8_6659_FD93);
    ((h >> 40) % parts as u64) as usize
}

impl BlockWorker {
    fn analyze_block(&mut self, block: &[u64], sub_trace: usize, parts: usize) -> BlockSummary {
        self.merge.table.clear();
        self.order.clear();
        let mut prefix = 0u64;
        for sub in block.chunks(sub_trace) {
            self.infos.clear();
            let count = self.thread.analyze(sub, &mut self.local, &mut self.infos);
            for info in &self.infos {
                match self.merge.visit(info, prefix, count) {
                    Some(d) => self.cross.record(Some(d)),
                    None => self.order.push((info.item, prefix + info.first)),
                }
            }
            prefix += count;
        }
        let mut out = vec![Vec::new(); parts];
        for &(item, first) in &self.order {
            let latest = self.merge.latest(item, prefix);
            out[partition(item, parts)].push(AccessInfo {
                item,
                first,
                latest,
            });
        }
        BlockSummary {
            count: self.order.len() as u64,
            thread_counts: prefix,
            parts: out,
        }
    }
}

/// One partition of the grid-level merge: the items whose hash falls in it.
#[derive(Debug, Default)]
struct GridPart {
    merge: FormulaOne,
    counts: Counts,
}

impl GridPart {
    /// Merges this partition's `access_info` of each block, in trace order; `prefixes[b]`
    /// is the block counts summed before block `b`: exact counts, or with `flat` their
    /// sub-traces' summed counts.
    fn merge(&mut self, blocks: &[BlockSummary], prefixes: &[u64], p: usize, flat: bool) {
        for (block, &prefix) in blocks.iter().zip(prefixes) {
            let count = if flat {
                block.thread_counts
            } else {
                block.count
            };
            for info in &block.parts[p] {
                if let Some(d) = self.merge.visit(info, prefix, count) {
                    self.counts.record(Some(d));
                }
            }
        }
    }
}

/// Streaming HP-RDA: push items in trace order; a launch runs each time a launch's worth
/// of references (after preprocessing) is buffered.
#[derive(Debug)]
pub struct HpRdaAnalyzer {
    config: HpRdaConfig,
    launch_len: usize,
    workers: Vec<BlockWorker>,
    parts: Vec<GridPart>,
    batch: Vec<u64>,
    previous: Option<u64>,
    references: u64,
    repeats: u64,
    /// Block distinct counts summed over every launch so far.
    prefix: u64,
    /// Sub-trace distinct counts summed (the denominator of `ef`, the flat grid's prefix).
    thread_counts: u64,
    limit: Option<u64>,
}

impl HpRdaAnalyzer {
    /// `workers` 0: every core.
    pub fn new(config: HpRdaConfig, workers: usize) -> Result<HpRdaAnalyzer, ReuseError> {
        let launch_len = config.launch_len()?;
        let workers = match workers {
            0 => thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        Ok(HpRdaAnalyzer {
            config,
            launch_len,
            workers: (0..workers).map(|_| BlockWorker::default()).collect(),
            parts: (0..workers).map(|_| GridPart::default()).collect(),
            batch: Vec::new(),
            previous: None,
            references: 0,
            repeats: 0,
            prefix: 0,
            thread_counts: 0,
            limit: None,
        })
    }

    /// Stops with [`ReuseError::TooManyItems`] past `limit` distinct items.
    pub fn with_limit(mut self, limit: u64) -> HpRdaAnalyzer {
        self.limit = Some(limit);
        self
    }

    /// References in trace order; repeats of the reference before are counted at distance
    /// 0 and dropped (the paper's preprocessing).
    pub fn push(&mut self, items: &[u64]) -> Result<(), ReuseError> {
        for &item in items {
            self.references += 1;
            if self.previous == Some(item) {
                self.repeats += 1;
                continue;
            }
            self.previous = Some(item);
            self.batch.push(item);
            if self.batch.len() == self.launch_len {
                self.launch()?;
            }
        }
        Ok(())
    }

    fn distinct(&self) -> u64 {
        self.parts.iter().map(|p| p.merge.table.len() as u64).sum()
    }

    /// Blocks in parallel, then the grid merge in parallel over item partitions.
    fn launch(&mut self) -> Result<(), ReuseError> {
        let (st, nb) = (self.config.sub_trace, self.config.threads_per_block);
        let blocks: Vec<&[u64]> = self.batch.chunks(st * nb).collect();
        let (n_workers, n_parts) = (self.workers.len(), self.parts.len());
        let mut summaries: Vec<(usize, BlockSummary)> = thread::scope(|s| {
            let handles: Vec<_> = self
                .workers
                .iter_mut()
                .enumerate()
                .map(|(w, worker)| {
                    let blocks = &blocks;
                    s.spawn(move || {
                        let mine = blocks.iter().enumerate().skip(w).step_by(n_workers);
                        mine.map(|(i, b)| (i, worker.analyze_block(b, st, n_parts)))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        });
        summaries.sort_unstable_by_key(|(i, _)| *i);
        let summaries: Vec<BlockSummary> = summaries.into_iter().map(|(_, b)| b).collect();
        let flat = self.config.adjust.flat_grid();
        let mut prefixes = Vec::with_capacity(summaries.len());
        for b in &summaries {
            prefixes.push(if flat {
                self.thread_counts
            } else {
                self.prefix
            });
            self.prefix += b.count;
            self.thread_counts += b.thread_counts;
        }
        thread::scope(|s| {
            for (p, part) in self.parts.iter_mut().enumerate() {
                let (summaries, prefixes) = (&summaries, &prefixes);
                s.spawn(move || part.merge(summaries, prefixes, p, flat));
            }
        });
        self.batch.clear();
        check_items(self.distinct() as usize, self.limit, "hp-rda")
    }

    /// Runs the last, partial launch, then adjusts.
    pub fn finish(mut self) -> Result<Histogram, ReuseError> {
        if !self.batch.is_empty() {
            self.launch()?;
        }
        let totals = Totals {
            references: self.references,
            repeats: self.repeats,
            distinct: self.distinct(),
            thread_counts: self.thread_counts,
        };
        let (mut local, mut cross) = (BTreeMap::new(), BTreeMap::new());
        let add = |to: &mut BTreeMap<u64, u64>, c: Counts| {
            for (d, n) in c.into_histogram(0).exact {
                *to.entry(d).or_insert(0) += n;
            }
        };
        for w in self.workers {
            add(&mut local, w.local);
            add(&mut cross, w.cross);
        }
        for p in self.parts {
            add(&mut cross, p.counts);
        }
        Ok(totals.histogram(local, cross, self.config.adjust))
    }
}

/// HP-RDA histogram of a trace of items on `workers` threads (0: every core).
pub fn histogram(
    items: &[u64],
    config: HpRdaConfig,
    workers: usize,
) -> Result<Histogram, ReuseError> {
    let mut a = HpRdaAnalyzer::new(config, workers)?;
    a.push(items)?;
    a.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small(st: usize, nb: usize, adjust: Adjust) -> HpRdaConfig {
        HpRdaConfig {
            sub_trace: st,
            threads_per_block: nb,
            blocks: 4,
            adjust,
        }
    }

    #[test]
    fn count_live_counts_a_range_across_words() {
        let live = [u64::MAX, 0b1010, u64::MAX];
        assert_eq!(count_live(&live, 0, 64), 64);
        assert_eq!(count_live(&live, 60, 68), 4 + 2);
        assert_eq!(count_live(&live, 65, 129), 2 + 1);
        assert_eq!(count_live(&live, 5, 5), 0);
    }

    #[test]
    fn seed_figure_6_summaries() {
        // Figure 6's first sub-trace, "dacbcg": count 5, and its access_info table.
        let t: Vec<u64> = "dacbcg".bytes().map(u64::from).collect();
        let (mut s, mut c, mut out) = (ThreadScratch::default(), Counts::default(), Vec::new());
        assert_eq!(s.analyze(&t, &mut c, &mut out), 5);
        let table: Vec<(u8, u64, u64)> = out
            .iter()
            .map(|i| (i.item as u8, i.first, i.latest))
            .collect();
        let figure = [
            (b'd', 0, 4),
            (b'a', 1, 3),
            (b'c', 2, 1),
            (b'b', 3, 2),
            (b'g', 4, 0),
        ];
        assert_eq!(table, figure);
        assert_eq!(c.into_histogram(0).exact.get(1), Some(1), "c reused over b");
    }

    #[test]
    fn reuses_inside_sub_traces_and_disjoint_pieces_are_exact() {
        // A cycle over 8 items: every piece holds a rotation, no overlap across a reuse.
        let t: Vec<u64> = (0..4096u64).map(|i| i % 8).collect();
        let exact = crate::reuse::exact::histogram(&t).expect("exact");
        for (st, nb) in [(64, 1), (64, 4), (128, 2)] {
            for adjust in [Adjust::None, Adjust::Seed, Adjust::Overlap] {
                let h = histogram(&t, small(st, nb, adjust), 2).expect("hp-rda");
                assert_eq!(h, exact, "st {st} nb {nb}");
            }
        }
    }

    #[test]
    fn repeats_are_distance_zero_and_totals_match_exact() {
        let t = [5u64, 5, 5, 7, 7, 5, 9, 9, 9, 7];
        let h = histogram(&t, small(64, 1, Adjust::Seed), 1).expect("hp-rda");
        assert_eq!(h, crate::reuse::exact::histogram(&t).expect("exact"));
    }

    #[test]
    fn overlapping_sub_traces_over_estimate_without_adjustment() {
        // Items 0..4 in every sub-trace; item 100 reused four sub-traces later.
        let mut t = vec![100u64];
        for _ in 0..4 {
            t.extend((0..4u64).cycle().take(64));
        }
        t.push(100);
        let h = histogram(&t, small(64, 2, Adjust::None), 1).expect("hp-rda");
        // True distance 4; formula 1 sums each sub-trace's 4 items (and the first's tail).
        assert!(h.exact.keys().any(|d| d > 5), "{:?}", h.exact);
        let adjusted = histogram(&t, small(64, 2, Adjust::Seed), 1).expect("hp-rda");
        assert!(
            adjusted.exact.keys().all(|d| d <= 5),
            "{:?}",
            adjusted.exact
        );
        assert_eq!((adjusted.cold, adjusted.references), (5, t.len() as u64));
        // The overlap estimate takes off the items 0..4 counted once per sub-trace: item
        // 100's reuse comes out nearer its true 4 than formula 1's.
        let exact = crate::reuse::exact::histogram(&t).expect("exact");
        let overlap = histogram(&t, small(64, 2, Adjust::Overlap), 1).expect("hp-rda");
        let far = |h: &Histogram| h.exact.iter().map(|&(d, _)| d).max().unwrap_or(0);
        assert!(
            far(&overlap) < far(&h),
            "{:?} vs {:?}",
            overlap.exact,
            h.exact
        );
        assert!(overlap.average_bin_error(&exact) < h.average_bin_error(&exact));
    }

    #[test]
    fn bounds_are_checked() {
        for bad in [
            small(32, 1, Adjust::Seed),
            small(2048, 2048, Adjust::Seed),
            HpRdaConfig {
                blocks: 65535,
                ..HpRdaConfig::default()
            },
        ] {
            assert!(HpRdaAnalyzer::new(bad, 1).is_err(), "{bad:?}");
        }
        assert_eq!(HpRdaConfig::default().launch_len().ok(), Some(0x400_0000));
    }
}
