//! A backend decorator that holds chosen requests at a point until the test
//! lets them go: how the cache scenarios force a read or a write to overlap
//! another at exactly the racy moment.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use tokio::sync::oneshot;
use unified_tables::backend::{Backend, Page, PageAnswer, PageToken, QueryRequest, WriteOp, WriteOutcome};
use unified_tables::layout::is_continuation_key;
use unified_tables::{Result, Row};

/// Where a request is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point {
    /// After a point read has its answer, before the store sees it.
    AfterGet,
    /// Before a point read of a continuation row (`{RowKey}~0001` ..) is sent.
    BeforeContinuationGet,
    /// Before a single write or a transaction is sent.
    BeforeWrite,
    /// After a single write or a transaction took effect, before the store sees its answer.
    AfterWrite,
    /// Before a query page is requested.
    BeforeQuery,
    /// After a page of a query has its answer, before the store sees it.
    AfterQuery,
    /// After a page of a query that holds at least one row has its answer,
    /// before the store sees it: the page that listed something, also where
    /// the service may answer empty pages first (Cosmos DB for Table).
    AfterRows,
}

/// A held request: `reached` fires when it gets to the point; it waits there until `release` is sent or dropped.
#[derive(Debug)]
pub struct Hold {
    /// Fires when the request reaches the point.
    pub reached: oneshot::Receiver<()>,
    /// Send (or drop) to let the request go on.
    pub release: oneshot::Sender<()>,
}

#[derive(Debug)]
struct Armed {
    point: Point,
    reached: oneshot::Sender<()>,
    release: oneshot::Receiver<()>,
}

/// Wraps a table backend; [`GateBackend::arm`] holds the next request at a point.
#[derive(Debug, Clone)]
pub struct GateBackend<B> {
    inner: B,
    armed: Arc<Mutex<Vec<Armed>>>,
}

impl<B> GateBackend<B> {
    /// Wraps `inner`; nothing is held until armed.
    pub fn new(inner: B) -> Self {
        GateBackend {
            inner,
            armed: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// Holds the next request that reaches `point`.
    pub fn arm(&self, point: Point) -> Hold {
        let (reached_tx, reached_rx) = oneshot::channel();
        let (release_tx, release_rx) = oneshot::channel();
        self.armed.lock().expect("gate").push(Armed {
            point,
            reached: reached_tx,
            release: release_rx,
        });
        Hold {
            reached: reached_rx,
            release: release_tx,
        }
    }

    async fn pass(&self, point: Point) {
        let armed = {
            let mut armed = self.armed.lock().expect("gate");
            armed.iter().position(|a| a.point == point).map(|i| armed.remove(i))
        };
        if let Some(a) = armed {
            let _ = a.reached.send(());
            let _ = a.release.await;
        }
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<B: Backend> Backend for GateBackend<B> {
    async fn create_table(&self, table: &str) -> Result<()> {
        self.inner.create_table(table).await
    }

    async fn delete_table(&self, table: &str) -> Result<()> {
        self.inner.delete_table(table).await
    }

    async fn get(&self, table: &str, partition_key: &str, row_key: &str) -> Result<Option<Row>> {
        if is_continuation_key(row_key) {
            self.pass(Point::BeforeContinuationGet).await;
        }
        let row = self.inner.get(table, partition_key, row_key).await;
        self.pass(Point::AfterGet).await;
        row
    }

    async fn execute(&self, table: &str, op: WriteOp) -> Result<WriteOutcome> {
        self.pass(Point::BeforeWrite).await;
        let outcome = self.inner.execute(table, op).await;
        self.pass(Point::AfterWrite).await;
        outcome
    }

    async fn transaction(&self, table: &str, ops: Vec<WriteOp>) -> Result<Vec<WriteOutcome>> {
        self.pass(Point::BeforeWrite).await;
        let outcomes = self.inner.transaction(table, ops).await;
        self.pass(Point::AfterWrite).await;
        outcomes
    }

    async fn query(&self, table: &str, request: &QueryRequest, token: Option<&PageToken>) -> Result<Page> {
        self.pass(Point::BeforeQuery).await;
        let page = self.inner.query(table, request, token).await;
        self.pass(Point::AfterQuery).await;
        if page.as_ref().is_ok_and(|p| !p.rows.is_empty()) {
            self.pass(Point::AfterRows).await;
        }
        page
    }
    async fn query_body(&self, table: &str, request: &QueryRequest, token: Option<&PageToken>) -> Result<PageAnswer> {
        self.pass(Point::BeforeQuery).await;
        let page = self.inner.query_body(table, request, token).await;
        self.pass(Point::AfterQuery).await;
        let listed = match &page {
            Ok(PageAnswer::Rows(p)) => !p.rows.is_empty(),
            Ok(PageAnswer::Body(body)) => body.rows().map_or(true, |rows| !rows.is_empty()),
            Err(_) => false,
        };
        if listed {
            self.pass(Point::AfterRows).await;
        }
        page
    }
    fn profile(&self) -> unified_tables::service::ServiceProfile {
        self.inner.profile()
    }
}

/// Wraps a table backend and pauses a random 0–`max` before and after each
/// point read and write, so that concurrent requests interleave in many orders.
#[derive(Debug, Clone)]
pub struct JitterBackend<B> {
    inner: B,
    max: std::time::Duration,
}

impl<B> JitterBackend<B> {
    /// Wraps `inner`.
    pub fn new(inner: B, max: std::time::Duration) -> Self {
        JitterBackend { inner, max }
    }

    async fn pause(&self) {
        use rand::Rng;
        let micros = rand::thread_rng().gen_range(0..=self.max.as_micros() as u64);
        if micros > 0 {
            tokio::time::sleep(std::time::Duration::from_micros(micros)).await;
        } else {
            tokio::task::yield_now().await;
        }
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<B: Backend> Backend for JitterBackend<B> {
    async fn create_table(&self, table: &str) -> Result<()> {
        self.inner.create_table(table).await
    }

    async fn delete_table(&self, table: &str) -> Result<()> {
        self.inner.delete_table(table).await
    }

    async fn get(&self, table: &str, partition_key: &str, row_key: &str) -> Result<Option<Row>> {
        self.pause().await;
        let row = self.inner.get(table, partition_key, row_key).await;
        self.pause().await;
        row
    }

    async fn execute(&self, table: &str, op: WriteOp) -> Result<WriteOutcome> {
        self.pause().await;
        let outcome = self.inner.execute(table, op).await;
        self.pause().await;
        outcome
    }

    async fn transaction(&self, table: &str, ops: Vec<WriteOp>) -> Result<Vec<WriteOutcome>> {
        self.pause().await;
        let outcomes = self.inner.transaction(table, ops).await;
        self.pause().await;
        outcomes
    }

    async fn query(&self, table: &str, request: &QueryRequest, token: Option<&PageToken>) -> Result<Page> {
        self.pause().await;
        let page = self.inner.query(table, request, token).await;
        self.pause().await;
        page
    }
    async fn query_body(&self, table: &str, request: &QueryRequest, token: Option<&PageToken>) -> Result<PageAnswer> {
        self.pause().await;
        let page = self.inner.query_body(table, request, token).await;
        self.pause().await;
        page
    }
    fn profile(&self) -> unified_tables::service::ServiceProfile {
        self.inner.profile()
    }
}
