//! The sampling reference: one pass per TLB scope adds up to exactly the unscoped sum.

use memtune_kernels::params::{scopes, SamplingParams};
use memtune_kernels::random_access::word_hash;
use memtune_kernels::reference::sampling::{pass_sum, scoped_sum};

/// (n_words, threads, reads_per_thread, seed): tiny, odd, power-of-two and prime sizes.
const RUNS: &[(u64, u64, u32, u64)] = &[
    (1, 32, 5, 0),
    (7, 32, 10, 3),
    (1000, 64, 50, 1),
    (4097, 96, 33, 0xdead_beef),
    (1 << 20, 128, 64, 7),
];

fn params(&(n_words, _, reads, seed): &(u64, u64, u32, u64)) -> SamplingParams {
    SamplingParams::new(n_words, reads, seed).unwrap_or_else(|e| panic!("{e}"))
}

/// Scope lengths giving 1, 2, 3, 5, 7, 16 and 33 scopes, and one longer than the region.
fn scope_lens(n_words: u64) -> Vec<u64> {
    let mut lens: Vec<u64> = [1, 2, 3, 5, 7, 16, 33]
        .iter()
        .map(|&parts| n_words.div_ceil(parts))
        .collect();
    lens.push(n_words + 1);
    lens
}

#[test]
fn scoped_sum_equals_unscoped_sum() {
    let mut non_divisible = 0;
    for run in RUNS {
        let p = params(run);
        let threads = run.1;
        let unscoped = pass_sum(&p, threads, word_hash);
        for len in scope_lens(p.n_words) {
            non_divisible += usize::from(p.n_words % len != 0);
            let parts = scopes(p.n_words, len).unwrap_or_else(|e| panic!("{e}"));
            let scoped = scoped_sum(&p, threads, &parts, word_hash);
            assert_eq!(scoped, Ok(unscoped), "{run:?}, scope length {len}");
        }
    }
    assert!(
        non_divisible > 5,
        "too few non-divisible scope sizes exercised"
    );
}

#[test]
fn every_draw_is_read_in_exactly_one_pass() {
    for run in RUNS {
        let p = params(run);
        let (threads, reads) = (run.1, u64::from(run.2));
        for len in scope_lens(p.n_words) {
            let parts = scopes(p.n_words, len).unwrap_or_else(|e| panic!("{e}"));
            // Counting reads: every word holds 1.
            assert_eq!(
                scoped_sum(&p, threads, &parts, |_| 1),
                Ok(threads * reads),
                "{run:?}, scope length {len}"
            );
        }
    }
}

#[test]
fn a_pass_reads_only_inside_its_scope() {
    let p = params(&RUNS[3]);
    let scope = 1000..2000;
    let Ok(pass) = p.with_scope(scope.clone()) else {
        panic!("valid scope rejected")
    };
    // Words outside the scope hold values that would show up in the sum.
    let sum = pass_sum(&pass, 96, |i| u32::from(!scope.contains(&i)) << 20);
    assert_eq!(sum, 0);
}
