//! The CPU model of `kernels/gather.cu`: the same data, streams, arithmetic and
//! fixed-point sums, so a GPU result can be checked bit for bit.

use std::ops::Range;

use crate::Variant;

/// Fixed-point scale of one read's result: `y * 2^20`, truncated.
pub const FIXED_ONE: f32 = 1_048_576.0;

/// The data of word `i` (what `user_gather_fill` writes): a float in [1, 2), never 0.
pub fn value(i: u64) -> f32 {
    let mut x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x ^= x >> 32;
    x = x.wrapping_mul(0xd6e8_feb8_6659_fd93);
    x ^= x >> 32;
    let h = x as u32;
    f32::from_bits(0x3f80_0000 | (h >> 9))
}

/// One read's contribution: `work` FMA rounds on the value, in fixed point.
pub fn contribution(v: f32, work: u32) -> u64 {
    let mut y = v.mul_add(0.5, 0.25);
    for _ in 0..work {
        y = y.mul_add(0.75, 0.375);
    }
    // As CUDA's float -> unsigned long long conversion: truncation (y is positive).
    (y * FIXED_ONE) as u64
}

/// The first state of thread `t`'s stream.
pub fn thread_state(seed: u64, t: u64) -> u64 {
    seed ^ t.wrapping_mul(0xd1b5_4a32_d192_ed03)
}

/// The next draw of a splitmix64 stream.
pub fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A draw as a position in `[0, n_words)`: the high 64 bits of `z * n_words`.
pub fn position(z: u64, n_words: u64) -> u64 {
    ((u128::from(z) * u128::from(n_words)) >> 64) as u64
}

/// The sum one pass over `scope` adds (the kernel's `*sum` after that pass alone), for a
/// grid of `threads` threads.
pub fn pass_sum(threads: u64, n_words: u64, scope: Range<u64>, seed: u64, variant: Variant) -> u64 {
    let mut sum = 0u64;
    for t in 0..threads {
        let mut s = thread_state(seed, t);
        for _ in 0..variant.reads {
            let pos = position(next(&mut s), n_words);
            if scope.contains(&pos) {
                sum = sum.wrapping_add(contribution(value(pos), variant.work));
            }
        }
    }
    sum
}

/// The sum of one pass over the whole region: the untuned launch.
pub fn unscoped_sum(threads: u64, n_words: u64, seed: u64, variant: Variant) -> u64 {
    pass_sum(threads, n_words, 0..n_words, seed, variant)
}

/// The sum of every pass over `scopes`.
pub fn plan_sum(
    threads: u64,
    n_words: u64,
    scopes: &[Range<u64>],
    seed: u64,
    variant: Variant,
) -> u64 {
    scopes.iter().fold(0u64, |acc, s| {
        acc.wrapping_add(pass_sum(threads, n_words, s.clone(), seed, variant))
    })
}

/// How many times each position is read over `scopes`: the kernel reads every drawn
/// position exactly once when the scopes tile the region.
pub fn read_counts(
    threads: u64,
    n_words: u64,
    scopes: &[Range<u64>],
    seed: u64,
    reads: u32,
) -> Vec<u32> {
    let mut counts = vec![0u32; n_words as usize];
    for scope in scopes {
        for t in 0..threads {
            let mut s = thread_state(seed, t);
            for _ in 0..reads {
                let pos = position(next(&mut s), n_words);
                if scope.contains(&pos) {
                    counts[pos as usize] += 1;
                }
            }
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;
    use memtune::core::plan::SamplingPlan;
    use memtune::launch::sampling_scopes;

    fn plan(scope_bytes: u64, passes: u32) -> SamplingPlan {
        SamplingPlan {
            scope_bytes,
            passes,
            predicted_speedup: 1.0,
            reasons: Vec::new(),
        }
    }

    #[test]
    fn values_are_nonzero_and_exact() {
        for i in [0, 1, 2, 1000, u64::MAX] {
            let v = value(i);
            assert!((1.0..2.0).contains(&v), "{i}: {v}");
        }
        // Not a constant: the data differs from word to word.
        let distinct: std::collections::HashSet<u32> =
            (0..1000).map(|i| value(i).to_bits()).collect();
        assert!(distinct.len() > 990);
    }

    #[test]
    fn contributions_stay_in_range() {
        assert_eq!(contribution(1.0, 0), 786_432); // 0.75 * 2^20
        assert_eq!(contribution(1.5, 0), 1_048_576);
        for work in [0, 1, 7, 32, 64] {
            for v in [1.0f32, 1.25, 1.999_999_9] {
                let c = contribution(v, work);
                assert!((786_432..1_572_864).contains(&c), "{v} {work}: {c}");
            }
        }
        // Many rounds converge towards 1.5.
        assert!(contribution(1.0, 64) > 1_572_000);
    }

    #[test]
    fn positions_cover_the_region() {
        let n = 10;
        let mut s = thread_state(7, 3);
        let mut seen = [false; 10];
        for _ in 0..1000 {
            let p = position(next(&mut s), n);
            assert!(p < n);
            seen[p as usize] = true;
        }
        assert!(seen.iter().all(|&x| x));
    }

    /// The kernel's promise: the passes of any split add up to the one-pass sum.
    #[test]
    fn passes_add_up_to_the_unscoped_sum() {
        let n_words = 1000;
        let threads = 96;
        for variant in [
            Variant { reads: 50, work: 0 },
            Variant { reads: 17, work: 5 },
        ] {
            let one = unscoped_sum(threads, n_words, 1, variant);
            assert!(one > 0);
            for (scope_bytes, passes) in [(2000, 2), (1336, 3), (400, 10), (4, 1000), (3000, 2)] {
                let scopes = sampling_scopes(n_words, &plan(scope_bytes, passes))
                    .unwrap_or_else(|e| panic!("{scope_bytes} x {passes}: {e}"));
                let sum = plan_sum(threads, n_words, &scopes, 1, variant);
                assert_eq!(
                    sum, one,
                    "{variant:?}: {passes} passes of {scope_bytes} bytes"
                );
            }
            // Another seed draws other positions.
            assert_ne!(unscoped_sum(threads, n_words, 2, variant), one);
        }
    }

    #[test]
    fn every_drawn_position_is_read_once() {
        let (n_words, threads, reads) = (500, 32, 40);
        let one = read_counts(
            threads,
            n_words,
            std::slice::from_ref(&(0..n_words)),
            9,
            reads,
        );
        let scopes = sampling_scopes(n_words, &plan(4 * 167, 3)).expect("3 scopes");
        assert_eq!(scopes.len(), 3);
        assert_eq!(read_counts(threads, n_words, &scopes, 9, reads), one);
        let total: u64 = one.iter().map(|&c| u64::from(c)).sum();
        assert_eq!(total, threads * u64::from(reads));
    }
}
