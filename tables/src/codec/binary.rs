//! Binary cells: `Vec<u8>` fields, also read from .NET's JSON lists of bytes.

use super::{type_mismatch, EncodeOptions, GZIP_SUFFIX, JSON_SUFFIX, MAX_CELL_BYTES};
use crate::error::{Error, Result};
use crate::value::{Row, Value};

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

/// Reads a byte field from an `Edm.Binary` cell, or from a `{Col}__Json` or
/// `{Col}__GZip` cell holding a JSON array of bytes (how the .NET library
/// stores a `List<byte>`); an absent column reads as empty.
pub fn decode_binary(row: &mut Row, column: &str) -> Result<Vec<u8>> {
    Ok(decode_optional_binary(row, column)?.unwrap_or_default())
}

/// [`decode_binary`] of an `Option` field: `None` when no form is present.
pub fn decode_optional_binary(row: &mut Row, column: &str) -> Result<Option<Vec<u8>>> {
    match row.take(column) {
        Some(Value::Binary(b)) => Ok(Some(b)),
        Some(other) => Err(type_mismatch(column, "binary", &other)),
        None => {
            let has_json = row.properties.get_suffixed(column, JSON_SUFFIX).is_some()
                || row.properties.get_suffixed(column, GZIP_SUFFIX).is_some();
            if has_json {
                super::json::take_json(row, column)
            } else {
                Ok(None)
            }
        }
    }
}
