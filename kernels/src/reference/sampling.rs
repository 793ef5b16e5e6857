//! CPU reference of `memtune_sampling`: the same per-thread LCG streams and the same scope
//! test, so a GPU sum must equal [`pass_sum`] / [`scoped_sum`] exactly.

use std::ops::Range;

use crate::params::{ParamsError, SamplingParams};

/// Multiplier that decorrelates the threads' seeds (2^64 / golden ratio).
const SEED_SPREAD: u64 = 0x9e37_79b9_7f4a_7c15;
/// Knuth's MMIX LCG.
const LCG_MUL: u64 = 6_364_136_223_846_793_005;
const LCG_ADD: u64 = 1_442_695_040_888_963_407;

/// The positions thread `thread` draws in every pass, in order, scope ignored.
pub fn positions(params: &SamplingParams, thread: u64) -> impl Iterator<Item = u64> {
    let mut x = params.seed ^ thread.wrapping_mul(SEED_SPREAD);
    let n_words = u128::from(params.n_words);
    (0..params.reads_per_thread).map(move |_| {
        x = x.wrapping_mul(LCG_MUL).wrapping_add(LCG_ADD);
        // High 64 bits of x * n_words: uniform in [0, n_words), like __umul64hi.
        ((u128::from(x) * n_words) >> 64) as u64
    })
}

/// A value read after `work` rounds of mixing, `v = fmix32(v + k)` for `k` in `0..work`,
/// as `memtune_sampling` does with `memtune_sampling_params::work`.
pub fn worked(mut v: u32, work: u32) -> u32 {
    for k in 0..work {
        v = super::grouping::fmix32(v.wrapping_add(k));
    }
    v
}

/// What one launch of `threads` threads with `params` adds to the result word, for a
/// region whose word `i` holds `word(i)`.
pub fn pass_sum(params: &SamplingParams, threads: u64, word: impl Fn(u64) -> u32 + Sync) -> u64 {
    let scope = params.scope_begin..params.scope_end;
    let sum_of = |threads: std::ops::Range<u64>| {
        threads
            .flat_map(|t| positions(params, t))
            .filter(|pos| scope.contains(pos))
            .fold(0u64, |sum, pos| {
                sum.wrapping_add(u64::from(worked(word(pos), params.work)))
            })
    };
    // A GPU launch draws ~10^8 positions: the probe replays several, so spread each over
    // the host's cores (the sum wraps, so the split does not change it).
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
    let chunk = threads.div_ceil(workers).max(1);
    std::thread::scope(|s| {
        let parts: Vec<_> = (0..threads)
            .step_by(chunk as usize)
            .map(|first| s.spawn(move || sum_of(first..(first + chunk).min(threads))))
            .collect();
        parts
            .into_iter()
            .map(|p| p.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .fold(0u64, u64::wrapping_add)
    })
}

/// The result word after one pass per scope in `scopes`, all adding into it, as a host
/// driving a scoped run does. Equals the unscoped [`pass_sum`] when `scopes` partition
/// `0..n_words`.
pub fn scoped_sum(
    params: &SamplingParams,
    threads: u64,
    scopes: &[Range<u64>],
    word: impl Fn(u64) -> u32 + Sync,
) -> Result<u64, ParamsError> {
    scopes.iter().try_fold(0u64, |sum, scope| {
        let pass = params.with_scope(scope.clone())?;
        Ok(sum.wrapping_add(pass_sum(&pass, threads, &word)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_mixes_each_value_and_zero_work_leaves_it() {
        assert_eq!(worked(12345, 0), 12345);
        assert_eq!(worked(0, 1), 0);
        assert_eq!(worked(0, 2), super::super::grouping::fmix32(1));
        assert_ne!(worked(7, 3), worked(7, 2));
    }

    #[test]
    fn scoped_sums_with_work_add_up_to_the_unscoped_sum() {
        let Ok(p) = SamplingParams::new(1 << 10, 32, 3) else {
            panic!("valid params");
        };
        let p = p.with_work(5);
        let word = |i: u64| (i as u32).wrapping_mul(2_654_435_761);
        let whole = pass_sum(&p, 64, word);
        let scoped = scoped_sum(&p, 64, &[0..300, 300..700, 700..1024], word);
        assert_eq!(scoped, Ok(whole));
        assert_ne!(whole, pass_sum(&p.with_work(0), 64, word));
    }

    #[test]
    fn positions_stay_in_the_region() {
        for n_words in [1, 2, 3, 1000, u64::MAX] {
            let p = SamplingParams::new(n_words, 64, 7);
            assert!(p.is_ok_and(|p| (0..16).all(|t| positions(&p, t).all(|x| x < n_words))));
        }
    }

    #[test]
    fn the_sum_does_not_depend_on_how_threads_are_split() {
        let Ok(p) = SamplingParams::new(1 << 20, 16, 0x5eed) else {
            panic!("valid params rejected")
        };
        let word = |i: u64| (i as u32).wrapping_mul(2_654_435_761);
        // A thread's share is the difference of the sums with and without it.
        let one_by_one = (0..67u64)
            .map(|t| pass_sum(&p, t + 1, word).wrapping_sub(pass_sum(&p, t, word)))
            .fold(0u64, u64::wrapping_add);
        let serial = (0..67u64)
            .flat_map(|t| positions(&p, t))
            .fold(0u64, |s, pos| s.wrapping_add(u64::from(word(pos))));
        assert_eq!(one_by_one, serial);
        assert_eq!(pass_sum(&p, 67, word), serial);
        assert_ne!(serial, 0);
    }

    #[test]
    fn a_constant_region_sums_to_reads_times_the_value() {
        let p = SamplingParams::new(1 << 20, 100, 3);
        assert!(p.is_ok_and(|p| pass_sum(&p, 64, |_| 5) == 64 * 100 * 5));
    }

    #[test]
    fn streams_differ_between_threads_and_seeds() {
        let a = SamplingParams::new(1 << 30, 8, 1);
        let b = SamplingParams::new(1 << 30, 8, 2);
        let (Ok(a), Ok(b)) = (a, b) else {
            panic!("valid params rejected")
        };
        let draw = |p: &SamplingParams, t| positions(p, t).collect::<Vec<_>>();
        assert_ne!(draw(&a, 0), draw(&a, 1));
        assert_ne!(draw(&a, 0), draw(&b, 0));
        assert_eq!(draw(&a, 5), draw(&a, 5));
    }
}
