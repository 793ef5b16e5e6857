//! The pure parts of `cargo tune bench`: the rows' checks against the targets and the
//! bandwidths. Which sizes run and which configurations the sweeps try is each workload's
//! (`memtune::workload`). No CUDA here.

pub use super::row::{check_bandwidth, check_not_slower, check_within_best, Check, Measured, Row};
pub use memtune_core::size::format_bytes as bytes;

/// "Within 5% of the exhaustive best".
pub const BEST_MARGIN: f64 = 1.05;
/// "At least 80% of the device copy bandwidth".
pub const BANDWIDTH_SHARE: f64 = 0.8;

/// Bandwidth in GB/s of `bytes` moved (read plus written) in `ms`.
pub fn gb_per_s(bytes: u64, ms: f64) -> f64 {
    bytes as f64 / (ms * 1e-3) / 1e9
}

/// Device copy bandwidth in GB/s of a `bytes` copy taking `ms` (read plus written).
pub fn copy_gb_per_s(bytes: u64, ms: f64) -> f64 {
    gb_per_s(2 * bytes, ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(config: &str, median_ms: f64, spread_ms: f64, result: &str) -> Measured {
        Measured {
            config: config.into(),
            median_ms,
            spread_ms,
            runs_ms: vec![median_ms; 5],
            round_medians_ms: vec![median_ms],
            result: result.into(),
        }
    }

    #[test]
    fn row_picks_the_best_and_checks_results() {
        let row = Row::new(
            "x".into(),
            1,
            m("1 pass", 10.0, 0.1, "42"),
            m("4 passes", 5.0, 0.1, "42"),
            vec![m("1 pass", 10.0, 0.1, "42"), m("8 passes", 4.9, 0.1, "42")],
            vec![],
        );
        assert_eq!(row.best.config, "8 passes");
        assert!(row.results_match);
        assert!((row.tuned_over_best - 5.0 / 4.9).abs() < 1e-12);
        assert!((row.untuned_over_tuned - 2.0).abs() < 1e-12);
        assert!(!row.tuned_slower_than_untuned());
        let bad = Row::new(
            "y".into(),
            1,
            m("1 pass", 10.0, 0.1, "42"),
            m("4 passes", 10.5, 0.2, "41"),
            vec![],
            vec![],
        );
        assert!(!bad.results_match);
        assert!(bad.tuned_slower_than_untuned());
        assert_eq!(bad.best.config, "1 pass");
    }

    #[test]
    fn target_checks() {
        let good = Row::new(
            "a".into(),
            1,
            m("u", 10.0, 0.5, "1"),
            m("t", 10.3, 0.5, "1"),
            vec![m("s", 10.0, 0.1, "1")],
            vec![],
        );
        // 3% off the best, within noise of untuned.
        assert!(check_within_best(std::slice::from_ref(&good)).met);
        assert!(check_not_slower(std::slice::from_ref(&good)).met);
        let far = Row::new(
            "b".into(),
            1,
            m("u", 10.0, 0.1, "1"),
            m("t", 11.0, 0.1, "1"),
            vec![],
            vec![],
        );
        let c = check_within_best(&[good.clone(), far.clone()]);
        assert!(!c.met);
        assert_eq!(c.misses.len(), 1);
        assert!(c.misses[0].contains("10.0% slower"), "{}", c.misses[0]);
        assert!(!check_not_slower(&[far]).met);
        assert!(!check_within_best(&[]).met);

        let mut s = good;
        s.case = "512x512x512 f32 x1".into();
        s.tuned_gb_per_s = Some(3900.0);
        assert!(check_bandwidth(std::slice::from_ref(&s), "512x512x512 f32 x1", 4500.0).met);
        let low = check_bandwidth(std::slice::from_ref(&s), "512x512x512 f32 x1", 5000.0);
        assert!(!low.met);
        assert!(low.misses[0].contains("2.0% short"), "{}", low.misses[0]);
        assert!(!check_bandwidth(&[], "512x512x512 f32 x1", 1.0).met);
    }

    #[test]
    fn bandwidths() {
        // 512^3 fp32 in 0.25 ms: 2 x 512 MiB / 0.25 ms.
        let gbs = gb_per_s(2 * 512 * 512 * 512 * 4, 0.25);
        assert!((gbs - 4294.967296).abs() < 1e-6);
        assert!((copy_gb_per_s(1 << 30, 0.5) - 4294.967296).abs() < 1e-6);
        assert_eq!(bytes(64 << 20), "64 MiB");
        assert_eq!(bytes(3 << 29), "1536 MiB");
    }
}
