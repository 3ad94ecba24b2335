//! Derive macros for [`unified-tables`](https://docs.rs/unified-tables):
//! `#[derive(TableEntity)]`, `#[derive(TableRecord)]` and `#[derive(TableEnum)]`.
//!
//! Use them through the `unified_tables` crate, which re-exports them and
//! documents every attribute.

mod expand;
mod internals;

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use syn::{parse_macro_input, DeriveInput};

use internals::ast::{Container, Derive, Enum};
use internals::ctxt::Ctxt;

/// Implements `TableEntity`: a struct stored as one row.
#[proc_macro_derive(TableEntity, attributes(table, alias, protected, blob_content))]
pub fn derive_table_entity(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    entity(&input).unwrap_or_else(to_compile_errors).into()
}

/// Implements `TableRecord`: a nested struct flattened into `Parent_Child` columns.
#[proc_macro_derive(TableRecord, attributes(table, alias, protected, blob_content))]
pub fn derive_table_record(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    record(&input).unwrap_or_else(to_compile_errors).into()
}

/// Implements `TableValue` for a unit enum: stored as its variant's name.
#[proc_macro_derive(TableEnum, attributes(table))]
pub fn derive_table_enum(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    table_enum(&input).unwrap_or_else(to_compile_errors).into()
}

fn entity(input: &DeriveInput) -> syn::Result<TokenStream2> {
    let cx = Ctxt::new();
    let cont = Container::from_ast(&cx, input, Derive::Entity);
    if let Some(cont) = &cont {
        internals::check::check(&cx, cont);
    }
    cx.check()?;
    Ok(expand::entity::expand(&cont.expect("checked")))
}

fn record(input: &DeriveInput) -> syn::Result<TokenStream2> {
    let cx = Ctxt::new();
    let cont = Container::from_ast(&cx, input, Derive::Record);
    if let Some(cont) = &cont {
        internals::check::check(&cx, cont);
    }
    cx.check()?;
    Ok(expand::record::expand(&cont.expect("checked")))
}

fn table_enum(input: &DeriveInput) -> syn::Result<TokenStream2> {
    let cx = Ctxt::new();
    let e = Enum::from_ast(&cx, input);
    cx.check()?;
    Ok(expand::enums::expand(&e.expect("checked")))
}

fn to_compile_errors(err: syn::Error) -> TokenStream2 {
    err.to_compile_error()
}
