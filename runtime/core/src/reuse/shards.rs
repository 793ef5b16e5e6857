//! SHARDS (Waldspurger et al., FAST'15): reuse distances from a spatially hashed sample of
//! the items. An item is sampled when `sample_hash(item) < T`, i.e. at rate `R = T / 2^64`;
//! every reference to a sampled item is analyzed exactly among the sampled items, and its
//! distance and count are scaled by `1 / R`. Fixed rate: memory grows with `R * distinct`.
//! Fixed size: at most `budget` items are held; when one more arrives, the item with the
//! largest hash is evicted and `T` drops to that hash, so the rate falls as the trace goes.
//! Each reference counts `1 / R` at the rate of its time (the paper's rescaling of older
//! counts by `R_new / R_old` is the same estimate up to one global factor), and references
//! the sample lacks against those read go to distance 0 (SHARDS_adj).

use std::collections::{BTreeMap, BinaryHeap};

use super::histogram::SampleInfo;
use super::stack::LruStack;
use super::{Histogram, ReuseError};

/// 2^64: the hash space; thresholds are `u128` so that rate 1 samples every hash.
const SPACE: u128 = 1 << 64;

/// The spatial hash deciding whether an item is sampled (splitmix64's finalizer); public so
/// that other implementations (the GPU's) sample the same items.
#[inline]
pub fn sample_hash(item: u64) -> u64 {
    let mut z = item.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[derive(Debug)]
pub struct ShardsAnalyzer {
    stack: LruStack,
    /// Sample when `hash < threshold`.
    threshold: u128,
    /// `1 / rate`, the weight of one sampled reference now.
    weight: f64,
    /// Fixed-size variant: the most items held.
    budget: Option<usize>,
    /// Fixed-size variant: the held items by hash, largest first out.
    held: BinaryHeap<(u64, u64)>,
    /// Scaled distance -> estimated references.
    weights: BTreeMap<u64, f64>,
    cold: f64,
    trace_references: u64,
    sampled_references: u64,
}

impl ShardsAnalyzer {
    /// Fixed rate in `(0, 1]`.
    pub fn with_rate(rate: f64) -> Result<ShardsAnalyzer, ReuseError> {
        if !(rate > 0.0 && rate <= 1.0) {
            return Err(ReuseError::InvalidOption(format!(
                "sampling rate {rate} is not in (0, 1]; 0.01 samples 1% of the items"
            )));
        }
        let threshold = ((rate * SPACE as f64) as u128).clamp(1, SPACE);
        Ok(ShardsAnalyzer::new(threshold, None))
    }

    /// Fixed size: at most `items` sampled items held (rate 1 until the budget fills).
    pub fn with_budget(items: usize) -> Result<ShardsAnalyzer, ReuseError> {
        if items == 0 {
            return Err(ReuseError::InvalidOption(
                "sampling budget must hold at least 1 item; 65536 is typical".into(),
            ));
        }
        Ok(ShardsAnalyzer::new(SPACE, Some(items)))
    }

    fn new(threshold: u128, budget: Option<usize>) -> ShardsAnalyzer {
        ShardsAnalyzer {
            stack: LruStack::new(),
            threshold,
            weight: SPACE as f64 / threshold as f64,
            budget,
            held: BinaryHeap::new(),
            weights: BTreeMap::new(),
            cold: 0.0,
            trace_references: 0,
            sampled_references: 0,
        }
    }

    /// Current sampling rate.
    pub fn rate(&self) -> f64 {
        self.threshold as f64 / SPACE as f64
    }

    /// References in trace order.
    pub fn push(&mut self, items: &[u64]) {
        self.trace_references += items.len() as u64;
        for &item in items {
            let h = sample_hash(item);
            if u128::from(h) >= self.threshold {
                continue;
            }
            self.sampled_references += 1;
            match self.stack.access(item) {
                Some(d) => {
                    let scaled = (d as f64 * self.weight) as u64;
                    *self.weights.entry(scaled).or_insert(0.0) += self.weight;
                }
                None => {
                    self.cold += self.weight;
                    if let Some(budget) = self.budget {
                        self.held.push((h, item));
                        if self.stack.len() > budget {
                            self.evict();
                        }
                    }
                }
            }
        }
    }

    /// Drops the items of the largest hash and lowers the threshold to it.
    fn evict(&mut self) {
        let Some(&(top, _)) = self.held.peek() else {
            return;
        };
        self.threshold = u128::from(top);
        while let Some(&(h, item)) = self.held.peek() {
            if u128::from(h) < self.threshold {
                break;
            }
            self.held.pop();
            self.stack.remove(item);
        }
        self.weight = SPACE as f64 / self.threshold.max(1) as f64;
    }

    /// Sampled items held now.
    pub fn held(&self) -> usize {
        self.stack.len()
    }

    /// The estimated histogram, counts rounded to whole references.
    pub fn finish(self) -> Histogram {
        let rate = self.rate();
        let cold = self.cold.round() as u64;
        let mut exact: BTreeMap<u64, u64> = self
            .weights
            .iter()
            .map(|(&d, &w)| (d, w.round() as u64))
            .filter(|&(_, n)| n > 0)
            .collect();
        // SHARDS_adj: references the sample lacks (hot items missed; their reuses are short)
        // count at distance 0. An excess is left in the total, so the miss ratios become
        // ratios of weighted counts: on the tests' traces taking it from the shortest
        // distances instead doubled the error.
        let weighted = cold + exact.values().sum::<u64>();
        let lack = self.trace_references.saturating_sub(weighted);
        if lack > 0 {
            *exact.entry(0).or_insert(0) += lack;
        }
        Histogram {
            references: weighted + lack,
            distinct: (self.stack.len() as f64 / rate).round() as u64,
            cold,
            exact: exact.into_iter().collect(),
            sample: Some(SampleInfo {
                rate,
                trace_references: self.trace_references,
                sampled_references: self.sampled_references,
                sampled_items: self.stack.len() as u64,
            }),
        }
    }
}
