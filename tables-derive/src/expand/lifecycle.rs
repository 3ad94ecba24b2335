//! The lifecycle fields of an entity: the `#[table(soft_delete)]` deletion
//! stamp and the `#[table(ordering)]` token, each implementing its trait.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::private;
use crate::internals::ast::{Container, Field};

fn soft_delete_field(cont: &Container) -> Option<&Field> {
    cont.fields.iter().find(|f| f.attrs.soft_delete.is_some())
}

fn ordering_field(cont: &Container) -> Option<&Field> {
    cont.fields.iter().find(|f| f.attrs.ordering.is_some())
}

/// The `SOFT_DELETE_COLUMN` item of `impl TableEntity`, and the impls of
/// `SoftDelete` and `OrderedEntity` for the fields that have them.
pub(crate) fn expand(cont: &Container) -> (TokenStream, TokenStream) {
    let p = private();
    let ident = &cont.ident;
    let mut impls = TokenStream::new();
    let soft_delete_const = match soft_delete_field(cont) {
        Some(f) => {
            let (fi, ty, column) = (&f.ident, &f.ty, &f.column);
            let deleted_at = quote_spanned!(ty.span()=> <#ty as #p::DeletionStamp>::deleted_at(&self.#fi));
            let set = quote_spanned!(ty.span()=> <#ty as #p::DeletionStamp>::set_deleted_at(&mut self.#fi, at));
            impls.extend(quote! {
                #[automatically_derived]
                impl #p::SoftDelete for #ident {
                    const DELETED_COLUMN: &'static str = #column;

                    fn deleted_at(&self) -> #p::Option<#p::DateTime> {
                        #deleted_at
                    }

                    fn set_deleted_at(&mut self, at: #p::Option<#p::DateTime>) {
                        #set
                    }
                }
            });
            quote!(const SOFT_DELETE_COLUMN: #p::Option<&'static str> = #p::Some(#column);)
        }
        None => quote!(),
    };
    if let Some(f) = ordering_field(cont) {
        let (fi, ty, column) = (&f.ident, &f.ty, &f.column);
        let token = quote_spanned!(ty.span()=> <#ty as #p::TokenField>::token(&self.#fi));
        let set = quote_spanned!(ty.span()=> <#ty as #p::TokenField>::set_token(&mut self.#fi, token));
        impls.extend(quote! {
            #[automatically_derived]
            impl #p::OrderedEntity for #ident {
                const ORDERING_COLUMN: &'static str = #column;

                fn ordering_token(&self) -> #p::Option<&#p::OrderingToken> {
                    #token
                }

                fn set_ordering_token(&mut self, token: #p::OrderingToken) {
                    #set
                }
            }
        });
    }
    (soft_delete_const, impls)
}
