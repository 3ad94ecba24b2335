//! Secondary indexes: `#[index]` and `#[unique]` on a field, and
//! `#[table(index(..))]` on the struct, parsed into typed values, resolved
//! against the fields and checked.

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Attribute, Ident, LitStr};

use super::ast::{Container, Derive, Field, Storage};
use super::attr::Spanned_;
use super::ctxt::Ctxt;
use super::symbol::{ALL, FIELDS, GLOBAL, INDEX, NAME, PROJECT, PROTOCOL, UNIQUE};

/// The protocols a `unique(global)` index may state.
const RESERVE: &str = "reserve";
/// The longest index name (it is part of every index key).
const MAX_NAME: usize = 48;

/// What an index row carries besides keys and indexed values.
#[derive(Clone)]
pub(crate) enum ProjectAttr {
    Fields(Vec<Ident>),
    All,
}

/// One index as written: on a field (`#[index(..)]`, `#[unique(..)]`) or on
/// the struct (`#[table(index(..))]`).
#[derive(Clone)]
pub(crate) struct IndexAttr {
    /// Where it was written.
    pub(crate) span: Span,
    /// How it was written, for messages: `#[index]`, `#[unique]`, `#[table(index)]`.
    pub(crate) shown: &'static str,
    pub(crate) name: Option<Spanned_<String>>,
    pub(crate) unique: bool,
    pub(crate) global: Option<Span>,
    pub(crate) protocol: Option<Spanned_<String>>,
    pub(crate) project: Option<Spanned_<ProjectAttr>>,
    /// The indexed fields of a struct-level index.
    pub(crate) fields: Vec<Ident>,
}

impl IndexAttr {
    fn new(span: Span, shown: &'static str, unique: bool) -> IndexAttr {
        IndexAttr {
            span,
            shown,
            name: None,
            unique,
            global: None,
            protocol: None,
            project: None,
            fields: Vec::new(),
        }
    }
}

/// Parses `#[index]`, `#[index(..)]`, `#[unique]` and `#[unique(..)]` on a field.
pub(crate) fn field_index(cx: &Ctxt, attr: &Attribute) -> Option<IndexAttr> {
    let unique = attr.path().is_ident(UNIQUE);
    let shown = if unique { "#[unique]" } else { "#[index]" };
    let mut out = IndexAttr::new(attr.path().span(), shown, unique);
    if matches!(attr.meta, syn::Meta::Path(_)) {
        return Some(out);
    }
    let res = attr.parse_nested_meta(|meta| parse_key(&meta, &mut out, false));
    if let Err(e) = res {
        cx.syn_error(e);
    }
    Some(out)
}

/// Parses the inside of `#[table(index(..))]` on the struct.
pub(crate) fn container_index(meta: &ParseNestedMeta<'_>) -> syn::Result<IndexAttr> {
    let mut out = IndexAttr::new(meta.path.span(), "#[table(index)]", false);
    meta.parse_nested_meta(|inner| parse_key(&inner, &mut out, true))?;
    Ok(out)
}

/// One key of an index attribute.
fn parse_key(meta: &ParseNestedMeta<'_>, out: &mut IndexAttr, on_struct: bool) -> syn::Result<()> {
    let key = meta.path.get_ident().map(Ident::to_string).unwrap_or_default();
    let span = meta.path.span();
    match key.as_str() {
        // name = "by_email"
        NAME => {
            let lit: LitStr = meta.value()?.parse()?;
            if out.name.is_some() {
                return Err(meta.error("duplicate `name`: write it once"));
            }
            out.name = Some(Spanned_ {
                value: lit.value(),
                span: lit.span(),
            });
        }
        // unique (on the struct; on a field write #[unique])
        UNIQUE if on_struct => out.unique = true,
        // global
        GLOBAL => out.global = Some(span),
        // protocol = "reserve"
        PROTOCOL => {
            let lit: LitStr = meta.value()?.parse()?;
            out.protocol = Some(Spanned_ {
                value: lit.value(),
                span: lit.span(),
            });
        }
        // project(a, b) / project(all)
        PROJECT => {
            let mut fields = Vec::new();
            let mut all = false;
            meta.parse_nested_meta(|f| {
                match f.path.get_ident() {
                    Some(i) if i == ALL => all = true,
                    Some(i) => fields.push(i.clone()),
                    None => return Err(f.error("name a field of this struct, or `all`")),
                }
                Ok(())
            })?;
            let value = if all { ProjectAttr::All } else { ProjectAttr::Fields(fields) };
            out.project = Some(Spanned_ { value, span });
        }
        // fields(a, b) (on the struct)
        FIELDS if on_struct => {
            meta.parse_nested_meta(|f| {
                match f.path.get_ident() {
                    Some(i) => out.fields.push(i.clone()),
                    None => return Err(f.error("name a field of this struct")),
                }
                Ok(())
            })?;
        }
        FIELDS => {
            return Err(meta.error(
                "an index on a field indexes that field: drop `fields(..)`, or declare a composite index on the struct: #[table(index(name = \"..\", fields(a, b)))]",
            ))
        }
        UNIQUE => {
            return Err(meta.error("write #[unique] instead of #[index(unique)]"));
        }
        other => {
            let valid = if on_struct {
                "`name`, `fields`, `unique`, `global`, `protocol`, `project`"
            } else {
                "`name`, `global`, `protocol`, `project`"
            };
            return Err(meta.error(format!("unknown key `{other}` in {}: expected one of {valid}", out.shown)));
        }
    }
    Ok(())
}

/// The projection of a resolved index.
pub(crate) enum Projected<'a> {
    Keys,
    Fields(Vec<&'a Field>),
    All,
}

/// One index, its fields found.
pub(crate) struct Resolved<'a> {
    pub(crate) name: String,
    pub(crate) fields: Vec<&'a Field>,
    pub(crate) unique: bool,
    pub(crate) global: bool,
    pub(crate) projection: Projected<'a>,
    pub(crate) attr: &'a IndexAttr,
}

fn field_named<'a>(cont: &'a Container, ident: &Ident) -> Option<&'a Field> {
    cont.fields.iter().find(|f| &f.ident == ident)
}

/// Every index of the type, in declaration order: the struct's, then the
/// fields'. Names and fields that cannot be resolved are left out (`check`
/// reports them).
pub(crate) fn resolve(cont: &Container) -> Vec<Resolved<'_>> {
    let mut out = Vec::new();
    let on_fields = cont
        .fields
        .iter()
        .flat_map(|f| f.attrs.indexes.iter().map(move |a| (Some(f), a)));
    let on_struct = cont.attrs.indexes.iter().map(|a| (None, a));
    for (field, attr) in on_struct.chain(on_fields) {
        let fields: Vec<&Field> = match field {
            Some(f) => vec![f],
            None => attr.fields.iter().filter_map(|i| field_named(cont, i)).collect(),
        };
        let name = match (&attr.name, field) {
            (Some(n), _) => n.value.clone(),
            (None, Some(f)) => f.ident.to_string().trim_start_matches("r#").to_owned(),
            (None, None) => fields.iter().map(|f| f.ident.to_string()).collect::<Vec<_>>().join("_"),
        };
        let projection = match attr.project.as_ref().map(|p| &p.value) {
            None => Projected::Keys,
            Some(ProjectAttr::All) => Projected::All,
            Some(ProjectAttr::Fields(idents)) => {
                Projected::Fields(idents.iter().filter_map(|i| field_named(cont, i)).collect())
            }
        };
        out.push(Resolved {
            name,
            fields,
            unique: attr.unique,
            global: attr.global.is_some(),
            projection,
            attr,
        });
    }
    out
}

fn err(cx: &Ctxt, span: Span, msg: impl Into<String>) {
    cx.syn_error(syn::Error::new(span, msg.into()));
}

/// Why `field` cannot be indexed, if it cannot.
fn unindexable(f: &Field) -> Option<&'static str> {
    if f.attrs.protected.is_some() {
        return Some("it is #[protected], and an index writes its value into keys, which travel in request URLs and logs: index a field that is not protected (a hash of the value, say), or remove #[protected]");
    }
    Some(match &f.storage {
        Storage::Key(_) => {
            "it is a key, and the table is already indexed by its keys: look the entity up with `get` (or a partition with `QueryOptions::partition`) and drop the index"
        }
        Storage::System(_) => "it is filled by the service, not stored in a column: remove the index",
        Storage::Skip => "a #[table(skip)] field is not stored: remove the index, or store the field",
        Storage::Large { .. } => {
            "a large value (#[table(split)]) can be any size, and a key holds at most 1 KiB: keep a short field beside it (a title, a hash) and index that"
        }
        Storage::Blob { .. } => {
            "a file (#[blob_content]) lives in blob storage: keep a short field beside it (a name, a hash) and index that"
        }
        Storage::Flatten { .. } => {
            "a #[table(flatten)] record is several columns: keep the value to look up by in a field of the entity itself and index that"
        }
        Storage::Json => {
            "a #[table(json)] field is stored as JSON text, which does not sort as the value does: keep the value to look up by in a field of its own"
        }
        Storage::Value | Storage::Binary { .. } => return None,
    })
}

/// The rules of indexes, each reported on the span of what breaks it.
pub(crate) fn check(cx: &Ctxt, cont: &Container) {
    if cont.derive == Derive::Record {
        for f in &cont.fields {
            for a in &f.attrs.indexes {
                err(cx, a.span, format!("{} belongs on a field of the #[derive(TableEntity)] struct, not on a nested record: an index is kept with the entity's row", a.shown));
            }
        }
        return;
    }
    let has_large = cont
        .fields
        .iter()
        .any(|f| matches!(f.storage, Storage::Large { .. } | Storage::Blob { .. }));
    for attr in &cont.attrs.indexes {
        if attr.name.is_none() {
            err(cx, attr.span, "a #[table(index(..))] on the struct needs a name: #[table(index(name = \"status_date\", fields(status, date)))]");
        }
        if attr.fields.is_empty() {
            err(cx, attr.span, "#[table(index(..))] needs the fields it indexes: fields(a, b); to index one field, write #[index] on it");
        }
        for (i, ident) in attr.fields.iter().enumerate() {
            match field_named(cont, ident) {
                None => cx.error_spanned_by(
                    ident,
                    format!("#[table(index)] names `{ident}`, which is not a field of this struct"),
                ),
                Some(_) if attr.fields[..i].contains(ident) => cx.error_spanned_by(
                    ident,
                    format!("#[table(index)] names `{ident}` twice: index each field once"),
                ),
                Some(_) => {}
            }
        }
        if attr.fields.len() > 4 {
            err(cx, attr.span, "#[table(index)] indexes at most 4 fields");
        }
    }
    let resolved = resolve(cont);
    let mut names: Vec<(&str, Span)> = Vec::new();
    for ix in &resolved {
        let attr = ix.attr;
        let name_span = attr.name.as_ref().map_or(attr.span, |n| n.span);
        if !valid_name(&ix.name) {
            err(cx, name_span, format!(
                "the index name `{}` is not one a key can carry: use lower-case letters, digits and `_`, starting with a letter, at most {MAX_NAME} characters (#[index(name = \"by_email\")])",
                ix.name
            ));
        }
        if names.iter().any(|(n, _)| *n == ix.name) {
            err(
                cx,
                name_span,
                format!(
                    "two indexes are named `{}`: give one of them another name, #[index(name = \"..\")]",
                    ix.name
                ),
            );
        } else {
            names.push((&ix.name, name_span));
        }
        for f in &ix.fields {
            if let Some(why) = unindexable(f) {
                err(
                    cx,
                    attr.span,
                    format!("{} cannot index `{}`: {why}", attr.shown, f.ident),
                );
            }
        }
        match (ix.unique, ix.global, &attr.protocol) {
            (true, true, None) => err(cx, attr.span, format!(
                "a global unique index needs its protocol stated: write #[unique(global, protocol = \"{RESERVE}\")] (the value is reserved in its index partition before the entity is written; see the guide's secondary_indexes chapter for what it guarantees)"
            )),
            (true, true, Some(p)) if p.value != RESERVE => err(cx, p.span, format!(
                "unknown protocol `{}`: write protocol = \"{RESERVE}\"", p.value
            )),
            (true, true, Some(_)) if has_large => err(cx, attr.span, format!(
                "{} cannot be global on a type with large values or files: a write that loses its reservation is written back as it was, which a value stored over several rows or a blob cannot be in one request; keep the indexed field on a type without large values, or make the index local",
                attr.shown
            )),
            (_, _, Some(p)) if !(ix.unique && ix.global) => err(cx, p.span, format!(
                "a protocol is stated for a global unique index only ({} is kept in the entity's transaction or by the applier): remove `protocol`",
                attr.shown
            )),
            _ => {}
        }
        if let Some(project) = &attr.project {
            match &project.value {
                ProjectAttr::All if has_large => err(cx, project.span, format!(
                    "{} cannot copy every column into its rows with project(all) on a type with large values or files (a row holds 1 MiB): name the fields to copy, project(a, b)",
                    attr.shown
                )),
                ProjectAttr::All => {}
                ProjectAttr::Fields(idents) => {
                    for ident in idents {
                        match field_named(cont, ident) {
                            None => cx.error_spanned_by(ident, format!("project names `{ident}`, which is not a field of this struct")),
                            Some(f) if !f.is_column() => cx.error_spanned_by(ident, format!(
                                "project names `{ident}`, which is not stored in a column (keys and system fields are in every index row already): remove it"
                            )),
                            Some(f) if matches!(f.storage, Storage::Large { .. } | Storage::Blob { .. }) => cx.error_spanned_by(ident, format!(
                                "project cannot copy the large value or file `{ident}` into an index row: look the entity up instead"
                            )),
                            Some(f) if ix.global && f.attrs.protected.is_some() => cx.error_spanned_by(ident, format!(
                                "project cannot copy the #[protected] field `{ident}` into a global index, whose rows live outside the entity's partition: remove it"
                            )),
                            Some(_) => {}
                        }
                    }
                }
            }
        }
    }
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some('a'..='z'))
        && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_'))
        && name.len() <= MAX_NAME
}

/// Whether an attribute is one of the field index attributes.
pub(crate) fn is_index_attr(attr: &Attribute) -> bool {
    attr.path().is_ident(INDEX) || attr.path().is_ident(UNIQUE)
}
