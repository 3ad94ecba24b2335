//! A decorator that enforces the service's scalability targets with token
//! buckets and answers as the service does past them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;

use super::{Backend, Page, PageAnswer, PageToken, QueryRequest, WriteOp, WriteOutcome};
use crate::error::{Error, Result};
use crate::query::Filter;
use crate::value::Row;

/// The rates a [`ThrottledBackend`] enforces.
///
/// The default is the service's published targets: 2,000 entities per
/// second in one partition and 20,000 in one account, each bucket holding
/// one second's worth for bursts. Tests set lower rates so overload comes
/// quickly.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThrottleLimits {
    /// Entities per second one partition serves.
    pub partition_per_second: f64,
    /// Entities per second the account serves.
    pub account_per_second: f64,
    /// How much of the rate a bucket holds when idle: the burst it lets
    /// through at once is the rate times this.
    pub burst: Duration,
    /// Answer every n-th throttled request with 500 `OperationTimedOut`
    /// instead of 503 `ServerBusy` (0: never). Neither is applied.
    pub timeout_every: u64,
}

impl Default for ThrottleLimits {
    fn default() -> Self {
        ThrottleLimits {
            partition_per_second: 2_000.0,
            account_per_second: 20_000.0,
            burst: Duration::from_secs(1),
            timeout_every: 0,
        }
    }
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn full(capacity: f64) -> Bucket {
        Bucket {
            tokens: capacity,
            at: Instant::now(),
        }
    }

    fn refill(&mut self, rate: f64, capacity: f64, now: Instant) {
        let earned = now.saturating_duration_since(self.at).as_secs_f64() * rate;
        self.tokens = (self.tokens + earned).min(capacity);
        self.at = now;
    }
}

#[derive(Debug)]
struct Buckets {
    account: Bucket,
    partitions: HashMap<(String, String), Bucket>,
}

/// Wraps a table [`Backend`] and refuses requests past its
/// [`ThrottleLimits`] the way the service does: 503 `ServerBusy` (or 500
/// `OperationTimedOut`, see [`ThrottleLimits::timeout_every`]), without
/// applying them.
///
/// Each request costs its entities in its partition's bucket and in the
/// account's: a point read or write one, a transaction one per operation,
/// a query one to start and then one per row it returns (so a scan past the
/// rate is slowed on its next page; a page answered as a body the store has
/// not read yet counts as one). Table creation and deletion cost the
/// account one.
///
/// ```
/// use std::time::Duration;
/// use unified_tables::backend::memory::MemoryBackend;
/// use unified_tables::backend::throttle::{ThrottleLimits, ThrottledBackend};
/// let limits = ThrottleLimits {
///     partition_per_second: 200.0,
///     account_per_second: 1_000.0,
///     burst: Duration::from_millis(100),
///     timeout_every: 0,
/// };
/// let backend = ThrottledBackend::new(MemoryBackend::new(), limits);
/// # let _ = backend;
/// ```
#[derive(Debug, Clone)]
pub struct ThrottledBackend<B> {
    inner: B,
    limits: ThrottleLimits,
    buckets: Arc<Mutex<Buckets>>,
    throttled: Arc<AtomicU64>,
}

impl<B> ThrottledBackend<B> {
    /// Wraps `inner`, enforcing `limits`.
    pub fn new(inner: B, limits: ThrottleLimits) -> ThrottledBackend<B> {
        let capacity = limits.account_per_second * limits.burst.as_secs_f64();
        ThrottledBackend {
            inner,
            limits,
            buckets: Arc::new(Mutex::new(Buckets {
                account: Bucket::full(capacity.max(1.0)),
                partitions: HashMap::new(),
            })),
            throttled: Arc::new(AtomicU64::new(0)),
        }
    }

    /// How many requests were refused so far.
    pub fn throttled(&self) -> u64 {
        self.throttled.load(Ordering::Relaxed)
    }

    fn capacities(&self) -> (f64, f64) {
        let burst = self.limits.burst.as_secs_f64();
        (
            (self.limits.partition_per_second * burst).max(1.0),
            (self.limits.account_per_second * burst).max(1.0),
        )
    }

    /// Takes `cost` from the partition's bucket (if any) and the account's,
    /// or answers as the service does when either cannot pay.
    fn admit(&self, partition: Option<(&str, &str)>, cost: f64) -> Result<()> {
        let (partition_capacity, account_capacity) = self.capacities();
        let now = Instant::now();
        let mut buckets = self
            .buckets
            .lock()
            .map_err(|_| Error::config("the throttle's state is poisoned"))?;
        let Buckets { account, partitions } = &mut *buckets;
        account.refill(self.limits.account_per_second, account_capacity, now);
        let bucket = partition.map(|(table, pk)| {
            let bucket = partitions
                .entry((table.to_owned(), pk.to_owned()))
                .or_insert_with(|| Bucket::full(partition_capacity));
            bucket.refill(self.limits.partition_per_second, partition_capacity, now);
            bucket
        });
        // A request costing more than a full bucket passes on a full bucket.
        let pays = |b: &Bucket, capacity: f64| b.tokens >= cost.min(capacity);
        let ok = pays(account, account_capacity) && bucket.as_ref().is_none_or(|b| pays(b, partition_capacity));
        if !ok {
            let n = self.throttled.fetch_add(1, Ordering::Relaxed) + 1;
            let every = self.limits.timeout_every;
            return Err(if every > 0 && n.is_multiple_of(every) {
                Error::service(
                    500,
                    "OperationTimedOut",
                    "The operation could not be completed within the permitted time.",
                )
            } else {
                Error::service(
                    503,
                    "ServerBusy",
                    "The server is busy. The partition or account is receiving more requests than it can process.",
                )
            });
        }
        account.tokens -= cost;
        if let Some(b) = bucket {
            b.tokens -= cost;
        }
        Ok(())
    }

    /// Charges rows a query returned (the buckets may go below zero: the
    /// next requests wait for them).
    fn charge(&self, partition: Option<(&str, &str)>, cost: f64) {
        if let Ok(mut buckets) = self.buckets.lock() {
            buckets.account.tokens -= cost;
            if let Some((table, pk)) = partition {
                if let Some(b) = buckets.partitions.get_mut(&(table.to_owned(), pk.to_owned())) {
                    b.tokens -= cost;
                }
            }
        }
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<B: Backend> Backend for ThrottledBackend<B> {
    async fn create_table(&self, table: &str) -> Result<()> {
        self.admit(None, 1.0)?;
        self.inner.create_table(table).await
    }
    async fn delete_table(&self, table: &str) -> Result<()> {
        self.admit(None, 1.0)?;
        self.inner.delete_table(table).await
    }
    async fn get(&self, table: &str, partition_key: &str, row_key: &str) -> Result<Option<Row>> {
        self.admit(Some((table, partition_key)), 1.0)?;
        self.inner.get(table, partition_key, row_key).await
    }
    async fn execute(&self, table: &str, op: WriteOp) -> Result<WriteOutcome> {
        self.admit(Some((table, op.keys().0)), 1.0)?;
        self.inner.execute(table, op).await
    }
    async fn transaction(&self, table: &str, ops: Vec<WriteOp>) -> Result<Vec<WriteOutcome>> {
        let partition = ops.first().map(|op| op.keys().0.to_owned());
        self.admit(partition.as_deref().map(|pk| (table, pk)), ops.len() as f64)?;
        self.inner.transaction(table, ops).await
    }
    async fn query(&self, table: &str, request: &QueryRequest, token: Option<&PageToken>) -> Result<Page> {
        let partition = request
            .filter
            .as_ref()
            .and_then(Filter::pinned_partition)
            .map(|pk| (table, pk));
        self.admit(partition, 1.0)?;
        let page = self.inner.query(table, request, token).await?;
        self.charge(partition, page.rows.len().saturating_sub(1) as f64);
        Ok(page)
    }
    async fn query_body(&self, table: &str, request: &QueryRequest, token: Option<&PageToken>) -> Result<PageAnswer> {
        let partition = request
            .filter
            .as_ref()
            .and_then(Filter::pinned_partition)
            .map(|pk| (table, pk));
        self.admit(partition, 1.0)?;
        let answer = self.inner.query_body(table, request, token).await?;
        // Rows are charged as `query` charges them; a body not read yet counts
        // as the one request.
        if let PageAnswer::Rows(page) = &answer {
            self.charge(partition, page.rows.len().saturating_sub(1) as f64);
        }
        Ok(answer)
    }
    fn profile(&self) -> crate::service::ServiceProfile {
        self.inner.profile()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::memory::MemoryBackend;

    fn limits(partition: f64, account: f64) -> ThrottleLimits {
        ThrottleLimits {
            partition_per_second: partition,
            account_per_second: account,
            burst: Duration::from_millis(100),
            timeout_every: 0,
        }
    }

    #[tokio::test]
    async fn a_partition_past_its_rate_is_refused_unapplied_and_others_go_on() {
        let b = ThrottledBackend::new(MemoryBackend::new(), limits(100.0, 10_000.0));
        b.create_table("t").await.unwrap();
        // The bucket holds 10 (100/s for 100 ms): the 11th write at once is refused.
        for i in 0..10 {
            b.execute("t", WriteOp::Insert(Row::new("p", format!("{i}"))))
                .await
                .unwrap();
        }
        let err = b.execute("t", WriteOp::Insert(Row::new("p", "x"))).await.unwrap_err();
        assert_eq!(err.service_code(), Some((503, "ServerBusy")));
        assert_eq!(err.kind(), crate::ErrorKind::Throttled);
        assert!(b.inner.get("t", "p", "x").await.unwrap().is_none(), "nothing applied");
        // Another partition has its own bucket.
        b.execute("t", WriteOp::Insert(Row::new("q", "x"))).await.unwrap();
        // The bucket refills at its rate.
        tokio::time::sleep(Duration::from_millis(30)).await;
        b.execute("t", WriteOp::Insert(Row::new("p", "x"))).await.unwrap();
        assert_eq!(b.throttled(), 1);
    }

    #[tokio::test]
    async fn the_account_rate_bounds_every_partition_together() {
        let b = ThrottledBackend::new(
            MemoryBackend::new(),
            ThrottleLimits {
                timeout_every: 2,
                ..limits(1_000.0, 100.0)
            },
        );
        b.create_table("t").await.unwrap();
        let mut refused = Vec::new();
        for i in 0..20 {
            if let Err(e) = b.execute("t", WriteOp::Insert(Row::new(format!("p{i}"), "r"))).await {
                refused.push(e.service_code().map(|(s, c)| (s, c.to_owned())));
            }
        }
        // 10 in the bucket (one taken by create_table), the rest refused;
        // every second refusal is an OperationTimedOut.
        assert_eq!(refused.len(), 11, "{refused:?}");
        assert!(refused.contains(&Some((500, "OperationTimedOut".to_owned()))));
        assert!(refused.contains(&Some((503, "ServerBusy".to_owned()))));
    }
}
