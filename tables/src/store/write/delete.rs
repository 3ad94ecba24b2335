//! Deletes: one entity (its main row, its continuation rows, then the blobs
//! it referenced) and whole partitions, packed into transactions by the
//! same packer as batch writes. A main row is never separated from its
//! continuation rows in a way that leaves a readable entity damaged.

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::backend::pack::{op_weight, pack};
use crate::backend::race::{race_backoff, RACE_ATTEMPTS};
use crate::backend::{IfMatch, QueryRequest, WriteOp};
use crate::entity::{ColumnKind, Key, TableEntity};
use crate::error::{ErrorKind, KeyKind, Result};
use crate::index::rows::entity_of;
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
    /// The RowKey of its first row (an entity's own).
    key: String,
    ops: Vec<WriteOp>,
    /// Whether the unit is an entity (counted), not a continuation or index row.
    entity: bool,
    /// The RowKey of the entity a continuation or index row belongs to.
    owner: Option<String>,
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
    ///
    /// Each row is deleted on condition of the version listed, so **an
    /// entity written in the partition while it runs keeps its index rows
    /// and its unique value**: an entity changed since it was listed is left
    /// in place (not counted; call again to delete it), with its
    /// continuation and index rows; a continuation or index row goes only
    /// with its entity (deleted here on the version listed) or once its
    /// entity is gone; and the intents left for global indexes name the
    /// values of the version deleted. A continuation or index row listed on
    /// a later page than its entity costs a read of the entity.
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
                let mut owners = Owners::default();
                let mut deleted = 0;
                while let Some(rows) = pages.next(|_| true).await? {
                    // Every listed row leaves the read cache, also if a transaction below fails.
                    for row in &rows {
                        self.evict(partition_key, &row.row_key);
                    }
                    // An entity of a type with global indexes leaves an intent for the applier.
                    let mut intents = self.partition_intents(&rows)?;
                    let (mut entities, dependents) =
                        delete_units(partition_key, crate::store::index::without_intents(rows));
                    for unit in &mut entities {
                        unit.ops.extend(intents.remove(&unit.key));
                    }
                    // Rows listed with their entity go with it; a later page's rows were
                    // listed after it went, so their entity is read again (it may be new).
                    owners.deleted.clear();
                    for unit in self.delete_conditionally(entities, &mut owners).await? {
                        deleted += 1;
                        self.release_blobs(&Key::new(partition_key, &unit.key), &unit.refs, &BTreeSet::new())
                            .await;
                    }
                    let mut kept = Vec::with_capacity(dependents.len());
                    for unit in dependents {
                        if self
                            .owner_is_gone(partition_key, unit.owner.as_deref(), &mut owners)
                            .await?
                        {
                            kept.push(unit);
                        }
                    }
                    self.delete_conditionally(kept, &mut owners).await?;
                }
                self.partition_intents_written(T::INDEXES, partition_key);
                Ok(deleted)
            })
            .await
    }

    /// Whether a continuation or index row owned by `owner` may go: its
    /// entity, listed on the same page, was deleted here on the version
    /// listed, or it is gone (read again otherwise).
    async fn owner_is_gone(&self, partition_key: &str, owner: Option<&str>, owners: &mut Owners) -> Result<bool> {
        let Some(owner) = owner else { return Ok(true) };
        if owners.deleted.contains(owner) {
            return Ok(true);
        }
        if owners.left.contains(owner) {
            return Ok(false);
        }
        let present = self.main_row(&Key::new(partition_key, owner)).await?.is_some();
        if present {
            owners.left.insert(owner.to_owned());
        }
        Ok(!present)
    }

    /// Deletes `units` in packed transactions, each operation on condition
    /// of the version listed. A unit that finds a row gone or changed is
    /// left out and the rest sent again (an entity changed since is
    /// remembered as left). Returns the units deleted.
    async fn delete_conditionally(&self, units: Vec<DeleteUnit>, owners: &mut Owners) -> Result<Vec<DeleteUnit>> {
        let mut done = Vec::new();
        let ranges = pack(
            units.iter().map(|u| (u.ops.len(), u.ops.iter().map(op_weight).sum())),
            self.profile().transaction_body_budget(),
        );
        let mut units = units.into_iter();
        for range in ranges {
            let mut tx: Vec<DeleteUnit> = units.by_ref().take(range.len()).collect();
            while !tx.is_empty() {
                let ops: Vec<WriteOp> = tx.iter().flat_map(|u| u.ops.iter().cloned()).collect();
                let count = ops.len();
                let (index, kind, error) = match self.commit(Write::new(ops)).await {
                    Ok(_) => {
                        owners
                            .deleted
                            .extend(tx.iter().filter(|u| u.entity).map(|u| u.key.clone()));
                        done.extend(tx.into_iter().filter(|u| u.entity));
                        break;
                    }
                    Err(crate::Error::Transaction { index, source }) if moved(source.kind()) => {
                        (index, source.kind(), crate::Error::Transaction { index, source })
                    }
                    Err(e) if count == 1 && moved(e.kind()) => (0, e.kind(), e),
                    Err(e) => return Err(e),
                };
                let mut at = index;
                let Some(u) = tx.iter().position(|u| {
                    let inside = at < u.ops.len();
                    at = at.saturating_sub(u.ops.len());
                    inside
                }) else {
                    return Err(error);
                };
                let unit = tx.remove(u);
                if unit.entity && kind == ErrorKind::PreconditionFailed {
                    owners.left.insert(unit.key);
                }
            }
        }
        Ok(done)
    }
}

/// Whether a delete's refusal says its row moved since it was listed
/// (changed or gone): the row is left to whoever moved it.
fn moved(kind: ErrorKind) -> bool {
    matches!(kind, ErrorKind::NotFound | ErrorKind::PreconditionFailed)
}

/// What a partition delete learned of the entities whose rows it lists:
/// those of the current page it deleted on the version listed, and those it
/// leaves (changed since, or written after its listing passed them).
#[derive(Default)]
struct Owners {
    deleted: HashSet<String>,
    left: HashSet<String>,
}

/// Groups a page of rows into delete units, in key order: each main row
/// with the continuation rows of it found on the same page (the entity
/// units), and the rows whose entity is not among them: continuation rows
/// and index rows (the dependent units). Every operation is on condition of
/// the version listed.
fn delete_units(partition_key: &str, rows: Vec<Row>) -> (Vec<DeleteUnit>, Vec<DeleteUnit>) {
    let mut units: Vec<DeleteUnit> = Vec::with_capacity(rows.len());
    let mut by_key: HashMap<String, usize> = HashMap::new();
    let mut dependents = Vec::new();
    for row in rows {
        let version = row.etag.clone().map_or(IfMatch::Any, IfMatch::ETag);
        let owner = continuation_owner(&row).map(str::to_owned);
        if let Some(u) = owner.as_ref().and_then(|o| by_key.get(o).copied()) {
            units[u].ops.push(delete_op(partition_key, row.row_key, version));
            continue;
        }
        let index = crate::layout::is_index_key(&row.row_key);
        if owner.is_some() || index {
            let owner = owner.or_else(|| entity_of(&row).map(|(_, rk)| rk));
            dependents.push(DeleteUnit {
                key: row.row_key.clone(),
                ops: vec![delete_op(partition_key, row.row_key, version)],
                entity: false,
                owner,
                refs: BTreeSet::new(),
            });
            continue;
        }
        by_key.insert(row.row_key.clone(), units.len());
        let refs = blob_paths(&row);
        units.push(DeleteUnit {
            key: row.row_key.clone(),
            ops: vec![delete_op(partition_key, row.row_key, version)],
            entity: true,
            owner: None,
            refs,
        });
    }
    (units, dependents)
}
