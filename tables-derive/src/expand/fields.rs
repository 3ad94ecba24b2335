//! Per-field code shared by `TableEntity` and `TableRecord`: the column
//! metadata, the encoder and the decoder of every stored field.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use super::private;
use crate::internals::ast::{Field, LargeCodec, Storage};
use crate::internals::attr::SplitEncoding;
use crate::internals::ty;

/// How the generated code names a column.
#[derive(Clone)]
pub(crate) enum Naming {
    /// A literal, at the top level.
    Literal,
    /// At the top level of `to_row`, the entry at this offset of the row's
    /// expected names (`__names`), so that the row borrows that very text.
    Listed(TokenStream),
    /// Inside a nested record: the cell at this position of the record's
    /// `CELL_NAMES`, under the run-time `__prefix` (spelled at compile time
    /// when the parent could, else joined on the stack).
    Prefixed(TokenStream),
}

impl Naming {
    /// An expression for `name` of type `&str`, or a borrowed name that
    /// derefs to it (its temporary lives as long as a `let` binds it).
    pub(crate) fn column(&self, name: &str) -> TokenStream {
        match self {
            Naming::Literal => quote!(#name),
            Naming::Listed(at) => quote!(__names[#at]),
            Naming::Prefixed(at) => quote!(&__prefix.column(#at, #name)),
        }
    }

    /// [`Naming::column`] for a name that is not in any table (an alias).
    fn alias(&self, name: &str) -> TokenStream {
        match self {
            Naming::Literal | Naming::Listed(_) => quote!(#name),
            Naming::Prefixed(_) => {
                let p = private();
                quote!(&#p::JoinedName::new(&[__prefix.as_str(), #name]))
            }
        }
    }
}

/// The names a field adds to a table of cell names (a record's
/// `CELL_NAMES`, or the names `to_row` expects), as a constant list
/// expression, and how many there are. With `json_forms`, a field stored
/// as JSON is listed as `{Col}__Json`, the cell it writes; a record's
/// `CELL_NAMES` name columns, so they list the column.
pub(crate) fn listed_names(f: &Field, json_forms: bool) -> (TokenStream, TokenStream) {
    let p = private();
    let name = &f.column;
    match &f.storage {
        Storage::Flatten { inner, .. } => {
            let lit = format!("{name}_");
            (
                quote_spanned!(inner.span()=> #p::joined_names!(#lit, <#inner as #p::TableRecord>::CELL_NAMES)),
                quote_spanned!(inner.span()=> <#inner as #p::TableRecord>::CELL_NAMES.len()),
            )
        }
        // A value stored as JSON writes `{Col}__Json`.
        Storage::Value if json_forms => {
            let ty = &f.ty;
            (
                quote_spanned! {ty.span()=>
                    #p::pick_names(<#ty as #p::TableValue>::KIND, &[#name], #p::joined_names!(#name, &[#p::JSON_SUFFIX]))
                },
                quote!(1usize),
            )
        }
        Storage::Json if json_forms => (quote!(#p::joined_names!(#name, &[#p::JSON_SUFFIX])), quote!(1usize)),
        _ => (quote!(&[#name]), quote!(1usize)),
    }
}

/// The offset of each of `fields` in a table of cell names, for the fields
/// `listed` keeps (others get `None`), and the table's constant expression
/// (see [`listed_names`] for `json_forms`).
pub(crate) fn name_table(
    fields: &[Field],
    json_forms: bool,
    listed: impl Fn(&Field) -> bool,
) -> (Vec<Option<TokenStream>>, TokenStream) {
    let p = private();
    let mut offset = quote!(0usize);
    let mut offsets = Vec::new();
    let mut lists = Vec::new();
    for f in fields {
        if !listed(f) {
            offsets.push(None);
            continue;
        }
        let (list, len) = listed_names(f, json_forms);
        offsets.push(Some(offset.clone()));
        offset = quote!(#offset + #len);
        lists.push(list);
    }
    (offsets, quote!(#p::concat_names!(#(#lists),*)))
}

/// The local a decoded field is bound to.
pub(crate) fn local(f: &Field) -> syn::Ident {
    format_ident!("__f_{}", f.ident.to_string().trim_start_matches("r#"))
}

/// `Column { .. }` metadata for a stored field.
pub(crate) fn column_meta(f: &Field) -> TokenStream {
    let p = private();
    let ty = &f.ty;
    let name = &f.column;
    let field = f.ident.to_string();
    let is_opt = ty::option_inner(ty).is_some();
    let (kind, optional) = match &f.storage {
        Storage::Value => (
            quote_spanned!(ty.span()=> #p::ColumnKind::Value(<#ty as #p::TableValue>::KIND)),
            quote_spanned!(ty.span()=> <#ty as #p::TableValue>::OPTIONAL),
        ),
        Storage::Binary { optional } => (quote!(#p::ColumnKind::Binary), quote!(#optional)),
        Storage::Json => (quote!(#p::ColumnKind::Value(#p::ValueKind::Json)), quote!(#is_opt)),
        Storage::Flatten { inner, optional } => (
            quote_spanned!(inner.span()=> #p::ColumnKind::Flatten(<#inner as #p::TableRecord>::COLUMNS)),
            quote!(#optional),
        ),
        Storage::Large {
            encoding,
            offload,
            codec,
        } => {
            let enc = match encoding {
                SplitEncoding::Text => quote!(#p::LargeEncoding::Text),
                SplitEncoding::Gzip => quote!(#p::LargeEncoding::Gzip),
                SplitEncoding::Binary => quote!(#p::LargeEncoding::Binary),
            };
            let form = match codec {
                LargeCodec::Value => quote!(#p::LargeForm::Text),
                LargeCodec::Binary { .. } => quote!(#p::LargeForm::Bytes),
                LargeCodec::Json => quote!(#p::LargeForm::Json),
            };
            (
                quote!(#p::ColumnKind::Large { encoding: #enc, offload: #offload, form: #form }),
                quote!(#is_opt),
            )
        }
        Storage::Blob { optional } => (quote!(#p::ColumnKind::Blob), quote!(#optional)),
        Storage::Key(_) => (
            quote!(#p::ColumnKind::Value(#p::ValueKind::Cell(#p::EdmType::String))),
            quote!(false),
        ),
        Storage::System(_) | Storage::Skip => unreachable!("not a column"),
    };
    let aliases: Vec<&String> = f.attrs.alias.iter().map(|a| &a.value).collect();
    let protected: Vec<&String> = f.attrs.protected.iter().flat_map(|p| p.value.iter()).collect();
    quote! {
        #p::Column {
            name: #name,
            field: #field,
            kind: #kind,
            optional: #optional,
            aliases: &[#(#aliases),*],
            protected: &[#(#protected),*],
        }
    }
}

/// Statements writing the field's cells into `__row`.
pub(crate) fn encode(f: &Field, naming: &Naming) -> TokenStream {
    let ident = &f.ident;
    encode_at(f, naming, quote!(self.#ident))
}

/// [`encode`] of each of `fields` with its naming.
pub(crate) fn encodes(fields: &[Field], namings: &[Naming]) -> Vec<TokenStream> {
    fields
        .iter()
        .zip(namings)
        .map(|(f, naming)| encode(f, naming))
        .collect()
}

/// [`encode`] of the field's value at the place expression `place`
/// (`self.field`, or a binding of an enum variant's field).
pub(crate) fn encode_at(f: &Field, naming: &Naming, place: TokenStream) -> TokenStream {
    let p = private();
    let ty = &f.ty;
    let col = match (&f.storage, naming) {
        // The table lists `{Col}__Json` for a value stored as JSON; the codec adds the suffix.
        (Storage::Value, Naming::Listed(at)) => {
            let name = &f.column;
            quote_spanned!(ty.span()=> if <#ty as #p::TableValue>::KIND.is_json() { #name } else { __names[#at] })
        }
        _ => naming.column(&f.column),
    };
    match &f.storage {
        // A deletion stamp is always written: the live marker when unset.
        Storage::Value if f.attrs.soft_delete.is_some() => quote_spanned! {ty.span()=>
            #p::encode_deletion_stamp(<#ty as #p::DeletionStamp>::deleted_at(&#place), #col, __row, __opts)?;
        },
        Storage::Value => quote_spanned! {ty.span()=>
            <#ty as #p::TableValue>::encode(&#place, #col, __row, __opts)?;
        },
        Storage::Large { codec, .. } => {
            let value = match codec {
                LargeCodec::Value if ty::option_inner(ty).is_some() => quote!(#p::Option::as_deref(&#place)),
                LargeCodec::Value => quote!(#p::Some(#place.as_str())),
                LargeCodec::Binary { optional: true } => quote!(#p::Option::as_deref(&#place)),
                LargeCodec::Binary { optional: false } => quote!(#p::Some(#place.as_slice())),
                LargeCodec::Json => quote!(&#place),
            };
            match codec {
                LargeCodec::Value => quote!(#p::encode_large_text(#value, #col, __row);),
                LargeCodec::Binary { .. } => quote!(#p::encode_large_bytes(#value, #col, __row);),
                LargeCodec::Json => quote_spanned! {ty.span()=>
                    #p::encode_large_json_value(<#ty as #p::JsonValue>::to_json(#value, #col)?, #col, __row);
                },
            }
        }
        Storage::Binary { optional } => {
            if *optional {
                quote! {
                    if let #p::Some(__v) = &#place {
                        #p::encode_binary(__v, #col, __row, __opts)?;
                    }
                }
            } else {
                quote!(#p::encode_binary(&#place, #col, __row, __opts)?;)
            }
        }
        Storage::Json => quote_spanned! {ty.span()=>
            <#ty as #p::JsonValue>::encode_json_cell(&#place, #col, __row, __opts)?;
        },
        Storage::Flatten { inner, optional } => {
            let bind = nested_prefix(&f.column, inner, naming);
            if *optional {
                quote_spanned! {inner.span()=>
                    if let #p::Some(__v) = &#place {
                        #bind
                        <#inner as #p::TableRecord>::write_columns(__v, __pfx, __row, __opts)?;
                    }
                }
            } else {
                quote_spanned! {inner.span()=>
                    {
                        #bind
                        <#inner as #p::TableRecord>::write_columns(&#place, __pfx, __row, __opts)?;
                    }
                }
            }
        }
        Storage::Blob { optional } => {
            let value = if *optional {
                quote!(#p::Option::as_ref(&#place))
            } else {
                quote!(#p::Some(&#place))
            };
            quote!(#p::encode_blob_ref(#value, #col, __row)?;)
        }
        Storage::Key(_) | Storage::System(_) | Storage::Skip => quote!(),
    }
}

/// Statements binding `__pfx`, the `Prefix` of a nested record's columns
/// (`Parent_`), with the record's cell names spelled at compile time where
/// the parent's names are: at the top level, and under a parent that got
/// its own names spelled.
fn nested_prefix(column: &str, inner: &syn::Type, naming: &Naming) -> TokenStream {
    let p = private();
    let lit = format!("{column}_");
    let len = quote_spanned!(inner.span()=> <#inner as #p::TableRecord>::CELL_NAMES.len());
    match naming {
        Naming::Literal => quote_spanned! {inner.span()=>
            let __pfx = #p::Prefix::with_names(#lit, #p::joined_names!(#lit, <#inner as #p::TableRecord>::CELL_NAMES));
        },
        Naming::Listed(at) => quote! {
            let __pfx = #p::Prefix::with_names(#lit, &__names[#at..#at + #len]);
        },
        Naming::Prefixed(at) => quote! {
            let __np = __prefix.nested(#at, #len, #column, "_");
            let __pfx = __np.prefix();
        },
    }
}

/// An expression decoding the field from `__row` (a `mut Row`).
pub(crate) fn decode(f: &Field, naming: &Naming, implicit_alias: Option<&str>) -> TokenStream {
    let p = private();
    let ty = &f.ty;
    let col = naming.column(&f.column);
    let aliases: Vec<TokenStream> = f
        .attrs
        .alias
        .iter()
        .map(|a| a.value.as_str())
        .chain(implicit_alias)
        .map(|a| naming.alias(a))
        .collect();
    // Binds `__c`, the column actually read: the canonical one, or an alias
    // when only that exists. The names are bound first so that a nested
    // record's formatted names outlive the call.
    let resolved = if aliases.is_empty() {
        quote!(let __c = #col;)
    } else {
        let n = aliases.len();
        quote! {
            let __canonical: &str = #col;
            let __aliases: [&str; #n] = [#(#aliases),*];
            let __c = #p::resolve_column(&__row, __canonical, &__aliases);
        }
    };
    match &f.storage {
        Storage::Value if f.attrs.soft_delete.is_some() => quote_spanned! {ty.span()=>
            { #resolved <#ty as #p::DeletionStamp>::from_stored(#p::decode_deletion_stamp(&mut __row, __c)?) }
        },
        Storage::Value
        | Storage::Large {
            codec: LargeCodec::Value,
            ..
        } => quote_spanned! {ty.span()=>
            { #resolved <#ty as #p::TableValue>::decode(&mut __row, __c)? }
        },
        Storage::Binary { optional }
        | Storage::Large {
            codec: LargeCodec::Binary { optional },
            ..
        } => {
            if *optional {
                quote!({ #resolved #p::decode_optional_binary(&mut __row, __c)? })
            } else {
                quote!({ #resolved #p::decode_binary(&mut __row, __c)? })
            }
        }
        Storage::Json
        | Storage::Large {
            codec: LargeCodec::Json,
            ..
        } => quote_spanned! {ty.span()=>
            { #resolved <#ty as #p::JsonValue>::decode_json_cell(&mut __row, __c)? }
        },
        Storage::Flatten { inner, optional } => {
            let bind = nested_prefix(&f.column, inner, naming);
            if *optional {
                quote_spanned! {inner.span()=>
                    {
                        #bind
                        if <#inner as #p::TableRecord>::present_in(&__row, __pfx) {
                            #p::Some(<#inner as #p::TableRecord>::read_columns(&mut __row, __pfx)?)
                        } else {
                            #p::None
                        }
                    }
                }
            } else {
                quote_spanned! {inner.span()=>
                    {
                        #bind
                        <#inner as #p::TableRecord>::read_columns(&mut __row, __pfx)?
                    }
                }
            }
        }
        Storage::Blob { optional } => {
            if *optional {
                quote!({ #resolved #p::decode_blob_ref(&mut __row, __c)? })
            } else {
                quote!({ #resolved #p::require_blob(#p::decode_blob_ref(&mut __row, __c)?, #col)? })
            }
        }
        Storage::Skip => quote_spanned!(ty.span()=> <#ty as #p::Default>::default()),
        Storage::Key(_) | Storage::System(_) => unreachable!("keys and system fields are decoded by the entity"),
    }
}

/// `field: __f_field` for every field, to build the struct from its decoded locals.
pub(crate) fn inits(fields: &[Field]) -> Vec<TokenStream> {
    fields
        .iter()
        .map(|f| {
            let fi = &f.ident;
            let local = local(f);
            quote!(#fi: #local)
        })
        .collect()
}
