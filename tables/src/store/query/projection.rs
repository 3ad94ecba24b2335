//! Resolving a projection to the physical columns a query's `$select` names.

use crate::codec::ValueKind;
use crate::entity::{Column, ColumnKind, Schema};
use crate::error::{Error, Result};
use crate::layout::{blob_cell, gzip_cell, json_cell};

/// A projected field: a typed column, or a name given to [`QueryOptions::select_raw`](crate::store::QueryOptions::select_raw).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Selection {
    /// The stored name of a typed column (`Address_City`).
    Column(String),
    /// A field or column name, or a dotted path (`address.city`), as written.
    Name(String),
}

/// Columns the service returns whatever the projection: selecting them adds nothing.
const ALWAYS_READ: [&str; 3] = ["PartitionKey", "RowKey", "Timestamp"];

/// What a projection resolved to.
#[derive(Debug, Default)]
struct Resolved {
    columns: Vec<String>,
    /// A large value or file was selected: its parts live in cells and rows
    /// a projection cannot name.
    large: bool,
}

/// How a wanted name is matched against a column.
#[derive(Clone, Copy)]
enum Wanted<'a> {
    /// A stored column path (`Address_City`), from a typed handle.
    Column(&'a str),
    /// A field or column name, or a dotted field path (`address.city`).
    Name(&'a str),
}

/// The `$select` list of a projection, or `None` when the rows must be read
/// whole (a large value or file is selected). The split marker is always
/// listed, so continuation rows stay recognisable.
pub(crate) fn select_list(schema: &Schema, selection: &[Selection]) -> Result<Option<Vec<String>>> {
    let mut out = Resolved::default();
    for s in selection {
        let (wanted, shown) = match s {
            Selection::Column(c) if ALWAYS_READ.contains(&c.as_str()) => continue,
            Selection::Column(c) => (Wanted::Column(c), c),
            Selection::Name(n) => (Wanted::Name(n), n),
        };
        if !resolve(schema.columns, "", wanted, &mut out) {
            return Err(Error::config(format!(
                "`{shown}` is not a stored field of {}; select fields by their Rust or column names",
                schema.table
            )));
        }
    }
    if out.large {
        return Ok(None);
    }
    let mut columns = out.columns;
    columns.dedup();
    columns.push(crate::layout::SPLIT_OF.to_owned());
    Ok(Some(columns))
}

/// Adds the physical columns `wanted` names among `columns` (named under
/// `prefix`); whether it named any.
fn resolve(columns: &'static [Column], prefix: &str, wanted: Wanted<'_>, out: &mut Resolved) -> bool {
    let mut found = false;
    for c in columns {
        let name = format!("{prefix}{}", c.name);
        let matches = match wanted {
            Wanted::Column(w) => w == name,
            Wanted::Name(w) => w == c.field || w == c.name || w == name,
        };
        if matches {
            cells(c, prefix, &name, out);
            found = true;
            continue;
        }
        let ColumnKind::Flatten(children) = c.kind else {
            continue;
        };
        let inner = format!("{name}_");
        // `_` is reserved in column names, so a stored path splits unambiguously.
        let rest = match wanted {
            Wanted::Column(w) => w.strip_prefix(&inner).map(|_| wanted),
            Wanted::Name(w) => w.strip_prefix(&format!("{}.", c.field)).map(Wanted::Name),
        };
        if let Some(rest) = rest {
            found |= resolve(children, &inner, rest, out);
        }
    }
    found
}

/// Every physical cell of column `c`, named `name` under `prefix`.
fn cells(c: &'static Column, prefix: &str, name: &str, out: &mut Resolved) {
    match c.kind {
        ColumnKind::Flatten(children) => {
            let inner = format!("{name}_");
            for child in children {
                cells(child, &inner, &format!("{inner}{}", child.name), out);
            }
        }
        ColumnKind::Value(ValueKind::Json) => {
            out.columns.extend([json_cell(name), gzip_cell(name)]);
            for a in c.aliases {
                let alias = format!("{prefix}{a}");
                out.columns.extend([json_cell(&alias), gzip_cell(&alias)]);
            }
        }
        ColumnKind::Large { .. } | ColumnKind::Blob => {
            out.large = true;
            out.columns.push(blob_cell(name));
        }
        _ => {
            out.columns.extend([name.to_owned(), gzip_cell(name)]);
            out.columns.extend(c.aliases.iter().map(|a| format!("{prefix}{a}")));
        }
    }
}
