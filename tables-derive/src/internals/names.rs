//! The names a derive gives storage: its columns (each one a name the
//! service accepts, no two the same) and its table's name.

use std::collections::HashMap;

use super::ast::{Container, Storage};
use super::attr::KeyRole;
use super::check::err;
use super::ctxt::Ctxt;
use super::symbol::RESERVED_COLUMNS;

/// Why a column name cannot be used, if it cannot.
fn column_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("a column name cannot be empty".into());
    }
    if name.starts_with('_') {
        return Some(format!(
            "column `{name}` starts with `_`, which is reserved for system columns (`_SplitParts`, ...): choose a name that starts with a letter, e.g. #[table(rename = \"{}\")]",
            name.replace('_', "")
        ));
    }
    if name.contains('_') {
        return Some(format!(
            "column `{name}` contains `_`, the delimiter of flattened columns (`Address_City`) and of cell suffixes (`__Json`): choose a name without `_`, e.g. with #[table(rename = \"{}\")]",
            name.replace('_', "")
        ));
    }
    if !name.starts_with(|c: char| c.is_ascii_alphabetic()) || !name.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Some(format!(
            "column `{name}` must start with a letter and hold only ASCII letters and digits"
        ));
    }
    if RESERVED_COLUMNS.contains(&name) {
        let system = match name {
            "PartitionKey" => "#[table(partition_key)]",
            "RowKey" => "#[table(row_key)]",
            "Timestamp" => "#[table(timestamp)]",
            _ => "#[table(etag)]",
        };
        return Some(format!(
            "column `{name}` is reserved by the service: choose another column name with #[table(rename = \"..\")], or mark the field {system} if it is meant to hold the row's {name}"
        ));
    }
    if name.len() > 240 {
        return Some(format!("column `{name}` is longer than 240 characters"));
    }
    None
}

pub(super) fn check_columns(cx: &Ctxt, cont: &Container) {
    // Column name -> the field that owns it.
    let mut owners: HashMap<String, String> = HashMap::new();
    for f in &cont.fields {
        let is_id = matches!(f.storage, Storage::Key(KeyRole::Id));
        if !f.is_column() && !is_id {
            continue;
        }
        let span = f
            .attrs
            .rename
            .as_ref()
            .map(|r| r.span)
            .unwrap_or_else(|| f.ident.span());
        if let Some(problem) = column_name_problem(&f.column) {
            err(cx, span, problem);
            continue;
        }
        if let Some(other) = owners.insert(f.column.clone(), f.ident.to_string()) {
            err(
                cx,
                span,
                format!(
                    "fields `{other}` and `{}` are both stored in column `{}`: rename one with #[table(rename = \"..\")]",
                    f.ident, f.column
                ),
            );
        }
    }
    // Old column name -> the field that reads it.
    let mut aliased: HashMap<String, String> = HashMap::new();
    for f in &cont.fields {
        let Some(alias) = &f.attrs.alias else { continue };
        if let Some(problem) = column_name_problem(&alias.value) {
            err(cx, alias.span, problem);
            continue;
        }
        if let Some(owner) = owners.get(&alias.value) {
            err(
                cx,
                alias.span,
                format!(
                    "alias `{}` is the column of field `{owner}`: an alias names an old column that no field uses any more; remove #[alias(\"{}\")] or rename `{owner}`",
                    alias.value, alias.value
                ),
            );
            continue;
        }
        if let Some(other) = aliased.insert(alias.value.clone(), f.ident.to_string()) {
            err(
                cx,
                alias.span,
                format!(
                    "fields `{other}` and `{}` both read the old column `{}`: keep #[alias(\"{}\")] on one of them",
                    f.ident, alias.value, alias.value
                ),
            );
        }
    }
}

/// The table name the derive gives the entity (`#[table(name = ..)]`, or the
/// type's name) must be one the service accepts: `^[A-Za-z][A-Za-z0-9]{2,62}$`,
/// and not `tables`. This is the rule of `unified_tables::service::check_table_name`,
/// which the runtime applies to names given at run time (`Tables::store_in`).
pub(super) fn check_table_name(cx: &Ctxt, cont: &Container) {
    let name = cont.table_name();
    let valid = (3..=63).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name.chars().all(|c| c.is_ascii_alphanumeric())
        && !name.eq_ignore_ascii_case("tables");
    if valid {
        return;
    }
    let (span, whose) = match &cont.attrs.name {
        Some(n) => (n.span, ""),
        None => (
            cont.ident.span(),
            " (the type's name, which names the table by default)",
        ),
    };
    err(
        cx,
        span,
        format!(
            "the table name `{name}`{whose} is one the service refuses: a table name has 3 to 63 ASCII letters and digits, starts with a letter and is not `tables`; name the table with #[table(name = \"{}\")]",
            suggested_table_name(&name)
        ),
    );
}

/// A name the service accepts, close to `name`: its letters and digits,
/// after a letter, padded to 3 characters and cut to 63.
fn suggested_table_name(name: &str) -> String {
    let mut out: String = name.chars().filter(char::is_ascii_alphanumeric).collect();
    if !out.starts_with(|c: char| c.is_ascii_alphabetic()) {
        out.insert(0, 'T');
    }
    if out.eq_ignore_ascii_case("tables") {
        out.push_str("Rows");
    }
    while out.len() < 3 {
        out.push_str("Rows");
    }
    out.truncate(63);
    out
}
