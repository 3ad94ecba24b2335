//! A backend decorator that numbers the requests going through it and lets
//! another writer act right after a chosen one: how a model test puts that
//! writer between ANY two requests of a call (run the call once to count
//! its requests, then once per position).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::future::BoxFuture;
use unified_tables::backend::{Backend, Page, PageAnswer, PageToken, QueryRequest, WriteOp, WriteOutcome};
use unified_tables::{Result, Row};

/// What acts between two requests.
pub type Act = Box<dyn FnOnce() -> BoxFuture<'static, ()> + Send>;

#[derive(Default)]
struct Plan {
    /// Act after this many requests (0: before the first).
    after: usize,
    act: Option<Act>,
}

/// Wraps a table backend; [`Steps::arm`] plans an act after request `k`.
#[derive(Clone)]
pub struct Steps<B> {
    inner: B,
    seen: Arc<AtomicUsize>,
    plan: Arc<Mutex<Plan>>,
}

impl<B> std::fmt::Debug for Steps<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Steps").field("seen", &self.seen).finish()
    }
}

impl<B> Steps<B> {
    /// Wraps `inner`; nothing acts until armed.
    pub fn new(inner: B) -> Self {
        Steps {
            inner,
            seen: Arc::new(AtomicUsize::new(0)),
            plan: Arc::new(Mutex::new(Plan::default())),
        }
    }

    /// Starts counting again from zero and plans `act` right after request
    /// `after` is answered (with `0`, before the first request is sent).
    pub fn arm(&self, after: usize, act: Act) {
        self.seen.store(0, Ordering::SeqCst);
        *self.plan.lock().expect("steps") = Plan { after, act: Some(act) };
    }

    /// Starts counting again from zero, with nothing planned.
    pub fn count(&self) {
        self.seen.store(0, Ordering::SeqCst);
        *self.plan.lock().expect("steps") = Plan::default();
    }

    /// Requests seen since armed.
    pub fn seen(&self) -> usize {
        self.seen.load(Ordering::SeqCst)
    }

    /// The planned act, if it has not happened yet (to run it after the call).
    pub fn take_unfired(&self) -> Option<Act> {
        self.plan.lock().expect("steps").act.take()
    }

    fn due(&self, seen: usize) -> Option<Act> {
        let mut plan = self.plan.lock().expect("steps");
        if plan.after == seen {
            plan.act.take()
        } else {
            None
        }
    }

    async fn before(&self) {
        if let Some(act) = self.due(self.seen()) {
            act().await;
        }
    }

    async fn after(&self) {
        let seen = self.seen.fetch_add(1, Ordering::SeqCst) + 1;
        if let Some(act) = self.due(seen) {
            act().await;
        }
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<B: Backend> Backend for Steps<B> {
    async fn create_table(&self, table: &str) -> Result<()> {
        self.inner.create_table(table).await
    }

    async fn delete_table(&self, table: &str) -> Result<()> {
        self.inner.delete_table(table).await
    }

    async fn get(&self, table: &str, partition_key: &str, row_key: &str) -> Result<Option<Row>> {
        self.before().await;
        let row = self.inner.get(table, partition_key, row_key).await;
        self.after().await;
        row
    }

    async fn execute(&self, table: &str, op: WriteOp) -> Result<WriteOutcome> {
        self.before().await;
        let outcome = self.inner.execute(table, op).await;
        self.after().await;
        outcome
    }

    async fn transaction(&self, table: &str, ops: Vec<WriteOp>) -> Result<Vec<WriteOutcome>> {
        self.before().await;
        let outcomes = self.inner.transaction(table, ops).await;
        self.after().await;
        outcomes
    }

    async fn query(&self, table: &str, request: &QueryRequest, token: Option<&PageToken>) -> Result<Page> {
        self.before().await;
        let page = self.inner.query(table, request, token).await;
        self.after().await;
        page
    }

    async fn query_body(&self, table: &str, request: &QueryRequest, token: Option<&PageToken>) -> Result<PageAnswer> {
        self.before().await;
        let page = self.inner.query_body(table, request, token).await;
        self.after().await;
        page
    }
    fn profile(&self) -> unified_tables::service::ServiceProfile {
        self.inner.profile()
    }
}
