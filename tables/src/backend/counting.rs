//! A decorator that counts the requests sent to the backend it wraps.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;

use super::{Backend, Continuation, Page, QueryRequest, WriteOp, WriteOutcome};
use crate::error::Result;
use crate::value::Row;

/// Counts of requests by kind.
#[derive(Debug, Default)]
pub struct RequestCounts {
    tables: AtomicU64,
    gets: AtomicU64,
    writes: AtomicU64,
    transactions: AtomicU64,
    queries: AtomicU64,
}

/// A snapshot of [`RequestCounts`].
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
}

impl Counts {
    /// Every entity request (table management excluded).
    pub fn entity_requests(&self) -> u64 {
        self.gets + self.writes + self.transactions + self.queries
    }
}

/// Wraps a backend and counts each request it forwards.
///
/// ```
/// use unified_tables::backend::{counting::CountingBackend, memory::MemoryBackend};
/// let counting = CountingBackend::new(MemoryBackend::new());
/// let counts = counting.counts();
/// assert_eq!(counts.entity_requests(), 0);
/// ```
#[derive(Debug, Clone)]
pub struct CountingBackend<B> {
    inner: B,
    counts: Arc<RequestCounts>,
}

impl<B: Backend> CountingBackend<B> {
    /// Counts the requests sent to `inner`.
    pub fn new(inner: B) -> CountingBackend<B> {
        CountingBackend {
            inner,
            counts: Arc::new(RequestCounts::default()),
        }
    }

    /// The counts so far.
    pub fn counts(&self) -> Counts {
        let c = &self.counts;
        Counts {
            tables: c.tables.load(Ordering::Relaxed),
            gets: c.gets.load(Ordering::Relaxed),
            writes: c.writes.load(Ordering::Relaxed),
            transactions: c.transactions.load(Ordering::Relaxed),
            queries: c.queries.load(Ordering::Relaxed),
        }
    }

    /// Sets every count back to zero.
    pub fn reset(&self) {
        for c in [
            &self.counts.tables,
            &self.counts.gets,
            &self.counts.writes,
            &self.counts.transactions,
            &self.counts.queries,
        ] {
            c.store(0, Ordering::Relaxed);
        }
    }
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

#[async_trait]
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
    async fn query(&self, table: &str, request: &QueryRequest, continuation: Option<&Continuation>) -> Result<Page> {
        bump(&self.counts.queries);
        self.inner.query(table, request, continuation).await
    }
}
