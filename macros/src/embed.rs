//! `embedded_profiles!`: every profile of the crate's `.memtune/`, checked now and included
//! in the binary, for the runtime to match against the GPU it finds.

use crate::args::Args;
use crate::emit;
use crate::lookup;
use memtune_core::lookup::PROJECT_DIR;
use memtune_core::Store;
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::Error;

pub fn embedded_profiles(input: TokenStream) -> TokenStream {
    const NAME: &str = "embedded_profiles!";
    emit::or_fail(quote!(::memtune::EmbeddedProfiles::new(&[])), || {
        let args = Args::parse(input, NAME, &["dir"])?;
        let dir_arg = args.get("dir").map(|a| a.string()).transpose()?;
        let manifest = lookup::manifest_dir()?;
        let dir = manifest.join(
            dir_arg
                .as_ref()
                .map_or_else(|| PROJECT_DIR.to_string(), |d| d.value()),
        );
        let at = |message: String| match &dir_arg {
            Some(lit) => Error::new(lit.span(), message),
            None => Error::new(Span::call_site(), message),
        };
        // Paths inside the crate are shown relative to it: shorter, and the same on every
        // machine.
        let relative = |message: String| message.replace(&format!("{}/", manifest.display()), "");
        let entries = Store::new(&dir)
            .list()
            .map_err(|e| at(relative(format!("{NAME}: {e}"))))?;
        let mut files = Vec::new();
        for entry in entries {
            if let Err(e) = entry.profile {
                return Err(at(relative(format!(
                    "{NAME}: {e}; or remove the file from {}",
                    dir.display()
                ))));
            }
            let name = entry
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let path = std::fs::canonicalize(&entry.path).unwrap_or(entry.path);
            let path = path.to_string_lossy().into_owned();
            files.push(quote!((#name, ::core::include_bytes!(#path) as &[u8])));
        }
        Ok(quote!(::memtune::EmbeddedProfiles::new(&[#(#files),*])))
    })
}

/// `embedded_decisions!`: every autotuning decision of the crate's `.memtune/decisions/`,
/// validated now and included as `&[(name, json)]`, for
/// `DecisionStore::with_embedded(memtune::embedded_decisions!().iter().copied())`.
pub fn embedded_decisions(input: TokenStream) -> TokenStream {
    const NAME: &str = "embedded_decisions!";
    let empty = quote!({
        let files: &'static [(&'static str, &'static str)] = &[];
        files
    });
    emit::or_fail(empty, || {
        let _ = Args::parse(input, NAME, &[])?;
        let manifest = lookup::manifest_dir()?;
        let dir = manifest
            .join(PROJECT_DIR)
            .join(memtune_core::tune::DECISIONS_DIR);
        let fail = |m: String| {
            Error::new(
                Span::call_site(),
                m.replace(&format!("{}/", manifest.display()), ""),
            )
        };
        let mut paths: Vec<_> = match std::fs::read_dir(&dir) {
            Ok(rd) => rd
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(fail(format!("{NAME}: {}: {e}", dir.display()))),
        };
        paths.sort();
        let mut files = Vec::new();
        for path in paths {
            memtune_core::tune::read_decision(&path)
                .map_err(|e| fail(format!("{NAME}: {e}; or remove it from {}", dir.display())))?;
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let full = std::fs::canonicalize(&path).unwrap_or(path);
            let full = full.to_string_lossy().into_owned();
            files.push(quote!((#name, ::core::include_str!(#full))));
        }
        Ok(quote!({
            let files: &'static [(&'static str, &'static str)] = &[#(#files),*];
            files
        }))
    })
}
