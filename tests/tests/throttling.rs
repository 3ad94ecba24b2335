//! The store under the service's throttling, simulated by
//! `ThrottledBackend` over the in-memory backend and over Azurite, with
//! `RetryingReads` above it retrying reads as the Azure backends' HTTP layer
//! does: backoff absorbs a burst, a budget that runs out is `Throttled`, and
//! a throttled write answered `OperationTimedOut` is settled and applied once.

use std::sync::Arc;
use std::time::Duration;

use unified_tables::backend::azure::AzureBackend;
use unified_tables::backend::memory::MemoryBackend;
use unified_tables::backend::retrying_reads::RetryingReads;
use unified_tables::backend::throttle::{ThrottleLimits, ThrottledBackend};
use unified_tables::backend::Backend;
use unified_tables::{Error, ErrorKind, QueryOptions, RetryPolicy, TableEntity, Tables};
use unified_tables_tests::{unique_table, CONNECTION_VAR};

#[derive(TableEntity, Debug, Clone, PartialEq)]
struct Tick {
    #[table(partition_key)]
    source: String,
    #[table(row_key)]
    n: String,
    count: i64,
}

fn limits(partition_per_second: f64, burst: Duration, timeout_every: u64) -> ThrottleLimits {
    ThrottleLimits {
        partition_per_second,
        account_per_second: 100_000.0,
        burst,
        timeout_every,
    }
}

fn memory() -> Option<Arc<dyn Backend>> {
    Some(Arc::new(MemoryBackend::new()))
}

fn azure() -> Option<Arc<dyn Backend>> {
    match std::env::var(CONNECTION_VAR) {
        Ok(c) => Some(Arc::new(
            AzureBackend::from_connection_string(&c).expect("a usable connection string"),
        )),
        Err(_) => {
            let required = std::env::var("UNIFIED_TABLES_REQUIRE_AZURE").is_ok_and(|v| v == "1")
                || std::env::var("CI").is_ok_and(|v| v == "true");
            assert!(
                !required,
                "the Azure throttling tests are required here but {CONNECTION_VAR} is not set"
            );
            None
        }
    }
}

async fn a_burst_past_the_partition_rate_is_absorbed_by_backoff(inner: Arc<dyn Backend>) {
    let throttle = ThrottledBackend::new(inner, limits(50.0, Duration::from_millis(100), 0));
    let policy = RetryPolicy::builder()
        .attempts(30)
        .backoff(Duration::from_millis(20), Duration::from_millis(200))
        .retry_budget(Duration::from_secs(20))
        .build()
        .unwrap();
    let db = Tables::with_backend(RetryingReads::new(throttle.clone(), policy))
        .without_blobs()
        .with_retry(policy);
    let store = db.store_in::<Tick>(unique_table("burst"));
    // Forty writes at once into a partition whose bucket holds five.
    let writes = (0..40).map(|i| {
        let store = store.clone();
        async move {
            let mut tick = Tick {
                source: "hot".into(),
                n: format!("{i:03}"),
                count: i,
            };
            store.create(&mut tick).await
        }
    });
    for result in futures::future::join_all(writes).await {
        result.expect("no error surfaces while the retry budget lasts");
    }
    assert!(throttle.throttled() > 0, "the burst was throttled");
    let stored = store.query(QueryOptions::partition("hot")).await.unwrap();
    assert_eq!(stored.len(), 40, "every write stored once");
}

async fn a_budget_that_runs_out_is_throttled_and_stores_nothing(inner: Arc<dyn Backend>) {
    let throttle = ThrottledBackend::new(inner, limits(0.5, Duration::from_secs(2), 0));
    let policy = RetryPolicy::builder()
        .attempts(3)
        .backoff(Duration::from_millis(10), Duration::from_millis(20))
        .build()
        .unwrap();
    let db = Tables::with_backend(RetryingReads::new(throttle.clone(), policy))
        .without_blobs()
        .with_retry(policy);
    let store = db.store_in::<Tick>(unique_table("budget"));
    store.ensure_created().await.unwrap();
    let mut first = Tick {
        source: "hot".into(),
        n: "1".into(),
        count: 1,
    };
    store.create(&mut first).await.expect("the bucket's one token");
    let mut second = Tick {
        n: "2".into(),
        ..first.clone()
    };
    let err = store.create(&mut second).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Throttled, "{err}");
    assert!(matches!(err, Error::Service { status: 503, .. }), "{err:?}");
    assert!(throttle.throttled() >= 3, "every attempt was throttled");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(store.get(("hot", "2")).await.unwrap(), None, "nothing stored");
}

async fn a_throttled_write_answered_operation_timeout_is_settled_and_applied_once(inner: Arc<dyn Backend>) {
    // Every throttled answer is 500 OperationTimedOut: ambiguous to the store,
    // which reads the row back, finds no token and sends the write again.
    let throttle = ThrottledBackend::new(inner, limits(20.0, Duration::from_millis(100), 1));
    let policy = RetryPolicy::builder()
        .attempts(40)
        .backoff(Duration::from_millis(20), Duration::from_millis(100))
        .retry_budget(Duration::from_secs(20))
        .build()
        .unwrap();
    let db = Tables::with_backend(RetryingReads::new(throttle.clone(), policy))
        .without_blobs()
        .with_retry(policy);
    let store = db.store_in::<Tick>(unique_table("timeout"));
    store.ensure_created().await.unwrap();
    let mut counter = Tick {
        source: "hot".into(),
        n: "counter".into(),
        count: 0,
    };
    store.create(&mut counter).await.unwrap();
    // One after another, each as fast as the bucket allows: most attempts
    // meet an empty bucket.
    for _ in 0..12 {
        store
            .mutate(("hot", "counter"), |t: &mut Tick| t.count += 1)
            .await
            .expect("each increment lands");
    }
    assert!(throttle.throttled() > 0, "the increments were throttled");
    let stored = store.get(("hot", "counter")).await.unwrap().unwrap();
    assert_eq!(stored.count, 12, "every increment applied exactly once");
}

macro_rules! on_both {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    super::$name(super::memory().unwrap()).await;
                }
            )*
        }
        mod azure {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let Some(backend) = super::azure() else { return };
                    super::$name(backend).await;
                }
            )*
        }
    };
}

on_both!(
    a_burst_past_the_partition_rate_is_absorbed_by_backoff,
    a_budget_that_runs_out_is_throttled_and_stores_nothing,
    a_throttled_write_answered_operation_timeout_is_settled_and_applied_once,
);
