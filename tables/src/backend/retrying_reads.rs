//! A decorator that retries reads the way the Azure backends' HTTP layer
//! does, for a backend that has no such layer.

use std::time::Instant;

use async_trait::async_trait;

use super::retry::RetryPolicy;
use super::{Backend, Page, PageAnswer, PageToken, QueryRequest, WriteOp, WriteOutcome};
use crate::error::{ErrorKind, Result};
use crate::value::Row;

/// Wraps a table [`Backend`] and retries what is safe to repeat blindly —
/// point reads, query pages, creating and deleting a table — when it fails
/// transiently ([`ErrorKind::Throttled`], [`ErrorKind::Unavailable`]), with
/// the backoff, attempts and budget of a [`RetryPolicy`], each retry waiting
/// at least as long as the failure asked ([`Error::retry_after`](crate::Error::retry_after)). Writes pass
/// through unchanged: the store retries and settles those itself.
///
/// The Azure backends retry reads in their HTTP layer already. Use this
/// over the in-memory backend wrapped in a decorator that answers as an
/// overloaded or failing service does, so reads meet the same retries they
/// would meet on Azure:
///
/// ```
/// use std::time::Duration;
/// use unified_tables::backend::memory::MemoryBackend;
/// use unified_tables::backend::retrying_reads::RetryingReads;
/// use unified_tables::backend::throttle::{ThrottleLimits, ThrottledBackend};
/// use unified_tables::{RetryPolicy, Tables};
///
/// let policy = RetryPolicy::default();
/// let service = ThrottledBackend::new(MemoryBackend::new(), ThrottleLimits::default());
/// let db = Tables::with_backend(RetryingReads::new(service, policy)).with_retry(policy);
/// # let _ = db;
/// ```
#[derive(Debug, Clone)]
pub struct RetryingReads<B> {
    inner: B,
    policy: RetryPolicy,
}

impl<B> RetryingReads<B> {
    /// Retries the reads of `inner` as `policy` allows.
    pub fn new(inner: B, policy: RetryPolicy) -> RetryingReads<B> {
        RetryingReads { inner, policy }
    }
}

/// Runs `attempt` until it succeeds, fails for good, or the policy gives up.
async fn retried<T, F, Fut>(policy: &RetryPolicy, mut attempt: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let started = Instant::now();
    let mut made = 0;
    loop {
        made += 1;
        match attempt().await {
            Err(e) if matches!(e.kind(), ErrorKind::Throttled | ErrorKind::Unavailable) => {
                match policy.pause_after(&e, made, started.elapsed()) {
                    Some(pause) => tokio::time::sleep(pause).await,
                    None => return Err(e),
                }
            }
            done => return done,
        }
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<B: Backend> Backend for RetryingReads<B> {
    async fn create_table(&self, table: &str) -> Result<()> {
        retried(&self.policy, || self.inner.create_table(table)).await
    }
    async fn delete_table(&self, table: &str) -> Result<()> {
        retried(&self.policy, || self.inner.delete_table(table)).await
    }
    async fn get(&self, table: &str, partition_key: &str, row_key: &str) -> Result<Option<Row>> {
        retried(&self.policy, || self.inner.get(table, partition_key, row_key)).await
    }
    async fn execute(&self, table: &str, op: WriteOp) -> Result<WriteOutcome> {
        self.inner.execute(table, op).await
    }
    async fn transaction(&self, table: &str, ops: Vec<WriteOp>) -> Result<Vec<WriteOutcome>> {
        self.inner.transaction(table, ops).await
    }
    async fn query(&self, table: &str, request: &QueryRequest, token: Option<&PageToken>) -> Result<Page> {
        retried(&self.policy, || self.inner.query(table, request, token)).await
    }
    async fn query_body(&self, table: &str, request: &QueryRequest, token: Option<&PageToken>) -> Result<PageAnswer> {
        retried(&self.policy, || self.inner.query_body(table, request, token)).await
    }
    fn profile(&self) -> crate::service::ServiceProfile {
        self.inner.profile()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::backend::faulty::{FaultTarget, FaultTiming, FaultyBackend};
    use crate::backend::memory::MemoryBackend;
    use crate::Error;

    fn quick(attempts: u32) -> RetryPolicy {
        RetryPolicy::builder()
            .attempts(attempts)
            .backoff(Duration::from_millis(1), Duration::from_millis(2))
            .build()
            .unwrap()
    }

    #[tokio::test]
    async fn transient_read_failures_are_retried_and_refusals_and_writes_are_not() {
        let faulty = std::sync::Arc::new(FaultyBackend::new(MemoryBackend::new()));
        let b = RetryingReads::new(faulty.clone(), quick(3));
        b.create_table("t").await.unwrap();
        b.execute("t", WriteOp::Insert(Row::new("p", "r"))).await.unwrap();
        let busy = || Error::service(503, "ServerBusy", "The server is busy.");
        faulty.fail_next(FaultTarget::Get, FaultTiming::Before, busy);
        faulty.fail_next(FaultTarget::Get, FaultTiming::Before, busy);
        assert!(
            b.get("t", "p", "r").await.unwrap().is_some(),
            "two busy answers, then the row"
        );
        // Past the attempts, the last answer surfaces.
        for _ in 0..3 {
            faulty.fail_next(FaultTarget::Query, FaultTiming::Before, busy);
        }
        let err = b.query("t", &QueryRequest::default(), None).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Throttled);
        // A refusal is answered at once; a write is never repeated here.
        faulty.fail_next(FaultTarget::Get, FaultTiming::Before, || {
            Error::service(400, "InvalidInput", "bad")
        });
        assert_eq!(b.get("t", "p", "r").await.unwrap_err().kind(), ErrorKind::Invalid);
        faulty.fail_next(FaultTarget::Write, FaultTiming::Before, busy);
        let err = b.execute("t", WriteOp::Insert(Row::new("p", "s"))).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Throttled);
        assert_eq!(faulty.pending(), 0);
    }

    #[tokio::test]
    async fn a_retry_waits_at_least_as_long_as_the_failure_asked() {
        let faulty = std::sync::Arc::new(FaultyBackend::new(MemoryBackend::new()));
        let b = RetryingReads::new(faulty.clone(), quick(3));
        b.create_table("t").await.unwrap();
        let throttled = || {
            Error::service(429, "TooManyRequests", "Request rate is large.")
                .with_retry_after(Duration::from_millis(300))
        };
        faulty.fail_next(FaultTarget::Get, FaultTiming::Before, throttled);
        let started = std::time::Instant::now();
        assert_eq!(b.get("t", "p", "r").await.unwrap(), None);
        assert!(
            started.elapsed() >= Duration::from_millis(300),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(faulty.pending(), 0);
    }
}
