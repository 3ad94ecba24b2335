//! Email reservations: unique addresses across partitions.
//!
//! A user row lives in the partition of its user name, and an entity-group
//! transaction covers one partition, so the address cannot be indexed in the
//! user's transaction. Its uniqueness rests on a reservation row in the
//! partition of the address instead, made and checked in this order:
//!
//! 1. **Reserve**: create the reservation (owner, address, the reserver's
//!    clock, not confirmed). If one exists and is *live*, the address is
//!    taken; if it is not live, take it over by a replace conditional on the
//!    ETag read (of racing takers, one wins; the others read again).
//! 2. **Write the user** holding the address, but only while the reservation
//!    is younger than half the reservation timeout.
//! 3. **Confirm**: replace the reservation with `Confirmed`, conditional on
//!    the ETag of step 1. If it moved, another writer took it over: undo step
//!    2 and report the address taken.
//!
//! A reservation is live while its owner's user row holds the address, or,
//! not yet confirmed, for the reservation timeout after it was made. So a
//! writer that stops after step 1 blocks the address for the timeout only;
//! one that stops after step 2 leaves a live reservation, which is right (its
//! user holds the address); a released address, a deleted owner or an owner
//! that moved to another address frees it at once. Look-ups by address read
//! the reservation and then the owner, and answer the owner only when it
//! holds the address, so a stale reservation never names a wrong user.

use std::time::Duration;

use super::rows::EmailRow;
use super::{Identity, IdentityError, IdentityResult, User, UserId};
use crate::layout::IDENTITY_EMAIL_ROW_KEY;
use crate::{DateTime, ErrorKind};

/// Reservation attempts before a contended address is reported as contended.
const ATTEMPTS: usize = 16;

/// A conditional write that found another version, or no row: another writer was first.
pub(super) fn lost(e: &crate::Error) -> bool {
    matches!(e.kind(), ErrorKind::PreconditionFailed | ErrorKind::NotFound)
}

fn age(since: DateTime) -> Duration {
    let nanos = DateTime::now().unix_nanos() - since.unix_nanos();
    Duration::from_nanos(u64::try_from(nanos.max(0)).unwrap_or(u64::MAX))
}

impl Identity {
    fn email_key(normalized_email: &str) -> (String, &'static str) {
        (super::keys::email_partition(normalized_email), IDENTITY_EMAIL_ROW_KEY)
    }

    /// Step 1: the reservation of `normalized_email` for `owner`, with its ETag.
    pub(super) async fn reserve_email(&self, normalized_email: &str, owner: &UserId) -> IdentityResult<EmailRow> {
        let (pk, rk) = Self::email_key(normalized_email);
        let fresh = || EmailRow {
            pk: pk.clone(),
            rk: rk.to_owned(),
            user_id: owner.to_string(),
            normalized_email: normalized_email.to_owned(),
            reserved_at: DateTime::now(),
            confirmed: false,
            etag: None,
        };
        for _ in 0..ATTEMPTS {
            let mut mine = fresh();
            match self.inner.emails.create(&mut mine).await {
                Ok(_) => return Ok(mine),
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e.into()),
            }
            let Some(existing) = self.inner.emails.get((pk.as_str(), rk)).await? else {
                continue; // released between our create and our read
            };
            if existing.user_id == mine.user_id {
                return Ok(existing);
            }
            if self.reservation_is_live(&existing).await? {
                return Err(IdentityError::DuplicateEmail);
            }
            mine.etag = existing.etag;
            match self.inner.emails.update(&mut mine).await {
                Ok(_) => return Ok(mine),
                Err(e) if lost(&e) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(IdentityError::Contended)
    }

    /// Whether a reservation still holds its address (see the module docs).
    async fn reservation_is_live(&self, reservation: &EmailRow) -> IdentityResult<bool> {
        if self.holder(reservation).await?.is_some() {
            return Ok(true);
        }
        Ok(!reservation.confirmed && age(reservation.reserved_at) < self.inner.options.reservation_timeout)
    }

    /// The reservation's owner, if its user row holds the reserved address.
    pub(super) async fn holder(&self, reservation: &EmailRow) -> IdentityResult<Option<User>> {
        let Ok(owner) = reservation.user_id.parse::<UserId>() else {
            return Ok(None);
        };
        let user = self.user(&owner).await?;
        Ok(user.filter(|u| u.normalized_email() == Some(reservation.normalized_email.as_str())))
    }

    /// Step 2's guard: whether the reservation is young enough to write the user.
    pub(super) fn reservation_is_fresh(&self, reservation: &EmailRow) -> bool {
        age(reservation.reserved_at) < self.inner.options.reservation_timeout / 2
    }

    /// Step 3: `Ok(true)` once the reservation is confirmed as ours,
    /// `Ok(false)` when another writer took it over.
    pub(super) async fn confirm_reservation(&self, reservation: &EmailRow) -> IdentityResult<bool> {
        let mut confirmed = reservation.clone();
        confirmed.confirmed = true;
        match self.inner.emails.update(&mut confirmed).await {
            Ok(_) => Ok(true),
            Err(e) if lost(&e) => Ok(false),
            Err(e) if e.kind() == ErrorKind::OutcomeUnknown => {
                let now = self
                    .inner
                    .emails
                    .get((reservation.pk.as_str(), reservation.rk.as_str()))
                    .await?;
                Ok(now.is_some_and(|r| r.user_id == reservation.user_id))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Deletes the reservation if it is still the version given (else leaves it).
    pub(super) async fn release_email(&self, reservation: &EmailRow) -> IdentityResult<()> {
        match self.inner.emails.delete_entity(reservation).await {
            Ok(()) => Ok(()),
            Err(e) if lost(&e) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Deletes `owner`'s reservation of `normalized_email`, if it is theirs.
    pub(super) async fn release_email_of(&self, normalized_email: &str, owner: &UserId) -> IdentityResult<()> {
        let (pk, rk) = Self::email_key(normalized_email);
        match self.inner.emails.get((pk.as_str(), rk)).await? {
            Some(r) if r.user_id == owner.to_string() => self.release_email(&r).await,
            _ => Ok(()),
        }
    }

    /// The user holding `normalized_email`, read through its reservation.
    pub(super) async fn email_holder(&self, normalized_email: &str) -> IdentityResult<Option<User>> {
        let (pk, rk) = Self::email_key(normalized_email);
        match self.inner.emails.get((pk.as_str(), rk)).await? {
            Some(r) => self.holder(&r).await,
            None => Ok(None),
        }
    }
}
