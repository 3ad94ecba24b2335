//! Deletes: one entity (its main row, its continuation rows, then the blobs
//! it referenced) and whole partitions, packed into transactions by the
//! same packer as batch writes. A main row is never separated from its
//! continuation rows in a way that leaves a readable entity damaged.

use std::collections::BTreeSet;

use crate::backend::pack::{op_weight, pack};
use crate::backend::race::{race_backoff, RACE_ATTEMPTS};
use crate::backend::{IfMatch, QueryRequest, WriteOp};
use crate::entity::{ColumnKind, Key, TableEntity};
use crate::error::{ErrorKind, KeyKind, Result};
use crate::large::entity_rows::{continuation_owner, continuation_range};
use crate::layout::{blob_cell, blob_paths, continuation_key, split_parts, MAX_CONTINUATION_ROWS, SPLIT_OF};
use crate::query::Filter;
use crate::service::{validate_key, MAX_PAGE_SIZE, MAX_TRANSACTION_OPS};
use crate::store::write::conditions::check_condition;
use crate::store::write::{Committed, Write};
use crate::store::Store;
use crate::value::{Row, Value};

fn delete_op(partition_key: &str, row_key: String, condition: IfMatch) -> WriteOp {
    WriteOp::Delete {
        partition_key: partition_key.to_owned(),
        row_key,
        condition,
    }
}

/// The rows one delete removes together: an entity's main row with the
/// continuation rows found beside it, or a leftover continuation row alone.
struct DeleteUnit {
    ops: Vec<WriteOp>,
    /// Whether the unit is an entity (counted), not a leftover row.
    entity: bool,
    refs: BTreeSet<String>,
}

impl<T: TableEntity> Store<T> {
    /// Deletes one entity on `condition`. Returns whether it existed; with an
    /// ETag condition a missing entity is [`Error::NotFound`](crate::Error::NotFound).
    pub(crate) async fn delete_one(&self, key: &Key, condition: IfMatch) -> Result<bool> {
        check_condition(&condition)?;
        self.ensure_created().await?;
        let about = |e: crate::Error| e.about_entity(&self.table, &key.partition_key, &key.row_key);
        if !const { T::SCHEMA.has_large_values() || !T::INDEXES.is_empty() } {
            let op = delete_op(&key.partition_key, key.row_key.clone(), condition.clone());
            return match self.commit(Write::one(op)).await.map(Committed::first) {
                Ok(_) => Ok(true),
                Err(e) if e.kind() == ErrorKind::NotFound && condition == IfMatch::Any => Ok(false),
                Err(e) => Err(about(e)),
            };
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            // A continuation row is not an entity: deleting its key is a no-op.
            let stored = self.main_row(key).await?;
            let Some(stored) = stored else {
                return match condition {
                    IfMatch::ETag(_) => Err(crate::Error::not_found(&self.table, key)),
                    IfMatch::Any => Ok(false),
                };
            };
            if let IfMatch::ETag(wanted) = &condition {
                if stored.etag.as_ref() != Some(wanted) {
                    return Err(crate::Error::conflict(&self.table, key));
                }
            }
            let version = stored.etag.clone().map(IfMatch::ETag).unwrap_or(IfMatch::Any);
            let parts = split_parts(&stored);
            let mut ops = vec![delete_op(&key.partition_key, key.row_key.clone(), version)];
            // Within one transaction when they fit; otherwise the main row goes
            // first and the continuation rows found by a range query after it.
            let together = parts < MAX_TRANSACTION_OPS;
            if together {
                ops.extend(
                    (1..=parts).map(|i| delete_op(&key.partition_key, continuation_key(&key.row_key, i), IfMatch::Any)),
                );
            }
            let (index_ops, indexed) = self.plan_indexes(key, Some(&stored), None)?;
            ops.extend(index_ops);
            match self
                .commit(Write::new(ops).droppable_from(1))
                .await
                .map(Committed::first)
            {
                Ok(_) => {
                    self.intents_written(&indexed);
                    if !together {
                        self.delete_continuation_rows(key).await?;
                    }
                    self.release_blobs(key, &blob_paths(&stored), &BTreeSet::new()).await;
                    return Ok(true);
                }
                Err(e) => {
                    let lost = matches!(e.kind(), ErrorKind::NotFound | ErrorKind::PreconditionFailed);
                    if lost && attempt < RACE_ATTEMPTS && condition == IfMatch::Any {
                        tokio::time::sleep(race_backoff(attempt)).await;
                        continue;
                    }
                    return Err(about(e));
                }
            }
        }
    }

    /// Deletes every continuation row of `key` that exists (one range query),
    /// in as many transactions as they take.
    async fn delete_continuation_rows(&self, key: &Key) -> Result<()> {
        let filter = continuation_range(&key.partition_key, &key.row_key, MAX_CONTINUATION_ROWS);
        let request = QueryRequest {
            filter: Some(filter),
            select: Some(vec!["RowKey".to_owned(), SPLIT_OF.to_owned()]),
            top: Some(MAX_PAGE_SIZE),
        };
        let mut pages = self.pages(request).await?;
        while let Some(rows) = pages.next(|_| true).await? {
            let ops: Vec<WriteOp> = rows
                .into_iter()
                .filter(|r| continuation_owner(r) == Some(key.row_key.as_str()))
                .map(|r| delete_op(&key.partition_key, r.row_key, IfMatch::Any))
                .collect();
            for chunk in ops.chunks(MAX_TRANSACTION_OPS) {
                self.commit(Write::new(chunk.to_vec()).droppable_from(0)).await?;
            }
        }
        Ok(())
    }

    /// Deletes every row of a partition in transactions of up to 100 rows and
    /// returns how many entities were deleted. An entity's continuation rows
    /// go in the same transaction as its main row where they are read
    /// together, and the blobs of deleted entities are released. Atomic per
    /// transaction only: if it fails part way, call it again to finish.
    pub async fn delete_partition(&self, partition_key: &str) -> Result<usize> {
        self.op("delete_partition")
            .run(async move {
                validate_key(KeyKind::PartitionKey, partition_key)?;
                let large = const { T::SCHEMA.has_large_values() };
                let mut select = vec!["RowKey".to_owned()];
                select.extend(crate::store::index::partition_columns::<T>());
                if large {
                    select.push(SPLIT_OF.to_owned());
                    for c in T::SCHEMA.columns {
                        if matches!(c.kind, ColumnKind::Large { .. } | ColumnKind::Blob) {
                            select.extend(std::iter::once(c.name).chain(c.aliases.iter().copied()).map(blob_cell));
                        }
                    }
                }
                let request = QueryRequest {
                    filter: Some(Filter::eq("PartitionKey", Value::String(partition_key.to_owned()))),
                    select: Some(select),
                    top: Some(MAX_PAGE_SIZE),
                };
                let mut pages = self.pages(request).await?;
                let mut deleted = 0;
                while let Some(rows) = pages.next(|_| true).await? {
                    // Every listed row leaves the read cache, also if a transaction below fails.
                    for row in &rows {
                        self.evict(partition_key, &row.row_key);
                    }
                    // An entity of a type with global indexes leaves an intent for the applier.
                    let mut intents = self.partition_intents(&rows)?;
                    let mut units = delete_units(partition_key, crate::store::index::without_intents(rows));
                    for unit in units.iter_mut().filter(|u| u.entity) {
                        let row_key = unit.ops[0].keys().1.to_owned();
                        unit.ops.extend(intents.remove(&row_key));
                    }
                    let ranges = pack(units.iter().map(|u| (u.ops.len(), u.ops.iter().map(op_weight).sum())));
                    let mut units = units.into_iter();
                    for range in ranges {
                        let tx: Vec<DeleteUnit> = units.by_ref().take(range.len()).collect();
                        let mut owner = Vec::new();
                        let mut ops = Vec::new();
                        for (u, unit) in tx.iter().enumerate() {
                            owner.push((u, true));
                            owner.extend(std::iter::repeat_n((u, false), unit.ops.len() - 1));
                            ops.extend(unit.ops.iter().cloned());
                        }
                        let kept = self.commit(Write::new(ops).droppable_from(0)).await?.kept;
                        for index in kept {
                            let (u, first) = owner[index];
                            if first && tx[u].entity {
                                deleted += 1;
                                let (pk, rk) = tx[u].ops[0].keys();
                                self.release_blobs(&Key::new(pk, rk), &tx[u].refs, &BTreeSet::new())
                                    .await;
                            }
                        }
                    }
                }
                self.partition_intents_written(T::INDEXES, partition_key);
                Ok(deleted)
            })
            .await
    }
}

/// Groups a page of rows into delete units, in key order: each main row
/// with the continuation rows of it found on the same page.
fn delete_units(partition_key: &str, rows: Vec<Row>) -> Vec<DeleteUnit> {
    let mut units: Vec<DeleteUnit> = Vec::with_capacity(rows.len());
    let mut by_key: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for row in rows {
        let owner = continuation_owner(&row).map(str::to_owned);
        match owner.and_then(|o| by_key.get(&o).copied()) {
            Some(u) => units[u].ops.push(delete_op(partition_key, row.row_key, IfMatch::Any)),
            None => {
                let entity = row.get(SPLIT_OF).is_none() && !crate::layout::is_index_key(&row.row_key);
                if entity {
                    by_key.insert(row.row_key.clone(), units.len());
                }
                let refs = blob_paths(&row);
                units.push(DeleteUnit {
                    ops: vec![delete_op(partition_key, row.row_key, IfMatch::Any)],
                    entity,
                    refs,
                });
            }
        }
    }
    units
}
