//! Writes of a union store that keeps secondary indexes
//! ([`UnionStore::with_indexes`]): each row and its index rows in one
//! transaction, planned by the index step every entity write takes.

use super::UnionStore;
use crate::backend::pack::{op_weight, pack};
use crate::backend::race::{lost_race, race_backoff, RACE_ATTEMPTS};
use crate::backend::{IfMatch, UpdateMode, WriteOp};
use crate::entity::Key;
use crate::error::{Error, ErrorKind, Result};
use crate::store::index::maintain::{plan, IndexPlan};
use crate::store::write::batch::{batch_failed, group_by_partition};
use crate::store::write::{Committed, Write};
use crate::union::TableUnion;
use crate::value::{ETag, Row};

/// The operations writing `row` over `stored`, with its index step.
fn unit(
    indexes: &'static [crate::index::IndexDef],
    row: Row,
    stored: Option<&Row>,
) -> Result<(Vec<WriteOp>, IndexPlan)> {
    let key = Key::new(row.partition_key.clone(), row.row_key.clone());
    let (index_ops, plan) = plan(indexes, &key, stored, Some(&row))?;
    let main = match stored.and_then(|s| s.etag.clone()) {
        Some(version) => WriteOp::Update {
            row,
            mode: UpdateMode::Replace,
            condition: IfMatch::ETag(version),
        },
        None => WriteOp::Insert(row),
    };
    let mut ops = vec![main];
    ops.extend(index_ops);
    Ok((ops, plan))
}

impl<E: TableUnion> UnionStore<E> {
    /// The stored row at `key` (not a continuation row), for a write that replaces it.
    async fn stored(&self, key: &Key) -> Result<Option<Row>> {
        self.store.main_row(key).await
    }

    /// Writes one row and its index rows; an upsert reads the stored row
    /// first and writes on condition of its version, reading again after a
    /// lost race.
    pub(super) async fn write_indexed(&self, row: Row, insert: bool) -> Result<ETag> {
        let key = Key::new(row.partition_key.clone(), row.row_key.clone());
        let mut attempt = 0;
        loop {
            attempt += 1;
            let stored = if insert { None } else { self.stored(&key).await? };
            let (ops, plan) = unit(self.indexes, row.clone(), stored.as_ref())?;
            let reserved = self.store.reserve_all(&plan.reservations).await?;
            let error = match self
                .store
                .commit(
                    Write::new(ops)
                        .droppable_from(1)
                        .tokens_on([0])
                        .send_before(self.store.send_deadline(&reserved)),
                )
                .await
                .map(Committed::first)
            {
                Ok(outcome) => {
                    self.store.intents_written(&plan);
                    let etag = outcome.etag.unwrap_or_else(|| ETag::new(""));
                    self.store
                        .confirm_all(self.indexes, &reserved, &key, &etag, &row, stored.as_ref())
                        .await?;
                    return Ok(etag);
                }
                Err(e) => e,
            };
            self.store.release_refused(&reserved, &error).await;
            let (at, source) = match error {
                Error::Transaction { index, source } => (index, *source),
                other => (0, other),
            };
            let kind = source.kind();
            if kind == ErrorKind::AlreadyExists
                && attempt < RACE_ATTEMPTS
                && self.store.unique_conflict(&plan.claims).await?
            {
                tokio::time::sleep(race_backoff(attempt)).await;
                continue;
            }
            if !insert && at == 0 && lost_race(kind) && attempt < RACE_ATTEMPTS {
                tokio::time::sleep(race_backoff(attempt)).await;
                continue;
            }
            return Err(source);
        }
    }

    /// Deletes one row and its index rows, on condition of the version read.
    pub(super) async fn delete_indexed(&self, key: &Key) -> Result<bool> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let Some(stored) = self.stored(key).await? else {
                return Ok(false);
            };
            let (index_ops, plan) = plan(self.indexes, key, Some(&stored), None)?;
            let mut ops = vec![WriteOp::Delete {
                partition_key: key.partition_key.clone(),
                row_key: key.row_key.clone(),
                condition: stored.etag.clone().map_or(IfMatch::Any, IfMatch::ETag),
            }];
            ops.extend(index_ops);
            match self
                .store
                .commit(Write::new(ops).droppable_from(1))
                .await
                .map(Committed::first)
            {
                Ok(_) => {
                    self.store.intents_written(&plan);
                    return Ok(true);
                }
                Err(e) if lost_race(e.kind()) && attempt < RACE_ATTEMPTS => {
                    tokio::time::sleep(race_backoff(attempt)).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Writes rows and their index rows, each row's operations together,
    /// packed per partition into transactions.
    pub(super) async fn batch_indexed(&self, rows: Vec<Row>, insert: bool) -> Result<usize> {
        let total = rows.len();
        if crate::index::any_unique_global(self.indexes) {
            // Each value is reserved before its row is written: one row at a time.
            for (committed, row) in rows.into_iter().enumerate() {
                let key = Key::new(row.partition_key.clone(), row.row_key.clone());
                self.write_indexed(row, insert)
                    .await
                    .map_err(|e| batch_failed(committed, key, e))?;
            }
            return Ok(total);
        }
        let mut units = Vec::with_capacity(rows.len());
        for row in rows {
            let key = Key::new(row.partition_key.clone(), row.row_key.clone());
            let stored = if insert { None } else { self.stored(&key).await? };
            units.push((
                key.partition_key.clone(),
                (key, unit(self.indexes, row, stored.as_ref())?),
            ));
        }
        let mut committed = 0;
        for group in group_by_partition(units) {
            let ranges = pack(
                group
                    .iter()
                    .map(|(_, (ops, _))| (ops.len(), ops.iter().map(op_weight).sum())),
                self.store.profile().transaction_body_budget(),
            );
            let mut rest = group.into_iter();
            for range in ranges {
                let tx: Vec<(Key, (Vec<WriteOp>, IndexPlan))> = rest.by_ref().take(range.len()).collect();
                // Each unit's row and index additions first, then every index removal, which
                // may be dropped when it finds its row gone (drifted index rows), as a
                // single write's are.
                let (mut owners, mut removal_owners) = (Vec::new(), Vec::new());
                let (mut ops, mut removals) = (Vec::new(), Vec::new());
                let mut index = IndexPlan::default();
                let mut rows = Vec::new();
                for (key, (unit_ops, plan)) in tx {
                    rows.push(ops.len());
                    for op in unit_ops {
                        match op {
                            WriteOp::Delete { .. } => {
                                removal_owners.push(key.clone());
                                removals.push(op);
                            }
                            op => {
                                owners.push(key.clone());
                                ops.push(op);
                            }
                        }
                    }
                    index.absorb(plan);
                }
                let droppable = ops.len();
                ops.extend(removals);
                owners.extend(removal_owners);
                let error = match self
                    .store
                    .commit(Write::new(ops).droppable_from(droppable).tokens_on(rows))
                    .await
                    .map(Committed::first)
                {
                    Ok(_) => {
                        self.store.intents_written(&index);
                        committed += range.len();
                        continue;
                    }
                    Err(e) => e,
                };
                let (at, source) = match error {
                    Error::Transaction { index, source } => (index, *source),
                    other => (0, other),
                };
                let failed = owners.get(at).cloned().unwrap_or_else(|| owners[0].clone());
                let source = if source.kind() == ErrorKind::AlreadyExists {
                    match self.store.unique_conflict(&index.claims).await {
                        Err(violation) => violation,
                        Ok(_) => source,
                    }
                } else {
                    source
                };
                let source = match source {
                    e @ Error::UniqueViolation { .. } => e,
                    e => e.about_entity(&self.store.table, &failed.partition_key, &failed.row_key),
                };
                return Err(batch_failed(committed, failed, source));
            }
        }
        Ok(total)
    }
}
