//! What a derive expands to after an error: the error itself plus a minimal
//! impl of the trait, so that code using the type (`Store<Customer>`,
//! `customer.to_row(..)`) does not add follow-on "trait not implemented"
//! errors to the one that matters (as thiserror's `fallback.rs` does).

use proc_macro2::TokenStream;
use quote::quote;
use syn::{parse_quote, DeriveInput};

use super::{private, wrap};
use crate::internals::ast::Derive;

/// The errors, then a placeholder impl of the derived trait whose methods
/// are never run (the crate does not compile).
pub(crate) fn expand(input: &DeriveInput, derive: Option<Derive>, errors: syn::Error) -> TokenStream {
    let errors = errors.to_compile_error();
    let p = private();
    let ident = &input.ident;
    let table = ident.to_string();
    let mut generics = input.generics.clone();
    if derive == Some(Derive::Entity) && !generics.params.is_empty() {
        // The trait's supertraits, stated so that a generic input adds no error of its own.
        let (_, ty_generics, _) = input.generics.split_for_impl();
        generics
            .make_where_clause()
            .predicates
            .push(parse_quote!(#ident #ty_generics: ::core::marker::Send + ::core::marker::Sync + 'static));
    }
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let item = match derive {
        Some(Derive::Entity) => {
            quote! {
                #[automatically_derived]
                impl #impl_generics #p::TableEntity for #ident #ty_generics #where_clause {
                    const SCHEMA: &'static #p::Schema = &#p::Schema {
                        table: #table,
                        keys: #p::KeyMode::Fields,
                        columns: &[],
                        created_column: #p::None,
                        updated_column: #p::None,
                        write_token: true,
                    };
                    fn key(&self) -> #p::Key {
                        ::core::unreachable!()
                    }
                    fn to_row(&self, _: &#p::EncodeOptions) -> #p::Result<#p::Row> {
                        ::core::unreachable!()
                    }
                    fn from_row(_: #p::Row) -> #p::Result<Self> {
                        ::core::unreachable!()
                    }
                    fn etag(&self) -> #p::Option<&#p::ETag> {
                        ::core::unreachable!()
                    }
                    fn set_etag(&mut self, _: #p::Option<#p::ETag>) {
                        ::core::unreachable!()
                    }
                    fn set_timestamp(&mut self, _: #p::Option<#p::DateTime>) {
                        ::core::unreachable!()
                    }
                    fn created_at(&self) -> #p::Option<#p::DateTime> {
                        ::core::unreachable!()
                    }
                    fn set_created_at(&mut self, _: #p::DateTime) {
                        ::core::unreachable!()
                    }
                    fn set_updated_at(&mut self, _: #p::DateTime) {
                        ::core::unreachable!()
                    }
                    fn set_key(&mut self, _: #p::Key) {
                        ::core::unreachable!()
                    }
                    type Columns = ();
                    fn columns() -> Self::Columns {}
                    type Updater = #p::Update<Self>;
                    fn update() -> Self::Updater {
                        ::core::unreachable!()
                    }
                }

                // Whether the type has an ETag field is not known after an error.
                #[automatically_derived]
                impl #impl_generics #p::HasETag for #ident #ty_generics #where_clause {}
            }
        }
        Some(Derive::Record) => quote! {
            #[automatically_derived]
            impl #impl_generics #p::TableRecord for #ident #ty_generics #where_clause {
                const COLUMNS: &'static [#p::Column] = &[];
                const CELL_NAMES: &'static [&'static str] = &[];
                type Columns<__E> = ();
                fn columns<__E>(_: &str) -> Self::Columns<__E> {}
                type Updater<__E, __A> = #p::Update<__E, __A>;
                fn write_columns(&self, _: #p::Prefix<'_>, _: &mut #p::Row, _: &#p::EncodeOptions) -> #p::Result<()> {
                    ::core::unreachable!()
                }
                fn read_columns(_: &mut #p::Row, _: #p::Prefix<'_>) -> #p::Result<Self> {
                    ::core::unreachable!()
                }
            }
        },
        // #[derive(TableEnum)]
        None => quote! {
            #[automatically_derived]
            impl #impl_generics #p::TableValue for #ident #ty_generics #where_clause {
                const KIND: #p::ValueKind = #p::ValueKind::Cell(#p::EdmType::String);
                fn encode(&self, _: &str, _: &mut #p::Row, _: &#p::EncodeOptions) -> #p::Result<()> {
                    ::core::unreachable!()
                }
                fn decode(_: &mut #p::Row, _: &str) -> #p::Result<Self> {
                    ::core::unreachable!()
                }
            }
        },
    };
    let item = wrap(item);
    quote! {
        #errors
        #item
    }
}
