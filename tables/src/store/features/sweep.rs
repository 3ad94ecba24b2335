//! Sweeping orphan blobs: blobs of the exact offload shape that no row
//! references any more (lost races, crashes, releases younger than the
//! cleanup grace).

use std::collections::BTreeSet;
use std::time::Duration;

use crate::backend::blob::BlobCondition;
use crate::backend::QueryRequest;
use crate::entity::TableEntity;
use crate::error::{Error, KeyKind, Result, SweepFailure};
use crate::layout::{blob_paths, escape_segment, is_offload_shape, partition_prefix, unescape_segment};
use crate::options::SweepSchedule;
use crate::query::Filter;
use crate::service::{MAX_LIST_RESULTS, MAX_PAGE_SIZE};
use crate::store::Store;
use crate::value::Value;

/// What a sweep did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Orphans deleted.
    pub deleted: usize,
    /// Blobs looked at.
    pub examined: usize,
}

impl<T: TableEntity> Store<T> {
    /// Deletes the blobs of one partition that no row references and that
    /// were last modified more than `older_than` ago (on the blob service's
    /// clock). Only names of the exact offload shape
    /// `{table}/{partitionKey}/{rowKey}/{column}/{sha256}` are touched, and each
    /// delete is conditional on the blob being unmodified since it was listed,
    /// so a write that reuses an old orphan is never undercut.
    ///
    /// `older_than` must exceed the longest write (blob upload to row commit).
    /// Every orphan is tried; failures are reported together at the end.
    pub async fn sweep_orphan_blobs(&self, partition_key: &str, older_than: Duration) -> Result<SweepReport> {
        self.op("sweep_orphan_blobs")
            .run(async move {
                crate::service::validate_key(KeyKind::PartitionKey, partition_key)?;
                let blobs = self.blob_container().await?;
                let container = &blobs.options.container;
                let now = blobs.backend.now().await?;
                let cutoff = now.unix_nanos() - older_than.as_nanos() as i128;
                // Every blob the partition's rows reference now, whatever type wrote them:
                // the rows are read whole, every `__blob` cell counts.
                let request = QueryRequest {
                    filter: Some(Filter::eq("PartitionKey", Value::String(partition_key.to_owned()))),
                    select: None,
                    top: Some(MAX_PAGE_SIZE),
                };
                let mut referenced = BTreeSet::new();
                let mut pages = self.pages_in_any_order(request).await?;
                while let Some(rows) = pages.next(|_| true).await? {
                    for row in rows {
                        referenced.extend(blob_paths(&row));
                    }
                }
                let prefix = partition_prefix(&self.table, partition_key);
                let mut report = SweepReport::default();
                let mut failures = Vec::new();
                let mut marker: Option<String> = None;
                loop {
                    let listing = blobs
                        .backend
                        .list(container, &prefix, None, marker.as_deref(), MAX_LIST_RESULTS)
                        .await?;
                    for item in listing.items {
                        report.examined += 1;
                        let old = item.properties.last_modified.unix_nanos() < cutoff;
                        if !is_offload_shape(&item.name) || referenced.contains(&item.name) || !old {
                            continue;
                        }
                        let condition = BlobCondition::IfMatch(item.properties.etag.clone());
                        match blobs.backend.delete(container, &item.name, condition).await {
                            Ok(true) => report.deleted += 1,
                            Ok(false) => {}
                            Err(e) => failures.push(SweepFailure::new(item.name.clone(), e)),
                        }
                    }
                    match listing.next_marker {
                        Some(m) => marker = Some(m),
                        None => break,
                    }
                }
                if failures.is_empty() {
                    Ok(report)
                } else {
                    Err(Error::SweepFailed {
                        deleted: report.deleted,
                        failures,
                    })
                }
            })
            .await
    }

    /// Sweeps every partition that has blobs (see [`Store::sweep_orphan_blobs`]).
    /// A failing partition does not stop the others; the failures are reported together.
    pub async fn sweep_all_orphan_blobs(&self, older_than: Duration) -> Result<SweepReport> {
        self.op("sweep_all_orphan_blobs")
            .run(async move {
                let blobs = self.blob_container().await?;
                let container = &blobs.options.container;
                let table_prefix = format!("{}/", escape_segment(&self.table));
                let mut partitions = Vec::new();
                let mut marker: Option<String> = None;
                loop {
                    let listing = blobs
                        .backend
                        .list(container, &table_prefix, Some("/"), marker.as_deref(), MAX_LIST_RESULTS)
                        .await?;
                    for p in listing.prefixes {
                        let segment = p[table_prefix.len()..].trim_end_matches('/');
                        if let Some(pk) = unescape_segment(segment) {
                            partitions.push(pk);
                        }
                    }
                    match listing.next_marker {
                        Some(m) => marker = Some(m),
                        None => break,
                    }
                }
                let mut total = SweepReport::default();
                let mut failures = Vec::new();
                for pk in partitions {
                    match self.sweep_orphan_blobs(&pk, older_than).await {
                        Ok(r) => {
                            total.deleted += r.deleted;
                            total.examined += r.examined;
                        }
                        Err(Error::SweepFailed { deleted, failures: f }) => {
                            total.deleted += deleted;
                            failures.extend(f);
                        }
                        Err(e) => failures.push(SweepFailure::new(format!("partition {pk:?}"), e)),
                    }
                }
                if failures.is_empty() {
                    Ok(total)
                } else {
                    Err(Error::SweepFailed {
                        deleted: total.deleted,
                        failures,
                    })
                }
            })
            .await
    }

    /// Runs the table-wide sweep on `schedule` (every
    /// [`interval`](SweepSchedule::interval), deleting orphans older than
    /// [`older_than`](SweepSchedule::older_than)), for ever, logging each
    /// round through `tracing`. The schedule's values were checked when it
    /// was built. Spawn it on the host's runtime:
    ///
    /// ```no_run
    /// # use unified_tables::{TableEntity, Tables};
    /// # #[derive(TableEntity)] struct Doc { #[table(partition_key)] pk: String, #[table(row_key)] rk: String }
    /// # async fn host(db: Tables) -> unified_tables::Result<()> {
    /// use std::time::Duration;
    /// use unified_tables::SweepSchedule;
    /// let docs = db.store::<Doc>();
    /// let hourly = SweepSchedule::new(Duration::from_secs(3600), Duration::from_secs(3600))?;
    /// let sweeper = tokio::spawn(docs.sweep_forever(hourly));
    /// // ... on shutdown:
    /// sweeper.abort();
    /// # Ok::<(), unified_tables::Error>(())
    /// # }
    /// ```
    pub async fn sweep_forever(self, schedule: SweepSchedule) {
        loop {
            tokio::time::sleep(schedule.interval()).await;
            match self.sweep_all_orphan_blobs(schedule.older_than()).await {
                Ok(r) => {
                    tracing::info!(table = %self.table, deleted = r.deleted, examined = r.examined, "orphan blob sweep")
                }
                Err(e) => {
                    tracing::error!(table = %self.table, error = %e, "orphan blob sweep failed; retrying next round")
                }
            }
        }
    }
}
