//! `cargo tune plan`: what the planners decide for a workload, and why, for any profile.

use super::render::bytes;
use super::size;
use crate::exit::{CliError, Exit};
use clap::{Args, Subcommand};
use memtune_core::lookup::{self, LookupConfig};
use memtune_core::plan::grouping::{self, GroupingWorkload};
use memtune_core::plan::sampling::{self, SamplingWorkload};
use memtune_core::plan::stencil::{self, Dtype, StencilWorkload};
use memtune_core::{store, MemoryKind, Profile};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

#[derive(Debug, Subcommand)]
pub enum PlanCommand {
    /// Random sampling: TLB scope size and number of passes.
    Sampling {
        /// Size of the sampled region.
        #[arg(long, value_parser = size::parse, value_name = "SIZE")]
        region: u64,
        /// Where the region lives: device, pinned or managed.
        #[arg(long, default_value = "device")]
        memory: MemoryKind,
        /// Random reads each thread makes.
        #[arg(long, default_value_t = 64)]
        reads_per_thread: u32,
        #[command(flatten)]
        source: ProfileArg,
    },
    /// Hash grouping: TLB scope size, passes, and naive or copy.
    Grouping {
        /// Size of the hash table.
        #[arg(long, value_parser = size::parse, value_name = "SIZE")]
        table: u64,
        #[arg(long, default_value = "device")]
        table_memory: MemoryKind,
        #[arg(long, default_value = "pinned")]
        input_memory: MemoryKind,
        /// Size of the input (default: the planner's assumption, stated in its reasons).
        #[arg(long, value_parser = size::parse, value_name = "SIZE")]
        input: Option<u64>,
        #[command(flatten)]
        source: ProfileArg,
    },
    /// 3-D stencil: variant, block shape and shared-memory staging.
    Stencil {
        /// Grid cells, e.g. 512x512x512 (x fastest).
        #[arg(long, value_parser = parse_dims, value_name = "XxYxZ")]
        dims: [u32; 3],
        /// f32 or f64.
        #[arg(long, default_value = "f32", value_parser = parse_dtype)]
        dtype: Dtype,
        /// Times each cell's neighbours are read per sweep.
        #[arg(long, default_value_t = 1)]
        repeats: u32,
        #[command(flatten)]
        source: ProfileArg,
    },
}

#[derive(Debug, Args)]
pub struct ProfileArg {
    /// Plan for this profile file (default: the lookup chain for GPU 0).
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
}

fn parse_dims(text: &str) -> Result<[u32; 3], String> {
    let parts: Vec<&str> = text.split(['x', 'X']).collect();
    let bad = || format!("`{text}` is not XxYxZ, e.g. 512x512x512");
    if parts.len() != 3 {
        return Err(bad());
    }
    let mut dims = [0; 3];
    for (d, p) in dims.iter_mut().zip(&parts) {
        *d = p.trim().parse().map_err(|_| bad())?;
    }
    Ok(dims)
}

fn parse_dtype(text: &str) -> Result<Dtype, String> {
    match text {
        "f32" => Ok(Dtype::F32),
        "f64" => Ok(Dtype::F64),
        _ => Err(format!("`{text}`: dtype is f32 or f64")),
    }
}

/// The profile to plan for, and a line saying where it came from.
fn profile(path: Option<&Path>, quiet: bool) -> Result<(Profile, String), CliError> {
    if let Some(path) = path {
        return Ok((store::load_path(path)?, path.display().to_string()));
    }
    let wanted = super::commands::wanted_device()?;
    let root = lookup::current_project_root();
    let config = LookupConfig::try_from_env(Some(&root)).map_err(super::env_error)?;
    let resolved = lookup::resolve(&config, &wanted)?;
    if !quiet {
        for w in &resolved.warnings {
            eprintln!("warning: {w}");
        }
    }
    Ok((resolved.profile, resolved.source.to_string()))
}

fn plan_error(e: memtune_core::plan::PlanError) -> CliError {
    CliError::new(Exit::Usage, e.to_string())
}

pub fn run(command: &PlanCommand, json_out: bool, quiet: bool) -> Result<Exit, CliError> {
    let (source_path, headline, plan, reasons, workload): (_, String, Value, Vec<String>, Value) =
        match command {
            PlanCommand::Sampling {
                region,
                memory,
                reads_per_thread,
                source,
            } => {
                let (p, src) = profile(source.profile.as_deref(), quiet)?;
                let w = SamplingWorkload {
                    region_bytes: *region,
                    memory: *memory,
                    reads_per_thread: *reads_per_thread,
                };
                let model = sampling::plan(&p, &w).map_err(plan_error)?;
                let plan = memtune_core::plan::sampling_untimed(&p, &w).map_err(plan_error)?;
                let headline = if model.passes != plan.passes {
                    format!(
                        "sampling {} of {memory} memory: unscoped (1 pass) without timing; the model's {} passes over scopes of {} are a bet on the kernel, for the autotuner",
                        bytes(*region), model.passes, bytes(model.scope_bytes)
                    )
                } else if plan.passes == 1 {
                    format!(
                        "sampling {} of {memory} memory: unscoped (1 pass)",
                        bytes(*region)
                    )
                } else {
                    format!(
                    "sampling {} of {memory} memory: {} passes over scopes of {} (predicted {:.2}x)",
                    bytes(*region), plan.passes, bytes(plan.scope_bytes), plan.predicted_speedup
                )
                };
                (
                    (p, src),
                    headline,
                    json!(plan),
                    plan.reasons.clone(),
                    json!(w),
                )
            }
            PlanCommand::Grouping {
                table,
                table_memory,
                input_memory,
                input,
                source,
            } => {
                let (p, src) = profile(source.profile.as_deref(), quiet)?;
                let w = GroupingWorkload {
                    table_bytes: *table,
                    table_memory: *table_memory,
                    input_memory: *input_memory,
                    input_bytes: *input,
                };
                let model = grouping::plan(&p, &w).map_err(plan_error)?;
                let plan = memtune_core::plan::grouping_untimed(&p, &w).map_err(plan_error)?;
                let headline = if model.passes != plan.passes {
                    format!("grouping into a {} table in {table_memory} memory, input in {input_memory}: unscoped (1 pass) without timing; the model's {} {} passes over scopes of {} are a bet on the kernel, for the autotuner", bytes(*table), model.approach.as_str(), model.passes, bytes(model.scope_bytes))
                } else if plan.passes == 1 {
                    format!("grouping into a {} table in {table_memory} memory, input in {input_memory}: unscoped (1 pass)", bytes(*table))
                } else {
                    format!(
                    "grouping into a {} table in {table_memory} memory, input in {input_memory}: {} with {} passes over scopes of {}",
                    bytes(*table), plan.approach.as_str(), plan.passes, bytes(plan.scope_bytes)
                )
                };
                (
                    (p, src),
                    headline,
                    json!(plan),
                    plan.reasons.clone(),
                    json!(w),
                )
            }
            PlanCommand::Stencil {
                dims,
                dtype,
                repeats,
                source,
            } => {
                let (p, src) = profile(source.profile.as_deref(), quiet)?;
                let w = StencilWorkload {
                    dims: *dims,
                    dtype: *dtype,
                    repeats: *repeats,
                };
                let model = stencil::plan(&p, &w).map_err(plan_error)?;
                let plan = memtune_core::plan::stencil_untimed(&p, &w).map_err(plan_error)?;
                let bet = if model.variant != plan.variant || model.block != plan.block {
                    let [x, y, z] = model.block;
                    format!(" without timing; the model's {} {x}x{y}x{z} is a bet on the kernel, for the autotuner", model.variant.as_str())
                } else {
                    String::new()
                };
                let headline = format!(
                    "stencil {}x{}x{} {}, {} repeats: {:?} with block {}x{}x{}{}{bet}",
                    dims[0],
                    dims[1],
                    dims[2],
                    dtype.as_str(),
                    repeats,
                    plan.variant,
                    plan.block[0],
                    plan.block[1],
                    plan.block[2],
                    if plan.staging {
                        ", staged in shared memory"
                    } else {
                        ""
                    }
                );
                (
                    (p, src),
                    headline,
                    json!(plan),
                    plan.reasons.clone(),
                    json!(w),
                )
            }
        };
    let (profile, source) = source_path;
    if json_out {
        let mut doc = plan;
        if let Value::Object(map) = &mut doc {
            map.insert("workload".into(), workload);
            map.insert(
                "profile".into(),
                json!({"uuid": profile.device.uuid, "name": profile.device.name, "digest": profile.digest,
                       "source": source, "simulated": profile.is_simulated()}),
            );
        }
        println!("{doc:#}");
    } else {
        println!("{headline}");
        for r in &reasons {
            println!("  - {r}");
        }
        println!(
            "profile: {} ({}), from {source}",
            profile.device.name, profile.device.uuid
        );
    }
    Ok(Exit::Ok)
}
