//! What every expansion carries besides its value: the profile stamp, the tokens that make
//! cargo rebuild when the profile or the lookup's variables change, the built-in-default
//! warning, and the error-with-fallback shape.

use crate::lookup::Found;
use memtune_core::lookup::ENV_VARS;
use memtune_core::MemoryKind;
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::Error;

/// `::memtune::ProfileStamp { ... }` for the profile found.
pub fn stamp(found: &Found) -> TokenStream {
    let d = &found.profile.device;
    let (uuid, name, digest, source) = (&d.uuid, &d.name, &found.profile.digest, found.source);
    let (major, minor, sm) = (
        d.compute_capability.major,
        d.compute_capability.minor,
        d.sm_count,
    );
    let simulated = found.profile.is_simulated();
    let path = match &found.path {
        Some(p) => {
            let p = p.to_string_lossy();
            quote!(::core::option::Option::Some(#p))
        }
        None => quote!(::core::option::Option::None),
    };
    quote! {
        ::memtune::core::compiled::ProfileStamp {
            uuid: #uuid,
            name: #name,
            compute_capability: [#major, #minor],
            sm_count: #sm,
            digest: #digest,
            source: #source,
            path: #path,
            simulated: #simulated,
        }
    }
}

/// Items that tie the crate to what the lookup read: rustc records `include_bytes!` files
/// and `option_env!` variables in the dep-info, and cargo rebuilds when they change.
/// The built-in default adds a use of a deprecated constant: a warning on stable Rust.
pub fn tracking(found: &Found) -> TokenStream {
    let mut items = TokenStream::new();
    for var in ENV_VARS {
        items.extend(quote!(
            const _: ::core::option::Option<&str> = ::core::option_env!(#var);
        ));
    }
    if let Some(path) = &found.path {
        let path = path.to_string_lossy();
        items.extend(quote!(
            const _: &[u8] = ::core::include_bytes!(#path);
        ));
    }
    if let Some(note) = &found.default_note {
        items.extend(warning(note));
    }
    items
}

/// A warning at the macro call: the only one a proc macro can raise on stable.
fn warning(note: &str) -> TokenStream {
    let name = syn::Ident::new("memtune_builtin_default_profile", Span::call_site());
    quote! {
        #[deprecated(note = #note)]
        #[allow(non_upper_case_globals)]
        const #name: () = ();
        const _: () = #name;
    }
}

/// `{ items; value }`.
pub fn block(items: TokenStream, value: TokenStream) -> TokenStream {
    quote!({ #items #value })
}

/// The expansion, or `{ compile_error!(...); fallback }`: one error, and a value of the
/// right type so that the code around the call type-checks.
pub fn or_fail(
    fallback: TokenStream,
    expand: impl FnOnce() -> Result<TokenStream, Error>,
) -> TokenStream {
    expand().unwrap_or_else(|error| {
        let error = error.to_compile_error();
        quote!({ #error #fallback })
    })
}

pub fn memory_kind(kind: MemoryKind) -> TokenStream {
    match kind {
        MemoryKind::Device => quote!(::memtune::MemoryKind::Device),
        MemoryKind::Pinned => quote!(::memtune::MemoryKind::Pinned),
        MemoryKind::Managed => quote!(::memtune::MemoryKind::Managed),
    }
}

/// `&["reason", ...]`.
pub fn reasons(reasons: &[String]) -> TokenStream {
    quote!(&[#(#reasons),*])
}
