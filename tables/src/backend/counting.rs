//! A decorator that counts the requests sent to the backend it wraps.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;

use super::blob::{
    BlobBackend, BlobCondition, BlobListing, BlobProperties, BlobSink, DeleteOptions, GetOptions, LeaseAction,
    LeaseAnswer, PutOptions,
};
use super::{Backend, Page, PageAnswer, PageToken, QueryRequest, WriteOp, WriteOutcome};
use crate::error::Result;
use crate::value::{DateTime, Row};

/// Counts of requests by kind.
#[derive(Debug, Default)]
pub struct RequestCounts {
    tables: AtomicU64,
    gets: AtomicU64,
    writes: AtomicU64,
    transactions: AtomicU64,
    queries: AtomicU64,
    query_starts: AtomicU64,
    blob_containers: AtomicU64,
    blob_puts: AtomicU64,
    blob_shared_puts: AtomicU64,
    blob_gets: AtomicU64,
    blob_range_gets: AtomicU64,
    blob_streamed_gets: AtomicU64,
    blob_hashed_gets: AtomicU64,
    blob_properties: AtomicU64,
    blob_touches: AtomicU64,
    blob_deletes: AtomicU64,
    blob_lists: AtomicU64,
    blob_clock_reads: AtomicU64,
    blob_leases: AtomicU64,
}

impl RequestCounts {
    fn all(&self) -> [&AtomicU64; 19] {
        [
            &self.tables,
            &self.gets,
            &self.writes,
            &self.transactions,
            &self.queries,
            &self.query_starts,
            &self.blob_containers,
            &self.blob_puts,
            &self.blob_shared_puts,
            &self.blob_gets,
            &self.blob_range_gets,
            &self.blob_streamed_gets,
            &self.blob_hashed_gets,
            &self.blob_properties,
            &self.blob_touches,
            &self.blob_deletes,
            &self.blob_lists,
            &self.blob_clock_reads,
            &self.blob_leases,
        ]
    }
}

/// A snapshot of [`RequestCounts`]: one count per kind of request, each
/// kind being the [`Backend`] or [`BlobBackend`] method the caller called
/// (so a count says which path a request took, e.g. a streamed download
/// rather than a buffered one). Methods that differ only in their options
/// share a kind: [`BlobBackend::get`] and [`BlobBackend::get_with`] (whole or
/// ranged), [`BlobBackend::delete`] and [`BlobBackend::delete_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    /// Table create/delete requests.
    pub tables: u64,
    /// Point reads.
    pub gets: u64,
    /// Single writes (insert, update, merge, upsert, delete).
    pub writes: u64,
    /// Entity-group transactions.
    pub transactions: u64,
    /// Query pages.
    pub queries: u64,
    /// Queries started: pages read without a page token. On a service that
    /// cuts a query's pages where it likes (Cosmos DB for Table), this, not
    /// [`queries`](Counts::queries), counts the queries a reader made.
    pub query_starts: u64,
    /// Blob container creations.
    pub blob_containers: u64,
    /// Blob uploads of owned bytes ([`BlobBackend::put`], conditional or not).
    pub blob_puts: u64,
    /// Blob uploads of shared bytes ([`BlobBackend::put_shared`]: how a
    /// store uploads offloaded values and files).
    pub blob_shared_puts: u64,
    /// Whole-blob reads returning the bytes ([`BlobBackend::get`] or
    /// [`BlobBackend::get_with`] without a range).
    pub blob_gets: u64,
    /// Reads of a byte range of a blob ([`BlobBackend::get`] or
    /// [`BlobBackend::get_with`] with a range).
    pub blob_range_gets: u64,
    /// Whole-blob reads streamed into a sink as the bytes arrive
    /// ([`BlobBackend::get_into`]: how a store reads an offloaded value).
    pub blob_streamed_gets: u64,
    /// Whole-blob reads hashed as they arrive ([`BlobBackend::get_hashed`]:
    /// how a file is read whole).
    pub blob_hashed_gets: u64,
    /// Blob property reads.
    pub blob_properties: u64,
    /// Blob touches.
    pub blob_touches: u64,
    /// Blob deletes (conditional or not).
    pub blob_deletes: u64,
    /// Blob listing pages.
    pub blob_lists: u64,
    /// Reads of the blob service's clock.
    pub blob_clock_reads: u64,
    /// Lease actions (acquire, renew, change, release, break).
    pub blob_leases: u64,
}

impl Counts {
    /// Every entity request (table management excluded).
    pub fn entity_requests(&self) -> u64 {
        self.gets + self.writes + self.transactions + self.queries
    }

    /// Every blob request (container creations, clock reads and lease actions included).
    pub fn blob_requests(&self) -> u64 {
        self.blob_containers
            + self.blob_uploads()
            + self.blob_reads()
            + self.blob_properties
            + self.blob_touches
            + self.blob_deletes
            + self.blob_lists
            + self.blob_clock_reads
            + self.blob_leases
    }

    /// Blob uploads of either kind (owned or shared bytes).
    pub fn blob_uploads(&self) -> u64 {
        self.blob_puts + self.blob_shared_puts
    }

    /// Blob reads of every kind (whole, ranged, streamed or hashed).
    pub fn blob_reads(&self) -> u64 {
        self.blob_gets + self.blob_range_gets + self.blob_streamed_gets + self.blob_hashed_gets
    }
}

/// Wraps a backend and counts each request it forwards: a table
/// [`Backend`], a [`BlobBackend`], or both. Counters made with
/// [`CountingBackend::share_counts`] add to the same counts.
///
/// Every method is forwarded to the wrapped backend's own, the default-bodied
/// ones too ([`BlobBackend::put_shared`], [`BlobBackend::get_into`],
/// [`BlobBackend::get_hashed`], ...): a call through the counter takes the
/// path it takes without it, and is counted once, under its own kind.
///
/// ```
/// use unified_tables::backend::{counting::CountingBackend, memory::{MemoryBackend, MemoryBlobBackend}};
/// let counting = CountingBackend::new(MemoryBackend::new());
/// let blobs = counting.share_counts(MemoryBlobBackend::new());
/// let counts = counting.counts();
/// assert_eq!(counts.entity_requests() + counts.blob_requests(), 0);
/// assert_eq!(blobs.counts(), counts);
/// ```
#[derive(Debug, Clone)]
pub struct CountingBackend<B> {
    inner: B,
    counts: Arc<RequestCounts>,
}

impl<B> CountingBackend<B> {
    /// Counts the requests sent to `inner`.
    pub fn new(inner: B) -> CountingBackend<B> {
        CountingBackend {
            inner,
            counts: Arc::new(RequestCounts::default()),
        }
    }

    /// Counts the requests sent to `inner` into this decorator's counts, so
    /// one snapshot covers, e.g., a table backend and a blob backend.
    pub fn share_counts<C>(&self, inner: C) -> CountingBackend<C> {
        CountingBackend {
            inner,
            counts: self.counts.clone(),
        }
    }

    /// The counts so far.
    pub fn counts(&self) -> Counts {
        let c = &self.counts;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Counts {
            tables: load(&c.tables),
            gets: load(&c.gets),
            writes: load(&c.writes),
            transactions: load(&c.transactions),
            queries: load(&c.queries),
            query_starts: load(&c.query_starts),
            blob_containers: load(&c.blob_containers),
            blob_puts: load(&c.blob_puts),
            blob_shared_puts: load(&c.blob_shared_puts),
            blob_gets: load(&c.blob_gets),
            blob_range_gets: load(&c.blob_range_gets),
            blob_streamed_gets: load(&c.blob_streamed_gets),
            blob_hashed_gets: load(&c.blob_hashed_gets),
            blob_properties: load(&c.blob_properties),
            blob_touches: load(&c.blob_touches),
            blob_deletes: load(&c.blob_deletes),
            blob_lists: load(&c.blob_lists),
            blob_clock_reads: load(&c.blob_clock_reads),
            blob_leases: load(&c.blob_leases),
        }
    }

    /// Sets every count back to zero (also those of counters sharing them).
    pub fn reset(&self) {
        for c in self.counts.all() {
            c.store(0, Ordering::Relaxed);
        }
    }
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<B: Backend> Backend for CountingBackend<B> {
    async fn create_table(&self, table: &str) -> Result<()> {
        bump(&self.counts.tables);
        self.inner.create_table(table).await
    }
    async fn delete_table(&self, table: &str) -> Result<()> {
        bump(&self.counts.tables);
        self.inner.delete_table(table).await
    }
    async fn get(&self, table: &str, partition_key: &str, row_key: &str) -> Result<Option<Row>> {
        bump(&self.counts.gets);
        self.inner.get(table, partition_key, row_key).await
    }
    async fn execute(&self, table: &str, op: WriteOp) -> Result<WriteOutcome> {
        bump(&self.counts.writes);
        self.inner.execute(table, op).await
    }
    async fn transaction(&self, table: &str, ops: Vec<WriteOp>) -> Result<Vec<WriteOutcome>> {
        bump(&self.counts.transactions);
        self.inner.transaction(table, ops).await
    }
    async fn query(&self, table: &str, request: &QueryRequest, token: Option<&PageToken>) -> Result<Page> {
        bump(&self.counts.queries);
        if token.is_none() {
            bump(&self.counts.query_starts);
        }
        self.inner.query(table, request, token).await
    }
    async fn query_body(&self, table: &str, request: &QueryRequest, token: Option<&PageToken>) -> Result<PageAnswer> {
        bump(&self.counts.queries);
        if token.is_none() {
            bump(&self.counts.query_starts);
        }
        self.inner.query_body(table, request, token).await
    }
    fn profile(&self) -> crate::service::ServiceProfile {
        self.inner.profile()
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<B: BlobBackend> BlobBackend for CountingBackend<B> {
    async fn create_container(&self, container: &str) -> Result<()> {
        bump(&self.counts.blob_containers);
        self.inner.create_container(container).await
    }
    async fn put(&self, container: &str, name: &str, bytes: Vec<u8>, options: PutOptions) -> Result<BlobProperties> {
        bump(&self.counts.blob_puts);
        self.inner.put(container, name, bytes, options).await
    }
    async fn put_shared(
        &self,
        container: &str,
        name: &str,
        bytes: Arc<Vec<u8>>,
        options: PutOptions,
    ) -> Result<BlobProperties> {
        bump(&self.counts.blob_shared_puts);
        self.inner.put_shared(container, name, bytes, options).await
    }
    async fn get(
        &self,
        container: &str,
        name: &str,
        range: Option<Range<u64>>,
    ) -> Result<Option<(BlobProperties, Vec<u8>)>> {
        match range {
            Some(_) => bump(&self.counts.blob_range_gets),
            None => bump(&self.counts.blob_gets),
        }
        self.inner.get(container, name, range).await
    }
    async fn get_with(
        &self,
        container: &str,
        name: &str,
        options: GetOptions,
    ) -> Result<Option<(BlobProperties, Vec<u8>)>> {
        match options.range {
            Some(_) => bump(&self.counts.blob_range_gets),
            None => bump(&self.counts.blob_gets),
        }
        self.inner.get_with(container, name, options).await
    }
    async fn get_into(&self, container: &str, name: &str, sink: &mut dyn BlobSink) -> Result<Option<BlobProperties>> {
        bump(&self.counts.blob_streamed_gets);
        self.inner.get_into(container, name, sink).await
    }
    async fn get_hashed(&self, container: &str, name: &str) -> Result<Option<(BlobProperties, Vec<u8>, String)>> {
        bump(&self.counts.blob_hashed_gets);
        self.inner.get_hashed(container, name).await
    }
    async fn properties(&self, container: &str, name: &str) -> Result<Option<BlobProperties>> {
        bump(&self.counts.blob_properties);
        self.inner.properties(container, name).await
    }
    async fn touch(&self, container: &str, name: &str) -> Result<BlobProperties> {
        bump(&self.counts.blob_touches);
        self.inner.touch(container, name).await
    }
    async fn delete(&self, container: &str, name: &str, condition: BlobCondition) -> Result<bool> {
        bump(&self.counts.blob_deletes);
        self.inner.delete(container, name, condition).await
    }
    async fn delete_with(&self, container: &str, name: &str, options: DeleteOptions) -> Result<bool> {
        bump(&self.counts.blob_deletes);
        self.inner.delete_with(container, name, options).await
    }
    async fn lease(&self, container: &str, name: &str, action: LeaseAction) -> Result<LeaseAnswer> {
        bump(&self.counts.blob_leases);
        self.inner.lease(container, name, action).await
    }
    async fn list(
        &self,
        container: &str,
        prefix: &str,
        delimiter: Option<&str>,
        marker: Option<&str>,
        max_results: u32,
    ) -> Result<BlobListing> {
        bump(&self.counts.blob_lists);
        self.inner.list(container, prefix, delimiter, marker, max_results).await
    }
    async fn now(&self) -> Result<DateTime> {
        bump(&self.counts.blob_clock_reads);
        self.inner.now().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::memory::{MemoryBackend, MemoryBlobBackend};

    /// One call of every blob method.
    async fn call_every_blob_method(blobs: &impl BlobBackend) {
        blobs.create_container("box").await.unwrap();
        blobs
            .put("box", "a", b"bytes".to_vec(), PutOptions::default())
            .await
            .unwrap();
        let shared = Arc::new(b"shared".to_vec());
        blobs
            .put_shared("box", "s", shared, PutOptions::default())
            .await
            .unwrap();
        blobs.get("box", "a", None).await.unwrap();
        blobs.get("box", "a", Some(1..3)).await.unwrap();
        let mut sink = Kept::default();
        assert!(blobs.get_into("box", "s", &mut sink).await.unwrap().is_some());
        assert_eq!(sink.0, b"shared");
        blobs.get_hashed("box", "a").await.unwrap();
        blobs.properties("box", "a").await.unwrap();
        blobs.touch("box", "a").await.unwrap();
        blobs.list("box", "", None, None, 10).await.unwrap();
        blobs.now().await.unwrap();
        let acquire = LeaseAction::Acquire {
            duration: super::super::blob::LeaseDuration::Infinite,
            proposed: None,
        };
        let lease = blobs.lease("box", "a", acquire).await.unwrap().lease;
        blobs.get_with("box", "a", GetOptions::default()).await.unwrap();
        blobs
            .delete_with(
                "box",
                "a",
                DeleteOptions {
                    lease,
                    ..DeleteOptions::default()
                },
            )
            .await
            .unwrap();
        blobs.delete("box", "a", BlobCondition::None).await.unwrap();
    }

    /// A sink that keeps the bytes.
    #[derive(Default)]
    struct Kept(Vec<u8>);

    impl BlobSink for Kept {
        fn write(&mut self, bytes: &[u8]) {
            self.0.extend_from_slice(bytes);
        }
    }

    #[tokio::test]
    async fn blob_requests_are_counted_by_method_into_shared_counts() {
        let tables = CountingBackend::new(MemoryBackend::new());
        let blobs = tables.share_counts(MemoryBlobBackend::new());
        call_every_blob_method(&blobs).await;
        tables.get("t", "p", "r").await.ok();
        let c = tables.counts();
        assert_eq!(c, blobs.counts(), "one set of counts");
        assert_eq!((c.blob_containers, c.blob_puts, c.blob_shared_puts), (1, 1, 1), "{c:?}");
        assert_eq!(
            (c.blob_gets, c.blob_range_gets, c.blob_streamed_gets, c.blob_hashed_gets),
            (2, 1, 1, 1),
            "{c:?}"
        );
        assert_eq!(
            (
                c.blob_properties,
                c.blob_touches,
                c.blob_lists,
                c.blob_clock_reads,
                c.blob_deletes,
                c.blob_leases
            ),
            (1, 1, 1, 1, 2, 1),
            "{c:?}"
        );
        assert_eq!(
            (c.blob_requests(), c.blob_reads(), c.blob_uploads(), c.entity_requests()),
            (15, 5, 2, 1)
        );
        blobs.reset();
        assert_eq!(tables.counts(), Counts::default());
    }

    #[tokio::test]
    async fn every_method_reaches_the_wrapped_backend_as_itself() {
        // A counter over a counter: the inner one sees each call under the
        // method the outer one was called with, never a default body's stand-in.
        let inner = Arc::new(CountingBackend::new(MemoryBlobBackend::new()));
        let outer = CountingBackend::new(inner.clone());
        call_every_blob_method(&outer).await;
        assert_eq!(inner.counts(), outer.counts());
        assert_eq!(inner.counts().blob_requests(), 15);
    }
}
