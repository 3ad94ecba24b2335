//! The entry points a user calls on the type (`Order::filter`,
//! `Order::update()`, `Order::from_row`, ...) as inherent associated items
//! that delegate to the `TableEntity` impl, so they resolve without the
//! trait in scope: a call from a module that does not import it would
//! otherwise fall to another trait's method of the same name
//! (`Iterator::filter`: "`Order` is not an iterator").

use proc_macro2::TokenStream;
use quote::quote;
use syn::Ident;

use super::private;

/// `impl Name { .. }` with one delegating item per entry point; nothing
/// with `#[table(no_inherent)]`.
pub(crate) fn expand(ident: &Ident, enabled: bool) -> TokenStream {
    if !enabled {
        return quote!();
    }
    let p = private();
    let name = ident.to_string();
    let entity = quote!(<Self as #p::TableEntity>);
    let doc = |text: String| quote!(#[doc = #text]);
    let schema_doc = doc(format!(
        "The table name and column metadata of `{name}` (`TableEntity::SCHEMA`)."
    ));
    let filter_doc = doc(format!(
        "Builds a typed filter over the columns of `{name}`: `{name}::filter(|c| c.visits.ge(3u32))` \
         (`TableEntity::filter`, callable without importing the trait)."
    ));
    let projection_doc = doc(format!(
        "Chooses the fields a query reads: `{name}::projection(|c| [c.name.col()])`, given to \
         `QueryOptions::select` (`TableEntity::projection`)."
    ));
    let columns_doc = doc(format!(
        "The typed filter columns of `{name}`, one per stored field (`TableEntity::columns`)."
    ));
    let update_doc = doc(format!(
        "Starts a typed partial update of `{name}`: `{name}::update().visits(3u32)`, sent with \
         `Store::patch` (`TableEntity::update`)."
    ));
    let from_row_doc = doc(format!(
        "Rebuilds a `{name}` from a stored row, its ETag and Timestamp included; a cell that does \
         not fit its field is `Error::Decode` naming the column (`TableEntity::from_row`)."
    ));
    let to_row_doc = doc(format!(
        "The row `{name}` is stored as: its keys and every stored column (`TableEntity::to_row`)."
    ));
    let key_doc = doc(format!(
        "The keys of this `{name}` as written (a composite id normalized as the type says; \
         `TableEntity::key`)."
    ));
    quote! {
        #[automatically_derived]
        impl #ident {
            #schema_doc
            pub const SCHEMA: &'static #p::Schema = #entity::SCHEMA;

            #filter_doc
            pub fn filter<__W>(build: impl ::core::ops::FnOnce(&#entity::Columns) -> __W) -> __W {
                #entity::filter(build)
            }

            #projection_doc
            pub fn projection<__P>(build: impl ::core::ops::FnOnce(&#entity::Columns) -> __P) -> __P
            where
                __P: ::core::iter::IntoIterator<Item = #p::Selected<Self>>,
            {
                #entity::projection(build)
            }

            #columns_doc
            pub fn columns() -> #entity::Columns {
                #entity::columns()
            }

            #update_doc
            pub fn update() -> #entity::Updater {
                #entity::update()
            }

            #from_row_doc
            pub fn from_row(row: #p::Row) -> #p::Result<Self> {
                #entity::from_row(row)
            }

            #to_row_doc
            pub fn to_row(&self, options: &#p::EncodeOptions) -> #p::Result<#p::Row> {
                #entity::to_row(self, options)
            }

            #key_doc
            pub fn key(&self) -> #p::Key {
                #entity::key(self)
            }
        }
    }
}
