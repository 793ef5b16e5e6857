//! `profile_value!` (raw numbers of the profile, for users' own kernels) and
//! `profile_stamp!` (which profile the compile-time lookup finds).

use crate::args::Args;
use crate::emit;
use crate::lookup;
use memtune_core::profile::CachePath;
use memtune_core::{Profile, TlbKind};
use proc_macro2::{Span, TokenStream, TokenTree};
use quote::quote;
use syn::{Error, Ident};

const NAME: &str = "profile_value!";

#[derive(Clone, Copy)]
enum Value {
    TlbReach,
    TlbPage,
    TlbEntries,
    TlbLevels,
    BestPlainBlock,
    BestStagedBlock,
    BestStreamingBlock,
    SmCount,
    L2Bytes,
    SharedPerBlock,
    SharedPerBlockOptin,
    SharedPerSm,
    GlobalMemory,
    ComputeCapability,
    MeasuredL1,
    MeasuredL2,
}

/// Every value: its name, the keys it takes, and what it expands to when the macro fails.
const VALUES: [(&str, Value, &[&str], &str); 16] = [
    ("tlb_reach", Value::TlbReach, &["memory", "level"], "0u64"),
    ("tlb_page", Value::TlbPage, &["memory", "level"], "0u64"),
    (
        "tlb_entries",
        Value::TlbEntries,
        &["memory", "level"],
        "0u64",
    ),
    ("tlb_levels", Value::TlbLevels, &["memory"], "0u32"),
    (
        "best_plain_block",
        Value::BestPlainBlock,
        &["dtype", "repeats"],
        "[0u32; 3]",
    ),
    (
        "best_staged_block",
        Value::BestStagedBlock,
        &["dtype", "repeats"],
        "[0u32; 3]",
    ),
    (
        "best_streaming_block",
        Value::BestStreamingBlock,
        &["dtype", "repeats"],
        "[0u32; 3]",
    ),
    ("sm_count", Value::SmCount, &[], "0u32"),
    ("l2_bytes", Value::L2Bytes, &[], "0u64"),
    (
        "shared_memory_per_block_bytes",
        Value::SharedPerBlock,
        &[],
        "0u64",
    ),
    (
        "shared_memory_per_block_optin_bytes",
        Value::SharedPerBlockOptin,
        &[],
        "0u64",
    ),
    (
        "shared_memory_per_sm_bytes",
        Value::SharedPerSm,
        &[],
        "0u64",
    ),
    ("global_memory_bytes", Value::GlobalMemory, &[], "0u64"),
    (
        "compute_capability",
        Value::ComputeCapability,
        &[],
        "[0u32; 2]",
    ),
    ("measured_l1_bytes", Value::MeasuredL1, &[], "0u64"),
    ("measured_l2_bytes", Value::MeasuredL2, &[], "0u64"),
];

pub fn profile_value(input: TokenStream) -> TokenStream {
    let mut tokens = input.into_iter();
    let name = match tokens.next() {
        Some(TokenTree::Ident(name)) => name,
        other => {
            let span = other.map_or_else(Span::call_site, |t| t.span());
            // No name, so no type: a zeroed value of whatever type the call site wants.
            return emit::or_fail(quote!(unsafe { ::core::mem::zeroed() }), || {
                Err(Error::new(
                    span,
                    unknown_name("expected a value name first"),
                ))
            });
        }
    };
    let Some(&(_, value, keys, zero)) = VALUES.iter().find(|(n, ..)| name == n) else {
        return emit::or_fail(quote!(unsafe { ::core::mem::zeroed() }), || {
            Err(Error::new(
                name.span(),
                unknown_name(&format!("unknown value `{name}`")),
            ))
        });
    };
    let fallback = zero.parse().unwrap_or_default();
    emit::or_fail(fallback, || {
        match tokens.next() {
            None => {}
            Some(TokenTree::Punct(p)) if p.as_char() == ',' => {}
            Some(t) => {
                return Err(Error::new(
                    t.span(),
                    format!("{NAME}: expected `,` after `{name}`, then `key = value` arguments"),
                ))
            }
        }
        let mut known = keys.to_vec();
        known.push("profile");
        let args = Args::parse(tokens.collect(), NAME, &known)?;
        let found = lookup::find(args.profile()?.as_ref(), NAME)?;
        let tokens = read(&found.profile, value, &name, &args)?;
        Ok(emit::block(emit::tracking(&found), tokens))
    })
}

pub fn profile_stamp(input: TokenStream) -> TokenStream {
    const NAME: &str = "profile_stamp!";
    emit::or_fail(quote!(::memtune::core::compiled::fallback::STAMP), || {
        let args = Args::parse(input, NAME, &["profile"])?;
        let found = lookup::find(args.profile()?.as_ref(), NAME)?;
        Ok(emit::block(emit::tracking(&found), emit::stamp(&found)))
    })
}

fn unknown_name(what: &str) -> String {
    let names: Vec<&str> = VALUES.iter().map(|(n, ..)| *n).collect();
    format!("{NAME}: {what}; it reads one of {}", names.join(", "))
}

/// The value's tokens. A value the profile lacks is an error at the value's name, an
/// argument it cannot use one at that argument.
fn read(profile: &Profile, value: Value, name: &Ident, args: &Args) -> Result<TokenStream, Error> {
    let d = &profile.device;
    let lacks = |what: String| {
        Error::new(
            name.span(),
            format!(
                "{NAME}: the profile of {} ({}) has no {what}; run `cargo tune` on that GPU",
                d.name, d.uuid
            ),
        )
    };
    let known = |v: u64, what: &str| {
        if v == 0 {
            Err(lacks(what.to_string()))
        } else {
            Ok(quote!(#v))
        }
    };
    match value {
        Value::SmCount => match d.sm_count {
            0 => Err(lacks("SM count".to_string())),
            n => Ok(quote!(#n)),
        },
        Value::L2Bytes => known(d.l2_bytes, "L2 size"),
        Value::SharedPerBlock => known(d.shared_memory_per_block_bytes, "shared memory per block"),
        Value::SharedPerBlockOptin => known(
            d.shared_memory_per_block_optin_bytes,
            "opt-in shared memory per block",
        ),
        Value::SharedPerSm => known(d.shared_memory_per_sm_bytes, "shared memory per SM"),
        Value::GlobalMemory => known(d.global_memory_bytes, "global memory size"),
        Value::ComputeCapability => {
            let (major, minor) = (d.compute_capability.major, d.compute_capability.minor);
            Ok(quote!([#major, #minor]))
        }
        Value::MeasuredL1 | Value::MeasuredL2 => {
            // The largest level of the path: L1 at the largest carveout, the whole L2.
            let (path, what) = match value {
                Value::MeasuredL1 => (CachePath::L1, "measured L1"),
                _ => (CachePath::L2, "measured L2"),
            };
            let Some(caches) = profile.caches.measured() else {
                let status = profile.caches.status_line();
                return Err(lacks(format!("cache section ({status})")));
            };
            let largest = caches
                .levels
                .iter()
                .filter(|l| l.path == path)
                .filter_map(|l| l.capacity_bytes())
                .max();
            match largest {
                Some(bytes) => Ok(quote!(#bytes)),
                None => Err(lacks(what.to_string())),
            }
        }
        Value::TlbLevels => {
            let n = tlb(profile, args, &lacks)?.levels.len() as u32;
            Ok(quote!(#n))
        }
        Value::TlbReach | Value::TlbPage | Value::TlbEntries => {
            let tlb = tlb(profile, args, &lacks)?;
            let level = args.required("level", "1")?.u32()?;
            let count = tlb.levels.len();
            let Some(l) = (level as usize)
                .checked_sub(1)
                .and_then(|i| tlb.levels.get(i))
            else {
                return Err(args.error_at(
                    "level",
                    format!(
                        "{NAME}: this TLB has {count} level(s) in the profile; pass a level from 1 (the fastest) to {count}"
                    ),
                ));
            };
            let v = match value {
                Value::TlbReach => l.reach_bytes,
                Value::TlbPage => l.page_bytes,
                _ => l.entries,
            };
            Ok(quote!(#v))
        }
        Value::BestPlainBlock | Value::BestStagedBlock | Value::BestStreamingBlock => {
            let dtype = args.required("dtype", "f32|f64")?.dtype()?;
            let repeats = args.required("repeats", "6")?.u32()?;
            let Some(table) = profile.shared_memory_staging.measured() else {
                let status = profile.shared_memory_staging.status_line();
                return Err(lacks(format!("staging table ({status})")));
            };
            let entry = table
                .entries
                .iter()
                .find(|e| e.dtype == dtype.as_str() && e.repeats == repeats);
            let Some(entry) = entry else {
                let have: Vec<String> = table
                    .entries
                    .iter()
                    .map(|e| format!("{} x{}", e.dtype, e.repeats))
                    .collect();
                return Err(args.error_at(
                    "repeats",
                    format!(
                        "{NAME}: the staging table has no entry for {} x{repeats}; it has {}",
                        dtype.as_str(),
                        have.join(", ")
                    ),
                ));
            };
            let block = match value {
                Value::BestPlainBlock => Some(entry.best_plain_block),
                Value::BestStagedBlock => Some(entry.best_staged_block),
                _ => entry.best_streaming_block,
            };
            let Some([x, y, z]) = block else {
                return Err(lacks(format!(
                    "streaming measurement for {} x{repeats} (an older probe)",
                    dtype.as_str()
                )));
            };
            Ok(quote!([#x, #y, #z]))
        }
    }
}

/// The measured TLB of the `memory` argument's kind.
fn tlb<'p>(
    profile: &'p Profile,
    args: &Args,
    lacks: &dyn Fn(String) -> Error,
) -> Result<&'p TlbKind, Error> {
    let kind = args.required("memory", "device|pinned|managed")?.memory()?;
    let section = profile.tlb.get(kind);
    section
        .measured()
        .ok_or_else(|| lacks(format!("{kind} memory TLB ({})", section.status_line())))
}
