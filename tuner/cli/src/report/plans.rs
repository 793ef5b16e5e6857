//! What the planners decide for a few typical workloads on this profile, with their
//! reasons, as `cargo tune plan` would print them.

use super::html::{esc, section, table};
use memtune_core::human::bytes;
use memtune_core::plan::grouping::GroupingWorkload;
use memtune_core::plan::sampling::SamplingWorkload;
use memtune_core::plan::stencil::{self, Dtype, StencilWorkload};
use memtune_core::plan::{grouping_untimed, sampling_untimed, PlanError};
use memtune_core::{MemoryKind, Profile};

const GIB: u64 = 1 << 30;

/// The workload, the plan without timing, and its reasons.
type Row = (String, Result<(String, Vec<String>), PlanError>);

fn sampling(p: &Profile, region: u64, memory: MemoryKind) -> Row {
    let w = SamplingWorkload {
        region_bytes: region,
        memory,
        reads_per_thread: 64,
    };
    let plan = sampling_untimed(p, &w).map(|plan| {
        let decision = if plan.passes == 1 {
            "unscoped (1 pass)".to_string()
        } else {
            format!(
                "{} passes over scopes of {} (predicted {:.2}x)",
                plan.passes,
                bytes(plan.scope_bytes),
                plan.predicted_speedup
            )
        };
        (decision, plan.reasons)
    });
    (
        format!(
            "sampling {} of {memory} memory, 64 reads/thread",
            bytes(region)
        ),
        plan,
    )
}

fn grouping(p: &Profile, table: u64, memory: MemoryKind) -> Row {
    let w = GroupingWorkload {
        table_bytes: table,
        table_memory: memory,
        input_memory: MemoryKind::Pinned,
        input_bytes: None,
    };
    let plan = grouping_untimed(p, &w).map(|plan| {
        let decision = if plan.passes == 1 {
            "unscoped (1 pass)".to_string()
        } else {
            format!(
                "{} with {} passes over scopes of {}",
                plan.approach.as_str(),
                plan.passes,
                bytes(plan.scope_bytes)
            )
        };
        (decision, plan.reasons)
    });
    (
        format!(
            "grouping into a {} table in {memory} memory, input pinned",
            bytes(table)
        ),
        plan,
    )
}

fn stencil_row(p: &Profile, n: u32, dtype: Dtype, repeats: u32) -> Row {
    let w = StencilWorkload {
        dims: [n; 3],
        dtype,
        repeats,
    };
    let plan = stencil::plan(p, &w).map(|plan| {
        let staged = if plan.staging {
            ", staged in shared memory"
        } else {
            ""
        };
        let b = plan.block;
        let decision = format!(
            "{:?} with block {}x{}x{}{staged}",
            plan.variant, b[0], b[1], b[2]
        );
        (decision, plan.reasons)
    });
    (
        format!("stencil {n}³ {}, {repeats} repeats", dtype.as_str()),
        plan,
    )
}

pub fn section_html(p: &Profile) -> String {
    let rows = [
        sampling(p, GIB, MemoryKind::Device),
        sampling(p, 16 * GIB, MemoryKind::Device),
        sampling(p, 4 * GIB, MemoryKind::Pinned),
        grouping(p, GIB, MemoryKind::Device),
        grouping(p, 256 << 20, MemoryKind::Pinned),
        stencil_row(p, 512, Dtype::F32, 1),
        stencil_row(p, 256, Dtype::F64, 6),
    ];
    let cells: Vec<Vec<String>> = rows
        .into_iter()
        .map(|(workload, plan)| match plan {
            Ok((decision, reasons)) => {
                let items: String = reasons
                    .iter()
                    .map(|r| format!("<li>{}</li>", esc(r)))
                    .collect();
                vec![
                    esc(&workload),
                    format!(
                        "<b>{}</b><ul class=\"reasons\">{items}</ul>",
                        esc(&decision)
                    ),
                ]
            }
            Err(e) => vec![
                esc(&workload),
                format!("<span class=\"bad\">{}</span>", esc(&e.to_string())),
            ],
        })
        .collect();
    let body = table(&["workload", "plan without timing, and why"], &cells);
    section("plans", "Planners' decisions for typical workloads", &body)
}
