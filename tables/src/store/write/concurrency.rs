//! Read-modify-write: the compare-and-swap loop and the outcome verbs built on it.
//!
//! Every helper here follows one lifecycle: read the entity with its ETag,
//! apply the caller's intent to that version, write on condition of it. When
//! the write is rejected, the entity is read again and the rejection is
//! classified:
//!
//! - the write could not be settled ([`Error::OutcomeUnknown`]: its answer
//!   was lost and the rows read back cannot tell whether it landed): that
//!   error, and the intent is not applied again;
//! - the re-read itself failed: the write's own error when it says nothing
//!   was stored (throttled, unavailable), otherwise [`Error::Conflict`], with
//!   the cause logged through `tracing`;
//! - the version did not move: the write's own error (no retry can fix it);
//! - the version moved (or the row vanished): the intent is applied again to
//!   the fresh version after a pause (capped exponential backoff with full
//!   jitter), within [`StoreOptions::mutate_attempts`](crate::StoreOptions::mutate_attempts)
//!   and [`StoreOptions::mutate_budget`](crate::StoreOptions::mutate_budget), then
//!   [`Error::Conflict`] (or [`Outcome::Conflicted`]).
//!
//! The closure re-applies the intent; a body computed from a stale version is
//! never written. A write whose answer was lost is settled by the send itself
//! (its write token read back, see [`Tables::with_retry`](crate::Tables::with_retry)):
//! applied, the verb returns the stored entity; still at the version it was
//! written on condition of, it is sent again; anything else is
//! [`Error::OutcomeUnknown`]. So the intent runs once per call that lands,
//! never on a version that may already hold its own change.

use crate::backend::race::race_backoff;
use crate::backend::IfMatch;
use crate::entity::{Key, TableEntity};
use crate::error::{Error, ErrorKind, Result};
use crate::store::{Lookup, Store};

/// What an outcome verb did. Expected branches of a concurrent program are
/// values, not errors.
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub enum Outcome<T> {
    /// The write landed; the entity as stored, with its new ETag.
    Updated(T),
    /// No entity has this key.
    NotFound,
    /// The precondition of [`Store::try_transition`] did not hold; carries the
    /// current row (typically the winner of a race to the same transition).
    PreconditionFailed(T),
    /// Other writers kept changing the row for every attempt.
    Conflicted,
    /// The write would give this entity the value of a unique index
    /// (`#[unique]`) that another entity holds: nothing was stored, and the
    /// row is as it was read. Choose another value, or change or delete the
    /// holder. The error-returning verbs ([`Store::mutate`],
    /// [`Store::mutate_or_create`]) report it as
    /// [`Error::UniqueViolation`], of kind
    /// [`ErrorKind::UniqueViolation`](crate::ErrorKind::UniqueViolation).
    ///
    /// ```
    /// use unified_tables::{Outcome, TableEntity, Tables};
    /// #[derive(TableEntity, Debug, Clone)]
    /// struct User {
    ///     #[table(partition_key)] team: String,
    ///     #[table(row_key)] name: String,
    ///     #[unique] email: String,
    ///     #[table(etag)] etag: Option<unified_tables::ETag>,
    /// }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let users = Tables::memory().store::<User>();
    /// let user = |name: &str, email: &str| User { team: "t".into(), name: name.into(), email: email.into(), etag: None };
    /// users.create(&mut user("ada", "ada@example.com")).await?;
    /// users.create(&mut user("bob", "bob@example.com")).await?;
    /// match users.try_mutate(("t", "bob"), |u| u.email = "ada@example.com".into()).await? {
    ///     Outcome::UniqueViolation { index, holder, .. } => {
    ///         assert_eq!(index, "email");
    ///         assert_eq!(holder.row_key, "ada");
    ///     }
    ///     other => panic!("expected UniqueViolation, got {other:?}"),
    /// }
    /// # Ok::<(), unified_tables::Error>(())
    /// # }).unwrap();
    /// ```
    UniqueViolation {
        /// The unique index's name.
        index: String,
        /// The value, as the lookup shows it (text in quotes, numbers and dates as written).
        value: String,
        /// The keys of the entity holding the value.
        holder: Key,
    },
}

impl<T> Outcome<T> {
    /// The updated entity, if the write landed.
    pub fn updated(self) -> Option<T> {
        match self {
            Outcome::Updated(t) => Some(t),
            _ => None,
        }
    }
}

/// The next step of a compare-and-swap attempt, decided from the current row.
pub(in crate::store) enum Step<T> {
    /// Insert this new entity.
    Insert(T),
    /// Replace the row on condition of the ETag the entity carries.
    Update(T),
    /// Stop with this outcome.
    Done(Outcome<T>),
}

impl<T: TableEntity> Store<T> {
    /// Read, apply `intent`, write on condition of the version read; on a lost
    /// race re-read and re-apply. Returns the entity as stored.
    ///
    /// Under contention the attempts are bounded twice: at most
    /// [`StoreOptions::mutate_attempts`](crate::StoreOptions::mutate_attempts)
    /// (default 3), and no pause that would end past
    /// [`StoreOptions::mutate_budget`](crate::StoreOptions::mutate_budget)
    /// (default 4 s) after the call began. Between attempts the call pauses
    /// a random time from 0 up to 4 ms × 2^(attempt − 1), capped at 100 ms
    /// (full jitter: writers that lost one race to each other spread out).
    ///
    /// Fails with [`Error::NotFound`] when the row does not exist (or is
    /// deleted under the write) and [`Error::Conflict`] when every attempt
    /// lost its race.
    ///
    /// Exactly once under lost answers: when the service applied the write
    /// but the answer was lost (a timeout, a dropped connection, a 5xx such
    /// as 500 `OperationTimedOut`), the store reads the row back, finds the
    /// write's token there and returns the stored entity; the intent does not
    /// run again. When the row still has the version the write was
    /// conditional on, the write has not landed and is sent again. When the
    /// row holds another writer's version or is gone (this write may have
    /// landed first), when no read-back can be made within the
    /// [`RetryPolicy`](crate::RetryPolicy), or when the write may still land
    /// and no attempt is left, the call fails with [`Error::OutcomeUnknown`],
    /// and then it stops (read the entity before applying the change again):
    ///
    /// ```
    /// # use unified_tables::{TableEntity, Tables, ETag, Error};
    /// use unified_tables::backend::faulty::{FaultTarget, FaultTiming, FaultyBackend};
    /// use unified_tables::backend::memory::MemoryBackend;
    /// #[derive(TableEntity, Debug)]
    /// struct Counter {
    ///     #[table(partition_key)] pk: String,
    ///     #[table(row_key)] rk: String,
    ///     count: i64,
    ///     #[table(etag)] etag: Option<ETag>,
    /// }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let faulty = std::sync::Arc::new(FaultyBackend::new(MemoryBackend::new()));
    /// let store = Tables::from_arc(faulty.clone()).store::<Counter>();
    /// store.create(&mut Counter { pk: "p".into(), rk: "c".into(), count: 0, etag: None }).await?;
    /// // The next write is applied, then its answer is lost.
    /// faulty.fail_next(FaultTarget::Write, FaultTiming::After, || Error::transport("connection reset"));
    /// let c = store.mutate(("p", "c"), |c| c.count += 1).await?;
    /// assert_eq!(c.count, 1);
    /// assert_eq!(store.get(("p", "c")).await?.unwrap().count, 1, "counted once");
    /// # Ok::<(), unified_tables::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn mutate(&self, key: impl Into<Lookup<'_>>, mut intent: impl FnMut(&mut T)) -> Result<T> {
        self.op("mutate")
            .run(async move {
                let key = self.resolve(key)?;
                let outcome = self
                    .cas(&key, |current, last| match current {
                        None => Step::Done(Outcome::NotFound),
                        Some(_) if last => Step::Done(Outcome::Conflicted),
                        Some(mut e) => {
                            intent(&mut e);
                            Step::Update(e)
                        }
                    })
                    .await?;
                self.expect_updated(&key, outcome)
            })
            .await
    }

    /// Like [`Store::mutate`], but the expected branches are values:
    /// `Updated`, `NotFound`, `Conflicted`, or `UniqueViolation` when the
    /// change would give the entity a unique index's value another entity
    /// holds. Only unexpected failures are errors.
    pub async fn try_mutate(&self, key: impl Into<Lookup<'_>>, mut intent: impl FnMut(&mut T)) -> Result<Outcome<T>> {
        self.op("try_mutate")
            .run(async move {
                let key = self.resolve(key)?;
                self.cas(&key, |current, last| match current {
                    None => Step::Done(Outcome::NotFound),
                    Some(_) if last => Step::Done(Outcome::Conflicted),
                    Some(mut e) => {
                        intent(&mut e);
                        Step::Update(e)
                    }
                })
                .await
            })
            .await
    }

    /// An exactly-once transition: apply `apply` only if `when` holds for the
    /// current row. The loser of a race to the same transition gets
    /// [`Outcome::PreconditionFailed`] carrying the winner's row;
    /// [`Outcome::Conflicted`] is left for a row whose precondition still held
    /// on every attempt while other writers kept changing it, and
    /// [`Outcome::UniqueViolation`] for a change that would give the entity a
    /// unique index's value another entity holds.
    pub async fn try_transition(
        &self,
        key: impl Into<Lookup<'_>>,
        when: impl Fn(&T) -> bool,
        mut apply: impl FnMut(&mut T),
    ) -> Result<Outcome<T>> {
        self.op("try_transition")
            .run(async move {
                let key = self.resolve(key)?;
                self.cas(&key, |current, last| match current {
                    None => Step::Done(Outcome::NotFound),
                    Some(e) if !when(&e) => Step::Done(Outcome::PreconditionFailed(e)),
                    Some(_) if last => Step::Done(Outcome::Conflicted),
                    Some(mut e) => {
                        apply(&mut e);
                        Step::Update(e)
                    }
                })
                .await
            })
            .await
    }

    /// Reads the entity, or creates it from `factory` if it does not exist.
    /// A lost create race converges on the winner's row instead of failing.
    ///
    /// The factory's entity must have the looked-up key.
    ///
    /// For a `#[table(soft_delete)]` type, a key held by a soft-deleted row
    /// is taken: the call fails with [`Error::AlreadyExists`], as
    /// [`Store::create`] does, and changes nothing (it neither returns the
    /// deleted row nor brings it back). Call [`Store::restore`] to make the
    /// row live again, or [`Store::delete`] to remove it for good, then call
    /// again; [`Store::including_deleted`] reads it.
    pub async fn get_or_create(&self, key: impl Into<Lookup<'_>>, factory: impl FnOnce() -> T) -> Result<T> {
        self.op("get_or_create")
            .run(async move {
                let key = self.resolve(key)?;
                if let Some(existing) = self.get(key.clone()).await? {
                    return Ok(existing);
                }
                let mut fresh = factory();
                self.check_same_key(&key, &fresh)?;
                match self.create(&mut fresh).await {
                    Ok(_) => Ok(fresh),
                    Err(taken @ Error::AlreadyExists { .. }) => match self.get(key.clone()).await? {
                        Some(winner) => Ok(winner),
                        // A soft-deleted row holds the key: taken, nothing to converge on.
                        None if self.held_by_hidden_row(&key).await? => Err(taken),
                        // Created and deleted again between our two calls.
                        None => Err(self.conflict(&key)),
                    },
                    Err(e) => Err(e),
                }
            })
            .await
    }

    /// Insert-or-mutate: when the row is missing, `create` builds it and
    /// `mutate` is applied to it before the insert; otherwise `mutate` is
    /// applied to the stored row. The delta applies the same way on the first
    /// insert and on every later call. A lost race (a concurrent insert or
    /// update) retries as [`Store::mutate`] does.
    ///
    /// For a `#[table(soft_delete)]` type, a key held by a soft-deleted row
    /// is taken: the call fails with [`Error::AlreadyExists`], as
    /// [`Store::create`] does, without applying `mutate` to the deleted row
    /// or bringing it back. Call [`Store::restore`] first to apply the delta
    /// to the restored row, or [`Store::delete`] to start from `create`.
    pub async fn mutate_or_create(
        &self,
        key: impl Into<Lookup<'_>>,
        mut create: impl FnMut() -> T,
        mut mutate: impl FnMut(&mut T),
    ) -> Result<T> {
        self.op("mutate_or_create")
            .run(async move {
                let key = self.resolve(key)?;
                let mut wrong_key = None;
                let outcome = self
                    .cas(&key, |current, last| match current {
                        _ if last => Step::Done(Outcome::Conflicted),
                        None => {
                            let mut e = create();
                            if let Err(err) = self.check_same_key(&key, &e) {
                                wrong_key = Some(err);
                                return Step::Done(Outcome::NotFound);
                            }
                            mutate(&mut e);
                            Step::Insert(e)
                        }
                        Some(mut e) => {
                            mutate(&mut e);
                            Step::Update(e)
                        }
                    })
                    .await?;
                if let Some(err) = wrong_key {
                    return Err(err);
                }
                self.expect_updated(&key, outcome)
            })
            .await
    }

    fn expect_updated(&self, key: &Key, outcome: Outcome<T>) -> Result<T> {
        match outcome {
            Outcome::Updated(e) => Ok(e),
            Outcome::NotFound => Err(Error::not_found(&self.table, key)),
            Outcome::PreconditionFailed(_) | Outcome::Conflicted => Err(self.conflict(key)),
            Outcome::UniqueViolation { index, value, holder } => Err(self.unique_violation(index, value, holder)),
        }
    }

    /// The error of an [`Outcome::UniqueViolation`], for the verbs that report it as one.
    pub(in crate::store) fn unique_violation(&self, index: String, value: String, holder: Key) -> Error {
        Error::UniqueViolation {
            table: self.table.clone(),
            index,
            value,
            holder: Box::new(holder),
        }
    }

    fn conflict(&self, key: &Key) -> Error {
        Error::conflict(&self.table, key)
    }

    pub(in crate::store) fn check_same_key(&self, key: &Key, entity: &T) -> Result<()> {
        let actual = entity.key();
        if &actual == key {
            Ok(())
        } else {
            Err(Error::InvalidValue {
                column: "PartitionKey/RowKey".into(),
                reason: format!(
                    "the factory built an entity with keys ({}, {}) for the lookup ({}, {}): give it the looked-up keys",
                    actual.partition_key, actual.row_key, key.partition_key, key.row_key
                ),
            })
        }
    }

    /// The compare-and-swap loop shared by every verb above.
    /// `step` decides the next step from the current row; with `last` set
    /// no attempt is left, so it only decides and never runs the intent
    /// (with `n` attempts an intent runs at most `n` times).
    pub(in crate::store) async fn cas(
        &self,
        key: &Key,
        mut step: impl FnMut(Option<T>, bool) -> Step<T>,
    ) -> Result<Outcome<T>> {
        let attempts = self.shared.options.mutate_attempts.get();
        let budget = self.shared.options.mutate_budget;
        let started = std::time::Instant::now();
        let mut current = self.read(key).await?;
        let mut attempt = 0u32;
        // Set once the attempts or the time budget are spent.
        let mut spent = false;
        loop {
            attempt += 1;
            let read_version = current.as_ref().map(|(_, etag)| etag.clone());
            let last = spent || attempt > attempts;
            let (mut entity, insert) = match step(current.take().map(|(e, _)| e), last) {
                Step::Done(outcome) => return Ok(outcome),
                // The last re-read only decides NotFound / PreconditionFailed.
                _ if last => return Ok(Outcome::Conflicted),
                Step::Insert(e) => (e, true),
                Step::Update(e) => (e, false),
            };
            let written = match (&read_version, insert) {
                (_, true) => self.create(&mut entity).await,
                (Some(version), false) => self.replace_if(&mut entity, IfMatch::ETag(version.clone())).await,
                // A plan never updates a row it did not read.
                (None, false) => return Ok(Outcome::NotFound),
            };
            let write_error = match written {
                Ok(_) => return Ok(Outcome::Updated(entity)),
                // The write could not be settled: re-applying the intent could apply it twice.
                Err(e @ Error::OutcomeUnknown { .. }) => return Err(e),
                Err(
                    e @ (Error::InvalidKey { .. }
                    | Error::InvalidValue { .. }
                    | Error::OversizedValue { .. }
                    | Error::Protected { .. }
                    | Error::LimitExceeded { .. }
                    | Error::BlobOffloadNotConfigured { .. }
                    | Error::MissingETag { .. }),
                ) => {
                    // Refused before sending: nothing to classify.
                    return Err(e);
                }
                Err(e) => e,
            };
            // Classify the rejection by reading again.
            let fresh = match self.read(key).await {
                Ok(fresh) => fresh,
                Err(read_error) => {
                    tracing::warn!(
                        target: crate::telemetry::DECISION_TARGET,
                        write_error = crate::telemetry::error_type(&write_error),
                        read_error = crate::telemetry::error_type(&read_error),
                        "a conditional write was rejected and the re-read failed; reporting a conflict"
                    );
                    // The write was settled as not applied (or refused): nothing of it is stored.
                    return Err(match write_error.kind() {
                        ErrorKind::Unavailable | ErrorKind::Throttled => write_error,
                        _ => self.conflict(key),
                    });
                }
            };
            let fresh_version = fresh.as_ref().map(|(_, etag)| etag.clone());
            // A create refused by a row this view does not read (soft-deleted):
            // the key is taken, and no retry can insert it.
            if insert
                && fresh_version.is_none()
                && write_error.kind() == ErrorKind::AlreadyExists
                && self.held_by_hidden_row(key).await?
            {
                return Err(write_error);
            }
            // Another entity holds a unique value the write would take, and
            // the row did not move under it: an expected branch, not a race.
            if fresh_version == read_version {
                if let Error::UniqueViolation {
                    index, value, holder, ..
                } = write_error
                {
                    return Ok(Outcome::UniqueViolation {
                        index,
                        value,
                        holder: *holder,
                    });
                }
            }
            // A create that lost to a row deleted again since: the state moved, try again.
            let vanished = insert && fresh_version.is_none();
            if fresh_version == read_version && !vanished {
                // The version did not move: the write failed for a reason a retry cannot fix.
                return Err(write_error);
            }
            if attempt < attempts {
                let pause = race_backoff(attempt);
                if started.elapsed() + pause > budget {
                    tracing::debug!(target: crate::telemetry::DECISION_TARGET, attempt, ?budget, "lost an optimistic race with the time budget spent");
                    spent = true;
                } else {
                    tracing::debug!(name: crate::telemetry::LOST_RACE, target: crate::telemetry::DECISION_TARGET, attempt, backoff_ms = pause.as_millis() as u64, "lost an optimistic race; re-applying to the fresh version");
                    crate::telemetry::retry("lost_race");
                    tokio::time::sleep(pause).await;
                }
            }
            current = fresh;
        }
    }
}
