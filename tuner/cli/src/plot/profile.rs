//! The profile's figures: TLB and cache latency against footprint, random-access
//! throughput against region size, each inferred level marked.

use super::{Axis, Curve, Figure, Marker, Point, Unit};
use memtune_core::human::{bytes, sig3};
use memtune_core::profile::{
    CacheCurveKind, CacheHierarchy, CachePath, MemoryKind, Profile, RandomAccessCurve, Section,
    TlbKind,
};

/// Every plot of a profile as (file name, SVG): `tlb-<kind>.svg` and
/// `random-access-<kind>.svg` per measured kind, `caches-<path>.svg` per load path, and
/// `staging.svg`.
pub fn profile_svgs(profile: &Profile) -> Vec<(String, String)> {
    let name = &profile.device.name;
    let mut out = Vec::new();
    for kind in MemoryKind::ALL {
        if let Section::Measured(t) = profile.tlb.get(kind) {
            out.push((format!("tlb-{kind}.svg"), tlb_chart(name, kind, t).to_svg()));
        }
        if let Section::Measured(r) = profile.random_access.get(kind) {
            let svg = random_access_chart(name, kind, r).to_svg();
            out.push((format!("random-access-{kind}.svg"), svg));
        }
    }
    if let Section::Measured(h) = &profile.caches {
        for path in [
            CachePath::L1,
            CachePath::L2,
            CachePath::ReadOnly,
            CachePath::Constant,
        ] {
            if let Some(fig) = cache_chart(name, path, h) {
                out.push((format!("caches-{path}.svg"), fig.to_svg()));
            }
        }
    }
    if let Section::Measured(t) = &profile.shared_memory_staging {
        out.push(("staging.svg".into(), super::staging::staging_svg(name, t)));
    }
    out
}

/// A curve's noise: the standard deviation its point-to-point scatter implies (the median
/// step between neighbours, which a few real steps do not move, over 0.6745·√2). The profile
/// keeps one value per point; this is what shows whether a step stands out of the noise.
pub fn noise_sigma(ys: &[f64]) -> f64 {
    let mut steps: Vec<f64> = ys.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
    if steps.is_empty() {
        return 0.0;
    }
    steps.sort_by(f64::total_cmp);
    steps[steps.len() / 2] / (0.6745 * std::f64::consts::SQRT_2)
}

/// Points with a ±2σ band of the curve's own noise.
fn with_noise_band(points: Vec<(f64, f64)>) -> Vec<Point> {
    let ys: Vec<f64> = points.iter().map(|p| p.1).collect();
    let sigma = noise_sigma(&ys);
    points
        .into_iter()
        .map(|(x, y)| Point {
            x,
            y,
            band: Some((y - 2.0 * sigma, y + 2.0 * sigma)),
        })
        .collect()
}

/// Chase points as `(footprint, cycles per load)`, in footprint order.
fn by_footprint(points: impl Iterator<Item = (u64, f64)>) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = points.map(|(f, c)| (f as f64, c)).collect();
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}

const CHASE_NOTE: &str =
    "bands: ±2σ of each curve's point-to-point noise; dashed: inferred levels (confidence 0-1)";

/// Latency against footprint, one line per stride; a marker at each level's reach.
pub fn tlb_chart(device: &str, kind: MemoryKind, tlb: &TlbKind) -> Figure {
    let curves = tlb
        .curves
        .iter()
        .map(|c| {
            let points = by_footprint(
                c.points
                    .iter()
                    .map(|p| (p.footprint_bytes, p.cycles_per_load)),
            );
            Curve::new(
                format!("stride {}", bytes(c.stride_bytes)),
                with_noise_band(points),
            )
        })
        .collect();
    let markers = tlb
        .levels
        .iter()
        .enumerate()
        .map(|(i, l)| Marker {
            x: l.reach_bytes as f64,
            label: format!(
                "L{} {} × {} = {}, conf {:.2}",
                i + 1,
                l.entries,
                bytes(l.page_bytes),
                bytes(l.reach_bytes),
                l.confidence
            ),
        })
        .collect();
    Figure {
        title: format!("{device}: TLB, {kind} memory (pointer chase)"),
        x: Axis::log("footprint", Unit::Bytes),
        y: Axis::auto("cycles per load", Unit::Cycles),
        curves,
        markers,
        note: Some(CHASE_NOTE.to_string()),
    }
}

/// Random-sampling throughput against region size, the knee marked.
pub fn random_access_chart(device: &str, kind: MemoryKind, curve: &RandomAccessCurve) -> Figure {
    let curve_of = |label: &str, points: &[memtune_core::profile::RandomAccessPoint]| {
        let mut pts: Vec<Point> = points
            .iter()
            .map(|p| Point::at(p.region_bytes as f64, p.reads_per_second))
            .collect();
        pts.sort_by(|a, b| a.x.total_cmp(&b.x));
        Curve::new(format!("{kind} {label}"), pts)
    };
    let mut curves = vec![curve_of("reads", &curve.points)];
    if !curve.atomic_points.is_empty() {
        curves.push(curve_of("atomicAdd", &curve.atomic_points));
    }
    let markers = curve
        .knee_bytes
        .map(|k| Marker {
            x: k as f64,
            label: format!("knee {}", bytes(k)),
        })
        .into_iter()
        .collect();
    Figure {
        title: format!("{device}: random 4-byte accesses, {kind} memory"),
        x: Axis::log("region", Unit::Bytes),
        y: Axis::auto("accesses per second", Unit::Rate),
        curves,
        markers,
        note: Some("dashed: where throughput falls off (knee)".to_string()),
    }
}

/// Cache latency against footprint for one load path, a line per carveout; a marker at
/// each inferred level (name, size, line, hit latency). `None` when the path has no
/// footprint curve.
pub fn cache_chart(device: &str, path: CachePath, caches: &CacheHierarchy) -> Option<Figure> {
    let curves: Vec<Curve> = caches
        .curves
        .iter()
        .filter(|c| c.path == path && c.kind == CacheCurveKind::Footprint)
        .map(|c| {
            let points = by_footprint(
                c.points
                    .iter()
                    .map(|p| (p.footprint_bytes, p.cycles_per_load)),
            );
            // The plateau of a level measured apart (the constant L1.5) is named by it.
            let label = c.level.clone().unwrap_or_else(|| c.carveout.to_string());
            Curve::new(label, with_noise_band(points))
        })
        .collect();
    if curves.is_empty() {
        return None;
    }
    let levels: Vec<_> = caches.levels.iter().filter(|l| l.path == path).collect();
    let carveouts = {
        let mut c: Vec<String> = levels.iter().map(|l| l.carveout.to_string()).collect();
        c.dedup();
        c.len()
    };
    let markers = levels
        .iter()
        .map(|l| {
            let carveout = if carveouts > 1 {
                format!(" ({})", l.carveout)
            } else {
                String::new()
            };
            Marker {
                x: l.size_bytes as f64,
                label: format!(
                    "{}{carveout} {}, hit {} cycles",
                    l.name,
                    l.size_shown(bytes),
                    sig3(l.hit_latency_cycles)
                ),
            }
        })
        .collect();
    Some(Figure {
        title: format!("{device}: caches, {path} path (pointer chase)"),
        x: Axis::log("footprint", Unit::Bytes),
        y: Axis::auto("cycles per load", Unit::Cycles),
        curves,
        markers,
        note: Some(
            "bands: ±2σ of each curve's point-to-point noise; dashed: inferred cache sizes"
                .to_string(),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noise_ignores_a_few_real_steps() {
        let mut ys: Vec<f64> = (0..40)
            .map(|i| 100.0 + if i % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        ys.extend((0..40).map(|i| 300.0 + if i % 2 == 0 { 1.0 } else { -1.0 }));
        let sigma = noise_sigma(&ys);
        assert!(sigma > 1.0 && sigma < 3.0, "{sigma}");
        assert_eq!(noise_sigma(&[5.0]), 0.0);
    }
}
