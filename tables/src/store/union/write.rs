//! Writes of a union store: items and marker rows, one at a time or packed
//! into transactions, the column merge, the delete. Every write is encoded
//! and checked before anything is sent, then committed through
//! the pipeline's one entry, `Store::commit`, which gives each row its
//! write token.

use super::{check_system_column, UnionStore, UnionWrite};
use crate::backend::pack::{op_weight, pack};
use crate::backend::{IfMatch, UpdateMode, WriteOp};
use crate::codec::EncodeOptions;
use crate::entity::Key;
use crate::error::{Error, ErrorKind, Result};
use crate::layout::TYPE_NAME;
use crate::store::write::batch::{batch_failed, group_by_partition, refuse_repeated_rows};
use crate::store::write::{Committed, Write};
use crate::union::TableUnion;
use crate::value::{ETag, Row, Value};

/// Whether a write may find its row stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// The row must not exist.
    Insert,
    /// Insert or replace.
    Upsert,
}

impl Mode {
    fn op(self, row: Row) -> WriteOp {
        match self {
            Mode::Insert => WriteOp::Insert(row),
            Mode::Upsert => WriteOp::Upsert {
                row,
                mode: UpdateMode::Replace,
            },
        }
    }
}

fn key_of(op: &WriteOp) -> Key {
    let (pk, rk) = op.keys();
    Key::new(pk, rk)
}

impl<E: TableUnion> UnionStore<E> {
    /// Inserts `item` at `key`: [`Error::AlreadyExists`] when the row exists.
    /// Returns the new ETag.
    pub async fn insert(&self, key: impl Into<Key>, item: &E) -> Result<ETag> {
        self.store
            .op("insert")
            .run(async move { self.write_one(UnionWrite::item(key, item), Mode::Insert).await })
            .await
    }

    /// Inserts or replaces the row at `key` with `item`, whatever is stored
    /// (its system columns included). Returns the new ETag.
    pub async fn upsert(&self, key: impl Into<Key>, item: &E) -> Result<ETag> {
        self.store
            .op("upsert")
            .run(async move { self.write_one(UnionWrite::item(key, item), Mode::Upsert).await })
            .await
    }

    /// Inserts items and marker rows in entity-group transactions: grouped
    /// by partition, at most 100 operations and 4 MiB per transaction (the
    /// packer of [`Store::create_batch`](crate::Store::create_batch)), each
    /// transaction atomic. A partition's writes that fit one transaction are
    /// committed all or nothing, so a marker row commits with the items it
    /// guards. Returns the number of rows written.
    ///
    /// Every write is encoded and checked first: a bad key or column, or a
    /// key given twice, refuses the whole batch before anything is sent.
    /// An existing key fails its transaction with [`Error::BatchFailed`]
    /// (source [`Error::AlreadyExists`]); transactions before it stay committed.
    pub async fn insert_batch<'a>(&self, writes: impl IntoIterator<Item = UnionWrite<'a, E>>) -> Result<usize> {
        self.store
            .op("insert_batch")
            .run(async move { self.write_batch(writes, Mode::Insert).await })
            .await
    }

    /// Inserts or replaces items and marker rows, packed as
    /// [`UnionStore::insert_batch`] packs them. A key repeated within one
    /// transaction fails it with the service's 400 `InvalidDuplicateRow`.
    pub async fn upsert_batch<'a>(&self, writes: impl IntoIterator<Item = UnionWrite<'a, E>>) -> Result<usize> {
        self.store
            .op("upsert_batch")
            .run(async move { self.write_batch(writes, Mode::Upsert).await })
            .await
    }

    /// Merges `_`-prefixed system columns into the row at `key` (item or
    /// marker), whatever version is stored; the row must exist
    /// ([`Error::NotFound`] otherwise). Other columns are kept. Returns the new ETag.
    ///
    /// ```
    /// # use unified_tables::{TableUnion, Tables, UnionWrite, Value};
    /// # #[derive(TableUnion, Debug)] enum Event { Opened }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// # let store = Tables::memory().union_store::<Event>("Outbox");
    /// store.insert_batch(vec![UnionWrite::marker(("tx-1", "flag")).column("_IsCommitted", Value::Bool(false))]).await?;
    /// store.merge_columns(("tx-1", "flag"), [("_IsCommitted", Value::Bool(true))]).await?;
    /// # Ok::<(), unified_tables::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn merge_columns<N: Into<String>>(
        &self,
        key: impl Into<Key>,
        columns: impl IntoIterator<Item = (N, Value)>,
    ) -> Result<ETag> {
        self.store
            .op("merge_columns")
            .run(async move { self.merge(key.into(), columns, IfMatch::Any).await })
            .await
    }

    /// [`UnionStore::merge_columns`] on condition that the row still has
    /// version `etag`: [`Error::Conflict`] when another write changed it.
    pub async fn merge_columns_if<N: Into<String>>(
        &self,
        key: impl Into<Key>,
        columns: impl IntoIterator<Item = (N, Value)>,
        etag: &ETag,
    ) -> Result<ETag> {
        self.store
            .op("merge_columns_if")
            .run(async move {
                // A caller's ETag is a version: `*` or an empty one is refused before sending.
                let condition = crate::store::write::conditions::caller_version(etag)?;
                self.merge(key.into(), columns, condition).await
            })
            .await
    }

    /// Deletes the row at `key`. Idempotent: `Ok(true)` if it existed.
    pub async fn delete(&self, key: impl Into<Key>) -> Result<bool> {
        self.store
            .op("delete")
            .run(async move {
                let key = key.into();
                key.validate()?;
                self.store.ensure_created().await?;
                if !self.indexes.is_empty() {
                    return self.delete_indexed(&key).await.map_err(|e| self.about(e, &key));
                }
                let op = WriteOp::Delete {
                    partition_key: key.partition_key.clone(),
                    row_key: key.row_key.clone(),
                    condition: IfMatch::Any,
                };
                match self.store.commit(Write::one(op)).await.map(Committed::first) {
                    Ok(_) => Ok(true),
                    Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
                    Err(e) => Err(self.about(e, &key)),
                }
            })
            .await
    }

    /// The row of one write: keys checked, `_TypeName` and the item's
    /// columns, then the system columns, within the service's limits.
    fn encode(&self, write: &UnionWrite<'_, E>) -> Result<Row> {
        write.key.validate()?;
        let mut row = Row::new(write.key.partition_key.clone(), write.key.row_key.clone());
        if let Some(item) = write.item {
            if let Some(token) = item.token() {
                row.insert(TYPE_NAME, Value::String(token.to_owned()));
            }
            let options = EncodeOptions {
                oversized: self.store.shared.options.oversized_cells,
            };
            item.write_row(&mut row, &options)?;
        }
        for (name, value) in &write.columns {
            check_system_column(name)?;
            row.insert(name.clone(), value.clone());
        }
        self.store.check_limits_with_token(&mut row)?;
        Ok(row)
    }

    /// A service answer about one row, named for it.
    fn about(&self, e: Error, key: &Key) -> Error {
        e.about_entity(&self.store.table, &key.partition_key, &key.row_key)
    }

    async fn write_one(&self, write: UnionWrite<'_, E>, mode: Mode) -> Result<ETag> {
        let row = self.encode(&write)?;
        self.store.ensure_created().await?;
        if !self.indexes.is_empty() {
            let written = self.write_indexed(row, mode == Mode::Insert).await;
            return written.map_err(|e| self.about(e, &write.key));
        }
        match self
            .store
            .commit(Write::one(mode.op(row)).tokens_on([0]))
            .await
            .map(Committed::first)
        {
            Ok(outcome) => Ok(outcome.etag.unwrap_or_else(|| ETag::new(""))),
            Err(e) => Err(self.about(e, &write.key)),
        }
    }

    async fn merge<N: Into<String>>(
        &self,
        key: Key,
        columns: impl IntoIterator<Item = (N, Value)>,
        condition: IfMatch,
    ) -> Result<ETag> {
        key.validate()?;
        let mut row = Row::new(key.partition_key.clone(), key.row_key.clone());
        for (name, value) in columns {
            let name = name.into();
            check_system_column(&name)?;
            row.insert(name, value);
        }
        if row.properties.is_empty() {
            return Err(Error::config(
                "merge_columns names no column: give at least one `_`-prefixed column",
            ));
        }
        self.store.check_limits_with_token(&mut row)?;
        self.store.ensure_created().await?;
        let op = WriteOp::Update {
            row,
            mode: UpdateMode::Merge,
            condition,
        };
        match self
            .store
            .commit(Write::one(op).tokens_on([0]))
            .await
            .map(Committed::first)
        {
            Ok(outcome) => Ok(outcome.etag.unwrap_or_else(|| ETag::new(""))),
            Err(e) => Err(self.about(e, &key)),
        }
    }

    async fn write_batch<'a>(&self, writes: impl IntoIterator<Item = UnionWrite<'a, E>>, mode: Mode) -> Result<usize>
    where
        E: 'a,
    {
        let rows = writes
            .into_iter()
            .map(|w| self.encode(&w))
            .collect::<Result<Vec<Row>>>()?;
        if mode == Mode::Insert {
            refuse_repeated_rows(rows.iter())?;
        }
        let total = rows.len();
        crate::telemetry::record_batch_size(total);
        if total == 0 {
            return Ok(0);
        }
        self.store.ensure_created().await?;
        if !self.indexes.is_empty() {
            return self.batch_indexed(rows, mode == Mode::Insert).await;
        }
        let ops = rows
            .into_iter()
            .map(|r| (r.partition_key.clone(), mode.op(r)))
            .collect();
        let mut committed = 0;
        for group in group_by_partition(ops) {
            let ranges = pack(
                group.iter().map(|op| (1, op_weight(op))),
                self.store.profile().transaction_body_budget(),
            );
            let mut rest = group.into_iter();
            for range in ranges {
                let tx: Vec<WriteOp> = rest.by_ref().take(range.len()).collect();
                let keys: Vec<Key> = tx.iter().map(key_of).collect();
                let rows = 0..tx.len();
                let error = match self
                    .store
                    .commit(Write::new(tx).tokens_on(rows))
                    .await
                    .map(Committed::first)
                {
                    Ok(_) => {
                        committed += keys.len();
                        continue;
                    }
                    Err(e) => e,
                };
                let (index, source) = match error {
                    Error::Transaction { index, source } => (index, *source),
                    other => (0, other),
                };
                let failed = keys.get(index).unwrap_or(&keys[0]).clone();
                let table = &self.store.table;
                // A transaction in doubt was settled by the send (or is `OutcomeUnknown`).
                let source = source.about_entity(table, &failed.partition_key, &failed.row_key);
                return Err(batch_failed(committed, failed, source));
            }
        }
        Ok(total)
    }
}
