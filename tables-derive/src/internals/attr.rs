//! Every attribute, parsed into typed values. Code generation never reads a
//! `syn::Attribute`.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Attribute, LitStr};

use super::ctxt::Ctxt;
use super::symbol::*;

/// One attribute value with the span to report errors on.
#[derive(Clone)]
pub(crate) struct Spanned_<T> {
    pub(crate) value: T,
    pub(crate) span: Span,
}

/// Tracks one optional attribute value and reports duplicates.
struct Slot<'c, T> {
    cx: &'c Ctxt,
    name: &'static str,
    value: Option<Spanned_<T>>,
}

impl<'c, T> Slot<'c, T> {
    fn new(cx: &'c Ctxt, name: &'static str) -> Self {
        Slot { cx, name, value: None }
    }

    fn set(&mut self, span: Span, value: T) {
        if self.value.is_some() {
            self.cx.syn_error(syn::Error::new(
                span,
                format!("duplicate attribute `{}`: write it once", self.name),
            ));
        } else {
            self.value = Some(Spanned_ { value, span });
        }
    }

    fn get(self) -> Option<Spanned_<T>> {
        self.value
    }
}

/// Keys addressing modes of a composite id.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum IdMode {
    Normalized,
    AsWritten,
}

/// `#[table(...)]` on the struct.
pub(crate) struct Container {
    pub(crate) name: Option<Spanned_<String>>,
    pub(crate) ids: Option<Spanned_<IdMode>>,
}

impl Container {
    pub(crate) fn from_ast(cx: &Ctxt, attrs: &[Attribute]) -> Container {
        let mut name = Slot::new(cx, NAME);
        let mut ids = Slot::new(cx, IDS);
        for attr in attrs {
            if attr.path().is_ident(TABLE) {
                let res = attr.parse_nested_meta(|meta| {
                    let Some(key) = meta.path.get_ident().map(|i| i.to_string()) else {
                        return Err(meta.error(unknown(CONTAINER_KEYS, "on a struct")));
                    };
                    match key.as_str() {
                        // #[table(name = "Customers")]
                        NAME => {
                            let lit: LitStr = meta.value()?.parse()?;
                            name.set(meta.path.span(), lit.value());
                        }
                        // #[table(ids = "normalized" | "as_written")]
                        IDS => {
                            let lit: LitStr = meta.value()?.parse()?;
                            match lit.value().as_str() {
                                "normalized" => ids.set(meta.path.span(), IdMode::Normalized),
                                "as_written" => ids.set(meta.path.span(), IdMode::AsWritten),
                                other => cx.error_spanned_by(
                                    &lit,
                                    format!("unknown id mode `{other}`: write `ids = \"normalized\"` or `ids = \"as_written\"`"),
                                ),
                            }
                        }
                        _ if FIELD_KEYS.contains(&key.as_str()) => {
                            return Err(meta.error(format!("#[table({key})] belongs on a field, not on the struct")))
                        }
                        _ => return Err(meta.error(unknown(CONTAINER_KEYS, "on a struct"))),
                    }
                    Ok(())
                });
                if let Err(e) = res {
                    cx.syn_error(e);
                }
            } else if attr.path().is_ident(ALIAS)
                || attr.path().is_ident(PROTECTED)
                || attr.path().is_ident(BLOB_CONTENT)
            {
                cx.error_spanned_by(attr, "this attribute belongs on a field, not on the struct");
            }
        }
        Container {
            name: name.get(),
            ids: ids.get(),
        }
    }
}

fn unknown(valid: &[&str], place: &str) -> String {
    let list = valid.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ");
    format!("unknown table attribute {place}; expected one of {list}")
}

/// The large-value encodings of `#[table(split = "...")]`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum SplitEncoding {
    Text,
    Gzip,
    Binary,
}

/// Role of a system field.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum SystemRole {
    ETag,
    Timestamp,
}

/// Role of a stamp field.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum StampRole {
    Created,
    Updated,
}

/// Key role of a field.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyRole {
    Partition,
    Row,
    Id,
}

/// Every attribute on one field.
pub(crate) struct Field {
    pub(crate) key: Option<Spanned_<KeyRole>>,
    pub(crate) rename: Option<Spanned_<String>>,
    pub(crate) skip: Option<Spanned_<()>>,
    pub(crate) flatten: Option<Spanned_<()>>,
    pub(crate) json: Option<Spanned_<()>>,
    pub(crate) system: Option<Spanned_<SystemRole>>,
    pub(crate) stamp: Option<Spanned_<StampRole>>,
    pub(crate) split: Option<Spanned_<SplitEncoding>>,
    pub(crate) offload_never: Option<Spanned_<()>>,
    pub(crate) alias: Option<Spanned_<String>>,
    pub(crate) protected: Option<Spanned_<Vec<String>>>,
    pub(crate) blob_content: Option<Spanned_<()>>,
}

impl Field {
    pub(crate) fn from_ast(cx: &Ctxt, attrs: &[Attribute]) -> Field {
        let mut key = Slot::new(cx, "key");
        let mut rename = Slot::new(cx, RENAME);
        let mut skip = Slot::new(cx, SKIP);
        let mut flatten = Slot::new(cx, FLATTEN);
        let mut json = Slot::new(cx, JSON);
        let mut system = Slot::new(cx, "etag/timestamp");
        let mut stamp = Slot::new(cx, "created_at/updated_at");
        let mut split = Slot::new(cx, SPLIT);
        let mut offload = Slot::new(cx, OFFLOAD);
        let mut alias = Slot::new(cx, ALIAS);
        let mut protected = Slot::new(cx, PROTECTED);
        let mut blob = Slot::new(cx, BLOB_CONTENT);

        for attr in attrs {
            if attr.path().is_ident(TABLE) {
                let res = attr.parse_nested_meta(|meta| {
                    let Some(k) = meta.path.get_ident().map(|i| i.to_string()) else {
                        return Err(meta.error(unknown(FIELD_KEYS, "on a field")));
                    };
                    let span = meta.path.span();
                    match k.as_str() {
                        // #[table(partition_key)] / #[table(row_key)] / #[table(id)]
                        PARTITION_KEY => key.set(span, KeyRole::Partition),
                        ROW_KEY => key.set(span, KeyRole::Row),
                        ID => key.set(span, KeyRole::Id),
                        // #[table(rename = "Column")]
                        RENAME => {
                            let lit: LitStr = meta.value()?.parse()?;
                            rename.set(lit.span(), lit.value());
                        }
                        // #[table(skip)]
                        SKIP => skip.set(span, ()),
                        // #[table(flatten)]
                        FLATTEN => flatten.set(span, ()),
                        // #[table(json)]
                        JSON => json.set(span, ()),
                        // #[table(etag)] / #[table(timestamp)]
                        ETAG => system.set(span, SystemRole::ETag),
                        TIMESTAMP => system.set(span, SystemRole::Timestamp),
                        // #[table(created_at)] / #[table(updated_at)]
                        CREATED_AT => stamp.set(span, StampRole::Created),
                        UPDATED_AT => stamp.set(span, StampRole::Updated),
                        // #[table(split = "text" | "gzip" | "binary")]
                        SPLIT => {
                            let lit: LitStr = meta.value()?.parse()?;
                            match lit.value().as_str() {
                                "text" => split.set(span, SplitEncoding::Text),
                                "gzip" => split.set(span, SplitEncoding::Gzip),
                                "binary" => split.set(span, SplitEncoding::Binary),
                                other => cx.error_spanned_by(
                                    &lit,
                                    format!("unknown split encoding `{other}`: write `split = \"text\"`, `\"gzip\"` or `\"binary\"`"),
                                ),
                            }
                        }
                        // #[table(offload = "never")]
                        OFFLOAD => {
                            let lit: LitStr = meta.value()?.parse()?;
                            match lit.value().as_str() {
                                "never" => offload.set(span, ()),
                                "auto" => {}
                                other => cx.error_spanned_by(
                                    &lit,
                                    format!("unknown offload mode `{other}`: write `offload = \"never\"` to keep the value out of blob storage"),
                                ),
                            }
                        }
                        _ if CONTAINER_KEYS.contains(&k.as_str()) => {
                            return Err(meta.error(format!("#[table({k} = ..)] belongs on the struct, not on a field")))
                        }
                        _ => return Err(meta.error(unknown(FIELD_KEYS, "on a field"))),
                    }
                    Ok(())
                });
                if let Err(e) = res {
                    cx.syn_error(e);
                }
            } else if attr.path().is_ident(ALIAS) {
                // #[alias("OldName")]
                match attr.parse_args::<LitStr>() {
                    Ok(lit) => alias.set(lit.span(), lit.value()),
                    Err(_) => cx.error_spanned_by(attr, "write the old column name as a string: #[alias(\"OldName\")]"),
                }
            } else if attr.path().is_ident(PROTECTED) {
                // #[protected("admin,accountant")]
                match attr.parse_args::<LitStr>() {
                    Ok(lit) => {
                        let roles: Vec<String> = lit
                            .value()
                            .split(',')
                            .map(|r| r.trim().to_owned())
                            .filter(|r| !r.is_empty())
                            .collect();
                        if roles.is_empty() {
                            cx.error_spanned_by(
                                &lit,
                                "#[protected] needs at least one role that may change the field, e.g. #[protected(\"admin\")]",
                            );
                        }
                        protected.set(lit.span(), roles);
                    }
                    Err(_) => cx.error_spanned_by(
                        attr,
                        "#[protected] needs the roles that may change the field, e.g. #[protected(\"admin,accountant\")]",
                    ),
                }
            } else if attr.path().is_ident(BLOB_CONTENT) {
                // #[blob_content]
                if let Err(e) = attr.meta.require_path_only() {
                    cx.syn_error(syn::Error::new(e.span(), "#[blob_content] takes no arguments"));
                }
                blob.set(attr.span(), ());
            }
        }
        Field {
            key: key.get(),
            rename: rename.get(),
            skip: skip.get(),
            flatten: flatten.get(),
            json: json.get(),
            system: system.get(),
            stamp: stamp.get(),
            split: split.get(),
            offload_never: offload.get(),
            alias: alias.get(),
            protected: protected.get(),
            blob_content: blob.get(),
        }
    }
}

/// `#[table(rename = "...")]` on an enum variant.
pub(crate) struct Variant {
    pub(crate) rename: Option<Spanned_<String>>,
}

impl Variant {
    pub(crate) fn from_ast(cx: &Ctxt, attrs: &[Attribute]) -> Variant {
        let mut rename = Slot::new(cx, RENAME);
        for attr in attrs.iter().filter(|a| a.path().is_ident(TABLE)) {
            let res = attr.parse_nested_meta(|meta| {
                if meta.path.is_ident(RENAME) {
                    let lit: LitStr = meta.value()?.parse()?;
                    rename.set(lit.span(), lit.value());
                    Ok(())
                } else {
                    Err(meta.error(unknown(VARIANT_KEYS, "on a variant")))
                }
            });
            if let Err(e) = res {
                cx.syn_error(e);
            }
        }
        Variant { rename: rename.get() }
    }
}
