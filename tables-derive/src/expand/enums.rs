//! `impl TableValue` for a unit enum stored as its variant name.

use proc_macro2::TokenStream;
use quote::quote;

use super::{private, wrap};
use crate::internals::ast::Enum;

pub(crate) fn expand(e: &Enum) -> TokenStream {
    let p = private();
    let ident = &e.ident;
    let type_name = ident.to_string();
    let to_name: Vec<TokenStream> = e
        .variants
        .iter()
        .map(|(v, name, _)| quote!(#ident::#v => #name))
        .collect();
    let from_name: Vec<TokenStream> = e
        .variants
        .iter()
        .map(|(v, name, _)| quote!(#name => #p::Ok(#ident::#v)))
        .collect();
    // Numbers are accepted as the .NET library's Enum.Parse accepts them:
    // the declared discriminant, or the position when none is declared.
    let mut next = 0i64;
    let mut zero = None;
    let from_number: Vec<TokenStream> = e
        .variants
        .iter()
        .map(|(v, _, d)| {
            let n = d.unwrap_or(next);
            next = n + 1;
            if n == 0 && zero.is_none() {
                zero = Some(v);
            }
            quote!(#n => #p::Ok(#ident::#v))
        })
        .collect();
    // A missing column reads as .NET's default of an enum: the member whose
    // value is 0 (the first variant, unless discriminants say otherwise).
    let absent = match zero {
        Some(v) => quote!(#p::Ok(#ident::#v)),
        None => quote!(#p::Err(#p::absent_column(__column, #type_name))),
    };
    let names: Vec<&String> = e.variants.iter().map(|(_, n, _)| n).collect();
    wrap(quote! {
        // Filters compare an enum by its stored name: equality only (names do not sort as variants do).
        #[automatically_derived]
        impl #p::Filterable for #ident {}

        // An index looks an enum up by its stored name (no ranges: names do not sort as variants do).
        #[automatically_derived]
        impl #p::IndexValue for #ident {
            type Arg<'__a> = Self;
            fn arg_cell(arg: Self) -> #p::Result<#p::Value> {
                #p::stored_cell(&arg)
            }
        }

        #[automatically_derived]
        impl #p::TableValue for #ident {
            const KIND: #p::ValueKind = #p::ValueKind::Cell(#p::EdmType::String);

            fn encode(&self, __column: &str, __row: &mut #p::Row, _: &#p::EncodeOptions) -> #p::Result<()> {
                let __name: &str = match self { #(#to_name,)* };
                __row.insert(__column, #p::Value::String(::std::string::ToString::to_string(__name)));
                #p::Ok(())
            }

            fn decode(__row: &mut #p::Row, __column: &str) -> #p::Result<Self> {
                const __NAMES: &[&str] = &[#(#names),*];
                let __number = |__n: i64, __found: &#p::Value| -> #p::Result<Self> {
                    match __n {
                        #(#from_number,)*
                        _ => #p::Err(#p::unknown_variant(__column, #type_name, __found, __NAMES)),
                    }
                };
                match #p::take_scalar_value(__row, __column)? {
                    #p::Some(#p::Value::String(__s)) => match __s.as_str() {
                        #(#from_name,)*
                        __other => match __other.trim().parse::<i64>() {
                            #p::Ok(__n) => __number(__n, &#p::Value::String(__s.clone())),
                            #p::Err(_) => #p::Err(#p::unknown_variant(__column, #type_name, &#p::Value::String(__s.clone()), __NAMES)),
                        },
                    },
                    #p::Some(#p::Value::Int32(__n)) => __number(__n as i64, &#p::Value::Int32(__n)),
                    #p::Some(#p::Value::Int64(__n)) => __number(__n, &#p::Value::Int64(__n)),
                    #p::Some(__other) => #p::Err(#p::unknown_variant(__column, #type_name, &__other, __NAMES)),
                    #p::None => #absent,
                }
            }
        }
    })
}
