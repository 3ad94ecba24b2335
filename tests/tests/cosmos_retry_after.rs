//! A write Cosmos DB for Table answers 429 with `x-ms-retry-after-ms` is
//! not processed: the store sends it again, after at least the wait the
//! answer asked for (and after its own backoff when the answer names none).

use std::sync::Arc;
use std::time::{Duration, Instant};

use unified_tables::backend::faulty::{FaultTarget, FaultTiming, FaultyBackend};
use unified_tables::backend::memory::MemoryBackend;
use unified_tables::backend::Backend as _;
use unified_tables::{Error, Tables};
use unified_tables_tests::model::Customer;
use unified_tables_tests::scenarios::exactly_once::quick_retries;

fn throttled() -> Error {
    Error::service(429, "TooManyRequests", "Request rate is large.")
}

fn throttled_with_a_wait() -> Error {
    throttled().with_retry_after(Duration::from_millis(300))
}

#[tokio::test]
async fn a_throttled_write_is_sent_again_after_the_wait_it_asks_for() {
    let memory = Arc::new(MemoryBackend::cosmos(3));
    memory.create_table("Waits").await.unwrap();
    let faulty = FaultyBackend::new(memory.clone());
    let store = Tables::with_backend(faulty.clone())
        .with_retry(quick_retries())
        .store_in::<Customer>("Waits");

    faulty.fail_next(FaultTarget::Write, FaultTiming::Before, throttled_with_a_wait);
    let started = Instant::now();
    store
        .upsert(&mut Customer::new("eu", "ada@example.com", "Ada"))
        .await
        .unwrap();
    let waited = started.elapsed();
    assert_eq!(faulty.pending(), 0, "the 429 was answered");
    assert!(waited >= Duration::from_millis(300), "{waited:?}");
    assert!(memory.get("Waits", "eu", "ada@example.com").await.unwrap().is_some());

    // No wait named: the policy's backoff (5 to 20 ms).
    faulty.fail_next(FaultTarget::Write, FaultTiming::Before, throttled);
    let started = Instant::now();
    store
        .upsert(&mut Customer::new("eu", "bob@example.com", "Bob"))
        .await
        .unwrap();
    let waited = started.elapsed();
    assert_eq!(faulty.pending(), 0);
    assert!(waited < Duration::from_millis(250), "{waited:?}");
}

/// On the in-memory Cosmos profile throttling every third request, a store
/// with the reads retried as the Azure backend retries them rides out every
/// 429: each entity is written once, and every read and query answers.
#[tokio::test]
async fn a_store_rides_out_the_throttling_of_the_cosmos_profile() {
    use unified_tables::backend::counting::CountingBackend;
    use unified_tables::backend::retrying_reads::RetryingReads;
    use unified_tables::QueryOptions;

    let counted = CountingBackend::new(Arc::new(MemoryBackend::cosmos(5).throttle_every(3)));
    let reads = RetryingReads::new(counted.clone(), quick_retries());
    let store = Tables::with_backend(reads)
        .with_retry(quick_retries())
        .store_in::<Customer>("Busy");
    for i in 0..30 {
        let mut c = Customer::new("eu", &format!("c{i:02}@example.com"), "C");
        store.create(&mut c).await.unwrap();
    }
    let listed = store.query(QueryOptions::partition("eu")).await.unwrap();
    assert_eq!(listed.len(), 30, "every entity once");
    for c in &listed {
        assert!(store.get(c.key()).await.unwrap().is_some());
    }
    let counts = counted.counts();
    // Some requests were answered 429 and sent again: more requests than calls.
    assert!(counts.writes > 30, "{counts:?}");
}
