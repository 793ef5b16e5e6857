//! Random-sampling throughput against region size (seed 000 section 2.1), and its knee.

use super::backend::{BackendError, MemorySystem};
use super::options::ProbeOptions;
use super::robust::median;
use memtune_core::profile::{MemoryKind, RandomAccessCurve, RandomAccessPoint};

/// The smallest region sampled: below any TLB reach seen so far (16 host pages of 4 KiB).
const MIN_REGION: u64 = 64 * 1024;
/// A fall between neighbouring regions must be at least this ratio to be a knee.
const KNEE_RATIO: f64 = 1.1;
/// The draw cost is measured over the curve's largest region up to this: on an H200 the
/// scopes that pay are 16-128 MiB, so a draw is weighed against reads in that range.
const DRAW_REGION: u64 = 256 << 20;
/// The largest managed region sampled. Once resident, managed memory reads as device
/// memory does, and every GiB the sweep first touches is migrated page by page, the
/// probe's slowest step for large regions (docs/calibration.md); planners read the curve as
/// flat past its last point.
const MANAGED_REGION_CAP: u64 = 8 << 30;
/// Samples of a region that may mislead (see `sweep_random_access`).
const RECHECK_REPEATS: usize = 3;

/// Measures throughput over regions doubling from 64 KiB (quadrupling in quick mode) up to
/// the footprint bound (managed memory: 8 GiB at most), one sample each (a run already
/// spans many reads), then two more where one slow run could mislead the knee. `on_region(region, fraction)` follows each
/// region.
pub fn sweep_random_access(
    system: &mut dyn MemorySystem,
    kind: MemoryKind,
    options: &ProbeOptions,
    on_region: &mut dyn FnMut(u64, f64),
) -> Result<RandomAccessCurve, BackendError> {
    let cap = match kind {
        MemoryKind::Managed => MANAGED_REGION_CAP,
        MemoryKind::Device | MemoryKind::Pinned => u64::MAX,
    };
    let bound = options
        .max_footprint_bytes
        .unwrap_or(u64::MAX)
        .min(system.max_footprint(kind))
        .min(cap);
    let factor = if options.quick { 4 } else { 2 };
    let mut regions: Vec<u64> = std::iter::successors(Some(MIN_REGION), |r| r.checked_mul(factor))
        .take_while(|&r| r <= bound)
        .collect();
    if regions.last().is_some_and(|&r| r < bound) {
        regions.push(bound);
    }
    let mut points = Vec::new();
    let count = regions.len();
    for (i, &region) in regions.iter().enumerate() {
        match system.random_access(kind, region) {
            Ok(reads_per_second) => points.push(RandomAccessPoint {
                region_bytes: region,
                reads_per_second,
            }),
            // The largest regions may not be allocatable; the curve ends before them.
            Err(BackendError::Allocation { .. }) if !points.is_empty() => break,
            Err(e) => return Err(e),
        }
        on_region(region, (i + 1) as f64 / count as f64);
    }
    // Regions that may mislead get more samples: one below both neighbours by a knee's
    // ratio (a slow run?), and the two sides of the two largest falls (the knee is the
    // largest; noise must not swap them).
    let mut recheck: Vec<u64> = points
        .windows(3)
        .filter(|w| {
            let dip = w[1].reads_per_second * KNEE_RATIO;
            dip < w[0].reads_per_second && dip < w[2].reads_per_second
        })
        .map(|w| w[1].region_bytes)
        .collect();
    let mut candidates = falls(&points);
    candidates.sort_by(|a, b| b.2.total_cmp(&a.2));
    recheck.extend(
        candidates
            .iter()
            .take(2)
            .flat_map(|&(from, to, _)| [from, to]),
    );
    recheck.sort_unstable();
    recheck.dedup();
    for region in recheck {
        for _ in 1..RECHECK_REPEATS {
            let reads_per_second = system.random_access(kind, region)?;
            points.push(RandomAccessPoint {
                region_bytes: region,
                reads_per_second,
            });
        }
    }
    points.sort_by_key(|p| p.region_bytes);
    let knee_bytes = random_access_knee(&points);
    let draw_cost_relative = draw_cost_relative(system, kind, &points);
    Ok(RandomAccessCurve {
        points,
        knee_bytes,
        draw_cost_relative,
        atomic_points: Vec::new(),
    })
}

/// Random atomic increments per second at each region of `curve` (once each: the curve
/// exists to price hash-grouping inserts, not to find a knee), for `curve.atomic_points`.
/// Empty where the system does not measure atomics for `kind` (it answers `None` for the
/// first region). The largest regions may not be allocatable: the points end before them.
///
/// Estimated cost on an H200: see `Gpu::random_atomic` (about 0.25 s for the full probe's 22
/// regions of device memory; quick mode's regions quadruple, about a third of that).
pub fn sweep_random_atomic(
    system: &mut dyn MemorySystem,
    kind: MemoryKind,
    curve: &RandomAccessCurve,
) -> Result<Vec<RandomAccessPoint>, BackendError> {
    let mut regions: Vec<u64> = curve.points.iter().map(|p| p.region_bytes).collect();
    regions.sort_unstable();
    regions.dedup();
    let mut points = Vec::new();
    for region in regions {
        match system.random_atomic(kind, region) {
            Ok(Some(atomics_per_second)) => points.push(RandomAccessPoint {
                region_bytes: region,
                reads_per_second: atomics_per_second,
            }),
            Ok(None) => break,
            Err(BackendError::Allocation { .. }) if !points.is_empty() => break,
            Err(e) => return Err(e),
        }
    }
    Ok(points)
}

/// The cost of drawing and skipping a position relative to the fastest random read of
/// `points`. The system measures it against a read of its own kernel over one region, the
/// largest of the curve up to [`DRAW_REGION`] (the smallest if none), where the scopes that
/// pay are; the curve's rate there turns it into the curve's unit. `None` where the system
/// does not measure it, or the measurement fails (the curve stands without it).
fn draw_cost_relative(
    system: &mut dyn MemorySystem,
    kind: MemoryKind,
    points: &[RandomAccessPoint],
) -> Option<f64> {
    let positive = |r: &f64| r.is_finite() && *r > 0.0;
    let fastest = points
        .iter()
        .map(|p| p.reads_per_second)
        .filter(positive)
        .max_by(f64::total_cmp)?;
    let region = points
        .iter()
        .map(|p| p.region_bytes)
        .filter(|&r| r <= DRAW_REGION)
        .max()
        .or_else(|| points.iter().map(|p| p.region_bytes).min())?;
    let mut there: Vec<f64> = points
        .iter()
        .filter(|p| p.region_bytes == region)
        .map(|p| p.reads_per_second)
        .filter(positive)
        .collect();
    there.sort_by(f64::total_cmp);
    let rate = *there.get(there.len() / 2)?;
    let per_read = system.draw_cost(kind, region).ok()??;
    (per_read.is_finite() && per_read >= 0.0).then(|| per_read * fastest / rate)
}

/// The region after which throughput falls the most, if it falls by at least 10% between
/// two neighbouring regions: the reach of the TLB level whose misses cost most (seed 000's
/// "2 GB" cliff on both the K80 and the P100). Repeats of a region count by their median.
pub fn random_access_knee(points: &[RandomAccessPoint]) -> Option<u64> {
    falls(points)
        .into_iter()
        .filter(|&(_, _, fall)| fall >= KNEE_RATIO)
        .max_by(|a, b| a.2.total_cmp(&b.2))
        .map(|(region, _, _)| region)
}

/// Each region with the next, and how much throughput falls from one to the other, from
/// the median of each region's samples.
fn falls(points: &[RandomAccessPoint]) -> Vec<(u64, u64, f64)> {
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
        .map(|w| (w[0].0, w[1].0, w[0].1 / w[1].1))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(values: &[(u64, f64)]) -> Vec<RandomAccessPoint> {
        values
            .iter()
            .copied()
            .map(RandomAccessPoint::from)
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

    /// Reads per second falling with region size; draws at a fixed rate, or failing;
    /// atomics at a third of the read rate, up to a region where they fail.
    struct Fake {
        draws: Result<Option<f64>, BackendError>,
        draw_regions: Vec<u64>,
        atomics: Option<(u64, BackendError)>,
        atomic_regions: Vec<u64>,
        bound: u64,
    }

    impl MemorySystem for Fake {
        fn name(&self) -> String {
            "fake".into()
        }
        fn clock_mhz(&self) -> f64 {
            1000.0
        }
        fn sm_count(&self) -> u32 {
            1
        }
        fn kinds(&self) -> Vec<MemoryKind> {
            vec![MemoryKind::Device]
        }
        fn max_footprint(&self, _: MemoryKind) -> u64 {
            self.bound
        }
        fn chase(&mut self, _: MemoryKind, _: u64, _: u64, _: u32) -> Result<f64, BackendError> {
            Ok(100.0)
        }
        fn chase_pair(
            &mut self,
            _: MemoryKind,
            _: u64,
            _: u64,
            _: u32,
            _: u32,
        ) -> Result<f64, BackendError> {
            Ok(100.0)
        }
        fn random_access(&mut self, _: MemoryKind, region: u64) -> Result<f64, BackendError> {
            // 4e9 reads/s at the smallest region, halving per quadrupling of the region.
            Ok(4e9 * (MIN_REGION as f64 / region as f64).sqrt())
        }
        fn draw_cost(&mut self, _: MemoryKind, region: u64) -> Result<Option<f64>, BackendError> {
            self.draw_regions.push(region);
            self.draws.clone()
        }
        fn random_atomic(
            &mut self,
            kind: MemoryKind,
            region: u64,
        ) -> Result<Option<f64>, BackendError> {
            self.atomic_regions.push(region);
            match &self.atomics {
                Some((from, e)) if region >= *from => Err(e.clone()),
                _ => Ok(Some(self.random_access(kind, region)? / 3.0)),
            }
        }
    }

    fn fake(draws: Result<Option<f64>, BackendError>) -> Fake {
        Fake {
            draws,
            draw_regions: Vec::new(),
            atomics: None,
            atomic_regions: Vec::new(),
            bound: MIN_REGION * 16,
        }
    }

    fn sweep(draws: Result<Option<f64>, BackendError>) -> (RandomAccessCurve, Vec<u64>) {
        let mut fake = fake(draws);
        let curve = sweep_random_access(
            &mut fake,
            MemoryKind::Device,
            &ProbeOptions::default(),
            &mut |_, _| {},
        )
        .unwrap();
        (curve, fake.draw_regions)
    }

    #[test]
    fn draw_cost_is_relative_to_the_fastest_read() {
        // The fake measures a draw at 0.25 of a read over the region it is given.
        let (curve, regions) = sweep(Ok(Some(0.25)));
        let largest_up_to_256_mib = curve
            .points
            .iter()
            .map(|p| p.region_bytes)
            .filter(|&r| r <= DRAW_REGION)
            .max()
            .unwrap();
        assert_eq!(regions, vec![largest_up_to_256_mib], "one draw measurement");
        let fastest = curve
            .points
            .iter()
            .map(|p| p.reads_per_second)
            .fold(0.0, f64::max);
        assert_eq!(fastest, 4e9);
        // 0.25 of a read there, where reads run at 4e9 * sqrt(64 KiB / region).
        let there = 4e9 * (MIN_REGION as f64 / largest_up_to_256_mib as f64).sqrt();
        let relative = curve.draw_cost_relative.unwrap();
        let want = 0.25 * fastest / there;
        assert!(
            (relative - want).abs() < 1e-9 * want,
            "{relative} vs {want}"
        );
    }

    #[test]
    fn draw_cost_unmeasured_or_failing_leaves_the_curve() {
        let (curve, _) = sweep(Ok(None));
        assert_eq!(curve.draw_cost_relative, None);
        assert!(!curve.points.is_empty());
        let (curve, _) = sweep(Err(BackendError::Launch {
            message: "no".into(),
        }));
        assert_eq!(curve.draw_cost_relative, None);
        assert!(!curve.points.is_empty());
        let (curve, _) = sweep(Ok(Some(f64::NAN)));
        assert_eq!(curve.draw_cost_relative, None);
    }

    #[test]
    fn managed_regions_stop_at_the_cap_and_device_regions_at_the_bound() {
        for (kind, last) in [
            (MemoryKind::Managed, MANAGED_REGION_CAP),
            (MemoryKind::Device, 1 << 36),
        ] {
            let mut f = fake(Ok(None));
            f.bound = 1 << 36;
            let curve = sweep_random_access(&mut f, kind, &ProbeOptions::default(), &mut |_, _| {})
                .unwrap();
            let largest = curve.points.iter().map(|p| p.region_bytes).max();
            assert_eq!(largest, Some(last), "{kind}");
        }
    }

    #[test]
    fn atomics_are_measured_once_at_each_region_of_the_curve() {
        let mut f = fake(Ok(None));
        let mut curve = sweep_random_access(
            &mut f,
            MemoryKind::Device,
            &ProbeOptions::default(),
            &mut |_, _| {},
        )
        .unwrap();
        // Rechecked regions appear more than once in the curve.
        curve.points.push(curve.points[0]);
        let atomics = sweep_random_atomic(&mut f, MemoryKind::Device, &curve).unwrap();
        let mut regions: Vec<u64> = curve.points.iter().map(|p| p.region_bytes).collect();
        regions.sort_unstable();
        regions.dedup();
        assert_eq!(f.atomic_regions, regions);
        assert_eq!(
            atomics.iter().map(|p| p.region_bytes).collect::<Vec<_>>(),
            regions
        );
        for p in &atomics {
            let read = f.random_access(MemoryKind::Device, p.region_bytes).unwrap();
            assert!((p.reads_per_second - read / 3.0).abs() < 1e-3, "{p:?}");
        }
    }

    #[test]
    fn atomics_end_at_the_first_region_that_cannot_be_allocated() {
        let mut f = fake(Ok(None));
        let curve = sweep_random_access(
            &mut f,
            MemoryKind::Device,
            &ProbeOptions::default(),
            &mut |_, _| {},
        )
        .unwrap();
        let allocation = BackendError::Allocation {
            kind: MemoryKind::Device,
            bytes: MIN_REGION * 4,
            message: "out of memory".into(),
        };
        f.atomics = Some((MIN_REGION * 4, allocation.clone()));
        let atomics = sweep_random_atomic(&mut f, MemoryKind::Device, &curve).unwrap();
        let regions: Vec<u64> = atomics.iter().map(|p| p.region_bytes).collect();
        assert_eq!(regions, vec![MIN_REGION, MIN_REGION * 2]);
        // Not even the smallest region: an error, not an empty curve.
        f.atomics = Some((MIN_REGION, allocation));
        assert!(sweep_random_atomic(&mut f, MemoryKind::Device, &curve).is_err());
        // A failed check is an error at any region.
        f.atomics = Some((
            MIN_REGION * 4,
            BackendError::Launch {
                message: "the words sum to 1, not 2".into(),
            },
        ));
        assert!(sweep_random_atomic(&mut f, MemoryKind::Device, &curve).is_err());
    }

    #[test]
    fn flat_curve_has_no_knee() {
        let p = curve(&[(1, 100.0), (2, 99.0), (4, 101.0), (8, 97.0)]);
        assert_eq!(random_access_knee(&p), None);
    }
}
