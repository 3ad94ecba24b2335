//! Batch writes: entity-group transactions planned within the service's limits.

use super::crud::Stamps;
use super::{now, Store, MAX_PAGE_SIZE};
use crate::backend::{IfMatch, QueryRequest, UpdateMode, WriteOp};
use crate::entity::{Key, TableEntity};
use crate::error::{Error, KeyKind, Result};
use crate::query::Filter;
use crate::value::{wire, Row, Value};

/// The most operations one entity-group transaction may hold.
pub const MAX_TRANSACTION_OPS: usize = 100;
/// The request-body budget of one transaction: the service's 4 MiB, less a
/// margin for the multipart envelope.
pub const TRANSACTION_BODY_BUDGET: usize = 4 * 1024 * 1024 - 64 * 1024;
/// Bytes of multipart envelope (headers, request line with both keys) per operation, on top of its keys.
const PER_OPERATION_ENVELOPE: usize = 400;

/// Splits operations on one partition into transactions of at most 100
/// operations and [`TRANSACTION_BODY_BUDGET`] bytes of wire JSON (escaping
/// included). Returns index ranges into `ops`.
pub(crate) fn pack(ops: &[WriteOp]) -> Vec<std::ops::Range<usize>> {
    let mut ranges = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, op) in ops.iter().enumerate() {
        let (pk, rk) = op.keys();
        let size = op.row().map(wire::wire_size).unwrap_or(0) + PER_OPERATION_ENVELOPE + 3 * (pk.len() + rk.len());
        if i > start && (i - start == MAX_TRANSACTION_OPS || bytes + size > TRANSACTION_BODY_BUDGET) {
            ranges.push(start..i);
            start = i;
            bytes = 0;
        }
        bytes += size;
    }
    if start < ops.len() {
        ranges.push(start..ops.len());
    }
    ranges
}

/// Groups items by partition key, keeping the order in which partitions and
/// items first appear.
fn group_by_partition<I>(items: Vec<(String, I)>) -> Vec<Vec<I>> {
    let mut order: Vec<String> = Vec::new();
    let mut groups: std::collections::HashMap<String, Vec<I>> = std::collections::HashMap::new();
    for (pk, item) in items {
        groups
            .entry(pk.clone())
            .or_insert_with(|| {
                order.push(pk);
                Vec::new()
            })
            .push(item);
    }
    order.into_iter().filter_map(|pk| groups.remove(&pk)).collect()
}

impl<T: TableEntity> Store<T> {
    /// Inserts many entities in entity-group transactions: grouped by
    /// partition, at most 100 operations and 4 MiB per transaction, each
    /// transaction atomic. Returns the number of entities written.
    ///
    /// A key that appears twice in `entities` is refused before anything is
    /// written. An existing key fails its transaction with
    /// [`Error::BatchFailed`] (source [`Error::AlreadyExists`]); the
    /// transactions before it stay committed.
    ///
    /// Entities are stamped (created and updated) as [`Store::create`] does;
    /// their ETags are not updated. Batch writes bypass the protected-field
    /// check: use them for imports and migrations, not for user edits.
    pub async fn create_batch(&self, entities: &[T]) -> Result<usize> {
        if self.is_large() {
            self.check_repeated_keys(entities)?;
            return self.write_large_batch(entities, true).await;
        }
        let at = now();
        let stamps = Stamps {
            created: Some(at),
            updated: Some(at),
        };
        let rows = self.encode_all(entities, |_| stamps)?;
        let mut seen = std::collections::HashMap::new();
        for (i, row) in rows.iter().enumerate() {
            if let Some(first) = seen.insert((row.partition_key.as_str(), row.row_key.as_str()), i) {
                return Err(Error::InvalidKey {
                    which: KeyKind::RowKey,
                    key: row.row_key.clone(),
                    reason: format!(
                        "entities {first} and {i} of the batch have the same keys (PartitionKey `{}`); nothing was written",
                        row.partition_key
                    ),
                });
            }
        }
        self.write_batch(rows.into_iter().map(WriteOp::Insert).collect()).await
    }

    /// Inserts or replaces many entities in entity-group transactions, packed
    /// as [`Store::create_batch`] packs them. Returns the number of entities
    /// passed. A key repeated within one transaction fails it with the
    /// service's 400 `InvalidDuplicateRow`; earlier transactions stay committed.
    /// Batch writes bypass the protected-field check.
    pub async fn upsert_batch(&self, entities: &[T]) -> Result<usize> {
        if self.is_large() {
            return self.write_large_batch(entities, false).await;
        }
        let at = now();
        let rows = self.encode_all(entities, |e| Stamps {
            created: e.created_at().is_none().then_some(at),
            updated: Some(at),
        })?;
        let ops = rows
            .into_iter()
            .map(|row| WriteOp::Upsert {
                row,
                mode: UpdateMode::Replace,
            })
            .collect();
        self.write_batch(ops).await
    }

    /// Deletes every row of a partition in transactions of up to 100 rows and
    /// returns how many were deleted. Atomic per transaction only: if it
    /// fails part way, call it again to finish.
    pub async fn delete_partition(&self, partition_key: &str) -> Result<usize> {
        crate::entity::validate_key(KeyKind::PartitionKey, partition_key)?;
        if self.is_large() {
            return self.delete_large_partition(partition_key).await;
        }
        let request = QueryRequest {
            filter: Some(Filter::eq("PartitionKey", Value::String(partition_key.to_owned()))),
            select: Some(vec!["RowKey".to_owned()]),
            top: Some(MAX_PAGE_SIZE),
        };
        let mut pages = self.pages(request).await?;
        let mut deleted = 0;
        while let Some(rows) = pages.next().await? {
            for chunk in rows.chunks(MAX_TRANSACTION_OPS) {
                deleted += self.delete_rows(partition_key, chunk).await?;
            }
        }
        Ok(deleted)
    }

    /// Deletes up to 100 rows of one partition in one transaction; rows
    /// deleted concurrently (404) are dropped from the transaction and it is retried.
    async fn delete_rows(&self, partition_key: &str, rows: &[Row]) -> Result<usize> {
        let mut keys: Vec<&str> = rows.iter().map(|r| r.row_key.as_str()).collect();
        while !keys.is_empty() {
            let ops = keys
                .iter()
                .map(|rk| WriteOp::Delete {
                    partition_key: partition_key.to_owned(),
                    row_key: (*rk).to_owned(),
                    condition: IfMatch::Any,
                })
                .collect();
            match self.tables.backend.transaction(&self.table, ops).await {
                Ok(_) => return Ok(keys.len()),
                Err(Error::Transaction { index, source }) if source.service_code().map(|c| c.0) == Some(404) => {
                    keys.remove(index.min(keys.len() - 1));
                }
                Err(e) => return Err(e),
            }
        }
        Ok(0)
    }

    fn check_repeated_keys(&self, entities: &[T]) -> Result<()> {
        let mut seen = std::collections::HashMap::new();
        for (i, e) in entities.iter().enumerate() {
            let key = e.key();
            if let Some(first) = seen.insert(key.clone(), i) {
                return Err(Error::InvalidKey {
                    which: KeyKind::RowKey,
                    key: key.row_key,
                    reason: format!(
                        "entities {first} and {i} of the batch have the same keys (PartitionKey `{}`); nothing was written",
                        key.partition_key
                    ),
                });
            }
        }
        Ok(())
    }

    fn encode_all(&self, entities: &[T], stamps: impl Fn(&T) -> Stamps) -> Result<Vec<Row>> {
        // Every entity is encoded and checked before the first is sent.
        entities.iter().map(|e| self.encode_stamped(e, stamps(e))).collect()
    }

    async fn write_batch(&self, ops: Vec<WriteOp>) -> Result<usize> {
        let total = ops.len();
        self.ensure_created().await?;
        let keyed = ops.into_iter().map(|op| (op.keys().0.to_owned(), op)).collect();
        let mut committed = 0;
        for group in group_by_partition(keyed) {
            let ranges = pack(&group);
            let mut rest = group.into_iter();
            for range in ranges {
                let chunk: Vec<WriteOp> = rest.by_ref().take(range.len()).collect();
                let first_key = {
                    let (pk, rk) = chunk[0].keys();
                    Key::new(pk, rk)
                };
                let keys: Vec<Key> = chunk.iter().map(|op| Key::new(op.keys().0, op.keys().1)).collect();
                let n = chunk.len();
                if let Err(e) = self.tables.backend.transaction(&self.table, chunk).await {
                    let (failed, source) = match e {
                        Error::Transaction { index, source } => {
                            let k = keys.get(index).cloned().unwrap_or(first_key);
                            let source = source.about_entity(&self.table, &k.partition_key, &k.row_key);
                            (k, source)
                        }
                        other => (first_key, other),
                    };
                    return Err(Error::BatchFailed {
                        committed,
                        partition_key: failed.partition_key,
                        row_key: failed.row_key,
                        source: Box::new(source),
                    });
                }
                committed += n;
            }
        }
        debug_assert_eq!(committed, total);
        Ok(total)
    }
}
