//! The one look of every plot: sizes, fonts, colours, and the text-width estimate the
//! layout uses (SVG text is measured by the viewer, so layout keeps a safe margin).

use plotters::chart::MeshStyle;
use plotters::coord::ranged1d::Ranged;
use plotters::prelude::{DrawingBackend, IntoFont, TextStyle};
use plotters::style::{RGBColor, TRANSPARENT};

/// Width of every figure, in pixels.
pub const WIDTH: u32 = 960;
/// Height of the title line.
pub const TITLE_H: u32 = 36;
/// Plot height of a figure of one panel, and of each panel of small multiples.
pub const SINGLE_PANEL_H: u32 = 380;
pub const MULTI_PANEL_H: u32 = 190;
/// Room for the tick labels and the name of the x axis, under the last panel.
pub const X_AXIS_H: u32 = 46;
/// Room for the y tick labels and the y axis name, left of each panel.
pub const Y_AXIS_W: u32 = 86;
/// Left margin of the figure and gap between panels.
pub const MARGIN: u32 = 10;
/// The legend column right of each panel.
pub const LEGEND_W: u32 = 180;
/// One row of level labels above the panels.
pub const MARKER_ROW_H: u32 = 17;
/// The note line under the figure.
pub const NOTE_H: u32 = 24;

/// Font family of all text (the viewer picks its sans-serif).
pub const FONT: &str = "sans-serif";
pub const TITLE_PX: f64 = 16.0;
pub const LABEL_PX: f64 = 12.0;
pub const TICK_PX: f64 = 11.0;
pub const SMALL_PX: f64 = 11.0;

/// Curves per panel before a figure splits into small multiples.
pub const MAX_CURVES_PER_PANEL: usize = 5;
/// Curves per panel once split.
pub const CURVES_PER_SPLIT_PANEL: usize = 4;

/// Distinct colours, strong on white: ten hues, then ten darker ones. Curves of one figure
/// take consecutive colours, so any four neighbours differ in hue.
pub const PALETTE: [RGBColor; 20] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
    RGBColor(188, 189, 34),
    RGBColor(127, 127, 127),
    RGBColor(8, 48, 107),
    RGBColor(166, 54, 3),
    RGBColor(0, 90, 50),
    RGBColor(103, 0, 13),
    RGBColor(63, 0, 125),
    RGBColor(196, 156, 148),
    RGBColor(174, 1, 126),
    RGBColor(0, 109, 119),
    RGBColor(107, 107, 0),
    RGBColor(0, 0, 0),
];

/// The colour of curve `i`; past the palette, hues spaced by the golden angle.
pub fn color(i: usize) -> RGBColor {
    if let Some(c) = PALETTE.get(i) {
        return *c;
    }
    let hue = (i as f64 * 137.508) % 360.0;
    hsl_to_rgb(hue, 0.65, 0.38)
}

fn hsl_to_rgb(h: f64, s: f64, l: f64) -> RGBColor {
    let c = (1.0 - (2.0 * l - 1.0).abs()) * s;
    let x = c * (1.0 - ((h / 60.0) % 2.0 - 1.0).abs());
    let m = l - c / 2.0;
    let (r, g, b) = match (h / 60.0) as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let to = |v: f64| ((v + m) * 255.0).round().clamp(0.0, 255.0) as u8;
    RGBColor(to(r), to(g), to(b))
}

pub const TEXT: RGBColor = RGBColor(34, 34, 34);
pub const MUTED: RGBColor = RGBColor(90, 90, 90);
pub const GRID: RGBColor = RGBColor(228, 228, 228);
pub const AXIS: RGBColor = RGBColor(120, 120, 120);
/// Opacity of the band of a curve's spread.
pub const BAND_ALPHA: f64 = 0.16;

/// Estimated width of `text` at `px`: a wide sans-serif's average advance, generous so
/// that labels placed apart by this estimate stay apart in any viewer's font.
pub fn text_width(text: &str, px: f64) -> f64 {
    text.chars()
        .map(|c| match c {
            ' ' | '.' | ',' | ':' | 'i' | 'l' | 'j' | '|' | '(' | ')' | '\'' => 0.34,
            'm' | 'w' | 'M' | 'W' | '×' | '%' => 0.9,
            c if c.is_ascii_uppercase() => 0.7,
            _ => 0.6,
        })
        .sum::<f64>()
        * px
}

/// Text of `px` pixels in `color`, in [`FONT`].
pub fn font(px: f64, color: RGBColor) -> TextStyle<'static> {
    (FONT, px).into_font().color(&color)
}

/// The look every chart's mesh shares: [`GRID`] lines without minor ones, [`AXIS`] axes,
/// tick labels as dense as the ticks given, and the tick and axis-name fonts. The caller adds
/// its labels and draws.
pub fn mesh<'m, 'a, 'b, X, Y, DB>(
    mesh: &'m mut MeshStyle<'a, 'b, X, Y, DB>,
) -> &'m mut MeshStyle<'a, 'b, X, Y, DB>
where
    X: Ranged,
    Y: Ranged,
    DB: DrawingBackend,
{
    mesh.bold_line_style(GRID)
        .light_line_style(TRANSPARENT)
        .axis_style(AXIS)
        .x_labels(64)
        .y_labels(64)
        .label_style(font(TICK_PX, TEXT))
        .axis_desc_style(font(LABEL_PX, TEXT))
}
