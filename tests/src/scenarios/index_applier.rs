//! The applier of global indexes as its users meet it: the operator's job
//! goes on past an intent that fails and names it, `settle_indexes`
//! returns while other tasks keep writing, and a failing applier's events
//! never carry an indexed value.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use unified_tables::backend::faulty::{FaultTarget, FaultTiming};
use unified_tables::backend::{Backend, Page, PageAnswer, PageToken, QueryRequest, WriteOp, WriteOutcome};
use unified_tables::index::rows::intent_row;
use unified_tables::{Error, ErrorKind, Result, Row, TableEntity, Tables};

use crate::scenarios::exactly_once::faulty_tables;
use crate::telemetry::capture;
use crate::Env;

/// An address book entry: a global index on the address.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct Contact {
    #[table(partition_key)]
    pub book: String,
    #[table(row_key)]
    pub id: String,
    #[index(global)]
    pub address: String,
}

impl Contact {
    pub fn new(book: &str, id: &str, address: &str) -> Contact {
        Contact {
            book: book.into(),
            id: id.into(),
            address: address.into(),
        }
    }
}

/// An address that names a person: it must never reach an event or a report.
const PERSONAL: &str = "jane.roe.personal@example.com";

/// Writes `contact` and an intent for it as a crashed writer leaves them:
/// the entity and its intent, no index row.
async fn crashed_write(env: &Env, contact: &Contact) {
    env.put_raw(contact.to_row(&Default::default()).unwrap()).await;
    env.put_raw(intent_row(&contact.book, &contact.id, "crashed", &[]).expect("an intent"))
        .await;
}

fn books(found: &[Contact]) -> Vec<String> {
    found.iter().map(|c| c.book.clone()).collect()
}

/// A refusal by the service that echoes the key it refused, as the service's messages do.
fn refused() -> Error {
    Error::service(
        400,
        "InvalidInput",
        format!("One of the request inputs is not valid: PartitionKey '~ix|address|{PERSONAL}'"),
    )
}

pub async fn index_intents_job_goes_on_past_a_failing_intent_and_names_it(env: &Env) {
    let store = env.tables.store_in::<Contact>(&env.table);
    store.ensure_created().await.unwrap();
    // A value too long for its index's key, written past the store's check.
    let long = format!("{PERSONAL}{}", "x".repeat(1_100));
    for contact in [
        Contact::new("p1", "a", "a@x.com"),
        Contact::new("p2", "b", &long),
        Contact::new("p3", "c", "a@x.com"),
    ] {
        crashed_write(env, &contact).await;
    }
    let report = store.apply_index_intents(None).await.unwrap();
    assert_eq!((report.found, report.applied, report.left), (3, 2, 0), "{report:?}");
    let [failed] = report.failed.as_slice() else {
        panic!("one intent named: {report:?}")
    };
    assert_eq!((failed.partition_key.as_str(), failed.row_key.as_str()), ("p2", "b"));
    assert!(failed.intent.starts_with("~ix|"), "{failed:?}");
    assert_eq!(failed.index.as_deref(), Some("address"), "{failed:?}");
    assert_eq!(failed.kind, ErrorKind::Invalid, "{failed:?}");
    assert!(
        failed.reason.contains("address"),
        "the index and the column: {failed:?}"
    );
    assert!(!failed.reason.contains(PERSONAL), "{failed:?}");
    assert_eq!(
        books(&Contact::find_by_address(&store, "a@x.com").await.unwrap()),
        ["p1", "p3"]
    );

    // The service refuses one intent's row: the job still applies the others.
    let (faulty, tables) = faulty_tables(env);
    let faulted = tables.store_in::<Contact>(&env.table);
    for contact in [
        Contact::new("q1", "d", "b@x.com"),
        Contact::new("q2", "e", "b@x.com"),
        Contact::new("q3", "f", "b@x.com"),
    ] {
        crashed_write(env, &contact).await;
    }
    // The first write of the run is q1's index row (p2's intent fails before sending).
    faulty.fail_next(FaultTarget::Write, FaultTiming::Before, refused);
    let report = faulted.apply_index_intents(None).await.unwrap();
    assert_eq!((report.found, report.applied), (4, 2), "{report:?}");
    let named: Vec<(&str, Option<&str>, ErrorKind)> = report
        .failed
        .iter()
        .map(|f| (f.partition_key.as_str(), f.index.as_deref(), f.kind))
        .collect();
    assert_eq!(
        named,
        [
            ("p2", Some("address"), ErrorKind::Invalid),
            ("q1", Some("address"), ErrorKind::Invalid)
        ],
        "{report:?}"
    );
    assert!(report.failed[1].reason.contains("400 InvalidInput"), "{report:?}");
    assert!(report.failed.iter().all(|f| !f.reason.contains(PERSONAL)), "{report:?}");
    assert_eq!(
        books(&Contact::find_by_address(&store, "b@x.com").await.unwrap()),
        ["q2", "q3"]
    );
    // The next run applies the intent the refusal left.
    let again = store.apply_index_intents(None).await.unwrap();
    assert_eq!((again.found, again.applied, again.failed.len()), (2, 1, 1), "{again:?}");
    assert_eq!(Contact::find_by_address(&store, "b@x.com").await.unwrap().len(), 3);
}

/// Holds every point read of a row whose RowKey starts with one of the
/// held prefixes until that prefix is released: the applier of such an
/// entity's write waits there.
#[derive(Debug, Clone)]
struct HoldReads<B> {
    inner: B,
    held: Arc<Mutex<Vec<&'static str>>>,
    released: Arc<tokio::sync::Notify>,
}

impl<B> HoldReads<B> {
    fn new(inner: B, held: &[&'static str]) -> Self {
        HoldReads {
            inner,
            held: Arc::new(Mutex::new(held.to_vec())),
            released: Arc::new(tokio::sync::Notify::new()),
        }
    }

    fn holds(&self, row_key: &str) -> bool {
        self.held.lock().unwrap().iter().any(|p| row_key.starts_with(p))
    }

    async fn pass(&self, row_key: &str) {
        loop {
            let released = self.released.notified();
            if !self.holds(row_key) {
                return;
            }
            released.await;
        }
    }

    fn release(&self, prefix: &str) {
        self.held.lock().unwrap().retain(|p| *p != prefix);
        self.released.notify_waiters();
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<B: Backend> Backend for HoldReads<B> {
    async fn create_table(&self, table: &str) -> Result<()> {
        self.inner.create_table(table).await
    }

    async fn delete_table(&self, table: &str) -> Result<()> {
        self.inner.delete_table(table).await
    }

    async fn get(&self, table: &str, partition_key: &str, row_key: &str) -> Result<Option<Row>> {
        self.pass(row_key).await;
        self.inner.get(table, partition_key, row_key).await
    }

    async fn execute(&self, table: &str, op: WriteOp) -> Result<WriteOutcome> {
        self.inner.execute(table, op).await
    }

    async fn transaction(&self, table: &str, ops: Vec<WriteOp>) -> Result<Vec<WriteOutcome>> {
        self.inner.transaction(table, ops).await
    }

    async fn query(&self, table: &str, request: &QueryRequest, token: Option<&PageToken>) -> Result<Page> {
        self.inner.query(table, request, token).await
    }

    async fn query_body(&self, table: &str, request: &QueryRequest, token: Option<&PageToken>) -> Result<PageAnswer> {
        self.inner.query_body(table, request, token).await
    }
    fn profile(&self) -> unified_tables::service::ServiceProfile {
        self.inner.profile()
    }
}

pub async fn settle_indexes_returns_while_other_tasks_keep_writing(env: &Env) {
    let hold = HoldReads::new(env.backend().clone(), &["before", "during"]);
    let tables = Tables::with_backend(hold.clone()).without_cache();
    let store = tables.store_in::<Contact>(&env.table);
    store.ensure_created().await.unwrap();
    for i in 0..5 {
        store
            .create(&mut Contact::new("p", &format!("before{i}"), "c@x.com"))
            .await
            .unwrap();
    }
    // Settling starts while the appliers of those writes are held: what it waits for is fixed now.
    let settle = store.settle_indexes();
    tokio::pin!(settle);
    assert!(futures::poll!(settle.as_mut()).is_pending(), "five intents wait");
    // Another task writes for ever; the applier of each of its writes is held.
    let writer = {
        let store = store.clone();
        tokio::spawn(async move {
            for i in 0.. {
                let mut c = Contact::new("p", &format!("during{i:06}"), "d@x.com");
                store.create(&mut c).await.unwrap();
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    hold.release("before");
    let settled = tokio::time::timeout(Duration::from_secs(20), settle).await;
    writer.abort();
    let _ = writer.await;
    hold.release("during");
    assert!(
        settled.is_ok(),
        "settle_indexes waited for writes made after it was called"
    );
    assert_eq!(
        Contact::find_by_address(&store, "c@x.com").await.unwrap().len(),
        5,
        "every write made before the call is found"
    );
    store.settle_indexes().await;
}

pub async fn an_applier_that_fails_logs_the_index_and_keys_never_the_value(env: &Env) {
    let (faulty, tables) = faulty_tables(env);
    let store = tables.store_in::<Contact>(&env.table);
    store.ensure_created().await.unwrap();
    let (seen, guard) = capture();
    // Every index row write is refused, with the service's message echoing its key.
    faulty.fail_every(FaultTarget::Write, FaultTiming::Before, refused);
    store.create(&mut Contact::new("p1", "a", PERSONAL)).await.unwrap();
    store.settle_indexes().await;
    let leaks = |seen: &crate::telemetry::Captured| -> Vec<(String, String)> {
        seen.every_field()
            .into_iter()
            .filter(|(_, v)| v.contains(PERSONAL) || v.contains("jane.roe"))
            .collect()
    };
    let warned = |seen: &crate::telemetry::Captured| {
        seen.events()
            .iter()
            .filter(|e| e.level == tracing::Level::WARN && e.fields.get("index").is_some_and(|i| i == "address"))
            .count()
    };
    assert!(
        leaks(&seen).is_empty(),
        "the indexed value in events: {:#?}",
        leaks(&seen)
    );
    assert_eq!(
        warned(&seen),
        1,
        "the background applier warns, naming the index: {:#?}",
        seen.events()
    );
    let report = store.apply_index_intents(None).await.unwrap();
    faulty.clear();
    drop(guard);
    assert_eq!(report.failed.len(), 1, "{report:?}");
    assert!(
        leaks(&seen).is_empty(),
        "the indexed value in events: {:#?}",
        leaks(&seen)
    );
    assert_eq!(
        warned(&seen),
        2,
        "the job warns too, naming the index: {:#?}",
        seen.events()
    );
    // Once the service takes the row, the job applies the intent.
    let again = store.apply_index_intents(None).await.unwrap();
    assert_eq!((again.applied, again.failed.len()), (1, 0), "{again:?}");
    assert_eq!(Contact::find_by_address(&store, PERSONAL).await.unwrap().len(), 1);
}
