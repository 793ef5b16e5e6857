//! Random-sampling throughput against region size (seed 000 section 2.1), and its knee.

use super::backend::{BackendError, MemorySystem};
use super::options::ProbeOptions;
use super::robust::median;
use memtune_core::profile::{MemoryKind, RandomAccessCurve, RandomAccessPoint};

/// The smallest region sampled: below any TLB reach seen so far (16 host pages of 4 KiB).
const MIN_REGION: u64 = 64 * 1024;
const REPEATS: usize = 3;
/// A fall between neighbouring regions must be at least this ratio to be a knee.
const KNEE_RATIO: f64 = 1.1;

/// Measures throughput over regions doubling from 64 KiB (quadrupling in quick mode) up to
/// the footprint bound, three samples each (one in quick mode). `on_region(region, fraction)`
/// follows each region.
pub fn sweep_random_access(
    system: &mut dyn MemorySystem,
    kind: MemoryKind,
    options: &ProbeOptions,
    on_region: &mut dyn FnMut(u64, f64),
) -> Result<RandomAccessCurve, BackendError> {
    let bound = options
        .max_footprint_bytes
        .unwrap_or(u64::MAX)
        .min(system.max_footprint(kind));
    let (factor, repeats) = if options.quick { (4, 1) } else { (2, REPEATS) };
    let mut regions: Vec<u64> = std::iter::successors(Some(MIN_REGION), |r| r.checked_mul(factor))
        .take_while(|&r| r <= bound)
        .collect();
    if regions.last().is_some_and(|&r| r < bound) {
        regions.push(bound);
    }
    let mut points = Vec::new();
    let count = regions.len();
    'regions: for (i, region) in regions.into_iter().enumerate() {
        for _ in 0..repeats {
            match system.random_access(kind, region) {
                Ok(reads_per_second) => points.push(RandomAccessPoint {
                    region_bytes: region,
                    reads_per_second,
                }),
                // The largest regions may not be allocatable; the curve ends before them.
                Err(BackendError::Allocation { .. }) if !points.is_empty() => break 'regions,
                Err(e) => return Err(e),
            }
        }
        on_region(region, (i + 1) as f64 / count as f64);
    }
    let knee_bytes = random_access_knee(&points);
    Ok(RandomAccessCurve { points, knee_bytes })
}

/// The region after which throughput falls the most, if it falls by at least 10% between
/// two neighbouring regions: the reach of the TLB level whose misses cost most (seed 000's
/// "2 GB" cliff on both the K80 and the P100). Repeats are combined by their median.
pub fn random_access_knee(points: &[RandomAccessPoint]) -> Option<u64> {
    let mut sorted = points.to_vec();
    sorted.sort_by_key(|p| p.region_bytes);
    let medians: Vec<(u64, f64)> = sorted
        .chunk_by(|a, b| a.region_bytes == b.region_bytes)
        .map(|g| {
            let ys: Vec<f64> = g.iter().map(|p| p.reads_per_second).collect();
            (g[0].region_bytes, median(&ys))
        })
        .collect();
    medians
        .windows(2)
        .filter(|w| w[1].1 > 0.0)
        .map(|w| (w[0].0, w[0].1 / w[1].1))
        .filter(|&(_, fall)| fall >= KNEE_RATIO)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(region, _)| region)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(values: &[(u64, f64)]) -> Vec<RandomAccessPoint> {
        values
            .iter()
            .map(|&(region_bytes, reads_per_second)| RandomAccessPoint {
                region_bytes,
                reads_per_second,
            })
            .collect()
    }

    #[test]
    fn knee_is_before_the_largest_fall() {
        let p = curve(&[
            (1, 100.0),
            (2, 99.0),
            (4, 85.0),
            (8, 84.0),
            (16, 50.0),
            (32, 40.0),
        ]);
        assert_eq!(random_access_knee(&p), Some(8));
    }

    #[test]
    fn flat_curve_has_no_knee() {
        let p = curve(&[(1, 100.0), (2, 99.0), (4, 101.0), (8, 97.0)]);
        assert_eq!(random_access_knee(&p), None);
    }
}
