//! The reservation protocol of global unique indexes
//! (`#[unique(global, protocol = "reserve")]`).
//!
//! An entity's transaction covers one partition, and a global unique
//! index row lives in the partition of its value, so the value cannot be
//! claimed in the entity's transaction. It is claimed by a reservation in
//! its own row instead, made and checked in this order:
//!
//! 1. **Reserve**: insert the value's row naming the entity, not confirmed,
//!    with the writer's clock. If the row exists and is *live* for another
//!    entity, the value is taken ([`Error::UniqueViolation`]). Otherwise
//!    (a row of this entity's own, or one that is not live) it is replaced
//!    by this writer's reservation on condition of the version read: of
//!    racing takers one wins and the others read again, and the winner
//!    holds a version of its own, which no other writer of the same entity
//!    releases and no applier of an earlier move of the entity deletes
//!    (each acts on condition of the version it read).
//! 2. **Write** the entity, but only while every reservation is younger than
//!    half the reservation timeout ([`StoreOptions::unique_reservation_timeout`](crate::StoreOptions::unique_reservation_timeout)).
//! 3. **Confirm**: mark the row confirmed, on condition of the version held.
//!    When that version moved, the row is read: a row naming this entity
//!    (another write of it refreshed it) is confirmed on its version, a row
//!    gone is claimed again, a row another entity holds live means the value
//!    was taken over while this writer stalled: the entity's value is put
//!    back as it was (the compensation) and the write fails with
//!    [`Error::UniqueViolation`].
//!
//! A reservation is live while its entity holds the value or, not yet
//! confirmed, for the reservation timeout after it was made. Hence:
//!
//! - a writer that stops after step 1 blocks the value for the timeout only;
//! - a write whose outcome is unknown ([`Error::OutcomeUnknown`]) keeps its
//!   reservations: if it lands, its entity holds the value and the row is
//!   live for as long as it does; if it never lands, the row expires;
//! - a write refused (it provably did not apply) releases them, each on
//!   condition of the version it holds and only while the entity does not
//!   hold the value (another write of the entity may rely on the row);
//! - a confirmation that cannot be sent (the service unavailable) leaves
//!   the write standing: it was acknowledged while every reservation was
//!   younger than the timeout, so no other entity could have taken the
//!   value before the entity held it, and the row is live as it is;
//! - an entity that changes or loses the value leaves an intent whose
//!   applier removes the row (and a row whose entity does not hold it is
//!   not live anyway).
//!
//! Every retry of these steps pauses as racing writers do
//! ([`race_backoff`]), and no event names a value (index rows' keys hold
//! it): events name the index and the table.

use std::time::Duration;

use super::maintain::Claim;
use crate::backend::race::{lost_race, race_backoff};
use crate::backend::{IfMatch, UpdateMode, WriteOp};
use crate::entity::Key;
use crate::error::{Error, ErrorKind, Result};
use crate::index::rows::{entity_of, index_row, reservation, set_reservation};
use crate::index::IndexDef;
use crate::store::write::{Committed, Write};
use crate::store::Store;
use crate::telemetry::error_type;
use crate::value::{DateTime, ETag, Row};

/// Attempts of each step before a contended value is reported as contended.
pub(super) const ATTEMPTS: u32 = 16;

/// A value reserved for a write: the row as written and the version this
/// writer holds.
#[derive(Debug)]
pub(crate) struct Reservation {
    pub(super) claim: Claim,
    row: Row,
    etag: ETag,
    at: DateTime,
}

/// What confirming one reservation found.
#[derive(Debug)]
enum Confirmed {
    /// The row names the entity, confirmed.
    Yes,
    /// Another entity holds the value, live.
    Lost(Key),
    /// The service could not be asked (the last error).
    Unknown(Error),
}

fn age(since: DateTime) -> Duration {
    age_at(since, DateTime::now())
}

fn age_at(since: DateTime, at: DateTime) -> Duration {
    let nanos = at.unix_nanos() - since.unix_nanos();
    Duration::from_nanos(u64::try_from(nanos.max(0)).unwrap_or(u64::MAX))
}

fn holder_of(row: &Row) -> Option<Key> {
    entity_of(row).map(|(p, r)| Key::new(p, r))
}

/// Whether `entity` (a row, `None` when absent) holds the value of `claim`.
pub(super) fn holds_claim(claim: &Claim, entity: Option<&Row>) -> bool {
    entity
        .and_then(|e| index_row(claim.def, e).ok().flatten())
        .is_some_and(|r| (r.partition_key, r.row_key) == claim.keys)
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

    /// An error of a request on an index row, about the entity (the row's
    /// keys hold the value, which errors do not show).
    fn about_claim(&self, claim: &Claim, error: Error) -> Error {
        error.about_entity(&self.table, &claim.entity.partition_key, &claim.entity.row_key)
    }

    /// Whether a reservation row still holds its value: its entity holds
    /// it, or it is unconfirmed and younger than the timeout.
    pub(crate) async fn reservation_is_live(&self, claim: &Claim, row: &Row) -> Result<bool> {
        if let Some(holder) = holder_of(row) {
            if self.holds(claim.def, &holder, row).await? {
                return Ok(true);
            }
        }
        let (at, confirmed) = reservation(row);
        Ok(!confirmed && at.is_some_and(|at| age(at) < self.reservation_timeout()))
    }

    /// Step 1 for one value.
    async fn reserve(&self, claim: &Claim) -> Result<Reservation> {
        let (pk, rk) = &claim.keys;
        for attempt in 1..=ATTEMPTS {
            if attempt > 1 {
                tokio::time::sleep(race_backoff(attempt - 1)).await;
            }
            let at = DateTime::now();
            let mut mine = claim.row.clone();
            set_reservation(&mut mine, at, false);
            match self
                .commit(Write::one(WriteOp::Insert(mine.clone())))
                .await
                .map(Committed::first)
            {
                Ok(outcome) => return Ok(self.reserved(claim, mine, outcome.etag, at)),
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                Err(e) => return Err(self.about_claim(claim, e)),
            }
            let existing = match self.shared.backend.get(&self.table, pk, rk).await {
                Ok(Some(row)) => row,
                Ok(None) => continue, // released between the insert and the read
                Err(e) => return Err(self.about_claim(claim, e)),
            };
            let ours = holder_of(&existing).as_ref() == Some(&claim.entity);
            if !ours && self.reservation_is_live(claim, &existing).await? {
                let holder = holder_of(&existing).unwrap_or_else(|| Key::new("", ""));
                return Err(self.violation(claim, holder));
            }
            // Ours (refreshed: a version of this writer's own) or not live (taken over),
            // on condition of the version read.
            let condition = existing.etag.clone().map_or(IfMatch::Any, IfMatch::ETag);
            let op = WriteOp::Update {
                row: mine.clone(),
                mode: UpdateMode::Replace,
                condition,
            };
            match self.commit(Write::one(op)).await.map(Committed::first) {
                Ok(outcome) => return Ok(self.reserved(claim, mine, outcome.etag, at)),
                Err(e) if lost_race(e.kind()) => continue,
                Err(e) => return Err(self.about_claim(claim, e)),
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
        }
    }

    /// Step 1 for every value a write moves to; step 2's guard before it is sent.
    pub(crate) async fn reserve_all(&self, claims: &[Claim]) -> Result<Vec<Reservation>> {
        let mut out = Vec::with_capacity(claims.len());
        for claim in claims {
            match self.reserve(claim).await {
                Ok(r) => out.push(r),
                Err(e) => {
                    // The entity's write was not sent: nothing relies on these.
                    self.release_all(&out).await;
                    return Err(e);
                }
            }
        }
        self.check_fresh(&out).await?;
        Ok(out)
    }

    /// The instant after which the write holding `reserved` is not sent
    /// (step 2: only while every reservation is younger than half the
    /// timeout), so that every attempt of it lands, or never will, before
    /// another writer may take a value over.
    pub(crate) fn send_deadline(&self, reserved: &[Reservation]) -> Option<std::time::Instant> {
        let half = self.reservation_timeout() / 2;
        reserved
            .iter()
            .map(|r| std::time::Instant::now() + half.saturating_sub(age(r.at)))
            .min()
    }

    /// Step 2's guard: every reservation younger than half the timeout.
    pub(crate) async fn check_fresh(&self, reserved: &[Reservation]) -> Result<()> {
        if let Some(stale) = reserved.iter().find(|r| age(r.at) >= self.reservation_timeout() / 2) {
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

    /// Deletes reservations of a write that did not apply, each on condition
    /// of the version this writer holds (one refreshed by another write of
    /// the entity, or taken over, is left to its new owner) and only while
    /// the entity does not hold the value (another write of it relies on
    /// the row). A release that fails leaves the row to expire.
    pub(crate) async fn release_all(&self, reserved: &[Reservation]) {
        for r in reserved {
            let released = async {
                let entity = self.main_row(&r.claim.entity).await?;
                if holds_claim(&r.claim, entity.as_ref()) {
                    return Ok(());
                }
                let mut row = r.row.clone();
                row.etag = Some(r.etag.clone());
                self.remove_if_unchanged(&row).await
            };
            if let Err(e) = released.await {
                tracing::warn!(table = %self.table, index = r.claim.def.name, error.type = error_type(&e), "a reservation was not released; it expires after the reservation timeout");
            }
        }
    }

    /// Step 3 for one reservation (see the module docs).
    async fn confirm(&self, r: &Reservation) -> Confirmed {
        let (pk, rk) = &r.claim.keys;
        let mut version = Some(r.etag.clone());
        let mut last = None;
        for attempt in 1..=ATTEMPTS {
            if attempt > 1 {
                tokio::time::sleep(race_backoff(attempt - 1)).await;
            }
            let mut row = r.row.clone();
            set_reservation(&mut row, r.at, true);
            let op = match &version {
                Some(v) => WriteOp::Update {
                    row,
                    mode: UpdateMode::Replace,
                    condition: IfMatch::ETag(v.clone()),
                },
                None => WriteOp::Insert(row),
            };
            match self.commit(Write::one(op)).await {
                Ok(_) => return Confirmed::Yes,
                Err(e) if lost_race(e.kind()) || e.kind() == ErrorKind::OutcomeUnknown => {}
                Err(e) => {
                    last = Some(e);
                    continue;
                }
            }
            let now = match self.shared.backend.get(&self.table, pk, rk).await {
                Ok(now) => now,
                Err(e) => {
                    last = Some(e);
                    continue;
                }
            };
            version = match now {
                // Removed meanwhile (a release of another write of the entity, a repair): claimed again.
                None => None,
                Some(row) if holder_of(&row).as_ref() == Some(&r.claim.entity) => {
                    if reservation(&row).1 {
                        return Confirmed::Yes;
                    }
                    row.etag
                }
                Some(row) => match self.reservation_is_live(&r.claim, &row).await {
                    Ok(true) => return Confirmed::Lost(holder_of(&row).unwrap_or_else(|| Key::new("", ""))),
                    Ok(false) => row.etag,
                    Err(e) => {
                        last = Some(e);
                        continue;
                    }
                },
            };
        }
        Confirmed::Unknown(last.unwrap_or_else(|| Error::conflict(&self.table, &r.claim.entity)))
    }
}

impl<T> Store<T> {
    /// Step 3 after the entity's write committed as `etag` (`written` over
    /// `previous`): confirms every reservation. When one was taken over,
    /// the entity's values are put back (the compensation), the
    /// reservations released, and the write fails with
    /// [`Error::UniqueViolation`]; when the compensation cannot be made,
    /// the reservations are kept and the write is
    /// [`Error::OutcomeUnknown`]. A confirmation the service cannot be
    /// asked for leaves the write standing (see the module docs), unless a
    /// reservation was older than the timeout when the write was
    /// acknowledged: then its outcome is unknown.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn confirm_all(
        &self,
        defs: &'static [IndexDef],
        reserved: &[Reservation],
        key: &Key,
        etag: &ETag,
        written: &Row,
        previous: Option<&Row>,
    ) -> Result<()> {
        if reserved.is_empty() {
            return Ok(());
        }
        let acknowledged = DateTime::now();
        let mut unknown = None;
        for r in reserved {
            match self.confirm(r).await {
                Confirmed::Yes => {}
                Confirmed::Unknown(e) => {
                    tracing::warn!(table = %self.table, index = r.claim.def.name, error.type = error_type(&e), "a reservation could not be confirmed; the write stands");
                    unknown.get_or_insert(e);
                }
                Confirmed::Lost(holder) => {
                    let lost = self.violation(&r.claim, holder);
                    let taken: Vec<&Reservation> = vec![r];
                    return match self.compensate(defs, &taken, key, etag, written, previous).await {
                        Ok(()) => {
                            self.release_all(reserved).await;
                            Err(lost)
                        }
                        Err(e) => {
                            tracing::warn!(table = %self.table, index = r.claim.def.name, error.type = error_type(&e), "an entity whose unique value was taken over could not be put back");
                            Err(Error::OutcomeUnknown {
                                table: self.table.clone(),
                                partition_key: key.partition_key.clone(),
                                row_key: key.row_key.clone(),
                                source: Box::new(lost),
                            })
                        }
                    };
                }
            }
        }
        match unknown {
            Some(e)
                if reserved
                    .iter()
                    .any(|r| age_at(r.at, acknowledged) >= self.reservation_timeout()) =>
            {
                Err(Error::OutcomeUnknown {
                    table: self.table.clone(),
                    partition_key: key.partition_key.clone(),
                    row_key: key.row_key.clone(),
                    source: Box::new(e),
                })
            }
            _ => Ok(()),
        }
    }
}
