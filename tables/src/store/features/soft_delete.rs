//! Soft deletion: which rows a store reads, the filter that leaves the
//! others out server-side, and the verbs that set and clear the stamp.
//!
//! For a type with a `#[table(soft_delete)]` field every read and query
//! goes through [`Store::admits`] (point reads, checked on the row read)
//! or [`Store::scope_request`] (listings, one more comparison in the
//! `$filter`), so the two always agree on which rows exist.

use futures::future::BoxFuture;

use crate::backend::{IfMatch, QueryRequest, UpdateMode, WriteOp};
use crate::entity::{Key, TableEntity};
use crate::error::{Error, ErrorKind, Result};
use crate::layout::{NOT_DELETED, SPLIT_OF};
use crate::query::{CmpOp, Filter};
use crate::service::MAX_PAGE_SIZE;
use crate::soft_delete::{RowState, SoftDelete};
use crate::store::write::{Committed, Write};
use crate::store::{Lookup, Outcome, QueryOptions, Store};
use crate::value::{DateTime, Row, Value};

/// Which rows of a `#[table(soft_delete)]` type a store reads. Types without
/// a deletion stamp read every row whatever the setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Visibility {
    /// Only live rows (the default): the deletion stamp holds
    /// [`NOT_DELETED`](crate::layout::NOT_DELETED).
    #[default]
    Live,
    /// Every row, deleted or not, and rows without a stamp cell.
    All,
    /// Only soft-deleted rows: the stamp holds a later instant.
    Deleted,
}

impl<T: TableEntity> Store<T> {
    /// Which rows this store reads.
    pub fn visibility(&self) -> Visibility {
        self.visibility
    }

    /// Whether a stored main row is visible through this store: exactly
    /// the rows the listing filter of [`Store::scope_request`] selects.
    pub(crate) fn admits(&self, row: &Row) -> bool {
        let Some(column) = T::SOFT_DELETE_COLUMN else {
            return true;
        };
        match (self.visibility, RowState::of(row, column)) {
            (Visibility::All, _) => true,
            (Visibility::Live, state) => state == RowState::Live,
            (Visibility::Deleted, state) => state == RowState::Deleted,
        }
    }

    /// The comparison that selects this store's rows server-side, if any.
    fn visibility_filter(&self) -> Option<Filter> {
        let column = T::SOFT_DELETE_COLUMN?;
        match self.visibility {
            Visibility::All => None,
            Visibility::Live => Some(Filter::eq(column, Value::DateTime(NOT_DELETED))),
            Visibility::Deleted => Some(Filter::cmp(column, CmpOp::Gt, Value::DateTime(NOT_DELETED))),
        }
    }

    /// Adds the visibility comparison to a listing's `$filter`.
    pub(crate) fn scope_request(&self, request: &mut QueryRequest) -> Result<()> {
        let Some(scope) = self.visibility_filter() else {
            return Ok(());
        };
        let combined = match request.filter.take() {
            Some(filter) => filter.and(scope),
            None => scope,
        };
        if let Err(Error::LimitExceeded { limit, detail }) = combined.check() {
            return Err(Error::LimitExceeded {
                limit,
                detail: format!(
                    "{detail} (one of them leaves soft-deleted rows out; a store from including_deleted() does not add it)"
                ),
            });
        }
        request.filter = Some(combined);
        Ok(())
    }

    /// A page cursor's binding with this store's visibility, so that a
    /// cursor of one view is refused by another.
    pub(crate) fn scoped_fingerprint(&self, fingerprint: String) -> String {
        match (T::SOFT_DELETE_COLUMN, self.visibility) {
            (None, _) | (_, Visibility::Live) => fingerprint,
            (Some(_), visibility) => format!("{fingerprint}|{visibility:?}"),
        }
    }

    /// Whether a row this store does not read holds `key`: a soft-deleted
    /// row under a live view (or a live one under `only_deleted()`), which
    /// takes the key from an insert. One round trip, only for a type with a
    /// deletion stamp read through a view that leaves rows out.
    pub(in crate::store) async fn held_by_hidden_row(&self, key: &Key) -> Result<bool> {
        if T::SOFT_DELETE_COLUMN.is_none() || self.visibility == Visibility::All {
            return Ok(false);
        }
        let row = self
            .shared
            .backend
            .get(&self.table, &key.partition_key, &key.row_key)
            .await?;
        Ok(row.is_some_and(|row| row.get(SPLIT_OF).is_none() && !self.admits(&row)))
    }

    fn with_visibility(&self, visibility: Visibility) -> Store<T> {
        let mut store = self.clone();
        store.visibility = visibility;
        store
    }

    /// A store over the same table whose reads and queries include
    /// soft-deleted rows (and rows without a stamp cell).
    pub fn including_deleted(&self) -> Store<T>
    where
        T: SoftDelete,
    {
        self.with_visibility(Visibility::All)
    }

    /// A store over the same table whose reads and queries return only
    /// soft-deleted rows.
    pub fn only_deleted(&self) -> Store<T>
    where
        T: SoftDelete,
    {
        self.with_visibility(Visibility::Deleted)
    }

    /// A store over the same table that reads live rows only (the default).
    pub fn only_live(&self) -> Store<T>
    where
        T: SoftDelete,
    {
        self.with_visibility(Visibility::Live)
    }

    /// Marks the entity deleted: sets its deletion stamp and its updated
    /// stamp in one write, on condition of the version read (a lost race is
    /// re-read, as [`Store::mutate`] does). The row stays stored; reads and
    /// queries leave it out until [`Store::restore`].
    ///
    /// Returns `true` when this call deleted it, `false` when no entity has
    /// the key or it was already soft-deleted (its stamp is kept). Two round
    /// trips. [`Store::delete`] still removes a row for good.
    ///
    /// ```
    /// # use unified_tables::{TableEntity, Tables, DateTime, QueryOptions};
    /// #[derive(TableEntity, Debug)]
    /// struct Post {
    ///     #[table(partition_key)] room: String,
    ///     #[table(row_key)] id: String,
    ///     text: String,
    ///     #[table(soft_delete)] deleted_at: Option<DateTime>,
    /// }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// # let posts = Tables::memory().store::<Post>();
    /// # posts.create(&mut Post { room: "r".into(), id: "1".into(), text: "hi".into(), deleted_at: None }).await?;
    /// assert!(posts.soft_delete(("r", "1")).await?);
    /// assert!(posts.get(("r", "1")).await?.is_none());
    /// assert_eq!(posts.count(QueryOptions::partition("r")).await?, 0);
    /// let kept = posts.including_deleted().get(("r", "1")).await?.unwrap();
    /// assert!(kept.deleted_at.is_some());
    ///
    /// assert!(posts.restore(("r", "1")).await?);
    /// assert!(posts.get(("r", "1")).await?.is_some());
    /// # Ok::<(), unified_tables::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn soft_delete<'k>(&self, key: impl Into<Lookup<'k>>) -> BoxFuture<'_, Result<bool>>
    where
        T: SoftDelete,
    {
        let key = self.resolve(key);
        Box::pin(self.op("soft_delete").run(async move {
            let key = key?;
            let at = DateTime::now();
            let outcome = self
                .including_deleted()
                .try_transition(&key, |e| e.deleted_at().is_none(), |e| e.set_deleted_at(Some(at)))
                .await?;
            self.changed(&key, outcome)
        }))
    }

    /// Clears the deletion stamp of a soft-deleted entity and sets its
    /// updated stamp, in one write on condition of the version read.
    /// Returns `true` when this call restored it, `false` when no entity
    /// has the key or it was not deleted. Two round trips.
    pub fn restore<'k>(&self, key: impl Into<Lookup<'k>>) -> BoxFuture<'_, Result<bool>>
    where
        T: SoftDelete,
    {
        let key = self.resolve(key);
        Box::pin(self.op("restore").run(async move {
            let key = key?;
            let outcome = self
                .including_deleted()
                .try_transition(&key, |e| e.deleted_at().is_some(), |e| e.set_deleted_at(None))
                .await?;
            self.changed(&key, outcome)
        }))
    }

    fn changed(&self, key: &Key, outcome: Outcome<T>) -> Result<bool> {
        match outcome {
            Outcome::Updated(_) => Ok(true),
            Outcome::NotFound | Outcome::PreconditionFailed(_) => Ok(false),
            Outcome::Conflicted => Err(Error::conflict(&self.table, key)),
            // The row restored would take a unique value another entity holds now.
            Outcome::UniqueViolation { index, value, holder } => Err(self.unique_violation(index, value, holder)),
        }
    }

    /// Writes the live marker ([`NOT_DELETED`]) into the rows the options
    /// select that have no deletion-stamp cell at all: rows written before
    /// the type had `#[table(soft_delete)]`, or by a program that does not
    /// write the column. The service cannot match such rows with any
    /// comparison, so until they are marked no read or query of a live
    /// view returns them. Each row gets a Merge of that one cell on
    /// condition of the version listed; a row changed since is left to its
    /// writer. Returns how many rows were marked.
    ///
    /// Reads the selected rows' keys (one request per 1000 rows) and writes
    /// one request per row without the cell.
    pub fn mark_rows_without_deletion_stamp<S: Send + 'static>(
        &self,
        options: QueryOptions<T, S>,
    ) -> BoxFuture<'_, Result<u64>>
    where
        T: SoftDelete,
    {
        Box::pin(self.mark_unmarked(options))
    }

    async fn mark_unmarked<S: Send>(&self, options: QueryOptions<T, S>) -> Result<u64>
    where
        T: SoftDelete,
    {
        let column = T::DELETED_COLUMN;
        let mut request = self.including_deleted().request_for(&options)?;
        request.select = Some(vec!["RowKey".to_owned(), column.to_owned(), SPLIT_OF.to_owned()]);
        request.top = Some(MAX_PAGE_SIZE);
        let mut unmarked = Vec::new();
        let mut pages = self.pages(request).await?;
        while let Some(rows) = pages.next(|_| true).await? {
            unmarked.extend(
                rows.into_iter()
                    .filter(|r| r.get(column).is_none() && r.get(SPLIT_OF).is_none()),
            );
        }
        let mut marked = 0;
        for listed in unmarked {
            let Some(etag) = listed.etag.clone() else { continue };
            let mut row = Row::new(listed.partition_key.clone(), listed.row_key.clone());
            row.insert(column, Value::DateTime(NOT_DELETED));
            let op = WriteOp::Update {
                row,
                mode: UpdateMode::Merge,
                condition: IfMatch::ETag(etag),
            };
            match self.commit(Write::one(op)).await.map(Committed::first) {
                Ok(_) => marked += 1,
                Err(e) if matches!(e.kind(), ErrorKind::PreconditionFailed | ErrorKind::NotFound) => {}
                Err(e) => return Err(e.about_entity(&self.table, &listed.partition_key, &listed.row_key)),
            }
        }
        Ok(marked)
    }
}
