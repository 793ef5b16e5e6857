//! `cargo tune report`'s page: one self-contained HTML file (inline style and SVG, no
//! script, nothing fetched) with the device, every section of the profile as tables and
//! figures, the planners' decisions for typical workloads, the autotuner's stored
//! decisions and, when given, benchmark results with their targets.

mod bench;
mod html;
mod plans;
mod profile;

pub use bench::{chart as bench_chart, BenchFile};
pub(crate) use profile::{cache_line, l2_read_text, sharing_note};

use html::{esc, note, section, table};
use memtune_core::Profile;

/// One stored autotuner decision, as the report lists it.
pub struct DecisionRow {
    pub source: String,
    pub workload: String,
    pub kernel: String,
    pub memory: String,
    pub size: String,
    pub chosen: String,
    pub outcome: String,
}

/// Everything the page shows.
pub struct Inputs<'a> {
    pub profile: &'a Profile,
    /// Where the profile came from (a file, a store).
    pub source: String,
    /// Bench files by name; `None` when no folder was given.
    pub bench: Option<Vec<(String, BenchFile)>>,
    /// Stored decisions, or why they could not be read.
    pub decisions: Result<Vec<DecisionRow>, String>,
}

fn decisions(rows: &Result<Vec<DecisionRow>, String>) -> String {
    let body = match rows {
        Err(e) => note(e),
        Ok(rows) if rows.is_empty() => {
            note("no stored decisions (user cache and project .memtune/decisions/)")
        }
        Ok(rows) => {
            let cells: Vec<Vec<String>> = rows
                .iter()
                .map(|d| {
                    [
                        &d.source,
                        &d.workload,
                        &d.kernel,
                        &d.memory,
                        &d.size,
                        &d.chosen,
                        &d.outcome,
                    ]
                    .iter()
                    .map(|s| esc(s))
                    .collect()
                })
                .collect();
            let head = [
                "store", "workload", "kernel", "memory", "size", "chosen", "outcome",
            ];
            table(&head, &cells)
        }
    };
    section("decisions", "Autotuner's stored decisions", &body)
}

/// The page.
pub fn html(inputs: &Inputs) -> String {
    let p = inputs.profile;
    let mut body = String::new();
    body.push_str(&profile::device(p, &inputs.source));
    body.push_str(&profile::tlb(p));
    body.push_str(&profile::random_access(p));
    body.push_str(&profile::caches(p));
    body.push_str(&profile::staging(p));
    body.push_str(&profile::bandwidth_section(p));
    body.push_str(&plans::section_html(p));
    body.push_str(&decisions(&inputs.decisions));
    let mut nav = vec![
        ("device", "Device"),
        ("tlb", "TLB"),
        ("random-access", "Random access"),
        ("caches", "Caches"),
        ("staging", "Staging"),
        ("bandwidth", "Bandwidth"),
        ("plans", "Plans"),
        ("decisions", "Decisions"),
    ];
    if let Some(files) = &inputs.bench {
        body.push_str(&bench::section_html(files, &p.device.uuid));
        nav.push(("bench", "Benchmarks"));
    }
    let subtitle = format!(
        "{}, {} SMs, compute capability {}; profiled {}",
        p.device.uuid, p.device.sm_count, p.device.compute_capability, p.provenance.created_at
    );
    html::page(
        &format!("memtune report: {}", p.device.name),
        &subtitle,
        &nav,
        &body,
    )
}
