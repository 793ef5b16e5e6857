//! `cargo tune plan`: what the planners decide for a workload, and why, for any profile.

use super::render::bytes;
use crate::exit::{CliError, Exit};
use crate::size;
use clap::{Args, Subcommand};
use memtune_core::plan::grouping::GroupingWorkload;
use memtune_core::plan::sampling::SamplingWorkload;
use memtune_core::plan::stencil::{Dtype, StencilWorkload};
use memtune_core::tune::Tunable;
use memtune_core::{MemoryKind, Profile};
use serde::Serialize;
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
    crate::env::profile(path, crate::env::wanted_device, quiet)
}

fn plan_error(e: memtune_core::plan::PlanError) -> CliError {
    CliError::new(Exit::Usage, e.to_string())
}

/// What the planners decide for a workload `w`: the plan used without timing, and the
/// model's pick where it differs (a bet on the kernel, left to the autotuner).
struct Decided<T: Tunable> {
    plan: T::Plan,
    bet: Option<T::Plan>,
    workload: Value,
}

fn decide<T: Tunable + Serialize>(profile: &Profile, w: &T) -> Result<Decided<T>, CliError> {
    let model = w.model(profile).map_err(plan_error)?;
    let plan = w.untimed(profile).map_err(plan_error)?;
    let bet = (T::label(&model) != T::label(&plan)).then_some(model);
    Ok(Decided {
        plan,
        bet,
        workload: json!(w),
    })
}

fn sampling_headline(w: &SamplingWorkload, d: &Decided<SamplingWorkload>) -> String {
    let (region, memory, plan) = (bytes(w.region_bytes), w.memory, &d.plan);
    match &d.bet {
        Some(model) if model.passes == 1 => format!(
            "sampling {region} of {memory} memory: {} passes over scopes of {} without timing, a small bet where the model leaves it unscoped",
            plan.passes,
            bytes(plan.scope_bytes)
        ),
        Some(model) => format!(
            "sampling {region} of {memory} memory: {} without timing; the model's {} passes over scopes of {} are a bet on the kernel, for the autotuner",
            match plan.passes {
                1 => "unscoped (1 pass)".to_string(),
                p => format!("{p} passes over scopes of {}", bytes(plan.scope_bytes)),
            },
            model.passes,
            bytes(model.scope_bytes)
        ),
        None if plan.passes == 1 => format!("sampling {region} of {memory} memory: unscoped (1 pass)"),
        None => format!(
            "sampling {region} of {memory} memory: {} passes over scopes of {} (predicted {:.2}x)",
            plan.passes,
            bytes(plan.scope_bytes),
            plan.predicted_speedup
        ),
    }
}

fn grouping_headline(w: &GroupingWorkload, d: &Decided<GroupingWorkload>) -> String {
    let what = format!(
        "grouping into a {} table in {} memory, input in {}",
        bytes(w.table_bytes),
        w.table_memory,
        w.input_memory
    );
    let plan = &d.plan;
    match &d.bet {
        Some(model) if model.passes == 1 => format!(
            "{what}: {} with {} passes over scopes of {} without timing, a small bet where the model leaves it unscoped",
            plan.approach.as_str(),
            plan.passes,
            bytes(plan.scope_bytes)
        ),
        Some(model) => format!(
            "{what}: {} without timing; the model's {} {} passes over scopes of {} are a bet on the kernel, for the autotuner",
            match plan.passes {
                1 => "unscoped (1 pass)".to_string(),
                p => format!(
                    "{} with {p} passes over scopes of {}",
                    plan.approach.as_str(),
                    bytes(plan.scope_bytes)
                ),
            },
            model.approach.as_str(),
            model.passes,
            bytes(model.scope_bytes)
        ),
        None if plan.passes == 1 => format!("{what}: unscoped (1 pass)"),
        None => format!(
            "{what}: {} with {} passes over scopes of {}",
            plan.approach.as_str(),
            plan.passes,
            bytes(plan.scope_bytes)
        ),
    }
}

fn stencil_headline(w: &StencilWorkload, d: &Decided<StencilWorkload>) -> String {
    let bet = match &d.bet {
        Some(model) => {
            let [x, y, z] = model.block;
            format!(
                " without timing; the model's {} {x}x{y}x{z} is a bet on the kernel, for the autotuner",
                model.variant.as_str()
            )
        }
        None => String::new(),
    };
    let (plan, [dx, dy, dz]) = (&d.plan, w.dims);
    let [x, y, z] = plan.block;
    let staged = if plan.staging {
        ", staged in shared memory"
    } else {
        ""
    };
    format!(
        "stencil {dx}x{dy}x{dz} {}, {} repeats: {:?} with block {x}x{y}x{z}{staged}{bet}",
        w.dtype.as_str(),
        w.repeats,
        plan.variant,
    )
}

/// What `cargo tune plan` prints of a decision: the headline, the plan as JSON, its
/// reasons and the workload.
struct Shown {
    headline: String,
    plan: Value,
    reasons: Vec<String>,
    workload: Value,
}

/// [`decide`] for `w` with the profile at `path` (or the lookup chain's), shown with
/// `headline`.
fn show<T: Tunable + Serialize>(
    path: Option<&Path>,
    quiet: bool,
    w: &T,
    headline: fn(&T, &Decided<T>) -> String,
    reasons: fn(&T::Plan) -> &[String],
) -> Result<((Profile, String), Shown), CliError> {
    let p = profile(path, quiet)?;
    let d = decide(&p.0, w)?;
    let shown = Shown {
        headline: headline(w, &d),
        plan: json!(d.plan),
        reasons: reasons(&d.plan).to_vec(),
        workload: d.workload,
    };
    Ok((p, shown))
}

pub fn run(command: &PlanCommand, json_out: bool, quiet: bool) -> Result<Exit, CliError> {
    let ((profile, source), shown) = match command {
        PlanCommand::Sampling {
            region,
            memory,
            reads_per_thread,
            source,
        } => {
            let w = SamplingWorkload {
                region_bytes: *region,
                memory: *memory,
                reads_per_thread: *reads_per_thread,
            };
            let path = source.profile.as_deref();
            show(path, quiet, &w, sampling_headline, |p| &p.reasons)?
        }
        PlanCommand::Grouping {
            table,
            table_memory,
            input_memory,
            input,
            source,
        } => {
            let w = GroupingWorkload {
                table_bytes: *table,
                table_memory: *table_memory,
                input_memory: *input_memory,
                input_bytes: *input,
            };
            let path = source.profile.as_deref();
            show(path, quiet, &w, grouping_headline, |p| &p.reasons)?
        }
        PlanCommand::Stencil {
            dims,
            dtype,
            repeats,
            source,
        } => {
            let w = StencilWorkload {
                dims: *dims,
                dtype: *dtype,
                repeats: *repeats,
            };
            let path = source.profile.as_deref();
            show(path, quiet, &w, stencil_headline, |p| &p.reasons)?
        }
    };
    let Shown {
        headline,
        plan,
        reasons,
        workload,
    } = shown;
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
