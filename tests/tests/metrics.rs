//! The metrics of the feature `metrics`, through a recorder installed for
//! the process: operations by name and outcome, requests per operation,
//! settle read-backs, retries and cache hits, on memory and on Azure. The
//! recorder is the process's own, so this binary holds one test, which runs
//! the backends one after the other.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use metrics::{
    Counter, CounterFn, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder, SharedString, Unit,
};
use unified_tables::backend::faulty::{FaultTarget, FaultTiming};
use unified_tables::telemetry::{CACHE_HITS, OPERATION_DURATION, REQUESTS, RETRIES, SETTLE_READ_BACKS};
use unified_tables::{CachePolicy, QueryOptions, ReadCache};
use unified_tables_tests::model::Customer;
use unified_tables_tests::scenarios::exactly_once::{busy, faulty_tables, lost};
use unified_tables_tests::{azure_env, memory_env, Env};

/// One count per metric and label set: a counter's total, a histogram's number of values.
struct Count(AtomicU64);

impl CounterFn for Count {
    fn increment(&self, value: u64) {
        self.0.fetch_add(value, Ordering::Relaxed);
    }
    fn absolute(&self, value: u64) {
        self.0.store(value, Ordering::Relaxed);
    }
}

impl HistogramFn for Count {
    fn record(&self, _: f64) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

#[derive(Default)]
struct Counts(Mutex<BTreeMap<String, Arc<Count>>>);

/// `name{label=value,...}`, labels in order.
fn line(key: &Key) -> String {
    let mut labels: Vec<String> = key.labels().map(|l| format!("{}={}", l.key(), l.value())).collect();
    labels.sort();
    format!("{}{{{}}}", key.name(), labels.join(","))
}

impl Counts {
    fn slot(&self, key: &Key) -> Arc<Count> {
        self.0
            .lock()
            .unwrap()
            .entry(line(key))
            .or_insert_with(|| Arc::new(Count(AtomicU64::new(0))))
            .clone()
    }

    fn get(&self, line: &str) -> u64 {
        self.0
            .lock()
            .unwrap()
            .get(line)
            .map_or(0, |c| c.0.load(Ordering::Relaxed))
    }

    fn snapshot(&self) -> BTreeMap<String, u64> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .map(|(k, c)| (k.clone(), c.0.load(Ordering::Relaxed)))
            .collect()
    }
}

struct Recording(&'static Counts);

impl Recorder for Recording {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(self.0.slot(key))
    }
    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }
    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::from_arc(self.0.slot(key))
    }
}

fn counts() -> &'static Counts {
    static COUNTS: OnceLock<&'static Counts> = OnceLock::new();
    COUNTS.get_or_init(|| {
        let counts: &'static Counts = Box::leak(Box::default());
        metrics::set_global_recorder(Recording(counts)).expect("the only recorder");
        counts
    })
}

/// The growth of each line between two snapshots.
fn delta(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>, line: &str) -> u64 {
    after.get(line).copied().unwrap_or(0) - before.get(line).copied().unwrap_or(0)
}

async fn operations_requests_read_backs_and_cache_hits_are_counted(env: &Env) {
    let m = counts();
    let table = &env.table;
    let before = m.snapshot();

    let store = env
        .cached(
            ReadCache::builder()
                .policy(CachePolicy::Sliding(Duration::from_secs(60)))
                .build()
                .unwrap(),
        )
        .store_in::<Customer>(table);
    let mut c = Customer::new("p", "r", "n");
    store.create(&mut c).await.unwrap();
    store.get(("p", "r")).await.unwrap().expect("a hit");
    assert!(store.create(&mut Customer::new("p", "r", "n")).await.is_err());

    // A write whose answer is lost, settled by a read-back; a busy answer, sent again.
    let (faulty, tables) = faulty_tables(env);
    let plain = tables.store_in::<Customer>(table);
    faulty.fail_next(FaultTarget::Write, FaultTiming::After, lost);
    plain.create(&mut Customer::new("p", "lost", "n")).await.unwrap();
    faulty.fail_next(FaultTarget::Write, FaultTiming::Before, busy);
    plain.create(&mut Customer::new("p", "busy", "n")).await.unwrap();

    // A stream of three pages: the two fetched ahead by tasks of their own
    // count as the stream's requests too.
    let paged: Vec<Customer> = (0..2_500)
        .map(|i| Customer::new("s", &format!("{i:05}"), "n"))
        .collect();
    plain.upsert_batch(&paged).await.unwrap();
    let queries = env.counts().queries;
    let mut stream = plain.stream(QueryOptions::partition("s"));
    let mut streamed = 0;
    while let Some(c) = stream.next().await {
        c.unwrap();
        streamed += 1;
    }
    assert_eq!(streamed, 2_500);
    let queries = env.counts().queries - queries;

    let after = m.snapshot();
    let op = |name: &str, outcome: &str| {
        format!("{OPERATION_DURATION}{{db.collection.name={table},db.operation.name={name},outcome={outcome}}}")
    };
    assert_eq!(delta(&before, &after, &op("create", "ok")), 3, "{after:#?}");
    assert_eq!(delta(&before, &after, &op("create", "already_exists")), 1, "{after:#?}");
    assert_eq!(delta(&before, &after, &op("get", "ok")), 1, "{after:#?}");
    assert_eq!(delta(&before, &after, &format!("{CACHE_HITS}{{cache=entity}}")), 1);
    assert_eq!(
        delta(&before, &after, &format!("{SETTLE_READ_BACKS}{{verdict=applied}}")),
        1
    );
    assert_eq!(delta(&before, &after, &format!("{RETRIES}{{reason=not_processed}}")), 1);
    // Requests per operation: the creates' inserts (two of them sent twice)
    // and the read-back, the table's creation; the cached get sent none.
    let requests = |operation: &str, resource: &str| {
        delta(
            &before,
            &after,
            &format!("{REQUESTS}{{db.operation.name={operation},resource={resource}}}"),
        )
    };
    assert_eq!(requests("create", "entity"), 3 + 1 + 1 + 1, "{after:#?}");
    assert_eq!(requests("get", "entity"), 0, "{after:#?}");
    assert_eq!(delta(&before, &after, &op("stream", "ok")), 1, "{after:#?}");
    assert!(queries >= 3, "three pages: {queries}");
    assert_eq!(requests("stream", "query"), queries, "{after:#?}");
    assert_eq!(requests("none", "query"), 0, "{after:#?}");
    assert_eq!(m.get("no such line"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_what_each_operation_did_on_memory_and_azure() {
    let memory = memory_env("metrics");
    operations_requests_read_backs_and_cache_hits_are_counted(&memory).await;
    if let Some(azure) = azure_env("metrics").await {
        operations_requests_read_backs_and_cache_hits_are_counted(&azure).await;
    }
}
