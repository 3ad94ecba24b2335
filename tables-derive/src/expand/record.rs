//! `impl TableRecord` for a nested struct.

use proc_macro2::TokenStream;
use quote::quote;

use super::fields::{self, Naming};
use super::{private, wrap};
use crate::internals::ast::Container;

pub(crate) fn expand(cont: &Container) -> TokenStream {
    let p = private();
    let ident = &cont.ident;
    let columns: Vec<TokenStream> = cont
        .fields
        .iter()
        .filter(|f| f.is_column())
        .map(fields::column_meta)
        .collect();
    let encodes: Vec<TokenStream> = cont
        .fields
        .iter()
        .map(|f| fields::encode(f, Naming::Prefixed))
        .collect();
    let decodes: Vec<TokenStream> = cont
        .fields
        .iter()
        .map(|f| {
            let local = fields::local(f);
            let value = fields::decode(f, Naming::Prefixed, None);
            quote!(let #local = #value;)
        })
        .collect();
    let inits: Vec<TokenStream> = cont
        .fields
        .iter()
        .map(|f| {
            let fi = &f.ident;
            let local = fields::local(f);
            quote!(#fi: #local)
        })
        .collect();
    wrap(quote! {
        #[automatically_derived]
        impl #p::TableRecord for #ident {
            const COLUMNS: &'static [#p::Column] = &[#(#columns),*];

            #[allow(unused_variables)]
            fn write_columns(&self, __prefix: &str, __row: &mut #p::Row, __opts: &#p::EncodeOptions) -> #p::Result<()> {
                #(#encodes)*
                #p::Ok(())
            }

            #[allow(unused_mut, unused_variables)]
            fn read_columns(mut __row: &mut #p::Row, __prefix: &str) -> #p::Result<Self> {
                #(#decodes)*
                #p::Ok(#ident { #(#inits),* })
            }
        }
    })
}
