//! A handle over a pool of accounts, on three in-memory accounts and on the
//! Azurite accounts of `UNIFIED_TABLES_TEST_POOL`: queries merged across
//! accounts, cursors, `take`, an account failing mid-query, the descriptor
//! that refuses a wrong pool, and resharding with large values.
//!
//! (The whole conformance suite also runs on a pooled handle, from
//! `conformance.rs`.)

use std::sync::Arc;

use unified_tables::backend::azure::{AzureBackend, AzureBlobBackend};
use unified_tables::backend::counting::CountingBackend;
use unified_tables::backend::faulty::{FaultTarget, FaultTiming, FaultyBackend};
use unified_tables::backend::memory::{MemoryBackend, MemoryBlobBackend};
use unified_tables::backend::pool::account_of;
use unified_tables::backend::{Backend, IfMatch, QueryRequest, WriteOp};
use unified_tables::layout::{POOL_PARTITION, POOL_ROW, POOL_TABLE};
use unified_tables::query::Filter;
use unified_tables::store::AnyPartition;
use unified_tables::{BlobContent, Error, ErrorKind, QueryOptions, Store, TableEntity, Tables, Value};
use unified_tables_tests::model::Document;
use unified_tables_tests::{blob_options, noise, unique_table, POOL_VAR};

#[derive(TableEntity, Debug, Clone, PartialEq)]
struct Reading {
    #[table(partition_key)]
    sensor: String,
    #[table(row_key)]
    at: String,
    value: i64,
}

type Raw = FaultyBackend<CountingBackend<Arc<dyn Backend>>>;

/// The accounts of a pool, each reachable raw (counted, with faults on call).
struct Accounts {
    raw: Vec<Raw>,
    counters: Vec<CountingBackend<Arc<dyn Backend>>>,
    handles: Vec<Tables>,
    names: Vec<String>,
}

impl Accounts {
    fn over(rows: Vec<Arc<dyn Backend>>, blobs: Vec<Arc<dyn unified_tables::backend::blob::BlobBackend>>) -> Accounts {
        let counters: Vec<CountingBackend<Arc<dyn Backend>>> = rows.into_iter().map(CountingBackend::new).collect();
        let raw: Vec<Raw> = counters.iter().map(|c| FaultyBackend::new(c.clone())).collect();
        let handles = raw
            .iter()
            .zip(blobs)
            .map(|(r, b)| Tables::with_backend(r.clone()).with_blobs(b, blob_options()))
            .collect();
        let names = (0..raw.len()).map(|i| format!("account-{i}")).collect();
        Accounts {
            raw,
            counters,
            handles,
            names,
        }
    }

    fn memory() -> Accounts {
        Accounts::over(
            (0..3)
                .map(|_| Arc::new(MemoryBackend::new()) as Arc<dyn Backend>)
                .collect(),
            (0..3)
                .map(|_| Arc::new(MemoryBlobBackend::new()) as Arc<dyn unified_tables::backend::blob::BlobBackend>)
                .collect(),
        )
    }

    fn azure() -> Option<Accounts> {
        let Ok(connections) = std::env::var(POOL_VAR) else {
            let required = std::env::var("UNIFIED_TABLES_REQUIRE_AZURE").is_ok_and(|v| v == "1")
                || std::env::var("CI").is_ok_and(|v| v == "true");
            assert!(
                !required,
                "the pooled Azure tests are required here but {POOL_VAR} is not set"
            );
            return None;
        };
        let connections: Vec<&str> = connections.split('|').filter(|c| !c.is_empty()).collect();
        assert!(connections.len() >= 3, "{POOL_VAR} must name three accounts");
        Some(Accounts::over(
            connections
                .iter()
                .map(|c| Arc::new(AzureBackend::from_connection_string(c).unwrap()) as Arc<dyn Backend>)
                .collect(),
            connections
                .iter()
                .map(|c| {
                    Arc::new(AzureBlobBackend::from_connection_string(c).unwrap())
                        as Arc<dyn unified_tables::backend::blob::BlobBackend>
                })
                .collect(),
        ))
    }

    fn pool(&self, n: usize) -> Vec<(String, Tables)> {
        self.names[..n]
            .iter()
            .cloned()
            .zip(self.handles[..n].iter().cloned())
            .collect()
    }

    /// Forgets any pool these accounts were part of (the Azure accounts are
    /// shared by the tests of this file, which take turns).
    async fn forget_pool(&self) {
        for raw in &self.raw {
            raw.create_table(POOL_TABLE).await.unwrap();
            let op = WriteOp::Delete {
                partition_key: POOL_PARTITION.into(),
                row_key: POOL_ROW.into(),
                condition: IfMatch::Any,
            };
            match raw.execute(POOL_TABLE, op).await {
                Ok(_) => {}
                Err(e) if e.service_code().is_some_and(|(s, _)| s == 404) => {}
                Err(e) => panic!("{e}"),
            }
        }
    }

    /// The partition keys of `table` stored in account `i`.
    async fn partitions_in(&self, i: usize, table: &str) -> Vec<String> {
        let mut keys = Vec::new();
        let mut token = None;
        loop {
            let page = match self.raw[i].query(table, &QueryRequest::default(), token.as_ref()).await {
                Err(e) if e.service_code().is_some_and(|(s, _)| s == 404) => return keys,
                page => page.unwrap(),
            };
            keys.extend(page.rows.into_iter().map(|r| r.partition_key));
            match page.next {
                Some(next) => token = Some(next),
                None => break,
            }
        }
        keys.dedup();
        keys
    }
}

/// One test at a time touches the Azure accounts' pool descriptors.
static DESCRIPTORS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn readings(partitions: usize, per_partition: usize) -> Vec<Reading> {
    let mut all: Vec<Reading> = (0..partitions)
        .flat_map(|p| {
            (0..per_partition).map(move |r| Reading {
                sensor: format!("sensor-{p:03}"),
                at: format!("{r:04}"),
                value: (p * 1000 + r) as i64,
            })
        })
        .collect();
    all.sort_by(|a, b| (&a.sensor, &a.at).cmp(&(&b.sensor, &b.at)));
    all
}

/// Every row of `store` page by page from `options`, each page at most `size` rows.
async fn page_through(
    store: &Store<Reading>,
    mut options: QueryOptions<Reading, AnyPartition>,
    size: usize,
) -> Vec<Reading> {
    let mut seen = Vec::new();
    loop {
        let page = store.page(options.clone()).await.unwrap();
        assert!(page.items.len() <= size);
        seen.extend(page.items);
        match page.cursor {
            Some(next) => options = options.after(next),
            None => return seen,
        }
    }
}

/// A pooled handle made without a descriptor check (the tests that do not
/// check descriptors run side by side).
fn unchecked(accounts: &Accounts) -> Tables {
    let backends: Vec<Arc<dyn Backend>> = accounts
        .raw
        .iter()
        .map(|r| Arc::new(r.clone()) as Arc<dyn Backend>)
        .collect();
    Tables::with_backend(unified_tables::backend::pool::PooledBackend::new(backends).unwrap()).without_blobs()
}

async fn merges_in_key_order_and_each_partition_stays_home(accounts: Accounts) {
    let table = unique_table("merge");
    let store = unchecked(&accounts).store_in::<Reading>(&table);
    let all = readings(24, 5);
    for partition in all.chunks(5) {
        store.create_batch(partition).await.unwrap();
    }
    assert_eq!(store.query(QueryOptions::all()).await.unwrap(), all);
    for i in 0..3 {
        let here = accounts.partitions_in(i, &table).await;
        assert!(!here.is_empty(), "account {i} holds some of 24 partitions");
        for pk in here {
            assert_eq!(account_of(&pk, 3), i, "{pk} in account {i}");
        }
    }
    // A partition query asks only its account.
    accounts.counters.iter().for_each(CountingBackend::reset);
    let one = store.query(QueryOptions::partition("sensor-007")).await.unwrap();
    assert_eq!(one.len(), 5);
    let home = account_of("sensor-007", 3);
    for (i, counter) in accounts.counters.iter().enumerate() {
        assert_eq!(counter.counts().queries, u64::from(i == home), "account {i}");
    }
}

async fn cursors_resume_across_accounts_and_take_stops_early(accounts: Accounts) {
    let table = unique_table("cursor");
    let store = unchecked(&accounts).store_in::<Reading>(&table);
    let all = readings(20, 3);
    for partition in all.chunks(3) {
        store.create_batch(partition).await.unwrap();
    }
    let seen = page_through(&store, QueryOptions::all().take(7), 7).await;
    assert_eq!(seen, all, "every row once, in key order");
    accounts.counters.iter().for_each(CountingBackend::reset);
    let first = store.query(QueryOptions::all().take(4)).await.unwrap();
    assert_eq!(first, all[..4]);
    for (i, counter) in accounts.counters.iter().enumerate() {
        assert_eq!(counter.counts().queries, 1, "account {i} asked once for `take(4)`");
    }
}

async fn an_account_failing_mid_query_fails_it_and_resumes_without_loss(accounts: Accounts) {
    let table = unique_table("fail");
    let store = unchecked(&accounts).store_in::<Reading>(&table);
    let all = readings(15, 4);
    for partition in all.chunks(4) {
        store.create_batch(partition).await.unwrap();
    }
    let mut seen = Vec::new();
    let mut options = QueryOptions::all().take(6);
    let first = store.page(options.clone()).await.unwrap();
    seen.extend(first.items);
    options = options.after(first.cursor.expect("more pages"));
    accounts.raw[1].fail_next(FaultTarget::Query, FaultTiming::Before, || {
        Error::service(500, "InternalError", "account 1 failed")
    });
    let err = store.page(options.clone()).await.unwrap_err();
    assert!(err.to_string().contains("account 1 failed"), "{err}");
    seen.extend(page_through(&store, options, 6).await);
    assert_eq!(seen, all, "nothing twice, nothing skipped");
}

async fn the_descriptor_refuses_a_wrong_pool(accounts: Accounts) {
    let _turn = DESCRIPTORS.lock().await;
    accounts.forget_pool().await;
    Tables::pooled(accounts.pool(3))
        .await
        .expect("the first open records the pool");
    Tables::pooled(accounts.pool(3))
        .await
        .expect("the same pool opens again");
    let fewer = Tables::pooled(accounts.pool(2)).await.unwrap_err();
    assert_eq!(fewer.kind(), ErrorKind::Invalid);
    assert!(fewer.to_string().contains("3 accounts"), "{fewer}");
    let mut swapped = accounts.pool(3);
    swapped.swap(0, 1);
    let err = Tables::pooled(swapped).await.unwrap_err();
    assert!(err.to_string().contains("position"), "{err}");
    let mut renamed = accounts.pool(3);
    renamed[2].0 = "another".into();
    let err = Tables::pooled(renamed).await.unwrap_err();
    assert!(err.to_string().contains("another"), "{err}");
    accounts.forget_pool().await;
}

async fn resharding_moves_partitions_with_their_large_values(accounts: Accounts) {
    let _turn = DESCRIPTORS.lock().await;
    accounts.forget_pool().await;
    let table = unique_table("reshard");
    let two = Tables::pooled(accounts.pool(2)).await.unwrap();
    let store = two.store_in::<Document>(&table);
    let mut documents = Vec::new();
    for i in 0..12 {
        let mut doc = Document::new(&format!("customer-{i}"), "doc");
        doc.body = noise(if i % 3 == 0 { 3_200_000 } else { 150_000 }, i); // a blob, or continuation rows
        doc.attachment =
            (i % 4 == 0).then(|| BlobContent::from_bytes(noise(20_000, i + 100).into_bytes(), "text/plain"));
        store.upsert(&mut doc).await.unwrap();
        documents.push(doc);
    }
    let moving: Vec<usize> = (0..12)
        .filter(|i| account_of(&format!("customer-{i}"), 3) == 2)
        .collect();
    assert!(!moving.is_empty(), "some partitions move to the new account");
    let report = Tables::reshard(accounts.pool(2), accounts.pool(3), &[table.as_str()])
        .await
        .unwrap();
    assert_eq!(report.partitions_moved, moving.len());
    assert!(report.rows_copied >= moving.len());
    assert_eq!(report.rows_removed, report.rows_copied);
    let err = Tables::pooled(accounts.pool(2)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Invalid, "the old pool no longer opens: {err}");
    let three = Tables::pooled(accounts.pool(3)).await.unwrap();
    let store = three.store_in::<Document>(&table);
    for doc in &documents {
        let mut read = store
            .get((doc.pk.as_str(), "doc"))
            .await
            .unwrap()
            .expect("every document survives");
        read.etag = None;
        let mut want = doc.clone();
        want.etag = None;
        assert_eq!(read.body, want.body, "{}", doc.pk);
        match (&read.attachment, &want.attachment) {
            (Some(a), Some(b)) => assert_eq!(a.read_all().await.unwrap(), b.read_all().await.unwrap(), "{}", doc.pk),
            (a, b) => assert_eq!(a.is_some(), b.is_some(), "{}", doc.pk),
        }
    }
    for i in 0..3 {
        for pk in accounts.partitions_in(i, &table).await {
            assert_eq!(account_of(&pk, 3), i, "{pk} left behind in account {i}");
        }
    }
    // Running it again finds nothing left to do.
    let again = Tables::reshard(accounts.pool(2), accounts.pool(3), &[table.as_str()])
        .await
        .unwrap();
    assert_eq!((again.partitions_moved, again.rows_removed), (0, 0));
    // A filter too complex to resume across accounts is refused, naming why.
    let wide = (0..13).fold(Filter::eq("value", Value::Int64(0)), |f, i| {
        f.or(Filter::eq("value", Value::Int64(i)))
    });
    let err = store.query(QueryOptions::all().filter(wide)).await.unwrap_err();
    assert!(err.to_string().contains("pool"), "{err}");
    accounts.forget_pool().await;
}

macro_rules! on_both {
    ($($name:ident),* $(,)?) => {
        mod memory {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    super::$name(Accounts::memory()).await;
                }
            )*
        }
        mod azure {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let Some(accounts) = Accounts::azure() else { return };
                    super::$name(accounts).await;
                }
            )*
        }
    };
}

on_both!(
    merges_in_key_order_and_each_partition_stays_home,
    cursors_resume_across_accounts_and_take_stops_early,
    an_account_failing_mid_query_fails_it_and_resumes_without_loss,
    the_descriptor_refuses_a_wrong_pool,
    resharding_moves_partitions_with_their_large_values,
);
