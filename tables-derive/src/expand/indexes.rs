//! Secondary indexes: the `INDEXES` constant of `impl TableEntity`, and
//! the entity's typed handles (`Ticket::BY_ASSIGNEE`) and lookups
//! (`Ticket::find_by_assignee`, `Ticket::get_by_slug`).

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use super::{fields, private};
use crate::internals::ast::{Container, Storage};
use crate::internals::index::{resolve, Projected};

/// `(the INDEXES constant, the items beside the impl)`; both empty for a
/// type without indexes.
pub(crate) fn expand(cont: &Container) -> (TokenStream, TokenStream) {
    let p = private();
    let ident = &cont.ident;
    let indexes = resolve(cont);
    if indexes.is_empty() {
        return (quote!(), quote!());
    }
    let mut defs = Vec::new();
    let mut consts = Vec::new();
    let mut items = Vec::new();
    for (i, ix) in indexes.iter().enumerate() {
        let def_ident = format_ident!("__INDEX_{}", i);
        let name = &ix.name;
        let columns: Vec<&str> = ix.fields.iter().map(|f| f.column.as_str()).collect();
        let (unique, global) = (ix.unique, ix.global);
        let projection = match &ix.projection {
            Projected::Keys => quote!(#p::Projection::Keys),
            Projected::All => quote!(#p::Projection::All),
            // Each field by the columns it writes: a flattened record's
            // (`Parent_Child`), any other field's own; every form of a
            // column (`__Json`, `__GZip`, ...) is copied with it.
            Projected::Fields(fields) => {
                let lists = fields.iter().map(|f| fields::listed_names(f, false).0);
                quote!(#p::Projection::Columns(#p::concat_names!(#(#lists),*)))
            }
        };
        // A flattened record's #[protected] fields cannot be seen here: refused when the record is known.
        if let (true, Projected::Fields(fields)) = (global, &ix.projection) {
            for f in fields {
                if let Storage::Flatten { inner, .. } = &f.storage {
                    let msg = format!(
                        "project cannot copy `{}` into the global index `{name}`: its record has #[protected] fields, and a global index's rows live outside the entity's partition; remove it from project(..), or remove #[protected] from the record's fields",
                        f.ident
                    );
                    consts.push(quote_spanned! {inner.span()=>
                        const _: () = ::core::assert!(!#p::protected_in(<#inner as #p::TableRecord>::COLUMNS), #msg);
                    });
                }
            }
        }
        consts.push(quote! {
            const #def_ident: #p::IndexDef = #p::IndexDef {
                name: #name,
                columns: &[#(#columns),*],
                unique: #unique,
                global: #global,
                projection: #projection,
            };
        });
        defs.push(quote!(#def_ident));

        // The value type: the field's, or a tuple of the fields'.
        let value_ty = match ix.fields.as_slice() {
            [one] => {
                let ty = &one.ty;
                quote!(#ty)
            }
            many => {
                let tys = many.iter().map(|f| &f.ty);
                quote!((#(#tys,)*))
            }
        };
        let span = match ix.fields.as_slice() {
            [one] => one.ty.span(),
            _ => ix.attr.span,
        };
        let kind = match (unique, global) {
            (false, false) => quote!(#p::LocalIndex),
            (true, false) => quote!(#p::UniqueLocalIndex),
            (false, true) => quote!(#p::GlobalIndex),
            (true, true) => quote!(#p::UniqueGlobalIndex),
        };
        let handle = format_ident!("BY_{}", name.to_uppercase());
        let where_ = if global {
            "across partitions"
        } else {
            "in the entity's partition"
        };
        let fields_shown = ix
            .fields
            .iter()
            .map(|f| format!("`{}`", f.ident))
            .collect::<Vec<_>>()
            .join(", ");
        let kind_shown = if unique { "unique index" } else { "index" };
        let handle_doc = format!(
            "The {kind_shown} `{name}` on {fields_shown}, {where_}: give it to `Store::index` for its lookups."
        );
        let arg = quote_spanned!(span=> <#value_ty as #p::IndexKey>::Arg<'_>);
        let lookup = match (unique, global) {
            (false, false) => {
                let call =
                    quote_spanned!(span=> #p::find_local::<#ident, #value_ty>(store, Self::#handle, partition, value));
                let f = format_ident!("find_by_{}", name);
                let doc = format!("The entities of `partition` whose {fields_shown} is `value`, by the index `{name}`: a query (`take`, `stream`, `page`, or awaited for all).");
                quote! {
                    #[doc = #doc]
                    pub fn #f<'__s>(store: &'__s #p::Store<#ident>, partition: &str, value: #arg) -> #p::IndexQuery<'__s, #ident> {
                        #call
                    }
                }
            }
            (true, false) => {
                let call =
                    quote_spanned!(span=> #p::get_local::<#ident, #value_ty>(store, Self::#handle, partition, value));
                let f = format_ident!("get_by_{}", name);
                let doc = format!("The entity of `partition` whose {fields_shown} is `value`, by the unique index `{name}`, or `None`.");
                quote! {
                    #[doc = #doc]
                    pub fn #f<'__s>(store: &'__s #p::Store<#ident>, partition: &str, value: #arg) -> #p::BoxFuture<'__s, #p::Result<#p::Option<#ident>>> {
                        #call
                    }
                }
            }
            (false, true) => {
                let call = quote_spanned!(span=> #p::find_global::<#ident, #value_ty>(store, Self::#handle, value));
                let f = format_ident!("find_by_{}", name);
                let doc = format!("The entities whose {fields_shown} is `value`, in any partition, by the global index `{name}` (each checked against its entity): a query.");
                quote! {
                    #[doc = #doc]
                    pub fn #f<'__s>(store: &'__s #p::Store<#ident>, value: #arg) -> #p::IndexQuery<'__s, #ident> {
                        #call
                    }
                }
            }
            (true, true) => {
                let call = quote_spanned!(span=> #p::get_global::<#ident, #value_ty>(store, Self::#handle, value));
                let f = format_ident!("get_by_{}", name);
                let doc = format!("The entity whose {fields_shown} is `value`, in any partition, by the global unique index `{name}` (checked against its entity), or `None`.");
                quote! {
                    #[doc = #doc]
                    pub fn #f<'__s>(store: &'__s #p::Store<#ident>, value: #arg) -> #p::BoxFuture<'__s, #p::Result<#p::Option<#ident>>> {
                        #call
                    }
                }
            }
        };
        items.push(quote! {
            #[doc = #handle_doc]
            pub const #handle: #p::Index<#ident, #kind, #value_ty> = #p::Index::new(&#def_ident);
            #lookup
        });
    }
    let indexes_const = quote! {
        const INDEXES: &'static [#p::IndexDef] = &[#(#defs),*];
    };
    let extra = quote! {
        #(#consts)*

        #[automatically_derived]
        impl #ident {
            #(#items)*
        }
    };
    (indexes_const, extra)
}
