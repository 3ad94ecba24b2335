//! A decorator that injects failures, for reliability tests.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::blob::{
    BlobBackend, BlobCondition, BlobListing, BlobProperties, BlobSink, DeleteOptions, GetOptions, LeaseAction,
    LeaseAnswer, PutOptions,
};
use super::{Backend, Page, PageAnswer, PageToken, QueryRequest, WriteOp, WriteOutcome};
use crate::error::{Error, Result};
use crate::value::{DateTime, Row};

/// Which requests a planned fault applies to. Table and container
/// management are never failed.
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
    /// Blob uploads, of owned or shared bytes.
    BlobPut,
    /// Blob reads: whole, ranged, streamed or hashed.
    BlobGet,
    /// Blob property reads.
    BlobProperties,
    /// Blob touches.
    BlobTouch,
    /// Blob deletes.
    BlobDelete,
    /// Blob listing pages.
    BlobList,
    /// Reads of the blob service's clock.
    BlobClock,
    /// Lease actions.
    BlobLease,
}

/// When a fault fires relative to the real request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultTiming {
    /// Fail without sending the request.
    Before,
    /// Send the request, let it take effect, then report the failure (a lost response).
    After,
    /// Answer now with the error without applying the write, and apply it
    /// later, as the service applies a write it had queued when it answered
    /// 500 `OperationTimedOut` ("may still complete"): right after the next
    /// table request through this decorator has been answered by the
    /// wrapped backend (so that request still sees the state before it), or
    /// at [`FaultyBackend::land_held`]. For single writes and transactions
    /// ([`FaultTarget::Write`], [`FaultTarget::Transaction`]); any other
    /// request fails as with [`FaultTiming::Before`].
    Late,
    /// Cut the answer halfway through its body: a streamed download
    /// ([`BlobBackend::get_into`]) hands its sink the properties and the
    /// first half of the blob's bytes (rounded down), then fails, as a
    /// connection dropped mid-transfer does. Any other request fails as with
    /// [`FaultTiming::Before`]: an upload cut short stores nothing (a blob
    /// upload is all or nothing), and a buffered read returns no bytes.
    Midway,
}

#[derive(Debug)]
struct Fault {
    target: FaultTarget,
    skip: usize,
    timing: FaultTiming,
    error: fn() -> Error,
    /// Fires on every matching request until [`FaultyBackend::clear`].
    sticky: bool,
}

/// Wraps a backend (a table [`Backend`], a [`BlobBackend`], or both) and
/// fails the next matching requests as planned.
///
/// Every method is forwarded to the wrapped backend's own, the default-bodied
/// ones too ([`BlobBackend::put_shared`], [`BlobBackend::get_into`],
/// [`BlobBackend::get_hashed`], ...), so a fault lands on the path the
/// caller takes: a streamed download can be cut halfway ([`FaultTiming::Midway`]).
///
/// ```
/// use unified_tables::backend::faulty::{FaultyBackend, FaultTarget, FaultTiming};
/// use unified_tables::backend::memory::{MemoryBackend, MemoryBlobBackend};
/// let faulty = FaultyBackend::new(MemoryBackend::new());
/// faulty.fail_next(FaultTarget::Write, FaultTiming::Before, || unified_tables::Error::service(503, "ServerBusy", "The server is busy."));
/// let blobs = FaultyBackend::new(MemoryBlobBackend::new());
/// blobs.fail_next(FaultTarget::BlobDelete, FaultTiming::After, || unified_tables::Error::service(500, "InternalError", "The server encountered an internal error."));
/// assert_eq!(blobs.pending(), 1);
/// ```
#[derive(Debug, Clone)]
pub struct FaultyBackend<B> {
    inner: B,
    faults: Arc<Mutex<VecDeque<Fault>>>,
    /// A write answered with [`FaultTiming::Late`], to apply later.
    held: Arc<Mutex<Option<Held>>>,
    /// What writes whose answers were replaced by a fault did when applied.
    swallowed: Arc<Mutex<Vec<Swallowed>>>,
}

/// A table write held back by [`FaultTiming::Late`].
#[derive(Debug)]
struct Held {
    table: String,
    ops: Vec<WriteOp>,
    /// Sent as one transaction (not as a single write).
    transaction: bool,
}

/// A write the wrapped backend applied whose answer a planned fault
/// replaced ([`FaultTiming::After`], or [`FaultTiming::Late`] when it
/// landed): what the caller never heard.
#[derive(Debug, Clone, PartialEq)]
pub struct Swallowed {
    /// The table written.
    pub table: String,
    /// Whether it was held back and applied later ([`FaultTiming::Late`]).
    pub late: bool,
    /// The outcomes of its operations, or the kind of error it got.
    pub answer: std::result::Result<Vec<WriteOutcome>, crate::ErrorKind>,
}

impl<B> FaultyBackend<B> {
    /// Wraps `inner`; no faults are planned.
    pub fn new(inner: B) -> FaultyBackend<B> {
        FaultyBackend {
            inner,
            faults: Arc::new(Mutex::new(VecDeque::new())),
            held: Arc::default(),
            swallowed: Arc::default(),
        }
    }

    /// Writes applied whose answers a planned fault replaced, oldest first
    /// ([`FaultTiming::After`]; [`FaultTiming::Late`] once landed).
    pub fn swallowed(&self) -> Vec<Swallowed> {
        self.swallowed.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Whether a write answered with [`FaultTiming::Late`] is still held back.
    pub fn holds_a_write(&self) -> bool {
        self.held.lock().map(|h| h.is_some()).unwrap_or(false)
    }

    fn note_swallowed(&self, table: &str, late: bool, answer: &Result<Vec<WriteOutcome>>) {
        if let Ok(mut s) = self.swallowed.lock() {
            s.push(Swallowed {
                table: table.to_owned(),
                late,
                answer: match answer {
                    Ok(outcomes) => Ok(outcomes.clone()),
                    Err(e) => Err(e.kind()),
                },
            });
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
                sticky: false,
            });
        }
    }

    /// Fails every request of `target` from now on (a lasting partition),
    /// until [`FaultyBackend::clear`]. Faults planned before it fire first.
    pub fn fail_every(&self, target: FaultTarget, timing: FaultTiming, error: fn() -> Error) {
        if let Ok(mut f) = self.faults.lock() {
            f.push_back(Fault {
                target,
                skip: 0,
                timing,
                error,
                sticky: true,
            });
        }
    }

    /// Drops every planned fault, lasting ones included.
    pub fn clear(&self) {
        if let Ok(mut f) = self.faults.lock() {
            f.clear();
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
        if faults[i].sticky {
            return Some((faults[i].timing, faults[i].error));
        }
        faults.remove(i).map(|f| (f.timing, f.error))
    }
}

impl<B: Backend> FaultyBackend<B> {
    /// Applies the write held back by [`FaultTiming::Late`] now, if there
    /// is one, and returns what it got.
    pub async fn land_held(&self) -> Option<Result<Vec<WriteOutcome>>> {
        let held = self.held.lock().ok()?.take()?;
        let answer = self.apply(&held.table, held.ops, held.transaction).await;
        self.note_swallowed(&held.table, true, &answer);
        Some(answer)
    }

    /// Sends `ops` to the wrapped backend as the caller sent them.
    async fn apply(&self, table: &str, mut ops: Vec<WriteOp>, transaction: bool) -> Result<Vec<WriteOutcome>> {
        match (transaction, ops.len()) {
            (false, 1) => self.inner.execute(table, ops.swap_remove(0)).await.map(|o| vec![o]),
            _ => self.inner.transaction(table, ops).await,
        }
    }

    /// A table write through the planned `fault`: [`FaultTiming::Late`]
    /// holds it back, [`FaultTiming::After`] applies it and notes what it got.
    async fn write(
        &self,
        fault: Option<(FaultTiming, fn() -> Error)>,
        table: &str,
        ops: Vec<WriteOp>,
        transaction: bool,
    ) -> Result<Vec<WriteOutcome>> {
        let call = |ops: Vec<WriteOp>| self.apply(table, ops, transaction);
        match fault {
            Some((FaultTiming::Late, error)) => {
                if let Ok(mut held) = self.held.lock() {
                    *held = Some(Held {
                        table: table.to_owned(),
                        ops,
                        transaction,
                    });
                }
                Err(error())
            }
            Some((FaultTiming::After, error)) => {
                let answer = call(ops).await;
                self.note_swallowed(table, false, &answer);
                Err(error())
            }
            fault => {
                let answer = with_fault(fault, call(ops)).await;
                self.land_held().await;
                answer
            }
        }
    }

    /// A table request that is not a write: the answer, then the held write lands.
    async fn then_land<T>(&self, answer: Result<T>) -> Result<T> {
        self.land_held().await;
        answer
    }
}

/// Runs `call` with a planned fault applied before or after it.
async fn with_fault<T>(
    fault: Option<(FaultTiming, fn() -> Error)>,
    call: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    match fault {
        Some((FaultTiming::Before | FaultTiming::Midway | FaultTiming::Late, error)) => Err(error()),
        Some((FaultTiming::After, error)) => {
            let _ = call.await;
            Err(error())
        }
        None => call.await,
    }
}

/// Passes the properties and the first half of a blob's bytes to the sink, and drops the rest.
struct HalfSink<'a> {
    sink: &'a mut dyn BlobSink,
    left: u64,
}

impl BlobSink for HalfSink<'_> {
    fn start(&mut self, properties: &BlobProperties) {
        self.left = properties.length / 2;
        self.sink.start(properties);
    }

    fn write(&mut self, bytes: &[u8]) {
        let take = usize::try_from(self.left).unwrap_or(usize::MAX).min(bytes.len());
        if take > 0 {
            self.sink.write(&bytes[..take]);
            self.left -= take as u64;
        }
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<B: Backend> Backend for FaultyBackend<B> {
    async fn create_table(&self, table: &str) -> Result<()> {
        self.inner.create_table(table).await
    }
    async fn delete_table(&self, table: &str) -> Result<()> {
        self.inner.delete_table(table).await
    }
    async fn get(&self, table: &str, partition_key: &str, row_key: &str) -> Result<Option<Row>> {
        let answer = with_fault(
            self.take(FaultTarget::Get),
            self.inner.get(table, partition_key, row_key),
        )
        .await;
        self.then_land(answer).await
    }
    async fn execute(&self, table: &str, op: WriteOp) -> Result<WriteOutcome> {
        let fault = self.take(FaultTarget::Write);
        let mut outcomes = self.write(fault, table, vec![op], false).await?;
        Ok(outcomes.swap_remove(0))
    }
    async fn transaction(&self, table: &str, ops: Vec<WriteOp>) -> Result<Vec<WriteOutcome>> {
        let fault = self.take(FaultTarget::Transaction);
        self.write(fault, table, ops, true).await
    }
    async fn query(&self, table: &str, request: &QueryRequest, token: Option<&PageToken>) -> Result<Page> {
        let answer = with_fault(self.take(FaultTarget::Query), self.inner.query(table, request, token)).await;
        self.then_land(answer).await
    }
    async fn query_body(&self, table: &str, request: &QueryRequest, token: Option<&PageToken>) -> Result<PageAnswer> {
        let answer = with_fault(
            self.take(FaultTarget::Query),
            self.inner.query_body(table, request, token),
        )
        .await;
        self.then_land(answer).await
    }
    fn profile(&self) -> crate::service::ServiceProfile {
        self.inner.profile()
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<B: BlobBackend> BlobBackend for FaultyBackend<B> {
    async fn create_container(&self, container: &str) -> Result<()> {
        self.inner.create_container(container).await
    }
    async fn put(&self, container: &str, name: &str, bytes: Vec<u8>, options: PutOptions) -> Result<BlobProperties> {
        with_fault(
            self.take(FaultTarget::BlobPut),
            self.inner.put(container, name, bytes, options),
        )
        .await
    }
    async fn put_shared(
        &self,
        container: &str,
        name: &str,
        bytes: Arc<Vec<u8>>,
        options: PutOptions,
    ) -> Result<BlobProperties> {
        with_fault(
            self.take(FaultTarget::BlobPut),
            self.inner.put_shared(container, name, bytes, options),
        )
        .await
    }
    async fn get(
        &self,
        container: &str,
        name: &str,
        range: Option<Range<u64>>,
    ) -> Result<Option<(BlobProperties, Vec<u8>)>> {
        with_fault(self.take(FaultTarget::BlobGet), self.inner.get(container, name, range)).await
    }
    async fn get_with(
        &self,
        container: &str,
        name: &str,
        options: GetOptions,
    ) -> Result<Option<(BlobProperties, Vec<u8>)>> {
        with_fault(
            self.take(FaultTarget::BlobGet),
            self.inner.get_with(container, name, options),
        )
        .await
    }
    async fn get_into(&self, container: &str, name: &str, sink: &mut dyn BlobSink) -> Result<Option<BlobProperties>> {
        match self.take(FaultTarget::BlobGet) {
            Some((FaultTiming::Midway, error)) => {
                let mut half = HalfSink { sink, left: 0 };
                // The request is sent; whatever it answers, the transfer breaks off halfway.
                let _ = self.inner.get_into(container, name, &mut half).await;
                Err(error())
            }
            fault => with_fault(fault, self.inner.get_into(container, name, sink)).await,
        }
    }
    async fn get_hashed(&self, container: &str, name: &str) -> Result<Option<(BlobProperties, Vec<u8>, String)>> {
        with_fault(self.take(FaultTarget::BlobGet), self.inner.get_hashed(container, name)).await
    }
    async fn properties(&self, container: &str, name: &str) -> Result<Option<BlobProperties>> {
        with_fault(
            self.take(FaultTarget::BlobProperties),
            self.inner.properties(container, name),
        )
        .await
    }
    async fn touch(&self, container: &str, name: &str) -> Result<BlobProperties> {
        with_fault(self.take(FaultTarget::BlobTouch), self.inner.touch(container, name)).await
    }
    async fn delete(&self, container: &str, name: &str, condition: BlobCondition) -> Result<bool> {
        with_fault(
            self.take(FaultTarget::BlobDelete),
            self.inner.delete(container, name, condition),
        )
        .await
    }
    async fn delete_with(&self, container: &str, name: &str, options: DeleteOptions) -> Result<bool> {
        with_fault(
            self.take(FaultTarget::BlobDelete),
            self.inner.delete_with(container, name, options),
        )
        .await
    }
    async fn lease(&self, container: &str, name: &str, action: LeaseAction) -> Result<LeaseAnswer> {
        with_fault(
            self.take(FaultTarget::BlobLease),
            self.inner.lease(container, name, action),
        )
        .await
    }
    async fn list(
        &self,
        container: &str,
        prefix: &str,
        delimiter: Option<&str>,
        marker: Option<&str>,
        max_results: u32,
    ) -> Result<BlobListing> {
        with_fault(
            self.take(FaultTarget::BlobList),
            self.inner.list(container, prefix, delimiter, marker, max_results),
        )
        .await
    }
    async fn now(&self) -> Result<DateTime> {
        with_fault(self.take(FaultTarget::BlobClock), self.inner.now()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::memory::MemoryBlobBackend;
    use crate::error::ErrorKind;

    fn busy() -> Error {
        Error::service(503, "ServerBusy", "The server is busy.")
    }

    #[tokio::test]
    async fn blob_faults_fire_before_or_after_the_request() {
        let blobs = FaultyBackend::new(MemoryBlobBackend::new());
        blobs.create_container("box").await.unwrap();
        blobs.fail_next(FaultTarget::BlobPut, FaultTiming::Before, busy);
        assert!(blobs
            .put("box", "a", b"1".to_vec(), PutOptions::default())
            .await
            .is_err());
        assert!(blobs.properties("box", "a").await.unwrap().is_none(), "never sent");
        blobs.fail_next(FaultTarget::BlobPut, FaultTiming::After, busy);
        assert!(blobs
            .put("box", "a", b"1".to_vec(), PutOptions::default())
            .await
            .is_err());
        assert!(
            blobs.properties("box", "a").await.unwrap().is_some(),
            "applied, response lost"
        );
        // Reads of every shape share one target; other targets are not consumed.
        blobs.fail_after(FaultTarget::BlobGet, 1, FaultTiming::Before, busy);
        blobs.fail_next(FaultTarget::BlobDelete, FaultTiming::Before, busy);
        assert!(
            blobs.get("box", "a", Some(0..1)).await.unwrap().is_some(),
            "skipped once"
        );
        let err = blobs.get_hashed("box", "a").await.unwrap_err();
        assert_eq!(err.kind(), busy().kind());
        assert_eq!(blobs.pending(), 1);
        assert!(blobs.delete("box", "a", BlobCondition::None).await.is_err());
        assert!(blobs.delete("box", "a", BlobCondition::None).await.unwrap());
        assert_eq!(blobs.pending(), 0);
        blobs.fail_next(FaultTarget::BlobTouch, FaultTiming::Before, busy);
        assert_eq!(blobs.touch("box", "a").await.unwrap_err().kind(), busy().kind());
        assert_eq!(
            blobs.touch("box", "a").await.unwrap_err().kind(),
            ErrorKind::NotFound,
            "the fault is spent"
        );

        // A lasting fault fires on every request until cleared.
        blobs.fail_every(FaultTarget::BlobProperties, FaultTiming::Before, busy);
        for _ in 0..3 {
            assert_eq!(blobs.properties("box", "a").await.unwrap_err().kind(), busy().kind());
        }
        blobs.clear();
        assert_eq!(blobs.pending(), 0);
        assert!(blobs.properties("box", "a").await.unwrap().is_none());
    }

    /// A sink that records what it is given.
    #[derive(Default)]
    struct Recorded {
        started: Option<BlobProperties>,
        bytes: Vec<u8>,
    }

    impl BlobSink for Recorded {
        fn start(&mut self, properties: &BlobProperties) {
            self.started = Some(properties.clone());
        }
        fn write(&mut self, bytes: &[u8]) {
            self.bytes.extend_from_slice(bytes);
        }
    }

    #[tokio::test]
    async fn streamed_and_shared_calls_reach_the_wrapped_backend_and_can_fail() {
        use crate::backend::counting::CountingBackend;
        let counted = CountingBackend::new(());
        let blobs = FaultyBackend::new(counted.share_counts(MemoryBlobBackend::new()));
        blobs.create_container("box").await.unwrap();
        let bytes: Arc<Vec<u8>> = Arc::new((0..=255u8).cycle().take(1001).collect());

        // A shared upload is a `BlobPut`: failed before sending, nothing is stored.
        blobs.fail_next(FaultTarget::BlobPut, FaultTiming::Before, busy);
        let err = blobs
            .put_shared("box", "s", bytes.clone(), PutOptions::default())
            .await
            .unwrap_err();
        assert_eq!(err.kind(), busy().kind());
        assert!(blobs.properties("box", "s").await.unwrap().is_none());
        // Cut midway, an upload stores nothing either.
        blobs.fail_next(FaultTarget::BlobPut, FaultTiming::Midway, busy);
        assert!(blobs
            .put_shared("box", "s", bytes.clone(), PutOptions::default())
            .await
            .is_err());
        assert!(blobs.properties("box", "s").await.unwrap().is_none());
        blobs
            .put_shared("box", "s", bytes.clone(), PutOptions::default())
            .await
            .unwrap();

        // A streamed download cut midway: the properties and the first half reach the sink, then the error.
        blobs.fail_next(FaultTarget::BlobGet, FaultTiming::Midway, busy);
        let mut sink = Recorded::default();
        let err = blobs.get_into("box", "s", &mut sink).await.unwrap_err();
        assert_eq!(err.kind(), busy().kind());
        assert_eq!(sink.started.as_ref().map(|p| p.length), Some(1001));
        assert_eq!(sink.bytes, bytes[..500], "the first half, then the cut");
        // Failed before sending, the sink hears nothing.
        blobs.fail_next(FaultTarget::BlobGet, FaultTiming::Before, busy);
        let mut sink = Recorded::default();
        assert!(blobs.get_into("box", "s", &mut sink).await.is_err());
        assert!(sink.started.is_none() && sink.bytes.is_empty());
        // No fault: the whole blob.
        let mut sink = Recorded::default();
        assert!(blobs.get_into("box", "s", &mut sink).await.unwrap().is_some());
        assert_eq!(sink.bytes, *bytes);

        // Each call reached the wrapped backend as itself (never as `put` or `get`), unless failed before sending.
        let c = counted.counts();
        assert_eq!(
            (c.blob_shared_puts, c.blob_puts, c.blob_streamed_gets, c.blob_gets),
            (1, 0, 2, 0),
            "{c:?}"
        );
        assert_eq!(blobs.pending(), 0);
    }
}
