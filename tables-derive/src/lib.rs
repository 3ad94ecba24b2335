//! Derive macros for [`unified-tables`](https://docs.rs/unified-tables):
//! `#[derive(TableEntity)]`, `#[derive(TableRecord)]`, `#[derive(TableEnum)]`
//! and `#[derive(TableUnion)]`.
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
use internals::docs::Page;

/// Implements `TableEntity`: a struct stored as one row.
#[proc_macro_derive(TableEntity, attributes(table, alias, protected, blob_content, index, unique))]
pub fn derive_table_entity(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    entity(&input).into()
}

/// Implements `TableRecord`: a nested struct flattened into `Parent_Child` columns.
#[proc_macro_derive(TableRecord, attributes(table, alias, protected, blob_content, index, unique))]
pub fn derive_table_record(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    record(&input).into()
}

/// Implements `TableValue` for a unit enum: stored as its variant's name.
#[proc_macro_derive(TableEnum, attributes(table))]
pub fn derive_table_enum(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    table_enum(&input).into()
}

/// Implements `TableUnion`: an enum of payloads stored in one table, told
/// apart by a `_TypeName` token.
#[proc_macro_derive(TableUnion, attributes(table, alias, protected, blob_content))]
pub fn derive_table_union(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    table_union(&input).into()
}

// After an error each derive still emits a placeholder impl (`expand::fallback`),
// so the user sees the error in the attributes and not also every use of the type.

fn entity(input: &DeriveInput) -> TokenStream2 {
    container(input, Derive::Entity).unwrap_or_else(|e| expand::fallback::expand(input, Some(Derive::Entity), e))
}

fn record(input: &DeriveInput) -> TokenStream2 {
    container(input, Derive::Record).unwrap_or_else(|e| expand::fallback::expand(input, Some(Derive::Record), e))
}

fn table_enum(input: &DeriveInput) -> TokenStream2 {
    let cx = Ctxt::new(Page::Enum);
    let e = Enum::from_ast(&cx, input);
    match cx.check() {
        Ok(()) => expand::enums::expand(&e.expect("checked")),
        Err(errors) => expand::fallback::expand(input, None, errors),
    }
}

fn table_union(input: &DeriveInput) -> TokenStream2 {
    let cx = Ctxt::new(Page::Union);
    let u = internals::union::Union::from_ast(&cx, input);
    match cx.check() {
        Ok(()) => expand::union::expand(&u.expect("checked")),
        Err(errors) => expand::union::fallback(input, errors),
    }
}

fn container(input: &DeriveInput, derive: Derive) -> syn::Result<TokenStream2> {
    let cx = Ctxt::new(Page::Entity);
    let cont = Container::from_ast(&cx, input, derive);
    if let Some(cont) = &cont {
        internals::check::check(&cx, cont);
    }
    cx.check()?;
    let cont = cont.expect("checked");
    Ok(match derive {
        Derive::Entity => expand::entity::expand(&cont),
        Derive::Record => expand::record::expand(&cont),
    })
}

#[cfg(test)]
mod tests {
    use quote::quote;

    fn expand(f: fn(&syn::DeriveInput) -> proc_macro2::TokenStream, input: proc_macro2::TokenStream) -> String {
        f(&syn::parse2(input).expect("valid item")).to_string()
    }

    #[test]
    fn valid_entity_expands_to_an_impl_only() {
        let out = expand(
            super::entity,
            quote! {
                struct Customer {
                    #[table(partition_key)]
                    region: String,
                    #[table(row_key)]
                    email: String,
                }
            },
        );
        assert!(out.contains("TableEntity for Customer"), "{out}");
        assert!(!out.contains("compile_error"), "{out}");
    }

    #[test]
    fn an_error_still_emits_a_placeholder_impl() {
        let out = expand(
            super::entity,
            quote!(
                struct Customer {
                    region: String,
                }
            ),
        );
        assert!(out.contains("compile_error"), "{out}");
        assert!(out.contains("no key"), "{out}");
        assert!(out.contains("TableEntity for Customer"), "{out}");

        let out = expand(
            super::record,
            quote!(
                struct Address(String);
            ),
        );
        assert!(out.contains("compile_error"), "{out}");
        assert!(out.contains("TableRecord for Address"), "{out}");

        let out = expand(
            super::table_enum,
            quote!(
                enum Payment {
                    Card { last: String },
                }
            ),
        );
        assert!(out.contains("compile_error"), "{out}");
        assert!(out.contains("TableValue for Payment"), "{out}");
    }

    #[test]
    fn a_table_name_the_service_refuses_does_not_compile() {
        let entity = |attr: proc_macro2::TokenStream, ident: proc_macro2::TokenStream| {
            expand(
                super::entity,
                quote! {
                    #attr
                    struct #ident {
                        #[table(partition_key)]
                        pk: String,
                        #[table(row_key)]
                        rk: String,
                    }
                },
            )
        };
        let long = "A".repeat(63);
        let too_long = "A".repeat(64);
        for accepted in ["Abc", "a1b", long.as_str()] {
            let out = entity(quote!(#[table(name = #accepted)]), quote!(T));
            assert!(!out.contains("compile_error"), "{accepted}: {out}");
        }
        assert!(!entity(quote!(), quote!(Tickets)).contains("compile_error"));
        for refused in ["Ab", too_long.as_str(), "1abc", "my-table", "tables", "Tables", ""] {
            let out = entity(quote!(#[table(name = #refused)]), quote!(Tickets));
            assert!(out.contains("the service refuses"), "{refused}: {out}");
        }
        let out = entity(quote!(), quote!(T));
        assert!(
            out.contains("the table name `T`") && out.contains("name = \\\"TRows\\\""),
            "{out}"
        );
    }

    #[test]
    fn a_generic_entity_gets_the_supertrait_bounds() {
        let out = expand(
            super::entity,
            quote!(
                struct Envelope<T> {
                    payload: T,
                }
            ),
        );
        assert!(out.contains("generic parameters"), "{out}");
        assert!(out.contains("Send"), "{out}");
    }

    #[test]
    fn every_error_is_reported_at_once() {
        let out = expand(
            super::entity,
            quote! {
                struct Customer {
                    #[table(partition_key)]
                    region: String,
                    #[table(row_key)]
                    email: String,
                    #[table(renamed = "A")]
                    a: String,
                    #[table(rename = "B_C")]
                    b: String,
                }
            },
        );
        assert_eq!(out.matches("compile_error").count(), 2, "{out}");
        assert!(out.contains("did you mean #[table(rename)]"), "{out}");
    }

    #[test]
    fn a_union_reports_every_bad_token_and_still_emits_a_placeholder() {
        let out = expand(
            super::table_union,
            quote! {
                enum Event {
                    #[table(tag = "")]
                    Placed,
                    #[table(also = ["Placed", "Shipped"])]
                    Shipped,
                    Cancelled { #[table(split = "text")] reason: String },
                }
            },
        );
        assert_eq!(out.matches("compile_error").count(), 3, "{out}");
        assert!(
            out.contains("cannot be empty") && out.contains("already accepted by this variant"),
            "{out}"
        );
        assert!(out.contains("TableUnion for Event"), "{out}");

        let out = expand(
            super::table_union,
            quote! {
                enum Event {
                    #[table(tag = "OrderPlaced", also = ["Shop.OrderPlaced, Shop"])]
                    Placed(OrderPlaced),
                    Closed,
                }
            },
        );
        assert!(!out.contains("compile_error"), "{out}");
        assert!(out.contains("\"OrderPlaced\" | \"Shop.OrderPlaced, Shop\""), "{out}");
    }
}
