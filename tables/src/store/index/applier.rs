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
//! The handle applies the intents of its own writes in background tasks
//! ([`Store::settle_indexes`] waits for them); [`Store::apply_index_intents`]
//! finds and applies every intent of a table (after a crash, an import or a
//! partition delete).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

use super::maintain::IndexPlan;
use crate::backend::race::{lost_race, race_backoff, RACE_ATTEMPTS};
use crate::backend::{IfMatch, QueryRequest, UpdateMode, WriteOp};
use crate::entity::{Key, TableEntity};
use crate::error::Result;
use crate::index::rows::{
    entity_of, index_row, intent_keys, is_intent, reservation, same_cells, set_reservation, RowKeys,
};
use crate::index::IndexDef;
use crate::layout::intent_key_prefix;
use crate::query::{CmpOp, Filter};
use crate::service::{next_prefix, MAX_PAGE_SIZE};
use crate::store::write::{Committed, Write};
use crate::store::Store;
use crate::value::{DateTime, Row, Value};

/// The intents a handle's background tasks are applying.
#[derive(Debug, Default)]
pub(crate) struct Applying {
    pending: AtomicUsize,
    idle: Notify,
}

/// What [`Store::apply_index_intents`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AppliedIntents {
    /// Intents found.
    pub found: u64,
    /// Intents applied and removed.
    pub applied: u64,
    /// Intents left for a later run (their entity kept changing, or a
    /// reservation of its value is still young).
    pub left: u64,
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
    /// Hands the intents of a committed write to a background task of the handle.
    pub(crate) fn intents_written(&self, plan: &IndexPlan) {
        if plan.intents.is_empty() || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let applying = self.shared.applying.clone();
        applying.pending.fetch_add(1, Ordering::SeqCst);
        let store: Store<()> = Store::new(self.shared.clone(), self.table.clone());
        let (defs, intents) = (plan.defs, plan.intents.clone());
        tokio::spawn(async move {
            for (pk, rk) in intents {
                // A failure (the service busy or unreachable) is tried again a few times,
                // then left for the operator's job.
                for attempt in 1..=RACE_ATTEMPTS {
                    let applied = match store.shared.backend.get(&store.table, &pk, &rk).await {
                        Ok(Some(intent)) => store.apply_intent(defs, &intent).await.map(|_| ()),
                        Ok(None) => Ok(()),
                        Err(e) => Err(e),
                    };
                    match applied {
                        Ok(()) => break,
                        Err(e) if attempt == RACE_ATTEMPTS => {
                            tracing::warn!(table = %store.table, error = %e, "an intent was left for the next run of Store::apply_index_intents")
                        }
                        Err(_) => tokio::time::sleep(race_backoff(attempt)).await,
                    }
                }
            }
            if applying.pending.fetch_sub(1, Ordering::SeqCst) == 1 {
                applying.idle.notify_waiters();
            }
        });
    }

    /// Hands the intents a partition delete left in `partition` to a background task.
    pub(crate) fn partition_intents_written(&self, defs: &'static [IndexDef], partition: &str) {
        if !crate::index::any_global(defs) || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let applying = self.shared.applying.clone();
        applying.pending.fetch_add(1, Ordering::SeqCst);
        let store: Store<()> = Store::new(self.shared.clone(), self.table.clone());
        let partition = partition.to_owned();
        tokio::spawn(async move {
            if let Err(e) = store.apply_intents_in(defs, Some(&partition)).await {
                tracing::debug!(table = %store.table, error = %e, "intents were left for the next run of the applier");
            }
            if applying.pending.fetch_sub(1, Ordering::SeqCst) == 1 {
                applying.idle.notify_waiters();
            }
        });
    }

    /// Waits until the handle's background tasks applied what they were given.
    pub(crate) async fn applied(&self) {
        let applying = Arc::clone(&self.shared.applying);
        loop {
            let idle = applying.idle.notified();
            if applying.pending.load(Ordering::SeqCst) == 0 {
                return;
            }
            idle.await;
        }
    }

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
                match self.apply_intent(defs, intent).await? {
                    Applied::Done => out.applied += 1,
                    Applied::Left => out.left += 1,
                }
            }
        }
        Ok(out)
    }

    /// Applies one intent (see the module docs).
    pub(crate) async fn apply_intent(&self, defs: &'static [IndexDef], intent: &Row) -> Result<Applied> {
        let Some(row_key) = intent.get(crate::layout::INDEX_ROW).and_then(Value::as_str) else {
            return Ok(Applied::Left);
        };
        let entity_key = Key::new(intent.partition_key.clone(), row_key.to_owned());
        let named: BTreeSet<RowKeys> = intent_keys(intent).into_iter().collect();
        let applied = self.reconcile(defs, true, &entity_key, &named).await?;
        if applied == Applied::Done {
            self.remove_if_unchanged(intent).await?;
        }
        Ok(applied)
    }

    /// Brings the index rows of one entity into line with it: adds the rows
    /// of `defs` (global ones only, with `only_global`) its values need,
    /// removes those of `named` it does not need and holds, reads the entity
    /// again and works again if it moved. `Left` when a row is not this
    /// entity's to change now (another holder; a young reservation).
    pub(crate) async fn reconcile(
        &self,
        defs: &'static [IndexDef],
        only_global: bool,
        entity_key: &Key,
        named: &BTreeSet<RowKeys>,
    ) -> Result<Applied> {
        for _ in 0..RACE_ATTEMPTS {
            let before = self.main_row(entity_key).await?;
            let mut steps = Vec::new();
            let desired: Vec<(&IndexDef, Row)> = match &before {
                Some(e) => defs
                    .iter()
                    .filter(|d| d.global || !only_global)
                    .filter_map(|d| index_row(d, e).ok().flatten().map(|r| (d, r)))
                    .collect(),
                None => Vec::new(),
            };
            let wanted: BTreeSet<RowKeys> = desired
                .iter()
                .map(|(_, r)| (r.partition_key.clone(), r.row_key.clone()))
                .collect();
            for (def, row) in &desired {
                steps.push(self.ensure_index_row(def, row, entity_key).await?);
            }
            for keys in named.iter().filter(|k| !wanted.contains(*k)) {
                steps.push(self.remove_index_row(keys, entity_key).await?);
            }
            let after = self.main_row(entity_key).await?;
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
    /// of the writes it made (global indexes: see
    /// [`guide::secondary_indexes`](crate::guide::secondary_indexes#keeping-them-right)).
    /// A lookup through a global index after it finds every write this
    /// handle made before it was called.
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
    /// server-side), then four requests or so per intent.
    pub async fn apply_index_intents(&self, partition: Option<&str>) -> Result<AppliedIntents> {
        self.apply_intents_in(T::INDEXES, partition).await
    }
}
