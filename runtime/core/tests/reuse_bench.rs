//! Throughput of the CPU modes (ignored: run in release):
//! `cargo test --release -p memtune-core --test reuse_bench -- --ignored --nocapture`.
//! `REUSE_BENCH_N` references over `REUSE_BENCH_D` distinct items (default 2e7 over 2e6);
//! `REUSE_BENCH_PAR=0` times the sequential analysis alone.

use std::time::Instant;

use memtune_core::reuse::{parallel, ExactAnalyzer, ShardsAnalyzer};
use memtune_tests::rng::SplitMix64;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .map_or(default, |v| v as u64)
}

/// A splitmix64 hash of `i`: the first output of the generator seeded with `i`.
fn mix(i: u64) -> u64 {
    SplitMix64(i).next_u64()
}

/// Uniform over `d` items (no locality: the hardest case for caches and for the merge),
/// every item used once first so that all `d` are distinct.
fn uniform(n: u64, d: u64) -> Vec<u64> {
    (0..n)
        .map(|i| if i < d { i } else { mix(i) % d })
        .map(|item| item * 64 + 0x7f00_0000_0000)
        .collect()
}

/// Locality: 95% of references within a working set of 65536 items that slides one item
/// every 64 references, 5% uniform over all `d`.
fn local(n: u64, d: u64) -> Vec<u64> {
    (0..n)
        .map(|i| {
            let r = mix(i);
            let item = if i < d {
                i
            } else if r % 20 != 0 {
                (i / 64 + (r >> 8) % 65_536) % d
            } else {
                (r >> 20) % d
            };
            item * 64
        })
        .collect()
}

fn rate(n: usize, secs: f64) -> String {
    format!("{:.2} M refs/s ({secs:.2} s)", n as f64 / secs / 1e6)
}

/// This thread's time on a CPU (Linux), for timings on a shared machine.
fn thread_cpu_secs() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    Some(s.split_whitespace().next()?.parse::<f64>().ok()? / 1e9)
}

#[test]
#[ignore]
fn reuse_bench() {
    let n = env("REUSE_BENCH_N", 20_000_000);
    let d = env("REUSE_BENCH_D", 2_000_000);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    for (name, t) in [("uniform", uniform(n, d)), ("local", local(n, d))] {
        let start = Instant::now();
        let cpu = thread_cpu_secs();
        let mut a = ExactAnalyzer::new();
        a.push(&t).unwrap();
        let seq = a.finish();
        let s_seq = start.elapsed().as_secs_f64();
        let on_cpu = thread_cpu_secs().zip(cpu).map_or(s_seq, |(b, a)| b - a);
        eprintln!(
            "{name}: {n} refs, {} distinct: exact-cpu 1 thread {}; on CPU {}",
            seq.distinct,
            rate(t.len(), s_seq),
            rate(t.len(), on_cpu)
        );
        if env("REUSE_BENCH_PAR", 1) == 0 {
            continue;
        }
        let start = Instant::now();
        let par = parallel::histogram(&t, 0, 0).unwrap();
        let s_par = start.elapsed().as_secs_f64();
        assert_eq!(par, seq);
        eprintln!(
            "{name}: exact-cpu-parallel {threads} threads {} (x{:.2})",
            rate(t.len(), s_par),
            s_seq / s_par
        );
        let start = Instant::now();
        let mut s = ShardsAnalyzer::with_rate(0.01).unwrap();
        s.push(&t);
        let h = s.finish();
        let s_sh = start.elapsed().as_secs_f64();
        let caps: Vec<u64> = (1..=100).map(|k| (seq.distinct * k / 100).max(1)).collect();
        eprintln!(
            "{name}: sampled 1% {}, mae {:.4}",
            rate(t.len(), s_sh),
            h.mean_absolute_error(&seq, &caps)
        );
    }
}
