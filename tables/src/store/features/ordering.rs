//! Apply-if-newer: a change carrying an ordering token lands only when its
//! token is newer than the one stored beside the value.
//!
//! Deliveries of events are at least once and in no particular order. A
//! handler whose write depends on when its event happened stores the
//! event's token with the value, and an older event delivered after a newer
//! one finds a newer token and is dropped. The comparison and the write are
//! one compare-and-swap: read the entity with its ETag, compare the tokens,
//! apply the change and the token, write on condition of the version read;
//! a lost race is re-read and compared again, so the stored value always
//! belongs to the highest token delivered.

use futures::future::BoxFuture;

use crate::entity::{Key, TableEntity};
use crate::error::{Error, Result};
use crate::ordering::{OrderedEntity, OrderingToken};
use crate::store::write::concurrency::Step;
use crate::store::{Lookup, Outcome, Store};

/// What an ordered change did.
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub enum Delivery<T> {
    /// The token was newer: the change and the token are stored. Carries the
    /// entity as stored, with its new ETag.
    Applied(T),
    /// The stored token is as new or newer (an older change delivered late,
    /// or a redelivery): nothing was written. Carries the stored entity, so
    /// the caller sees that its subject exists.
    Stale(T),
    /// No entity has this key (and none was to be created).
    NotFound,
}

impl<T> Delivery<T> {
    /// Whether the change was written.
    pub fn applied(&self) -> bool {
        matches!(self, Delivery::Applied(_))
    }

    /// The entity as stored after the call: the one written, or the newer
    /// one that made the change stale.
    pub fn entity(self) -> Option<T> {
        match self {
            Delivery::Applied(e) | Delivery::Stale(e) => Some(e),
            Delivery::NotFound => None,
        }
    }
}

impl<T: TableEntity> Store<T> {
    /// Applies `intent` only if `token` is newer than the token stored beside
    /// the value (the `#[table(ordering)]` field), and stores `token` with
    /// the change. An entity with no token, or an empty one, takes any change.
    ///
    /// The write is conditional on the version read; a lost race is re-read
    /// and compared again (at most
    /// [`StoreOptions::mutate_attempts`](crate::StoreOptions::mutate_attempts)
    /// attempts), so a concurrent newer change is never overwritten by an
    /// older one. Fails with [`Error::Conflict`] only when other changes
    /// with older tokens kept winning every attempt (send it again), and
    /// refuses an empty `token` with [`Error::InvalidValue`] before reading.
    ///
    /// Writes that carry no position (`update`, `mutate`, `patch`) keep the
    /// stored token as it is.
    ///
    /// The call returns a boxed `Send` future, so `intent` must be `Send`.
    ///
    /// ```
    /// # use unified_tables::{TableEntity, Tables, OrderingToken, Delivery};
    /// #[derive(TableEntity, Debug)]
    /// struct Usage {
    ///     #[table(partition_key)] account: String,
    ///     #[table(row_key)] blob: String,
    ///     bytes: u64,
    ///     #[table(ordering)] sequencer: Option<OrderingToken>,
    /// }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// # let usage = Tables::memory().store::<Usage>();
    /// # usage.create(&mut Usage { account: "a".into(), blob: "b".into(), bytes: 0, sequencer: None }).await?;
    /// // Two events about one blob, delivered newest first.
    /// let newer = usage.apply_if_newer(("a", "b"), "0000000000000442", |u| u.bytes = 2048).await?;
    /// assert!(newer.applied());
    /// let older = usage.apply_if_newer(("a", "b"), "00000000000003ff", |u| u.bytes = 1024).await?;
    /// assert!(matches!(older, Delivery::Stale(ref u) if u.bytes == 2048));
    /// # Ok::<(), unified_tables::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn apply_if_newer<'a, 'k>(
        &'a self,
        key: impl Into<Lookup<'k>>,
        token: impl Into<OrderingToken>,
        intent: impl FnMut(&mut T) + Send + 'a,
    ) -> BoxFuture<'a, Result<Delivery<T>>>
    where
        T: OrderedEntity,
    {
        let work = self.ordered(self.resolve(key), token.into(), None::<fn() -> T>, intent);
        Box::pin(self.op("apply_if_newer").run(work))
    }

    /// Like [`Store::apply_if_newer`], but when no entity has the key,
    /// `create` builds it (with the looked-up key) and `intent` is applied to
    /// it before it is inserted with `token`. A lost create race is re-read
    /// and compared like any other.
    pub fn apply_if_newer_or_create<'a, 'k>(
        &'a self,
        key: impl Into<Lookup<'k>>,
        token: impl Into<OrderingToken>,
        create: impl FnMut() -> T + Send + 'a,
        intent: impl FnMut(&mut T) + Send + 'a,
    ) -> BoxFuture<'a, Result<Delivery<T>>>
    where
        T: OrderedEntity,
    {
        let work = self.ordered(self.resolve(key), token.into(), Some(create), intent);
        Box::pin(self.op("apply_if_newer_or_create").run(work))
    }

    async fn ordered(
        &self,
        key: Result<Key>,
        token: OrderingToken,
        mut create: Option<impl FnMut() -> T + Send>,
        mut intent: impl FnMut(&mut T) + Send,
    ) -> Result<Delivery<T>>
    where
        T: OrderedEntity,
    {
        let key = key?;
        if token.is_empty() {
            return Err(Error::InvalidValue {
                column: T::ORDERING_COLUMN.to_owned(),
                reason: "an ordering token cannot be empty: pass the position the change was issued at, or write a change without a position with update or mutate".into(),
            });
        }
        let mut wrong_key = None;
        let outcome = self
            .cas(&key, |current, last| match current {
                Some(e) if !token.is_newer_than(e.ordering_token()) => Step::Done(Outcome::PreconditionFailed(e)),
                // The last re-read only decides whether the change went stale.
                _ if last => Step::Done(Outcome::Conflicted),
                Some(mut e) => {
                    intent(&mut e);
                    e.set_ordering_token(token.clone());
                    Step::Update(e)
                }
                None => {
                    let Some(create) = create.as_mut() else {
                        return Step::Done(Outcome::NotFound);
                    };
                    let mut e = create();
                    if let Err(err) = self.check_same_key(&key, &e) {
                        wrong_key = Some(err);
                        return Step::Done(Outcome::NotFound);
                    }
                    intent(&mut e);
                    e.set_ordering_token(token.clone());
                    Step::Insert(e)
                }
            })
            .await?;
        if let Some(err) = wrong_key {
            return Err(err);
        }
        self.delivered(&key, outcome)
    }

    fn delivered(&self, key: &Key, outcome: Outcome<T>) -> Result<Delivery<T>> {
        match outcome {
            Outcome::Updated(e) => Ok(Delivery::Applied(e)),
            Outcome::PreconditionFailed(e) => Ok(Delivery::Stale(e)),
            Outcome::NotFound => Ok(Delivery::NotFound),
            Outcome::Conflicted => Err(Error::conflict(&self.table, key)),
            Outcome::UniqueViolation { index, value, holder } => Err(self.unique_violation(index, value, holder)),
        }
    }
}
