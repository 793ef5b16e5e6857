//! The configurations each workload can run, as the exhaustive sweeps of `cargo tune bench`
//! and the staging probe try them: untuned plans, sweeps, and the short labels tables print.

use memtune_core::plan::{Approach, GroupingPlan, SamplingPlan, StencilPlan, Variant};
use memtune_core::size::format_bytes;

const MIB: u64 = 1 << 20;

/// The smallest scope the sweeps try: scopes that fit the L2 pay too (an H200 ran a 64 MiB
/// region 2x faster in four 16 MiB scopes,
/// `git show 2317edf:benchmarks/results/2026-11-22-h200-kernel-explore/`).
pub const MIN_SCOPE_BYTES: u64 = 16 * MIB;
/// Pass counts the exhaustive sweeps try (each capped so a scope stays >= [`MIN_SCOPE_BYTES`]).
pub const PASSES: [u32; 6] = [1, 2, 4, 8, 16, 32];
/// Block shapes the stencil sweep tries, per variant where allowed.
pub const STENCIL_BLOCKS: [[u32; 3]; 8] = [
    [32, 4, 2],
    [32, 4, 1],
    [32, 8, 1],
    [64, 4, 1],
    [32, 4, 4],
    [16, 8, 4],
    [32, 8, 2],
    [128, 2, 1],
];
/// Pass counts of [`PASSES`] whose scopes of `total / passes` stay >= [`MIN_SCOPE_BYTES`]
/// (always at least one pass).
pub fn pass_counts(total: u64) -> Vec<u32> {
    PASSES
        .iter()
        .copied()
        .filter(|&p| p == 1 || total / u64::from(p) >= MIN_SCOPE_BYTES)
        .collect()
}

/// Scope bytes for `passes` equal scopes of `total` bytes, rounded up to `unit`.
fn scope_of(total: u64, passes: u32, unit: u64) -> u64 {
    total.div_ceil(u64::from(passes)).div_ceil(unit) * unit
}

/// The untuned sampling plan: one pass.
pub fn sampling_untuned(region: u64) -> SamplingPlan {
    sampling_plan(region, 1)
}

fn sampling_plan(region: u64, passes: u32) -> SamplingPlan {
    SamplingPlan {
        scope_bytes: if passes == 1 {
            region
        } else {
            scope_of(region, passes, 4)
        },
        passes,
        predicted_speedup: 1.0,
        reasons: vec!["benchmark sweep".into()],
    }
}

/// The sampling sweep over `region` bytes.
pub fn sampling_sweep(region: u64) -> Vec<SamplingPlan> {
    pass_counts(region)
        .into_iter()
        .map(|p| sampling_plan(region, p))
        .collect()
}

/// The untuned grouping plan: one pass, unscoped.
pub fn grouping_untuned(table: u64) -> GroupingPlan {
    grouping_plan(table, 1, Approach::Unscoped)
}

fn grouping_plan(table: u64, passes: u32, approach: Approach) -> GroupingPlan {
    GroupingPlan {
        scope_bytes: if passes == 1 {
            table
        } else {
            scope_of(table, passes, 8)
        },
        passes,
        approach,
        reasons: vec!["benchmark sweep".into()],
    }
}

/// The grouping sweep over a `table`-byte table: unscoped, then naive and copy at every
/// pass count above 1.
pub fn grouping_sweep(table: u64) -> Vec<GroupingPlan> {
    let mut out = vec![grouping_untuned(table)];
    for approach in [Approach::Naive, Approach::Copy] {
        for p in pass_counts(table).into_iter().filter(|&p| p > 1) {
            out.push(grouping_plan(table, p, approach));
        }
    }
    out
}

/// The untuned stencil plan: plain with the planner's conservative default block.
pub fn stencil_untuned() -> StencilPlan {
    stencil_plan(Variant::Plain, memtune_core::plan::stencil::DEFAULT_BLOCK)
}

fn stencil_plan(variant: Variant, block: [u32; 3]) -> StencilPlan {
    StencilPlan {
        variant,
        block,
        staging: variant != Variant::Plain,
        reasons: vec!["benchmark sweep".into()],
    }
}

/// The stencil sweep: plain and staged with every block of [`STENCIL_BLOCKS`], streaming
/// with the one-plane ones. Blocks the kernels cannot take are dropped by the caller
/// (`memtune::launch::stencil_launch` says which).
pub fn stencil_sweep() -> Vec<StencilPlan> {
    let mut out = Vec::new();
    for variant in [Variant::Plain, Variant::Staged, Variant::Streaming] {
        for block in STENCIL_BLOCKS {
            if variant == Variant::Streaming && block[2] != 1 {
                continue;
            }
            out.push(stencil_plan(variant, block));
        }
    }
    out
}

/// The plans of [`stencil_sweep`] the kernels can take on a `dims` volume of
/// `elem_bytes`-byte cells (`memtune::launch::stencil_launch` accepts them), in sweep
/// order. Shared by `cargo tune bench stencil` and the staging probe (`memtune_probe::gpu::staging`).
pub fn stencil_candidates(dims: [u32; 3], repeats: u32, elem_bytes: u64) -> Vec<StencilPlan> {
    let cells = dims.iter().map(|&d| d as usize).product::<usize>();
    stencil_sweep()
        .into_iter()
        .filter(|p| crate::launch::stencil_launch(dims, cells, repeats, p, elem_bytes).is_ok())
        .collect()
}

/// A short name of a configuration, as the tables and the JSON print it.
pub fn sampling_label(p: &SamplingPlan) -> String {
    if p.passes == 1 {
        "1 pass".into()
    } else {
        format!("{} passes x {}", p.passes, format_bytes(p.scope_bytes))
    }
}

pub fn grouping_label(p: &GroupingPlan) -> String {
    if p.passes == 1 {
        "1 pass".into()
    } else {
        format!(
            "{} {} x {}",
            p.approach.as_str(),
            p.passes,
            format_bytes(p.scope_bytes)
        )
    }
}

pub fn stencil_label(p: &StencilPlan) -> String {
    let v = match p.variant {
        Variant::Plain => "plain",
        Variant::Staged => "staged",
        Variant::Streaming => "streaming",
    };
    format!("{v} {}x{}x{}", p.block[0], p.block[1], p.block[2])
}

/// The stencil case name used by the rows and the bandwidth check.
pub fn stencil_case(dims: [u32; 3], dtype: &str, repeats: u32) -> String {
    format!("{}x{}x{} {dtype} x{repeats}", dims[0], dims[1], dims[2])
}
