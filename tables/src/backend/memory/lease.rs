//! The lease of one in-memory blob: the service's state machine, on the
//! backend clock.
//!
//! Sources of the rules and of every status and code below:
//!
//! - Microsoft, *Lease Blob* (REST API reference): the five states, the
//!   outcome of each action in each state, durations of 15–60 s or infinite,
//!   break periods of 0–60 s, a break that shortens but never lengthens a
//!   fixed lease, renewal of an expired lease while nobody wrote or leased the
//!   blob, and the 409 answers of failed lease actions.
//! - Microsoft, *Blob service error codes*: the 412 answers of a write that
//!   names no lease id, another one, or one that is no longer active
//!   (`LeaseIdMissing`, `LeaseIdMismatchWithBlobOperation`,
//!   `LeaseNotPresentWithBlobOperation`), and the 409 lease-action codes.
//! - Azurite 3.37 (`src/blob/lease/Lease*State.ts`,
//!   `BlobWriteLeaseValidator.ts`, `errors/StorageErrorFactory.ts`): the
//!   code of each failed action per state and the messages, which the service
//!   answers alike. Where Azurite is laxer than the documentation (it renews
//!   an expired lease under any id; it does not check the break period of an
//!   infinite lease), this backend follows the documentation.

use crate::backend::blob::{LeaseAction, LeaseAnswer, LeaseDuration};
use crate::error::{Error, Result};
use crate::value::{DateTime, Guid};

const TICKS_PER_SECOND: i64 = 10_000_000;
/// Fixed leases last 15 to 60 seconds.
const DURATION_SECONDS: std::ops::RangeInclusive<u32> = 15..=60;
/// Break periods are 0 to 60 seconds.
const MAX_BREAK_SECONDS: u32 = 60;

/// The lease of a blob as stored: a state and, where it ends by itself, when.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum Lease {
    /// Never leased, released, or written to after it expired or broke.
    #[default]
    Available,
    /// Held; `until` is `None` for an infinite lease.
    Leased {
        id: Guid,
        seconds: Option<u32>,
        until: Option<DateTime>,
    },
    /// Broken, and ending at `until`; writes still need the id.
    Breaking { id: Guid, until: DateTime },
    /// Broken: no longer held, and not renewable.
    Broken { id: Guid },
    /// A fixed lease that ran out: no longer held, renewable until the blob is written or leased again.
    Expired { id: Guid, seconds: u32 },
}

fn at_plus(at: DateTime, seconds: u32) -> DateTime {
    DateTime::from_ticks(at.ticks().saturating_add(i64::from(seconds) * TICKS_PER_SECOND)).unwrap_or(DateTime::MAX)
}

fn conflict(code: &str, message: &str) -> Error {
    Error::service(409, code, message)
}

fn precondition(code: &str, message: &str) -> Error {
    Error::service(412, code, message)
}

fn invalid_header() -> Error {
    Error::service(
        400,
        "InvalidHeaderValue",
        "The value for one of the HTTP headers is not in the correct format.",
    )
}

fn already_present() -> Error {
    conflict("LeaseAlreadyPresent", "There is already a lease present.")
}

fn mismatch() -> Error {
    conflict(
        "LeaseIdMismatchWithLeaseOperation",
        "The lease ID specified did not match the lease ID for the blob.",
    )
}

fn not_present() -> Error {
    conflict(
        "LeaseNotPresentWithLeaseOperation",
        "There is currently no lease on the blob.",
    )
}

impl Lease {
    /// The lease as it stands at `now`: a fixed lease past its end has
    /// expired, a breaking lease past its end is broken.
    pub(super) fn at(self, now: DateTime) -> Lease {
        match self {
            Lease::Leased {
                id,
                seconds: Some(seconds),
                until: Some(until),
            } if until <= now => Lease::Expired { id, seconds },
            Lease::Breaking { id, until } if until <= now => Lease::Broken { id },
            other => other,
        }
    }

    /// Whether writes need the lease id (the lease status is `locked`).
    fn locked(self) -> bool {
        matches!(self, Lease::Leased { .. } | Lease::Breaking { .. })
    }

    fn id(self) -> Option<Guid> {
        match self {
            Lease::Available => None,
            Lease::Leased { id, .. }
            | Lease::Breaking { id, .. }
            | Lease::Broken { id }
            | Lease::Expired { id, .. } => Some(id),
        }
    }

    /// Checks a write (put, delete, metadata) of the blob against its lease at
    /// `now`, and returns the lease the blob has after the write: one that
    /// expired or broke is gone once the blob is written.
    pub(super) fn check_write(self, now: DateTime, given: Option<Guid>) -> Result<Lease> {
        let lease = self.at(now);
        match (lease.locked(), given) {
            (true, None) => Err(precondition(
                "LeaseIdMissing",
                "There is currently a lease on the blob and no lease ID was specified in the request.",
            )),
            (true, Some(given)) if Some(given) != lease.id() => Err(precondition(
                "LeaseIdMismatchWithBlobOperation",
                "The lease ID specified did not match the lease ID for the blob.",
            )),
            (true, Some(_)) => Ok(lease),
            (false, Some(_)) => Err(precondition(
                "LeaseNotPresentWithBlobOperation",
                "A lease ID was specified, but the lease for the blob has expired.",
            )),
            (false, None) => Ok(Lease::Available),
        }
    }

    /// Applies a lease action at `now`: the new lease and the answer.
    pub(super) fn apply(self, now: DateTime, action: LeaseAction) -> Result<(Lease, LeaseAnswer)> {
        let lease = self.at(now);
        let answer = |lease: Option<Guid>| LeaseAnswer {
            lease,
            break_seconds: None,
        };
        match action {
            LeaseAction::Acquire { duration, proposed } => {
                let seconds = match duration {
                    LeaseDuration::Seconds(s) if DURATION_SECONDS.contains(&s) => Some(s),
                    LeaseDuration::Seconds(_) => return Err(invalid_header()),
                    LeaseDuration::Infinite => None,
                };
                match lease {
                    Lease::Leased { id, .. } if proposed != Some(id) => return Err(already_present()),
                    Lease::Breaking { id, .. } if proposed == Some(id) => {
                        return Err(conflict(
                            "LeaseIsBreakingAndCannotBeAcquired",
                            "There is already a breaking lease, and can't be acquired.",
                        ))
                    }
                    Lease::Breaking { .. } => return Err(already_present()),
                    _ => {}
                }
                let id = proposed.unwrap_or_else(Guid::new_random);
                let until = seconds.map(|s| at_plus(now, s));
                Ok((Lease::Leased { id, seconds, until }, answer(Some(id))))
            }
            LeaseAction::Renew { lease: given } => match lease {
                Lease::Leased { id, seconds, .. } if id == given => {
                    let until = seconds.map(|s| at_plus(now, s));
                    Ok((Lease::Leased { id, seconds, until }, answer(Some(id))))
                }
                Lease::Expired { id, seconds } if id == given => {
                    let until = Some(at_plus(now, seconds));
                    let renewed = Lease::Leased {
                        id,
                        seconds: Some(seconds),
                        until,
                    };
                    Ok((renewed, answer(Some(id))))
                }
                Lease::Breaking { id, .. } | Lease::Broken { id } if id == given => Err(conflict(
                    "LeaseIsBrokenAndCannotBeRenewed",
                    "The lease ID matched, but the lease has been broken explicitly and cannot be renewed.",
                )),
                _ => Err(mismatch()),
            },
            LeaseAction::Change { lease: given, proposed } => match lease {
                Lease::Leased { id, seconds, until } if id == given || id == proposed => Ok((
                    Lease::Leased {
                        id: proposed,
                        seconds,
                        until,
                    },
                    answer(Some(proposed)),
                )),
                Lease::Leased { .. } => Err(mismatch()),
                Lease::Breaking { id, .. } if id == given => Err(conflict(
                    "LeaseIsBreakingAndCannotBeChanged",
                    "The lease ID matched, but the lease is currently in breaking state and cannot be changed.",
                )),
                Lease::Breaking { .. } => Err(mismatch()),
                Lease::Available | Lease::Broken { .. } | Lease::Expired { .. } => Err(not_present()),
            },
            LeaseAction::Release { lease: given } => match lease.id() {
                Some(id) if id == given => Ok((Lease::Available, answer(None))),
                _ => Err(mismatch()),
            },
            LeaseAction::Break { period } => {
                if period.is_some_and(|p| p > MAX_BREAK_SECONDS) {
                    return Err(invalid_header());
                }
                let broken = |id| {
                    let answer = LeaseAnswer {
                        lease: None,
                        break_seconds: Some(0),
                    };
                    Ok((Lease::Broken { id }, answer))
                };
                let breaking = |id, until: DateTime| {
                    if until <= now {
                        return broken(id);
                    }
                    let left = (until.ticks() - now.ticks() + TICKS_PER_SECOND / 2) / TICKS_PER_SECOND;
                    let answer = LeaseAnswer {
                        lease: None,
                        break_seconds: Some(u32::try_from(left).unwrap_or(MAX_BREAK_SECONDS)),
                    };
                    Ok((Lease::Breaking { id, until }, answer))
                };
                match (lease, period) {
                    (Lease::Available, _) => Err(not_present()),
                    (Lease::Leased { id, until: None, .. }, None | Some(0)) => broken(id),
                    (Lease::Leased { id, until: None, .. }, Some(p)) => breaking(id, at_plus(now, p)),
                    (
                        Lease::Leased {
                            id, until: Some(end), ..
                        },
                        None,
                    ) => breaking(id, end),
                    (
                        Lease::Leased {
                            id, until: Some(end), ..
                        },
                        Some(p),
                    ) => breaking(id, end.min(at_plus(now, p))),
                    (Lease::Breaking { id, until }, None) => breaking(id, until),
                    (Lease::Breaking { id, until }, Some(p)) => breaking(id, until.min(at_plus(now, p))),
                    (Lease::Broken { id } | Lease::Expired { id, .. }, _) => broken(id),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::backend::blob::{BlobBackend, DeleteOptions, LeaseAction, LeaseDuration, PutOptions};
    use crate::backend::memory::MemoryBlobBackend;
    use crate::error::Result;
    use crate::value::Guid;

    const C: &str = "leases";

    async fn backend() -> MemoryBlobBackend {
        let b = MemoryBlobBackend::new();
        b.create_container(C).await.unwrap();
        b.put(C, "k", b"v".to_vec(), PutOptions::default()).await.unwrap();
        b
    }

    fn code<T: std::fmt::Debug>(result: Result<T>) -> (u16, String) {
        match result {
            Err(crate::Error::Service { status, code, .. }) => (status, code),
            other => panic!("expected a service error, got {other:?}"),
        }
    }

    async fn acquire(b: &MemoryBlobBackend, duration: LeaseDuration, proposed: Option<Guid>) -> Result<Guid> {
        let answer = b.lease(C, "k", LeaseAction::Acquire { duration, proposed }).await?;
        Ok(answer.lease.expect("an acquired lease has an id"))
    }

    async fn write(b: &MemoryBlobBackend, lease: Option<Guid>) -> Result<()> {
        let options = PutOptions {
            lease,
            ..PutOptions::default()
        };
        b.put(C, "k", b"w".to_vec(), options).await.map(|_| ())
    }

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[tokio::test]
    async fn a_fixed_lease_expires_on_the_backend_clock_and_stays_renewable_until_the_blob_is_written() {
        let b = backend().await;
        let a = acquire(&b, LeaseDuration::Seconds(15), None).await.unwrap();
        b.advance_clock(secs(14));
        assert_eq!(code(write(&b, None).await), (412, "LeaseIdMissing".into()));
        assert_eq!(
            code(acquire(&b, LeaseDuration::Seconds(15), None).await),
            (409, "LeaseAlreadyPresent".into())
        );
        b.advance_clock(secs(2));
        // Expired: another holder could take it, and the old id renews it while nobody did.
        b.lease(C, "k", LeaseAction::Renew { lease: a }).await.unwrap();
        assert_eq!(code(write(&b, None).await), (412, "LeaseIdMissing".into()));
        b.advance_clock(secs(16));
        // Expired again, then written without a lease: the old lease is gone for good.
        write(&b, None).await.unwrap();
        assert_eq!(
            code(b.lease(C, "k", LeaseAction::Renew { lease: a }).await),
            (409, "LeaseIdMismatchWithLeaseOperation".into())
        );
        assert_eq!(
            code(write(&b, Some(a)).await),
            (412, "LeaseNotPresentWithBlobOperation".into())
        );
        // Expired and leased by another: the old id neither renews nor writes.
        let a = acquire(&b, LeaseDuration::Seconds(15), None).await.unwrap();
        b.advance_clock(secs(16));
        let other = acquire(&b, LeaseDuration::Seconds(15), None).await.unwrap();
        assert_ne!(a, other);
        assert_eq!(
            code(b.lease(C, "k", LeaseAction::Renew { lease: a }).await),
            (409, "LeaseIdMismatchWithLeaseOperation".into())
        );
        assert_eq!(
            code(write(&b, Some(a)).await),
            (412, "LeaseIdMismatchWithBlobOperation".into())
        );
        write(&b, Some(other)).await.unwrap();
    }

    #[tokio::test]
    async fn a_break_shortens_a_fixed_lease_and_writes_need_the_id_until_it_ends() {
        let b = backend().await;
        let a = acquire(&b, LeaseDuration::Seconds(60), None).await.unwrap();
        let broken = b.lease(C, "k", LeaseAction::Break { period: Some(10) }).await.unwrap();
        assert_eq!(broken.break_seconds, Some(10));
        // A longer period never lengthens it.
        let again = b.lease(C, "k", LeaseAction::Break { period: Some(30) }).await.unwrap();
        assert_eq!(again.break_seconds, Some(10));
        assert_eq!(code(write(&b, None).await), (412, "LeaseIdMissing".into()));
        write(&b, Some(a)).await.unwrap();
        assert_eq!(
            code(acquire(&b, LeaseDuration::Seconds(15), Some(a)).await),
            (409, "LeaseIsBreakingAndCannotBeAcquired".into())
        );
        assert_eq!(
            code(acquire(&b, LeaseDuration::Seconds(15), None).await),
            (409, "LeaseAlreadyPresent".into())
        );
        assert_eq!(
            code(b.lease(C, "k", LeaseAction::Renew { lease: a }).await),
            (409, "LeaseIsBrokenAndCannotBeRenewed".into())
        );
        let proposed = Guid::new_random();
        assert_eq!(
            code(b.lease(C, "k", LeaseAction::Change { lease: a, proposed }).await),
            (409, "LeaseIsBreakingAndCannotBeChanged".into())
        );
        b.advance_clock(secs(10));
        // Broken: writes go ahead without the id, the id is refused, and anyone may acquire.
        assert_eq!(
            code(write(&b, Some(a)).await),
            (412, "LeaseNotPresentWithBlobOperation".into())
        );
        assert_eq!(
            code(b.lease(C, "k", LeaseAction::Renew { lease: a }).await),
            (409, "LeaseIsBrokenAndCannotBeRenewed".into())
        );
        write(&b, None).await.unwrap();
        acquire(&b, LeaseDuration::Seconds(15), None).await.unwrap();
    }

    #[tokio::test]
    async fn a_break_without_a_period_lets_a_fixed_lease_run_out_and_breaks_an_infinite_one_at_once() {
        let b = backend().await;
        acquire(&b, LeaseDuration::Seconds(20), None).await.unwrap();
        b.advance_clock(secs(5));
        let answer = b.lease(C, "k", LeaseAction::Break { period: None }).await.unwrap();
        assert!(matches!(answer.break_seconds, Some(14..=15)), "{answer:?}");
        b.advance_clock(secs(16));
        acquire(&b, LeaseDuration::Infinite, None).await.unwrap();
        b.advance_clock(secs(3600));
        assert_eq!(code(write(&b, None).await), (412, "LeaseIdMissing".into()));
        let answer = b.lease(C, "k", LeaseAction::Break { period: None }).await.unwrap();
        assert_eq!(answer.break_seconds, Some(0));
        write(&b, None).await.unwrap();
        assert_eq!(
            code(b.lease(C, "k", LeaseAction::Break { period: Some(61) }).await),
            (400, "InvalidHeaderValue".into())
        );
    }

    #[tokio::test]
    async fn a_delete_of_a_leased_blob_needs_the_lease() {
        let b = backend().await;
        let a = acquire(&b, LeaseDuration::Seconds(15), None).await.unwrap();
        assert_eq!(
            code(b.delete(C, "k", Default::default()).await),
            (412, "LeaseIdMissing".into())
        );
        assert_eq!(code(b.touch(C, "k").await), (412, "LeaseIdMissing".into()));
        let wrong = DeleteOptions {
            lease: Some(Guid::new_random()),
            ..DeleteOptions::default()
        };
        assert_eq!(
            code(b.delete_with(C, "k", wrong).await),
            (412, "LeaseIdMismatchWithBlobOperation".into())
        );
        let right = DeleteOptions {
            lease: Some(a),
            ..DeleteOptions::default()
        };
        assert!(b.delete_with(C, "k", right).await.unwrap());
        assert_eq!(
            code(b.lease(C, "k", LeaseAction::Release { lease: a }).await),
            (404, "BlobNotFound".into())
        );
    }
}
