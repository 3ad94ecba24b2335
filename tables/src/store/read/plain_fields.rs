//! Cells of a large value under a field that is not large. Any reader takes
//! a value split on the main row whose manifest is complete and well formed
//! (every encoding: `text`, `gzip`, `utf16le`, `binary`), checked against its
//! SHA-256, as the .NET library's readers do. A value on continuation rows
//! or in a blob, or a group of cells that is not a complete split value,
//! stays an error naming the column and the remedy: reading it as absent
//! would turn it into a default, and saving the entity back would drop it.

use crate::codec::ValueKind;
use crate::entity::{Column, ColumnKind, LargeForm, Schema};
use crate::error::{Error, Result};
use crate::large::cells::inline_name;
use crate::large::stream::{well_formed_count, SplitAssembler};
use crate::layout::{
    chunk_cell, parse_split_cell, split_cell, SplitCell, BLOB_SUFFIX, CHUNKS_SUFFIX, GZIP_SUFFIX, JSON_SUFFIX,
};
use crate::value::{EdmType, Row};

/// Reassembles, in place, every value split on `row` under a field that is
/// not `split` (the one-cell form replaces the split cells), then refuses
/// what such a field still cannot read.
pub(super) fn take_split_values_of_plain_fields(schema: &Schema, row: &mut Row) -> Result<()> {
    let split: Vec<String> = row
        .properties
        .keys()
        .filter_map(|k| k.strip_suffix(CHUNKS_SUFFIX))
        .map(str::to_owned)
        .collect();
    for column in split {
        let Some(form) = field_of(schema.columns, &column).and_then(plain_form) else {
            continue;
        };
        if !complete_on_this_row(row, &column) {
            continue;
        }
        let mut assembler = SplitAssembler::default();
        assembler.start(&column, form, row);
        assembler.feed(row);
        let value = assembler
            .finish(&column)
            .unwrap_or_else(|| unreachable!("the value was started"))?;
        row.properties.retain(|k, _| split_cell(k, &column).is_none());
        row.insert(inline_name(&column, form), value);
    }
    refuse_unassembled_large_values(schema, row)
}

/// What a plain field's one cell holds, for the fields whose values the
/// .NET library splits (strings, bytes and JSON); `None` for the rest.
fn plain_form(column: &Column) -> Option<LargeForm> {
    match column.kind {
        ColumnKind::Value(ValueKind::Cell(EdmType::String)) => Some(LargeForm::Text),
        ColumnKind::Binary | ColumnKind::Value(ValueKind::Cell(EdmType::Binary)) => Some(LargeForm::Bytes),
        ColumnKind::Value(ValueKind::Json) => Some(LargeForm::Json),
        _ => None,
    }
}

/// Whether `row` holds the whole split value `column`: a well-formed
/// manifest and exactly the chunk cells it counts, all on this row.
fn complete_on_this_row(row: &Row, column: &str) -> bool {
    let Some(count) = well_formed_count(column, row) else {
        return false;
    };
    let chunks = row
        .properties
        .keys()
        .filter(|k| matches!(parse_split_cell(k), Some((c, SplitCell::Chunk(_))) if c == column))
        .count();
    chunks == count && (0..count).all(|i| row.get(&chunk_cell(column, i)).is_some())
}

/// Refuses a row holding a cell form the field of its column cannot read,
/// which reading as absent would turn into a default (and saving the entity
/// back would drop): a large value (split cells or a blob reference) under a
/// field that is not `split` or `#[blob_content]`, and a `{Col}__Json` or
/// `{Col}__GZip` cell under a flattened record (as .NET stores a record
/// without a parameterless constructor). Nested records are searched too.
pub(super) fn refuse_unassembled_large_values(schema: &Schema, row: &Row) -> Result<()> {
    for cell in row.properties.keys() {
        let (column, large) = if let Some(c) = cell
            .strip_suffix(BLOB_SUFFIX)
            .or_else(|| cell.strip_suffix(CHUNKS_SUFFIX))
        {
            (c, true)
        } else if let Some(c) = cell
            .strip_suffix(JSON_SUFFIX)
            .or_else(|| cell.strip_suffix(GZIP_SUFFIX))
        {
            (c, false)
        } else {
            continue;
        };
        let Some(field) = field_of(schema.columns, column) else {
            continue;
        };
        let expected = match (large, field.kind) {
            (_, ColumnKind::Flatten(_)) => Some(format!(
                "the columns `{column}_..` of a flattened record: the row holds the record as one JSON value (as the .NET library stores a type without a parameterless constructor); declare the field #[table(json)] with a serde type to read it (and `split` if the value is large)"
            )),
            (true, ColumnKind::Large { .. } | ColumnKind::Blob) | (false, _) => None,
            (true, _) => Some(format!(
                "a plain cell `{column}`: the row holds a large value of this column that is not whole on the main row (it is on continuation rows or in a blob, or its split cells are incomplete); mark the field #[table(split = \"text\" | \"gzip\" | \"binary\")] to read it"
            )),
        };
        if let Some(expected) = expected {
            return Err(Error::Decode {
                column: cell.to_string(),
                expected,
                found: format!("`{cell}`"),
            });
        }
    }
    Ok(())
}

/// The field a physical column name belongs to (its own name or an alias),
/// looking through flattened records (`Address_City`).
fn field_of<'s>(columns: &'s [Column], name: &str) -> Option<&'s Column> {
    columns.iter().find_map(|c| {
        if c.name == name || c.aliases.contains(&name) {
            return Some(c);
        }
        match c.kind {
            ColumnKind::Flatten(children) => name
                .strip_prefix(c.name)
                .and_then(|rest| rest.strip_prefix('_'))
                .and_then(|rest| field_of(children, rest)),
            _ => None,
        }
    })
}
