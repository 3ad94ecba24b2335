//! Checks of a written row, with the service's status codes (all 400).

use crate::error::{Error, Result};
use crate::service::{
    is_refused_key_char, MAX_CELL_BYTES, MAX_ENTITY_BYTES, MAX_KEY_UNITS, MAX_PROPERTIES, MAX_PROPERTY_NAME_UNITS,
};
use crate::value::{utf16_len, Row, Value};

/// Names that are system properties and may not appear among the properties.
const SYSTEM_PROPERTIES: [&str; 3] = ["PartitionKey", "RowKey", "Timestamp"];

fn bad_request(code: &str, message: String) -> Error {
    Error::service(400, code, message)
}

/// A key or name for a message: shortened when very long.
fn shown(text: &str) -> String {
    const MAX_SHOWN: usize = 64;
    if text.chars().count() <= MAX_SHOWN {
        text.to_owned()
    } else {
        let head: String = text.chars().take(MAX_SHOWN).collect();
        format!("{head}… ({} UTF-16 units)", utf16_len(text))
    }
}

/// Checks one key: at most 1024 UTF-16 units, no `/ \ # ?` or control characters.
pub(super) fn check_key(which: &str, key: &str) -> Result<()> {
    let units = utf16_len(key);
    if units > MAX_KEY_UNITS {
        return Err(bad_request(
            "KeyValueTooLarge",
            format!(
                "The {which} `{}` is {units} UTF-16 units long; the property value is larger than the maximum allowed key size (2KB), i.e. {MAX_KEY_UNITS} characters.",
                shown(key)
            ),
        ));
    }
    if let Some(c) = key.chars().find(|c| is_refused_key_char(*c)) {
        return Err(bad_request(
            "OutOfRangeInput",
            format!(
                "The {which} `{}` contains the character {c:?}, which is not allowed in a key.",
                shown(key)
            ),
        ));
    }
    Ok(())
}

/// Checks a property name: a C#-style identifier of at most 255 characters,
/// and not one of the system properties.
fn check_property_name(name: &str) -> Result<()> {
    let units = utf16_len(name);
    if units > MAX_PROPERTY_NAME_UNITS {
        return Err(bad_request(
            "PropertyNameTooLong",
            format!(
                "The property name `{}` is {units} characters long; the maximum is {MAX_PROPERTY_NAME_UNITS}.",
                shown(name)
            ),
        ));
    }
    let mut chars = name.chars();
    let identifier =
        chars.next().is_some_and(|c| c == '_' || c.is_alphabetic()) && chars.all(|c| c == '_' || c.is_alphanumeric());
    if !identifier {
        return Err(bad_request(
            "PropertyNameInvalid",
            format!(
                "The property name `{}` is invalid: it must start with a letter or `_` and hold only letters, digits and `_`.",
                shown(name)
            ),
        ));
    }
    if SYSTEM_PROPERTIES.contains(&name) {
        return Err(bad_request(
            "PropertyNameInvalid",
            format!("The property name `{name}` is reserved for a system property."),
        ));
    }
    Ok(())
}

/// Checks one property value: cell size and DateTime range.
fn check_value(name: &str, value: &Value) -> Result<()> {
    let bytes = match value {
        Value::String(s) => utf16_len(s) * 2,
        Value::Binary(b) => b.len(),
        Value::DateTime(t) if !t.is_storable() => {
            return Err(bad_request(
                "InvalidInput",
                format!(
                    "The value {t} of property `{name}` is outside the range the service stores (1601-01-01T00:00:00Z to 9999-12-31T23:59:59.9999999Z)."
                ),
            ));
        }
        _ => 0,
    };
    if bytes > MAX_CELL_BYTES {
        return Err(bad_request(
            "PropertyValueTooLarge",
            format!(
                "The value of property `{name}` is {bytes} bytes; the property value exceeds the maximum allowed size (64KB). If the property value is a string, it is UTF-16 encoded and the maximum number of characters should be 32K or less."
            ),
        ));
    }
    Ok(())
}

/// Checks the whole-entity limits: property count and entity size.
pub(super) fn check_limits(row: &Row) -> Result<()> {
    let count = row.properties.len();
    if count > MAX_PROPERTIES {
        return Err(bad_request(
            "TooManyProperties",
            format!(
                "The entity (`{}`, `{}`) has {count} properties; the maximum is {MAX_PROPERTIES} besides PartitionKey, RowKey and Timestamp.",
                shown(&row.partition_key),
                shown(&row.row_key)
            ),
        ));
    }
    let size = row.stored_size();
    if size > MAX_ENTITY_BYTES {
        return Err(bad_request(
            "EntityTooLarge",
            format!(
                "The entity (`{}`, `{}`) is {size} bytes; the entity is larger than the maximum allowed size (1MB).",
                shown(&row.partition_key),
                shown(&row.row_key)
            ),
        ));
    }
    Ok(())
}

/// Checks a row sent for writing, as the service does before changing anything.
pub(super) fn check_row(row: &Row) -> Result<()> {
    check_key("PartitionKey", &row.partition_key)?;
    check_key("RowKey", &row.row_key)?;
    for name in row.properties.keys() {
        check_property_name(name)?;
    }
    if row.properties.len() > MAX_PROPERTIES {
        return check_limits(row);
    }
    for (name, value) in &row.properties {
        check_value(name, value)?;
    }
    check_limits(row)
}
