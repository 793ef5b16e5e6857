//! `sampling_plan!`, `grouping_plan!`, `stencil_plan!`: parse the workload, find the profile,
//! run the planner `cargo tune plan` runs, and write its decision out as a constant.

use crate::args::Args;
use crate::emit;
use crate::lookup;
use memtune_core::plan::grouping::{Approach, GroupingWorkload};
use memtune_core::plan::sampling::SamplingWorkload;
use memtune_core::plan::stencil::{Dtype, StencilWorkload, Variant};
use memtune_core::plan::PlanError;
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::Error;

/// `reads_per_thread` when not given: `cargo tune plan sampling`'s default.
const READS_PER_THREAD: u32 = 64;

pub fn sampling(input: TokenStream) -> TokenStream {
    const NAME: &str = "sampling_plan!";
    let fallback = quote!(::memtune::core::compiled::fallback::SAMPLING);
    emit::or_fail(fallback, || {
        let args = Args::parse(
            input,
            NAME,
            &["region", "memory", "reads_per_thread", "profile"],
        )?;
        let workload = SamplingWorkload {
            region_bytes: args.required("region", "16 GiB")?.size()?,
            memory: args.required("memory", "device|pinned|managed")?.memory()?,
            reads_per_thread: match args.get("reads_per_thread") {
                Some(arg) => arg.u32()?,
                None => READS_PER_THREAD,
            },
        };
        let found = lookup::find(args.profile()?.as_ref(), NAME)?;
        let plan = memtune_core::plan::sampling_untimed(&found.profile, &workload)
            .map_err(|e| refused(&args, NAME, e))?;
        let speedup = plan.predicted_speedup;
        if !speedup.is_finite() {
            return Err(Error::new(
                Span::call_site(),
                format!("{NAME}: the planner predicted a speedup of {speedup}: the profile's curves are degenerate; re-run `cargo tune`"),
            ));
        }
        let (region, memory, reads) = (
            workload.region_bytes,
            emit::memory_kind(workload.memory),
            workload.reads_per_thread,
        );
        let (scope, passes) = (plan.scope_bytes, plan.passes);
        let (stamp, reasons) = (emit::stamp(&found), emit::reasons(&plan.reasons));
        Ok(emit::block(
            emit::tracking(&found),
            quote! {
                ::memtune::core::compiled::SamplingConsts {
                    workload: ::memtune::core::plan::sampling::SamplingWorkload {
                        region_bytes: #region,
                        memory: #memory,
                        reads_per_thread: #reads,
                    },
                    scope_bytes: #scope,
                    passes: #passes,
                    predicted_speedup: #speedup,
                    reasons: #reasons,
                    profile: #stamp,
                }
            },
        ))
    })
}

pub fn grouping(input: TokenStream) -> TokenStream {
    const NAME: &str = "grouping_plan!";
    let fallback = quote!(::memtune::core::compiled::fallback::GROUPING);
    emit::or_fail(fallback, || {
        let args = Args::parse(
            input,
            NAME,
            &["table", "table_memory", "input_memory", "input", "profile"],
        )?;
        let memory = "device|pinned|managed";
        let workload = GroupingWorkload {
            table_bytes: args.required("table", "8 GiB")?.size()?,
            table_memory: args.required("table_memory", memory)?.memory()?,
            input_memory: args.required("input_memory", memory)?.memory()?,
            input_bytes: args.get("input").map(|a| a.size()).transpose()?,
        };
        let found = lookup::find(args.profile()?.as_ref(), NAME)?;
        let plan = memtune_core::plan::grouping_untimed(&found.profile, &workload)
            .map_err(|e| refused(&args, NAME, e))?;
        let table = workload.table_bytes;
        let table_memory = emit::memory_kind(workload.table_memory);
        let input_memory = emit::memory_kind(workload.input_memory);
        let input = match workload.input_bytes {
            Some(n) => quote!(::core::option::Option::Some(#n)),
            None => quote!(::core::option::Option::None),
        };
        let approach = match plan.approach {
            Approach::Unscoped => quote!(Unscoped),
            Approach::Naive => quote!(Naive),
            Approach::Copy => quote!(Copy),
        };
        let (scope, passes) = (plan.scope_bytes, plan.passes);
        let (stamp, reasons) = (emit::stamp(&found), emit::reasons(&plan.reasons));
        Ok(emit::block(
            emit::tracking(&found),
            quote! {
                ::memtune::core::compiled::GroupingConsts {
                    workload: ::memtune::core::plan::grouping::GroupingWorkload {
                        table_bytes: #table,
                        table_memory: #table_memory,
                        input_memory: #input_memory,
                        input_bytes: #input,
                    },
                    scope_bytes: #scope,
                    passes: #passes,
                    approach: ::memtune::core::plan::grouping::Approach::#approach,
                    reasons: #reasons,
                    profile: #stamp,
                }
            },
        ))
    })
}

pub fn stencil(input: TokenStream) -> TokenStream {
    const NAME: &str = "stencil_plan!";
    let fallback = quote!(::memtune::core::compiled::fallback::STENCIL);
    emit::or_fail(fallback, || {
        let args = Args::parse(input, NAME, &["dims", "dtype", "repeats", "profile"])?;
        let workload = StencilWorkload {
            dims: args.required("dims", "512x512x512")?.dims()?,
            dtype: args.required("dtype", "f32|f64")?.dtype()?,
            repeats: args.required("repeats", "6")?.u32()?,
        };
        let found = lookup::find(args.profile()?.as_ref(), NAME)?;
        let plan = memtune_core::plan::stencil_untimed(&found.profile, &workload)
            .map_err(|e| refused(&args, NAME, e))?;
        let [x, y, z] = workload.dims;
        let dtype = match workload.dtype {
            Dtype::F32 => quote!(F32),
            Dtype::F64 => quote!(F64),
        };
        let repeats = workload.repeats;
        let variant = match plan.variant {
            Variant::Plain => quote!(Plain),
            Variant::Staged => quote!(Staged),
            Variant::Streaming => quote!(Streaming),
        };
        let [bx, by, bz] = plan.block;
        let staging = plan.staging;
        let (stamp, reasons) = (emit::stamp(&found), emit::reasons(&plan.reasons));
        Ok(emit::block(
            emit::tracking(&found),
            quote! {
                ::memtune::core::compiled::StencilConsts {
                    workload: ::memtune::core::plan::stencil::StencilWorkload {
                        dims: [#x, #y, #z],
                        dtype: ::memtune::core::plan::stencil::Dtype::#dtype,
                        repeats: #repeats,
                    },
                    variant: ::memtune::core::plan::stencil::Variant::#variant,
                    block: [#bx, #by, #bz],
                    staging: #staging,
                    reasons: #reasons,
                    profile: #stamp,
                }
            },
        ))
    })
}

/// The planner's refusal, at the argument it names.
fn refused(args: &Args, name: &str, e: PlanError) -> Error {
    let argument = match &e {
        PlanError::Zero { argument, .. }
        | PlanError::TooSmall { argument, .. }
        | PlanError::TooLarge { argument, .. }
        | PlanError::GridTooLarge { argument, .. } => *argument,
    };
    let key = match argument {
        "region_bytes" => "region",
        "table_bytes" => "table",
        "input_bytes" => "input",
        a if a.starts_with("dims") => "dims",
        a => a,
    };
    args.error_at(
        key,
        format!("{name}: the planner refuses this workload: {e}"),
    )
}
