//! The index step of the verbs that do not plan a whole entity: a partial
//! update naming an indexed column, a partition delete, and what the
//! listings leave out.

use std::collections::HashMap;

use crate::backend::race::{lost_race, race_backoff, RACE_ATTEMPTS};
use crate::backend::{IfMatch, QueryRequest, UpdateMode, WriteOp};
use crate::entity::{Key, TableEntity};
use crate::error::{Error, ErrorKind, Result};
use crate::index::rows::{index_row, intent_row, RowKeys};
use crate::index::IndexDef;
use crate::layout::{intent_key_prefix, is_index_key, INDEX_PREFIX, INDEX_PREFIX_END, INDEX_ROW, SPLIT_OF};
use crate::query::{CmpOp, Filter};
use crate::store::write::settle::new_token;
use crate::store::write::{Committed, Write};
use crate::store::Store;
use crate::value::{ETag, Row, Value};

/// The keys of the global index rows `defs` keep for `row`.
pub(crate) fn global_keys(defs: &[IndexDef], row: &Row) -> Vec<RowKeys> {
    defs.iter()
        .filter(|d| d.global)
        .filter_map(|d| index_row(d, row).ok().flatten())
        .map(|r| (r.partition_key, r.row_key))
        .collect()
}

/// The columns a partition delete reads besides the keys: the indexed
/// columns of global indexes, whose rows it leaves intents for, and the
/// entity an index row belongs to, which it goes with.
pub(crate) fn partition_columns<T: TableEntity>() -> Vec<String> {
    let mut out: Vec<String> = T::INDEXES
        .iter()
        .filter(|d| d.global)
        .flat_map(|d| d.columns.iter().map(|c| (*c).to_owned()))
        .collect();
    if !T::INDEXES.is_empty() {
        out.push(INDEX_ROW.to_owned());
    }
    out.sort();
    out.dedup();
    out
}

/// `rows` without the intents among them: a partition delete leaves them
/// to the applier, which removes each once it applied it.
pub(crate) fn without_intents(mut rows: Vec<Row>) -> Vec<Row> {
    let intents = intent_key_prefix();
    rows.retain(|r| !r.row_key.starts_with(&intents));
    rows
}

/// Whether a partial update writing `row` changes an index of `T`: it names
/// an indexed or projected column (or a projection copies every column).
pub(crate) fn patch_touches<T: TableEntity>(row: &Row) -> bool {
    T::INDEXES.iter().any(|d| {
        row.properties
            .keys()
            .any(|c| d.covers(c) || d.columns.iter().any(|i| crate::layout::is_cell_of(c, i)))
    })
}

/// The filter that leaves index rows out of a listing: rows whose RowKey
/// (local index rows, intents) or, across partitions, PartitionKey (global
/// index rows) is under the reserved prefix.
pub(crate) fn exclusion(whole_table: bool) -> Filter {
    let outside = |key: &str| {
        Filter::cmp(key, CmpOp::Lt, Value::String(INDEX_PREFIX.to_owned())).or(Filter::cmp(
            key,
            CmpOp::Ge,
            Value::String(INDEX_PREFIX_END.to_owned()),
        ))
    };
    match whole_table {
        true => outside("PartitionKey").and(outside("RowKey")),
        false => outside("RowKey"),
    }
}

/// Whether a request names one partition (`PartitionKey eq ..` at its top).
fn names_a_partition(filter: Option<&Filter>) -> bool {
    match filter {
        Some(Filter::Compare { column, op, .. }) => column == "PartitionKey" && *op == CmpOp::Eq,
        Some(Filter::And(a, b)) => names_a_partition(Some(a)) || names_a_partition(Some(b)),
        _ => false,
    }
}

impl<T: TableEntity> Store<T> {
    /// A batch of a type with a global unique index: each entity through
    /// the whole write (its values reserved first), one at a time.
    pub(crate) async fn write_reserving(&self, entities: &[T], verb: &crate::store::write::Verb) -> Result<usize> {
        let at = crate::store::now();
        let mut encoded = Vec::with_capacity(entities.len());
        for entity in entities {
            encoded.push(
                self.encode(entity, crate::store::write::Stamps::of(verb, entity, at))
                    .await?,
            );
        }
        crate::store::write::batch::refuse_repeated_rows(encoded.iter().map(|e| &e.row))?;
        for (committed, (entity, e)) in entities.iter().zip(encoded).enumerate() {
            let written = self.write_encoded(e, verb).await;
            written.map_err(|e| crate::store::write::batch::batch_failed(committed, entity.key(), e))?;
        }
        Ok(entities.len())
    }

    /// Leaves index rows out of a listing of an indexed type, server-side.
    pub(crate) fn exclude_index_rows(&self, request: &mut QueryRequest) -> Result<()> {
        if T::INDEXES.is_empty() {
            return Ok(());
        }
        let scope = exclusion(!names_a_partition(request.filter.as_ref()));
        let combined = match request.filter.take() {
            Some(f) => f.and(scope),
            None => scope,
        };
        if let Err(Error::LimitExceeded { limit, detail }) = combined.check() {
            return Err(Error::LimitExceeded {
                limit,
                detail: format!("{detail} (up to four of them leave the rows of the type's secondary indexes out)"),
            });
        }
        request.filter = Some(combined);
        Ok(())
    }

    /// The intent each entity row of a partition delete leaves, by RowKey
    /// (none for a type without global indexes).
    pub(crate) fn partition_intents(&self, rows: &[Row]) -> Result<HashMap<String, WriteOp>> {
        let mut out = HashMap::new();
        if !crate::index::any_global(T::INDEXES) {
            return Ok(out);
        }
        for row in rows
            .iter()
            .filter(|r| r.get(SPLIT_OF).is_none() && !is_index_key(&r.row_key))
        {
            let keys = global_keys(T::INDEXES, row);
            if !keys.is_empty() {
                let intent = intent_row(&row.partition_key, &row.row_key, &new_token(), &keys)?;
                out.insert(row.row_key.clone(), WriteOp::Insert(intent));
            }
        }
        Ok(out)
    }

    /// A partial update that changes an index: the stored row is read, the
    /// merge and the index operations go in one transaction on condition of
    /// the version read (or of the caller's ETag), and a lost race without a
    /// caller's ETag is read again.
    pub(crate) async fn patch_indexed(&self, key: &Key, patch: Row, condition: IfMatch) -> Result<ETag> {
        let about = |e: Error| e.about_entity(&self.table, &key.partition_key, &key.row_key);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let stored = self.main_row(key).await?;
            let Some(stored) = stored else {
                return Err(Error::not_found(&self.table, key));
            };
            if let IfMatch::ETag(wanted) = &condition {
                if stored.etag.as_ref() != Some(wanted) {
                    return Err(Error::conflict(&self.table, key));
                }
            }
            let mut merged = stored.clone();
            for (name, value) in patch.properties.iter() {
                merged.insert(name, value.clone());
            }
            let (index_ops, plan) = self.plan_indexes(key, Some(&stored), Some(&merged))?;
            let version = stored.etag.clone().map_or(IfMatch::Any, IfMatch::ETag);
            let mut ops = vec![WriteOp::Update {
                row: patch.clone(),
                mode: UpdateMode::Merge,
                condition: version,
            }];
            ops.extend(index_ops);
            crate::index::check_transaction(&ops, self.profile().transaction_body_budget())?;
            let reservations = self.reserve_all(&plan.reservations).await?;
            match self
                .commit(
                    Write::new(ops)
                        .droppable_from(1)
                        .tokens_on([0])
                        .send_before(self.send_deadline(&reservations)),
                )
                .await
                .map(Committed::first)
            {
                Ok(outcome) => {
                    self.intents_written(&plan);
                    let etag = outcome.etag.unwrap_or_else(|| ETag::new(""));
                    self.confirm_all(T::INDEXES, &reservations, key, &etag, &merged, Some(&stored))
                        .await?;
                    return Ok(etag);
                }
                Err(e) => {
                    self.release_refused(&reservations, &e).await;
                    let (at, source) = match e {
                        Error::Transaction { index, source } => (index, *source),
                        other => (0, other),
                    };
                    let kind = source.kind();
                    if kind == ErrorKind::AlreadyExists
                        && attempt < RACE_ATTEMPTS
                        && self.unique_conflict(&plan.claims).await?
                    {
                        tokio::time::sleep(race_backoff(attempt)).await;
                        continue;
                    }
                    let may_retry = condition == IfMatch::Any && at == 0 && lost_race(kind);
                    if may_retry && attempt < RACE_ATTEMPTS {
                        tokio::time::sleep(race_backoff(attempt)).await;
                        continue;
                    }
                    return Err(match kind {
                        ErrorKind::PreconditionFailed if at == 0 => Error::conflict(&self.table, key),
                        _ => about(source),
                    });
                }
            }
        }
    }
}
