//! Checking a table ([`Admin::fsck`]) and repairing only what is safe;
//! listing its orphan blobs ([`Admin::orphan_blobs`]).

use std::collections::BTreeSet;
use std::time::Duration;

use serde::Serialize;

use super::read::Read;
use super::scan::{Range, Scanned};
use super::{report, Admin, Event, Observer, Stop};
use crate::backend::blob::{BlobCondition, BlobItem};
use crate::backend::{IfMatch, WriteOp};
use crate::error::{ErrorKind, Result};
use crate::large::entity_rows::continuation_index;
use crate::large::logical::{assemble_with, Damage};
use crate::layout::{blob_paths, escape_segment, is_offload_shape, partition_prefix, split_parts, SPLIT_OF};
use crate::service::MAX_LIST_RESULTS;
use crate::store::Blobs;
use crate::value::{Row, Value};

/// What [`Admin::fsck`] looks at and may do.
#[derive(Clone, Default)]
pub struct FsckOptions {
    /// One partition, or the whole table.
    pub partition: Option<String>,
    /// Also repair what is safe to repair: leftover continuation rows are
    /// deleted (each on the ETag it was read with, once its main row is
    /// checked again), orphan blobs that were already older than the blob
    /// store's cleanup grace when the check started are deleted (each on its
    /// ETag; a blob written while the check runs is never deleted, however
    /// long the check takes), and index rows of secondary indexes whose
    /// entity (read again) does not need them are deleted (each on its ETag),
    /// but for the reservations of writes still in flight
    /// ([`Finding::IndexInFlight`], in flight, not repaired).
    /// A damaged entity's rows and blobs are never touched; an entity without
    /// its index rows is only reported.
    pub repair: bool,
    /// Where progress and findings go as they happen.
    pub observer: Option<Observer>,
    /// Stops the check at the next entity.
    pub stop: Stop,
}

impl std::fmt::Debug for FsckOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FsckOptions")
            .field("partition", &self.partition)
            .field("repair", &self.repair)
            .finish()
    }
}

/// One thing [`Admin::fsck`] found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "finding", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Finding {
    /// An entity whose large values are damaged (the same version failed
    /// its check on every read). Never repaired: restore it from a backup.
    Damaged {
        /// Its PartitionKey.
        partition_key: String,
        /// Its RowKey.
        row_key: String,
        /// What is wrong.
        damage: Vec<Damage>,
    },
    /// A continuation row no main row declares (its main row is gone, or
    /// declares fewer rows).
    Leftover {
        /// Its PartitionKey.
        partition_key: String,
        /// Its RowKey.
        row_key: String,
        /// The main RowKey it names (`_SplitOf`).
        owner: String,
        /// Whether the repair deleted it.
        repaired: bool,
    },
    /// An index row of a secondary index whose entity is gone.
    IndexOrphan {
        /// The index.
        index: String,
        /// The index row's PartitionKey.
        partition_key: String,
        /// The index row's RowKey.
        row_key: String,
        /// Whether the repair deleted it (on its version, once its entity was read again).
        repaired: bool,
    },
    /// An index row whose entity holds another value than the row says.
    IndexStale {
        /// The index.
        index: String,
        /// The index row's PartitionKey.
        partition_key: String,
        /// The index row's RowKey.
        row_key: String,
        /// Whether the repair deleted it (on its version, once its entity was read again).
        repaired: bool,
    },
    /// A reservation of a unique global value whose write may still be in
    /// flight: not confirmed, and younger than the handle's
    /// [`StoreOptions::unique_reservation_timeout`](crate::StoreOptions::unique_reservation_timeout),
    /// while its entity does not hold the value (yet). Not drift yet, so
    /// never repaired: check again once the timeout has passed.
    IndexInFlight {
        /// The index.
        index: String,
        /// The reservation's PartitionKey.
        partition_key: String,
        /// The reservation's RowKey.
        row_key: String,
    },
    /// An entity without the row of an index the table's index rows
    /// describe. Not repaired here (a row's projected cells are the
    /// program's): run `Store::check_indexes` with repair, or `Store::build_index`.
    IndexMissing {
        /// The index.
        index: String,
        /// The entity's PartitionKey.
        partition_key: String,
        /// The entity's RowKey.
        row_key: String,
    },
    /// An intent of a global index write not applied yet (`Store::apply_index_intents` applies it).
    IndexIntent {
        /// Its PartitionKey (the entity's).
        partition_key: String,
        /// Its RowKey.
        row_key: String,
    },
    /// A blob of the table's offload shape that no row references.
    OrphanBlob {
        /// Its path in the container.
        path: String,
        /// Its length.
        bytes: u64,
        /// Whether the repair deleted it (only blobs older than the cleanup grace are).
        repaired: bool,
    },
}

/// What [`Admin::fsck`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FsckReport {
    /// Rows read.
    pub rows: u64,
    /// Entities checked.
    pub entities: u64,
    /// What was found, in key order (orphan blobs last).
    pub findings: Vec<Finding>,
    /// Findings the repair fixed.
    pub repaired: u64,
    /// Whether the check was stopped before the end (by its [`Stop`]).
    pub interrupted: bool,
}

impl FsckReport {
    /// Whether nothing was found.
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty()
    }
}

impl Admin {
    /// Checks every entity of the table (or one partition): each large value
    /// reassembled and checked against its manifest or reference, every
    /// continuation row claimed by its main row, every blob of the table's
    /// offload shape referenced by a row. An entity that fails its check is
    /// read again as one version before it is reported, so a write racing the
    /// check is not damage. See [`FsckOptions::repair`] for what a repair does.
    pub async fn fsck(&self, options: FsckOptions) -> Result<FsckReport> {
        self.store
            .op("fsck")
            .run(async move {
                let range = Range {
                    partition: options.partition.clone(),
                    after: None,
                };
                // The repair's cutoff is taken before the scan: a blob written while
                // the scan runs (an entity it already passed given a new one) is
                // younger than it however long the scan takes, so it is never deleted.
                let cutoff = match (options.repair, &self.tables.shared.blobs) {
                    (true, Some(blobs)) => Some(self.cutoff(blobs.options.cleanup_grace).await?),
                    _ => None,
                };
                let indexes = self.learn_indexes(options.partition.as_deref()).await?;
                let mut scan = self.scan(&range).await?;
                let mut out = FsckReport::default();
                let mut referenced = BTreeSet::new();
                let found = |out: &mut FsckReport, finding: Finding| {
                    report(&options.observer, Event::Found(finding.clone()));
                    out.findings.push(finding);
                };
                report(
                    &options.observer,
                    Event::Phase {
                        name: "scan",
                        total: None,
                    },
                );
                while let Some(item) = scan.next().await? {
                    if options.stop.is_raised() {
                        out.interrupted = true;
                        break;
                    }
                    match item {
                        Scanned::Entity { main, continuations } => {
                            out.entities += 1;
                            referenced.extend(blob_paths(&main));
                            for (index, _) in indexes.missing(&main, options.partition.is_some()) {
                                let (partition_key, row_key) = (main.partition_key.clone(), main.row_key.clone());
                                let index = index.to_owned();
                                found(
                                    &mut out,
                                    Finding::IndexMissing {
                                        index,
                                        partition_key,
                                        row_key,
                                    },
                                );
                            }
                            let (pk, rk) = (main.partition_key.clone(), main.row_key.clone());
                            if let Some(Read::Damaged(_, damage)) =
                                self.settle(assemble_with(main, continuations, false), false).await?
                            {
                                let finding = Finding::Damaged {
                                    partition_key: pk,
                                    row_key: rk,
                                    damage,
                                };
                                found(&mut out, finding);
                            }
                        }
                        Scanned::Index(row) => {
                            if let Some(finding) = self.check_index_row(&indexes, row, options.repair).await? {
                                let fixed = matches!(
                                    finding,
                                    Finding::IndexOrphan { repaired: true, .. }
                                        | Finding::IndexStale { repaired: true, .. }
                                );
                                out.repaired += u64::from(fixed);
                                found(&mut out, finding);
                            }
                        }
                        Scanned::Leftover(row) => {
                            let repaired = options.repair && self.delete_leftover(&row).await?;
                            out.repaired += u64::from(repaired);
                            let finding = Finding::Leftover {
                                owner: row.get(SPLIT_OF).and_then(Value::as_str).unwrap_or_default().to_owned(),
                                partition_key: row.partition_key,
                                row_key: row.row_key,
                                repaired,
                            };
                            found(&mut out, finding);
                        }
                    }
                    if out.entities % 100 == 0 {
                        report(
                            &options.observer,
                            Event::Progress {
                                rows: scan.rows,
                                entities: out.entities,
                                bytes: scan.bytes,
                            },
                        );
                    }
                }
                out.rows = scan.rows;
                if self.tables.shared.blobs.is_some() && !out.interrupted {
                    report(
                        &options.observer,
                        Event::Phase {
                            name: "blobs",
                            total: None,
                        },
                    );
                    for (path, bytes, repaired) in self.orphans(&range, &referenced, cutoff).await? {
                        out.repaired += u64::from(repaired);
                        found(&mut out, Finding::OrphanBlob { path, bytes, repaired });
                    }
                }
                Ok(out)
            })
            .await
    }

    /// Deletes a leftover continuation row on its ETag, once its main row
    /// is read again and still does not claim it. `false` when it is kept.
    async fn delete_leftover(&self, row: &Row) -> Result<bool> {
        let (pk, rk) = (&row.partition_key, &row.row_key);
        let owner = row.get(SPLIT_OF).and_then(Value::as_str).unwrap_or_default();
        if let (Some(index), Some(main)) = (
            continuation_index(owner, rk),
            self.tables.shared.backend.get(&self.table, pk, owner).await?,
        ) {
            if main.get(SPLIT_OF).is_none() && index <= split_parts(&main) {
                return Ok(false);
            }
        }
        let Some(etag) = row.etag.clone() else { return Ok(false) };
        let op = WriteOp::Delete {
            partition_key: pk.clone(),
            row_key: rk.clone(),
            condition: IfMatch::ETag(etag),
        };
        match self.store.commit(crate::store::Write::one(op)).await {
            Ok(_) => Ok(true),
            Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::PreconditionFailed) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The blobs of the table (or the range's partition) in the blob
    /// store's container, one listing page at a time.
    pub(super) fn blob_pages(&self, range: &Range) -> Result<BlobPages<'_>> {
        let prefix = match &range.partition {
            Some(pk) => partition_prefix(&self.table, pk),
            None => format!("{}/", escape_segment(&self.table)),
        };
        Ok(BlobPages {
            blobs: self.blob_store()?,
            prefix,
            marker: None,
            done: false,
        })
    }

    /// The blob service's clock less `age`, in nanoseconds: blobs last
    /// modified before it are older than `age`. Taken before the scan whose
    /// references it is compared with.
    async fn cutoff(&self, age: Duration) -> Result<i128> {
        let now = self.blob_store()?.backend.now().await?;
        Ok(now.unix_nanos() - age.as_nanos() as i128)
    }

    /// Blobs of the offload shape under the range's prefix that `referenced`
    /// does not hold: (path, length, deleted). With a `cutoff` (a repair),
    /// those last modified before it are deleted on their ETag.
    async fn orphans(
        &self,
        range: &Range,
        referenced: &BTreeSet<String>,
        cutoff: Option<i128>,
    ) -> Result<Vec<(String, u64, bool)>> {
        let blobs = self.blob_store()?;
        let mut pages = self.blob_pages(range)?;
        let mut out = Vec::new();
        while let Some(items) = pages.next().await? {
            for item in items {
                if !is_offload_shape(&item.name) || referenced.contains(&item.name) {
                    continue;
                }
                let mut deleted = false;
                if cutoff.is_some_and(|c| item.properties.last_modified.unix_nanos() < c) {
                    let condition = BlobCondition::IfMatch(item.properties.etag.clone());
                    deleted = match blobs
                        .backend
                        .delete(&blobs.options.container, &item.name, condition)
                        .await
                    {
                        Ok(d) => d,
                        Err(e) if e.kind() == ErrorKind::PreconditionFailed => false,
                        Err(e) => return Err(e),
                    };
                }
                out.push((item.name, item.properties.length, deleted));
            }
        }
        Ok(out)
    }

    /// The orphan blobs of the table (or one partition) last modified more
    /// than `older_than` ago on the blob service's clock, as (path, length):
    /// what [`Admin::sweep`] would delete, without deleting anything.
    pub async fn orphan_blobs(&self, partition: Option<&str>, older_than: Duration) -> Result<Vec<(String, u64)>> {
        self.store
            .op("orphan_blobs")
            .run(async move {
                let range = Range {
                    partition: partition.map(str::to_owned),
                    after: None,
                };
                // Taken before the scan, as the repair's (see `fsck`).
                let cutoff = self.cutoff(older_than).await?;
                let mut scan = self.scan(&range).await?;
                let mut referenced = BTreeSet::new();
                while let Some(item) = scan.next().await? {
                    if let Scanned::Entity { main, .. } = item {
                        referenced.extend(blob_paths(&main));
                    }
                }
                let blobs = self.blob_store()?;
                let mut out = Vec::new();
                for (path, bytes, _) in self.orphans(&range, &referenced, None).await? {
                    let modified = blobs.backend.properties(&blobs.options.container, &path).await?;
                    if modified.is_some_and(|p| p.last_modified.unix_nanos() < cutoff) {
                        out.push((path, bytes));
                    }
                }
                Ok(out)
            })
            .await
    }
}

/// The blobs under a prefix of the blob store's container, one listing page
/// at a time; a container that does not exist lists nothing.
pub(super) struct BlobPages<'a> {
    blobs: &'a Blobs,
    prefix: String,
    marker: Option<String>,
    done: bool,
}

impl BlobPages<'_> {
    /// The next page's blobs, or `None` after the last.
    pub(super) async fn next(&mut self) -> Result<Option<Vec<BlobItem>>> {
        if self.done {
            return Ok(None);
        }
        let container = &self.blobs.options.container;
        let listing = match self
            .blobs
            .backend
            .list(container, &self.prefix, None, self.marker.as_deref(), MAX_LIST_RESULTS)
            .await
        {
            Err(e) if e.kind() == ErrorKind::NotFound => {
                self.done = true;
                return Ok(None);
            }
            other => other?,
        };
        self.marker = listing.next_marker;
        self.done = self.marker.is_none();
        Ok(Some(listing.items))
    }
}
