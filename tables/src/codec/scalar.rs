//! Native Edm cells: strings, characters and booleans; the
//! cell reader every scalar shares.

use super::gzip_cells::{gunzip_cell, gzip_base64};
use super::{
    has_any_form, type_mismatch, EncodeOptions, OversizedCellPolicy, TableValue, ValueKind, GZIP_SUFFIX, JSON_SUFFIX,
    MAX_CELL_BYTES, TRUNCATED_SUFFIX,
};
use crate::error::{Error, Result};
use crate::value::{utf16_len, EdmType, Row, Value};

/// UTF-16 units kept when a string is trimmed.
const TRIM_KEEP_UNITS: usize = 30_000;

impl TableValue for String {
    const KIND: ValueKind = ValueKind::Cell(EdmType::String);

    #[inline]
    fn encode(&self, column: &str, row: &mut Row, options: &EncodeOptions) -> Result<()> {
        // UTF-16 units never outnumber UTF-8 bytes: a short string needs no count.
        if self.len() * 2 <= MAX_CELL_BYTES {
            row.insert(column, Value::String(self.clone()));
            return Ok(());
        }
        encode_long_string(self, column, row, options)
    }

    #[inline]
    fn decode(row: &mut Row, column: &str) -> Result<Self> {
        match row.take(column) {
            Some(Value::String(s)) => Ok(s),
            other => decode_string_slow(row, column, other),
        }
    }

    #[inline]
    fn decode_cell(cell: Option<Value>, column: &str) -> Result<Self> {
        match cell {
            Some(Value::String(s)) => Ok(s),
            other => super::decode_in_row(other, column),
        }
    }

    #[inline]
    fn decode_present(row: &mut Row, column: &str) -> Result<Option<Self>> {
        match row.take(column) {
            Some(Value::String(s)) => Ok(Some(s)),
            None if !has_any_form(row, column) => Ok(None),
            other => decode_string_slow(row, column, other).map(Some),
        }
    }
}

/// [`String`]'s encode past its fast path: a string too long to be sure it fits a cell.
#[cold]
#[inline(never)]
fn encode_long_string(s: &str, column: &str, row: &mut Row, options: &EncodeOptions) -> Result<()> {
    let units = utf16_len(s);
    if units * 2 <= MAX_CELL_BYTES {
        row.insert(column, Value::String(s.to_owned()));
        return Ok(());
    }
    // Too large for one cell: gzip the JSON string literal, as the .NET library does.
    let literal = serde_json::to_string(s).map_err(|e| Error::InvalidValue {
        column: column.to_owned(),
        reason: e.to_string(),
    })?;
    let packed = gzip_base64(literal.as_bytes());
    if packed.len() * 2 <= MAX_CELL_BYTES {
        row.insert(format!("{column}{GZIP_SUFFIX}"), Value::String(packed));
        return Ok(());
    }
    match options.oversized {
        OversizedCellPolicy::Refuse => Err(Error::OversizedValue {
            column: format!("{column}{GZIP_SUFFIX}"),
            bytes: packed.len() * 2,
            limit: MAX_CELL_BYTES,
            reason: format!(
                "a string of {units} UTF-16 units does not fit one cell even compressed; mark the field #[table(split = \"text\")] or #[table(split = \"gzip\")] to store it at any size, or choose OversizedCellPolicy::TrimWithMarker"
            ),
        }),
        policy => {
            let (kept, text) = trim_string(s, units);
            row.insert(column, Value::String(text));
            if policy == OversizedCellPolicy::TrimWithMarker {
                row.insert(
                    format!("{column}{TRUNCATED_SUFFIX}"),
                    Value::String(format!("kept {kept} of {units} chars")),
                );
            }
            Ok(())
        }
    }
}

/// [`String`]'s decode when the plain cell is not a string: a type
/// mismatch, or the `__GZip` / `__Json` forms, or absent (empty).
#[cold]
#[inline(never)]
fn decode_string_slow(row: &mut Row, column: &str, plain: Option<Value>) -> Result<String> {
    match plain {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(type_mismatch(column, "a string", &other)),
        None => {
            if let Some(cell) = row.properties.remove_suffixed(column, GZIP_SUFFIX) {
                let bytes = gunzip_cell(column, &cell)?;
                return serde_json::from_slice(&bytes).map_err(|e| Error::Decode {
                    column: format!("{column}{GZIP_SUFFIX}"),
                    expected: "a compressed JSON string".into(),
                    found: e.to_string(),
                });
            }
            match row.properties.remove_suffixed(column, JSON_SUFFIX) {
                Some(Value::String(json)) => serde_json::from_str(&json).map_err(|e| Error::Decode {
                    column: format!("{column}{JSON_SUFFIX}"),
                    expected: "a JSON string".into(),
                    found: e.to_string(),
                }),
                Some(other) => Err(type_mismatch(
                    &format!("{column}{JSON_SUFFIX}"),
                    "a string cell holding a JSON string",
                    &other,
                )),
                None => Ok(String::new()),
            }
        }
    }
}

/// The cell a scalar field reads, and the column to name in errors about it.
pub(super) struct ScalarCell {
    pub(super) value: Value,
    /// `Some` when the value came from a `{Col}__Json` or `{Col}__GZip` cell.
    pub(super) json_column: Option<String>,
}

impl ScalarCell {
    pub(super) fn column<'a>(&'a self, column: &'a str) -> &'a str {
        self.json_column.as_deref().unwrap_or(column)
    }
}

/// Takes the cell of a scalar field: the plain column, or else a
/// `{Col}__Json` (or `{Col}__GZip`) cell holding one JSON number, string or
/// boolean. The .NET library stores `short`, `ushort`, `sbyte`, `char` and
/// `float` that way (`5`, `"a"`, `1.5`). A JSON integer reads as an Int64
/// cell (or as its digits when above `i64::MAX`), a fraction as a Double, a
/// string as a String. Any other JSON is a [`Error::Decode`] naming the cell.
#[inline]
pub(super) fn take_scalar(row: &mut Row, column: &str) -> Result<Option<ScalarCell>> {
    let plain = row.take(column);
    scalar_cell(row, column, plain)
}

/// [`take_scalar`] with the plain column already taken (`plain`): the fast
/// paths of the scalars' decoders take it first and come here for the rest.
#[inline]
pub(super) fn scalar_cell(row: &mut Row, column: &str, plain: Option<Value>) -> Result<Option<ScalarCell>> {
    match plain {
        Some(value) => Ok(Some(ScalarCell {
            value,
            json_column: None,
        })),
        None => take_scalar_json(row, column),
    }
}

/// [`take_scalar`] when the plain column is absent: the JSON forms, if any.
#[cold]
#[inline(never)]
fn take_scalar_json(row: &mut Row, column: &str) -> Result<Option<ScalarCell>> {
    let (name, text) = if let Some(cell) = row.properties.remove_suffixed(column, JSON_SUFFIX) {
        let name = format!("{column}{JSON_SUFFIX}");
        match cell {
            Value::String(text) => (name, text),
            other => return Err(type_mismatch(&name, "a string cell holding JSON", &other)),
        }
    } else if let Some(cell) = row.properties.remove_suffixed(column, GZIP_SUFFIX) {
        let bytes = gunzip_cell(column, &cell)?;
        let name = format!("{column}{GZIP_SUFFIX}");
        match String::from_utf8(bytes) {
            Ok(text) => (name, text),
            Err(_) => {
                return Err(Error::Decode {
                    column: name,
                    expected: "gzip of UTF-8 JSON".into(),
                    found: "bytes that are not UTF-8".into(),
                })
            }
        }
    } else {
        return Ok(None);
    };
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| Error::Decode {
        column: name.clone(),
        expected: "JSON holding one number, string or boolean".into(),
        found: format!("text that is not JSON ({e})"),
    })?;
    let value = match json {
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(v), _, _) => Value::Int64(v),
            (None, Some(v), _) => Value::String(v.to_string()),
            (None, None, Some(v)) => Value::Double(v),
            _ => Value::String(n.to_string()),
        },
        serde_json::Value::String(s) => Value::String(s),
        serde_json::Value::Bool(b) => Value::Bool(b),
        other => {
            let found = crate::value::wire::short_text(&other.to_string());
            return Err(Error::Decode {
                column: name,
                expected: "JSON holding one number, string or boolean".into(),
                found: format!("the JSON {found}"),
            });
        }
    };
    Ok(Some(ScalarCell {
        value,
        json_column: Some(name),
    }))
}

/// Keeps the first 30,000 UTF-16 units (one fewer if that would split a
/// surrogate pair) and appends the truncation note. Returns (kept, text).
fn trim_string(s: &str, total_units: usize) -> (usize, String) {
    let mut kept_units = 0;
    let mut end = 0;
    for (i, c) in s.char_indices() {
        let w = c.len_utf16();
        if kept_units + w > TRIM_KEEP_UNITS {
            break;
        }
        kept_units += w;
        end = i + c.len_utf8();
    }
    let dropped = total_units - kept_units;
    (
        kept_units,
        format!(
            "{}\n\u{2026}[truncated {dropped} chars to fit table storage]",
            &s[..end]
        ),
    )
}

impl TableValue for char {
    const KIND: ValueKind = ValueKind::Cell(EdmType::String);

    #[inline]
    fn encode(&self, column: &str, row: &mut Row, _: &EncodeOptions) -> Result<()> {
        row.insert(column, Value::String(self.to_string()));
        Ok(())
    }

    fn decode(row: &mut Row, column: &str) -> Result<Self> {
        let Some(cell) = take_scalar(row, column)? else {
            return Ok('\0');
        };
        let column = cell.column(column);
        match &cell.value {
            Value::String(s) => {
                let mut chars = s.chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) => Ok(c),
                    _ => Err(type_mismatch(column, "a one-character string", &cell.value)),
                }
            }
            other => Err(type_mismatch(column, "a one-character string", other)),
        }
    }
}

impl TableValue for bool {
    const KIND: ValueKind = ValueKind::Cell(EdmType::Boolean);

    #[inline]
    fn encode(&self, column: &str, row: &mut Row, _: &EncodeOptions) -> Result<()> {
        row.insert(column, Value::Bool(*self));
        Ok(())
    }

    #[inline]
    fn decode(row: &mut Row, column: &str) -> Result<Self> {
        match row.take(column) {
            Some(Value::Bool(b)) => Ok(b),
            plain => decode_bool(row, column, plain),
        }
    }
}

/// `bool`'s decode past its fast path.
#[cold]
#[inline(never)]
fn decode_bool(row: &mut Row, column: &str, plain: Option<Value>) -> Result<bool> {
    match scalar_cell(row, column, plain)? {
        Some(ScalarCell {
            value: Value::Bool(b), ..
        }) => Ok(b),
        Some(cell) => Err(type_mismatch(cell.column(column), "a Boolean", &cell.value)),
        None => Ok(false),
    }
}

/// Takes the cell of a scalar field as a value: the plain column, or the one
/// JSON number, string or boolean of a `{Col}__Json` or `{Col}__GZip` cell
/// (how the .NET library stores `short`, `char`, `float`); `None` when no
/// form is present.
#[inline]
pub fn take_scalar_value(row: &mut Row, column: &str) -> Result<Option<Value>> {
    match row.take(column) {
        Some(value) => Ok(Some(value)),
        None => Ok(take_scalar_json(row, column)?.map(|cell| cell.value)),
    }
}
