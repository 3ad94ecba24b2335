//! A decorator that injects failures, for reliability tests.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::{Backend, Continuation, Page, QueryRequest, WriteOp, WriteOutcome};
use crate::error::{Error, Result};
use crate::value::Row;

/// Which requests a planned fault applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultTarget {
    /// Point reads.
    Get,
    /// Single writes.
    Write,
    /// Entity-group transactions.
    Transaction,
    /// Query pages.
    Query,
}

/// When a fault fires relative to the real request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultTiming {
    /// Fail without sending the request.
    Before,
    /// Send the request, let it take effect, then report the failure (a lost response).
    After,
}

#[derive(Debug)]
struct Fault {
    target: FaultTarget,
    skip: usize,
    timing: FaultTiming,
    error: fn() -> Error,
}

/// Wraps a backend and fails the next matching requests as planned.
///
/// ```
/// use unified_tables::backend::faulty::{FaultyBackend, FaultTarget, FaultTiming};
/// use unified_tables::backend::memory::MemoryBackend;
/// let faulty = FaultyBackend::new(MemoryBackend::new());
/// faulty.fail_next(FaultTarget::Write, FaultTiming::Before, || unified_tables::Error::service(503, "ServerBusy", "The server is busy."));
/// ```
#[derive(Debug, Clone)]
pub struct FaultyBackend<B> {
    inner: B,
    faults: Arc<Mutex<VecDeque<Fault>>>,
}

impl<B: Backend> FaultyBackend<B> {
    /// Wraps `inner`; no faults are planned.
    pub fn new(inner: B) -> FaultyBackend<B> {
        FaultyBackend {
            inner,
            faults: Arc::new(Mutex::new(VecDeque::new())),
        }
    }

    /// Plans one failure of the next request of `target`. Faults fire in the order planned.
    pub fn fail_next(&self, target: FaultTarget, timing: FaultTiming, error: fn() -> Error) {
        self.fail_after(target, 0, timing, error);
    }

    /// Plans one failure of a request of `target` after `skip` more of them succeed.
    pub fn fail_after(&self, target: FaultTarget, skip: usize, timing: FaultTiming, error: fn() -> Error) {
        if let Ok(mut f) = self.faults.lock() {
            f.push_back(Fault {
                target,
                skip,
                timing,
                error,
            });
        }
    }

    /// Planned faults not yet fired.
    pub fn pending(&self) -> usize {
        self.faults.lock().map(|f| f.len()).unwrap_or(0)
    }

    fn take(&self, target: FaultTarget) -> Option<(FaultTiming, fn() -> Error)> {
        let mut faults = self.faults.lock().ok()?;
        let i = faults.iter().position(|f| f.target == target)?;
        if faults[i].skip > 0 {
            faults[i].skip -= 1;
            return None;
        }
        faults.remove(i).map(|f| (f.timing, f.error))
    }
}

/// Runs `call` with a planned fault applied before or after it.
async fn with_fault<T>(
    fault: Option<(FaultTiming, fn() -> Error)>,
    call: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    match fault {
        Some((FaultTiming::Before, error)) => Err(error()),
        Some((FaultTiming::After, error)) => {
            let _ = call.await;
            Err(error())
        }
        None => call.await,
    }
}

#[async_trait]
impl<B: Backend> Backend for FaultyBackend<B> {
    async fn create_table(&self, table: &str) -> Result<()> {
        self.inner.create_table(table).await
    }
    async fn delete_table(&self, table: &str) -> Result<()> {
        self.inner.delete_table(table).await
    }
    async fn get(&self, table: &str, partition_key: &str, row_key: &str) -> Result<Option<Row>> {
        with_fault(
            self.take(FaultTarget::Get),
            self.inner.get(table, partition_key, row_key),
        )
        .await
    }
    async fn execute(&self, table: &str, op: WriteOp) -> Result<WriteOutcome> {
        with_fault(self.take(FaultTarget::Write), self.inner.execute(table, op)).await
    }
    async fn transaction(&self, table: &str, ops: Vec<WriteOp>) -> Result<Vec<WriteOutcome>> {
        with_fault(self.take(FaultTarget::Transaction), self.inner.transaction(table, ops)).await
    }
    async fn query(&self, table: &str, request: &QueryRequest, continuation: Option<&Continuation>) -> Result<Page> {
        with_fault(
            self.take(FaultTarget::Query),
            self.inner.query(table, request, continuation),
        )
        .await
    }
}
