//! `impl TableUnion` for an enum of payloads, and its placeholder after an error.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::DeriveInput;

use super::fields::{self, Naming};
use super::{private, wrap};
use crate::internals::union::{Payload, Union};

pub(crate) fn expand(u: &Union) -> TokenStream {
    let p = private();
    let ident = &u.ident;
    let metas = u.variants.iter().map(|v| {
        let name = v.ident.to_string();
        let token = &v.token;
        let also = &v.also;
        quote!(#p::UnionVariant { name: #name, token: #token, also: &[#(#also),*] })
    });
    let catch_all = u.other.is_some();

    let mut tokens = Vec::new();
    let mut writes = Vec::new();
    let mut reads = Vec::new();
    let mut checks = Vec::new();
    for v in &u.variants {
        let vi = &v.ident;
        let token = &v.token;
        let accepted = std::iter::once(token).chain(&v.also);
        match &v.payload {
            Payload::Unit => {
                tokens.push(quote!(#ident::#vi => #p::Some(#token)));
                writes.push(quote!(#ident::#vi => {}));
                reads.push(quote!(#(#accepted)|* => #p::Ok(#p::Some(#ident::#vi))));
            }
            Payload::Record(ty) => {
                tokens.push(quote!(#ident::#vi(..) => #p::Some(#token)));
                // A record's #[protected] fields are checked by entity stores only: refused here, at compile time.
                checks.push(quote_spanned! {ty.span()=>
                    const _: () = ::core::assert!(
                        !#p::protected_in(<#ty as #p::TableRecord>::COLUMNS),
                        "#[protected] does not apply in a union: its rows are facts, changed only through merge_columns of system columns; this payload record has #[protected] fields: remove #[protected] from them, or use a record without it (see https://docs.rs/unified-tables/latest/unified_tables/derive.TableUnion.html)"
                    );
                });
                writes.push(quote_spanned! {ty.span()=>
                    #ident::#vi(__v) => <#ty as #p::TableRecord>::write_columns(__v, #p::Prefix::with_names("", <#ty as #p::TableRecord>::CELL_NAMES), __row, __opts)?
                });
                reads.push(quote_spanned! {ty.span()=>
                    #(#accepted)|* => #p::Ok(#p::Some(#ident::#vi(<#ty as #p::TableRecord>::read_columns(&mut __row, #p::Prefix::with_names("", <#ty as #p::TableRecord>::CELL_NAMES))?)))
                });
            }
            Payload::Fields(fs) => {
                tokens.push(quote!(#ident::#vi { .. } => #p::Some(#token)));
                let bound: Vec<_> = fs.iter().filter(|f| f.is_column()).collect();
                let binds = bound.iter().map(|f| {
                    let fi = &f.ident;
                    let local = fields::local(f);
                    quote!(#fi: #local)
                });
                let encodes = bound.iter().map(|f| {
                    let local = fields::local(f);
                    fields::encode_at(f, &Naming::Literal, quote!((*#local)))
                });
                writes.push(quote! {
                    #ident::#vi { #(#binds,)* .. } => { #(#encodes)* }
                });
                let decodes = fs.iter().map(|f| {
                    let local = fields::local(f);
                    let value = fields::decode(f, &Naming::Literal, None);
                    quote!(let #local = #value;)
                });
                let inits = fields::inits(fs);
                reads.push(quote! {
                    #(#accepted)|* => {
                        #(#decodes)*
                        #p::Ok(#p::Some(#ident::#vi { #(#inits),* }))
                    }
                });
            }
        }
    }
    let (other_token, other_write, other_read) = match &u.other {
        Some(o) => {
            let oi = &o.ident;
            (
                quote!(#ident::#oi(..) => #p::None,),
                quote!(#ident::#oi(__raw) => #p::write_raw_row(__raw, __row),),
                quote!(_ => #p::Ok(#p::Some(#ident::#oi(__row))),),
            )
        }
        None => (quote!(), quote!(), quote!(_ => #p::Ok(#p::None),)),
    };
    wrap(quote! {
        #(#checks)*

        #[automatically_derived]
        impl #p::TableUnion for #ident {
            const VARIANTS: &'static [#p::UnionVariant] = &[#(#metas),*];
            const CATCH_ALL: bool = #catch_all;

            fn token(&self) -> #p::Option<&'static str> {
                match self {
                    #(#tokens,)*
                    #other_token
                }
            }

            #[allow(unused_variables)]
            fn write_row(&self, __row: &mut #p::Row, __opts: &#p::EncodeOptions) -> #p::Result<()> {
                match self {
                    #(#writes,)*
                    #other_write
                }
                #p::Ok(())
            }

            #[allow(unused_mut, unused_variables)]
            fn read_row(__token: &str, mut __row: #p::Row) -> #p::Result<#p::Option<Self>> {
                match __token {
                    #(#reads,)*
                    #other_read
                }
            }
        }
    })
}

/// The errors, then a placeholder impl whose methods are never run, so that
/// uses of the type add no follow-on errors.
pub(crate) fn fallback(input: &DeriveInput, errors: syn::Error) -> TokenStream {
    let errors = errors.to_compile_error();
    let p = private();
    let ident = &input.ident;
    let mut generics = input.generics.clone();
    if !generics.params.is_empty() {
        // The trait's supertraits, stated so that a generic input adds no error of its own.
        let (_, ty_generics, _) = input.generics.split_for_impl();
        generics.make_where_clause().predicates.push(syn::parse_quote!(
            #ident #ty_generics: ::core::marker::Send + ::core::marker::Sync + 'static
        ));
    }
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let item = wrap(quote! {
        #[automatically_derived]
        impl #impl_generics #p::TableUnion for #ident #ty_generics #where_clause {
            const VARIANTS: &'static [#p::UnionVariant] = &[];
            const CATCH_ALL: bool = false;
            fn token(&self) -> #p::Option<&'static str> {
                ::core::unreachable!()
            }
            fn write_row(&self, _: &mut #p::Row, _: &#p::EncodeOptions) -> #p::Result<()> {
                ::core::unreachable!()
            }
            fn read_row(_: &str, _: #p::Row) -> #p::Result<#p::Option<Self>> {
                ::core::unreachable!()
            }
        }
    });
    quote! {
        #errors
        #item
    }
}
