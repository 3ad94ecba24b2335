//! Date cells: `Edm.DateTime` at 100 ns within 1601..9999, read from a
//! date cell or strictly parsed text.

use super::scalar::scalar_cell;
use super::{type_mismatch, EncodeOptions, TableValue, ValueKind};
use crate::error::{Error, Result};
use crate::value::{DateTime, EdmType, Row, Value};

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

/// Reads a date field's cell. Absent, it is the .NET library's default date,
/// the sentinel 1601-01-01T00:00:00Z.
#[inline]
fn take_datetime(row: &mut Row, column: &str) -> Result<DateTime> {
    match row.take(column) {
        Some(Value::DateTime(t)) => Ok(t),
        plain => datetime_of(row, column, plain),
    }
}

/// [`take_datetime`] past its fast path.
#[cold]
#[inline(never)]
fn datetime_of(row: &mut Row, column: &str, plain: Option<Value>) -> Result<DateTime> {
    let Some(cell) = scalar_cell(row, column, plain)? else {
        return Ok(DateTime::MIN_STORABLE);
    };
    let column = cell.column(column);
    match &cell.value {
        Value::DateTime(t) => Ok(*t),
        // A date stored as a string still reads into a date field.
        Value::String(s) => DateTime::try_parse(s).ok_or_else(|| type_mismatch(column, "a DateTime", &cell.value)),
        other => Err(type_mismatch(column, "a DateTime", other)),
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
    ($t:ty, $unix_nanos:expr, $from:expr) => {
        impl TableValue for $t {
            const KIND: ValueKind = ValueKind::Cell(EdmType::DateTime);

            #[inline]
            fn encode(&self, column: &str, row: &mut Row, _: &EncodeOptions) -> Result<()> {
                // Values far outside the range clamp in the conversion; compare the raw instant too.
                let unix_nanos: fn(&$t) -> i128 = $unix_nanos;
                check_not_after_max(column, unix_nanos(self))?;
                let t = DateTime::from(*self);
                row.insert(column, Value::DateTime(check_storable(column, t)?));
                Ok(())
            }

            fn decode(row: &mut Row, column: &str) -> Result<Self> {
                let from: fn(&str, DateTime) -> Result<$t> = $from;
                from(column, take_datetime(row, column)?)
            }
        }
    };
}

impl TableValue for DateTime {
    const KIND: ValueKind = ValueKind::Cell(EdmType::DateTime);

    #[inline]
    fn encode(&self, column: &str, row: &mut Row, _: &EncodeOptions) -> Result<()> {
        row.insert(column, Value::DateTime(check_storable(column, *self)?));
        Ok(())
    }

    #[inline]
    fn decode(row: &mut Row, column: &str) -> Result<Self> {
        take_datetime(row, column)
    }
}

datetime_cell!(
    std::time::SystemTime,
    |t| match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(e) => -(e.duration().as_nanos() as i128),
    },
    // Some platforms' clocks cannot hold every instant from year 1 (Windows starts at 1601).
    |column, t| {
        let nanos = t.unix_nanos();
        let span = std::time::Duration::new(
            u64::try_from(nanos.unsigned_abs() / 1_000_000_000).unwrap_or(u64::MAX),
            (nanos.unsigned_abs() % 1_000_000_000) as u32,
        );
        let at = if nanos >= 0 {
            std::time::UNIX_EPOCH.checked_add(span)
        } else {
            std::time::UNIX_EPOCH.checked_sub(span)
        };
        at.ok_or_else(|| Error::Decode {
            column: column.to_owned(),
            expected: "an instant this platform's SystemTime can hold".into(),
            found: t.to_string(),
        })
    }
);
#[cfg(feature = "chrono")]
datetime_cell!(
    chrono::DateTime<chrono::Utc>,
    |t| { i128::from(t.timestamp()) * 1_000_000_000 + i128::from(t.timestamp_subsec_nanos()) },
    |_, t| Ok(t.into())
);
#[cfg(feature = "time")]
datetime_cell!(time::OffsetDateTime, |t| t.unix_timestamp_nanos(), |_, t| Ok(t.into()));
