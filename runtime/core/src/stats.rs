//! Order statistics of measurements, one definition each, shared by the GPU timers, the
//! probe, the autotuner, the benches and the profile's latency distribution.
//!
//! - [`median`]: the middle value, the mean of the two middle ones for an even count.
//! - [`quantile`]: the value at rank `round(q (n - 1))` of the sorted values, so that
//!   `quantile(v, 0.5)` is the upper middle for an even count and `q = 0.2` is the fastest
//!   of up to three timings, then the second: what the autotuner and the event timers read
//!   from a handful of runs.
//! - [`nearest_rank`]: the textbook percentile of a large sample, the smallest value with at
//!   least `q` of the samples at or below it (`p99` of 2048 loads).
//!
//! Non-finite values are left out by [`median`] and [`quantile`].

/// The finite `values` sorted ascending.
fn sorted_finite(values: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// The median of the finite `values`; `None` when there are none.
pub fn median(values: &[f64]) -> Option<f64> {
    let v = sorted_finite(values);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// The finite value at rank `round(q (n - 1))` of `values` sorted ascending (`q` clamped to
/// 0..=1); `None` when there are none.
pub fn quantile(values: &[f64], q: f64) -> Option<f64> {
    let v = sorted_finite(values);
    let last = v.len().checked_sub(1)?;
    let q = if q.is_nan() { 0.5 } else { q.clamp(0.0, 1.0) };
    v.get(((q * last as f64).round() as usize).min(last))
        .copied()
}

/// The nearest-rank `q`-quantile of ascending `sorted`: the smallest value with at least
/// `q` of the samples at or below it; `None` when empty.
pub fn nearest_rank<T: Copy>(sorted: &[T], q: f64) -> Option<T> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let rank = (q.clamp(0.0, 1.0) * n as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, n) - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_of_odd_and_even_counts_skip_non_finite_values() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[f64::NAN, 5.0, f64::INFINITY]), Some(5.0));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn quantiles_round_the_rank() {
        let runs = [5.0, 1.0, 4.0, 2.0, 3.0];
        assert_eq!(quantile(&runs, 0.5), Some(3.0));
        assert_eq!(quantile(&runs, 0.2), Some(2.0));
        assert_eq!(quantile(&runs, 0.8), Some(4.0));
        // The fastest of three, the upper middle of four.
        assert_eq!(quantile(&[3.0, 1.0, 2.0], 0.2), Some(1.0));
        assert_eq!(quantile(&[4.0, 1.0, 3.0, 2.0], 0.5), Some(3.0));
        assert_eq!(quantile(&[], 0.5), None);
        assert_eq!(quantile(&[1.0, 2.0], 7.0), Some(2.0));
    }

    #[test]
    fn nearest_rank_is_the_textbook_percentile() {
        let s: Vec<u64> = (1..=100).collect();
        assert_eq!(nearest_rank(&s, 0.50), Some(50));
        assert_eq!(nearest_rank(&s, 0.95), Some(95));
        assert_eq!(nearest_rank(&s, 0.99), Some(99));
        assert_eq!(nearest_rank(&s, 0.0), Some(1));
        assert_eq!(nearest_rank(&[7u64], 0.99), Some(7));
        assert_eq!(nearest_rank::<u64>(&[], 0.5), None);
    }
}
