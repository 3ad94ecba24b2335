//! GUID cells: `Edm.Guid`, or text in one of the strict GUID forms.

use super::scalar::scalar_cell;
use super::{type_mismatch, EncodeOptions, TableValue, ValueKind};
use crate::error::Result;
use crate::value::{EdmType, Guid, Row, Value};

/// Reads a GUID field's cell; absent, it is the nil GUID.
#[inline]
fn take_guid(row: &mut Row, column: &str) -> Result<Guid> {
    match row.take(column) {
        Some(Value::Guid(g)) => Ok(g),
        plain => guid_of(row, column, plain),
    }
}

/// [`take_guid`] past its fast path.
#[cold]
#[inline(never)]
fn guid_of(row: &mut Row, column: &str, plain: Option<Value>) -> Result<Guid> {
    let Some(cell) = scalar_cell(row, column, plain)? else {
        return Ok(Guid::default());
    };
    let column = cell.column(column);
    match &cell.value {
        Value::Guid(g) => Ok(*g),
        Value::String(s) => s.parse().map_err(|_| {
            type_mismatch(
                column,
                "a Guid (or a string xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)",
                &cell.value,
            )
        }),
        other => Err(type_mismatch(column, "a Guid", other)),
    }
}

impl TableValue for Guid {
    const KIND: ValueKind = ValueKind::Cell(EdmType::Guid);

    #[inline]
    fn encode(&self, column: &str, row: &mut Row, _: &EncodeOptions) -> Result<()> {
        row.insert(column, Value::Guid(*self));
        Ok(())
    }

    #[inline]
    fn decode(row: &mut Row, column: &str) -> Result<Self> {
        take_guid(row, column)
    }
}

#[cfg(feature = "uuid")]
#[cfg_attr(docsrs, doc(cfg(feature = "uuid")))]
impl TableValue for uuid::Uuid {
    const KIND: ValueKind = ValueKind::Cell(EdmType::Guid);

    #[inline]
    fn encode(&self, column: &str, row: &mut Row, _: &EncodeOptions) -> Result<()> {
        row.insert(column, Value::Guid(Guid::from(*self)));
        Ok(())
    }

    #[inline]
    fn decode(row: &mut Row, column: &str) -> Result<Self> {
        take_guid(row, column).map(uuid::Uuid::from)
    }
}
