//! Rules that span attributes and fields, checked in one place.

use std::collections::HashMap;

use proc_macro2::Span;

use super::ast::{Container, Derive, Field, Storage};
use super::attr::{KeyRole, SplitEncoding, StampRole, SystemRole};
use super::ctxt::Ctxt;
use super::names::{check_columns, check_table_name};
use super::ty;

pub(crate) fn check(cx: &Ctxt, cont: &Container) {
    // A key attribute that did not parse (`#[table(row_ky)]`) must not also
    // be reported as a missing key.
    let attrs_parsed = !cx.has_errors();
    for field in &cont.fields {
        check_field_attrs(cx, cont.derive, field);
    }
    if cont.derive == Derive::Entity {
        check_table_name(cx, cont);
        check_keys(cx, cont, attrs_parsed);
        check_single(cx, cont);
        check_lifecycle_fields(cx, cont);
    }
    check_columns(cx, cont);
    super::index::check(cx, cont);
}

pub(super) fn err(cx: &Ctxt, span: Span, msg: impl Into<String>) {
    cx.syn_error(syn::Error::new(span, msg.into()));
}

fn check_field_attrs(cx: &Ctxt, derive: Derive, f: &Field) {
    let a = &f.attrs;
    // Every attribute present on the field, by name, for conflict messages.
    let mut present: Vec<(&str, Span)> = Vec::new();
    if let Some(k) = &a.key {
        present.push((
            match k.value {
                KeyRole::Partition => "#[table(partition_key)]",
                KeyRole::Row => "#[table(row_key)]",
                KeyRole::Id => "#[table(id)]",
            },
            k.span,
        ));
    }
    if let Some(s) = &a.system {
        present.push((
            match s.value {
                SystemRole::ETag => "#[table(etag)]",
                SystemRole::Timestamp => "#[table(timestamp)]",
            },
            s.span,
        ));
    }
    if let Some(s) = &a.skip {
        present.push(("#[table(skip)]", s.span));
    }
    if let Some(s) = &a.flatten {
        present.push(("#[table(flatten)]", s.span));
    }
    if let Some(s) = &a.json {
        present.push(("#[table(json)]", s.span));
    }
    if let Some(s) = &a.split {
        present.push(("#[table(split)]", s.span));
    }
    if let Some(s) = &a.blob_content {
        present.push(("#[blob_content]", s.span));
    }
    if let Some(s) = &a.stamp {
        present.push((
            match s.value {
                StampRole::Created => "#[table(created_at)]",
                StampRole::Updated => "#[table(updated_at)]",
            },
            s.span,
        ));
    }
    if let Some(s) = &a.soft_delete {
        present.push(("#[table(soft_delete)]", s.span));
    }
    if let Some(s) = &a.ordering {
        present.push(("#[table(ordering)]", s.span));
    }
    // Storage-deciding attributes exclude each other.
    if present.len() > 1 {
        let (first, _) = present[0];
        let (second, span) = present[1];
        err(cx, span, storage_conflict(first, second));
        return;
    }

    if derive == Derive::Record {
        if let Some(k) = &a.key {
            err(
                cx,
                k.span,
                "keys belong on the #[derive(TableEntity)] struct, not on a nested #[derive(TableRecord)]: move the key to the entity",
            );
        }
        if let Some(s) = &a.system {
            err(
                cx,
                s.span,
                "ETag and Timestamp fields belong on the #[derive(TableEntity)] struct, not on a nested record",
            );
        }
        if let Some(s) = &a.stamp {
            err(
                cx,
                s.span,
                "created/updated stamps belong on the #[derive(TableEntity)] struct, not on a nested record",
            );
        }
        if let Some(s) = &a.blob_content {
            err(
                cx,
                s.span,
                "#[blob_content] belongs on a field of the #[derive(TableEntity)] struct, not on a nested record",
            );
        }
        if let Some(s) = &a.split {
            err(
                cx,
                s.span,
                "#[table(split)] belongs on a field of the #[derive(TableEntity)] struct, not on a nested record",
            );
        }
        if let Some(s) = &a.soft_delete {
            err(
                cx,
                s.span,
                "#[table(soft_delete)] belongs on a field of the #[derive(TableEntity)] struct, not on a nested record: the deletion stamp is a column of the row",
            );
        }
        if let Some(s) = &a.ordering {
            err(
                cx,
                s.span,
                "#[table(ordering)] belongs on a field of the #[derive(TableEntity)] struct, not on a nested record: the ordering token is a column of the row",
            );
        }
    }
    if let (Some(_), Some(alias)) = (&a.soft_delete, &a.alias) {
        err(
            cx,
            alias.span,
            "the #[table(soft_delete)] stamp is compared server-side in every query, by its one column, and a query cannot read an old name: remove #[alias] (rename the stored column instead)",
        );
    }

    let not_a_column = matches!(f.storage, Storage::Key(_) | Storage::System(_) | Storage::Skip);
    if not_a_column {
        let what = match f.storage {
            Storage::Skip => "a skipped field is not stored",
            Storage::System(SystemRole::ETag) => "the ETag field is filled by the service, not stored in a column",
            Storage::System(SystemRole::Timestamp) => {
                "the Timestamp field is filled by the service, not stored in a column"
            }
            Storage::Key(KeyRole::Partition) => {
                "a partition_key field is stored as the row's PartitionKey, not in a column"
            }
            _ => "a row_key field is stored as the row's RowKey, not in a column",
        };
        if let Some(r) = &a.rename {
            if !matches!(f.storage, Storage::Key(KeyRole::Id)) {
                err(cx, r.span, format!("{what}: remove #[table(rename)]"));
            }
        }
        if let Some(r) = &a.alias {
            err(cx, r.span, format!("{what}: remove #[alias]"));
        }
        if let Some(r) = &a.protected {
            err(cx, r.span, format!("{what}: remove #[protected]"));
        }
        if let Some(r) = &a.offload_never {
            err(cx, r.span, format!("{what}: remove #[table(offload)]"));
        }
    }

    if let Storage::System(SystemRole::ETag) = &f.storage {
        if !ty::is_option_etag(&f.ty) {
            cx.error_spanned_by(
                &f.ty,
                "the #[table(etag)] field must have type Option<unified_tables::ETag>: it is None until the entity is read or written",
            );
        }
    }
    if let Storage::System(SystemRole::Timestamp) = &f.storage {
        if ty::option_inner(&f.ty).is_none() {
            cx.error_spanned_by(
                &f.ty,
                "the #[table(timestamp)] field must be an Option, e.g. Option<unified_tables::DateTime>: it is None until the row is read",
            );
        }
    }

    if let Some(s) = &a.split {
        let inner = ty::option_inner(&f.ty).unwrap_or(&f.ty);
        let bytes = ty::is_bytes(inner);
        if ty::is_known_scalar(inner) {
            err(
                cx,
                s.span,
                "#[table(split)] is for values that can outgrow a cell (String, Vec<u8> or a JSON-stored value); this scalar always fits one cell: remove #[table(split)]",
            );
        } else if s.value == SplitEncoding::Binary && !bytes {
            err(
                cx,
                s.span,
                "split = \"binary\" needs a Vec<u8> field; use split = \"text\" or \"gzip\" for text and JSON values",
            );
        } else if s.value != SplitEncoding::Binary && bytes {
            err(
                cx,
                s.span,
                "a Vec<u8> field is split as raw bytes: write #[table(split = \"binary\")]",
            );
        }
    }
    if let (Some(o), None) = (&a.offload_never, &a.split) {
        err(
            cx,
            o.span,
            "#[table(offload = \"never\")] applies to #[table(split = ..)] fields only, the only ones that may move to blob storage: remove it",
        );
    }
    if let Some(b) = &a.blob_content {
        if !ty::is_blob_content(&f.ty) {
            err(
                cx,
                b.span,
                "#[blob_content] needs a field of type BlobContent or Option<BlobContent>; for a large string or byte value use #[table(split = \"text\")] or #[table(split = \"binary\")] instead",
            );
        }
    }
    if let (Some(p), Some(_)) = (&a.protected, &a.flatten) {
        err(
            cx,
            p.span,
            "#[protected] cannot guard a flattened struct as a whole: protect its fields instead",
        );
    }
    if let (Some(p), Some(_)) = (&a.alias, &a.flatten) {
        err(
            cx,
            p.span,
            "#[alias] cannot rename a flattened struct: alias its fields instead",
        );
    }
}

/// Why two attributes that each decide how a field is stored cannot meet,
/// and what to write instead.
fn storage_conflict(first: &str, second: &str) -> String {
    let has = |a: &str| first == a || second == a;
    let why = if has("#[table(skip)]") {
        "a skipped field is not stored at all; remove one of them".to_owned()
    } else if has("#[table(split)]") && has("#[table(flatten)]") {
        "a flattened struct is stored as one column per field and cannot be split; \
         remove #[table(flatten)] to store it as one JSON value that may be split \
         (it needs serde's Serialize and Deserialize), or remove #[table(split)]"
            .to_owned()
    } else if has("#[table(split)]") && has("#[table(json)]") {
        "a split value that is not a String or Vec<u8> is already stored as JSON: remove #[table(json)]".to_owned()
    } else if first.contains("_key") || first.contains("(id)") {
        format!("a key field is stored as the row's key, not in a column: remove {second}")
    } else {
        format!("each says how the field is stored; keep either {first} or {second}")
    };
    format!("{second} cannot be combined with {first} on the same field: {why}")
}

fn check_keys(cx: &Ctxt, cont: &Container, report_missing: bool) {
    let mut seen: HashMap<&'static str, Span> = HashMap::new();
    let mut owners: HashMap<&'static str, &Field> = HashMap::new();
    for f in &cont.fields {
        if let (Storage::Key(role), Some(k)) = (&f.storage, &f.attrs.key) {
            let name = match role {
                KeyRole::Partition => "partition_key",
                KeyRole::Row => "row_key",
                KeyRole::Id => "id",
            };
            if let Some(first) = owners.get(name) {
                err(
                    cx,
                    k.span,
                    format!(
                        "`{}` is already the #[table({name})] field and an entity has exactly one: remove #[table({name})] from `{}`",
                        first.ident, f.ident
                    ),
                );
            } else {
                owners.insert(name, f);
                seen.insert(name, k.span);
            }
        }
    }
    let (pk, rk, id) = (seen.get("partition_key"), seen.get("row_key"), seen.get("id"));
    match (pk, rk, id) {
        (Some(_), Some(_), None) | (None, None, Some(_)) => {}
        (_, _, None) if !report_missing => {}
        (_, _, Some(span)) if pk.is_some() || rk.is_some() => err(
            cx,
            *span,
            "choose one key mode: either #[table(id)] (a composite `{PartitionKey}|{RowKey}` id) or #[table(partition_key)] with #[table(row_key)]",
        ),
        (Some(_), None, None) => cx.error_spanned_by(
            &cont.ident,
            "missing #[table(row_key)]: mark the String field that identifies the row within its partition",
        ),
        (None, Some(_), None) => cx.error_spanned_by(
            &cont.ident,
            "missing #[table(partition_key)]: mark the String field that groups rows into partitions",
        ),
        _ => cx.error_spanned_by(
            &cont.ident,
            "no key: mark a String field #[table(partition_key)] and one #[table(row_key)], or one #[table(id)] for a composite `{PartitionKey}|{RowKey}` id",
        ),
    }
    if let (Some(ids), None) = (&cont.attrs.ids, id) {
        err(
            cx,
            ids.span,
            "#[table(ids = ..)] says how a #[table(id)] field is normalized, and this entity has none: remove it",
        );
    }
}

fn check_single(cx: &Ctxt, cont: &Container) {
    let mut seen: HashMap<&'static str, &Field> = HashMap::new();
    for f in &cont.fields {
        let role = match (&f.attrs.system, &f.attrs.stamp) {
            (Some(s), _) => (
                match s.value {
                    SystemRole::ETag => "etag",
                    SystemRole::Timestamp => "timestamp",
                },
                s.span,
            ),
            (_, Some(s)) => (
                match s.value {
                    StampRole::Created => "created_at",
                    StampRole::Updated => "updated_at",
                },
                s.span,
            ),
            _ => continue,
        };
        if let Some(first) = seen.get(role.0) {
            err(
                cx,
                role.1,
                format!(
                    "`{}` is already the #[table({name})] field and an entity has at most one: remove #[table({name})] from `{}`",
                    first.ident,
                    f.ident,
                    name = role.0
                ),
            );
        } else {
            seen.insert(role.0, f);
        }
    }
}

/// At most one deletion stamp and one ordering token per entity.
fn check_lifecycle_fields(cx: &Ctxt, cont: &Container) {
    for (name, of) in [
        (
            "soft_delete",
            (|f: &Field| f.attrs.soft_delete.as_ref().map(|s| s.span)) as fn(&Field) -> Option<Span>,
        ),
        ("ordering", |f: &Field| f.attrs.ordering.as_ref().map(|s| s.span)),
    ] {
        let mut first: Option<&Field> = None;
        for f in &cont.fields {
            let Some(span) = of(f) else { continue };
            match first {
                Some(owner) => err(
                    cx,
                    span,
                    format!(
                        "`{}` is already the #[table({name})] field and an entity has at most one: remove #[table({name})] from `{}`",
                        owner.ident, f.ident
                    ),
                ),
                None => first = Some(f),
            }
        }
    }
}
