//! `impl TableEntity`.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::fields::{self, Naming};
use super::{private, wrap};
use crate::internals::ast::{Container, Storage};
use crate::internals::attr::{IdMode, KeyRole, StampRole, SystemRole};

pub(crate) fn expand(cont: &Container) -> TokenStream {
    let p = private();
    let ident = &cont.ident;
    let table = cont.table_name();
    let id_field = cont.field_with_key(KeyRole::Id);
    let normalize = cont.id_mode() == IdMode::Normalized;

    // Column metadata: the Id column first in composite-id mode, then every stored field.
    let columns: Vec<TokenStream> = cont
        .fields
        .iter()
        .filter(|f| f.is_column() || matches!(f.storage, Storage::Key(KeyRole::Id)))
        .map(fields::column_meta)
        .collect();
    let key_mode = match id_field {
        Some(_) => quote!(#p::KeyMode::CompositeId { normalize: #normalize }),
        None => quote!(#p::KeyMode::Fields),
    };
    let stamp_col = |role| match cont.field_with_stamp(role) {
        Some(f) => {
            let c = &f.column;
            quote!(#p::Some(#c))
        }
        None => quote!(#p::None),
    };
    let created_column = stamp_col(StampRole::Created);
    let updated_column = stamp_col(StampRole::Updated);

    // The composite id, normalized as the schema says.
    let id_fn = id_field.map(|f| {
        let fi = &f.ident;
        let ty = &f.ty;
        let text = quote_spanned!(ty.span()=> <#ty as #p::KeyPart>::key_text(&this.#fi));
        let body = if normalize {
            quote!(#p::normalize_id(&#text))
        } else {
            text
        };
        quote! {
            fn __id_of(this: &#ident) -> #p::String { #body }
        }
    });

    let key_body = match id_field {
        Some(_) => quote!(#p::Key::from_id(&__id_of(self))),
        None => {
            let key_text = |role| {
                cont.field_with_key(role).map(|f| {
                    let fi = &f.ident;
                    let ty = &f.ty;
                    quote_spanned!(ty.span()=> <#ty as #p::KeyPart>::key_text(&self.#fi))
                })
            };
            let pk = key_text(KeyRole::Partition).unwrap_or_else(|| quote!(#p::String::new()));
            let rk = key_text(KeyRole::Row).unwrap_or_else(|| quote!(#p::String::new()));
            quote!(#p::Key { partition_key: #pk, row_key: #rk })
        }
    };

    // to_row
    // The names of the plain cells and of the nested records' cells, in the
    // order they are written: the row borrows them instead of copying each.
    let (offsets, names) = fields::name_table(&cont.fields, true, |f| {
        matches!(
            f.storage,
            Storage::Value
                | Storage::Binary { .. }
                | Storage::Key(KeyRole::Id)
                | Storage::Flatten { .. }
                | Storage::Json
        )
    });
    // A JSON field is listed by its `{Col}__Json` name but passes its column name.
    let namings: Vec<Naming> = cont
        .fields
        .iter()
        .zip(offsets)
        .map(|(f, at)| match at {
            Some(at) if !matches!(f.storage, Storage::Json) => Naming::Listed(at),
            _ => Naming::Literal,
        })
        .collect();
    // The id field is listed, so its name is in the table.
    let id_cell = cont
        .fields
        .iter()
        .zip(&namings)
        .find(|(f, _)| matches!(f.storage, Storage::Key(KeyRole::Id)))
        .map(|(f, naming)| {
            let c = naming.column(&f.column);
            quote!(__row.insert(#c, #p::Value::String(__id));)
        });
    // Room for every cell: one per stored field, the cells of each nested
    // record, a manifest for each large value.
    let mut cells = 0usize;
    let mut nested = Vec::new();
    for f in &cont.fields {
        match &f.storage {
            Storage::Flatten { inner, .. } => nested.push(quote!(<#inner as #p::TableRecord>::COLUMNS.len())),
            Storage::Large { .. } => cells += 5,
            Storage::Key(KeyRole::Id)
            | Storage::Value
            | Storage::Binary { .. }
            | Storage::Json
            | Storage::Blob { .. } => cells += 1,
            Storage::Key(_) | Storage::System(_) | Storage::Skip => {}
        }
    }
    // One slot more than the fields' cells: the store adds the write token
    // to every row it writes, and a row sized exactly would grow for it.
    let properties = quote! {
        #p::Properties::with_capacity(#cells #(+ #nested)* + 1)
            .expecting_distinct(__names, const { #p::names_are_distinct(__NAMES) })
    };
    let row_start = match id_field {
        Some(_) => quote! {
            const __NAMES: &[&str] = #names;
            let __names: &'static [&'static str] = __NAMES;
            let __id = __id_of(self);
            let __key = #p::Key::from_id(&__id);
            let mut __row_v = #p::Row::new(__key.partition_key, __key.row_key);
            __row_v.properties = #properties;
            let __row = &mut __row_v;
            #id_cell
        },
        None => quote! {
            const __NAMES: &[&str] = #names;
            let __names: &'static [&'static str] = __NAMES;
            let __key = <Self as #p::TableEntity>::key(self);
            let mut __row_v = #p::Row::new(__key.partition_key, __key.row_key);
            __row_v.properties = #properties;
            let __row = &mut __row_v;
        },
    };
    let encodes = fields::encodes(&cont.fields, &namings);

    // from_row
    let decodes: Vec<TokenStream> = cont
        .fields
        .iter()
        .map(|f| {
            let local = fields::local(f);
            let ty = &f.ty;
            let value = match &f.storage {
                Storage::Key(KeyRole::Partition) => {
                    quote_spanned!(ty.span()=> <#ty as #p::KeyPart>::from_key_text(::core::mem::take(&mut __pk)))
                }
                Storage::Key(KeyRole::Row) => {
                    quote_spanned!(ty.span()=> <#ty as #p::KeyPart>::from_key_text(::core::mem::take(&mut __rk)))
                }
                Storage::Key(KeyRole::Id) => {
                    let c = &f.column;
                    quote_spanned! {ty.span()=>
                        {
                            let __stored = match __row.take(#c) {
                                #p::Some(#p::Value::String(__s)) => #p::Some(__s),
                                _ => #p::None,
                            };
                            <#ty as #p::KeyPart>::from_key_text(#p::restore_id(#p::Option::as_deref(&__stored), &__pk, &__rk))
                        }
                    }
                }
                Storage::System(SystemRole::ETag) => quote!(__etag.clone()),
                Storage::System(SystemRole::Timestamp) => quote!(#p::Option::map(__ts, ::core::convert::From::from)),
                _ => {
                    // Rows written by older .NET versions name the stamps `Created` / `Modified`.
                    let implicit = match (id_field.is_some(), f.stamp()) {
                        (true, Some(StampRole::Created)) if f.column != "Created" => Some("Created"),
                        (true, Some(StampRole::Updated)) if f.column != "Modified" => Some("Modified"),
                        _ => None,
                    };
                    fields::decode(f, &Naming::Literal, implicit)
                }
            };
            quote!(let #local = #value;)
        })
        .collect();
    let inits = fields::inits(&cont.fields);
    let direct = direct_decode(cont, &inits);

    let system = |role| cont.field_with_system(role).map(|f| f.ident.clone());
    let etag_get = match system(SystemRole::ETag) {
        Some(fi) => quote!(#p::Option::as_ref(&self.#fi)),
        None => quote!(#p::None),
    };
    let etag_set = system(SystemRole::ETag).map(|fi| quote!(self.#fi = etag;));
    // The ETag-conditional verbs need an ETag field; without one they do not compile.
    let has_etag = system(SystemRole::ETag).map(|_| {
        quote! {
            #[automatically_derived]
            impl #p::HasETag for #ident {}
        }
    });
    let ts_set = system(SystemRole::Timestamp)
        .map(|fi| quote!(self.#fi = #p::Option::map(timestamp, ::core::convert::From::from);));
    let stamp_field = |role| cont.field_with_stamp(role).map(|f| (f.ident.clone(), f.ty.clone()));
    let created_get = match stamp_field(StampRole::Created) {
        Some((fi, ty)) => quote_spanned!(ty.span()=> <#ty as #p::Stamp>::stamp(&self.#fi)),
        None => quote!(#p::None),
    };
    let created_set = stamp_field(StampRole::Created)
        .map(|(fi, ty)| quote_spanned!(ty.span()=> <#ty as #p::Stamp>::set_stamp(&mut self.#fi, at);));
    let updated_set = stamp_field(StampRole::Updated)
        .map(|(fi, ty)| quote_spanned!(ty.span()=> <#ty as #p::Stamp>::set_stamp(&mut self.#fi, at);));

    let columns_ident = quote::format_ident!("{}Columns", ident);
    let (columns_def, columns_ty, columns_init) = super::typed::columns(cont, &columns_ident);
    let update_ident = quote::format_ident!("{}Update", ident);
    let update_def = super::typed::builder(cont, &update_ident);
    let set_key_body = super::typed::set_key(cont);
    let blob_accessors = blob_accessors(cont);
    let (soft_delete_const, lifecycle_impls) = super::lifecycle::expand(cont);
    let (indexes_const, index_items) = super::indexes::expand(cont);
    let inherent = super::inherent::expand(ident, !cont.attrs.no_inherent);

    let write_token = !cont.attrs.no_write_token;
    // Checked where the schema is known whole: a flattened record's columns come from its own derive.
    let room_message = format!(
        "`{ident}` has at least 252 columns in every row, so no row has room for the write token \
         that settles a write whose answer was lost (the service allows 252 properties): group some \
         fields into one JSON field, or add #[table(no_write_token)] to write its rows without a token \
         (a lost answer is then settled only by an ETag condition, or is OutcomeUnknown)"
    );
    let room_check = quote! {
        const _: () = if <#ident as #p::TableEntity>::SCHEMA.never_has_room_for_a_token() {
            ::core::panic!(#room_message)
        };
    };

    wrap(quote! {
        #id_fn
        #room_check
        #columns_def
        #update_def
        #has_etag

        #[automatically_derived]
        impl #p::TableEntity for #ident {
            const SCHEMA: &'static #p::Schema = &#p::Schema {
                table: #table,
                keys: #key_mode,
                columns: &[#(#columns),*],
                created_column: #created_column,
                updated_column: #updated_column,
                write_token: #write_token,
            };

            fn key(&self) -> #p::Key {
                #key_body
            }

            fn to_row(&self, __opts: &#p::EncodeOptions) -> #p::Result<#p::Row> {
                #row_start
                #(#encodes)*
                #p::Ok(__row_v)
            }

            #[allow(unused_mut, unused_variables, clippy::redundant_clone)]
            fn from_row(mut __row: #p::Row) -> #p::Result<Self> {
                let mut __pk = ::core::mem::take(&mut __row.partition_key);
                let mut __rk = ::core::mem::take(&mut __row.row_key);
                let __etag = __row.etag.take();
                let __ts = __row.timestamp.take();
                #(#decodes)*
                #p::Ok(#ident { #(#inits),* })
            }

            fn etag(&self) -> #p::Option<&#p::ETag> {
                #etag_get
            }

            #[allow(unused_variables)]
            fn set_etag(&mut self, etag: #p::Option<#p::ETag>) {
                #etag_set
            }

            #[allow(unused_variables)]
            fn set_timestamp(&mut self, timestamp: #p::Option<#p::DateTime>) {
                #ts_set
            }

            fn created_at(&self) -> #p::Option<#p::DateTime> {
                #created_get
            }

            #[allow(unused_variables)]
            fn set_created_at(&mut self, at: #p::DateTime) {
                #created_set
            }

            #[allow(unused_variables)]
            fn set_updated_at(&mut self, at: #p::DateTime) {
                #updated_set
            }

            fn set_key(&mut self, key: #p::Key) {
                #set_key_body
            }

            #blob_accessors
            #soft_delete_const
            #indexes_const

            type Columns = #columns_ty;

            fn columns() -> Self::Columns {
                #columns_init
            }

            type Updater = #update_ident<#p::Unauthorized>;

            fn update() -> Self::Updater {
                #update_ident(::core::default::Default::default())
            }

            #direct

            fn cache_cloner() -> #p::Option<fn(&Self) -> Self> {
                #[allow(unused_imports)]
                use #p::{ProbeClone as _, ProbeNoClone as _};
                (&&#p::CloneProbe::<Self>::new()).cloner()
            }
        }

        #lifecycle_impls
        #index_items
        #inherent
    })
}

/// `DECODES_PAGES` and `decode_page` for a type of plain cells only (keys,
/// system fields, skipped fields and `TableValue` fields without an alias
/// or soft-delete stamp; no composite id): the page read straight into
/// entities, each field from its own cell as `from_row` reads it.
fn direct_decode(cont: &Container, inits: &[TokenStream]) -> TokenStream {
    let p = private();
    let ident = &cont.ident;
    let plain = cont.field_with_key(KeyRole::Id).is_none()
        && cont.fields.iter().all(|f| match &f.storage {
            Storage::Key(role) => *role != KeyRole::Id,
            Storage::System(_) | Storage::Skip => true,
            Storage::Value => f.attrs.alias.is_none() && f.attrs.soft_delete.is_none(),
            _ => false,
        });
    if !plain {
        return quote!();
    }
    let with_etag = cont.field_with_system(SystemRole::ETag).is_some();
    let mut columns = Vec::new();
    let decodes: Vec<TokenStream> = cont
        .fields
        .iter()
        .map(|f| {
            let local = fields::local(f);
            let ty = &f.ty;
            let value = match &f.storage {
                Storage::Key(KeyRole::Partition) => {
                    quote_spanned!(ty.span()=> <#ty as #p::KeyPart>::from_key_text(::core::mem::take(&mut __w.partition_key)))
                }
                Storage::Key(_) => {
                    quote_spanned!(ty.span()=> <#ty as #p::KeyPart>::from_key_text(::core::mem::take(&mut __w.row_key)))
                }
                Storage::System(SystemRole::ETag) => quote!(__w.etag.clone()),
                Storage::System(SystemRole::Timestamp) => {
                    quote!(#p::Option::map(__w.timestamp, ::core::convert::From::from))
                }
                Storage::Skip => quote_spanned!(ty.span()=> <#ty as #p::Default>::default()),
                _ => {
                    let (at, c) = (columns.len(), &f.column);
                    columns.push(c.clone());
                    quote_spanned!(ty.span()=> <#ty as #p::TableValue>::decode_cell(__w.cells[#at].take(), #c)?)
                }
            };
            quote!(let #local = #value;)
        })
        .collect();
    quote! {
        const DECODES_PAGES: bool = true;

        fn decode_page(__body: &[u8]) -> #p::Option<::std::vec::Vec<Self>> {
            const __COLUMNS: &[&str] = &[#(#columns),*];
            #[allow(unused_mut, unused_variables, clippy::redundant_clone)]
            fn __build(mut __w: #p::WireRow<'_>) -> #p::Result<#ident> {
                #(#decodes)*
                #p::Ok(#ident { #(#inits),* })
            }
            #p::page_into(__body, __COLUMNS, #with_etag, __build)
        }
    }
}

/// `blob_contents` and `blob_contents_mut` for entities with `#[blob_content]` fields.
fn blob_accessors(cont: &Container) -> TokenStream {
    let p = private();
    let blobs: Vec<_> = cont
        .fields
        .iter()
        .filter_map(|f| match f.storage {
            Storage::Blob { optional } => Some((&f.ident, f.column.as_str(), optional)),
            _ => None,
        })
        .collect();
    if blobs.is_empty() {
        return quote!();
    }
    let push = |mutable: bool| -> Vec<TokenStream> {
        blobs
            .iter()
            .map(|(fi, col, optional)| match (optional, mutable) {
                (true, false) => quote!(if let #p::Some(__c) = &self.#fi { __out.push((#col, __c)); }),
                (true, true) => quote!(if let #p::Some(__c) = &mut self.#fi { __out.push((#col, __c)); }),
                (false, false) => quote!(__out.push((#col, &self.#fi));),
                (false, true) => quote!(__out.push((#col, &mut self.#fi));),
            })
            .collect()
    };
    let (shared, exclusive) = (push(false), push(true));
    quote! {
        fn blob_contents(&self) -> ::std::vec::Vec<(&'static str, &#p::BlobContent)> {
            let mut __out = ::std::vec::Vec::new();
            #(#shared)*
            __out
        }

        fn blob_contents_mut(&mut self) -> ::std::vec::Vec<(&'static str, &mut #p::BlobContent)> {
            let mut __out = ::std::vec::Vec::new();
            #(#exclusive)*
            __out
        }
    }
}
