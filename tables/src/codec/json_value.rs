//! [`JsonValue`]: the one bound every JSON-stored field's type must meet,
//! so that a type without serde's traits is one compile error, on the field.

use serde::{de::DeserializeOwned, Serialize};

use super::EncodeOptions;
use crate::error::{Error, Result};
use crate::value::Row;

/// A type stored as one JSON value: a `#[table(json)]` field, or a
/// JSON-stored `#[table(split)]` value. Implemented for every type that
/// implements serde's `Serialize` and `Deserialize`; the derive reaches the
/// JSON codec only through this trait, so a type without them is reported
/// once, on the field, with the remedy.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use unified_tables::JsonValue;
///
/// #[derive(Serialize, Deserialize)]
/// struct Preferences { theme: String }
///
/// fn stored_as_json<T: JsonValue>() {}
/// stored_as_json::<Preferences>();
/// stored_as_json::<Option<Vec<Preferences>>>();
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is stored as JSON, but it does not implement serde's `Serialize` and `Deserialize`",
    label = "a JSON-stored field needs a serde type",
    note = "add `#[derive(serde::Serialize, serde::Deserialize)]` to `{Self}`; or, for a nested struct, add `#[derive(TableRecord)]` and mark the field `#[table(flatten)]` (see https://docs.rs/unified-tables/latest/unified_tables/derive.TableEntity.html#tablejson)"
)]
pub trait JsonValue: Sized {
    /// Writes the value as one JSON cell (`{Col}__Json`, or `{Col}__GZip` when large).
    #[doc(hidden)]
    fn encode_json_cell(&self, column: &str, row: &mut Row, options: &EncodeOptions) -> Result<()>;

    /// The value as JSON (for a JSON-stored large value).
    #[doc(hidden)]
    fn to_json(&self, column: &str) -> Result<serde_json::Value>;

    /// Reads the value back from whichever JSON form the row holds.
    #[doc(hidden)]
    fn decode_json_cell(row: &mut Row, column: &str) -> Result<Self>;
}

// Reported as "`T` is stored as JSON ..." rather than as serde's own traits.
#[diagnostic::do_not_recommend]
impl<T: Serialize + DeserializeOwned> JsonValue for T {
    fn encode_json_cell(&self, column: &str, row: &mut Row, options: &EncodeOptions) -> Result<()> {
        super::encode_json(self, column, row, options)
    }

    fn to_json(&self, column: &str) -> Result<serde_json::Value> {
        serde_json::to_value(self).map_err(|e| Error::InvalidValue {
            column: column.to_owned(),
            reason: format!("cannot be written as JSON: {e}"),
        })
    }

    fn decode_json_cell(row: &mut Row, column: &str) -> Result<Self> {
        super::decode_json(row, column)
    }
}
