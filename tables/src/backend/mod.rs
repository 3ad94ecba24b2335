//! The seam between [`Store`](crate::Store) and storage: row-level primitives
//! with the service's exact semantics.
//!
//! A backend only moves rows and answers as the service answers: status
//! codes (as [`Error::Service`](crate::Error::Service)), ETags, ordering,
//! paging and limits. Every piece of logic above that (keys, stamping,
//! concurrency, batching) lives once, in `Store<T>`, so the in-memory
//! backend and Azure run the same code.
#![doc = include_str!("../../docs/backends.md")]

pub mod blob;
pub mod counting;
pub mod faulty;
pub mod memory;
pub(crate) mod pack;
mod page_body;
pub mod pool;
pub(crate) mod race;
pub(crate) mod retry;
pub mod retrying_reads;
pub mod throttle;

#[cfg(feature = "azure")]
#[cfg_attr(docsrs, doc(cfg(feature = "azure")))]
pub mod azure;

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;

use crate::error::Result;
use crate::query::Filter;
use crate::service::ServiceProfile;
use crate::value::{DateTime, ETag, Row};

pub use page_body::{PageAnswer, PageBody};

/// The condition of an update or delete (`If-Match`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IfMatch {
    /// `If-Match: *`: the row must exist, any version.
    Any,
    /// The row must still have this version. Sent as it is: an ETag of `*`
    /// is the wildcard to the service (as [`IfMatch::Any`]), and the
    /// in-memory backend answers it the same way. Stores never send one
    /// built from a caller's ETag: they refuse `*` and the empty ETag first.
    ETag(ETag),
}

/// How an update combines the sent properties with the stored ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateMode {
    /// Replace: properties not sent are removed.
    Replace,
    /// Merge: properties not sent are kept.
    Merge,
}

/// One write, as a single request or as one operation of a transaction.
#[derive(Debug, Clone)]
pub enum WriteOp {
    /// Insert; fails with 409 `EntityAlreadyExists` if the row exists.
    Insert(Row),
    /// Replace or merge an existing row on condition; 404 if missing, 412 on a stale ETag.
    Update {
        /// The new row.
        row: Row,
        /// Replace or merge.
        mode: UpdateMode,
        /// The condition.
        condition: IfMatch,
    },
    /// Insert-or-replace / insert-or-merge, unconditional.
    Upsert {
        /// The new row.
        row: Row,
        /// Replace or merge when the row exists.
        mode: UpdateMode,
    },
    /// Delete on condition; 404 if missing, 412 on a stale ETag.
    Delete {
        /// The partition key.
        partition_key: String,
        /// The row key.
        row_key: String,
        /// The condition.
        condition: IfMatch,
    },
}

impl WriteOp {
    /// The keys the operation addresses.
    pub fn keys(&self) -> (&str, &str) {
        match self {
            WriteOp::Insert(row) | WriteOp::Update { row, .. } | WriteOp::Upsert { row, .. } => {
                (&row.partition_key, &row.row_key)
            }
            WriteOp::Delete {
                partition_key, row_key, ..
            } => (partition_key, row_key),
        }
    }

    /// The row written, if the operation writes one.
    pub fn row(&self) -> Option<&Row> {
        match self {
            WriteOp::Insert(row) | WriteOp::Update { row, .. } | WriteOp::Upsert { row, .. } => Some(row),
            WriteOp::Delete { .. } => None,
        }
    }
}

/// What a successful write reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteOutcome {
    /// The new version (absent for a delete).
    pub etag: Option<ETag>,
    /// The new service Timestamp, when the backend reports it.
    pub timestamp: Option<DateTime>,
}

/// A query of one table: filter, projection and page size.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueryRequest {
    /// `$filter`; `None` returns every row.
    pub filter: Option<Filter>,
    /// `$select`: the properties to return (keys, Timestamp and ETag always come back).
    pub select: Option<Vec<String>>,
    /// `$top`: the most rows one page may hold (at most 1000).
    pub top: Option<u32>,
}

/// Where the next page of a query starts, as the service reports it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PageToken {
    /// `x-ms-continuation-NextPartitionKey`.
    pub next_partition_key: String,
    /// `x-ms-continuation-NextRowKey`, which the service may omit.
    pub next_row_key: Option<String>,
}

/// One page of query results. A page can be empty and still carry a
/// page token: only a missing token ends the query.
#[derive(Debug, Clone, Default)]
pub struct Page {
    /// The rows, in (PartitionKey, RowKey) order.
    pub rows: Vec<Row>,
    /// Where the next page starts, or `None` at the end.
    pub next: Option<PageToken>,
}

/// Row-level table storage with the service's semantics.
///
/// Errors are [`Error::Service`](crate::Error::Service) with the service's
/// status and code (e.g. 409 `EntityAlreadyExists`, 412
/// `UpdateConditionNotSatisfied`, 404 `ResourceNotFound`), or
/// [`Error::Transaction`](crate::Error::Transaction) wrapping one for the
/// failing operation of a transaction.
#[async_trait]
pub trait Backend: Send + Sync + fmt::Debug + 'static {
    /// Creates the table if it does not exist; succeeds if it does, also
    /// when another caller creates it concurrently.
    async fn create_table(&self, table: &str) -> Result<()>;

    /// Deletes the table and all its rows; 404 `TableNotFound` if absent.
    async fn delete_table(&self, table: &str) -> Result<()>;

    /// Reads one row, or `None` if it does not exist.
    async fn get(&self, table: &str, partition_key: &str, row_key: &str) -> Result<Option<Row>>;

    /// Performs one write.
    async fn execute(&self, table: &str, op: WriteOp) -> Result<WriteOutcome>;

    /// Performs an entity-group transaction: at most 100 operations on one
    /// partition, each row once, all or nothing. Outcomes come back in
    /// operation order.
    async fn transaction(&self, table: &str, ops: Vec<WriteOp>) -> Result<Vec<WriteOutcome>>;

    /// Reads one page of a query, starting at `token` if given.
    async fn query(&self, table: &str, request: &QueryRequest, token: Option<&PageToken>) -> Result<Page>;

    /// [`query`](Backend::query), answered as the backend received the
    /// page: the service's JSON body where there is one, so that a reader
    /// can decode it straight into its entities; else the rows. The
    /// default answers the rows of `query`.
    async fn query_body(&self, table: &str, request: &QueryRequest, token: Option<&PageToken>) -> Result<PageAnswer> {
        self.query(table, request, token).await.map(PageAnswer::Rows)
    }

    /// The service this backend talks to, whose limits, order of results
    /// and throttling the stores follow. The default is Table Storage; a
    /// decorator answers its inner backend's profile.
    fn profile(&self) -> ServiceProfile {
        ServiceProfile::TableStorage
    }
}

#[async_trait]
impl<B: Backend + ?Sized> Backend for Arc<B> {
    async fn create_table(&self, table: &str) -> Result<()> {
        (**self).create_table(table).await
    }
    async fn delete_table(&self, table: &str) -> Result<()> {
        (**self).delete_table(table).await
    }
    async fn get(&self, table: &str, partition_key: &str, row_key: &str) -> Result<Option<Row>> {
        (**self).get(table, partition_key, row_key).await
    }
    async fn execute(&self, table: &str, op: WriteOp) -> Result<WriteOutcome> {
        (**self).execute(table, op).await
    }
    async fn transaction(&self, table: &str, ops: Vec<WriteOp>) -> Result<Vec<WriteOutcome>> {
        (**self).transaction(table, ops).await
    }
    async fn query(&self, table: &str, request: &QueryRequest, token: Option<&PageToken>) -> Result<Page> {
        (**self).query(table, request, token).await
    }
    async fn query_body(&self, table: &str, request: &QueryRequest, token: Option<&PageToken>) -> Result<PageAnswer> {
        (**self).query_body(table, request, token).await
    }
    fn profile(&self) -> crate::service::ServiceProfile {
        (**self).profile()
    }
}
