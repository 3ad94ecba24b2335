//! Typed filter columns and partial-update builders, per entity and record.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, Type};

use super::private;
use crate::internals::ast::{Container, Derive, Field, Storage};
use crate::internals::attr::{KeyRole, SystemRole};
use crate::internals::ty;

/// The names of the generated builders' and columns' type parameters: the
/// entity a record is inside (`Entity`) and the builder's authorisation
/// state (`Auth`). They appear in compile errors (`TicketUpdate::<Auth>::limit`),
/// so they read as words; a field type or struct that uses the same name
/// gets a prefixed one instead, which it cannot shadow.
pub(crate) struct Params {
    pub(crate) entity: Ident,
    pub(crate) auth: Ident,
}

pub(crate) fn params(cont: &Container) -> Params {
    fn idents(tokens: TokenStream, out: &mut Vec<String>) {
        for t in tokens {
            match t {
                proc_macro2::TokenTree::Ident(i) => out.push(i.to_string()),
                proc_macro2::TokenTree::Group(g) => idents(g.stream(), out),
                _ => {}
            }
        }
    }
    let mut used = vec![cont.ident.to_string()];
    for f in &cont.fields {
        let ty = &f.ty;
        idents(quote!(#ty), &mut used);
    }
    let pick = |name: &str| {
        if used.iter().any(|u| u == name) {
            format_ident!("__{}", name)
        } else {
            format_ident!("{}", name)
        }
    };
    Params {
        entity: pick("Entity"),
        auth: pick("Auth"),
    }
}

/// Who the generated items are for: the entity itself, or a record inside entity `Entity`.
fn entity_type(cont: &Container) -> TokenStream {
    match cont.derive {
        Derive::Entity => {
            let ident = &cont.ident;
            quote!(#ident)
        }
        Derive::Record => {
            let e = params(cont).entity;
            quote!(#e)
        }
    }
}

/// An expression naming a column: literal at the top level, prefixed in a record.
fn column_expr(cont: &Container, name: &str, prefix: TokenStream) -> TokenStream {
    match cont.derive {
        Derive::Entity => quote!(::std::string::String::from(#name)),
        Derive::Record => quote!(::std::format!("{}{}", #prefix, #name)),
    }
}

fn nested_prefix(cont: &Container, name: &str, prefix: TokenStream) -> TokenStream {
    let with_delim = format!("{name}_");
    match cont.derive {
        Derive::Entity => quote!(#with_delim),
        Derive::Record => quote!(&::std::format!("{}{}", #prefix, #with_delim)),
    }
}

/// The filter-column type and constructor of one field, or `None` for fields without one.
fn filter_field(cont: &Container, f: &Field) -> Option<(TokenStream, TokenStream)> {
    let p = private();
    let e = entity_type(cont);
    let prefix = quote!(__prefix);
    let ty = &f.ty;
    let col = |name: &str, inner: &Type, optional: bool| {
        let expr = column_expr(cont, name, prefix.clone());
        if optional {
            (quote!(#p::OptCol<#e, #inner>), quote!(#p::OptCol::new(#expr)))
        } else {
            (quote!(#p::Col<#e, #inner>), quote!(#p::Col::new(#expr)))
        }
    };
    Some(match &f.storage {
        Storage::Key(KeyRole::Partition) => col("PartitionKey", ty, false),
        Storage::Key(KeyRole::Row) => col("RowKey", ty, false),
        Storage::Key(KeyRole::Id) => col(&f.column, ty, false),
        Storage::System(SystemRole::ETag) => return None,
        Storage::System(SystemRole::Timestamp) => col("Timestamp", ty::option_inner(ty).unwrap_or(ty), false),
        Storage::Skip => {
            let expr = column_expr(cont, &f.column, prefix.clone());
            (quote!(#p::SkippedCol<#e>), quote!(#p::SkippedCol::new(#expr)))
        }
        Storage::Json => {
            let expr = column_expr(cont, &f.column, prefix.clone());
            (quote!(#p::JsonCol<#e>), quote!(#p::JsonCol::new(#expr)))
        }
        Storage::Large { .. } | Storage::Blob { .. } => {
            let expr = column_expr(cont, &f.column, prefix.clone());
            (quote!(#p::LargeCol<#e>), quote!(#p::LargeCol::new(#expr)))
        }
        Storage::Flatten { inner, .. } => {
            let pfx = nested_prefix(cont, &f.column, prefix.clone());
            (quote!(#p::Nested<#e, #inner>), quote!(#p::Nested::new(#pfx)))
        }
        Storage::Value | Storage::Binary { .. } => match ty::option_inner(ty) {
            Some(inner) => col(&f.column, inner, true),
            None => col(&f.column, ty, false),
        },
    })
}

/// The columns struct: its definition, its type (with generics) and a constructor body.
pub(crate) fn columns(cont: &Container, struct_ident: &Ident) -> (TokenStream, TokenStream, TokenStream) {
    let entity = params(cont).entity;
    let mut fields = Vec::new();
    let mut inits = Vec::new();
    for f in &cont.fields {
        if let Some((ty, init)) = filter_field(cont, f) {
            let fi = &f.ident;
            let doc = format!("The `{}` column.", f.column);
            fields.push(quote!(#[doc = #doc] pub #fi: #ty));
            inits.push(quote!(#fi: #init));
        }
    }
    let doc = format!("Typed filter columns of `{}`.", cont.ident);
    match cont.derive {
        Derive::Entity => (
            quote! {
                #[doc = #doc]
                pub struct #struct_ident { #(#fields,)* }

                impl ::core::fmt::Debug for #struct_ident {
                    fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                        f.write_str(::core::stringify!(#struct_ident))
                    }
                }
            },
            quote!(#struct_ident),
            quote!({ let __prefix = ""; let _ = __prefix; #struct_ident { #(#inits,)* } }),
        ),
        Derive::Record => (
            quote! {
                #[doc = #doc]
                pub struct #struct_ident<#entity> {
                    #(#fields,)*
                    #[doc(hidden)]
                    pub __entity: ::core::marker::PhantomData<fn() -> #entity>,
                }

                impl<#entity> ::core::fmt::Debug for #struct_ident<#entity> {
                    fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                        f.write_str(::core::stringify!(#struct_ident))
                    }
                }
            },
            quote!(#struct_ident<#entity>),
            quote!(#struct_ident { #(#inits,)* __entity: ::core::marker::PhantomData }),
        ),
    }
}

/// One setter of the partial-update builder, or `None` for fields without one.
fn setter(cont: &Container, f: &Field) -> Option<TokenStream> {
    let auth = params(cont).auth;
    let p = private();
    let e = entity_type(cont);
    let fi = &f.ident;
    let ty = &f.ty;
    let col = column_expr(cont, &f.column, quote!(self.prefix));
    let rebuild = |inner: TokenStream| match cont.derive {
        Derive::Entity => quote!(Self(#inner)),
        Derive::Record => quote!(Self { inner: #inner, prefix: self.prefix }),
    };
    let state = match cont.derive {
        Derive::Entity => quote!(self.0),
        Derive::Record => quote!(self.inner),
    };
    let protect = f.attrs.protected.as_ref().map(|roles| {
        let roles = &roles.value;
        quote!(.__protect(&__col, &[#(#roles),*]))
    });
    let protected_bound = f.attrs.protected.as_ref().map(|_| quote!(#auth: #p::MaySetProtected,));
    let doc = format!("Sets the `{}` column.", f.column);
    let optional = ty::option_inner(ty);
    let clear = optional.map(|_| {
        let clear_ident = format_ident!("clear_{}", fi.to_string().trim_start_matches("r#"));
        let doc = format!("Refused at compile time: a Merge cannot remove `{}`.", f.column);
        quote! {
            #[doc = #doc]
            pub fn #clear_ident(self) -> Self where #auth: #p::MergeCannotClearAField {
                unreachable!("MergeCannotClearAField has no implementations")
            }
        }
    });
    let body = |set: TokenStream| {
        let rebuilt = rebuild(quote!(#state #protect #set));
        quote!({ let __col = #col; #rebuilt })
    };
    Some(match &f.storage {
        Storage::Key(_) | Storage::System(_) | Storage::Skip => return Some(refused_setter(cont, f)),
        Storage::Value if f.attrs.soft_delete.is_some() => {
            let doc = format!(
                "Refused at compile time: `{}` is the deletion stamp; use `Store::soft_delete` or `Store::restore`.",
                f.column
            );
            quote! {
                #[doc = #doc]
                pub fn #fi<__V>(self, _value: __V) -> Self where #auth: #p::DeletionStampIsSetBySoftDelete {
                    unreachable!("DeletionStampIsSetBySoftDelete has no implementations")
                }
            }
        }
        Storage::Large { .. } | Storage::Blob { .. } => {
            let doc = format!(
                "Refused at compile time: `{}` is a large value; replace the entity instead.",
                f.column
            );
            quote! {
                #[doc = #doc]
                pub fn #fi<__V>(self, _value: __V) -> Self where #auth: #p::LargeFieldsCannotBePatched {
                    unreachable!("LargeFieldsCannotBePatched has no implementations")
                }
            }
        }
        Storage::Flatten { inner, .. } => {
            let pfx = match cont.derive {
                Derive::Entity => {
                    let s = format!("{}_", f.column);
                    quote!(::std::string::String::from(#s))
                }
                Derive::Record => {
                    let s = format!("{}_", f.column);
                    quote!(::std::format!("{}{}", self.prefix, #s))
                }
            };
            let updater = quote_spanned!(inner.span()=> <#inner as #p::TableRecord>::Updater<#e, #auth>);
            let start = rebuild(quote_spanned! {inner.span()=>
                #p::RecordUpdater::finish(build(<#updater as #p::RecordUpdater<#e, #auth>>::start(#state, #pfx)))
            });
            let doc = format!("Sets columns of the flattened `{}` record.", f.column);
            quote_spanned! {inner.span()=>
                #[doc = #doc]
                pub fn #fi(self, build: impl FnOnce(#updater) -> #updater) -> Self { #start }
            }
        }
        Storage::Binary { .. } => {
            let set = body(quote!(.__set_binary(&__col, &value.into())));
            quote! {
                #[doc = #doc]
                pub fn #fi(self, value: impl ::core::convert::Into<::std::vec::Vec<u8>>) -> Self where #protected_bound { #set }
                #clear
            }
        }
        // The value is encoded through the same trait path, on the same span,
        // as the entity's codec, so a type without a cell format is one error.
        Storage::Json => {
            let inner = optional.unwrap_or(ty);
            let value = wrap_optional(optional.is_some(), quote!(value));
            let encode = quote_spanned!(ty.span()=> <#ty as #p::JsonValue>::encode_json_cell(&__v, __c, __r, __o));
            let set = body(quote!(.__set_cells(&__col, |__c, __r, __o| #encode)));
            quote! {
                #[doc = #doc]
                pub fn #fi(self, value: #inner) -> Self where #protected_bound { let __v: #ty = #value; #set }
                #clear
            }
        }
        Storage::Value => {
            let inner = optional.unwrap_or(ty);
            // The column's own type, so a bare literal takes it (`5` for a `u32`).
            let value = wrap_optional(
                optional.is_some(),
                quote!(#p::IntoColumnValue::<#inner>::into_column_value(value)),
            );
            let encode = quote_spanned!(ty.span()=> <#ty as #p::TableValue>::encode(&__v, __c, __r, __o));
            let set = body(quote!(.__set_cells(&__col, |__c, __r, __o| #encode)));
            quote! {
                #[doc = #doc]
                pub fn #fi(self, value: impl #p::IntoColumnValue<#inner>) -> Self where #protected_bound { let __v: #ty = #value; #set }
                #clear
            }
        }
    })
}

/// The setter of a field that is not a column a Merge can write (a key, the
/// ETag, the Timestamp, a skipped field): it exists so that calling it names
/// the reason and the fix, instead of "no method named ..".
fn refused_setter(cont: &Container, f: &Field) -> TokenStream {
    let auth = params(cont).auth;
    let p = private();
    let fi = &f.ident;
    let (refusal, what) = match &f.storage {
        Storage::Key(_) => (
            quote!(KeysCannotBeUpdated),
            "a key: the keys address the row a partial update writes",
        ),
        Storage::System(SystemRole::ETag) => (quote!(ETagIsNotAColumn), "the ETag: use `.with_etag(..)`"),
        Storage::System(SystemRole::Timestamp) => {
            (quote!(TimestampIsSetByTheService), "the Timestamp, set by the service")
        }
        _ => (quote!(SkippedFieldsAreNotStored), "#[table(skip)], so it is not stored"),
    };
    let doc = format!("Refused at compile time: `{fi}` is {what}.");
    quote! {
        #[doc = #doc]
        pub fn #fi<__V>(self, _value: __V) -> Self where #auth: #p::#refusal {
            unreachable!("the refusal trait has no implementations")
        }
    }
}

/// `Some(value)` for an optional field, else `value`.
fn wrap_optional(optional: bool, value: TokenStream) -> TokenStream {
    if optional {
        let p = private();
        quote!(#p::Some(#value))
    } else {
        value
    }
}

/// The update builder: its definition and its impls.
pub(crate) fn builder(cont: &Container, struct_ident: &Ident) -> TokenStream {
    let Params { entity, auth } = params(cont);
    let p = private();
    let setters: Vec<TokenStream> = cont.fields.iter().filter_map(|f| setter(cont, f)).collect();
    let doc = format!("Partial update of `{}`: a Merge of only the columns set.", cont.ident);
    match cont.derive {
        Derive::Entity => {
            let ident = &cont.ident;
            quote! {
                #[doc = #doc]
                pub struct #struct_ident<#auth = #p::Unauthorized>(#p::Update<#ident, #auth>);

                impl<#auth> ::core::fmt::Debug for #struct_ident<#auth> {
                    fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                        ::core::fmt::Debug::fmt(&self.0, f)
                    }
                }

                impl<#auth> #struct_ident<#auth> {
                    #(#setters)*

                    /// Sends the update on condition of this version.
                    pub fn with_etag(self, etag: #p::ETag) -> Self {
                        Self(self.0.with_etag(etag))
                    }
                }

                impl #struct_ident<#p::Unauthorized> {
                    /// Allows setting `#[protected]` fields; each one set is checked against
                    /// `authorizer`'s roles when the update is sent, and the patch fails with
                    /// `Error::Protected` if none of its roles is granted. The builder's
                    /// counterpart of `Store::with_authorizer` (see
                    /// `unified_tables::update::Update::authorize`).
                    pub fn authorize(self, authorizer: impl #p::Authorizer + 'static) -> #struct_ident<#p::Authorized> {
                        #struct_ident(self.0.authorize(authorizer))
                    }
                }

                #[automatically_derived]
                impl<#auth> #p::UpdateBuilder<#ident> for #struct_ident<#auth> {
                    type State = #auth;
                    fn into_update(self) -> #p::Update<#ident, #auth> {
                        self.0
                    }
                }
            }
        }
        Derive::Record => quote! {
            #[doc = #doc]
            pub struct #struct_ident<#entity, #auth> {
                inner: #p::Update<#entity, #auth>,
                prefix: ::std::string::String,
            }

            impl<#entity, #auth> ::core::fmt::Debug for #struct_ident<#entity, #auth> {
                fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    ::core::fmt::Debug::fmt(&self.inner, f)
                }
            }

            impl<#entity, #auth> #struct_ident<#entity, #auth> {
                #(#setters)*
            }

            #[automatically_derived]
            impl<#entity, #auth> #p::RecordUpdater<#entity, #auth> for #struct_ident<#entity, #auth> {
                fn start(inner: #p::Update<#entity, #auth>, prefix: ::std::string::String) -> Self {
                    #struct_ident { inner, prefix }
                }
                fn finish(self) -> #p::Update<#entity, #auth> {
                    self.inner
                }
            }
        },
    }
}

/// `set_key` of an entity.
pub(crate) fn set_key(cont: &Container) -> TokenStream {
    let p = private();
    let assign = |role, part: TokenStream| {
        cont.field_with_key(role).map(|f| {
            let fi = &f.ident;
            let ty = &f.ty;
            quote_spanned!(ty.span()=> self.#fi = <#ty as #p::KeyPart>::from_key_text(#part);)
        })
    };
    match cont.field_with_key(KeyRole::Id) {
        Some(_) => {
            let id = assign(KeyRole::Id, quote!(key.to_id()));
            quote!(#id)
        }
        None => {
            let pk = assign(KeyRole::Partition, quote!(key.partition_key));
            let rk = assign(KeyRole::Row, quote!(key.row_key));
            quote!(#pk #rk)
        }
    }
}
