//! Checks of a written row and of a transaction, made before anything is
//! written, with the service's status codes.

use std::collections::HashSet;

use crate::backend::WriteOp;
use crate::error::{Error, Result};
use crate::service::{
    is_refused_key_char, MAX_CELL_BYTES, MAX_ENTITY_BYTES, MAX_KEY_UNITS, MAX_PROPERTIES, MAX_PROPERTY_NAME_UNITS,
    MAX_TRANSACTION_BYTES, MAX_TRANSACTION_OPS,
};
use crate::value::{utf16_len, wire, Row, Value};

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

/// The bytes a transaction's multipart envelope is counted at, per operation.
const ENVELOPE_BYTES_PER_OP: usize = 200;

/// Checks the row an operation writes, and its keys for a delete.
pub(super) fn check_op(op: &WriteOp) -> Result<()> {
    match op.row() {
        Some(row) => check_row(row),
        None => {
            let (partition_key, row_key) = op.keys();
            check_key("PartitionKey", partition_key)?;
            check_key("RowKey", row_key)
        }
    }
}

/// The bytes an operation adds to a transaction's request body: its row as
/// the JSON the service reads ([`wire::wire_size`], non-ASCII escaped as
/// every SDK sends it), its keys and the envelope.
pub(super) fn request_bytes(op: &WriteOp) -> usize {
    let (partition_key, row_key) = op.keys();
    let body = op.row().map_or(0, wire::wire_size);
    ENVELOPE_BYTES_PER_OP + partition_key.len() + row_key.len() + body
}

pub(super) fn failed_at(index: usize, source: Error) -> Error {
    Error::Transaction {
        index,
        source: Box::new(source),
    }
}

/// The checks the service makes while reading a transaction, before running
/// any of it: operation count, body size, one partition, each row once, and
/// every row valid.
pub(super) fn check_transaction(ops: &[WriteOp]) -> Result<()> {
    if ops.is_empty() {
        return Err(failed_at(
            0,
            bad_request("InvalidInput", "The batch request contains no operations.".into()),
        ));
    }
    let bytes: usize = ops.iter().map(request_bytes).sum();
    if bytes > MAX_TRANSACTION_BYTES {
        return Err(Error::service(
            413,
            "RequestBodyTooLarge",
            format!("The request body is too large ({bytes} bytes) and exceeds the maximum permissible limit ({MAX_TRANSACTION_BYTES} bytes)."),
        ));
    }
    if ops.len() > MAX_TRANSACTION_OPS {
        return Err(failed_at(
            MAX_TRANSACTION_OPS - 1,
            bad_request("InvalidInput", format!(
                "The batch request operation holds {} changes and exceeds the maximum {MAX_TRANSACTION_OPS} changes per change set.",
                ops.len()
            )),
        ));
    }
    let partition = ops[0].keys().0;
    let mut seen: HashSet<(&str, &str)> = HashSet::with_capacity(ops.len());
    for (index, op) in ops.iter().enumerate() {
        let (partition_key, row_key) = op.keys();
        if partition_key != partition {
            return Err(failed_at(
                index,
                Error::service(
                    400,
                    "CommandsInBatchActOnDifferentPartitions",
                    format!("All commands in a batch must operate on same entity group: PartitionKey `{partition_key}` differs from `{partition}`."),
                ),
            ));
        }
        if !seen.insert((partition_key, row_key)) {
            return Err(failed_at(
                index,
                Error::service(
                    400,
                    "InvalidDuplicateRow",
                    format!("The batch request contains multiple changes with same row key `{row_key}`. An entity can appear only once in a batch request."),
                ),
            ));
        }
        check_op(op).map_err(|e| failed_at(index, e))?;
    }
    Ok(())
}
