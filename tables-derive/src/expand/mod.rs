//! Code generation from the checked AST.

pub(crate) mod entity;
pub(crate) mod enums;
pub(crate) mod fallback;
pub(crate) mod fields;
pub(crate) mod indexes;
pub(crate) mod inherent;
pub(crate) mod lifecycle;
pub(crate) mod record;
pub(crate) mod typed;
pub(crate) mod union;

use proc_macro2::TokenStream;
use quote::quote;

/// The path generated code uses to reach the runtime crate.
pub(crate) fn private() -> TokenStream {
    quote!(::unified_tables::__private)
}

/// Wraps generated items so they neither leak names nor see the user's.
pub(crate) fn wrap(items: TokenStream) -> TokenStream {
    quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals, unused_attributes, unused_qualifications, clippy::all)]
        const _: () = {
            #items
        };
    }
}
