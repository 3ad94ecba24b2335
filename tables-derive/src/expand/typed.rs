//! Typed filter columns and partial-update builders, per entity and record.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, Type};

use super::private;
use crate::internals::ast::{Container, Derive, Field, Storage};
use crate::internals::attr::{KeyRole, SystemRole};
use crate::internals::ty;

/// Who the generated items are for: the entity itself, or a record inside entity `E`.
fn entity_type(cont: &Container) -> TokenStream {
    match cont.derive {
        Derive::Entity => {
            let ident = &cont.ident;
            quote!(#ident)
        }
        Derive::Record => quote!(__E),
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
                pub struct #struct_ident<__E> {
                    #(#fields,)*
                    #[doc(hidden)]
                    pub __entity: ::core::marker::PhantomData<fn() -> __E>,
                }

                impl<__E> ::core::fmt::Debug for #struct_ident<__E> {
                    fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                        f.write_str(::core::stringify!(#struct_ident))
                    }
                }
            },
            quote!(#struct_ident<__E>),
            quote!(#struct_ident { #(#inits,)* __entity: ::core::marker::PhantomData }),
        ),
    }
}

/// One setter of the partial-update builder, or `None` for fields without one.
fn setter(cont: &Container, f: &Field) -> Option<TokenStream> {
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
    let protected_bound = f.attrs.protected.as_ref().map(|_| quote!(__A: #p::MaySetProtected,));
    let doc = format!("Sets the `{}` column.", f.column);
    let optional = ty::option_inner(ty);
    let clear = optional.map(|_| {
        let clear_ident = format_ident!("clear_{}", fi.to_string().trim_start_matches("r#"));
        let doc = format!("Refused at compile time: a Merge cannot remove `{}`.", f.column);
        quote! {
            #[doc = #doc]
            pub fn #clear_ident(self) -> Self where __A: #p::MergeCannotClearAField {
                unreachable!("MergeCannotClearAField has no implementations")
            }
        }
    });
    let body = |set: TokenStream| {
        let rebuilt = rebuild(quote!(#state #protect #set));
        quote!({ let __col = #col; #rebuilt })
    };
    Some(match &f.storage {
        Storage::Key(_) | Storage::System(_) | Storage::Skip => return None,
        Storage::Value if f.attrs.soft_delete.is_some() => {
            let doc = format!(
                "Refused at compile time: `{}` is the deletion stamp; use `Store::soft_delete` or `Store::restore`.",
                f.column
            );
            quote! {
                #[doc = #doc]
                pub fn #fi<__V>(self, _value: __V) -> Self where __A: #p::DeletionStampIsSetBySoftDelete {
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
                pub fn #fi<__V>(self, _value: __V) -> Self where __A: #p::LargeFieldsCannotBePatched {
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
            let updater = quote_spanned!(inner.span()=> <#inner as #p::TableRecord>::Updater<#e, __A>);
            let start = rebuild(quote_spanned! {inner.span()=>
                #p::RecordUpdater::finish(build(<#updater as #p::RecordUpdater<#e, __A>>::start(#state, #pfx)))
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
        Storage::Json => {
            let inner = optional.unwrap_or(ty);
            let set = body(quote!(.__set_json(&__col, &value)));
            quote! {
                #[doc = #doc]
                pub fn #fi(self, value: #inner) -> Self where #protected_bound { #set }
                #clear
            }
        }
        Storage::Value => {
            let inner = optional.unwrap_or(ty);
            let set = body(quote_spanned!(inner.span()=> .__set::<#inner>(&__col, &value.into())));
            quote! {
                #[doc = #doc]
                pub fn #fi(self, value: impl ::core::convert::Into<#inner>) -> Self where #protected_bound { #set }
                #clear
            }
        }
    })
}

/// The update builder: its definition and its impls.
pub(crate) fn builder(cont: &Container, struct_ident: &Ident) -> TokenStream {
    let p = private();
    let setters: Vec<TokenStream> = cont.fields.iter().filter_map(|f| setter(cont, f)).collect();
    let doc = format!("Partial update of `{}`: a Merge of only the columns set.", cont.ident);
    match cont.derive {
        Derive::Entity => {
            let ident = &cont.ident;
            quote! {
                #[doc = #doc]
                pub struct #struct_ident<__A = #p::Unauthorized>(#p::Update<#ident, __A>);

                impl<__A> ::core::fmt::Debug for #struct_ident<__A> {
                    fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                        ::core::fmt::Debug::fmt(&self.0, f)
                    }
                }

                impl<__A> #struct_ident<__A> {
                    #(#setters)*

                    /// Sends the update on condition of this version.
                    pub fn with_etag(self, etag: #p::ETag) -> Self {
                        Self(self.0.with_etag(etag))
                    }
                }

                impl #struct_ident<#p::Unauthorized> {
                    /// Allows setting protected fields; their roles are checked against `authorizer` when sent.
                    pub fn authorize(self, authorizer: impl #p::Authorizer + 'static) -> #struct_ident<#p::Authorized> {
                        #struct_ident(self.0.authorize(authorizer))
                    }
                }

                #[automatically_derived]
                impl<__A> #p::UpdateBuilder<#ident> for #struct_ident<__A> {
                    type State = __A;
                    fn into_update(self) -> #p::Update<#ident, __A> {
                        self.0
                    }
                }
            }
        }
        Derive::Record => quote! {
            #[doc = #doc]
            pub struct #struct_ident<__E, __A> {
                inner: #p::Update<__E, __A>,
                prefix: ::std::string::String,
            }

            impl<__E, __A> ::core::fmt::Debug for #struct_ident<__E, __A> {
                fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    ::core::fmt::Debug::fmt(&self.inner, f)
                }
            }

            impl<__E, __A> #struct_ident<__E, __A> {
                #(#setters)*
            }

            #[automatically_derived]
            impl<__E, __A> #p::RecordUpdater<__E, __A> for #struct_ident<__E, __A> {
                fn start(inner: #p::Update<__E, __A>, prefix: ::std::string::String) -> Self {
                    #struct_ident { inner, prefix }
                }
                fn finish(self) -> #p::Update<__E, __A> {
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
