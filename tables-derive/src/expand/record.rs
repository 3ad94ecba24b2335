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
    // Each stored field's cells in `CELL_NAMES`: its name, or a nested
    // record's names under its prefix.
    let (offsets, cell_names) = fields::name_table(&cont.fields, false, |f| f.is_column());
    let namings: Vec<Naming> = offsets
        .into_iter()
        .map(|at| Naming::Prefixed(at.unwrap_or_else(|| quote!(usize::MAX))))
        .collect();
    let encodes = fields::encodes(&cont.fields, &namings);
    let decodes: Vec<TokenStream> = cont
        .fields
        .iter()
        .zip(&namings)
        .map(|(f, naming)| {
            let local = fields::local(f);
            let value = fields::decode(f, naming, None);
            quote!(let #local = #value;)
        })
        .collect();
    let inits = fields::inits(&cont.fields);
    let columns_ident = quote::format_ident!("{}Columns", ident);
    let (columns_def, columns_ty, columns_init) = super::typed::columns(cont, &columns_ident);
    let update_ident = quote::format_ident!("{}Update", ident);
    let update_def = super::typed::builder(cont, &update_ident);
    let super::typed::Params { entity, auth } = super::typed::params(cont);
    wrap(quote! {
        #columns_def
        #update_def

        #[automatically_derived]
        impl #p::TableRecord for #ident {
            const COLUMNS: &'static [#p::Column] = &[#(#columns),*];

            const CELL_NAMES: &'static [&'static str] = #cell_names;

            type Columns<#entity> = #columns_ty;

            fn columns<#entity>(__prefix: &str) -> Self::Columns<#entity> {
                #columns_init
            }

            type Updater<#entity, #auth> = #update_ident<#entity, #auth>;

            #[allow(unused_variables)]
            fn write_columns(&self, __prefix: #p::Prefix<'_>, __row: &mut #p::Row, __opts: &#p::EncodeOptions) -> #p::Result<()> {
                #(#encodes)*
                #p::Ok(())
            }

            #[allow(unused_mut, unused_variables)]
            fn read_columns(mut __row: &mut #p::Row, __prefix: #p::Prefix<'_>) -> #p::Result<Self> {
                #(#decodes)*
                #p::Ok(#ident { #(#inits),* })
            }
        }
    })
}
