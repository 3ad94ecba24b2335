//! The keys and system columns of secondary index rows.
//!
//! Index rows are ordinary rows under a reserved key prefix (see
//! `guide::secondary_indexes`): local index rows in the entity's partition,
//! global index rows in a partition per value, intent rows of global indexes
//! in the entity's partition. Each carries [`INDEX_OF`]; readers skip rows
//! that do, as they skip continuation rows.

use crate::value::Row;

/// The key prefix reserved for index rows: the RowKey of a local index row or
/// an intent, the PartitionKey of a global index row. Keys of an indexed
/// type may not start with it.
pub const INDEX_PREFIX: &str = "~ix|";
/// The smallest key above every key starting with [`INDEX_PREFIX`]: a query
/// leaves index rows out with `RowKey lt '~ix|' or RowKey ge '~ix}'`.
pub const INDEX_PREFIX_END: &str = "~ix}";
/// Separates the parts of an index key (prefix, index name, value).
pub const INDEX_SEPARATOR: char = '|';
/// Ends each value of an index key; sorts below every character a value's
/// text form holds, so a shorter value sorts first.
pub const INDEX_VALUE_END: char = '!';
/// Column of every index row and intent: the index's name (`~intent` for an intent).
pub const INDEX_OF: &str = "_IndexOf";
/// Column of an index row: the indexed columns, comma-separated, in index order.
pub const INDEX_ON: &str = "_IndexOn";
/// Column of an index row or intent: the entity's RowKey.
pub const INDEX_ROW: &str = "_IndexRow";
/// Column of a global index row: the entity's PartitionKey.
pub const INDEX_PARTITION: &str = "_IndexPartition";
/// Column of a unique global index row: when its reservation was made (`Edm.DateTime`).
pub const INDEX_RESERVED_AT: &str = "_IndexReservedAt";
/// Column of a unique global index row: whether its reservation was confirmed (`Edm.Boolean`).
pub const INDEX_CONFIRMED: &str = "_IndexConfirmed";
/// Column of an intent: the global index rows to bring into line, a JSON
/// array of `[PartitionKey, RowKey]` pairs.
pub const INDEX_KEYS: &str = "_IndexKeys";
/// The [`INDEX_OF`] value of an intent, and its key segment.
pub const INDEX_INTENT: &str = "~intent";
/// The RowKey of a unique global index row (one row per value).
pub const INDEX_UNIQUE_ROW: &str = "owner";

/// `~ix|{index}|`: the start of every key of one index.
pub fn index_key_prefix(index: &str) -> String {
    format!("{INDEX_PREFIX}{index}{INDEX_SEPARATOR}")
}

/// `~ix|~intent|`: the start of every intent's RowKey.
pub fn intent_key_prefix() -> String {
    index_key_prefix(INDEX_INTENT)
}

/// Whether a key is under the reserved index prefix.
pub fn is_index_key(key: &str) -> bool {
    key.starts_with(INDEX_PREFIX)
}

/// Whether a row is an index row or an intent (never an entity).
pub fn is_index_row(row: &Row) -> bool {
    row.get(INDEX_OF).is_some()
}
