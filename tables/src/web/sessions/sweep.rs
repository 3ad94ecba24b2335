//! The sweep: expired records found by one query, each deleted on
//! condition of the ETag that query returned.

use std::time::Duration;

use async_trait::async_trait;
use futures::stream::{self, StreamExt};
use tower_sessions_core::session_store::{self, ExpiredDeletion};

use super::record::SessionRow;
use super::{Action, TableSessionStore};
use crate::error::ErrorKind;
use crate::store::{QueryOptions, SweepReport};
use crate::value::DateTime;

/// How many deletes a sweep keeps in flight.
const SWEEP_CONCURRENCY: usize = 8;
/// How many expired records a sweep collects before deleting them.
const SWEEP_BATCH: usize = 1000;

/// What one sweep did ([`TableSessionStore::sweep_expired`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExpiredSweep {
    /// Expired records deleted.
    pub deleted: usize,
    /// Records that were expired when the sweep read them but were saved
    /// again (refreshed) or deleted by someone else before its delete: left as
    /// they are.
    pub spared: usize,
}

/// What happened to one record the sweep found expired.
enum Swept {
    Deleted,
    Spared,
}

impl TableSessionStore {
    /// Deletes every record whose expiry has passed, and says how many it
    /// deleted and how many it spared. The records are found by one query
    /// (a scan of the table, filtered on `ExpiresAt` by the service, reading
    /// no session data) and each is deleted on condition of the ETag the
    /// query returned: a record saved again since then (a request that
    /// refreshed its expiry) is spared. Every record is tried; failures are
    /// reported together at the end, as `session_store::Error::Backend`.
    ///
    /// This is what [`ExpiredDeletion::delete_expired`] runs; spawn
    /// `continuously_delete_expired(period)` to run it periodically.
    ///
    /// ```
    /// use time::{Duration, OffsetDateTime};
    /// use tower_sessions::session::{Id, Record};
    /// use tower_sessions::SessionStore;
    /// use unified_tables::{web::sessions::TableSessionStore, Tables};
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let store = TableSessionStore::new(&Tables::memory(), "Sessions")?;
    /// let mut old = Record { id: Id::default(), data: Default::default(), expiry_date: OffsetDateTime::now_utc() - Duration::minutes(1) };
    /// store.create(&mut old).await?;
    /// let swept = store.sweep_expired().await?;
    /// assert_eq!((swept.deleted, swept.spared), (1, 0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn sweep_expired(&self) -> session_store::Result<ExpiredSweep> {
        let now = DateTime::now();
        let expired = QueryOptions::all()
            .filter(SessionRow::filter(|c| c.expires_at.le(now)))
            .select(SessionRow::projection(|c| [c.expires_at.col()]));
        let mut found = self.store.stream(expired).ready_chunks(SWEEP_BATCH);
        let mut report = ExpiredSweep::default();
        let mut failures = Vec::new();
        while let Some(chunk) = found.next().await {
            let mut rows = Vec::with_capacity(chunk.len());
            for row in chunk {
                match row {
                    Ok(row) => rows.push(row),
                    Err(e) => failures.push(self.failed(Action::ListExpired, None, e).to_string()),
                }
            }
            let outcomes: Vec<_> = stream::iter(rows)
                .map(|row| async move { self.sweep_one(row).await })
                .buffer_unordered(SWEEP_CONCURRENCY)
                .collect()
                .await;
            for outcome in outcomes {
                match outcome {
                    Ok(Swept::Deleted) => report.deleted += 1,
                    Ok(Swept::Spared) => report.spared += 1,
                    Err(e) => failures.push(e.to_string()),
                }
            }
        }
        if failures.is_empty() {
            return Ok(report);
        }
        Err(session_store::Error::Backend(format!(
            "the sweep of table `{}` deleted {} expired sessions, spared {} and failed on {}: {}",
            self.table(),
            report.deleted,
            report.spared,
            failures.len(),
            failures.join("; ")
        )))
    }

    /// Deletes the blobs of session data that no record references any more
    /// and that were last modified more than `older_than` ago (on the blob
    /// service's clock). A save or delete of a record whose data was in a
    /// blob deletes that blob only once it is older than
    /// [`BlobOptions`](crate::BlobOptions)' cleanup grace (so that a read in
    /// flight can still fetch it); the younger ones are left for this sweep.
    /// Only sessions over the blob threshold (3 MiB by default) have blobs.
    /// See [`Store::sweep_orphan_blobs`](crate::Store::sweep_orphan_blobs).
    ///
    /// ```
    /// use std::time::Duration;
    /// use unified_tables::{web::sessions::TableSessionStore, Tables};
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let store = TableSessionStore::new(&Tables::memory(), "Sessions")?;
    /// // Hourly, on the host's runtime: blobs unreferenced for an hour go.
    /// let report = store.sweep_orphan_blobs(Duration::from_secs(3600)).await?;
    /// assert_eq!(report.deleted, 0);
    /// # Ok::<(), unified_tables::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn sweep_orphan_blobs(&self, older_than: Duration) -> crate::Result<SweepReport> {
        self.store.sweep_all_orphan_blobs(older_than).await
    }

    async fn sweep_one(&self, row: SessionRow) -> session_store::Result<Swept> {
        match self.store.delete_entity(&row).await {
            Ok(()) => Ok(Swept::Deleted),
            // Saved again since the query (its expiry may have moved), or gone already.
            Err(e) if matches!(e.kind(), ErrorKind::PreconditionFailed | ErrorKind::NotFound) => Ok(Swept::Spared),
            Err(e) => Err(self.failed(Action::DeleteExpired, Some(&row.id), e)),
        }
    }
}

#[async_trait]
impl ExpiredDeletion for TableSessionStore {
    async fn delete_expired(&self) -> session_store::Result<()> {
        self.sweep_expired().await.map(|_| ())
    }
}
