//! The rows of an index: which index row an entity's row needs, and what an
//! index row or an intent says. Pure: no I/O.

use super::def::{IndexDef, Projection};
use super::encode::{cell_text, encode_text};
use super::limits::{check_index_key, check_index_row, check_intent};
use crate::error::{KeyKind, Result};
use crate::layout::{
    index_key_prefix, intent_key_prefix, is_cell_of, is_system_column, INDEX_CONFIRMED, INDEX_INTENT, INDEX_KEYS,
    INDEX_OF, INDEX_ON, INDEX_PARTITION, INDEX_PREFIX, INDEX_RESERVED_AT, INDEX_ROW, INDEX_UNIQUE_ROW, INDEX_VALUE_END,
    WRITE_TOKEN,
};
use crate::value::{DateTime, Row, Value};

/// The keys of one row: (PartitionKey, RowKey).
pub type RowKeys = (String, String);

/// The value part of an index key: the text form of each cell, each
/// followed by the value end.
pub fn value_key(cells: &[&Value]) -> String {
    let mut out = String::new();
    for c in cells {
        out.push_str(&cell_text(c));
    }
    out
}

/// The indexed cells of `entity` under `def`, or `None` when one is absent
/// (a `None` value has no index row).
pub fn indexed_cells<'r>(def: &IndexDef, entity: &'r Row) -> Option<Vec<&'r Value>> {
    def.columns.iter().map(|c| entity.get(c)).collect()
}

/// The keys of the index row `def` keeps for the entity at
/// (`partition_key`, `row_key`) whose value part is `value`.
pub fn index_row_keys(def: &IndexDef, partition_key: &str, row_key: &str, value: &str) -> RowKeys {
    let start = index_key_prefix(def.name);
    match (def.global, def.unique) {
        (false, true) => (partition_key.to_owned(), format!("{start}{value}")),
        (false, false) => (partition_key.to_owned(), format!("{start}{value}{row_key}")),
        (true, true) => (format!("{start}{value}"), INDEX_UNIQUE_ROW.to_owned()),
        (true, false) => {
            let mut rk = String::new();
            encode_text(partition_key, &mut rk);
            rk.push(INDEX_VALUE_END);
            rk.push_str(row_key);
            (format!("{start}{value}"), rk)
        }
    }
}

/// The range of keys holding the index rows of values starting with
/// `start` (a value part, or a string's text form): in the entity's
/// partition for a local index (RowKeys), across partitions for a global one
/// (PartitionKeys).
pub fn index_range(def: &IndexDef, start: &str) -> (String, Option<String>) {
    let low = format!("{}{start}", index_key_prefix(def.name));
    let high = crate::service::next_prefix(&low);
    (low, high)
}

/// The index row `def` keeps for `entity` (an entity's main row in its
/// one-cell form), or `None` when an indexed value is absent. A value whose
/// key would be longer than the service allows is
/// [`Error::InvalidValue`](crate::Error::InvalidValue) naming its column and the index; a row over
/// another of the service's limits (its properties, a cell, its size) is
/// [`Error::LimitExceeded`](crate::Error::LimitExceeded) naming the index and its fields.
pub fn index_row(def: &IndexDef, entity: &Row) -> Result<Option<Row>> {
    let Some(cells) = indexed_cells(def, entity) else {
        return Ok(None);
    };
    let value = value_key(&cells);
    let (pk, rk) = index_row_keys(def, &entity.partition_key, &entity.row_key, &value);
    check_index_key(def, &pk, KeyKind::PartitionKey)?;
    check_index_key(def, &rk, KeyKind::RowKey)?;
    let mut row = Row::new(pk, rk);
    row.insert(INDEX_OF, Value::String(def.name.to_owned()));
    row.insert(INDEX_ON, Value::String(def.columns.join(",")));
    row.insert(INDEX_ROW, Value::String(entity.row_key.clone()));
    if def.global {
        row.insert(INDEX_PARTITION, Value::String(entity.partition_key.clone()));
    }
    for (column, cell) in def.columns.iter().zip(cells) {
        row.insert(*column, cell.clone());
    }
    match def.projection {
        Projection::Keys => {}
        Projection::Columns(columns) => {
            // Every cell of each column, in the form the entity holds it.
            for (name, v) in entity.properties.iter() {
                if columns.iter().any(|c| is_cell_of(name, c)) {
                    row.insert(name, v.clone());
                }
            }
        }
        Projection::All => {
            for (name, v) in entity.properties.iter() {
                if !is_system_column(name) {
                    row.insert(name, v.clone());
                }
            }
        }
    }
    check_index_row(def, &row)?;
    Ok(Some(row))
}

/// Whether two index rows of one key say the same: their cells, but for a
/// unique global row's reservation and the write token a request carries
/// (keys and versions are not compared).
pub fn same_cells(a: &Row, b: &Row) -> bool {
    let said = |name: &str| name != INDEX_RESERVED_AT && name != INDEX_CONFIRMED && name != WRITE_TOKEN;
    let count = |row: &Row| row.properties.keys().filter(|n| said(n)).count();
    count(a) == count(b)
        && a.properties
            .iter()
            .filter(|(name, _)| said(name))
            .all(|(name, v)| b.get(name) == Some(v))
}

/// The entity an index row points at: (PartitionKey, RowKey). A local
/// index row's entity is in its own partition.
pub fn entity_of(index_row: &Row) -> Option<RowKeys> {
    let rk = index_row.get(INDEX_ROW)?.as_str()?.to_owned();
    let pk = match index_row.get(INDEX_PARTITION) {
        Some(v) => v.as_str()?.to_owned(),
        None if index_row.partition_key.starts_with(INDEX_PREFIX) => return None,
        None => index_row.partition_key.clone(),
    };
    Some((pk, rk))
}

/// Whether a row is an intent of a global index write.
pub fn is_intent(row: &Row) -> bool {
    row.get(INDEX_OF).and_then(Value::as_str) == Some(INDEX_INTENT)
}

/// The start of the RowKeys of the intents of one entity.
pub fn intent_prefix(row_key: &str) -> String {
    let mut out = intent_key_prefix();
    encode_text(row_key, &mut out);
    out.push(INDEX_VALUE_END);
    out
}

/// An intent of the entity at (`partition_key`, `row_key`): the global
/// index rows to bring into line with it. `id` tells intents of one entity
/// apart. An intent the service would refuse (a RowKey over its limit,
/// which holds the entity's, or a list of rows over one cell) is
/// [`Error::InvalidKey`](crate::Error::InvalidKey) or [`Error::LimitExceeded`](crate::Error::LimitExceeded) naming the global indexes.
pub fn intent_row(partition_key: &str, row_key: &str, id: &str, keys: &[RowKeys]) -> Result<Row> {
    let mut row = Row::new(partition_key.to_owned(), format!("{}{id}", intent_prefix(row_key)));
    row.insert(INDEX_OF, Value::String(INDEX_INTENT.to_owned()));
    row.insert(INDEX_ROW, Value::String(row_key.to_owned()));
    // A list of string pairs always serializes.
    row.insert(
        INDEX_KEYS,
        Value::String(serde_json::to_string(keys).unwrap_or_default()),
    );
    check_intent(&row, row_key, keys)?;
    Ok(row)
}

/// The global index rows an intent names (none when its cell is damaged).
pub fn intent_keys(intent: &Row) -> Vec<RowKeys> {
    intent
        .get(INDEX_KEYS)
        .and_then(Value::as_str)
        .and_then(|json| serde_json::from_str(json).ok())
        .unwrap_or_default()
}

/// A unique global index row's reservation: when it was made and whether it was confirmed.
pub fn reservation(row: &Row) -> (Option<DateTime>, bool) {
    let at = match row.get(INDEX_RESERVED_AT) {
        Some(Value::DateTime(t)) => Some(*t),
        _ => None,
    };
    let confirmed = matches!(row.get(INDEX_CONFIRMED), Some(Value::Bool(true)));
    (at, confirmed)
}

/// Marks a unique global index row as a reservation made at `at`, confirmed or not.
pub fn set_reservation(row: &mut Row, at: DateTime, confirmed: bool) {
    row.insert(INDEX_RESERVED_AT, Value::DateTime(at));
    row.insert(INDEX_CONFIRMED, Value::Bool(confirmed));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    const EMAIL: IndexDef = IndexDef {
        name: "email",
        columns: &["Email"],
        unique: true,
        global: false,
        projection: Projection::Keys,
    };

    fn customer(email: &str) -> Row {
        let mut row = Row::new("eu", "c1");
        row.insert("Email", Value::String(email.into()));
        row.insert("Name", Value::String("Ann".into()));
        row.insert("_WriteToken", Value::String("t".into()));
        row
    }

    #[test]
    fn local_and_global_rows_have_their_keys_and_cells() {
        let row = index_row(&EMAIL, &customer("a@x.com")).unwrap().unwrap();
        assert_eq!(
            (row.partition_key.as_str(), row.row_key.as_str()),
            ("eu", "~ix|email|a@x.com!")
        );
        assert_eq!(row.get(INDEX_OF).and_then(Value::as_str), Some("email"));
        assert_eq!(row.get("Email").and_then(Value::as_str), Some("a@x.com"));
        assert!(row.get("Name").is_none() && row.get("_WriteToken").is_none());
        assert_eq!(entity_of(&row), Some(("eu".into(), "c1".into())));

        let many = IndexDef { unique: false, ..EMAIL };
        let row = index_row(&many, &customer("a@x.com")).unwrap().unwrap();
        assert_eq!(row.row_key, "~ix|email|a@x.com!c1");

        let global = IndexDef {
            global: true,
            projection: Projection::All,
            ..many
        };
        let row = index_row(&global, &customer("a@x.com")).unwrap().unwrap();
        assert_eq!(
            (row.partition_key.as_str(), row.row_key.as_str()),
            ("~ix|email|a@x.com!", "eu!c1")
        );
        assert_eq!(row.get("Name").and_then(Value::as_str), Some("Ann"));
        assert!(row.get("_WriteToken").is_none());
        assert_eq!(entity_of(&row), Some(("eu".into(), "c1".into())));

        let unique_global = IndexDef { global: true, ..EMAIL };
        let row = index_row(&unique_global, &customer("a@x.com")).unwrap().unwrap();
        assert_eq!(row.row_key, INDEX_UNIQUE_ROW);
    }

    #[test]
    fn an_absent_value_has_no_row_and_a_long_one_is_refused_by_column() {
        assert!(index_row(&EMAIL, &Row::new("eu", "c1")).unwrap().is_none());
        let err = index_row(&EMAIL, &customer(&"x".repeat(1100))).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidValue { column, .. } if column == "Email"),
            "{err}"
        );
    }

    #[test]
    fn intents_round_trip_their_keys() {
        let keys = vec![("~ix|e|a!".to_owned(), "eu!c1".to_owned())];
        let row = intent_row("eu", "c|1", "id", &keys).unwrap();
        assert!(row.row_key.starts_with("~ix|~intent|c|1!"));
        assert!(is_intent(&row));
        assert_eq!(intent_keys(&row), keys);
    }
}
