//! The pure parts of `cargo tune bench`: which sizes to run, which configurations the
//! exhaustive sweep tries, and the checks against the targets. No CUDA here.

pub use super::row::{check_bandwidth, check_not_slower, check_within_best, Check, Measured, Row};
pub use memtune::space::{
    grouping_label, grouping_sweep, grouping_untuned, pass_counts, sampling_label, sampling_sweep,
    sampling_untuned, stencil_candidates, stencil_case, stencil_label, stencil_sweep,
    stencil_untuned, MIN_SCOPE_BYTES, PASSES, STENCIL_BLOCKS,
};
pub use memtune_core::size::format_bytes as bytes;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// The smallest region or table any sweep uses.
pub const MIN_BYTES: u64 = 64 * MIB;
/// "Within 5% of the exhaustive best".
pub const BEST_MARGIN: f64 = 1.05;
/// "At least 80% of the device copy bandwidth".
pub const BANDWIDTH_SHARE: f64 = 0.8;

/// `from`, `2 from`, `4 from`, ... up to `to` (inclusive); empty when `to < from`.
pub fn geometric(from: u64, to: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut s = from.max(1);
    while s <= to {
        out.push(s);
        s = match s.checked_mul(2) {
            Some(n) => n,
            None => break,
        };
    }
    out
}

/// The largest power of two not above `n` (0 for 0).
pub fn floor_pow2(n: u64) -> u64 {
    if n == 0 {
        0
    } else {
        1 << (63 - n.leading_zeros())
    }
}

/// Keeps the first, the last and about every `step`-th size between: what `--quick` runs.
pub fn thin(sizes: &[u64], step: usize) -> Vec<u64> {
    let last = sizes.len().saturating_sub(1);
    sizes
        .iter()
        .enumerate()
        .filter(|(i, _)| *i == 0 || *i == last || i % step.max(1) == 0)
        .map(|(_, &s)| s)
        .collect()
}

/// Sampling regions in device memory: from 64 MiB up to the largest power of two within
/// 80% of the free memory.
pub fn sampling_device_sizes(free_bytes: u64, quick: bool) -> Vec<u64> {
    let sizes = geometric(MIN_BYTES, floor_pow2(free_bytes / 10 * 8));
    if quick {
        thin(&sizes, 4)
    } else {
        sizes
    }
}

/// Rounds of mixing per value read of the compute-heavy sampling variant
/// (`memtune_sampling_params::work`): about 1.5 k integer operations a read, as much time
/// on an H100 as the random reads of a region past the L2.
pub const SAMPLING_HEAVY_WORK: u32 = 256;

/// Extra hash rounds per key of the heavy grouping variant
/// (`memtune_grouping_params::work`): per-key work that every naive pass repeats.
pub const GROUPING_HEAVY_WORK: u32 = 256;

/// The end of a case's name for a kernel variant with `work` (nothing without).
pub fn work_suffix(work: u32) -> String {
    if work == 0 {
        String::new()
    } else {
        format!(", work {work}")
    }
}

/// One sampling row: region bytes, reads per thread and work per read.
pub type SamplingCase = (u64, u32, u32);

/// Device sampling cases: [`sampling_device_sizes`] at [`sampling_reads`], then sizes off
/// powers of two (96 MiB, 384 MiB, 1.5 GiB, 3 GiB) at 1024 reads, at 64 reads (a kernel
/// with far less work per pass) and at 1024 compute-heavy reads ([`SAMPLING_HEAVY_WORK`])
/// (quick: 96 MiB and 1.5 GiB).
pub fn sampling_device_cases(free_bytes: u64, quick: bool) -> Vec<SamplingCase> {
    let reads = sampling_reads(false);
    let mut out: Vec<SamplingCase> = sampling_device_sizes(free_bytes, quick)
        .into_iter()
        .map(|s| (s, reads, 0))
        .collect();
    let odd: &[u64] = if quick {
        &[96 * MIB, 1536 * MIB]
    } else {
        &[96 * MIB, 384 * MIB, 1536 * MIB, 3 * GIB]
    };
    for (r, work) in [(reads, 0), (64, 0), (reads, SAMPLING_HEAVY_WORK)] {
        out.extend(
            odd.iter()
                .filter(|&&s| s <= free_bytes / 10 * 8)
                .map(|&s| (s, r, work)),
        );
    }
    out
}

/// Sampling regions in pinned host memory: from 64 MiB up to min(8 GiB, a quarter of the
/// host's memory) by powers of two, then 3, 12 and 24 GiB where they fit that quarter
/// (quick: 64 MiB, 512 MiB and 2 GiB).
pub fn sampling_pinned_sizes(host_bytes: u64, quick: bool) -> Vec<u64> {
    let cap = if quick { 2 * GIB } else { 8 * GIB };
    let sizes = geometric(MIN_BYTES, floor_pow2((host_bytes / 4).min(cap)));
    if quick {
        return thin(&sizes, 3);
    }
    let odd = [3 * GIB, 12 * GIB, 24 * GIB];
    let mut sizes: Vec<u64> = sizes
        .into_iter()
        .chain(odd.into_iter().filter(|&s| s <= host_bytes / 4))
        .collect();
    sizes.sort_unstable();
    sizes
}

/// Random reads per sampling thread: many for device memory, few for pinned memory, whose
/// zero-copy random reads run at about 0.5 G/s (0.04 G/s beyond 1 GiB) so a pass stays
/// tens of milliseconds.
pub fn sampling_reads(pinned: bool) -> u32 {
    if pinned {
        16
    } else {
        1024
    }
}

/// Grouping tables in device memory: 64 MiB to 4 GiB (quick: 64 MiB, 512 MiB, 2 GiB),
/// those that fit 70% of the free memory.
pub fn grouping_table_sizes(free_bytes: u64, quick: bool) -> Vec<u64> {
    let top = floor_pow2(free_bytes / 10 * 7).min(4 * GIB);
    let sizes = geometric(MIN_BYTES, top);
    if quick {
        thin(&sizes, 3)
    } else {
        sizes
    }
}

/// Grouping tables in pinned host memory, as a table too large for the device would be:
/// 256 MiB, 1 GiB and 2 GiB (quick: 64 MiB; tables are powers of two, the kernels'
/// capacities), those within a quarter of the host's memory.
/// Their inserts are atomics across the host link (an H200 ran them at 0.39 G/s up to
/// 256 MiB and 0.11 G/s at 1 GiB), so they take at most 16 Mi keys; larger tables with
/// `--sizes` (every timed launch also clears and reads back the whole table).
pub fn grouping_pinned_table_sizes(host_bytes: u64, quick: bool) -> Vec<u64> {
    let sizes: &[u64] = if quick {
        &[64 * MIB]
    } else {
        &[256 * MIB, GIB, 2 * GIB]
    };
    sizes
        .iter()
        .copied()
        .filter(|&t| t <= host_bytes / 4)
        .collect()
}

/// Whether a grouping table also runs the heavy variant ([`GROUPING_HEAVY_WORK`]):
/// device tables of 256 MiB to 1 GiB and the 256 MiB pinned table (quick: the 512 MiB
/// device table); every size given to `--sizes` (`picked`).
pub fn grouping_heavy(table: u64, pinned: bool, quick: bool, picked: bool) -> bool {
    match (picked, quick, pinned) {
        (true, _, _) => true,
        (false, true, p) => !p && table == 512 * MIB,
        (false, false, true) => table == 256 * MIB,
        (false, false, false) => (256 * MIB..=GIB).contains(&table),
    }
}

/// Keys of the grouping input (in pinned memory), fixed so that the run stays short.
pub fn grouping_keys(quick: bool) -> u64 {
    if quick {
        16 << 20
    } else {
        64 << 20
    }
}

/// Stencil cases: (dims, repeats), each run in f32 and f64.
pub fn stencil_cases(quick: bool) -> Vec<([u32; 3], u32)> {
    let repeats: &[u32] = if quick { &[1] } else { &[1, 6] };
    let mut out = Vec::new();
    for &n in &[256u32, 512] {
        for &r in repeats {
            out.push(([n, n, n], r));
        }
    }
    out
}

/// Effective stencil bandwidth in GB/s: every cell read once and written once.
pub fn stencil_gb_per_s(cells: u64, elem_bytes: u64, ms: f64) -> f64 {
    2.0 * (cells * elem_bytes) as f64 / (ms * 1e-3) / 1e9
}

/// Device copy bandwidth in GB/s of a `bytes` copy taking `ms` (read plus written).
pub fn copy_gb_per_s(bytes: u64, ms: f64) -> f64 {
    2.0 * bytes as f64 / (ms * 1e-3) / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;
    use memtune::launch::{grouping_scopes, sampling_scopes, stencil_launch};

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
    fn size_lists() {
        assert_eq!(geometric(64, 512), vec![64, 128, 256, 512]);
        assert!(geometric(64, 63).is_empty());
        assert_eq!(floor_pow2(100), 64);
        assert_eq!(floor_pow2(0), 0);
        // An H200 with ~139 GiB free: 64 MiB .. 64 GiB, 11 sizes.
        let free = 139 * GIB;
        let device = sampling_device_sizes(free, false);
        assert_eq!(device.first(), Some(&(64 * MIB)));
        assert_eq!(device.last(), Some(&(64 * GIB)));
        assert_eq!(device.len(), 11);
        let quick = sampling_device_sizes(free, true);
        assert_eq!(quick, vec![64 * MIB, 1 << 30, 16 * GIB, 64 * GIB]);
        // 128 GiB of host memory: pinned by powers of two up to 8 GiB, then 12 and 24 GiB;
        // 16 GiB: up to 4 GiB, 3 GiB among them.
        let pinned = sampling_pinned_sizes(128 * GIB, false);
        assert_eq!(pinned.last(), Some(&(24 * GIB)));
        assert!(pinned.contains(&(8 * GIB)) && pinned.contains(&(3 * GIB)));
        assert!(pinned.windows(2).all(|w| w[0] < w[1]));
        let small = sampling_pinned_sizes(16 * GIB, false);
        assert_eq!(small.last(), Some(&(4 * GIB)));
        assert!(small.contains(&(3 * GIB)));
        // Device cases: every odd size once a variant, the heavy one with work.
        let cases = sampling_device_cases(free, false);
        let heavy = cases.iter().filter(|c| c.2 == SAMPLING_HEAVY_WORK).count();
        assert_eq!(heavy, 4);
        assert_eq!(cases.iter().filter(|c| c.1 == 64).count(), 4);
        assert_eq!(
            sampling_pinned_sizes(128 * GIB, true),
            vec![64 * MIB, 512 * MIB, 2 * GIB]
        );
        assert_eq!(grouping_table_sizes(free, false).len(), 7);
        assert_eq!(grouping_table_sizes(free, false).last(), Some(&(4 * GIB)));
        assert_eq!(
            grouping_table_sizes(free, true),
            vec![64 * MIB, 512 * MIB, 4 * GIB]
        );
        assert_eq!(stencil_cases(true).len(), 2);
        assert_eq!(stencil_cases(false).len(), 4);
    }

    #[test]
    fn pass_counts_keep_scopes_at_least_16_mib() {
        assert_eq!(pass_counts(16 * MIB), vec![1]);
        assert_eq!(pass_counts(64 * MIB), vec![1, 2, 4]);
        assert_eq!(pass_counts(256 * MIB), vec![1, 2, 4, 8, 16]);
        assert_eq!(pass_counts(64 * GIB), PASSES.to_vec());
    }

    #[test]
    fn heavy_grouping_rows_are_a_few_tables() {
        let free = 139 * GIB;
        let heavy: Vec<u64> = grouping_table_sizes(free, false)
            .into_iter()
            .filter(|&t| grouping_heavy(t, false, false, false))
            .collect();
        assert_eq!(heavy, vec![256 * MIB, 512 * MIB, GIB]);
        assert!(grouping_heavy(256 * MIB, true, false, false));
        assert!(!grouping_heavy(GIB, true, false, false));
        assert!(grouping_heavy(12 * GIB, true, false, true));
    }

    #[test]
    fn pinned_tables_stay_within_the_host() {
        assert_eq!(
            grouping_pinned_table_sizes(64 * GIB, false),
            vec![256 * MIB, GIB, 2 * GIB]
        );
        assert_eq!(
            grouping_pinned_table_sizes(6 * GIB, false),
            vec![256 * MIB, GIB]
        );
        assert_eq!(grouping_pinned_table_sizes(64 * GIB, true), vec![64 * MIB]);
        assert_eq!(grouping_pinned_table_sizes(2 * GIB, false), vec![256 * MIB]);
        assert!(grouping_pinned_table_sizes(512 * MIB, false).is_empty());
        assert_eq!(grouping_pinned_table_sizes(512 * MIB, true), vec![64 * MIB]);
    }

    #[test]
    fn sweeps_are_launchable_plans() {
        for region in [64 * MIB, 3 * GIB, 64 * GIB] {
            for plan in sampling_sweep(region) {
                let scopes = sampling_scopes(region / 4, &plan).expect("valid sampling plan");
                assert_eq!(scopes.len() as u32, plan.passes);
            }
        }
        let table = 4 * GIB;
        let sweep = grouping_sweep(table);
        assert_eq!(sweep.len(), 1 + 2 * 5);
        for plan in &sweep {
            grouping_scopes(table / 8, plan).expect("valid grouping plan");
        }
        let stencil = stencil_sweep();
        assert_eq!(stencil.len(), 8 + 8 + 4);
        for plan in stencil.iter().chain([&stencil_untuned()]) {
            for elem in [4, 8] {
                let n = 256u32;
                stencil_launch([n, n, n], (n as usize).pow(3), 1, plan, elem)
                    .expect("launchable stencil block");
            }
        }
        assert_eq!(stencil_untuned().block, [32, 4, 2]);
        assert_eq!(stencil_label(&stencil_untuned()), "plain 32x4x2");
        assert_eq!(grouping_label(&sweep[3]), "naive 8 x 512 MiB");
        assert_eq!(
            sampling_label(&sampling_sweep(GIB)[2]),
            "4 passes x 256 MiB"
        );
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
        s.case = stencil_case([512; 3], "f32", 1);
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
        let gbs = stencil_gb_per_s(512 * 512 * 512, 4, 0.25);
        assert!((gbs - 4294.967296).abs() < 1e-6);
        assert!((copy_gb_per_s(1 << 30, 0.5) - 4294.967296).abs() < 1e-6);
        assert_eq!(bytes(64 * MIB), "64 MiB");
        assert_eq!(bytes(3 * GIB / 2), "1536 MiB");
    }
}
