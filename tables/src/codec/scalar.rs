//! Native Edm cells: strings, numbers, booleans, instants, GUIDs, binary.

use super::json::{gunzip_base64, gzip_base64};
use super::{
    type_mismatch, with_suffixed, EncodeOptions, OversizedCellPolicy, TableValue, ValueKind, GZIP_SUFFIX, JSON_SUFFIX,
    MAX_CELL_BYTES, TRUNCATED_SUFFIX,
};
use crate::error::{Error, Result};
use crate::value::{utf16_len, DateTime, EdmType, Guid, Row, Value};

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
                if let Some(Value::String(json)) = with_suffixed(column, JSON_SUFFIX, |name| row.take(name)) {
                    return serde_json::from_str(&json).map_err(|e| Error::Decode {
                        column: format!("{column}{JSON_SUFFIX}"),
                        expected: "a JSON string".into(),
                        found: e.to_string(),
                    });
                }
                Ok(String::new())
            }
        }
    }
}

pub(super) fn gunzip_cell(column: &str, cell: &Value) -> Result<Vec<u8>> {
    match cell {
        Value::String(text) => gunzip_base64(text).map_err(|reason| Error::Decode {
            column: format!("{column}{GZIP_SUFFIX}"),
            expected: "base64 of gzip data".into(),
            found: reason,
        }),
        other => Err(type_mismatch(&format!("{column}{GZIP_SUFFIX}"), "a string", other)),
    }
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
        match row.take(column) {
            Some(Value::String(s)) => {
                let mut chars = s.chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) => Ok(c),
                    _ => Err(type_mismatch(column, "a one-character string", &Value::String(s))),
                }
            }
            Some(other) => Err(type_mismatch(column, "a one-character string", &other)),
            None => Ok('\0'),
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
        match row.take(column) {
            Some(Value::Bool(b)) => Ok(b),
            Some(other) => Err(type_mismatch(column, "a Boolean", &other)),
            None => Ok(false),
        }
    }
}

/// Reads any integer-like cell as an i128 for range-checked narrowing.
fn integer_of(column: &str, expected: &str, value: &Value) -> Result<i128> {
    match value {
        Value::Int32(v) => Ok(*v as i128),
        Value::Int64(v) => Ok(*v as i128),
        Value::Double(d) if d.fract() == 0.0 && d.is_finite() => Ok(*d as i128),
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
                match row.take(column) {
                    None => Ok(0),
                    Some(v) => {
                        let n = integer_of(column, stringify!($t), &v)?;
                        <$t>::try_from(n).map_err(|_| Error::Decode {
                            column: column.to_owned(),
                            expected: stringify!($t).to_owned(),
                            found: format!("{n}, out of its range"),
                        })
                    }
                }
            }
        }
    )*};
}

int_cell!(Int32, i32: i8, i16, i32, u8, u16);
int_cell!(Int64, i64: i64, u32, isize, usize);

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
        match row.take(column) {
            None => Ok(0),
            // A negative Int64 is how the .NET library stores a ulong above i64::MAX.
            Some(Value::Int64(v)) => Ok(v as u64),
            Some(v) => {
                let n = integer_of(column, "u64", &v)?;
                u64::try_from(n).map_err(|_| Error::Decode {
                    column: column.to_owned(),
                    expected: "u64".into(),
                    found: format!("{n}, out of its range"),
                })
            }
        }
    }
}

fn double_of(column: &str, value: Value) -> Result<f64> {
    match value {
        Value::Double(d) => Ok(d),
        Value::Int32(v) => Ok(v as f64),
        Value::Int64(v) => Ok(v as f64),
        Value::String(ref s) => s.trim().parse().map_err(|_| type_mismatch(column, "a Double", &value)),
        other => Err(type_mismatch(column, "a Double", &other)),
    }
}

impl TableValue for f64 {
    const KIND: ValueKind = ValueKind::Cell(EdmType::Double);

    fn encode(&self, column: &str, row: &mut Row, _: &EncodeOptions) -> Result<()> {
        row.insert(column, Value::Double(*self));
        Ok(())
    }

    fn decode(row: &mut Row, column: &str) -> Result<Self> {
        row.take(column).map_or(Ok(0.0), |v| double_of(column, v))
    }
}

impl TableValue for f32 {
    const KIND: ValueKind = ValueKind::Cell(EdmType::Double);

    fn encode(&self, column: &str, row: &mut Row, _: &EncodeOptions) -> Result<()> {
        row.insert(column, Value::Double(*self as f64));
        Ok(())
    }

    fn decode(row: &mut Row, column: &str) -> Result<Self> {
        row.take(column)
            .map_or(Ok(0.0), |v| double_of(column, v).map(|d| d as f32))
    }
}

fn check_storable(column: &str, t: DateTime) -> Result<DateTime> {
    if t.is_storable() {
        Ok(t)
    } else {
        Err(Error::InvalidValue {
            column: column.to_owned(),
            reason: format!(
                "{t} is outside the range the service stores (1601-01-01T00:00:00Z to 9999-12-31T23:59:59.9999999Z); use Option and None for 'no date'"
            ),
        })
    }
}

fn datetime_of(column: &str, value: Value) -> Result<DateTime> {
    match value {
        Value::DateTime(t) => Ok(t),
        // A date stored as a string still reads into a date field.
        Value::String(ref s) => DateTime::try_parse(s).ok_or_else(|| type_mismatch(column, "a DateTime", &value)),
        other => Err(type_mismatch(column, "a DateTime", &other)),
    }
}

/// Refuses an instant past the last storable tick, which the conversion to
/// `DateTime` would otherwise clamp to 9999-12-31T23:59:59.9999999Z.
fn check_not_after_max(column: &str, unix_nanos: i128) -> Result<()> {
    if unix_nanos < DateTime::MAX.unix_nanos() + 100 {
        return Ok(());
    }
    Err(Error::InvalidValue {
        column: column.to_owned(),
        reason: format!(
            "the instant {} s after the Unix epoch is outside the range the service stores (1601-01-01T00:00:00Z to 9999-12-31T23:59:59.9999999Z); use Option and None for 'no date'",
            unix_nanos.div_euclid(1_000_000_000)
        ),
    })
}

macro_rules! datetime_cell {
    ($t:ty, $unix_nanos:expr) => {
        impl TableValue for $t {
            const KIND: ValueKind = ValueKind::Cell(EdmType::DateTime);

            fn encode(&self, column: &str, row: &mut Row, _: &EncodeOptions) -> Result<()> {
                // Values far outside the range clamp in the conversion; compare the raw instant too.
                let unix_nanos: fn(&$t) -> i128 = $unix_nanos;
                check_not_after_max(column, unix_nanos(self))?;
                let t = DateTime::from(*self);
                row.insert(column, Value::DateTime(check_storable(column, t)?));
                Ok(())
            }

            fn decode(row: &mut Row, column: &str) -> Result<Self> {
                match row.take(column) {
                    None => Ok(<$t>::from(DateTime::MIN_STORABLE)),
                    Some(v) => datetime_of(column, v).map(<$t>::from),
                }
            }
        }
    };
}

impl TableValue for DateTime {
    const KIND: ValueKind = ValueKind::Cell(EdmType::DateTime);

    fn encode(&self, column: &str, row: &mut Row, _: &EncodeOptions) -> Result<()> {
        row.insert(column, Value::DateTime(check_storable(column, *self)?));
        Ok(())
    }

    fn decode(row: &mut Row, column: &str) -> Result<Self> {
        match row.take(column) {
            None => Ok(DateTime::MIN_STORABLE),
            Some(v) => datetime_of(column, v),
        }
    }
}

datetime_cell!(
    std::time::SystemTime,
    |t| match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(e) => -(e.duration().as_nanos() as i128),
    }
);
#[cfg(feature = "chrono")]
datetime_cell!(chrono::DateTime<chrono::Utc>, |t| {
    i128::from(t.timestamp()) * 1_000_000_000 + i128::from(t.timestamp_subsec_nanos())
});
#[cfg(feature = "time")]
datetime_cell!(time::OffsetDateTime, |t| t.unix_timestamp_nanos());

fn guid_of(column: &str, value: Value) -> Result<Guid> {
    match value {
        Value::Guid(g) => Ok(g),
        Value::String(ref s) => s.parse().map_err(|_| type_mismatch(column, "a Guid", &value)),
        other => Err(type_mismatch(column, "a Guid", &other)),
    }
}

impl TableValue for Guid {
    const KIND: ValueKind = ValueKind::Cell(EdmType::Guid);

    fn encode(&self, column: &str, row: &mut Row, _: &EncodeOptions) -> Result<()> {
        row.insert(column, Value::Guid(*self));
        Ok(())
    }

    fn decode(row: &mut Row, column: &str) -> Result<Self> {
        row.take(column).map_or(Ok(Guid::default()), |v| guid_of(column, v))
    }
}

#[cfg(feature = "uuid")]
impl TableValue for uuid::Uuid {
    const KIND: ValueKind = ValueKind::Cell(EdmType::Guid);

    fn encode(&self, column: &str, row: &mut Row, _: &EncodeOptions) -> Result<()> {
        row.insert(column, Value::Guid(Guid::from(*self)));
        Ok(())
    }

    fn decode(row: &mut Row, column: &str) -> Result<Self> {
        row.take(column)
            .map_or(Ok(uuid::Uuid::nil()), |v| guid_of(column, v).map(uuid::Uuid::from))
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
        match row.take(column) {
            None => Ok(rust_decimal::Decimal::ZERO),
            Some(v) => {
                let d = double_of(column, v)?;
                rust_decimal::Decimal::from_f64(d).ok_or_else(|| Error::Decode {
                    column: column.to_owned(),
                    expected: "a decimal".into(),
                    found: format!("the Double {d}"),
                })
            }
        }
    }
}

/// Writes a byte field as one `Edm.Binary` cell. (`Vec<u8>` fields use this
/// rather than the JSON route other `Vec`s take.)
pub fn encode_binary(bytes: &[u8], column: &str, row: &mut Row, _options: &EncodeOptions) -> Result<()> {
    if bytes.len() > MAX_CELL_BYTES {
        return Err(Error::OversizedValue {
            column: column.to_owned(),
            bytes: bytes.len(),
            limit: MAX_CELL_BYTES,
            reason:
                "binary cells cannot be trimmed; mark the field #[table(split = \"binary\")] to store it at any size"
                    .into(),
        });
    }
    row.insert(column, Value::Binary(bytes.to_vec()));
    Ok(())
}

/// Reads a byte field from an `Edm.Binary` cell; an absent column reads as empty.
pub fn decode_binary(row: &mut Row, column: &str) -> Result<Vec<u8>> {
    match row.take(column) {
        None => Ok(Vec::new()),
        Some(Value::Binary(b)) => Ok(b),
        Some(other) => Err(type_mismatch(column, "binary", &other)),
    }
}
