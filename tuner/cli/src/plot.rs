//! SVG line charts for `--plot DIR`: latency against footprint per stride, with the
//! inferred boundaries marked. No dependencies: the SVG is written by hand.

use memtune_core::profile::{
    CacheCurveKind, CacheHierarchy, CachePath, MemoryKind, RandomAccessCurve, RandomAccessPoint,
    TlbKind,
};
use std::fmt::Write;

/// One line of a chart.
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

/// A chart with a log2 x axis (sizes in bytes) and a linear y axis.
pub struct Chart {
    pub title: String,
    pub y_label: String,
    pub series: Vec<Series>,
    /// Vertical markers: x position and label.
    pub markers: Vec<(f64, String)>,
}

const W: f64 = 900.0;
const H: f64 = 520.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 190.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 60.0;
const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

fn size_label(bytes: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.0} {}", UNITS[u])
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

impl Chart {
    pub fn to_svg(&self) -> String {
        let xs = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0));
        let ys = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1));
        let (x0, x1) = xs
            .filter(|x| *x > 0.0)
            .fold((f64::MAX, f64::MIN), |(a, b), x| {
                (a.min(x.log2()), b.max(x.log2()))
            });
        let (y0, y1) = ys.fold((f64::MAX, f64::MIN), |(a, b), y| (a.min(y), b.max(y)));
        let mut s = String::new();
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
        let _ = writeln!(
            s,
            r#"<text x="{}" y="22" text-anchor="middle" font-size="15">{}</text>"#,
            W / 2.0,
            escape(&self.title)
        );
        if x0 > x1 || y0 > y1 {
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{}" text-anchor="middle">no data</text></svg>"#,
                W / 2.0,
                H / 2.0
            );
            return s;
        }
        let (x0, x1) = (x0.floor(), x1.ceil().max(x0.floor() + 1.0));
        let pad = ((y1 - y0) * 0.08).max(1.0);
        let (y0, y1) = ((y0 - pad).max(0.0), y1 + pad);
        let pw = W - LEFT - RIGHT;
        let ph = H - TOP - BOTTOM;
        let px = |x: f64| LEFT + (x.log2() - x0) / (x1 - x0) * pw;
        let py = |y: f64| TOP + ph - (y - y0) / (y1 - y0) * ph;
        // Axes, grid and ticks: every power of two on x (labelled every other when crowded).
        let _ = writeln!(
            s,
            r##"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>"##
        );
        let step = if x1 - x0 > 20.0 {
            4
        } else if x1 - x0 > 10.0 {
            2
        } else {
            1
        };
        for e in (x0 as i64..=x1 as i64).step_by(step) {
            let x = px(2f64.powi(e as i32));
            let _ = writeln!(
                s,
                r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{}" stroke="#eee"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"##,
                TOP + ph,
                TOP + ph + 16.0,
                size_label(2f64.powi(e as i32))
            );
        }
        for i in 0..=5 {
            let y = y0 + (y1 - y0) * f64::from(i) / 5.0;
            let _ = writeln!(
                s,
                r##"<line x1="{LEFT}" y1="{py:.1}" x2="{}" y2="{py:.1}" stroke="#eee"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
                LEFT + pw,
                LEFT - 6.0,
                py(y) + 4.0,
                format_value(y),
                py = py(y)
            );
        }
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">footprint</text>"#,
            LEFT + pw / 2.0,
            H - 16.0
        );
        let _ = writeln!(
            s,
            r#"<text x="18" y="{}" text-anchor="middle" transform="rotate(-90 18 {})">{}</text>"#,
            TOP + ph / 2.0,
            TOP + ph / 2.0,
            escape(&self.y_label)
        );
        for (x, label) in &self.markers {
            if *x <= 0.0 || x.log2() < x0 || x.log2() > x1 {
                continue;
            }
            let mx = px(*x);
            let _ = writeln!(
                s,
                r##"<line x1="{mx:.1}" y1="{TOP}" x2="{mx:.1}" y2="{}" stroke="#555" stroke-dasharray="5,4"/><text x="{:.1}" y="{}" font-size="11" transform="rotate(-90 {:.1} {})">{}</text>"##,
                TOP + ph,
                mx - 3.0,
                TOP + 8.0,
                mx - 3.0,
                TOP + 8.0,
                escape(label)
            );
        }
        for (i, series) in self.series.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let pts: Vec<String> = series
                .points
                .iter()
                .filter(|p| p.0 > 0.0)
                .map(|p| format!("{:.1},{:.1}", px(p.0), py(p.1)))
                .collect();
            let _ = writeln!(
                s,
                r#"<polyline fill="none" stroke="{color}" stroke-width="1.8" points="{}"/>"#,
                pts.join(" ")
            );
            let ly = TOP + 14.0 + 18.0 * i as f64;
            let _ = writeln!(
                s,
                r#"<line x1="{}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-width="3"/><text x="{}" y="{}">{}</text>"#,
                W - RIGHT + 12.0,
                W - RIGHT + 32.0,
                W - RIGHT + 38.0,
                ly + 4.0,
                escape(&series.label)
            );
        }
        s.push_str("</svg>\n");
        s
    }
}

fn format_value(v: f64) -> String {
    if v >= 1e9 {
        format!("{:.1}G", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else {
        format!("{v:.0}")
    }
}

/// Latency against footprint, one line per stride; dashed lines at each level's reach.
pub fn tlb_chart(device: &str, kind: MemoryKind, tlb: &TlbKind) -> Chart {
    let series = tlb
        .curves
        .iter()
        .map(|c| Series {
            label: format!("stride {}", size_label(c.stride_bytes as f64)),
            points: c
                .points
                .iter()
                .map(|p| (p.footprint_bytes as f64, p.cycles_per_load))
                .collect(),
        })
        .collect();
    let markers = tlb
        .levels
        .iter()
        .enumerate()
        .map(|(i, l)| {
            (
                l.reach_bytes as f64,
                format!(
                    "L{} reach: {} x {}",
                    i + 1,
                    l.entries,
                    size_label(l.page_bytes as f64)
                ),
            )
        })
        .collect();
    Chart {
        title: format!("{device}: TLB, {kind} memory (pointer chase)"),
        y_label: "cycles per load".to_string(),
        series,
        markers,
    }
}

/// Random-sampling throughput against region size, the knee marked.
pub fn random_access_chart(device: &str, kind: MemoryKind, curve: &RandomAccessCurve) -> Chart {
    let series_of = |label: String, points: &[RandomAccessPoint]| Series {
        label,
        points: points
            .iter()
            .map(|p| (p.region_bytes as f64, p.reads_per_second))
            .collect(),
    };
    let mut series = vec![series_of(format!("{kind} reads"), &curve.points)];
    if !curve.atomic_points.is_empty() {
        series.push(series_of(format!("{kind} atomicAdd"), &curve.atomic_points));
    }
    Chart {
        title: format!("{device}: random 4-byte accesses, {kind} memory"),
        y_label: "accesses per second".to_string(),
        series,
        markers: curve
            .knee_bytes
            .map(|k| vec![(k as f64, format!("knee {}", size_label(k as f64)))])
            .unwrap_or_default(),
    }
}

/// Cache latency against footprint for one load path, a line per carveout (each point at
/// the stride the sweep used there); dashed lines at the inferred sizes. `None` when the
/// path has no footprint curve.
pub fn cache_chart(device: &str, path: CachePath, caches: &CacheHierarchy) -> Option<Chart> {
    let series: Vec<Series> = caches
        .curves
        .iter()
        .filter(|c| c.path == path && c.kind == CacheCurveKind::Footprint)
        .map(|c| {
            let mut points: Vec<(f64, f64)> = c
                .points
                .iter()
                .map(|p| (p.footprint_bytes as f64, p.cycles_per_load))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series {
                label: c.carveout.to_string(),
                points,
            }
        })
        .collect();
    if series.is_empty() {
        return None;
    }
    let markers = caches
        .levels
        .iter()
        .filter(|l| l.path == path)
        .map(|l| {
            (
                l.size_bytes as f64,
                format!("{} {}", l.name, size_label(l.size_bytes as f64)),
            )
        })
        .collect();
    Some(Chart {
        title: format!("{device}: caches, {path} path (pointer chase)"),
        y_label: "cycles per load".to_string(),
        series,
        markers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn svg_has_a_line_per_series_and_the_markers() {
        let chart = Chart {
            title: "t <&>".into(),
            y_label: "cycles".into(),
            series: vec![
                Series {
                    label: "a".into(),
                    points: vec![(1024.0, 10.0), (4096.0, 30.0)],
                },
                Series {
                    label: "b".into(),
                    points: vec![(2048.0, 20.0)],
                },
            ],
            markers: vec![(2048.0, "L1 reach".into())],
        };
        let svg = chart.to_svg();
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("L1 reach"));
        assert!(svg.contains("t &lt;&amp;&gt;"));
        assert!(svg.trim_end().ends_with("</svg>"));
    }

    #[test]
    fn empty_chart_says_so() {
        let chart = Chart {
            title: "x".into(),
            y_label: "y".into(),
            series: vec![],
            markers: vec![],
        };
        assert!(chart.to_svg().contains("no data"));
    }
}
