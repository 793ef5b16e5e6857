//! memtune's proc macros: compile-time constants planned from the hardware profile
//! (`docs/macros.md`).
//!
//! Re-exported by `memtune`; this crate depends on `memtune-core` only, never on `memtune`
//! (that would be a cycle), and its expansions name `::memtune::...` paths: use the macros
//! through `memtune`. Each macro finds the profile as the runtime would (the lookup chain,
//! run inside the compiler), runs the same planner as `cargo tune plan`, and expands to a
//! constant that records the profile it used; every failure is a `compile_error!` at the
//! offending argument beside a value of the right type.

mod args;
mod embed;
mod emit;
mod lookup;
mod plans;
mod values;

use proc_macro::TokenStream;

/// TLB scope and passes for random sampling, as a `memtune::SamplingConsts`:
/// `sampling_plan!(region = 16 GiB, memory = pinned[, reads_per_thread = 64][, profile = "..."])`.
#[proc_macro]
pub fn sampling_plan(input: TokenStream) -> TokenStream {
    plans::sampling(input.into()).into()
}

/// TLB scope, passes and approach for hash grouping, as a `memtune::GroupingConsts`:
/// `grouping_plan!(table = 8 GiB, table_memory = device, input_memory = pinned[, input = 1 GiB][, profile = "..."])`.
#[proc_macro]
pub fn grouping_plan(input: TokenStream) -> TokenStream {
    plans::grouping(input.into()).into()
}

/// Variant and block of a 3-D stencil, as a `memtune::StencilConsts`:
/// `stencil_plan!(dims = 512x512x512, dtype = f32, repeats = 6[, profile = "..."])`.
#[proc_macro]
pub fn stencil_plan(input: TokenStream) -> TokenStream {
    plans::stencil(input.into()).into()
}

/// A raw value of the profile: `profile_value!(tlb_reach, memory = pinned, level = 1)`,
/// `profile_value!(l2_bytes)`, `profile_value!(best_staged_block, dtype = f32, repeats = 6)`
/// (the names are listed in `docs/macros.md`).
#[proc_macro]
pub fn profile_value(input: TokenStream) -> TokenStream {
    values::profile_value(input.into()).into()
}

/// The `memtune::ProfileStamp` of the profile the compile-time lookup finds:
/// `profile_stamp!()`, `profile_stamp!(profile = "...")`.
#[proc_macro]
pub fn profile_stamp(input: TokenStream) -> TokenStream {
    values::profile_stamp(input.into()).into()
}

/// Every profile of the crate's `.memtune/` (or `dir = "..."`), checked and included in the
/// binary, as a `memtune::EmbeddedProfiles`: `embedded_profiles!()`.
#[proc_macro]
pub fn embedded_profiles(input: TokenStream) -> TokenStream {
    embed::embedded_profiles(input.into()).into()
}

/// Every autotuning decision of the crate's `.memtune/decisions/`, validated at compile
/// time and included in the binary as `&[(name, json)]`: `embedded_decisions!()`.
#[proc_macro]
pub fn embedded_decisions(input: TokenStream) -> TokenStream {
    embed::embedded_decisions(input.into()).into()
}
