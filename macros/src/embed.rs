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
