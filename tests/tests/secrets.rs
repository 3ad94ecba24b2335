//! No secret anywhere: with a subscriber that captures everything at TRACE
//! (every `tracing` span, field and event of every crate, and every `log`
//! record of every dependency), table and blob operations run through a
//! SAS, an account key and a bearer token (the HTTPS Azurite): large values
//! on continuation rows and in blobs, a file, a transaction, a query, leases,
//! listings, error answers and an unreachable endpoint. No captured line,
//! span field or error text (Display and Debug, with every source) holds
//! the SAS signature (raw or percent-encoded), the account key, a Shared Key
//! signature or a bearer token.
//!
//! The subscriber is the process's own, so this binary holds one test.

use std::fmt::{self, Write as _};
use std::sync::{Arc, Mutex};

use futures::TryStreamExt as _;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt as _};
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::Layer;
use unified_tables::backend::azure::{AzureConnection, ConnectionString, EMULATOR_ACCOUNT_KEY};
use unified_tables::backend::blob::{BlobBackend, BlobCondition, LeaseAction, LeaseDuration, PutOptions};
use unified_tables::{BlobContent, QueryOptions, RetryPolicy, Tables};
use unified_tables_tests::blob_scenarios::unique_container;
use unified_tables_tests::connect::{oauth_connection, sas_connection_string, skip, test_jwt, TestTokenCredential};
use unified_tables_tests::model::{Customer, Document};
use unified_tables_tests::{noise, unique_table, CONNECTION_VAR};

/// Every line the subscriber saw: events (with their target and level) and
/// spans (their fields when made and each later record).
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<String>>>);

impl Captured {
    fn push(&self, line: String) {
        self.0.lock().unwrap().push(line);
    }

    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// Writes every field, whatever its type, as its `Debug` and its text.
struct Fields(String);

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        let _ = write!(self.0, " {}={value}", field.name());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let _ = write!(self.0, " {}={value:?}", field.name());
    }
}

impl<S: Subscriber> Layer<S> for Captured {
    fn on_new_span(&self, attrs: &Attributes<'_>, _: &Id, _: Context<'_, S>) {
        let meta = attrs.metadata();
        let mut fields = Fields(format!("span {} {} {}:", meta.level(), meta.target(), meta.name()));
        attrs.record(&mut fields);
        self.push(fields.0);
    }

    fn on_record(&self, _: &Id, values: &Record<'_>, _: Context<'_, S>) {
        let mut fields = Fields("record:".to_owned());
        values.record(&mut fields);
        self.push(fields.0);
    }

    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let meta = event.metadata();
        let mut fields = Fields(format!("event {} {}:", meta.level(), meta.target()));
        event.record(&mut fields);
        self.push(fields.0);
    }
}

/// The secrets of the three credentials, as any text could hold them.
struct Secrets {
    /// (what, text) pairs that must appear nowhere.
    texts: Vec<(&'static str, String)>,
}

impl Secrets {
    fn new(sas: &str) -> Secrets {
        let sig = sas
            .split('&')
            .find_map(|pair| pair.strip_prefix("sig="))
            .expect("the SAS has a signature")
            .to_owned();
        let raw_sig = sig.replace("%2B", "+").replace("%2F", "/").replace("%3D", "=");
        // Every token of the test credential starts with this header and ends with this signature.
        let jwt = test_jwt(0, 0);
        let mut parts = jwt.split('.');
        let jwt_header = parts.next().unwrap().to_owned();
        let jwt_signature = parts.nth(1).unwrap().to_owned();
        let mut texts = vec![
            ("the SAS signature (percent-encoded)", sig.clone()),
            ("the SAS signature", raw_sig.clone()),
            ("the account key", EMULATOR_ACCOUNT_KEY.to_owned()),
            ("a bearer token", jwt_header),
            ("a bearer token's signature", jwt_signature),
        ];
        // The signature without its padding, as some encoders write it.
        texts.push(("the SAS signature (unpadded)", raw_sig.trim_end_matches('=').to_owned()));
        Secrets { texts }
    }

    /// What secret `text` holds, if any.
    fn found_in(&self, text: &str) -> Option<String> {
        for (what, secret) in &self.texts {
            if text.contains(secret.as_str()) {
                return Some(what.to_string());
            }
        }
        // A Shared Key signature: `SharedKey account:<base64>`.
        let lower = text.to_ascii_lowercase();
        for (at, _) in lower.match_indices("sharedkey ") {
            let rest = &text[at + "sharedkey ".len()..];
            if let Some((_, signature)) = rest.split_once(':') {
                let signature: String = signature
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '='))
                    .collect();
                if signature.len() >= 16 {
                    return Some("a Shared Key signature".to_owned());
                }
            }
        }
        None
    }
}

/// An error's Display and Debug, with every source's.
fn error_texts(error: &unified_tables::Error) -> Vec<String> {
    let mut texts = vec![error.to_string(), format!("{error:?}")];
    let mut source = std::error::Error::source(error);
    while let Some(e) = source {
        texts.push(e.to_string());
        texts.push(format!("{e:?}"));
        source = e.source();
    }
    texts
}

/// A port nothing listens on.
fn refused_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Table and blob operations through `connection`; returns the text of every error they met.
async fn exercise(connection: &AzureConnection, hint: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let tables = Tables::connect_with(connection.clone()).expect("a handle");
    let table = unique_table(hint);
    let store = tables.store_in::<Document>(&table);
    store.ensure_created().await.unwrap();

    // Large values: on continuation rows, in a blob, and a file.
    let mut rows = Document::new("p", "rows");
    rows.body = noise(1_200_000, 1);
    store.create(&mut rows).await.unwrap();
    let mut blob = Document::new("p", "blob");
    blob.body = noise(3_200_000, 2);
    blob.attachment = Some(BlobContent::from_bytes(noise(300_000, 3).into_bytes(), "text/plain"));
    store.create(&mut blob).await.unwrap();
    assert!(store.get(("p", "rows")).await.unwrap().unwrap().same(&rows));
    let got = store.get(("p", "blob")).await.unwrap().unwrap();
    assert!(got.same(&blob));
    let file = got.attachment.expect("a file");
    let chunks: Vec<Vec<u8>> = file.open().try_collect().await.unwrap();
    assert_eq!(chunks.concat().len(), 300_000);

    // A transaction and a query.
    let batch: Vec<Document> = (0..5).map(|i| Document::new("q", &format!("d{i}"))).collect();
    store.create_batch(&batch).await.unwrap();
    assert_eq!(store.query(QueryOptions::partition("q")).await.unwrap().len(), 5);

    // Error answers: an entity that exists, a table that does not.
    let again = store.create(&mut Document::new("q", "d0")).await.unwrap_err();
    errors.extend(error_texts(&again));
    let err = tables
        .backend()
        .get(&unique_table("missing"), "p", "r")
        .await
        .unwrap_err();
    errors.extend(error_texts(&err));
    let err = tables
        .backend()
        .delete_table(&unique_table("missing"))
        .await
        .unwrap_err();
    errors.extend(error_texts(&err));

    // Blobs: writes, reads, a listing, leases, and a lease conflict.
    let blobs = connection.blob_backend().unwrap();
    let container = unique_container(hint);
    blobs.create_container(&container).await.unwrap();
    blobs
        .put(&container, "a/b", b"bytes".to_vec(), PutOptions::default())
        .await
        .unwrap();
    assert_eq!(blobs.get(&container, "a/b", None).await.unwrap().unwrap().1, b"bytes");
    assert_eq!(
        blobs.list(&container, "a/", None, None, 10).await.unwrap().items.len(),
        1
    );
    blobs.touch(&container, "a/b").await.unwrap();
    let acquire = LeaseAction::Acquire {
        duration: LeaseDuration::Seconds(15),
        proposed: None,
    };
    let lease = blobs.lease(&container, "a/b", acquire).await.unwrap().lease.unwrap();
    blobs
        .lease(&container, "a/b", LeaseAction::Renew { lease })
        .await
        .unwrap();
    let conflict = blobs.lease(&container, "a/b", acquire).await.unwrap_err();
    errors.extend(error_texts(&conflict));
    blobs
        .lease(&container, "a/b", LeaseAction::Release { lease })
        .await
        .unwrap();
    assert!(blobs.delete(&container, "a/b", BlobCondition::None).await.unwrap());
    let gone = blobs.get(&container, "nothing", Some(0..1)).await.unwrap();
    assert!(gone.is_none());
    tables.backend().delete_table(&table).await.unwrap();
    errors
}

/// The errors of a table read and a blob read through `connection` at an
/// endpoint where nothing listens.
async fn unreachable(connection: AzureConnection) -> Vec<String> {
    let connection = connection.with_retry(RetryPolicy::builder().attempts(2).build().unwrap());
    let mut errors = Vec::new();
    let tables = Tables::connect_with(connection.clone()).expect("a handle");
    let err = tables.store_in::<Customer>("Orders").get(("p", "r")).await.unwrap_err();
    errors.extend(error_texts(&err));
    let err = connection
        .blob_backend()
        .unwrap()
        .get("docs", "b", None)
        .await
        .unwrap_err();
    errors.extend(error_texts(&err));
    errors
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_reaches_a_log_line_a_span_or_an_error() {
    let captured = Captured::default();
    tracing_subscriber::registry()
        .with(captured.clone())
        .try_init()
        .expect("the only subscriber of this binary");
    let Some(key) = std::env::var(CONNECTION_VAR)
        .ok()
        .or_else(|| skip("secrets", &format!("{CONNECTION_VAR} is not set")))
    else {
        return;
    };
    let (Some(sas), Some(bearer)) = (
        sas_connection_string("racwdlup"),
        oauth_connection(TestTokenCredential::valid()),
    ) else {
        return;
    };
    let sas_query = secrets_query(&ConnectionString::parse(&sas).unwrap());
    let secrets = Secrets::new(&sas_query);

    let key = AzureConnection::parse(&key).unwrap();
    let sas = AzureConnection::parse(&sas).unwrap();
    let mut errors = Vec::new();
    errors.extend(exercise(&key, "secretskey").await);
    errors.extend(exercise(&sas, "secretssas").await);
    errors.extend(exercise(&bearer, "secretsbearer").await);

    let port = refused_port();
    let endpoints = |scheme: &str| {
        format!("TableEndpoint={scheme}://127.0.0.1:{port}/devstoreaccount1;BlobEndpoint={scheme}://127.0.0.1:{port}/devstoreaccount1")
    };
    let key_text = format!(
        "AccountName=devstoreaccount1;AccountKey={EMULATOR_ACCOUNT_KEY};{}",
        endpoints("http")
    );
    errors.extend(unreachable(AzureConnection::parse(&key_text).unwrap()).await);
    let sas_text = format!("SharedAccessSignature={sas_query};{}", endpoints("http"));
    errors.extend(unreachable(AzureConnection::parse(&sas_text).unwrap()).await);
    let token = AzureConnection::with_token_credential(&endpoints("https"), TestTokenCredential::valid()).unwrap();
    errors.extend(unreachable(token).await);

    let lines = captured.lines();
    let mut leaks: Vec<String> = Vec::new();
    for line in &lines {
        if let Some(what) = secrets.found_in(line) {
            leaks.push(format!("{what} in a log line: {}", &line[..line.len().min(600)]));
        }
    }
    for text in &errors {
        if let Some(what) = secrets.found_in(text) {
            leaks.push(format!("{what} in an error: {text}"));
        }
    }
    assert!(
        leaks.is_empty(),
        "{} leaks:\n{}",
        leaks.len(),
        leaks[..leaks.len().min(10)].join("\n")
    );

    // Not vacuous: the requests were seen, with their method, status and URL.
    let requests = lines
        .iter()
        .filter(|l| l.starts_with("span DEBUG unified_tables::http http.request:"))
        .count();
    assert!(requests > 50, "the transport's request spans were captured: {requests}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("url.template=") && l.contains("/devstoreaccount1/")),
        "request URLs were captured"
    );
    assert!(errors.len() >= 20, "the errors were read: {}", errors.len());
}

/// The SAS query of a parsed SAS connection string.
fn secrets_query(connection: &ConnectionString) -> String {
    match &connection.credentials {
        unified_tables::backend::azure::AccountCredentials::SharedAccessSignature(s) => s.clone(),
        other => panic!("a SAS connection string: {other:?}"),
    }
}
