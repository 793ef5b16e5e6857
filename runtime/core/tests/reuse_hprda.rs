//! HP-RDA against the exact analysis by the seed's own metric (mean over log2 bins of the
//! difference in share of references): within 1% on a uniform trace whose working set is
//! large against a sub-trace, exact on loops, the adjustment shown to matter both ways.

use memtune_core::reuse::{analyze_slice, exact, Histogram, HpRdaConfig, Mode, Options};
use memtune_tests::rng::SplitMix64;

/// `n` references uniform over `items` (splitmix64 from `seed`).
fn uniform(n: usize, items: u64, seed: u64) -> Vec<u64> {
    let mut rng = SplitMix64(seed);
    (0..n).map(|_| rng.below(items)).collect()
}

fn hp_rda(t: &[u64], config: HpRdaConfig) -> Histogram {
    let options = Options {
        threads: 2,
        ..Options::default()
    };
    analyze_slice(t, Mode::HpRda(config), &options).expect("hp-rda")
}

/// Errors with and without the adjustment, after checking the totals match exact.
fn errors(t: &[u64]) -> (f64, f64) {
    let e = exact::histogram(t).expect("exact");
    let run = |adjust| {
        let h = hp_rda(
            t,
            HpRdaConfig {
                adjust,
                ..HpRdaConfig::default()
            },
        );
        assert_eq!(
            (h.references, h.cold, h.distinct),
            (e.references, e.cold, e.distinct)
        );
        assert_eq!(h.references, h.cold + h.exact.values().sum::<u64>());
        h.average_bin_error(&e)
    };
    (run(true), run(false))
}

#[test]
fn uniform_trace_is_within_one_percent_and_the_adjustment_halves_the_error() {
    // 2^18 references over 10^5 items: 128 sub-traces of 2048, 2 blocks.
    let (adjusted, raw) = errors(&uniform(1 << 18, 100_000, 1));
    assert!(adjusted <= 0.01, "adjusted error {adjusted}");
    assert!(
        raw >= 2.0 * adjusted,
        "no-adjust {raw} vs adjusted {adjusted}"
    );
    assert!(
        raw > 0.01,
        "without adjustment the merge over-estimates: {raw}"
    );
}

#[test]
fn loops_and_strides_are_exact() {
    // Disjoint sub-trace contents across every reuse: formula 1 adds no overlap.
    for (len, stride) in [(5000u64, 1u64), (100_000, 7), (3000, 64)] {
        let t: Vec<u64> = (0..1u64 << 18).map(|i| (i % len) * stride).collect();
        let (adjusted, raw) = errors(&t);
        assert_eq!((adjusted, raw), (0.0, 0.0), "loop {len} stride {stride}");
    }
}

#[test]
fn on_a_long_trace_of_a_small_working_set_the_adjustment_hurts() {
    // ef = M / Σ count shrinks as the trace grows against M, so formula 2 moves every
    // over-estimate above M down to a small distance: the paper's model, as written.
    let (adjusted, raw) = errors(&uniform(1 << 18, 10_000, 3));
    assert!(adjusted > raw, "adjusted {adjusted} vs no-adjust {raw}");
}

#[test]
fn launch_size_does_not_change_the_result() {
    // Launches merge into the same grid-level table, in trace order.
    let t = uniform(3 << 16, 50_000, 4);
    let one = HpRdaConfig {
        blocks: 1,
        threads_per_block: 8,
        ..HpRdaConfig::default()
    };
    let many = HpRdaConfig { blocks: 64, ..one };
    assert_eq!(hp_rda(&t, one), hp_rda(&t, many));
}

#[test]
fn the_seed_metric_averages_share_differences_over_log2_bins() {
    let e = Histogram::from_distances([None, None, Some(0), Some(1)]);
    assert_eq!(e.average_bin_error(&e), 0.0);
    // One of four references moved from bin 1 (distance 1) to bin 2 (distance 2..3):
    // |0.25| in two of three bins.
    let moved = Histogram::from_distances([None, None, Some(0), Some(2)]);
    assert!((moved.average_bin_error(&e) - 0.5 / 3.0).abs() < 1e-12);
    assert_eq!(Histogram::new().average_bin_error(&Histogram::new()), 0.0);
}
