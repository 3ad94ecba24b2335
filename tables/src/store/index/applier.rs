//! The applier of global indexes: the eventually-consistent half of the
//! eventually-consistent-transactions pattern.
//!
//! A write of an entity with global indexes records an intent in the
//! entity's own partition, in the entity's transaction: the global index
//! rows to bring into line. Applying an intent reads the entity, adds the
//! index rows its values need and removes the others the intent names (each
//! removal on condition of the version read), reads the entity again and, if
//! it changed meanwhile, works again; then it deletes the intent on
//! condition of its version. Applying is idempotent and needs no order, so a
//! crash between any two requests leaves intents the next run finishes.
//!
//! The handle applies the intents of its own writes in a bounded number of
//! background tasks (`background.rs`; [`Store::settle_indexes`] waits for
//! those handed over before it was called); [`Store::apply_index_intents`]
//! finds and applies every intent of a table (after a crash, an import or a
//! partition delete), going on past an intent that fails and naming it.

use std::collections::BTreeSet;

use crate::backend::race::{lost_race, RACE_ATTEMPTS};
use crate::backend::{IfMatch, QueryRequest, UpdateMode, WriteOp};
use crate::entity::{Key, TableEntity};
use crate::error::{Error, ErrorKind, Result};
use crate::index::rows::{
    entity_of, index_row, intent_keys, is_intent, reservation, same_cells, set_reservation, RowKeys,
};
use crate::index::IndexDef;
use crate::layout::{intent_key_prefix, INDEX_PREFIX, INDEX_SEPARATOR};
use crate::query::{CmpOp, Filter};
use crate::service::{next_prefix, MAX_PAGE_SIZE};
use crate::store::write::{Committed, Write};
use crate::store::Store;
use crate::value::{DateTime, Row, Value};

/// What [`Store::apply_index_intents`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AppliedIntents {
    /// Intents found.
    pub found: u64,
    /// Intents applied and removed.
    pub applied: u64,
    /// Intents left for a later run (their entity kept changing, or a
    /// reservation of its value is still young).
    pub left: u64,
    /// Intents that failed, each named with why; they stay for a later run.
    /// The job goes on past them: one intent the service refuses never
    /// keeps the others from being applied.
    pub failed: Vec<FailedIntent>,
}

/// An intent [`Store::apply_index_intents`] could not apply, named by its
/// keys and its index, never by the indexed value (an index row's key holds
/// the value, so neither it nor an error naming it is shown).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedIntent {
    /// The entity's PartitionKey (the intent's too).
    pub partition_key: String,
    /// The entity's RowKey.
    pub row_key: String,
    /// The intent's RowKey: delete it to give the intent up.
    pub intent: String,
    /// The index whose row could not be brought into line, when the failure
    /// was about one.
    pub index: Option<String>,
    /// What kind of failure.
    pub kind: ErrorKind,
    /// Why, without keys or values: a refusal made before sending (a value
    /// too long for its index names the index and the column), or the
    /// service's status and error code.
    pub reason: String,
}

/// A failure, and the index it was about (when it was about one).
pub(crate) type Failure = (Option<String>, Error);

/// An error's text without the keys and values it may hold: what an index
/// tool logs and reports, since an index row's key holds the indexed value.
pub(crate) fn value_free(e: &Error) -> String {
    match e {
        Error::InvalidValue { .. } | Error::OversizedValue { .. } | Error::Config { .. } => e.to_string(),
        Error::Service {
            status,
            code,
            request_id,
            ..
        } => match request_id {
            Some(id) => format!("the service answered {status} {code} (request id {id})"),
            None => format!("the service answered {status} {code}"),
        },
        Error::Transaction { source, .. } | Error::BatchFailed { source, .. } => value_free(source),
        other => format!("{:?} (the error's text names row keys and is left out)", other.kind()),
    }
}

/// The index an index row's keys belong to: `~ix|{index}|…` in its
/// PartitionKey (global) or its RowKey (local).
fn index_of_keys((pk, rk): &RowKeys) -> Option<String> {
    [pk, rk].into_iter().find_map(|key| {
        let rest = key.strip_prefix(INDEX_PREFIX)?;
        rest.split_once(INDEX_SEPARATOR).map(|(name, _)| name.to_owned())
    })
}

/// What applying one intent did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Applied {
    /// Applied, and the intent removed.
    Done,
    /// Left for a later run.
    Left,
}

/// What one step of applying did to one index row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// The row is as the entity needs it.
    Done,
    /// Another writer changed the row meanwhile: look again.
    Raced,
    /// Not this applier's to change now (another holder, a young
    /// reservation): the intent waits for a later run.
    Wait,
}

impl<T> Store<T> {
    /// Finds every intent of the table (or of one partition) and applies it.
    pub(crate) async fn apply_intents_in(
        &self,
        defs: &'static [IndexDef],
        partition: Option<&str>,
    ) -> Result<AppliedIntents> {
        let start = intent_key_prefix();
        let mut filter = Filter::cmp("RowKey", CmpOp::Ge, Value::String(start.clone()));
        if let Some(end) = next_prefix(&start) {
            filter = filter.and(Filter::cmp("RowKey", CmpOp::Lt, Value::String(end)));
        }
        if let Some(p) = partition {
            filter = Filter::eq("PartitionKey", Value::String(p.to_owned())).and(filter);
        }
        let request = QueryRequest {
            filter: Some(filter),
            select: None,
            top: Some(MAX_PAGE_SIZE),
        };
        let mut pages = self.pages(request).await?;
        let mut out = AppliedIntents::default();
        while let Some(rows) = pages.next(|_| true).await? {
            for intent in rows.iter().filter(|r| is_intent(r)) {
                out.found += 1;
                match self.apply_intent_named(defs, intent).await {
                    Ok(Applied::Done) => out.applied += 1,
                    Ok(Applied::Left) => out.left += 1,
                    Err((index, e)) => {
                        let failed = FailedIntent {
                            partition_key: intent.partition_key.clone(),
                            row_key: intent
                                .get(crate::layout::INDEX_ROW)
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_owned(),
                            intent: intent.row_key.clone(),
                            index,
                            kind: e.kind(),
                            reason: value_free(&e),
                        };
                        tracing::warn!(
                            table = %self.table,
                            index = failed.index.as_deref().unwrap_or_default(),
                            error_kind = ?failed.kind,
                            error = %failed.reason,
                            "an intent failed; the job goes on with the others"
                        );
                        out.failed.push(failed);
                    }
                }
            }
        }
        Ok(out)
    }

    /// Applies one intent (see the module docs).
    pub(crate) async fn apply_intent(&self, defs: &'static [IndexDef], intent: &Row) -> Result<Applied> {
        self.apply_intent_named(defs, intent).await.map_err(|(_, e)| e)
    }

    /// [`Store::apply_intent`], its failure with the index it was about.
    pub(crate) async fn apply_intent_named(
        &self,
        defs: &'static [IndexDef],
        intent: &Row,
    ) -> std::result::Result<Applied, Failure> {
        let Some(row_key) = intent.get(crate::layout::INDEX_ROW).and_then(Value::as_str) else {
            return Ok(Applied::Left);
        };
        let entity_key = Key::new(intent.partition_key.clone(), row_key.to_owned());
        let named: BTreeSet<RowKeys> = intent_keys(intent).into_iter().collect();
        let applied = self.reconcile_named(defs, true, &entity_key, &named).await?;
        if applied == Applied::Done {
            self.remove_if_unchanged(intent).await.map_err(|e| (None, e))?;
        }
        Ok(applied)
    }

    /// [`Store::reconcile_named`] without the index a failure was about.
    pub(crate) async fn reconcile(
        &self,
        defs: &'static [IndexDef],
        only_global: bool,
        entity_key: &Key,
        named: &BTreeSet<RowKeys>,
    ) -> Result<Applied> {
        self.reconcile_named(defs, only_global, entity_key, named)
            .await
            .map_err(|(_, e)| e)
    }

    /// Brings the index rows of one entity into line with it: adds the rows
    /// of `defs` (global ones only, with `only_global`) its values need,
    /// removes those of `named` it does not need and holds, reads the entity
    /// again and works again if it moved. `Left` when a row is not this
    /// entity's to change now (another holder; a young reservation). A value
    /// too long for its index fails, naming the index.
    pub(crate) async fn reconcile_named(
        &self,
        defs: &'static [IndexDef],
        only_global: bool,
        entity_key: &Key,
        named: &BTreeSet<RowKeys>,
    ) -> std::result::Result<Applied, Failure> {
        for _ in 0..RACE_ATTEMPTS {
            let before = self.main_row(entity_key).await.map_err(|e| (None, e))?;
            let mut steps = Vec::new();
            let mut desired: Vec<(&IndexDef, Row)> = Vec::new();
            if let Some(e) = &before {
                for def in defs.iter().filter(|d| d.global || !only_global) {
                    match index_row(def, e) {
                        Ok(Some(row)) => desired.push((def, row)),
                        Ok(None) => {}
                        Err(err) => return Err((Some(def.name.to_owned()), err)),
                    }
                }
            }
            let wanted: BTreeSet<RowKeys> = desired
                .iter()
                .map(|(_, r)| (r.partition_key.clone(), r.row_key.clone()))
                .collect();
            for (def, row) in &desired {
                let step = self.ensure_index_row(def, row, entity_key).await;
                steps.push(step.map_err(|e| (Some(def.name.to_owned()), e))?);
            }
            for keys in named.iter().filter(|k| !wanted.contains(*k)) {
                let step = self.remove_index_row(keys, entity_key).await;
                steps.push(step.map_err(|e| (index_of_keys(keys), e))?);
            }
            let after = self.main_row(entity_key).await.map_err(|e| (None, e))?;
            // The entity or a row changed while this ran: bring the rows into line again.
            if after.as_ref().map(|r| &r.etag) != before.as_ref().map(|r| &r.etag) || steps.contains(&Step::Raced) {
                continue;
            }
            if steps.contains(&Step::Wait) {
                return Ok(Applied::Left);
            }
            return Ok(Applied::Done);
        }
        Ok(Applied::Left)
    }

    /// Writes the index row the entity needs. A unique row another entity
    /// holds is left (`false`: the intent waits); one this entity holds is
    /// left to its writer's reservation protocol.
    pub(crate) async fn ensure_index_row(&self, def: &IndexDef, row: &Row, entity: &Key) -> Result<Step> {
        if !def.unique {
            let op = WriteOp::Upsert {
                row: row.clone(),
                mode: UpdateMode::Replace,
            };
            self.commit(Write::one(op)).await.map(Committed::first)?;
            return Ok(Step::Done);
        }
        let held = self
            .shared
            .backend
            .get(&self.table, &row.partition_key, &row.row_key)
            .await?;
        let ours = |h: &Row| entity_of(h).is_some_and(|(p, r)| Key::new(p, r) == *entity);
        match held {
            // The entity's own: one whose cells differ (a projection, drift) is replaced on its
            // version, but for a reservation not confirmed yet, which is its writer's.
            Some(h) if ours(&h) && (same_cells(&h, row) || (def.global && !reservation(&h).1)) => Ok(Step::Done),
            Some(h) if ours(&h) => {
                let mut row = row.clone();
                if let (true, Some(at)) = (def.global, reservation(&h).0) {
                    set_reservation(&mut row, at, true);
                }
                let op = WriteOp::Update {
                    row,
                    mode: UpdateMode::Replace,
                    condition: h.etag.clone().map_or(IfMatch::Any, IfMatch::ETag),
                };
                match self.commit(Write::one(op)).await.map(Committed::first) {
                    Ok(_) => Ok(Step::Done),
                    Err(e) if lost_race(e.kind()) => Ok(Step::Raced),
                    Err(e) => Err(e),
                }
            }
            Some(_) => Ok(Step::Wait),
            None => {
                let mut mine = row.clone();
                if def.global {
                    set_reservation(&mut mine, DateTime::now(), true);
                }
                match self
                    .commit(Write::one(WriteOp::Insert(mine)))
                    .await
                    .map(Committed::first)
                {
                    Ok(_) => Ok(Step::Done),
                    Err(e) if lost_race(e.kind()) => Ok(Step::Raced),
                    Err(e) => Err(e),
                }
            }
        }
    }

    /// Removes an index row the entity no longer needs, if it is the
    /// entity's (on condition of the version read). A young unconfirmed
    /// reservation is left to its writer (`false`: the intent waits).
    async fn remove_index_row(&self, (pk, rk): &RowKeys, entity: &Key) -> Result<Step> {
        let Some(held) = self.shared.backend.get(&self.table, pk, rk).await? else {
            return Ok(Step::Done);
        };
        if entity_of(&held).is_none_or(|(p, r)| Key::new(p, r) != *entity) {
            return Ok(Step::Done);
        }
        let (at, confirmed) = reservation(&held);
        let young = at.is_some_and(|at| {
            let nanos = DateTime::now().unix_nanos() - at.unix_nanos();
            nanos < self.shared.options.unique_reservation_timeout.as_nanos() as i128
        });
        if !confirmed && young {
            return Ok(Step::Wait);
        }
        let op = WriteOp::Delete {
            partition_key: pk.clone(),
            row_key: rk.clone(),
            condition: held.etag.clone().map_or(IfMatch::Any, IfMatch::ETag),
        };
        match self.commit(Write::one(op)).await.map(Committed::first) {
            Ok(_) => Ok(Step::Done),
            Err(e) if lost_race(e.kind()) => Ok(Step::Raced),
            Err(e) => Err(e),
        }
    }
}

impl<T: TableEntity> Store<T> {
    /// Waits until the background tasks of this handle applied the intents
    /// of the writes it made before the call (global indexes: see
    /// [`guide::secondary_indexes`](crate::guide::secondary_indexes#keeping-them-right)).
    /// A lookup through a global index after it finds every write this
    /// handle made before it was called. Writes made while it waits never
    /// keep it waiting: it returns once the intents handed over before the
    /// call are applied (or failed, and left for
    /// [`Store::apply_index_intents`]), whatever other tasks keep writing.
    ///
    /// The handle applies its intents in at most 8 background tasks; the
    /// intents of further writes wait in a queue (their keys only), oldest
    /// first, and a call of this helps with those it waits for.
    ///
    /// ```
    /// # use unified_tables::{TableEntity, Tables};
    /// #[derive(TableEntity)]
    /// struct Order { #[table(partition_key)] customer: String, #[table(row_key)] id: String, #[index(global)] status: String }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let orders = Tables::memory().store::<Order>();
    /// orders.create(&mut Order { customer: "c1".into(), id: "1".into(), status: "open".into() }).await?;
    /// orders.settle_indexes().await;
    /// assert_eq!(Order::find_by_status(&orders, "open").await?.len(), 1);
    /// # Ok::<(), unified_tables::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn settle_indexes(&self) {
        self.applied().await;
    }

    /// Finds every intent of global index writes left in the table (or in
    /// `partition`) and applies it: the job an operator runs after a crash, an
    /// import or a partition delete, or on a schedule. Idempotent; safe
    /// beside running writers and other appliers.
    ///
    /// Reads every row of the table's intent range (a scan of each partition,
    /// server-side), then four requests or so per intent. An intent that
    /// fails (the service refuses one of its rows, a value too long for its
    /// index) is left in place, named in [`AppliedIntents::failed`] by its
    /// keys and index, and the job goes on with the others; an error is
    /// returned only when the intents cannot be listed.
    pub async fn apply_index_intents(&self, partition: Option<&str>) -> Result<AppliedIntents> {
        self.op("apply_index_intents")
            .run(self.apply_intents_in(T::INDEXES, partition))
            .await
    }
}
