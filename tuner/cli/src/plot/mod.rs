//! SVG plots (`--plot DIR`, `cargo tune report`), drawn with plotters in one style
//! (`style.rs`): distinct colours and small multiples when curves are many, round ticks on
//! log axes where the span is wide (`ticks.rs`), each curve's spread as a band, and every
//! inferred level marked with its name, size and confidence in rows that never overlap
//! (`draw.rs`).
//!
//! ```
//! use cargo_tune::plot::{Axis, Curve, Figure, Point, Unit};
//! let figure = Figure {
//!     title: "latency".into(),
//!     x: Axis::log("footprint", Unit::Bytes),
//!     y: Axis::auto("cycles per load", Unit::Cycles),
//!     curves: vec![Curve::new("stride 4 KiB", vec![Point::at(4096.0, 30.0), Point::at(8192.0, 31.0)])],
//!     markers: vec![],
//!     note: None,
//! };
//! assert!(figure.to_svg().contains("stride 4 KiB"));
//! ```

mod draw;
mod profile;
mod reuse;
pub mod staging;
pub mod style;
pub mod ticks;

pub use profile::{cache_chart, noise_sigma, profile_svgs, random_access_chart, tlb_chart};
pub use reuse::{miss_ratio_chart, reuse_cdf, reuse_svgs};

/// What an axis's numbers are; decides how ticks are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Bytes,
    Cycles,
    Millis,
    Rate,
    Plain,
}

/// How an axis maps values: log where the span is wide (`Auto`: more than 30x).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    Linear,
    Log,
    Auto,
}

#[derive(Debug, Clone)]
pub struct Axis {
    pub label: String,
    pub unit: Unit,
    pub scale: Scale,
}

impl Axis {
    pub fn log(label: &str, unit: Unit) -> Axis {
        Axis {
            label: label.to_string(),
            unit,
            scale: Scale::Log,
        }
    }

    pub fn auto(label: &str, unit: Unit) -> Axis {
        Axis {
            label: label.to_string(),
            unit,
            scale: Scale::Auto,
        }
    }
}

/// A measured point, with the spread of its repeats (low, high) where known.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    pub band: Option<(f64, f64)>,
}

impl Point {
    pub fn at(x: f64, y: f64) -> Point {
        Point { x, y, band: None }
    }
}

/// One line; curves of one `group` share a panel when the figure splits.
#[derive(Debug, Clone)]
pub struct Curve {
    pub label: String,
    pub group: Option<String>,
    pub points: Vec<Point>,
}

impl Curve {
    pub fn new(label: impl Into<String>, points: Vec<Point>) -> Curve {
        Curve {
            label: label.into(),
            group: None,
            points,
        }
    }
}

/// A vertical line at an inferred boundary, labelled (name, size, confidence).
#[derive(Debug, Clone)]
pub struct Marker {
    pub x: f64,
    pub label: String,
}

/// A figure: one panel, or small multiples sharing both axes.
#[derive(Debug, Clone)]
pub struct Figure {
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub curves: Vec<Curve>,
    pub markers: Vec<Marker>,
    /// A line under the plot: what the bands and markers mean.
    pub note: Option<String>,
}

impl Figure {
    pub fn to_svg(&self) -> String {
        draw::svg(self)
    }
}

/// One line of a [`Chart`].
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

/// A simple chart (sizes on x, one y per point) drawn as a [`Figure`]: the y unit is read
/// from its label (`ms`, `per second`, `cycles`), the y axis goes log where the span is
/// wide.
pub struct Chart {
    pub title: String,
    pub y_label: String,
    pub series: Vec<Series>,
    /// Vertical markers: x position and label.
    pub markers: Vec<(f64, String)>,
}

impl Chart {
    pub fn figure(&self) -> Figure {
        let label = self.y_label.to_ascii_lowercase();
        let unit = if label.contains("ms") {
            Unit::Millis
        } else if label.contains("per second") || label.contains("/s") {
            Unit::Rate
        } else if label.contains("cycles") {
            Unit::Cycles
        } else {
            Unit::Plain
        };
        Figure {
            title: self.title.clone(),
            x: Axis::log("size", Unit::Bytes),
            y: Axis::auto(&self.y_label, unit),
            curves: self
                .series
                .iter()
                .map(|s| {
                    Curve::new(
                        &s.label,
                        s.points.iter().map(|p| Point::at(p.0, p.1)).collect(),
                    )
                })
                .collect(),
            markers: self
                .markers
                .iter()
                .map(|(x, label)| Marker {
                    x: *x,
                    label: label.clone(),
                })
                .collect(),
            note: None,
        }
    }

    pub fn to_svg(&self) -> String {
        self.figure().to_svg()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stroke colours of the curves: plotters draws each as one 2-px polyline.
    fn curve_strokes(svg: &str) -> Vec<String> {
        svg.split("<polyline")
            .skip(1)
            .filter(|p| p.contains("stroke-width=\"2\""))
            .filter_map(|p| Some(p.split("stroke=\"").nth(1)?.split('"').next()?.to_string()))
            .collect()
    }

    fn two_series() -> Chart {
        Chart {
            title: "t <&>".into(),
            y_label: "median ms".into(),
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
        }
    }

    #[test]
    fn svg_has_a_line_per_series_and_the_markers() {
        let svg = two_series().to_svg();
        assert_eq!(
            curve_strokes(&svg).len(),
            1,
            "a line for `a`; `b` is a single dot"
        );
        assert_eq!(svg.matches("<circle").count(), 3, "a dot per point");
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

    #[test]
    fn many_curves_split_into_panels_with_distinct_colours() {
        let curves: Vec<Series> = (0..14)
            .map(|i| Series {
                label: format!("s{i}"),
                points: vec![(1024.0, 10.0 + i as f64), (1e6, 20.0 + i as f64)],
            })
            .collect();
        let chart = Chart {
            title: "many".into(),
            y_label: "cycles".into(),
            series: curves,
            markers: vec![],
        };
        let svg = chart.to_svg();
        let strokes = curve_strokes(&svg);
        let colours: std::collections::BTreeSet<&String> = strokes.iter().collect();
        assert_eq!(colours.len(), 14, "{colours:?}");
        // Four panels of at most four curves: the x axis name is drawn once, under the last.
        assert_eq!(svg.matches(">\nsize\n</text>").count(), 1);
    }
}
