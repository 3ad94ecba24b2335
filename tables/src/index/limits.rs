//! The service's limits applied to index rows, intents and the transaction
//! an entity's index rows join, before anything is sent: a row the service
//! would refuse is refused here with an error naming the index and its
//! fields and what to do, on every backend. Pure: no I/O.

use super::def::IndexDef;
use crate::backend::pack::op_weight;
use crate::backend::WriteOp;
use crate::error::{Error, KeyKind, Result};
use crate::layout::{
    INDEX_CONFIRMED, INDEX_INTENT, INDEX_KEYS, INDEX_OF, INDEX_PREFIX, INDEX_RESERVED_AT, INDEX_SEPARATOR, WRITE_TOKEN,
    WRITE_TOKEN_CHARS,
};
use crate::service::{MAX_CELL_BYTES, MAX_ENTITY_BYTES, MAX_KEY_UNITS, MAX_PROPERTIES, MAX_TRANSACTION_BYTES};
use crate::value::{utf16_len, Row, Value};

/// The index and its fields, as messages name them: ``index `email` on `Email` ``.
fn named(def: &IndexDef) -> String {
    let fields: Vec<String> = def.columns.iter().map(|c| format!("`{c}`")).collect();
    format!("index `{}` on {}", def.name, fields.join(", "))
}

/// The bytes a cell counts against the per-property limit, if it is a string or bytes.
fn cell_bytes(value: &Value) -> usize {
    match value {
        Value::String(s) => utf16_len(s) * 2,
        Value::Binary(b) => b.len(),
        _ => 0,
    }
}

/// The entity-size bytes of a cell named `name` holding a string of `units` UTF-16 units.
fn string_cell_size(name: &str, units: usize) -> usize {
    8 + 2 * utf16_len(name) + 4 + 2 * units
}

/// The cells a write adds to an index row after it is built (a unique
/// global row's reservation, the write token a request may carry): their
/// count and entity-size bytes.
fn added_cells(def: &IndexDef) -> (usize, usize) {
    let token = string_cell_size(WRITE_TOKEN, WRITE_TOKEN_CHARS);
    if def.global && def.unique {
        let at = 8 + 2 * utf16_len(INDEX_RESERVED_AT) + 8;
        let confirmed = 8 + 2 * utf16_len(INDEX_CONFIRMED) + 1;
        (2, token + at + confirmed)
    } else {
        (0, token)
    }
}

/// Refuses an index row of `def` that the service would refuse: more
/// properties than an entity may have, a cell over 64 KiB, a row over
/// 1 MiB. The keys are checked where they are made.
pub(crate) fn check_index_row(def: &IndexDef, row: &Row) -> Result<()> {
    let (more, more_bytes) = added_cells(def);
    let count = row.properties.len() + more;
    if count > MAX_PROPERTIES {
        return Err(Error::LimitExceeded {
            limit: "TooManyProperties",
            detail: format!(
                "a row of the {} would have {count} properties (the projected columns and the index's own) and the service allows at most {MAX_PROPERTIES}; project fewer columns, project(a, b) instead of project(all); nothing was written",
                named(def)
            ),
        });
    }
    if let Some((name, bytes)) = row
        .properties
        .iter()
        .map(|(name, v)| (name, cell_bytes(v)))
        .find(|(_, bytes)| *bytes > MAX_CELL_BYTES)
    {
        return Err(Error::LimitExceeded {
            limit: "PropertyValueTooLarge",
            detail: format!(
                "a row of the {} would hold {bytes} bytes in `{name}` and the service allows at most {MAX_CELL_BYTES} in one property; leave `{name}` out of the index's project(..); nothing was written",
                named(def)
            ),
        });
    }
    let size = row.stored_size() + more_bytes;
    if size > MAX_ENTITY_BYTES {
        let largest = row
            .properties
            .iter()
            .max_by_key(|(_, v)| v.stored_size())
            .map(|(k, v)| format!(" (largest: `{k}`, {} bytes)", v.stored_size()))
            .unwrap_or_default();
        return Err(Error::LimitExceeded {
            limit: "EntityTooLarge",
            detail: format!(
                "a row of the {} would be {size} bytes{largest} and the service allows at most {MAX_ENTITY_BYTES} in one entity; project fewer or smaller columns into the index; nothing was written",
                named(def)
            ),
        });
    }
    Ok(())
}

/// Refuses a key of an index row of `def` longer than the service allows.
pub(crate) fn check_index_key(def: &IndexDef, key: &str, kind: KeyKind) -> Result<()> {
    let units = utf16_len(key);
    if units <= MAX_KEY_UNITS {
        return Ok(());
    }
    Err(Error::InvalidValue {
        column: def.columns.join(", "),
        reason: format!(
            "the value is too long for the {}: its row's {kind} would be {units} UTF-16 units, at most {MAX_KEY_UNITS}; shorten the value or index a shorter field; nothing was written",
            named(def)
        ),
    })
}

/// The index a global index row's PartitionKey belongs to.
fn index_of_key(partition_key: &str) -> Option<&str> {
    partition_key.strip_prefix(INDEX_PREFIX)?.split(INDEX_SEPARATOR).next()
}

/// The global indexes an intent names, as messages name them: `` `a`, `b` ``.
fn intent_indexes(keys: &[(String, String)]) -> String {
    let mut names: Vec<&str> = keys.iter().filter_map(|(pk, _)| index_of_key(pk)).collect();
    names.sort_unstable();
    names.dedup();
    names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
}

/// Refuses an intent the service would refuse: a RowKey over 1 KiB (it
/// holds the entity's RowKey), or a list of index rows over 64 KiB.
pub(crate) fn check_intent(intent: &Row, entity_row_key: &str, keys: &[(String, String)]) -> Result<()> {
    let units = utf16_len(&intent.row_key);
    if units > MAX_KEY_UNITS {
        let extra = units - utf16_len(entity_row_key);
        return Err(Error::InvalidKey {
            which: KeyKind::RowKey,
            key: crate::service::shown(entity_row_key),
            reason: format!(
                "a write of an entity with global indexes ({}) keeps an intent in its partition, whose RowKey is the entity's RowKey in the index's text form and {extra} UTF-16 units more, at most {MAX_KEY_UNITS}: it would be {units}; shorten the RowKey (keys with characters the text form escapes take more), or make the indexes local; nothing was written",
                intent_indexes(keys)
            ),
        });
    }
    let bytes = intent.get(INDEX_KEYS).map_or(0, cell_bytes);
    if bytes > MAX_CELL_BYTES {
        return Err(Error::LimitExceeded {
            limit: "PropertyValueTooLarge",
            detail: format!(
                "a write of an entity with global indexes ({}) keeps an intent listing the {} index rows it changes in {bytes} bytes, and the service allows at most {MAX_CELL_BYTES} in one property; shorten the indexed values, or change fewer of them in one write; nothing was written",
                intent_indexes(keys),
                keys.len()
            ),
        });
    }
    Ok(())
}

/// Refuses the transaction of one entity (its rows, then its index rows
/// and intent) when its index rows push it past the service's 4 MiB body:
/// the entity's own rows are planned to fit it.
pub(crate) fn check_transaction(ops: &[WriteOp], budget: usize) -> Result<()> {
    let total: usize = ops.iter().map(op_weight).sum();
    if total <= budget {
        return Ok(());
    }
    let mut indexes: Vec<(&str, usize)> = Vec::new();
    for op in ops {
        let Some(name) = op.row().and_then(|r| r.get(INDEX_OF)).and_then(Value::as_str) else {
            continue;
        };
        if name == INDEX_INTENT {
            continue;
        }
        match indexes.iter_mut().find(|(n, _)| *n == name) {
            Some((_, bytes)) => *bytes += op_weight(op),
            None => indexes.push((name, op_weight(op))),
        }
    }
    if indexes.is_empty() {
        // Not the index rows' doing: the service's own answer names it.
        return Ok(());
    }
    let shown: Vec<String> = indexes
        .iter()
        .map(|(n, bytes)| format!("index `{n}` {bytes} bytes"))
        .collect();
    Err(Error::LimitExceeded {
        limit: "RequestBodyTooLarge",
        detail: format!(
            "the entity's transaction with its index rows ({}) would be about {total} bytes and the service takes at most {MAX_TRANSACTION_BYTES} in one; project fewer or smaller columns into these indexes; nothing was written",
            shown.join(", ")
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::pack::TRANSACTION_BODY_BUDGET;
    use crate::index::def::Projection;
    use crate::index::rows::{index_row, intent_row};

    const CITY: IndexDef = IndexDef {
        name: "city",
        columns: &["City"],
        unique: false,
        global: false,
        projection: Projection::All,
    };

    fn entity() -> Row {
        let mut row = Row::new("eu", "c1");
        row.insert("City", Value::String("Lviv".into()));
        row
    }

    #[test]
    fn an_index_row_over_a_limit_is_refused_naming_the_index_and_its_fields() {
        let mut many = entity();
        for i in 0..MAX_PROPERTIES - 1 {
            many.insert(format!("C{i}"), Value::Int32(1));
        }
        let err = index_row(&CITY, &many).unwrap_err();
        assert!(
            matches!(&err, Error::LimitExceeded { limit: "TooManyProperties", detail } if detail.contains("index `city` on `City`")),
            "{err}"
        );

        // An entity just inside the limit: its index row, with the index's own cells, is not.
        let mut big = entity();
        for i in 0..16 {
            big.insert(format!("C{i}"), Value::String("x".repeat(32_700)));
        }
        let left = MAX_ENTITY_BYTES - 100 - big.stored_size() - string_cell_size("Fill", 0);
        big.insert("Fill", Value::String("x".repeat(left / 2)));
        assert!(big.stored_size() <= MAX_ENTITY_BYTES);
        let err = index_row(&CITY, &big).unwrap_err();
        assert!(
            matches!(&err, Error::LimitExceeded { limit: "EntityTooLarge", detail } if detail.contains("index `city`")),
            "{err}"
        );

        let mut wide = entity();
        wide.insert("Blob", Value::Binary(vec![0; MAX_CELL_BYTES + 1]));
        let err = index_row(&CITY, &wide).unwrap_err();
        assert!(
            matches!(&err, Error::LimitExceeded { limit: "PropertyValueTooLarge", detail } if detail.contains("`Blob`")),
            "{err}"
        );

        let keys_only = IndexDef {
            projection: Projection::Keys,
            ..CITY
        };
        assert!(index_row(&keys_only, &big).unwrap().is_some());
    }

    #[test]
    fn an_intent_over_a_limit_is_refused_naming_the_global_indexes() {
        let keys = vec![("~ix|reporter|bob!".to_owned(), "eu!c1".to_owned())];
        let long = "r".repeat(1000);
        let err = intent_row("eu", &long, "0123456789012345678901", &keys).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidKey { which: KeyKind::RowKey, reason, .. } if reason.contains("`reporter`")),
            "{err}"
        );
        assert!(intent_row("eu", &"r".repeat(900), "0123456789012345678901", &keys).is_ok());

        let many: Vec<(String, String)> = (0..40)
            .map(|i| (format!("~ix|tag{}|{}!", i % 3, "v".repeat(900)), "owner".to_owned()))
            .collect();
        let err = intent_row("eu", "c1", "id", &many).unwrap_err();
        assert!(
            matches!(&err, Error::LimitExceeded { limit: "PropertyValueTooLarge", detail } if detail.contains("`tag0`, `tag1`, `tag2`")),
            "{err}"
        );
    }

    #[test]
    fn a_transaction_pushed_past_4_mib_by_index_rows_is_refused_naming_them() {
        let cell = "é".repeat(30_000);
        let mut main = entity();
        for i in 0..15 {
            main.insert(format!("C{i}"), Value::String(cell.clone()));
        }
        let row = index_row(&CITY, &main).unwrap().unwrap();
        assert!(check_transaction(&[WriteOp::Insert(main.clone())], TRANSACTION_BODY_BUDGET).is_ok());
        let err =
            check_transaction(&[WriteOp::Insert(main), WriteOp::Insert(row)], TRANSACTION_BODY_BUDGET).unwrap_err();
        assert!(
            matches!(&err, Error::LimitExceeded { limit: "RequestBodyTooLarge", detail } if detail.contains("index `city`")),
            "{err}"
        );
    }
}
