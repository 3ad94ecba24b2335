//! JSON cells: `{Col}__Json`, and `{Col}__GZip` (base64 of gzip over the
//! UTF-8 JSON) when the JSON would not fit one cell.

use serde::{de::DeserializeOwned, Serialize};

use super::gzip_cells::{gunzip_cell, gzip_base64};
use super::{
    suffixed, EncodeOptions, OversizedCellPolicy, TableValue, ValueKind, GZIP_SUFFIX, JSON_SUFFIX, MAX_CELL_BYTES,
    TRUNCATED_SUFFIX,
};
use crate::error::{Error, Result};
use crate::value::{case_insensitive_json, utf16_len, Row, Value};

/// Writes `value` as one JSON cell under `column` (`{column}__Json`, or
/// `{column}__GZip` when large), applying the oversized-cell policy.
pub fn encode_json<T: Serialize + ?Sized>(
    value: &T,
    column: &str,
    row: &mut Row,
    options: &EncodeOptions,
) -> Result<()> {
    let cannot = |e: serde_json::Error| Error::InvalidValue {
        column: column.to_owned(),
        reason: format!("cannot be written as JSON: {e}"),
    };
    // Serialize straight to text. Text that may hold an object goes through
    // `serde_json::Value`, whose maps are sorted, so that a field with a
    // HashMap inside encodes to the same cell every time.
    let mut text = serde_json::to_string(value).map_err(cannot)?;
    let mut json = None;
    if text.as_bytes().contains(&b'{') {
        let tree = serde_json::to_value(value).map_err(cannot)?;
        text = serde_json::to_string(&tree).map_err(cannot)?;
        json = Some(tree);
    }
    if text == "null" {
        // Nulls are never stored.
        return Ok(());
    }
    // UTF-16 units never outnumber UTF-8 bytes: short text needs no count.
    if text.len() * 2 <= MAX_CELL_BYTES || utf16_len(&text) * 2 <= MAX_CELL_BYTES {
        // The row's expected name, or one joined on the stack.
        super::insert_suffixed(row, column, JSON_SUFFIX, Value::String(text));
        return Ok(());
    }
    let packed = gzip_base64(text.as_bytes());
    if packed.len() * 2 <= MAX_CELL_BYTES {
        super::insert_suffixed(row, column, GZIP_SUFFIX, Value::String(packed));
        return Ok(());
    }
    let json = match json {
        Some(tree) => tree,
        None => serde_json::to_value(value).map_err(cannot)?,
    };
    let marker = format!("{column}{TRUNCATED_SUFFIX}");
    match (options.oversized, json) {
        (OversizedCellPolicy::Refuse, _) => Err(Error::OversizedValue {
            column: format!("{column}{GZIP_SUFFIX}"),
            bytes: packed.len() * 2,
            limit: MAX_CELL_BYTES,
            reason: "the JSON does not fit one cell even compressed; mark the field #[table(split = \"gzip\")] to store it at any size, or choose OversizedCellPolicy::TrimWithMarker".into(),
        }),
        (policy, serde_json::Value::Array(items)) => {
            let total = items.len();
            let mut n = total / 2;
            loop {
                let candidate = gzip_base64(serde_json::Value::Array(items[..n].to_vec()).to_string().as_bytes());
                if candidate.len() * 2 <= MAX_CELL_BYTES || n == 0 {
                    row.insert(format!("{column}{GZIP_SUFFIX}"), Value::String(candidate));
                    if policy == OversizedCellPolicy::TrimWithMarker {
                        row.insert(marker, Value::String(format!("kept {n} of {total} items")));
                    }
                    return Ok(());
                }
                n /= 2;
            }
        }
        (policy, _) => {
            if policy == OversizedCellPolicy::TrimWithMarker {
                row.insert(
                    marker,
                    Value::String("property dropped: compressed payload exceeds the 64 KB cell cap".into()),
                );
            }
            Ok(())
        }
    }
}

/// Reads a JSON cell written by [`encode_json`] (or by the .NET library).
/// An absent column reads as JSON `null` if the type accepts it.
pub fn decode_json<T: DeserializeOwned>(row: &mut Row, column: &str) -> Result<T> {
    match take_json(row, column)? {
        Some(value) => Ok(value),
        None => null_json(column),
    }
}

/// Takes and parses the JSON of `column` from whichever form holds it
/// (`__Json`, `__GZip`, or a plain string cell); `None` when no form is present.
/// Struct members and enum variants match in any letter case, as the .NET
/// library reads them (see [`case_insensitive_json`]).
pub(super) fn take_json<T: DeserializeOwned>(row: &mut Row, column: &str) -> Result<Option<T>> {
    // Column names are built only for error messages: probing the row does not allocate.
    let bad = |col: &str, e: serde_json::Error| Error::Decode {
        column: col.to_owned(),
        expected: format!("JSON for {}", std::any::type_name::<T>()),
        found: e.to_string(),
    };
    if let Some(cell) = row.properties.remove_suffixed(column, JSON_SUFFIX) {
        return match cell {
            Value::String(text) => case_insensitive_json::from_str(&text)
                .map(Some)
                .map_err(|e| bad(&suffixed(column, JSON_SUFFIX), e)),
            other => Err(super::type_mismatch(
                &suffixed(column, JSON_SUFFIX),
                "a JSON string",
                &other,
            )),
        };
    }
    if let Some(cell) = row.properties.remove_suffixed(column, GZIP_SUFFIX) {
        let bytes = gunzip_cell(column, &cell)?;
        return case_insensitive_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| bad(&suffixed(column, GZIP_SUFFIX), e));
    }
    match row.take(column) {
        Some(Value::String(text)) => case_insensitive_json::from_str(&text)
            .map(Some)
            .map_err(|e| bad(column, e)),
        Some(other) => Err(super::type_mismatch(
            column,
            &format!("a JSON cell `{column}{JSON_SUFFIX}` (or a string cell holding JSON)"),
            &other,
        )),
        None => Ok(None),
    }
}

/// The value of an absent JSON cell: `null` where the type takes it, else an
/// empty collection (`[]` or `{}`), as the .NET library leaves collections.
fn null_json<T: DeserializeOwned>(column: &str) -> Result<T> {
    serde_json::from_value(serde_json::Value::Null)
        .or_else(|_| serde_json::from_value(serde_json::Value::Array(Vec::new())))
        .or_else(|_| serde_json::from_value(serde_json::Value::Object(serde_json::Map::new())))
        .map_err(|_: serde_json::Error| super::absent(&suffixed(column, JSON_SUFFIX), "a JSON cell"))
}

macro_rules! json_container {
    ($( [$($gen:tt)*] $t:ty => $absent:expr ),* $(,)?) => {$(
        // Reported as "`Vec<X>` cannot be stored in a table column", not as serde's traits.
        #[diagnostic::do_not_recommend]
        impl<$($gen)*> TableValue for $t
        where
            $t: Serialize + DeserializeOwned,
        {
            const KIND: ValueKind = ValueKind::Json;

            fn encode(&self, column: &str, row: &mut Row, options: &EncodeOptions) -> Result<()> {
                encode_json(self, column, row, options)
            }

            fn decode(row: &mut Row, column: &str) -> Result<Self> {
                match take_json(row, column)? {
                    Some(value) => Ok(value),
                    None => {
                        let absent: fn(&str) -> Result<Self> = $absent;
                        absent(column)
                    }
                }
            }
        }
    )*};
}

fn absent_json<T>(column: &str) -> Result<T> {
    Err(super::absent(&format!("{column}{JSON_SUFFIX}"), "a JSON cell"))
}

// An absent collection reads as empty, as the .NET library leaves it.
json_container!(
    [T] Vec<T> => |_| Ok(Vec::new()),
    [T] std::collections::VecDeque<T> => |_| Ok(Default::default()),
    [T] std::collections::BTreeSet<T> => |_| Ok(Default::default()),
    [T, S: Default] std::collections::HashSet<T, S> => |_| Ok(Default::default()),
    [K, V] std::collections::BTreeMap<K, V> => |_| Ok(Default::default()),
    [K, V, S: Default] std::collections::HashMap<K, V, S> => |_| Ok(Default::default()),
    [T, const N: usize] [T; N] => absent_json,
    [A, B] (A, B) => absent_json,
    [A, B, C] (A, B, C) => absent_json,
    [A, B, C, D] (A, B, C, D) => absent_json,
    [] serde_json::Value => |_| Ok(serde_json::Value::Null),
    [] serde_json::Map<String, serde_json::Value> => |_| Ok(Default::default()),
);
