//! A `#[derive(TableUnion)]` enum, parsed and checked: each variant's
//! payload, its tokens, and the catch-all.

use std::collections::HashMap;

use proc_macro2::Span;
use syn::{Data, DeriveInput, Fields, Ident, Type};

use super::ast::{self, Derive};
use super::attr::{self, Spanned_};
use super::ctxt::Ctxt;
use super::symbol::{ALIAS, BLOB_CONTENT, PROTECTED, TABLE};

/// What one variant holds.
pub(crate) enum Payload {
    /// No columns (`Closed`).
    Unit,
    /// A `#[derive(TableRecord)]` struct (`Placed(OrderPlaced)`).
    Record(Type),
    /// Named fields (`Shipped { carrier: String }`).
    Fields(Vec<ast::Field>),
}

/// A variant that holds an item.
pub(crate) struct Variant {
    pub(crate) ident: Ident,
    /// The token written to `_TypeName`.
    pub(crate) token: String,
    /// Other tokens read as this variant.
    pub(crate) also: Vec<String>,
    pub(crate) payload: Payload,
}

/// The `#[table(other)]` variant, which holds a `Row`.
pub(crate) struct CatchAll {
    pub(crate) ident: Ident,
}

/// Whether a type is written as `Row` (any path ending in it).
fn is_row(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.qself.is_none() && p.path.segments.last().is_some_and(|s| s.ident == "Row" && s.arguments.is_empty()))
}

pub(crate) struct Union {
    pub(crate) ident: Ident,
    pub(crate) variants: Vec<Variant>,
    pub(crate) other: Option<CatchAll>,
}

/// A variant as parsed: its name, its token, its other tokens, its payload.
type Parsed = (Ident, Spanned_<String>, Vec<Spanned_<String>>, Payload);

const ONE_PAYLOAD: &str = "a union variant holds one payload: a #[derive(TableRecord)] struct as `Variant(Payload)`, named fields as `Variant { .. }`, or nothing";

impl Union {
    /// Parses and checks the input; `None` when its shape is unusable (errors recorded).
    pub(crate) fn from_ast(cx: &Ctxt, input: &DeriveInput) -> Option<Union> {
        let Data::Enum(data) = &input.data else {
            cx.error_spanned_by(
                &input.ident,
                "#[derive(TableUnion)] needs an enum whose variants are the types one table holds; for one type per table use #[derive(TableEntity)] on the struct",
            );
            return None;
        };
        if !input.generics.params.is_empty() {
            cx.error_spanned_by(
                &input.generics,
                "#[derive(TableUnion)] does not support generic parameters: the variants and their tokens are fixed at compile time; name concrete payload types",
            );
            return None;
        }
        for a in &input.attrs {
            if a.path().is_ident(TABLE) {
                cx.error_spanned_by(
                    a,
                    "#[derive(TableUnion)] takes no #[table(..)] on the enum: the table is named when the store is made (`db.union_store::<Event>(\"Events\")`), and tokens go on the variants (#[table(tag = \"..\")])",
                );
            } else if a.path().is_ident(ALIAS) || a.path().is_ident(PROTECTED) || a.path().is_ident(BLOB_CONTENT) {
                cx.error_spanned_by(a, "this attribute belongs on a field of a variant, not on the enum");
            }
        }
        let mut variants = Vec::new();
        let mut other: Option<CatchAll> = None;
        // Variants meant to hold an item, valid or not (one with an error is not "missing").
        let mut item_variants = 0;
        for v in &data.variants {
            let attrs = attr::UnionVariant::from_ast(cx, &v.attrs);
            if let Some(o) = &attrs.other {
                if let Some(first) = &other {
                    err(
                        cx,
                        o.span,
                        format!(
                            "a union has one #[table(other)] variant, and `{}` is already it: remove this one",
                            first.ident
                        ),
                    );
                    continue;
                }
                if let Some(t) = &attrs.tag {
                    err(cx, t.span, "the #[table(other)] variant reads every token no other variant accepts, and its rows keep the token they were read with: remove #[table(tag)]");
                }
                if let Some(a) = attrs.also.first() {
                    err(cx, a.span, "the #[table(other)] variant reads every token no other variant accepts: remove #[table(also)], or move the tokens to the variant that should read them");
                }
                match &v.fields {
                    Fields::Unnamed(f) if f.unnamed.len() == 1 && is_row(&f.unnamed[0].ty) => {
                        other = Some(CatchAll {
                            ident: v.ident.clone(),
                        })
                    }
                    Fields::Unnamed(f) if f.unnamed.len() == 1 => cx.error_spanned_by(
                        &f.unnamed[0].ty,
                        "the #[table(other)] variant holds the row of an unknown type as it is stored: its field is a `unified_tables::Row`",
                    ),
                    _ => cx.error_spanned_by(
                        &v.ident,
                        "the #[table(other)] variant holds the raw row of an unknown type: write it as `Other(unified_tables::Row)`",
                    ),
                }
                continue;
            }
            item_variants += 1;
            let payload = match &v.fields {
                Fields::Unit => Payload::Unit,
                Fields::Unnamed(f) if f.unnamed.len() == 1 => Payload::Record(f.unnamed[0].ty.clone()),
                Fields::Unnamed(_) => {
                    cx.error_spanned_by(&v.fields, ONE_PAYLOAD);
                    continue;
                }
                Fields::Named(named) => Payload::Fields(variant_fields(cx, &v.ident, named)),
            };
            let token = match attrs.tag {
                Some(t) => t,
                None => Spanned_ {
                    value: v.ident.to_string(),
                    span: v.ident.span(),
                },
            };
            variants.push((v.ident.clone(), token, attrs.also, payload));
        }
        if item_variants == 0 {
            cx.error_spanned_by(
                &input.ident,
                "#[derive(TableUnion)] needs at least one variant that holds an item (besides #[table(other)])",
            );
            return None;
        }
        if variants.is_empty() {
            return None;
        }
        check_tokens(cx, &variants);
        Some(Union {
            ident: input.ident.clone(),
            variants: variants
                .into_iter()
                .map(|(ident, token, also, payload)| Variant {
                    ident,
                    token: token.value,
                    also: also.into_iter().map(|a| a.value).collect(),
                    payload,
                })
                .collect(),
            other,
        })
    }
}

fn err(cx: &Ctxt, span: Span, msg: impl Into<String>) {
    cx.syn_error(syn::Error::new(span, msg.into()));
}

/// Each token is non-empty and names one variant.
fn check_tokens(cx: &Ctxt, variants: &[Parsed]) {
    let mut seen: HashMap<&str, &Ident> = HashMap::new();
    for (ident, token, also, _) in variants {
        for t in std::iter::once(token).chain(also) {
            if t.value.trim().is_empty() {
                err(
                    cx,
                    t.span,
                    "a token cannot be empty: it is what the row's `_TypeName` holds; write the type's name, e.g. #[table(tag = \"OrderPlaced\")]",
                );
                continue;
            }
            match seen.get(t.value.as_str()) {
                Some(first) if *first == ident => err(
                    cx,
                    t.span,
                    format!("the token `{}` is already accepted by this variant: write it once", t.value),
                ),
                Some(first) => err(
                    cx,
                    t.span,
                    format!(
                        "the token `{}` is already accepted by variant `{first}`: a stored `_TypeName` must name one variant; give one of them another #[table(tag = \"..\")] or drop it from #[table(also = [..])]",
                        t.value
                    ),
                ),
                None => {
                    seen.insert(&t.value, ident);
                }
            }
        }
    }
}

/// The named fields of a variant, refusing what a union row cannot hold,
/// then checked by the rules of a nested record (column names, collisions).
fn variant_fields(cx: &Ctxt, variant: &Ident, named: &syn::FieldsNamed) -> Vec<ast::Field> {
    let fields = ast::parse_fields(cx, named);
    let mut refused = false;
    for f in &fields {
        let a = &f.attrs;
        let mut refuse = |span: Span, msg: &str| {
            refused = true;
            err(cx, span, msg);
        };
        if let Some(s) = &a.split {
            refuse(s.span, "#[table(split)] is not available in a union: its rows are written whole, one row each, with no split cells, continuation rows or blobs; keep the value within one cell (64 KiB), or store it with a #[derive(TableEntity)] type of its own");
        }
        if let Some(s) = &a.blob_content {
            refuse(s.span, "#[blob_content] is not available in a union: its rows are written whole, one row each, and keep no blobs; store the file with a #[derive(TableEntity)] type of its own and keep its key here");
        }
        if let Some(s) = &a.key {
            refuse(s.span, "a union row's keys are given on every call (`store.insert((partition, row), &item)`), not held by the item: remove the key attribute");
        }
        if let Some(s) = &a.system {
            refuse(s.span, "a union row's ETag and Timestamp are on its entry (`entry.etag`, `entry.timestamp`), not in the item: remove the attribute");
        }
        if let Some(s) = &a.stamp {
            refuse(s.span, "the union store stamps nothing: its rows are facts written once; keep the time in an ordinary field and set it yourself");
        }
        if let Some(s) = &a.protected {
            refuse(s.span, "#[protected] does not apply in a union: its rows are facts, changed only through merge_columns of system columns; remove #[protected]");
        }
    }
    if refused {
        return fields;
    }
    let cont = ast::Container {
        ident: variant.clone(),
        attrs: attr::Container {
            name: None,
            ids: None,
            no_write_token: false,
            no_inherent: false,
            indexes: Vec::new(),
        },
        fields,
        derive: Derive::Record,
    };
    super::check::check(cx, &cont);
    cont.fields
}
