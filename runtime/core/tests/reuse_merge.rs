//! Per-chunk summaries merge exactly: any split into 2..16 chunks, and the parallel
//! analyzer with any threads and chunk length, give the sequential histogram.

use memtune_core::reuse::{
    analyze_slice, exact, merge, parallel, summarize, ChunkSummary, Merger, Mode, Options,
    ParallelAnalyzer, ReuseError,
};
use memtune_tests::rng::SplitMix64;

/// A trace with locality at several scales: a moving window, a hot set and random reuse.
fn trace(rng: &mut SplitMix64, len: usize, alphabet: u64) -> Vec<u64> {
    (0..len)
        .map(|i| match rng.below(3) {
            0 => (i as u64 / 4 + rng.below(16)) % alphabet,
            1 => rng.below(alphabet.min(32)),
            _ => rng.below(alphabet),
        })
        .collect()
}

/// Splits `t` at `k - 1` random cut points (chunks may be empty).
fn random_split<'a>(rng: &mut SplitMix64, t: &'a [u64], k: usize) -> Vec<&'a [u64]> {
    let mut cuts: Vec<usize> = (0..k - 1)
        .map(|_| rng.below(t.len() as u64 + 1) as usize)
        .collect();
    cuts.sort_unstable();
    let mut out = Vec::with_capacity(k);
    let mut start = 0;
    for c in cuts {
        out.push(&t[start..c]);
        start = c;
    }
    out.push(&t[start..]);
    out
}

#[test]
fn reuse_merge_of_2_to_16_chunks_equals_whole() {
    let mut rng = SplitMix64(10);
    for case in 0..24 {
        let len = 1 + rng.below(2_500) as usize;
        let alphabet = 1 + rng.below(if case % 2 == 0 { 40 } else { 800 });
        let t = trace(&mut rng, len, alphabet);
        let whole = exact::histogram(&t).unwrap();
        for k in 2..=16 {
            let summaries: Vec<ChunkSummary> = random_split(&mut rng, &t, k)
                .into_iter()
                .map(summarize)
                .collect();
            assert_eq!(merge(&summaries).unwrap(), whole, "case {case}, {k} chunks");
        }
    }
}

#[test]
fn reuse_hand_computed_merge() {
    // "abc | ba | ca": across the cuts, b sees c (1), a sees c, b (2), c sees a, b (2),
    // and the last a sees c (1, resolved inside the third chunk).
    let t: Vec<u64> = "abcbaca".bytes().map(u64::from).collect();
    let parts = [summarize(&t[..3]), summarize(&t[3..5]), summarize(&t[5..])];
    assert_eq!(parts[1].first_uses, vec![u64::from(b'b'), u64::from(b'a')]);
    assert_eq!(parts[1].last_uses, vec![u64::from(b'b'), u64::from(b'a')]);
    let h = merge(&parts).unwrap();
    assert_eq!(h, exact::histogram(&t).unwrap());
    assert_eq!(exact::distances(&t)[3..], [1, 2, 2, 1]);
}

#[test]
fn reuse_summaries_round_trip_through_json() {
    // Chunks analyzed elsewhere (another machine, a map-reduce worker) come back as JSON.
    let mut rng = SplitMix64(11);
    let t = trace(&mut rng, 2_000, 300);
    let mut m = Merger::new();
    for part in t.chunks(300) {
        let json = serde_json::to_string(&summarize(part)).unwrap();
        let back: ChunkSummary = serde_json::from_str(&json).unwrap();
        m.merge(&back).unwrap();
    }
    assert_eq!(m.finish(), exact::histogram(&t).unwrap());
}

#[test]
fn reuse_inconsistent_summary_is_an_error() {
    let mut s = summarize(&[1, 2, 1]);
    s.last_uses.pop();
    let err = Merger::new().merge(&s).unwrap_err();
    assert!(matches!(err, ReuseError::InvalidSummary(_)), "{err}");
}

#[test]
fn reuse_parallel_equals_sequential() {
    let mut rng = SplitMix64(12);
    for case in 0..8 {
        let len = rng.below(12_000) as usize;
        let alphabet = 1 + rng.below(5_000);
        let t = trace(&mut rng, len, alphabet);
        let whole = exact::histogram(&t).unwrap();
        for (threads, chunk_len) in [(1, 0), (2, 999), (3, 4_096), (8, 517), (16, 64)] {
            let h = parallel::histogram(&t, threads, chunk_len).unwrap();
            assert_eq!(
                h, whole,
                "case {case}: {threads} threads, chunks of {chunk_len}"
            );
        }
    }
}

#[test]
fn reuse_parallel_streams_through_analyze() {
    let mut rng = SplitMix64(13);
    let t = trace(&mut rng, 50_000, 2_000);
    let opts = Options {
        threads: 2,
        chunk_len: 3_000,
        granularity: 4,
        ..Options::default()
    };
    let seq = analyze_slice(&t, Mode::ExactCpu, &opts).unwrap();
    let par = analyze_slice(&t, Mode::ExactCpuParallel, &opts).unwrap();
    assert_eq!(par, seq);
    let mut a = ParallelAnalyzer::new(4, 1_000).with_limit(10);
    a.push(&(0..100_000).collect::<Vec<u64>>()).unwrap_err();
}
