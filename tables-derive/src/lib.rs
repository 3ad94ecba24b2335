//! Derive macros for `unified-tables`.
use proc_macro::TokenStream;

/// Derives `TableEntity`.
#[proc_macro_derive(TableEntity, attributes(table, alias, protected, blob_content))]
pub fn derive_table_entity(_input: TokenStream) -> TokenStream {
    TokenStream::new()
}
/// Derives `TableRecord`.
#[proc_macro_derive(TableRecord, attributes(table, alias, protected, blob_content))]
pub fn derive_table_record(_input: TokenStream) -> TokenStream {
    TokenStream::new()
}
/// Derives `TableValue` for a unit enum.
#[proc_macro_derive(TableEnum, attributes(table))]
pub fn derive_table_enum(_input: TokenStream) -> TokenStream {
    TokenStream::new()
}
