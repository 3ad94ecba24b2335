//! Number cells: the integer types, `f32`/`f64` and decimals, read from
//! any integer-like or numeric cell with range checks.

use super::scalar::{scalar_cell, take_scalar, ScalarCell};
use super::{type_mismatch, EncodeOptions, TableValue, ValueKind};
use crate::error::{Error, Result};
use crate::value::{EdmType, Row, Value};

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

            #[inline]
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

            #[inline]
            fn decode(row: &mut Row, column: &str) -> Result<Self> {
                let plain = row.take(column);
                if let Some(Value::$cell(v)) = plain {
                    #[allow(irrefutable_let_patterns, clippy::unnecessary_fallible_conversions, clippy::useless_conversion)]
                    if let Ok(n) = <$t>::try_from(v) {
                        return Ok(n);
                    }
                }
                decode_integer(row, column, plain, stringify!($t), false)
            }

            #[inline]
            fn decode_cell(cell: Option<Value>, column: &str) -> Result<Self> {
                if let Some(Value::$cell(v)) = cell {
                    #[allow(irrefutable_let_patterns, clippy::unnecessary_fallible_conversions, clippy::useless_conversion)]
                    if let Ok(n) = <$t>::try_from(v) {
                        return Ok(n);
                    }
                }
                super::decode_in_row(cell, column)
            }
        }
    )*};
}

/// Reads an integer field from any integer-like cell (see [`integer_of`]),
/// refusing a value outside the type's range. With `one_byte_binary`, an
/// `Edm.Binary` cell of exactly one byte also reads (how the .NET library
/// stores a `byte`).
#[cold]
#[inline(never)]
fn decode_integer<T: TryFrom<i128> + Default>(
    row: &mut Row,
    column: &str,
    plain: Option<Value>,
    expected: &str,
    one_byte_binary: bool,
) -> Result<T> {
    let Some(cell) = scalar_cell(row, column, plain)? else {
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

    #[inline]
    fn encode(&self, column: &str, row: &mut Row, _: &EncodeOptions) -> Result<()> {
        row.insert(column, Value::Int32(i32::from(*self)));
        Ok(())
    }

    fn decode(row: &mut Row, column: &str) -> Result<Self> {
        let plain = row.take(column);
        decode_integer(row, column, plain, "u8", true)
    }
}
impl TableValue for u64 {
    const KIND: ValueKind = ValueKind::Cell(EdmType::Int64);

    #[inline]
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

/// `f64`'s decode past its fast path.
#[cold]
#[inline(never)]
fn decode_double(row: &mut Row, column: &str, plain: Option<Value>) -> Result<f64> {
    match scalar_cell(row, column, plain)? {
        None => Ok(0.0),
        Some(cell) => double_of(cell.column(column), &cell.value),
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

    #[inline]
    fn encode(&self, column: &str, row: &mut Row, _: &EncodeOptions) -> Result<()> {
        row.insert(column, Value::Double(*self));
        Ok(())
    }

    #[inline]
    fn decode(row: &mut Row, column: &str) -> Result<Self> {
        match row.take(column) {
            Some(Value::Double(d)) => Ok(d),
            plain => decode_double(row, column, plain),
        }
    }

    #[inline]
    fn decode_cell(cell: Option<Value>, column: &str) -> Result<Self> {
        match cell {
            Some(Value::Double(d)) => Ok(d),
            other => super::decode_in_row(other, column),
        }
    }
}

impl TableValue for f32 {
    const KIND: ValueKind = ValueKind::Cell(EdmType::Double);

    #[inline]
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
#[cfg_attr(docsrs, doc(cfg(feature = "decimal")))]
impl TableValue for rust_decimal::Decimal {
    const KIND: ValueKind = ValueKind::Cell(EdmType::Double);

    #[inline]
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
