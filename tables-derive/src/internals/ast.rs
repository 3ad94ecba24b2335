//! The input, parsed and classified: what each field is and where it is stored.

use syn::{Data, DeriveInput, Fields, Ident, Type};

use super::attr::{self, IdMode, KeyRole, SplitEncoding, StampRole, SystemRole};
use super::case::pascal_case;
use super::ctxt::Ctxt;
use super::ty;

/// Which derive is running: the rules differ slightly.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Derive {
    Entity,
    Record,
}

impl Derive {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Derive::Entity => "TableEntity",
            Derive::Record => "TableRecord",
        }
    }
}

/// How one field is stored.
pub(crate) enum Storage {
    /// A key field (not a column).
    Key(KeyRole),
    /// ETag or Timestamp (not a column).
    System(SystemRole),
    /// Not stored; filled with `Default` on read.
    Skip,
    /// Through `TableValue` (native cell or JSON container).
    Value,
    /// `Vec<u8>` as one Edm.Binary cell.
    Binary { optional: bool },
    /// Forced JSON (`#[table(json)]`).
    Json,
    /// A nested `TableRecord` flattened into `Parent_Child` columns.
    Flatten { inner: Box<Type>, optional: bool },
    /// A large value (`#[table(split = ..)]`).
    Large {
        encoding: SplitEncoding,
        offload: bool,
        codec: LargeCodec,
    },
    /// A file in blob storage (`#[blob_content]`).
    Blob { optional: bool },
}

/// How a large value's inline form is encoded.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum LargeCodec {
    /// `String` / `Option<String>` through `TableValue`.
    Value,
    /// `Vec<u8>`.
    Binary { optional: bool },
    /// Any serde type as JSON.
    Json,
}

pub(crate) struct Field {
    pub(crate) ident: Ident,
    pub(crate) ty: Type,
    pub(crate) attrs: attr::Field,
    pub(crate) column: String,
    pub(crate) storage: Storage,
}

impl Field {
    /// Whether the field has a stored column.
    pub(crate) fn is_column(&self) -> bool {
        !matches!(self.storage, Storage::Key(_) | Storage::System(_) | Storage::Skip)
    }

    pub(crate) fn stamp(&self) -> Option<StampRole> {
        self.attrs.stamp.as_ref().map(|s| s.value)
    }
}

pub(crate) struct Container {
    pub(crate) ident: Ident,
    pub(crate) attrs: attr::Container,
    pub(crate) fields: Vec<Field>,
    pub(crate) derive: Derive,
}

impl Container {
    pub(crate) fn table_name(&self) -> String {
        self.attrs
            .name
            .as_ref()
            .map(|n| n.value.clone())
            .unwrap_or_else(|| self.ident.to_string())
    }

    pub(crate) fn id_mode(&self) -> IdMode {
        self.attrs.ids.as_ref().map(|i| i.value).unwrap_or(IdMode::Normalized)
    }

    pub(crate) fn field_with_key(&self, role: KeyRole) -> Option<&Field> {
        self.fields
            .iter()
            .find(|f| matches!(f.storage, Storage::Key(r) if r == role))
    }

    pub(crate) fn field_with_system(&self, role: SystemRole) -> Option<&Field> {
        self.fields
            .iter()
            .find(|f| matches!(f.storage, Storage::System(r) if r == role))
    }

    pub(crate) fn field_with_stamp(&self, role: StampRole) -> Option<&Field> {
        self.fields.iter().find(|f| f.stamp() == Some(role))
    }

    /// Parses the input. Returns `None` when its shape is unusable (errors recorded).
    pub(crate) fn from_ast(cx: &Ctxt, input: &DeriveInput, derive: Derive) -> Option<Container> {
        let attrs = attr::Container::from_ast(cx, &input.attrs);
        let named = match &input.data {
            Data::Struct(s) => match &s.fields {
                Fields::Named(named) => named,
                Fields::Unnamed(_) => {
                    cx.error_spanned_by(
                        &input.ident,
                        format!(
                            "#[derive({})] needs a struct with named fields; a tuple struct has no column names: name its fields",
                            derive.name()
                        ),
                    );
                    return None;
                }
                Fields::Unit => {
                    cx.error_spanned_by(
                        &input.ident,
                        format!(
                            "#[derive({})] needs a struct with named fields, not a unit struct",
                            derive.name()
                        ),
                    );
                    return None;
                }
            },
            Data::Enum(_) => {
                cx.error_spanned_by(
                    &input.ident,
                    format!(
                        "#[derive({})] needs a struct with named fields, not an enum; for a unit enum stored as its variant name use #[derive(TableEnum)]",
                        derive.name()
                    ),
                );
                return None;
            }
            Data::Union(_) => {
                cx.error_spanned_by(
                    &input.ident,
                    format!("#[derive({})] needs a struct, not a union", derive.name()),
                );
                return None;
            }
        };
        if !input.generics.params.is_empty() {
            cx.error_spanned_by(
                &input.generics,
                format!(
                    "#[derive({})] does not support generic parameters: the column list is fixed at compile time; write concrete field types instead",
                    derive.name()
                ),
            );
            return None;
        }
        let fields = parse_fields(cx, named);
        Some(Container {
            ident: input.ident.clone(),
            attrs,
            fields,
            derive,
        })
    }
}

/// Parses named fields: their attributes, columns and storage.
pub(crate) fn parse_fields(cx: &Ctxt, named: &syn::FieldsNamed) -> Vec<Field> {
    named
        .named
        .iter()
        .map(|f| {
            let ident = f.ident.clone().expect("named field");
            let attrs = attr::Field::from_ast(cx, &f.attrs);
            let column = attrs
                .rename
                .as_ref()
                .map(|r| r.value.clone())
                .unwrap_or_else(|| pascal_case(&ident.to_string()));
            let storage = classify(&attrs, &f.ty);
            Field {
                ident,
                ty: f.ty.clone(),
                attrs,
                column,
                storage,
            }
        })
        .collect()
}

/// Decides how a field is stored (conflicts are reported by `check`).
fn classify(attrs: &attr::Field, field_ty: &Type) -> Storage {
    let optional_inner = ty::option_inner(field_ty);
    if attrs.skip.is_some() {
        return Storage::Skip;
    }
    if let Some(k) = &attrs.key {
        return Storage::Key(k.value);
    }
    if let Some(s) = &attrs.system {
        return Storage::System(s.value);
    }
    if attrs.blob_content.is_some() {
        return Storage::Blob {
            optional: optional_inner.is_some(),
        };
    }
    if let Some(split) = &attrs.split {
        let codec = if ty::is_bytes(field_ty) || optional_inner.is_some_and(ty::is_bytes) {
            LargeCodec::Binary {
                optional: optional_inner.is_some(),
            }
        } else if ty::is_string(field_ty) || optional_inner.is_some_and(ty::is_string) {
            LargeCodec::Value
        } else {
            LargeCodec::Json
        };
        return Storage::Large {
            encoding: split.value,
            offload: attrs.offload_never.is_none(),
            codec,
        };
    }
    if attrs.flatten.is_some() {
        return match optional_inner {
            Some(inner) => Storage::Flatten {
                inner: Box::new(inner.clone()),
                optional: true,
            },
            None => Storage::Flatten {
                inner: Box::new(field_ty.clone()),
                optional: false,
            },
        };
    }
    if attrs.json.is_some() {
        return Storage::Json;
    }
    if ty::is_bytes(field_ty) {
        return Storage::Binary { optional: false };
    }
    if optional_inner.is_some_and(ty::is_bytes) {
        return Storage::Binary { optional: true };
    }
    Storage::Value
}

/// A unit enum for `#[derive(TableEnum)]`.
pub(crate) struct Enum {
    pub(crate) ident: Ident,
    pub(crate) variants: Vec<(Ident, String, Option<i64>)>,
}

impl Enum {
    pub(crate) fn from_ast(cx: &Ctxt, input: &DeriveInput) -> Option<Enum> {
        let Data::Enum(data) = &input.data else {
            cx.error_spanned_by(
                &input.ident,
                "#[derive(TableEnum)] is for unit enums stored as their variant name; for a struct use #[derive(TableEntity)] or #[derive(TableRecord)]",
            );
            return None;
        };
        if !input.generics.params.is_empty() {
            cx.error_spanned_by(
                &input.generics,
                "#[derive(TableEnum)] does not support generic parameters: a unit enum stored as its variant name needs none; remove them",
            );
            return None;
        }
        let mut variants = Vec::new();
        for v in &data.variants {
            if !matches!(v.fields, Fields::Unit) {
                cx.error_spanned_by(
                    &v.ident,
                    format!(
                        "#[derive(TableEnum)] stores unit variants only, as their name in one string cell, and `{}` holds data: \
                         for an enum with data remove #[derive(TableEnum)], derive serde's Serialize and Deserialize, and mark the field #[table(json)]",
                        v.ident
                    ),
                );
                continue;
            }
            let attrs = attr::Variant::from_ast(cx, &v.attrs);
            let name = attrs.rename.map(|r| r.value).unwrap_or_else(|| v.ident.to_string());
            let discriminant = v.discriminant.as_ref().and_then(|(_, e)| match e {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Int(i), ..
                }) => i.base10_parse::<i64>().ok(),
                syn::Expr::Unary(syn::ExprUnary {
                    op: syn::UnOp::Neg(_),
                    expr,
                    ..
                }) => match &**expr {
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Int(i), ..
                    }) => i.base10_parse::<i64>().ok().map(|v| -v),
                    _ => None,
                },
                _ => None,
            });
            variants.push((v.ident.clone(), name, discriminant));
        }
        Some(Enum {
            ident: input.ident.clone(),
            variants,
        })
    }
}
