//! `cargo tune bench`'s human output: the table of each workload and its chart.

use super::sweep::Row;
use super::Report;
use crate::plot::{Chart, Series};

pub fn print(r: &Report) {
    let ms = memtune_core::human::millis;
    println!("\n{}", r.workload);
    println!(
        "{:<36} {:>10} {:>10} {:>10}  {:<24} {:>9} {:>12} {:>5}",
        "size", "untuned", "plan", "best", "best config", "plan/best", "untuned/plan", "match"
    );
    for row in &r.rows {
        println!(
            "{:<36} {:>10} {:>10} {:>10}  {:<24} {:>9.3} {:>12.3} {:>5}",
            row.case,
            ms(row.untuned.median_ms),
            ms(row.tuned.median_ms),
            ms(row.best.median_ms),
            row.best.config,
            row.plan_over_best(),
            row.untuned_over_plan(),
            if row.results_match { "yes" } else { "NO" }
        );
        println!("    plan: {}", row.tuned.config);
        match (&row.autotuned, &row.autotune_error) {
            (Some(a), _) => println!(
                "    autotuned: {} {} (autotuned/best {:.3}, untuned/autotuned {:.3}, in pairs where they differ); {} candidates, tuning {} = {:.1} untuned launches",
                a.config,
                ms(a.median_ms),
                a.over_best(row.best.median_ms),
                a.untuned_over(row.untuned.median_ms),
                a.candidates.len(),
                ms(a.tuning_ms),
                a.cost_in_untuned.unwrap_or(f64::NAN)
            ),
            (None, Some(e)) => println!("    autotune failed: {e}"),
            (None, None) => {}
        }
        for s in &row.skipped {
            println!("    skipped {s}");
        }
    }
    for e in &r.errors {
        println!("  error: {e}");
    }
    for c in &r.checks {
        println!(
            "  {} {}: {}",
            if c.met { "MET   " } else { "MISSED" },
            c.target,
            c.detail
        );
        for m in &c.misses {
            println!("      {m}");
        }
    }
}

/// Which time of a row a chart line shows.
type Pick = fn(&Row) -> f64;

/// Time against size, one line per version and memory (sampling regions in device or
/// pinned memory, grouping tables in device or pinned memory).
pub fn chart(device: &str, r: &Report) -> Chart {
    // Rows of one memory and kernel variant share a line: a case's "N reads", "work N" and
    // "N-point" parts name its variant.
    let group_of = |case: &str| -> String {
        let memory = if case.contains("(pinned)") {
            "pinned table"
        } else if case.starts_with("pinned") {
            "pinned"
        } else if case.starts_with("device") {
            "device"
        } else {
            ""
        };
        let variant = case
            .split(", ")
            .skip(1)
            .filter(|p| p.ends_with(" reads") || p.starts_with("work ") || p.ends_with("-point"));
        std::iter::once(memory)
            .chain(variant)
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut groups: Vec<String> = Vec::new();
    for x in &r.rows {
        let g = group_of(&x.case);
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    let mut series = Vec::new();
    for group in groups {
        let versions: [(&str, Pick); 4] = [
            ("untuned", |x| x.untuned.median_ms),
            ("model plan", |x| x.tuned.median_ms),
            ("autotuned", |x| {
                x.autotuned.as_ref().map_or(f64::NAN, |a| a.median_ms)
            }),
            ("exhaustive best", |x| x.best.median_ms),
        ];
        for (label, pick) in versions {
            series.push(Series {
                label: if group.is_empty() {
                    label.to_string()
                } else {
                    format!("{label}, {group}")
                },
                points: r
                    .rows
                    .iter()
                    .filter(|x| group_of(&x.case) == group)
                    .map(|x| (x.size_bytes as f64, pick(x)))
                    .filter(|p| p.1.is_finite())
                    .collect(),
            });
        }
    }
    Chart {
        title: format!("{device}: {} benchmark", r.workload),
        y_label: "median ms".to_string(),
        series,
        markers: vec![],
    }
}
