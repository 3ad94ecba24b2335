//! The compensation of the reservation protocol (see `reserve.rs`): an
//! entity whose unique value was taken over while its writer stalled gets
//! the value back as it was before the write.

use super::reserve::{holds_claim, Reservation, ATTEMPTS};
use crate::backend::race::race_backoff;
use crate::backend::{IfMatch, UpdateMode, WriteOp};
use crate::entity::Key;
use crate::error::{Error, Result};
use crate::index::IndexDef;
use crate::layout::{is_cell_of, WRITE_TOKEN};
use crate::store::write::Write;
use crate::store::Store;
use crate::telemetry::error_type;
use crate::value::{ETag, Row};

/// `current` with the cells of `defs`' columns as they are in `previous`
/// (removed where `previous` has none): the entity's values put back,
/// every other change kept. The write token is left out (the write gets a
/// fresh one).
fn restore_columns(current: &Row, previous: Option<&Row>, defs: &[&IndexDef]) -> Row {
    let indexed = |cell: &str| defs.iter().any(|d| d.columns.iter().any(|c| is_cell_of(cell, c)));
    let mut row = Row::new(current.partition_key.clone(), current.row_key.clone());
    for (name, value) in current.properties.iter() {
        if !indexed(name) && name != WRITE_TOKEN {
            row.insert(name, value.clone());
        }
    }
    if let Some(prev) = previous {
        for (name, value) in prev.properties.iter().filter(|(n, _)| indexed(n)) {
            row.insert(name, value.clone());
        }
    }
    row
}

impl<T> Store<T> {
    /// Puts the values of the taken reservations back as they were before
    /// the write (`written` over `previous`, committed as `etag`): the
    /// entity as it was when it is still the version written (deleted when
    /// it was new), else only the indexed columns of the taken values, on
    /// condition of the version read. Done when the entity holds none of
    /// the taken values.
    pub(super) async fn compensate(
        &self,
        defs: &'static [IndexDef],
        taken: &[&Reservation],
        key: &Key,
        etag: &ETag,
        written: &Row,
        previous: Option<&Row>,
    ) -> Result<()> {
        let lost_defs: Vec<&IndexDef> = taken.iter().map(|r| r.claim.def).collect();
        let mut last = None;
        for attempt in 1..=ATTEMPTS {
            if attempt > 1 {
                tokio::time::sleep(race_backoff(attempt - 1)).await;
            }
            let current = match self.main_row(key).await {
                Ok(c) => c,
                Err(e) => {
                    last = Some(e);
                    continue;
                }
            };
            let Some(current) = current else {
                tracing::debug!(table = %self.table, "the entity whose value was taken over is gone");
                return Ok(());
            };
            if !taken.iter().any(|r| holds_claim(&r.claim, Some(&current))) {
                tracing::debug!(table = %self.table, "the entity whose value was taken over holds it no more");
                return Ok(());
            }
            let version = current.etag.clone().unwrap_or_else(|| ETag::new(""));
            let ours = !etag.as_str().is_empty() && version == *etag;
            let (from, to) = match (ours, previous) {
                (true, None) => (written, None),
                (false, None) => (&current, None),
                (true, Some(prev)) => {
                    let mut row = prev.clone();
                    row.properties.remove(WRITE_TOKEN);
                    (written, Some(row))
                }
                (false, Some(prev)) => (&current, Some(restore_columns(&current, Some(prev), &lost_defs))),
            };
            let main = match &to {
                None => WriteOp::Delete {
                    partition_key: key.partition_key.clone(),
                    row_key: key.row_key.clone(),
                    condition: IfMatch::ETag(version),
                },
                Some(row) => {
                    let mut row = row.clone();
                    row.etag = None;
                    row.timestamp = None;
                    WriteOp::Update {
                        row,
                        mode: UpdateMode::Replace,
                        condition: IfMatch::ETag(version),
                    }
                }
            };
            let (index_ops, plan) = super::maintain::plan(defs, key, Some(from), to.as_ref())?;
            let mut ops = vec![main];
            ops.extend(index_ops);
            let write = Write::new(ops).droppable_from(1);
            let write = if to.is_some() { write.tokens_on([0]) } else { write };
            match self.commit(write).await {
                Ok(_) => {
                    self.intents_written(&plan);
                    return Ok(());
                }
                Err(e) => {
                    tracing::debug!(table = %self.table, attempt, error.type = error_type(&e), "an entity whose value was taken over was not put back; trying again");
                    last = Some(e)
                }
            }
        }
        Err(last.unwrap_or_else(|| Error::conflict(&self.table, key)))
    }
}
