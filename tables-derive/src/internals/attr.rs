//! Every attribute, parsed into typed values. Code generation never reads a
//! `syn::Attribute`.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Attribute, LitStr};

use super::attr_keys::{path_text, unknown, unquoted_arg};
use super::ctxt::Ctxt;
use super::symbol::*;

/// One attribute value with the span to report errors on.
#[derive(Clone)]
pub(crate) struct Spanned_<T> {
    pub(crate) value: T,
    pub(crate) span: Span,
}

/// Tracks one optional attribute value and reports duplicates and conflicts.
struct Slot<'c, T> {
    cx: &'c Ctxt,
    /// Why two different attributes of this slot exclude each other.
    conflict: &'static str,
    /// The value and the attribute it was written as, e.g. `#[table(row_key)]`.
    value: Option<(Spanned_<T>, &'static str)>,
}

impl<'c, T> Slot<'c, T> {
    fn new(cx: &'c Ctxt, conflict: &'static str) -> Self {
        Slot {
            cx,
            conflict,
            value: None,
        }
    }

    /// Records `value`, written as the attribute `shown`.
    fn set(&mut self, span: Span, shown: &'static str, value: T) {
        match &self.value {
            Some((_, first)) if *first == shown => {
                self.cx
                    .syn_error(syn::Error::new(span, format!("duplicate {shown}: write it once")));
            }
            Some((_, first)) => {
                self.cx.syn_error(syn::Error::new(
                    span,
                    format!("{shown} cannot be combined with {first}: {}", self.conflict),
                ));
            }
            None => self.value = Some((Spanned_ { value, span }, shown)),
        }
    }

    fn get(self) -> Option<Spanned_<T>> {
        self.value.map(|(v, _)| v)
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
    /// `#[table(no_write_token)]`: rows are written without a write token.
    pub(crate) no_write_token: bool,
    /// `#[table(no_inherent)]`: the entry points are the trait's only, not
    /// also inherent items of the type.
    pub(crate) no_inherent: bool,
    pub(crate) indexes: Vec<super::index::IndexAttr>,
}

impl Container {
    pub(crate) fn from_ast(cx: &Ctxt, attrs: &[Attribute]) -> Container {
        let mut name = Slot::new(cx, "");
        let mut ids = Slot::new(cx, "");
        let mut no_write_token = Slot::new(cx, "");
        let mut no_inherent = Slot::new(cx, "");
        let mut indexes = Vec::new();
        for attr in attrs {
            if attr.path().is_ident(TABLE) {
                let res = attr.parse_nested_meta(|meta| {
                    let key = path_text(&meta.path);
                    match key.as_str() {
                        // #[table(name = "Customers")]
                        NAME => {
                            let lit: LitStr = meta.value()?.parse()?;
                            name.set(meta.path.span(), "#[table(name)]", lit.value());
                        }
                        // #[table(ids = "normalized" | "as_written")]
                        IDS => {
                            let lit: LitStr = meta.value()?.parse()?;
                            match lit.value().as_str() {
                                "normalized" => ids.set(meta.path.span(), "#[table(ids)]", IdMode::Normalized),
                                "as_written" => ids.set(meta.path.span(), "#[table(ids)]", IdMode::AsWritten),
                                other => cx.error_spanned_by(
                                    &lit,
                                    format!("unknown id mode `{other}`: write `ids = \"normalized\"` or `ids = \"as_written\"`"),
                                ),
                            }
                        }
                        // #[table(no_write_token)]
                        NO_WRITE_TOKEN => no_write_token.set(meta.path.span(), "#[table(no_write_token)]", ()),
                        // #[table(no_inherent)]
                        NO_INHERENT => no_inherent.set(meta.path.span(), "#[table(no_inherent)]", ()),
                        // #[table(index(name = "..", fields(a, b), ..))]
                        INDEX => indexes.push(super::index::container_index(&meta)?),
                        _ if FIELD_KEYS.contains(&key.as_str()) => {
                            return Err(meta.error(format!(
                                "#[table({key})] belongs on a field, not on the struct: move it to the field it describes"
                            )))
                        }
                        _ => return Err(meta.error(unknown(&key, CONTAINER_KEYS, "on a struct"))),
                    }
                    Ok(())
                });
                if let Err(e) = res {
                    cx.syn_error(e);
                }
            } else if attr.path().is_ident(ALIAS)
                || attr.path().is_ident(PROTECTED)
                || attr.path().is_ident(BLOB_CONTENT)
                || super::index::is_index_attr(attr)
            {
                let name = path_text(attr.path());
                cx.error_spanned_by(
                    attr,
                    format!("#[{name}] belongs on a field, not on the struct: move it to the field it describes"),
                );
            }
        }
        Container {
            name: name.get(),
            ids: ids.get(),
            no_write_token: no_write_token.get().is_some(),
            no_inherent: no_inherent.get().is_some(),
            indexes,
        }
    }
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
    pub(crate) soft_delete: Option<Spanned_<()>>,
    pub(crate) ordering: Option<Spanned_<()>>,
    /// `#[index(..)]` and `#[unique(..)]`.
    pub(crate) indexes: Vec<super::index::IndexAttr>,
}

impl Field {
    pub(crate) fn from_ast(cx: &Ctxt, attrs: &[Attribute]) -> Field {
        let mut key = Slot::new(cx, "a field has one key role");
        let mut rename = Slot::new(cx, "");
        let mut skip = Slot::new(cx, "");
        let mut flatten = Slot::new(cx, "");
        let mut json = Slot::new(cx, "");
        let mut system = Slot::new(cx, "a field holds either the ETag or the Timestamp");
        let mut stamp = Slot::new(cx, "a field holds either the created or the updated stamp");
        let mut split = Slot::new(cx, "");
        let mut offload = Slot::new(cx, "");
        let mut alias = Slot::new(cx, "");
        let mut protected = Slot::new(cx, "");
        let mut blob = Slot::new(cx, "");
        let mut soft_delete = Slot::new(cx, "");
        let mut ordering = Slot::new(cx, "");
        let mut indexes = Vec::new();

        for attr in attrs {
            if attr.path().is_ident(TABLE) {
                let res = attr.parse_nested_meta(|meta| {
                    let k = path_text(&meta.path);
                    let span = meta.path.span();
                    match k.as_str() {
                        // #[table(partition_key)] / #[table(row_key)] / #[table(id)]
                        PARTITION_KEY => key.set(span, "#[table(partition_key)]", KeyRole::Partition),
                        ROW_KEY => key.set(span, "#[table(row_key)]", KeyRole::Row),
                        ID => key.set(span, "#[table(id)]", KeyRole::Id),
                        // #[table(rename = "Column")]
                        RENAME => {
                            let lit: LitStr = meta.value()?.parse()?;
                            rename.set(lit.span(), "#[table(rename)]", lit.value());
                        }
                        // #[table(skip)]
                        SKIP => skip.set(span, "#[table(skip)]", ()),
                        // #[table(flatten)]
                        FLATTEN => flatten.set(span, "#[table(flatten)]", ()),
                        // #[table(json)]
                        JSON => json.set(span, "#[table(json)]", ()),
                        // #[table(etag)] / #[table(timestamp)]
                        ETAG => system.set(span, "#[table(etag)]", SystemRole::ETag),
                        TIMESTAMP => system.set(span, "#[table(timestamp)]", SystemRole::Timestamp),
                        // #[table(created_at)] / #[table(updated_at)]
                        CREATED_AT => stamp.set(span, "#[table(created_at)]", StampRole::Created),
                        UPDATED_AT => stamp.set(span, "#[table(updated_at)]", StampRole::Updated),
                        // #[table(split = "text" | "gzip" | "binary")]
                        SPLIT => {
                            let lit: LitStr = meta.value()?.parse()?;
                            let encoding = match lit.value().as_str() {
                                "text" => SplitEncoding::Text,
                                "gzip" => SplitEncoding::Gzip,
                                "binary" => SplitEncoding::Binary,
                                other => {
                                    cx.error_spanned_by(
                                        &lit,
                                        format!("unknown split encoding `{other}`: write `split = \"text\"`, `\"gzip\"` or `\"binary\"`"),
                                    );
                                    return Ok(());
                                }
                            };
                            split.set(span, "#[table(split)]", encoding);
                        }
                        // #[table(offload = "never")]
                        OFFLOAD => {
                            let lit: LitStr = meta.value()?.parse()?;
                            match lit.value().as_str() {
                                "never" => offload.set(span, "#[table(offload)]", ()),
                                "auto" => {}
                                other => cx.error_spanned_by(
                                    &lit,
                                    format!("unknown offload mode `{other}`: write `offload = \"never\"` to keep the value out of blob storage"),
                                ),
                            }
                        }
                        // #[table(soft_delete)]
                        SOFT_DELETE => soft_delete.set(span, "#[table(soft_delete)]", ()),
                        // #[table(ordering)]
                        ORDERING => ordering.set(span, "#[table(ordering)]", ()),
                        // #[table(name = "..")] names the table; on a field it is a misplaced rename.
                        NAME => {
                            return Err(meta.error(
                                "#[table(name = ..)] names the table and belongs on the struct; to name this field's column write #[table(rename = \"..\")]",
                            ))
                        }
                        _ if CONTAINER_KEYS.contains(&k.as_str()) => {
                            return Err(meta.error(format!(
                                "#[table({k} = ..)] belongs on the struct, not on a field: move it above `struct`"
                            )))
                        }
                        _ => return Err(meta.error(unknown(&k, FIELD_KEYS, "on a field"))),
                    }
                    Ok(())
                });
                if let Err(e) = res {
                    cx.syn_error(e);
                }
            } else if attr.path().is_ident(ALIAS) {
                // #[alias("OldName")]
                match attr.parse_args::<LitStr>() {
                    Ok(lit) => alias.set(lit.span(), "#[alias]", lit.value()),
                    Err(_) => cx.error_spanned_by(
                        attr,
                        format!(
                            "write the old column name as a string: #[alias(\"{}\")]",
                            unquoted_arg(attr).unwrap_or_else(|| "OldName".to_owned())
                        ),
                    ),
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
                                "#[protected] needs at least one role that may change the field, e.g. #[protected(\"admin\")]; to leave the field unprotected remove #[protected]",
                            );
                        }
                        protected.set(lit.span(), "#[protected]", roles);
                    }
                    Err(_) => cx.error_spanned_by(
                        attr,
                        format!(
                            "#[protected] takes the roles that may change the field as one string: #[protected(\"{}\")]",
                            unquoted_arg(attr).unwrap_or_else(|| "admin,accountant".to_owned())
                        ),
                    ),
                }
            } else if attr.path().is_ident(BLOB_CONTENT) {
                // #[blob_content]
                if let Err(e) = attr.meta.require_path_only() {
                    cx.syn_error(syn::Error::new(
                        e.span(),
                        "#[blob_content] takes no arguments: write #[blob_content]",
                    ));
                }
                blob.set(attr.path().span(), "#[blob_content]", ());
            } else if super::index::is_index_attr(attr) {
                // #[index], #[index(..)], #[unique], #[unique(..)]
                indexes.extend(super::index::field_index(cx, attr));
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
            soft_delete: soft_delete.get(),
            ordering: ordering.get(),
            indexes,
        }
    }
}

/// `#[table(rename = "...")]` on an enum variant.
pub(crate) struct Variant {
    pub(crate) rename: Option<Spanned_<String>>,
}

impl Variant {
    pub(crate) fn from_ast(cx: &Ctxt, attrs: &[Attribute]) -> Variant {
        let mut rename = Slot::new(cx, "");
        for attr in attrs.iter().filter(|a| a.path().is_ident(TABLE)) {
            let res = attr.parse_nested_meta(|meta| {
                if meta.path.is_ident(RENAME) {
                    let lit: LitStr = meta.value()?.parse()?;
                    rename.set(lit.span(), "#[table(rename)]", lit.value());
                    Ok(())
                } else {
                    Err(meta.error(unknown(&path_text(&meta.path), VARIANT_KEYS, "on a variant")))
                }
            });
            if let Err(e) = res {
                cx.syn_error(e);
            }
        }
        Variant { rename: rename.get() }
    }
}

/// `#[table(..)]` on a variant of a `#[derive(TableUnion)]` enum.
pub(crate) struct UnionVariant {
    pub(crate) tag: Option<Spanned_<String>>,
    pub(crate) also: Vec<Spanned_<String>>,
    pub(crate) other: Option<Spanned_<()>>,
}

impl UnionVariant {
    pub(crate) fn from_ast(cx: &Ctxt, attrs: &[Attribute]) -> UnionVariant {
        let mut tag = Slot::new(cx, "");
        let mut also_slot = Slot::new(cx, "");
        let mut other = Slot::new(cx, "");
        let mut also = Vec::new();
        for attr in attrs.iter().filter(|a| a.path().is_ident(TABLE)) {
            let res = attr.parse_nested_meta(|meta| {
                let key = path_text(&meta.path);
                let span = meta.path.span();
                match key.as_str() {
                    // #[table(tag = "OrderPlaced")]
                    TAG => {
                        let lit: LitStr = meta.value()?.parse()?;
                        tag.set(lit.span(), "#[table(tag)]", lit.value());
                    }
                    // #[table(also = ["Old.Name, Assembly", ..])] or #[table(also = "Old")]
                    ALSO => {
                        also_slot.set(span, "#[table(also)]", ());
                        let value = meta.value()?;
                        if value.peek(LitStr) {
                            let lit: LitStr = value.parse()?;
                            also.push(Spanned_ {
                                value: lit.value(),
                                span: lit.span(),
                            });
                        } else {
                            let list: syn::ExprArray = value.parse().map_err(|e| {
                                syn::Error::new(
                                    e.span(),
                                    "write the other accepted tokens as a list of strings: #[table(also = [\"Old.Name\", \"MyApp.Events.Name, MyApp\"])]",
                                )
                            })?;
                            for elem in &list.elems {
                                match elem {
                                    syn::Expr::Lit(syn::ExprLit {
                                        lit: syn::Lit::Str(lit), ..
                                    }) => also.push(Spanned_ {
                                        value: lit.value(),
                                        span: lit.span(),
                                    }),
                                    other => cx.error_spanned_by(
                                        other,
                                        "each token in #[table(also = [..])] is a string, e.g. \"MyApp.Events.OrderPlaced, MyApp\"",
                                    ),
                                }
                            }
                        }
                    }
                    // #[table(other)]
                    OTHER => other.set(span, "#[table(other)]", ()),
                    _ => return Err(meta.error(unknown(&key, UNION_VARIANT_KEYS, "on a union variant"))),
                }
                Ok(())
            });
            if let Err(e) = res {
                cx.syn_error(e);
            }
        }
        UnionVariant {
            tag: tag.get(),
            also,
            other: other.get(),
        }
    }
}
