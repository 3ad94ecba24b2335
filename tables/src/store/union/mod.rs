//! `UnionStore<E>`: many entity types in one table (an event store, a
//! command log, an outbox), told apart by the `_TypeName` token of a
//! [`TableUnion`].
//!
//! Keys are explicit and verbatim: every call names the row by its two keys,
//! and they are never normalized. Rows are facts plus mutable `_`-prefixed
//! system columns: [`UnionStore::merge_columns`] is the one mutation. Writes
//! commit through the same send step as [`Store<T>`](crate::Store) and
//! batches are packed by the same packer.

mod indexed;
mod query;
mod read;
mod write;

pub use query::{UnionColumns, UnionPage, UnionQuery};
pub use read::UnionStream;

use std::collections::BTreeMap;
use std::fmt;

use super::Store;
use crate::entity::Key;
use crate::error::{Error, Result};
use crate::layout::{is_system_column, RESERVED_SYSTEM_COLUMNS};
use crate::service::MAX_PROPERTY_NAME_UNITS;
use crate::union::TableUnion;
use crate::value::{utf16_len, DateTime, ETag, Value};

/// A store of a [`TableUnion`] in one table. Cheap to clone.
///
/// ```
/// use unified_tables::{TableRecord, TableUnion, Tables, UnionWrite, Value};
///
/// #[derive(TableRecord, Debug, Clone, PartialEq)]
/// struct Deposited { amount: f64 }
///
/// #[derive(TableUnion, Debug, Clone, PartialEq)]
/// enum Event { Deposited(Deposited), Closed }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let events = Tables::memory().union_store::<Event>("AccountEvents");
/// events.insert_batch(vec![
///     UnionWrite::item(("acc-1", "000000001"), &Event::Deposited(Deposited { amount: 10.0 })),
///     UnionWrite::item(("acc-1", "000000002"), &Event::Closed),
///     UnionWrite::marker(("acc-1", "commit")).column("_IsCommitted", Value::Bool(true)),
/// ]).await?;                                             // one transaction: all or nothing
///
/// let entries = events.query("acc-1").await?;
/// let replayed: Vec<&Event> = entries.iter().filter_map(|e| e.item.as_ref()).collect();
/// assert_eq!(replayed, [&Event::Deposited(Deposited { amount: 10.0 }), &Event::Closed]);
/// assert_eq!(entries[2].column("_IsCommitted"), Some(&Value::Bool(true)));
/// # Ok::<(), unified_tables::Error>(())
/// # }).unwrap();
/// ```
#[doc = include_str!("../../../docs/union_store.md")]
pub struct UnionStore<E> {
    store: Store<E>,
    indexes: &'static [crate::index::IndexDef],
}

impl<E> Clone for UnionStore<E> {
    fn clone(&self) -> Self {
        UnionStore {
            store: self.store.clone(),
            indexes: self.indexes,
        }
    }
}

impl<E> fmt::Debug for UnionStore<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UnionStore").field("table", &self.store.table).finish()
    }
}

impl<E> UnionStore<E> {
    /// The store of the union `E` in `table`, keeping no index (what
    /// `Tables::union_store` hands out).
    pub(crate) fn new(shared: super::Shared, table: String) -> UnionStore<E> {
        UnionStore {
            store: Store::new(shared, table),
            indexes: &[],
        }
    }
}

impl<E: TableUnion> UnionStore<E> {
    /// The table name.
    pub fn table(&self) -> &str {
        &self.store.table
    }

    /// Creates the table if it does not exist yet (done on first use).
    pub async fn ensure_created(&self) -> Result<()> {
        self.store
            .op("ensure_created")
            .run(async move { self.store.ensure_created().await })
            .await
    }

    /// This store, keeping the secondary indexes `indexes` on every write
    /// (an entity type's [`TableEntity::INDEXES`](crate::TableEntity::INDEXES)
    /// when the union shares its table with that type): each item's row and
    /// its index rows are written in one transaction, as
    /// [`Store`] writes them, with the columns an index names
    /// read from the item's row. An insert of a value another row holds in a
    /// unique index is [`Error::UniqueViolation`].
    ///
    /// ```
    /// # use unified_tables::{TableEntity, TableRecord, TableUnion, Tables};
    /// #[derive(TableEntity)]
    /// struct Order { #[table(partition_key)] customer: String, #[table(row_key)] id: String, #[index] status: String }
    ///
    /// #[derive(TableRecord, Debug, Clone, PartialEq)]
    /// struct Placed { status: String }
    /// #[derive(TableUnion, Debug, Clone, PartialEq)]
    /// enum OrderRow { Placed(Placed) }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let db = Tables::memory();
    /// let rows = db.union_store::<OrderRow>("Orders").with_indexes(Order::INDEXES);
    /// rows.insert(("c1", "o1"), &OrderRow::Placed(Placed { status: "open".into() })).await?;
    /// let orders = db.store_in::<Order>("Orders");
    /// assert_eq!(Order::find_by_status(&orders, "c1", "open").await?.len(), 1);
    /// # Ok::<(), unified_tables::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn with_indexes(mut self, indexes: &'static [crate::index::IndexDef]) -> Self {
        self.indexes = indexes;
        self
    }
}

/// One row of a union table: an item, or a marker row (no item, system
/// columns only).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct UnionEntry<E> {
    /// The row's keys, as stored.
    pub key: Key,
    /// The item; `None` for a marker row.
    pub item: Option<E>,
    /// The stored `_TypeName` token (`None` for a marker row). It may be a
    /// legacy token a variant also accepts; the next write of the item
    /// stores the canonical one.
    pub token: Option<String>,
    /// The row's version.
    pub etag: ETag,
    /// The service's last-modified time.
    pub timestamp: Option<DateTime>,
    /// The `_`-prefixed system columns other than `_TypeName`.
    pub columns: BTreeMap<String, Value>,
}

impl<E> UnionEntry<E> {
    /// Whether the row is a marker row (it holds no item).
    pub fn is_marker(&self) -> bool {
        self.token.is_none()
    }

    /// A system column's value.
    pub fn column(&self, name: &str) -> Option<&Value> {
        self.columns.get(name)
    }
}

/// One write of a batch: an item or a marker row, at explicit keys, with
/// system columns.
#[derive(Debug, Clone)]
pub struct UnionWrite<'a, E> {
    pub(crate) key: Key,
    pub(crate) item: Option<&'a E>,
    pub(crate) columns: Vec<(String, Value)>,
}

impl<'a, E> UnionWrite<'a, E> {
    /// The row of `item` at `key`.
    pub fn item(key: impl Into<Key>, item: &'a E) -> UnionWrite<'a, E> {
        UnionWrite {
            key: key.into(),
            item: Some(item),
            columns: Vec::new(),
        }
    }

    /// A marker row at `key`: system columns only, no `_TypeName`. It reads
    /// back as an entry whose item is `None`.
    pub fn marker(key: impl Into<Key>) -> UnionWrite<'a, E> {
        UnionWrite {
            key: key.into(),
            item: None,
            columns: Vec::new(),
        }
    }

    /// Adds a system column. Its name must start with `_` and may not be one
    /// the layout reserves (`_TypeName`, `_SplitParts`, `_SplitOf`,
    /// `_SplitIndex`); a bad name refuses the whole write before sending.
    pub fn column(mut self, name: impl Into<String>, value: Value) -> UnionWrite<'a, E> {
        self.columns.push((name.into(), value));
        self
    }
}

/// Refuses a system column name a caller gave: it must start with `_`, be
/// a valid property name, and not be reserved by the layout.
pub(crate) fn check_system_column(name: &str) -> Result<()> {
    let refuse = |reason: String| {
        Err(Error::InvalidValue {
            column: name.to_owned(),
            reason,
        })
    };
    if !is_system_column(name) {
        return refuse(
            "a union row's extra columns are system columns: start the name with `_` (e.g. `_IsCommitted`)".into(),
        );
    }
    if RESERVED_SYSTEM_COLUMNS.contains(&name) {
        return refuse(format!(
            "`{name}` is written by the store itself; choose another name for your column"
        ));
    }
    if utf16_len(name) > MAX_PROPERTY_NAME_UNITS || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return refuse(format!(
            "a column name holds letters, digits and `_` only, at most {MAX_PROPERTY_NAME_UNITS} characters"
        ));
    }
    Ok(())
}
