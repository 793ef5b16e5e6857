//! The shared-memory staging table as an SVG bar chart (`--plot DIR`): per (dtype, repeats,
//! grid), the best plain, staged and streaming times side by side, with the benefit of
//! staging written above each group. Hand-written SVG, like `plot.rs`.

use memtune_core::profile::StagingTable;
use std::fmt::Write;

const H: f64 = 520.0;
const LEFT: f64 = 70.0;
const TOP: f64 = 60.0;
const BOTTOM: f64 = 80.0;
const GROUP: f64 = 96.0;
const BAR: f64 = 22.0;
const BARS: [(&str, &str); 3] = [
    ("plain", "#1f77b4"),
    ("staged", "#d62728"),
    ("streaming", "#2ca02c"),
];

/// One bar: median ms and the block that gave it.
type Bar = Option<(f64, [u32; 3])>;

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The chart for `table`, measured on `device`.
pub fn staging_svg(device: &str, table: &StagingTable) -> String {
    let groups: Vec<(String, [Bar; 3], f64)> = table
        .entries
        .iter()
        .map(|e| {
            let streaming = e.best_streaming_ms.zip(e.best_streaming_block);
            (
                format!("{} x{} {}³", e.dtype, e.repeats, e.grid[0]),
                [
                    Some((e.best_plain_ms, e.best_plain_block)),
                    Some((e.best_staged_ms, e.best_staged_block)),
                    streaming,
                ],
                e.benefit,
            )
        })
        .collect();
    let w = LEFT + GROUP * groups.len().max(1) as f64 + 150.0;
    let ph = H - TOP - BOTTOM;
    let top_ms = groups
        .iter()
        .flat_map(|g| g.1.iter().flatten().map(|b| b.0))
        .fold(0.0, f64::max)
        .max(1e-6)
        * 1.1;
    let py = |ms: f64| TOP + ph - ms / top_ms * ph;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{H}" viewBox="0 0 {w} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{w}" height="{H}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="15">{}: 3-D stencil, best block per variant (benefit = plain / staged)</text>"#,
        w / 2.0,
        escape(device)
    );
    for i in 0..=5 {
        let ms = top_ms * f64::from(i) / 5.0;
        let y = py(ms);
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#eee"/><text x="{}" y="{:.1}" text-anchor="end">{ms:.2}</text>"##,
            w - 150.0,
            LEFT - 6.0,
            y + 4.0
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="18" y="{c}" text-anchor="middle" transform="rotate(-90 18 {c})">median ms</text>"#,
        c = TOP + ph / 2.0
    );
    for (g, (label, bars, benefit)) in groups.iter().enumerate() {
        let x0 = LEFT + GROUP * g as f64 + 10.0;
        for (b, bar) in bars.iter().enumerate() {
            let Some((ms, block)) = bar else { continue };
            let x = x0 + BAR * b as f64;
            let y = py(*ms);
            let _ = writeln!(
                s,
                r#"<rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{} {}x{}x{}: {ms:.3} ms</title></rect>"#,
                BAR - 2.0,
                TOP + ph - y,
                BARS[b].1,
                BARS[b].0,
                block[0],
                block[1],
                block[2]
            );
        }
        let top = bars.iter().flatten().map(|b| b.0).fold(0.0, f64::max);
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="11">{benefit:.2}x</text>"#,
            x0 + 1.5 * BAR,
            py(top) - 6.0
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="11">{}</text>"#,
            x0 + 1.5 * BAR,
            TOP + ph + 16.0,
            escape(label)
        );
    }
    for (i, (name, color)) in BARS.iter().enumerate() {
        let y = TOP + 14.0 + 18.0 * i as f64;
        let _ = writeln!(
            s,
            r#"<rect x="{:.1}" y="{:.1}" width="14" height="10" fill="{color}"/><text x="{:.1}" y="{:.1}">{name}</text>"#,
            w - 135.0,
            y - 9.0,
            w - 115.0,
            y
        );
    }
    s.push_str("</svg>\n");
    s
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
        assert_eq!(
            svg.matches("<rect x=").count(),
            5 + 3,
            "5 bars and 3 legend keys"
        );
        assert!(svg.contains("f32 x6 512³") && svg.contains("0.62x"));
        assert!(svg.contains("GPU &lt;x&gt;"), "device names are escaped");
        assert!(svg.contains("streaming 128x2x1: 0.450 ms"));
    }
}
