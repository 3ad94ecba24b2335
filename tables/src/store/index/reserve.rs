//! The reservation protocol of global unique indexes
//! (`#[unique(global, protocol = "reserve")]`).
//!
//! An entity's transaction covers one partition, and a global unique
//! index row lives in the partition of its value, so the value cannot be
//! claimed in the entity's transaction. It is claimed by a reservation in
//! its own row instead, made and checked in this order:
//!
//! 1. **Reserve**: insert the value's row naming the entity, not confirmed,
//!    with the writer's clock. If the row exists and is *live*, the value is
//!    taken ([`Error::UniqueViolation`]); if it is not live, take it over by
//!    a replace on condition of the ETag read (of racing takers, one wins; the
//!    others read again). A row of this entity's own is refreshed the same way.
//! 2. **Write** the entity, but only while every reservation is younger than
//!    half the reservation timeout ([`StoreOptions::unique_reservation_timeout`](crate::StoreOptions::unique_reservation_timeout)).
//! 3. **Confirm**: replace the reservation with `confirmed`, on condition of
//!    the ETag of step 1. If it moved, another writer took the value over
//!    while this one stalled: the entity is written back as it was and the
//!    write fails with [`Error::UniqueViolation`].
//!
//! A reservation is live while its entity holds the value or, not yet
//! confirmed, for the reservation timeout after it was made. A writer that
//! stops after step 1 blocks the value for the timeout only; one that stops
//! after step 2 leaves a live reservation, which is right (its entity holds
//! the value); an entity that changes or loses the value leaves an intent
//! whose applier removes the row (and a row whose entity does not hold it is
//! not live anyway). Refused writes release their reservations.

use std::time::Duration;

use super::maintain::Claim;
use crate::backend::{IfMatch, UpdateMode, WriteOp};
use crate::entity::Key;
use crate::error::{Error, ErrorKind, Result};
use crate::index::rows::{entity_of, reservation, set_reservation};
use crate::store::write::{Committed, Write};
use crate::store::Store;
use crate::value::{DateTime, ETag, Row};

/// Reservation attempts before a contended value is reported as contended.
const ATTEMPTS: usize = 16;

/// A value reserved for a write: the row as written and its version.
#[derive(Debug)]
pub(crate) struct Reservation {
    claim: Claim,
    row: Row,
    etag: ETag,
    at: DateTime,
    /// The entity's own row found in place (the entity may hold the value
    /// already): kept as it is, never released; its confirmation, on
    /// condition of the version found, tells whether it is still the entity's.
    kept: bool,
}

fn age(since: DateTime) -> Duration {
    let nanos = DateTime::now().unix_nanos() - since.unix_nanos();
    Duration::from_nanos(u64::try_from(nanos.max(0)).unwrap_or(u64::MAX))
}

impl<T> Store<T> {
    fn reservation_timeout(&self) -> Duration {
        self.shared.options.unique_reservation_timeout
    }

    fn violation(&self, claim: &Claim, holder: Key) -> Error {
        Error::UniqueViolation {
            table: self.table.clone(),
            index: claim.def.name.to_owned(),
            value: claim.shown.clone(),
            holder: Box::new(holder),
        }
    }

    /// Whether a reservation row still holds its value: its entity holds
    /// it, or it is unconfirmed and younger than the timeout.
    pub(crate) async fn reservation_is_live(&self, claim: &Claim, row: &Row) -> Result<bool> {
        if let Some((pk, rk)) = entity_of(row) {
            if self.holds(claim.def, &Key::new(pk, rk), row).await? {
                return Ok(true);
            }
        }
        let (at, confirmed) = reservation(row);
        Ok(!confirmed && at.is_some_and(|at| age(at) < self.reservation_timeout()))
    }

    /// Step 1 for one value.
    async fn reserve(&self, claim: &Claim) -> Result<Reservation> {
        for _ in 0..ATTEMPTS {
            let at = DateTime::now();
            let mut mine = claim.row.clone();
            set_reservation(&mut mine, at, false);
            let (pk, rk) = &claim.keys;
            match self
                .commit(Write::one(WriteOp::Insert(mine.clone())))
                .await
                .map(Committed::first)
            {
                Ok(outcome) => return Ok(self.reserved(claim, mine, outcome.etag, at)),
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e.about_entity(&self.table, pk, rk)),
            }
            let Some(existing) = self.shared.backend.get(&self.table, pk, rk).await? else {
                continue; // released between the insert and the read
            };
            let ours = entity_of(&existing).is_some_and(|(p, r)| Key::new(p, r) == claim.entity);
            if ours {
                let (found_at, _) = reservation(&existing);
                let mut kept = self.reserved(claim, mine, existing.etag.clone(), found_at.unwrap_or(at));
                kept.kept = true;
                return Ok(kept);
            }
            if self.reservation_is_live(claim, &existing).await? {
                let holder = entity_of(&existing).map_or_else(|| Key::new("", ""), |(p, r)| Key::new(p, r));
                return Err(self.violation(claim, holder));
            }
            // Not live: take it over on condition of the version read.
            let condition = existing.etag.clone().map_or(IfMatch::Any, IfMatch::ETag);
            let op = WriteOp::Update {
                row: mine.clone(),
                mode: UpdateMode::Replace,
                condition,
            };
            match self.commit(Write::one(op)).await.map(Committed::first) {
                Ok(outcome) => return Ok(self.reserved(claim, mine, outcome.etag, at)),
                Err(e) if crate::backend::race::lost_race(e.kind()) => continue,
                Err(e) => return Err(e.about_entity(&self.table, pk, rk)),
            }
        }
        tracing::debug!(table = %self.table, index = claim.def.name, "a unique value was contended on every attempt");
        Err(Error::conflict(&self.table, &claim.entity))
    }

    fn reserved(&self, claim: &Claim, row: Row, etag: Option<ETag>, at: DateTime) -> Reservation {
        Reservation {
            claim: claim.clone(),
            row,
            etag: etag.unwrap_or_else(|| ETag::new("")),
            at,
            kept: false,
        }
    }

    /// Step 1 for every value a write moves to; step 2's guard before it is sent.
    pub(crate) async fn reserve_all(&self, claims: &[Claim]) -> Result<Vec<Reservation>> {
        let mut out = Vec::with_capacity(claims.len());
        for claim in claims {
            match self.reserve(claim).await {
                Ok(r) => out.push(r),
                Err(e) => {
                    self.release_all(&out).await;
                    return Err(e);
                }
            }
        }
        self.check_fresh(&out).await?;
        Ok(out)
    }

    /// Step 2's guard: every reservation younger than half the timeout.
    pub(crate) async fn check_fresh(&self, reserved: &[Reservation]) -> Result<()> {
        if let Some(stale) = reserved
            .iter()
            .find(|r| !r.kept && age(r.at) >= self.reservation_timeout() / 2)
        {
            let entity = stale.claim.entity.clone();
            tracing::debug!(table = %self.table, index = stale.claim.def.name, "a reservation grew older than half its timeout before the write");
            self.release_all(reserved).await;
            return Err(Error::conflict(&self.table, &entity));
        }
        Ok(())
    }

    /// After the write they were made for failed with `error`: releases the
    /// reservations when the failure proves the write was not applied, and
    /// keeps them when it may still land ([`ErrorKind::OutcomeUnknown`]):
    /// a write that lands after its reservation was deleted would hold the
    /// value with no row, and a second entity could take it. A kept
    /// reservation is live while young and, once its entity holds the
    /// value, for as long as it does; otherwise it expires.
    pub(crate) async fn release_refused(&self, reserved: &[Reservation], error: &Error) {
        if error.kind() == ErrorKind::OutcomeUnknown {
            if !reserved.is_empty() {
                tracing::debug!(table = %self.table, "a write in doubt keeps its reservations until it is known");
            }
            return;
        }
        self.release_all(reserved).await;
    }

    /// Deletes reservations of a write that was refused (each on condition
    /// of its version: one taken over since is left to its new owner).
    pub(crate) async fn release_all(&self, reserved: &[Reservation]) {
        for r in reserved.iter().filter(|r| !r.kept) {
            let mut row = r.row.clone();
            row.etag = Some(r.etag.clone());
            if let Err(e) = self.remove_if_unchanged(&row).await {
                tracing::warn!(table = %self.table, index = r.claim.def.name, error = %e, "a reservation was not released; it expires after the reservation timeout");
            }
        }
    }

    /// Step 3: confirms each reservation; `Err(UniqueViolation)` when one was
    /// taken over (the caller then writes the entity back).
    async fn confirm(&self, reserved: &[Reservation]) -> Result<()> {
        for r in reserved {
            let mut row = r.row.clone();
            set_reservation(&mut row, r.at, true);
            let op = WriteOp::Update {
                row,
                mode: UpdateMode::Replace,
                condition: IfMatch::ETag(r.etag.clone()),
            };
            let (pk, rk) = &r.claim.keys;
            match self.commit(Write::one(op)).await.map(Committed::first) {
                Ok(_) => {}
                Err(e) if crate::backend::race::lost_race(e.kind()) || e.kind() == ErrorKind::OutcomeUnknown => {
                    let now = self.shared.backend.get(&self.table, pk, rk).await?;
                    let holder = now.as_ref().and_then(entity_of).map(|(p, r)| Key::new(p, r));
                    if holder.as_ref() != Some(&r.claim.entity) {
                        return Err(self.violation(&r.claim, holder.unwrap_or_else(|| Key::new("", ""))));
                    }
                }
                Err(e) => return Err(e.about_entity(&self.table, pk, rk)),
            }
        }
        Ok(())
    }
}

impl<T> Store<T> {
    /// Step 3 after the entity's write committed as `etag`: confirm; when a
    /// reservation was taken over, write the entity back as it was
    /// (`previous`, or delete it when it was new) on condition of `etag`,
    /// and fail with [`Error::UniqueViolation`].
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn confirm_all(
        &self,
        defs: &'static [crate::index::IndexDef],
        reserved: &[Reservation],
        key: &Key,
        etag: &ETag,
        written: &Row,
        previous: Option<&Row>,
    ) -> Result<()> {
        if reserved.is_empty() {
            return Ok(());
        }
        let Err(lost) = self.confirm(reserved).await else {
            return Ok(());
        };
        let main = match previous {
            None => WriteOp::Delete {
                partition_key: key.partition_key.clone(),
                row_key: key.row_key.clone(),
                condition: IfMatch::ETag(etag.clone()),
            },
            Some(prev) => {
                let mut row = prev.clone();
                row.etag = None;
                row.timestamp = None;
                WriteOp::Update {
                    row,
                    mode: UpdateMode::Replace,
                    condition: IfMatch::ETag(etag.clone()),
                }
            }
        };
        let (index_ops, plan) = super::maintain::plan(defs, key, Some(written), previous)?;
        let mut ops = vec![main];
        ops.extend(index_ops);
        match self
            .commit(Write::new(ops).droppable_from(1))
            .await
            .map(Committed::first)
        {
            Ok(_) => self.intents_written(&plan),
            Err(e) => {
                tracing::warn!(table = %self.table, error = %e, "an entity that lost its unique reservation could not be written back")
            }
        }
        self.release_all(reserved).await;
        Err(lost)
    }
}
