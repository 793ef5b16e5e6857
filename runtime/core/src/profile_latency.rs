//! The distribution of main-memory load latencies (`caches.dram_latency_distribution`):
//! one thread follows a randomly ordered pointer chain over a large device array, timing
//! each dependent load on its own, as mt4g's main-memory latency benchmark does.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Percentiles and mean of individually timed loads of a random chase past every cache.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyDistribution {
    /// Bytes the chain spans.
    pub footprint_bytes: u64,
    /// Bytes between nodes of the chain (the chain visits the nodes in a random order).
    pub stride_bytes: u64,
    /// Loads timed, each on its own.
    pub samples: u32,
    pub mean_cycles: f64,
    /// Population standard deviation of the samples.
    pub stdev_cycles: f64,
    /// Nearest-rank percentiles.
    pub p50_cycles: f64,
    pub p95_cycles: f64,
    pub p99_cycles: f64,
}

impl LatencyDistribution {
    /// The distribution of `cycles`, one per timed load; `None` when there is none.
    pub fn from_samples(
        footprint_bytes: u64,
        stride_bytes: u64,
        cycles: &[u64],
    ) -> Option<LatencyDistribution> {
        if cycles.is_empty() {
            return None;
        }
        let mut sorted = cycles.to_vec();
        sorted.sort_unstable();
        let n = sorted.len() as f64;
        let mean = sorted.iter().map(|&c| c as f64).sum::<f64>() / n;
        let variance = sorted
            .iter()
            .map(|&c| (c as f64 - mean).powi(2))
            .sum::<f64>()
            / n;
        Some(LatencyDistribution {
            footprint_bytes,
            stride_bytes,
            samples: u32::try_from(sorted.len()).unwrap_or(u32::MAX),
            mean_cycles: mean,
            stdev_cycles: variance.sqrt(),
            p50_cycles: nearest_rank(&sorted, 0.50),
            p95_cycles: nearest_rank(&sorted, 0.95),
            p99_cycles: nearest_rank(&sorted, 0.99),
        })
    }
}

/// The nearest-rank `q`-quantile of ascending, non-empty `sorted` ([`crate::stats`]).
fn nearest_rank(sorted: &[u64], q: f64) -> f64 {
    crate::stats::nearest_rank(sorted, q).map_or(f64::NAN, |v| v as f64)
}

impl fmt::Display for LatencyDistribution {
    /// `random chase over 1 GiB at 1 KiB stride (2048 loads): p50 864, p95 1020, p99 1100
    /// cycles, mean 880`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "random chase over {} at {} stride ({} loads): p50 {:.0}, p95 {:.0}, p99 {:.0} cycles, mean {:.0}",
            crate::human::bytes(self.footprint_bytes),
            crate::human::bytes(self.stride_bytes),
            self.samples,
            self.p50_cycles,
            self.p95_cycles,
            self.p99_cycles,
            self.mean_cycles
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        // 1..=100 in a scrambled order: the q-quantile is 100 q.
        let cycles: Vec<u64> = (0..100u64).map(|i| (i * 37) % 100 + 1).collect();
        let d = LatencyDistribution::from_samples(1 << 30, 1 << 10, &cycles).expect("samples");
        assert_eq!(d.samples, 100);
        assert_eq!(d.p50_cycles, 50.0);
        assert_eq!(d.p95_cycles, 95.0);
        assert_eq!(d.p99_cycles, 99.0);
        assert_eq!(d.mean_cycles, 50.5);
        assert!((d.stdev_cycles - 833.25f64.sqrt()).abs() < 1e-9, "{d:?}");
    }

    #[test]
    fn few_samples_and_outliers() {
        let one = LatencyDistribution::from_samples(4096, 1024, &[700]).expect("one sample");
        assert_eq!(
            (one.p50_cycles, one.p99_cycles, one.stdev_cycles),
            (700.0, 700.0, 0.0)
        );
        // One slow load in 2048 moves the mean and p99 no further than it should.
        let mut cycles = vec![800u64; 2047];
        cycles.push(80_000);
        let d = LatencyDistribution::from_samples(1 << 30, 1024, &cycles).expect("samples");
        assert_eq!(
            (d.p50_cycles, d.p95_cycles, d.p99_cycles),
            (800.0, 800.0, 800.0)
        );
        assert!(d.mean_cycles > 800.0 && d.mean_cycles < 900.0, "{d:?}");
        assert_eq!(LatencyDistribution::from_samples(1, 1, &[]), None);
    }

    #[test]
    fn reads_as_one_line() {
        let d = LatencyDistribution {
            footprint_bytes: 1 << 30,
            stride_bytes: 1 << 10,
            samples: 2048,
            mean_cycles: 880.4,
            stdev_cycles: 60.0,
            p50_cycles: 864.0,
            p95_cycles: 1020.0,
            p99_cycles: 1100.0,
        };
        assert_eq!(
            d.to_string(),
            "random chase over 1 GiB at 1 KiB stride (2048 loads): p50 864, p95 1020, p99 1100 cycles, mean 880"
        );
    }
}
