//! Draws a [`Figure`] as SVG: the title, a row band of level labels placed so that none
//! overlaps another, one panel (or small multiples sharing both axes) with bands, lines and
//! dots, a legend column per panel, and the note.

use super::style::{self, *};
use super::ticks::AxisPlan;
use super::Figure;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// Gap between a label and its marker line, and between labels of one row.
const LABEL_GAP: f64 = 5.0;
const PANEL_GAP: u32 = 12;
const LEGEND_ROW_H: i32 = 17;

/// Curves of one panel, and the panel's name (its group).
struct Panel {
    title: Option<String>,
    curves: Vec<usize>,
}

/// Where everything goes, in pixels.
struct Layout {
    height: u32,
    plot_h: u32,
    header_h: u32,
    x: AxisPlan,
    y: AxisPlan,
    /// Per marker shown: pixel x, label start, row.
    labels: Vec<(f64, f64, usize, String)>,
}

pub(super) fn svg(fig: &Figure) -> String {
    let panels = panels(fig);
    let layout = layout(fig, &panels);
    let mut out = String::new();
    let drawn = {
        let root = SVGBackend::with_string(&mut out, (WIDTH, layout.height)).into_drawing_area();
        draw(&root, fig, &panels, &layout).and_then(|()| Ok(root.present()?))
    };
    match drawn {
        Ok(()) => out,
        Err(e) => format!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="60"><text x="10" y="30" font-family="{FONT}">plot failed: {}</text></svg>"#,
            e.to_string().replace('&', "&amp;").replace('<', "&lt;")
        ),
    }
}

fn has_data(fig: &Figure) -> bool {
    fig.curves.iter().any(|c| !c.points.is_empty())
}

/// Curves by group when groups are named; else one panel, or panels of at most four
/// consecutive curves when there are many.
fn panels(fig: &Figure) -> Vec<Panel> {
    let n = fig.curves.len();
    if fig.curves.iter().any(|c| c.group.is_some()) {
        let mut out: Vec<Panel> = Vec::new();
        for (i, c) in fig.curves.iter().enumerate() {
            match out.iter_mut().find(|p| p.title == c.group) {
                Some(p) => p.curves.push(i),
                None => out.push(Panel {
                    title: c.group.clone(),
                    curves: vec![i],
                }),
            }
        }
        return out;
    }
    if n <= MAX_CURVES_PER_PANEL {
        return vec![Panel {
            title: None,
            curves: (0..n).collect(),
        }];
    }
    let count = n.div_ceil(CURVES_PER_SPLIT_PANEL);
    let (base, extra) = (n / count, n % count);
    let mut start = 0;
    (0..count)
        .map(|k| {
            let len = base + usize::from(k < extra);
            let curves: Vec<usize> = (start..start + len).collect();
            start += len;
            Panel {
                title: None,
                curves,
            }
        })
        .collect()
}

fn layout(fig: &Figure, panels: &[Panel]) -> Layout {
    let plot_h = if panels.len() > 1 {
        MULTI_PANEL_H
    } else {
        SINGLE_PANEL_H
    };
    let x0 = f64::from(MARGIN + Y_AXIS_W);
    let x1 = f64::from(WIDTH - LEGEND_W - MARGIN);
    let points = fig.curves.iter().flat_map(|c| c.points.iter());
    let xs: Vec<f64> = points
        .clone()
        .map(|p| p.x)
        .chain(fig.markers.iter().map(|m| m.x))
        .collect();
    let ys: Vec<f64> = points
        .flat_map(|p| [Some(p.y), p.band.map(|b| b.0), p.band.map(|b| b.1)])
        .flatten()
        .collect();
    let x = AxisPlan::new(&xs, fig.x.unit, fig.x.scale, ((x1 - x0) / 70.0) as usize);
    let y = AxisPlan::new(&ys, fig.y.unit, fig.y.scale, (plot_h / 30) as usize);
    let px = |v: f64| {
        x.map(v)
            .map(|m| x0 + (m - x.lo) / (x.hi - x.lo) * (x1 - x0))
    };
    let mut wanted: Vec<(f64, f64, String)> = fig
        .markers
        .iter()
        .filter_map(|m| Some((px(m.x)?, m.label.clone())))
        .filter(|(p, _)| *p >= x0 - 0.5 && *p <= x1 + 0.5)
        .map(|(p, l)| (p, style::text_width(&l, SMALL_PX), l))
        .collect();
    wanted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut row_ends: Vec<f64> = Vec::new();
    let mut labels = Vec::new();
    for (p, w, text) in wanted {
        let mut start = p + LABEL_GAP;
        if start + w > x1 {
            start = (p - LABEL_GAP - w).max(x0);
        }
        let row = match row_ends
            .iter()
            .position(|end| end + LABEL_GAP * 2.0 <= start)
        {
            Some(r) => r,
            None => {
                row_ends.push(f64::MIN);
                row_ends.len() - 1
            }
        };
        row_ends[row] = row_ends[row].max(start + w);
        labels.push((p, start, row, text));
    }
    let header_h = if row_ends.is_empty() {
        0
    } else {
        row_ends.len() as u32 * MARKER_ROW_H + 6
    };
    let panels_h = panels.len() as u32 * (plot_h + PANEL_GAP) + X_AXIS_H;
    let note_h = if fig.note.is_some() { NOTE_H } else { 0 };
    let height = if has_data(fig) {
        TITLE_H + header_h + panels_h + note_h + MARGIN
    } else {
        TITLE_H + 120
    };
    Layout {
        height,
        plot_h,
        header_h,
        x,
        y,
        labels,
    }
}

fn text(area: &Area, s: &str, (x, y): (i32, i32), style: TextStyle, h: HPos) -> Result<()> {
    area.draw(&Text::new(
        s.to_string(),
        (x, y),
        style.pos(Pos::new(h, VPos::Top)),
    ))?;
    Ok(())
}

fn draw(root: &Area, fig: &Figure, panels: &[Panel], l: &Layout) -> Result<()> {
    root.fill(&WHITE)?;
    let title_px = TITLE_PX.min(f64::from(WIDTH - 20) / style::text_width(&fig.title, 1.0));
    let title_style = font(title_px, TEXT);
    text(
        root,
        &fig.title,
        (WIDTH as i32 / 2, 10),
        title_style,
        HPos::Center,
    )?;
    if !has_data(fig) {
        let style = font(LABEL_PX, MUTED);
        return text(root, "no data", (WIDTH as i32 / 2, 80), style, HPos::Center);
    }
    let panels_top = TITLE_H + l.header_h;
    let bottom = panels_top + panels.len() as u32 * (l.plot_h + PANEL_GAP) - PANEL_GAP;
    // Marker lines first, under the curves, from their label's row down through every panel.
    let marker_style = ShapeStyle::from(&MUTED).stroke_width(1);
    for (p, _, row, _) in &l.labels {
        let top = TITLE_H + *row as u32 * MARKER_ROW_H + MARKER_ROW_H;
        let line = vec![(*p as i32, top as i32), (*p as i32, bottom as i32)];
        root.draw(&DashedPathElement::new(line, 5, 4, marker_style))?;
    }
    for (p, start, row, label) in &l.labels {
        let y = (TITLE_H + *row as u32 * MARKER_ROW_H + 2) as i32;
        let w = style::text_width(label, SMALL_PX);
        let (left, right) = (*start as i32 - 2, (*start + w) as i32 + 2);
        root.draw(&Rectangle::new(
            [(left, y - 1), (right, y + MARKER_ROW_H as i32 - 3)],
            WHITE.filled(),
        ))?;
        let anchor = if *start > *p { HPos::Left } else { HPos::Right };
        let x = if *start > *p { *start } else { *start + w };
        text(root, label, (x as i32, y), font(SMALL_PX, TEXT), anchor)?;
    }
    for (k, panel) in panels.iter().enumerate() {
        let top = panels_top + k as u32 * (l.plot_h + PANEL_GAP);
        let last = k + 1 == panels.len();
        let h = l.plot_h + if last { X_AXIS_H } else { 0 };
        let area = root.clone().shrink((0, top), (WIDTH - LEGEND_W, h));
        draw_panel(&area, fig, panel, l, last)?;
        let legend = root
            .clone()
            .shrink((WIDTH - LEGEND_W, top), (LEGEND_W, l.plot_h));
        draw_legend(&legend, fig, panel)?;
    }
    if let Some(note) = &fig.note {
        let y = (bottom + X_AXIS_H + 6) as i32;
        text(
            root,
            note,
            (MARGIN as i32, y),
            font(SMALL_PX, MUTED),
            HPos::Left,
        )?;
    }
    Ok(())
}

fn draw_panel(area: &Area, fig: &Figure, panel: &Panel, l: &Layout, last: bool) -> Result<()> {
    let (x, y) = (&l.x, &l.y);
    let mut chart = ChartBuilder::on(area)
        .margin_left(MARGIN)
        .margin_right(MARGIN)
        .x_label_area_size(if last { X_AXIS_H } else { 0 })
        .y_label_area_size(Y_AXIS_W)
        .build_cartesian_2d(x.clone(), y.clone())?;
    let x_label = |v: &f64| x.label(*v);
    let y_label = |v: &f64| y.label(*v);
    style::mesh(&mut chart.configure_mesh())
        .x_label_formatter(&x_label)
        .y_label_formatter(&y_label)
        .x_desc(if last { fig.x.label.as_str() } else { "" })
        .y_desc(fig.y.label.as_str())
        .draw()?;
    for &i in &panel.curves {
        let curve = &fig.curves[i];
        let color = style::color(i);
        let map = |px: f64, py: f64| Some((x.map(px)?, y.map(py)?));
        let banded: Vec<((f64, f64), (f64, f64))> = curve
            .points
            .iter()
            .filter_map(|p| {
                let (lo, hi) = p.band?;
                Some((map(p.x, lo)?, map(p.x, hi)?))
            })
            .collect();
        if banded.len() >= 2 {
            let mut poly: Vec<(f64, f64)> = banded.iter().map(|b| b.1).collect();
            poly.extend(banded.iter().rev().map(|b| b.0));
            let fill = color.mix(BAND_ALPHA).filled();
            chart.draw_series(std::iter::once(Polygon::new(poly, fill)))?;
        }
        let line: Vec<(f64, f64)> = curve.points.iter().filter_map(|p| map(p.x, p.y)).collect();
        if line.len() >= 2 {
            chart.draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))?;
        }
        if line.len() <= 40 {
            let dots = line.iter().map(|p| Circle::new(*p, 3, color.filled()));
            chart.draw_series(dots)?;
        }
    }
    Ok(())
}

/// The panel's group name (wrapped to two lines), then a colour key and label per curve.
fn draw_legend(area: &Area, fig: &Figure, panel: &Panel) -> Result<()> {
    let width = f64::from(LEGEND_W - 16);
    let mut y = 2;
    if let Some(title) = &panel.title {
        for line in wrap(title, width, LABEL_PX).into_iter().take(2) {
            text(area, &line, (6, y), font(LABEL_PX, TEXT), HPos::Left)?;
            y += LEGEND_ROW_H;
        }
        y += 3;
    }
    for &i in &panel.curves {
        let color = style::color(i);
        area.draw(&Rectangle::new([(6, y + 5), (26, y + 9)], color.filled()))?;
        let label = truncate(&fig.curves[i].label, width - 26.0, TICK_PX);
        text(area, &label, (32, y), font(TICK_PX + 1.0, TEXT), HPos::Left)?;
        y += LEGEND_ROW_H;
    }
    Ok(())
}

/// Words of `s` in lines at most `width` pixels wide.
fn wrap(s: &str, width: f64, px: f64) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in s.split_whitespace() {
        match lines.last_mut() {
            Some(line) if style::text_width(&format!("{line} {word}"), px) <= width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

fn truncate(s: &str, width: f64, px: f64) -> String {
    if style::text_width(s, px) <= width {
        return s.to_string();
    }
    let mut out = String::new();
    for c in s.chars() {
        if style::text_width(&format!("{out}{c}…"), px) > width {
            break;
        }
        out.push(c);
    }
    out + "…"
}

#[cfg(test)]
mod tests {
    use super::super::{Axis, Curve, Marker, Point, Unit};
    use super::*;

    #[test]
    fn close_markers_take_separate_rows() {
        let fig = Figure {
            title: "t".into(),
            x: Axis::log("footprint", Unit::Bytes),
            y: Axis::auto("cycles", Unit::Cycles),
            curves: vec![Curve::new(
                "a",
                vec![Point::at(1e6, 1.0), Point::at(4e9, 2.0)],
            )],
            markers: [116e6, 133e6, 366e6]
                .iter()
                .map(|x| Marker {
                    x: *x,
                    label: format!("level at {x}: a long label for testing"),
                })
                .collect(),
            note: None,
        };
        let l = layout(&fig, &panels(&fig));
        let rows: std::collections::BTreeSet<usize> = l.labels.iter().map(|t| t.2).collect();
        assert_eq!(rows.len(), 3, "three close labels need three rows");
        let (x0, x1) = (
            f64::from(MARGIN + Y_AXIS_W),
            f64::from(WIDTH - LEGEND_W - MARGIN),
        );
        assert!(l.labels.iter().all(|t| t.1 >= x0 && t.1 <= x1));
    }

    #[test]
    fn wraps_and_truncates_to_width() {
        assert_eq!(wrap("a b c", 1000.0, 12.0), vec!["a b c"]);
        assert!(wrap("table 256 MiB (pinned), keys pinned", 100.0, 12.0).len() > 1);
        assert!(truncate(&"x".repeat(100), 60.0, 11.0).ends_with('…'));
    }
}
