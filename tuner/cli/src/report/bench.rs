//! Benchmark results (`bench-*.json` as `cargo tune bench --out` writes them): each
//! workload's targets, its table, and a figure of time against size with the spread of the
//! repeated runs as bands.

use super::html::{badge, esc, facts, figure, note, section, table};
use crate::plot::{Axis, Curve, Figure, Point, Unit};
use memtune_core::human::{bandwidth, bytes, millis, sig3};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
pub struct BenchFile {
    #[serde(default)]
    pub workload: String,
    #[serde(default)]
    pub date: String,
    #[serde(default)]
    pub device: Device,
    #[serde(default)]
    pub device_copy: Option<Copy>,
    #[serde(default)]
    pub rounds: u32,
    #[serde(default)]
    pub runs: u32,
    #[serde(default)]
    pub rows: Vec<Row>,
    #[serde(default)]
    pub table: Vec<TableRow>,
    #[serde(default)]
    pub targets: Vec<Target>,
    #[serde(default)]
    pub errors: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Device {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub uuid: String,
}

#[derive(Debug, Deserialize)]
pub struct Copy {
    pub gb_per_s: f64,
}

/// One timed version of a row.
#[derive(Debug, Default, Deserialize)]
pub struct Timed {
    #[serde(default)]
    pub median_ms: f64,
    #[serde(default)]
    pub runs_ms: Vec<f64>,
}

#[derive(Debug, Deserialize)]
pub struct Row {
    #[serde(default)]
    pub size_bytes: u64,
    #[serde(default)]
    pub untuned: Timed,
    #[serde(default)]
    pub tuned: Timed,
    #[serde(default)]
    pub best: Timed,
    #[serde(default)]
    pub autotuned: Option<Timed>,
}

#[derive(Debug, Deserialize)]
pub struct TableRow {
    #[serde(default)]
    pub variant: String,
    #[serde(default)]
    pub memory: String,
    #[serde(default)]
    pub bytes: u64,
    #[serde(default)]
    pub untuned_ms: f64,
    #[serde(default)]
    pub plan_ms: f64,
    #[serde(default)]
    pub plan_config: String,
    #[serde(default)]
    pub autotuned_ms: Option<f64>,
    #[serde(default)]
    pub autotuned_config: Option<String>,
    #[serde(default)]
    pub best_ms: f64,
    #[serde(default)]
    pub best_config: String,
}

#[derive(Debug, Deserialize)]
pub struct Target {
    pub target: String,
    pub met: bool,
    #[serde(default)]
    pub detail: String,
    #[serde(default)]
    pub misses: Vec<String>,
}

/// The line a bench row belongs to: its variant without the sizes in it (`device 64 MiB,
/// 1024 reads` and `device 8 GiB, 1024 reads` share `device, 1024 reads`).
fn line_of(variant: &str) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let words: Vec<&str> = variant.split(' ').collect();
    let mut kept: Vec<String> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = words[i].trim_end_matches(',');
        let unit = words.get(i + 1).map(|u| u.trim_end_matches(','));
        if w.parse::<f64>().is_ok() && unit.is_some_and(|u| units.contains(&u)) {
            // Keep the punctuation that followed the unit (`64 MiB,`).
            let tail = &words[i + 1][unit.map_or(0, str::len)..];
            if let Some(last) = kept.last_mut() {
                last.push_str(tail);
            }
            i += 2;
            continue;
        }
        let grid = w.split('x').filter(|p| p.parse::<u32>().is_ok()).count() == 3;
        let big = w.parse::<u64>().is_ok_and(|n| n >= 1 << 16);
        if !(grid || big) {
            kept.push(words[i].to_string());
        }
        i += 1;
    }
    let line = kept.join(" ");
    if line.is_empty() {
        "all".to_string()
    } else {
        line
    }
}

/// Time against size, a panel per line: untuned, model plan, autotuned, exhaustive best,
/// each run's spread as a band.
pub fn chart(b: &BenchFile) -> Figure {
    let mut curves: Vec<Curve> = Vec::new();
    let lines: Vec<String> = {
        let mut v: Vec<String> = Vec::new();
        for t in &b.table {
            let l = line_of(&t.variant);
            if !v.contains(&l) {
                v.push(l);
            }
        }
        v
    };
    type Pick = fn(&Row) -> Option<&Timed>;
    let versions: [(&str, Pick); 4] = [
        ("untuned", |r| Some(&r.untuned)),
        ("model plan", |r| Some(&r.tuned)),
        ("autotuned", |r| r.autotuned.as_ref()),
        ("exhaustive best", |r| Some(&r.best)),
    ];
    for line in &lines {
        for (name, pick) in versions {
            let mut points: Vec<Point> = b
                .rows
                .iter()
                .zip(&b.table)
                .filter(|(_, t)| &line_of(&t.variant) == line)
                .filter_map(|(r, _)| {
                    let t = pick(r)?;
                    let lo = t.runs_ms.iter().copied().fold(f64::INFINITY, f64::min);
                    let hi = t.runs_ms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    let band = (lo.is_finite() && hi.is_finite()).then_some((lo, hi));
                    (t.median_ms > 0.0).then_some(Point {
                        x: r.size_bytes as f64,
                        y: t.median_ms,
                        band,
                    })
                })
                .collect();
            points.sort_by(|a, b| a.x.total_cmp(&b.x));
            if !points.is_empty() {
                curves.push(Curve {
                    label: name.to_string(),
                    group: (lines.len() > 1).then(|| line.clone()),
                    points,
                });
            }
        }
    }
    Figure {
        title: format!("{}: {} benchmark", b.device.name, b.workload),
        x: Axis::log("size", Unit::Bytes),
        y: Axis::auto("median time", Unit::Millis),
        curves,
        markers: vec![],
        note: Some("bands: fastest to slowest of the repeated runs".to_string()),
    }
}

fn targets(b: &BenchFile) -> String {
    let rows: Vec<Vec<String>> = b
        .targets
        .iter()
        .map(|t| {
            let misses: String = t.misses.iter().map(|m| format!("<br>{}", esc(m))).collect();
            vec![
                badge(t.met, "met", "missed"),
                esc(&t.target),
                format!("{}{misses}", esc(&t.detail)),
            ]
        })
        .collect();
    table(&["", "target", "detail"], &rows)
}

fn results(b: &BenchFile) -> String {
    let rows: Vec<Vec<String>> = b
        .table
        .iter()
        .map(|t| {
            let auto = t.autotuned_ms.map_or("-".into(), |ms| {
                format!(
                    "{} <small>{}</small>",
                    millis(ms),
                    esc(t.autotuned_config.as_deref().unwrap_or(""))
                )
            });
            let ratio = |a: f64, b: f64| if b > 0.0 { sig3(a / b) } else { "-".into() };
            vec![
                esc(&t.variant),
                esc(&t.memory),
                bytes(t.bytes),
                millis(t.untuned_ms),
                format!(
                    "{} <small>{}</small>",
                    millis(t.plan_ms),
                    esc(&t.plan_config)
                ),
                auto,
                format!(
                    "{} <small>{}</small>",
                    millis(t.best_ms),
                    esc(&t.best_config)
                ),
                ratio(t.plan_ms, t.best_ms),
                t.autotuned_ms.map_or("-".into(), |a| ratio(a, t.best_ms)),
            ]
        })
        .collect();
    let head = [
        "case",
        "memory",
        "size",
        "untuned",
        "model plan",
        "autotuned",
        "exhaustive best",
        "plan/best",
        "autotuned/best",
    ];
    table(&head, &rows)
}

/// The section of every bench file, with a warning where a file is of another GPU.
pub fn section_html(files: &[(String, BenchFile)], profile_uuid: &str) -> String {
    let mut body = String::new();
    for (name, b) in files {
        body.push_str(&format!(
            "<h3>{} <small>({})</small></h3>\n",
            esc(&b.workload),
            esc(name)
        ));
        let met = b.targets.iter().filter(|t| t.met).count();
        let mut rows = vec![
            (
                "device",
                format!("{} ({})", esc(&b.device.name), esc(&b.device.uuid)),
            ),
            ("date", esc(&b.date)),
            ("rounds x runs", format!("{} x {}", b.rounds, b.runs)),
            ("targets met", format!("{met} of {}", b.targets.len())),
        ];
        if let Some(c) = &b.device_copy {
            rows.push(("device copy", bandwidth(c.gb_per_s * 1e9)));
        }
        body.push_str(&facts(&rows));
        if !b.device.uuid.is_empty() && b.device.uuid != profile_uuid {
            body.push_str(&note(
                "this benchmark ran on another GPU than the profile's",
            ));
        }
        for e in &b.errors {
            body.push_str(&format!("<p class=\"bad\">error: {}</p>", esc(e)));
        }
        body.push_str(&targets(b));
        body.push_str(&results(b));
        body.push_str(&figure(&chart(b).to_svg()));
    }
    if files.is_empty() {
        body.push_str(&note("no bench-*.json files in the folder given"));
    }
    section("bench", "Benchmarks", &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_drop_the_sizes() {
        assert_eq!(line_of("device 64 MiB, 1024 reads"), "device, 1024 reads");
        assert_eq!(line_of("device 1.50 GiB, 64 reads"), "device, 64 reads");
        assert_eq!(
            line_of("table 64 MiB (device), 67108864 keys pinned"),
            "table (device), keys pinned"
        );
        assert_eq!(line_of("512x512x512 f32 x6"), "f32 x6");
    }
}
