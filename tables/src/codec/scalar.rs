//! Native Edm cells: strings, numbers, booleans, decimals, binary; the
//! cell reader every scalar shares.

use super::json::{gunzip_base64, gzip_base64, GunzipError};
use super::{
    type_mismatch, with_suffixed, EncodeOptions, OversizedCellPolicy, TableValue, ValueKind, GZIP_SUFFIX, JSON_SUFFIX,
    MAX_CELL_BYTES, TRUNCATED_SUFFIX,
};
use crate::error::{Error, Result};
use crate::value::{utf16_len, EdmType, Row, Value};

/// UTF-16 units kept when a string is trimmed.
const TRIM_KEEP_UNITS: usize = 30_000;

impl TableValue for String {
    const KIND: ValueKind = ValueKind::Cell(EdmType::String);

    fn encode(&self, column: &str, row: &mut Row, options: &EncodeOptions) -> Result<()> {
        // UTF-16 units never outnumber UTF-8 bytes: a short string needs no count.
        if self.len() * 2 <= MAX_CELL_BYTES {
            row.insert(column, Value::String(self.clone()));
            return Ok(());
        }
        let units = utf16_len(self);
        if units * 2 <= MAX_CELL_BYTES {
            row.insert(column, Value::String(self.clone()));
            return Ok(());
        }
        // Too large for one cell: gzip the JSON string literal, as the .NET library does.
        let literal = serde_json::to_string(self).map_err(|e| Error::InvalidValue {
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
                let (kept, text) = trim_string(self, units);
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

    fn decode(row: &mut Row, column: &str) -> Result<Self> {
        match row.take(column) {
            Some(Value::String(s)) => Ok(s),
            Some(other) => Err(type_mismatch(column, "a string", &other)),
            None => {
                if let Some(cell) = with_suffixed(column, GZIP_SUFFIX, |name| row.take(name)) {
                    let bytes = gunzip_cell(column, &cell)?;
                    return serde_json::from_slice(&bytes).map_err(|e| Error::Decode {
                        column: format!("{column}{GZIP_SUFFIX}"),
                        expected: "a compressed JSON string".into(),
                        found: e.to_string(),
                    });
                }
                match with_suffixed(column, JSON_SUFFIX, |name| row.take(name)) {
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
}

/// Unpacks a `{Col}__GZip` cell: a damaged one is a [`Error::Decode`], one
/// that unpacks past [`super::MAX_GZIP_CELL_INFLATED_BYTES`] an [`Error::Integrity`].
pub(super) fn gunzip_cell(column: &str, cell: &Value) -> Result<Vec<u8>> {
    match cell {
        Value::String(text) => gunzip_base64(text).map_err(|e| match e {
            GunzipError::Damaged(reason) => Error::Decode {
                column: format!("{column}{GZIP_SUFFIX}"),
                expected: "base64 of gzip data".into(),
                found: reason,
            },
            GunzipError::TooLarge { limit } => Error::Integrity {
                column: format!("{column}{GZIP_SUFFIX}"),
                reason: format!(
                    "the gzip data unpacks to more than {limit} bytes, more than any cell the service accepts can hold"
                ),
            },
        }),
        other => Err(type_mismatch(&format!("{column}{GZIP_SUFFIX}"), "a string", other)),
    }
}

/// The cell a scalar field reads, and the column to name in errors about it.
pub(super) struct ScalarCell {
    pub(super) value: Value,
    /// `Some` when the value came from a `{Col}__Json` or `{Col}__GZip` cell.
    json_column: Option<String>,
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
pub(super) fn take_scalar(row: &mut Row, column: &str) -> Result<Option<ScalarCell>> {
    if let Some(value) = row.take(column) {
        return Ok(Some(ScalarCell {
            value,
            json_column: None,
        }));
    }
    let (name, text) = if let Some(cell) = with_suffixed(column, JSON_SUFFIX, |name| row.take(name)) {
        let name = format!("{column}{JSON_SUFFIX}");
        match cell {
            Value::String(text) => (name, text),
            other => return Err(type_mismatch(&name, "a string cell holding JSON", &other)),
        }
    } else if let Some(cell) = with_suffixed(column, GZIP_SUFFIX, |name| row.take(name)) {
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

    fn encode(&self, column: &str, row: &mut Row, _: &EncodeOptions) -> Result<()> {
        row.insert(column, Value::Bool(*self));
        Ok(())
    }

    fn decode(row: &mut Row, column: &str) -> Result<Self> {
        match take_scalar(row, column)? {
            Some(ScalarCell {
                value: Value::Bool(b), ..
            }) => Ok(b),
            Some(cell) => Err(type_mismatch(cell.column(column), "a Boolean", &cell.value)),
            None => Ok(false),
        }
    }
}

/// Reads any integer-like cell as an i128 for range-checked narrowing.
fn integer_of(column: &str, expected: &str, value: &Value) -> Result<i128> {
    match value {
        Value::Int32(v) => Ok(*v as i128),
        Value::Int64(v) => Ok(*v as i128),
        // A whole Double within i128's range; the range check then narrows it.
        Value::Double(d) if d.is_finite() && d.fract() == 0.0 && d.abs() < 1e38 => Ok(*d as i128),
        Value::String(s) => s.trim().parse().map_err(|_| type_mismatch(column, expected, value)),
        other => Err(type_mismatch(column, expected, other)),
    }
}

/// Integer cells: `$cell` is the Edm cell (`Int32` or `Int64`) and `$wire`
/// its Rust type; a value that does not fit (a `u64` above `i64::MAX`) is refused.
macro_rules! int_cell {
    ($cell:ident, $wire:ty: $($t:ty),*) => {$(
        impl TableValue for $t {
            const KIND: ValueKind = ValueKind::Cell(EdmType::$cell);

            fn encode(&self, column: &str, row: &mut Row, _: &EncodeOptions) -> Result<()> {
                let v = <$wire>::try_from(*self).map_err(|_| Error::InvalidValue {
                    column: column.to_owned(),
                    reason: format!(
                        "{} is above {}, the largest integer the service stores (Edm.Int64); use i64, or keep the value as a String",
                        self, i64::MAX
                    ),
                })?;
                row.insert(column, Value::$cell(v));
                Ok(())
            }

            fn decode(row: &mut Row, column: &str) -> Result<Self> {
                decode_integer(row, column, stringify!($t), false)
            }
        }
    )*};
}

/// Reads an integer field from any integer-like cell (see [`integer_of`]),
/// refusing a value outside the type's range. With `one_byte_binary`, an
/// `Edm.Binary` cell of exactly one byte also reads (how the .NET library
/// stores a `byte`).
fn decode_integer<T: TryFrom<i128> + Default>(
    row: &mut Row,
    column: &str,
    expected: &str,
    one_byte_binary: bool,
) -> Result<T> {
    let Some(cell) = take_scalar(row, column)? else {
        return Ok(T::default());
    };
    let column = cell.column(column);
    let n = match &cell.value {
        Value::Binary(b) if one_byte_binary && b.len() == 1 => i128::from(b[0]),
        Value::Binary(b) if one_byte_binary => {
            return Err(Error::Decode {
                column: column.to_owned(),
                expected: format!("{expected} (an integer cell, or a binary cell of one byte)"),
                found: format!("a binary cell of {} bytes", b.len()),
            })
        }
        v => integer_of(column, expected, v)?,
    };
    T::try_from(n).map_err(|_| Error::Decode {
        column: column.to_owned(),
        expected: expected.to_owned(),
        found: format!("{n}, out of its range"),
    })
}

int_cell!(Int32, i32: i8, i16, i32, u16);
int_cell!(Int64, i64: i64, u32, isize, usize);

impl TableValue for u8 {
    const KIND: ValueKind = ValueKind::Cell(EdmType::Int32);

    fn encode(&self, column: &str, row: &mut Row, _: &EncodeOptions) -> Result<()> {
        row.insert(column, Value::Int32(i32::from(*self)));
        Ok(())
    }

    fn decode(row: &mut Row, column: &str) -> Result<Self> {
        decode_integer(row, column, "u8", true)
    }
}
impl TableValue for u64 {
    const KIND: ValueKind = ValueKind::Cell(EdmType::Int64);

    fn encode(&self, column: &str, row: &mut Row, _: &EncodeOptions) -> Result<()> {
        let v = i64::try_from(*self).map_err(|_| Error::InvalidValue {
            column: column.to_owned(),
            reason: format!(
                "{self} is above {}, the largest integer the service stores (Edm.Int64); use i64, or keep the value as a String",
                i64::MAX
            ),
        })?;
        row.insert(column, Value::Int64(v));
        Ok(())
    }

    fn decode(row: &mut Row, column: &str) -> Result<Self> {
        match take_scalar(row, column)? {
            None => Ok(0),
            // A negative Int64 cell is how the .NET library stores a ulong above i64::MAX.
            Some(ScalarCell {
                value: Value::Int64(v),
                json_column: None,
            }) => Ok(v as u64),
            Some(cell) => {
                let column = cell.column(column);
                let n = integer_of(column, "u64", &cell.value)?;
                u64::try_from(n).map_err(|_| Error::Decode {
                    column: column.to_owned(),
                    expected: "u64".into(),
                    found: format!("{n}, out of its range"),
                })
            }
        }
    }
}

fn double_of(column: &str, value: &Value) -> Result<f64> {
    match value {
        Value::Double(d) => Ok(*d),
        Value::Int32(v) => Ok(f64::from(*v)),
        Value::Int64(v) => Ok(*v as f64),
        Value::String(s) => s.trim().parse().map_err(|_| type_mismatch(column, "a Double", value)),
        other => Err(type_mismatch(column, "a Double", other)),
    }
}

impl TableValue for f64 {
    const KIND: ValueKind = ValueKind::Cell(EdmType::Double);

    fn encode(&self, column: &str, row: &mut Row, _: &EncodeOptions) -> Result<()> {
        row.insert(column, Value::Double(*self));
        Ok(())
    }

    fn decode(row: &mut Row, column: &str) -> Result<Self> {
        match take_scalar(row, column)? {
            None => Ok(0.0),
            Some(cell) => double_of(cell.column(column), &cell.value),
        }
    }
}

impl TableValue for f32 {
    const KIND: ValueKind = ValueKind::Cell(EdmType::Double);

    fn encode(&self, column: &str, row: &mut Row, _: &EncodeOptions) -> Result<()> {
        row.insert(column, Value::Double(*self as f64));
        Ok(())
    }

    fn decode(row: &mut Row, column: &str) -> Result<Self> {
        let Some(cell) = take_scalar(row, column)? else {
            return Ok(0.0);
        };
        let column = cell.column(column);
        let d = double_of(column, &cell.value)?;
        let f = d as f32;
        if f.is_infinite() && d.is_finite() {
            return Err(Error::Decode {
                column: column.to_owned(),
                expected: "an f32".into(),
                found: format!("{d}, out of its range"),
            });
        }
        Ok(f)
    }
}

#[cfg(feature = "decimal")]
impl TableValue for rust_decimal::Decimal {
    const KIND: ValueKind = ValueKind::Cell(EdmType::Double);

    fn encode(&self, column: &str, row: &mut Row, _: &EncodeOptions) -> Result<()> {
        use rust_decimal::prelude::ToPrimitive;
        let d = self.to_f64().ok_or_else(|| Error::InvalidValue {
            column: column.to_owned(),
            reason: format!("{self} cannot be represented as a Double"),
        })?;
        row.insert(column, Value::Double(d));
        Ok(())
    }

    fn decode(row: &mut Row, column: &str) -> Result<Self> {
        use rust_decimal::prelude::FromPrimitive;
        match take_scalar(row, column)? {
            None => Ok(rust_decimal::Decimal::ZERO),
            Some(cell) => {
                let column = cell.column(column);
                let d = double_of(column, &cell.value)?;
                rust_decimal::Decimal::from_f64(d).ok_or_else(|| Error::Decode {
                    column: column.to_owned(),
                    expected: "a decimal".into(),
                    found: format!("the Double {d}"),
                })
            }
        }
    }
}

/// Takes the cell of a scalar field as a value: the plain column, or the one
/// JSON number, string or boolean of a `{Col}__Json` or `{Col}__GZip` cell
/// (how the .NET library stores `short`, `char`, `float`); `None` when no
/// form is present.
pub fn take_scalar_value(row: &mut Row, column: &str) -> Result<Option<Value>> {
    Ok(take_scalar(row, column)?.map(|cell| cell.value))
}
