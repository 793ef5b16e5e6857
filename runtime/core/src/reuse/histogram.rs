//! The result of an analysis: how many references had each reuse distance, in exact and
//! log2 bins, its cumulative form, and the miss-ratio curve of a fully associative LRU
//! cache (a reference hits a cache of `c` items exactly when its distance is below `c`).

use serde::{Deserialize, Serialize};

use super::Distances;

/// Reuse-distance histogram. Invariant: `references == cold + sum of exact counts`.
/// JSON: `references`, `distinct`, `cold`, `histogram` as `[distance, count]` pairs, and
/// `sample` for sampled analyses.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Histogram {
    /// References analyzed (for a sampled analysis, the estimate; see `sample`).
    pub references: u64,
    /// Distinct items referenced.
    pub distinct: u64,
    /// First uses: infinite distance, a miss in every cache.
    pub cold: u64,
    /// Finite distances with the references at each; zero counts are left out.
    #[serde(rename = "histogram")]
    pub exact: Distances,
    /// Present when the histogram is an estimate from a sample of the items.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample: Option<SampleInfo>,
}

/// How a sampled histogram was drawn; its counts and distances are scaled by `1 / rate`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleInfo {
    /// Final sampling rate (the fixed-size variant lowers it as it goes).
    pub rate: f64,
    /// References read from the trace.
    pub trace_references: u64,
    /// References to sampled items, the ones analyzed.
    pub sampled_references: u64,
    /// Sampled items held at the end.
    pub sampled_items: u64,
}

/// Log2 bin: distances `lo..=hi` (bin 0 is distance 0, bin k >= 1 is `2^(k-1)..2^k`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Log2Bin {
    pub lo: u64,
    pub hi: u64,
    pub count: u64,
}

/// The miss ratio at each capacity (in items) where it changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MissRatioCurve {
    /// `(capacity, miss ratio)`, capacities ascending from 0; the ratio holds until the next.
    pub points: Vec<(u64, f64)>,
}

impl MissRatioCurve {
    /// Miss ratio of a cache of `capacity` items.
    pub fn at(&self, capacity: u64) -> f64 {
        let i = self.points.partition_point(|&(c, _)| c <= capacity);
        i.checked_sub(1).map_or(0.0, |i| self.points[i].1)
    }
}

impl Histogram {
    /// An empty histogram (the result of an empty trace).
    pub fn new() -> Histogram {
        Histogram::default()
    }

    /// From per-reference distances (`None` = first use), counting distinct as cold.
    pub fn from_distances(distances: impl IntoIterator<Item = Option<u64>>) -> Histogram {
        let mut counts = Counts::default();
        for d in distances {
            counts.record(d);
        }
        let distinct = counts.cold;
        counts.into_histogram(distinct)
    }

    /// References with a finite distance.
    pub fn reuses(&self) -> u64 {
        self.references - self.cold
    }

    /// Counts in log2 bins; bins up to the largest distance, empty ones included.
    pub fn log2_bins(&self) -> Vec<Log2Bin> {
        let Some((max, _)) = self.exact.last() else {
            return Vec::new();
        };
        let bins = log2_bin(max) + 1;
        let mut out: Vec<Log2Bin> = (0..bins)
            .map(|k| {
                let (lo, hi) = if k == 0 {
                    (0, 0)
                } else {
                    let lo = 1u64 << (k - 1);
                    (lo, lo.checked_mul(2).map_or(u64::MAX, |x| x - 1))
                };
                Log2Bin { lo, hi, count: 0 }
            })
            .collect();
        for &(d, n) in &self.exact {
            out[log2_bin(d)].count += n;
        }
        out
    }

    /// Cumulative form: `(d, fraction of all references with distance <= d)` at each
    /// distance present. It ends at `1 - cold / references`.
    pub fn cdf(&self) -> Vec<(u64, f64)> {
        let total = self.references.max(1) as f64;
        let mut sum = 0u64;
        self.exact
            .iter()
            .map(|&(d, n)| {
                sum += n;
                (d, sum as f64 / total)
            })
            .collect()
    }

    /// Miss ratio of a fully associative LRU cache of `capacity` items:
    /// `(cold + references with distance >= capacity) / references`; 0 for no references.
    pub fn miss_ratio(&self, capacity: u64) -> f64 {
        if self.references == 0 {
            return 0.0;
        }
        let far: u64 = self
            .exact
            .from_distance(capacity)
            .iter()
            .map(|&(_, n)| n)
            .sum();
        (self.cold + far) as f64 / self.references as f64
    }

    /// The whole miss-ratio curve: a point at capacity 0 and at `d + 1` for each distance.
    pub fn miss_ratio_curve(&self) -> MissRatioCurve {
        let total = self.references.max(1) as f64;
        let mut misses = self.references;
        let mut points = Vec::with_capacity(self.exact.len() + 1);
        points.push((0, if self.references == 0 { 0.0 } else { 1.0 }));
        for &(d, n) in &self.exact {
            misses -= n.min(misses);
            points.push((d.saturating_add(1), misses as f64 / total));
        }
        MissRatioCurve { points }
    }

    /// Mean absolute difference of two miss-ratio curves at the given capacities.
    pub fn mean_absolute_error(&self, other: &Histogram, capacities: &[u64]) -> f64 {
        if capacities.is_empty() {
            return 0.0;
        }
        let (a, b) = (self.miss_ratio_curve(), other.miss_ratio_curve());
        let sum: f64 = capacities.iter().map(|&c| (a.at(c) - b.at(c)).abs()).sum();
        sum / capacities.len() as f64
    }

    /// HP-RDA's error rate (Cui et al., §V-C) against `reference`:
    /// `e = Σ_k |a_k - b_k| / H` over `H` log2 bins, `a_k` and `b_k` the shares of each
    /// histogram's references in bin `k`. The bins run from distance 0 to the larger of the
    /// two largest distances; cold references are no bin. 0 when neither has a reuse.
    pub fn average_bin_error(&self, reference: &Histogram) -> f64 {
        let (a, b) = (reference.log2_bins(), self.log2_bins());
        let h = a.len().max(b.len());
        if h == 0 {
            return 0.0;
        }
        let share = |bins: &[Log2Bin], k: usize, total: u64| {
            bins.get(k)
                .map_or(0.0, |b| b.count as f64 / total.max(1) as f64)
        };
        let sum: f64 = (0..h)
            .map(|k| (share(&a, k, reference.references) - share(&b, k, self.references)).abs())
            .sum();
        sum / h as f64
    }
}

/// Log2 bin of a distance: 0 for 0, else `floor(log2 d) + 1`.
pub fn log2_bin(distance: u64) -> usize {
    (u64::BITS - distance.leading_zeros()) as usize
}

/// Dense counter for exact analyzers: distances index a vector (they never exceed the
/// distinct items, so its size is O(distinct)). Distances wait in a short buffer and are
/// counted together: on a large vector each count is a cache miss, and a loop of
/// independent increments overlaps them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Counts {
    dense: Vec<u64>,
    pending: Vec<u64>,
    pub(crate) cold: u64,
    pub(crate) references: u64,
}

/// Distances buffered before counting.
const PENDING: usize = 1024;

impl Counts {
    #[inline]
    pub(crate) fn record(&mut self, distance: Option<u64>) {
        self.references += 1;
        match distance {
            Some(d) => {
                self.pending.push(d);
                if self.pending.len() == PENDING {
                    self.flush();
                }
            }
            None => self.cold += 1,
        }
    }

    /// Counts `n` references at `distance`.
    pub(crate) fn add(&mut self, distance: u64, n: u64) {
        self.grow(distance);
        self.dense[distance as usize] += n;
        self.references += n;
    }

    fn grow(&mut self, distance: u64) {
        let d = distance as usize;
        if d >= self.dense.len() {
            self.dense.resize((d + 1).next_power_of_two(), 0);
        }
    }

    fn flush(&mut self) {
        if let Some(&max) = self.pending.iter().max() {
            self.grow(max);
        }
        for &d in &self.pending {
            self.dense[d as usize] += 1;
        }
        self.pending.clear();
    }

    /// Adds a histogram's finite distances and its references (its cold ones are the
    /// caller's to resolve, so they are not counted).
    pub(crate) fn add_finite(&mut self, h: &Histogram) {
        for &(d, n) in &h.exact {
            self.add(d, n);
        }
    }

    pub(crate) fn into_histogram(mut self, distinct: u64) -> Histogram {
        self.flush();
        let exact = Distances::from_dense(&self.dense);
        Histogram {
            references: self.references,
            distinct,
            cold: self.cold,
            exact,
            sample: None,
        }
    }
}
