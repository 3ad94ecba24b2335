//! The request units (RU) Cosmos DB for Table charges, as a subscriber and
//! a metrics recorder see them: on each request span (every attempt of the
//! request added up), on each operation span (every request of the
//! operation added up), and in the histogram of charges per operation. On
//! the in-memory backend's Cosmos profile (a modelled charge), and on the
//! Azure backend against a loopback server answering with
//! `x-ms-request-charge`. Table Storage charges nothing, and nothing is
//! recorded there. The recorder is the process's own, so this binary holds
//! one test, which runs the backends one after the other.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::sync::{Arc, Mutex, OnceLock};

use metrics::{Counter, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use unified_tables::backend::azure::{AzureBackend, EMULATOR_ACCOUNT, EMULATOR_ACCOUNT_KEY};
use unified_tables::backend::memory::MemoryBackend;
use unified_tables::backend::Backend as _;
use unified_tables::telemetry::{OPERATION_REQUEST_CHARGE, OPERATION_SPAN, REQUEST_CHARGE, REQUEST_SPAN};
use unified_tables::{QueryOptions, Tables};
use unified_tables_tests::model::Customer;
use unified_tables_tests::telemetry::{capture, Captured, SpanRecord};

/// Every value recorded into each histogram, by `name{labels}`.
#[derive(Default)]
struct Values(Mutex<BTreeMap<String, Vec<f64>>>);

struct Slot(Arc<Values>, String);

impl HistogramFn for Slot {
    fn record(&self, value: f64) {
        self.0 .0.lock().unwrap().entry(self.1.clone()).or_default().push(value);
    }
}

struct Recording(Arc<Values>);

impl Recorder for Recording {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, _: &Key, _: &Metadata<'_>) -> Counter {
        Counter::noop()
    }
    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }
    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        let mut labels: Vec<String> = key.labels().map(|l| format!("{}={}", l.key(), l.value())).collect();
        labels.sort();
        let line = format!("{}{{{}}}", key.name(), labels.join(","));
        Histogram::from_arc(Arc::new(Slot(self.0.clone(), line)))
    }
}

fn recorded() -> &'static Arc<Values> {
    static VALUES: OnceLock<Arc<Values>> = OnceLock::new();
    VALUES.get_or_init(|| {
        let values = Arc::new(Values::default());
        metrics::set_global_recorder(Recording(values.clone())).expect("the only recorder of this process");
        values
    })
}

/// The charges of operation `name` recorded in the histogram.
fn charges_of(name: &str) -> Vec<f64> {
    let line = format!("{OPERATION_REQUEST_CHARGE}{{db.operation.name={name}}}");
    recorded().0.lock().unwrap().get(&line).cloned().unwrap_or_default()
}

fn charge(span: &SpanRecord) -> Option<f64> {
    span.fields.get(REQUEST_CHARGE).map(|v| v.parse().expect("a number"))
}

/// The one operation span named `name`.
fn operation(seen: &Captured, name: &str) -> SpanRecord {
    let ops: Vec<SpanRecord> = seen
        .named(OPERATION_SPAN)
        .into_iter()
        .filter(|s| s.fields.get("db.operation.name").map(String::as_str) == Some(name))
        .collect();
    assert_eq!(ops.len(), 1, "one {name} span: {ops:#?}");
    ops.into_iter().next().unwrap()
}

/// The request spans inside `op`.
fn requests_in(seen: &Captured, op: &SpanRecord) -> Vec<SpanRecord> {
    seen.named(REQUEST_SPAN)
        .into_iter()
        .filter(|r| seen.within(r.id, op.id))
        .collect()
}

/// The model's charge of a request span of the in-memory Cosmos profile.
fn modelled(request: &SpanRecord, rows: usize) -> f64 {
    match request.fields.get("request").map(String::as_str) {
        Some("get") => 1.0,
        Some("insert" | "update" | "upsert" | "delete") => 5.0,
        Some("transaction") => 5.0 * request.fields["db.operation.batch.size"].parse::<f64>().unwrap(),
        Some("query") => 1.0 + rows as f64 / 10.0,
        Some("create_table" | "delete_table") => 1.0,
        other => panic!("an unexpected request {other:?}"),
    }
}

/// Each request span of `op` carries its modelled charge, and the
/// operation span their sum; returns that sum.
fn check_modelled(seen: &Captured, name: &str, rows: usize) -> f64 {
    let op = operation(seen, name);
    let requests = requests_in(seen, &op);
    assert!(!requests.is_empty(), "{name}: no request");
    let mut sum = 0.0;
    for request in &requests {
        let expected = modelled(request, rows);
        assert_eq!(charge(request), Some(expected), "{name}: {request:#?}");
        sum += expected;
    }
    assert_eq!(charge(&op), Some(sum), "{name}: {op:#?}");
    assert_eq!(
        op.fields.get("db.system.name").map(String::as_str),
        Some(unified_tables::telemetry::DB_SYSTEM_COSMOS),
        "{name}: the Cosmos DB system"
    );
    sum
}

async fn memory_cosmos_charges_a_modelled_charge() {
    let backend = MemoryBackend::cosmos(11);
    backend.create_table("Charges").await.unwrap();
    let tables = Tables::with_backend(backend);
    let store = tables.store_in::<Customer>("Charges");

    let (seen, guard) = capture();
    let mut customer = Customer::new("eu", "ada@example.com", "Ada");
    store.upsert(&mut customer).await.unwrap();
    let read = store.get(("eu", "ada@example.com")).await.unwrap();
    let all = store.query(QueryOptions::partition("eu")).await.unwrap();
    drop(guard);
    assert!(read.is_some());
    assert_eq!(all.len(), 1);

    let upserted = check_modelled(&seen, "upsert", 0);
    let got = check_modelled(&seen, "get", 0);
    let queried = check_modelled(&seen, "query", 1);
    assert!(
        upserted >= 5.0 && got >= 1.0 && queried >= 1.1,
        "{upserted} {got} {queried}"
    );
    // One histogram value per operation: its sum.
    assert!(charges_of("upsert").contains(&upserted), "{:?}", charges_of("upsert"));
    assert!(charges_of("get").contains(&got), "{:?}", charges_of("get"));
    assert!(charges_of("query").contains(&queried), "{:?}", charges_of("query"));
}

async fn table_storage_charges_nothing() {
    let backend = MemoryBackend::new();
    backend.create_table("Free").await.unwrap();
    let store = Tables::with_backend(backend).store_in::<Customer>("Free");
    let (seen, guard) = capture();
    store
        .upsert(&mut Customer::new("eu", "bob@example.com", "Bob"))
        .await
        .unwrap();
    drop(guard);
    let op = operation(&seen, "upsert");
    assert_eq!(charge(&op), None, "{op:#?}");
    assert_eq!(
        op.fields.get("db.system.name").map(String::as_str),
        Some(unified_tables::telemetry::DB_SYSTEM)
    );
    let requests = requests_in(&seen, &op);
    assert!(!requests.is_empty());
    for request in requests {
        assert_eq!(charge(&request), None, "{request:#?}");
    }
}

/// A loopback server answering each connection with the next of `answers`
/// (status line, extra header lines, body), the last one repeating.
fn loopback(answers: Vec<(&'static str, &'static str, &'static str)>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}/{EMULATOR_ACCOUNT}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().take(20).enumerate() {
            let Ok(mut stream) = stream else { return };
            let (status, extra, body) = answers[n.min(answers.len() - 1)];
            let mut seen = Vec::new();
            let mut buf = [0u8; 4096];
            while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(k) => seen.extend_from_slice(&buf[..k]),
                }
            }
            let head = format!(
                "HTTP/1.1 {status}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
        }
    });
    endpoint
}

async fn azure_answers_charges_add_up_over_attempts() {
    const BUSY: &str =
        r#"{"odata.error":{"code":"ServerBusy","message":{"lang":"en-US","value":"The server is busy."}}}"#;
    const MISSING: &str = r#"{"odata.error":{"code":"ResourceNotFound","message":{"lang":"en-US","value":"The specified resource does not exist."}}}"#;
    // The store creates its table first, then reads the entity: busy, then missing.
    let endpoint = loopback(vec![
        ("204 No Content", "x-ms-request-charge: 0.5\r\n", ""),
        (
            "503 Server Busy",
            "x-ms-error-code: ServerBusy\r\nx-ms-request-charge: 2.5\r\n",
            BUSY,
        ),
        (
            "404 Not Found",
            "x-ms-error-code: ResourceNotFound\r\nx-ms-request-charge: 1.25\r\n",
            MISSING,
        ),
    ]);
    let backend = AzureBackend::from_account(&endpoint, EMULATOR_ACCOUNT, EMULATOR_ACCOUNT_KEY).unwrap();
    let store = Tables::with_backend(backend).store_in::<Customer>("Charged");
    let (seen, guard) = capture();
    let read = store.get(("eu", "nobody@example.com")).await;
    drop(guard);
    let read = read.unwrap_or_else(|e| panic!("{e}: {:#?}", seen.spans()));
    assert!(read.is_none(), "a miss");
    let op = operation(&seen, "get");
    let requests = requests_in(&seen, &op);
    let charged = |name: &str| {
        let request = requests
            .iter()
            .find(|r| r.fields.get("request").map(String::as_str) == Some(name))
            .unwrap_or_else(|| panic!("a {name} request: {requests:#?}"));
        charge(request)
    };
    assert_eq!(requests.len(), 2, "{requests:#?}");
    assert_eq!(charged("create_table"), Some(0.5));
    assert_eq!(charged("get"), Some(3.75), "both attempts");
    assert_eq!(charge(&op), Some(4.25), "{op:#?}");
    assert!(charges_of("get").contains(&4.25), "{:?}", charges_of("get"));
}

#[tokio::test]
async fn cosmos_request_charges_reach_the_spans_and_the_metrics() {
    recorded();
    memory_cosmos_charges_a_modelled_charge().await;
    table_storage_charges_nothing().await;
    azure_answers_charges_add_up_over_attempts().await;
}
