//! GUID cells: `Edm.Guid`, or text in one of the strict GUID forms.

use super::scalar::take_scalar;
use super::{type_mismatch, EncodeOptions, TableValue, ValueKind};
use crate::error::Result;
use crate::value::{EdmType, Guid, Row, Value};

/// Reads a GUID field's cell; absent, it is the nil GUID.
fn take_guid(row: &mut Row, column: &str) -> Result<Guid> {
    let Some(cell) = take_scalar(row, column)? else {
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

    fn encode(&self, column: &str, row: &mut Row, _: &EncodeOptions) -> Result<()> {
        row.insert(column, Value::Guid(*self));
        Ok(())
    }

    fn decode(row: &mut Row, column: &str) -> Result<Self> {
        take_guid(row, column)
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
        take_guid(row, column).map(uuid::Uuid::from)
    }
}
