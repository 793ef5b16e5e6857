//! The shared-memory staging table as an SVG bar chart (`--plot DIR`, the report): per
//! (dtype, repeats, grid), the best plain, staged and streaming times side by side, the
//! benefit of staging above each group. Drawn with plotters in the plots' style.

use super::style::{self, *};
use super::ticks::AxisPlan;
use super::{Scale, Unit};
use memtune_core::human;
use memtune_core::profile::StagingTable;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

const GROUP_W: u32 = 104;
const PLOT_H: u32 = 360;
const BARS: [&str; 3] = ["plain", "staged", "streaming"];

/// One bar: median ms and the block that gave it.
type Bar = Option<(f64, [u32; 3])>;

/// The chart for `table`, measured on `device`.
pub fn staging_svg(device: &str, table: &StagingTable) -> String {
    let mut out = String::new();
    let drawn = {
        let groups = groups(table);
        let width =
            (MARGIN + Y_AXIS_W + LEGEND_W + MARGIN + GROUP_W * groups.len() as u32).max(WIDTH);
        let height = TITLE_H + PLOT_H + X_AXIS_H + NOTE_H + MARGIN;
        let root = SVGBackend::with_string(&mut out, (width, height)).into_drawing_area();
        draw(&root, device, &groups, width).and_then(|()| Ok(root.present()?))
    };
    match drawn {
        Ok(()) => out,
        Err(e) => format!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="60"><text x="10" y="30">plot failed: {}</text></svg>"#,
            e.to_string().replace('&', "&amp;").replace('<', "&lt;")
        ),
    }
}

fn groups(table: &StagingTable) -> Vec<(String, [Bar; 3], f64)> {
    table
        .entries
        .iter()
        .map(|e| {
            (
                format!("{} x{} {}³", e.dtype, e.repeats, e.grid[0]),
                [
                    Some((e.best_plain_ms, e.best_plain_block)),
                    Some((e.best_staged_ms, e.best_staged_block)),
                    e.best_streaming_ms.zip(e.best_streaming_block),
                ],
                e.benefit,
            )
        })
        .collect()
}

type Res = Result<(), Box<dyn std::error::Error>>;

fn draw(
    root: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    device: &str,
    groups: &[(String, [Bar; 3], f64)],
    width: u32,
) -> Res {
    root.fill(&WHITE)?;
    let title = format!("{device}: 3-D stencil, best block per variant");
    root.draw(&Text::new(
        title,
        (width as i32 / 2, 10),
        font(TITLE_PX, TEXT).pos(Pos::new(HPos::Center, VPos::Top)),
    ))?;
    let top_ms = groups
        .iter()
        .flat_map(|g| g.1.iter().flatten().map(|b| b.0))
        .fold(0.0, f64::max)
        .max(1e-6);
    let mut y = AxisPlan::new(&[0.0, top_ms * 1.1], Unit::Millis, Scale::Linear, 10);
    y.ticks.retain(|t| *t >= 0.0);
    let n = groups.len().max(1) as f64;
    let area = root
        .clone()
        .shrink((0, TITLE_H), (width - LEGEND_W, PLOT_H + X_AXIS_H));
    let centers: Vec<f64> = (0..groups.len()).map(|g| g as f64 + 0.5).collect();
    let mut chart = ChartBuilder::on(&area)
        .margin_left(MARGIN)
        .margin_right(MARGIN)
        .x_label_area_size(X_AXIS_H)
        .y_label_area_size(Y_AXIS_W)
        .build_cartesian_2d(
            AxisPlan::fixed(0.0, n, centers, Unit::Plain),
            AxisPlan::fixed(0.0, y.hi, y.ticks.clone(), Unit::Millis),
        )?;
    let x_label = |v: &f64| {
        groups
            .get(v.floor().max(0.0) as usize)
            .map_or(String::new(), |g| g.0.clone())
    };
    let y_label = |v: &f64| y.label(*v);
    style::mesh(&mut chart.configure_mesh())
        .disable_x_mesh()
        .x_label_formatter(&x_label)
        .y_label_formatter(&y_label)
        .x_desc("dtype, repeats, grid")
        .y_desc("best median time")
        .draw()?;
    for (g, (_, bars, benefit)) in groups.iter().enumerate() {
        let x0 = g as f64 + 0.14;
        for (b, bar) in bars.iter().enumerate() {
            let Some((ms, _)) = bar else { continue };
            let left = x0 + 0.24 * b as f64;
            let rect = Rectangle::new([(left, 0.0), (left + 0.22, *ms)], style::color(b).filled());
            chart.draw_series(std::iter::once(rect))?;
        }
        let top = bars.iter().flatten().map(|b| b.0).fold(0.0, f64::max);
        let label = format!("{}×", human::sig3(*benefit));
        let style = font(SMALL_PX, TEXT).pos(Pos::new(HPos::Center, VPos::Bottom));
        chart.draw_series(std::iter::once(Text::new(
            label,
            (g as f64 + 0.5, top),
            style,
        )))?;
    }
    let legend = root
        .clone()
        .shrink((width - LEGEND_W, TITLE_H), (LEGEND_W, PLOT_H));
    for (b, name) in BARS.iter().enumerate() {
        let y = 4 + 18 * b as i32;
        legend.draw(&Rectangle::new(
            [(6, y + 2), (20, y + 12)],
            style::color(b).filled(),
        ))?;
        legend.draw(&Text::new(
            name.to_string(),
            (28, y),
            font(LABEL_PX, TEXT).pos(Pos::new(HPos::Left, VPos::Top)),
        ))?;
    }
    let note = "above each group: benefit of staging (best plain / best staged)";
    root.draw(&Text::new(
        note,
        (MARGIN as i32, (TITLE_H + PLOT_H + X_AXIS_H + 6) as i32),
        font(SMALL_PX, MUTED).pos(Pos::new(HPos::Left, VPos::Top)),
    ))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use memtune_core::profile::StagingEntry;

    #[test]
    fn a_group_of_bars_per_entry_with_its_benefit() {
        let entry = |repeats, streaming: Option<f64>| StagingEntry {
            dtype: "f32".into(),
            repeats,
            grid: [512; 3],
            best_plain_block: [32, 8, 1],
            best_plain_ms: 0.5,
            best_staged_block: [32, 4, 2],
            best_staged_ms: 0.8,
            benefit: 0.625,
            best_streaming_block: streaming.map(|_| [128, 2, 1]),
            best_streaming_ms: streaming,
        };
        let svg = staging_svg(
            "GPU <x>",
            &StagingTable {
                entries: vec![entry(1, Some(0.45)), entry(6, None)],
            },
        );
        let bar_fill = |b: usize| {
            let c = style::color(b);
            format!("fill=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2)
        };
        // Bars plus one legend key each: 2 plain, 2 staged, 1 streaming.
        assert_eq!(svg.matches(&bar_fill(0)).count(), 2 + 1);
        assert_eq!(svg.matches(&bar_fill(1)).count(), 2 + 1);
        assert_eq!(svg.matches(&bar_fill(2)).count(), 1 + 1);
        assert!(svg.contains("f32 x6 512³") && svg.contains("0.625×"));
        assert!(svg.contains("GPU &lt;x&gt;"), "device names are escaped");
    }
}
