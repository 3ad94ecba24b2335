//! What the transport tells a `tracing` subscriber: one span per attempt
//! with its fields, an event per retry with its backoff, the answer at
//! TRACE, and nothing of the credential.

use std::fmt::{self, Write as _};
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt as _};
use tracing_subscriber::Layer;

use crate::backend::azure::tests::scripted_server;
use crate::backend::azure::{AzureConnection, EMULATOR_ACCOUNT_KEY};
use crate::backend::Backend as _;

/// Every span (when made and each record) and event, one line each.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<String>>>);

struct Fields(String);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let _ = write!(self.0, " {}={value:?}", field.name());
    }
}

impl<S: Subscriber> Layer<S> for Lines {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _: Context<'_, S>) {
        let meta = attrs.metadata();
        let mut fields = Fields(format!(
            "span#{} {} {} {}:",
            id.into_u64(),
            meta.level(),
            meta.target(),
            meta.name()
        ));
        attrs.record(&mut fields);
        self.0.lock().unwrap().push(fields.0);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        let mut fields = Fields(format!("record#{}:", id.into_u64()));
        values.record(&mut fields);
        self.0.lock().unwrap().push(fields.0);
    }

    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let meta = event.metadata();
        let mut fields = Fields(format!("event {} {}:", meta.level(), meta.target()));
        event.record(&mut fields);
        self.0.lock().unwrap().push(fields.0);
    }
}

const SAS: &str = "sv=2022-11-02&ss=t&srt=o&sp=r&se=2031-01-01T00%3A00%3A00Z&sig=c2VjcmV0LXNpZ25hdHVyZQ%3D%3D";

#[tokio::test]
async fn each_attempt_is_a_span_and_each_retry_an_event_with_its_backoff() {
    let busy = r#"{"odata.error":{"code":"ServerBusy","message":{"lang":"en-US","value":"The server is busy."}}}"#;
    let entity = r#"{"odata.metadata":"m","PartitionKey":"p","RowKey":"r","Timestamp":"2024-01-01T00:00:00Z"}"#;
    let (endpoint, _) = scripted_server(vec![
        (503, "ServerBusy", busy),
        (503, "ServerBusy", busy),
        (200, "", entity),
    ]);
    let lines = Lines::default();
    let _default = tracing::subscriber::set_default(tracing_subscriber::registry().with(lines.clone()));
    // Callsites first seen by a parallel test without a subscriber cached "never"; ask again.
    tracing::callsite::rebuild_interest_cache();
    let backend = AzureConnection::parse(&format!("SharedAccessSignature={SAS};TableEndpoint={endpoint}"))
        .unwrap()
        .table_backend()
        .unwrap();
    assert!(backend.get("Orders", "p", "r").await.unwrap().is_some());

    let lines = lines.0.lock().unwrap().clone();
    let text = lines.join("\n");
    let spans: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains(" DEBUG unified_tables::http http.request:"))
        .collect();
    assert_eq!(spans.len(), 3, "one span per attempt:\n{text}");
    let port = endpoint.split(':').nth(2).unwrap().split('/').next().unwrap();
    for (resend, span) in spans.iter().enumerate() {
        for field in [
            "http.request.method=GET".to_owned(),
            "resource=\"entity\"".to_owned(),
            "server.address=127.0.0.1".to_owned(),
            format!("server.port={port}"),
            format!("url.template={endpoint}/Orders(…)"),
            format!("http.request.resend_count={resend}"),
        ] {
            assert!(span.contains(&field), "{field} in {span}");
        }
    }
    let statuses: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("http.response.status_code="))
        .collect();
    assert_eq!(statuses.len(), 3, "{text}");
    assert!(statuses[0].contains("=503") && statuses[2].contains("=200"), "{text}");
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.starts_with("record#") && l.contains("error.type=\"ServerBusy\""))
            .count(),
        2,
        "{text}"
    );
    let retries: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("event DEBUG unified_tables::http:") && l.contains("message=retrying"))
        .collect();
    assert_eq!(retries.len(), 2, "{text}");
    assert!(
        retries
            .iter()
            .all(|l| l.contains("backoff_ms=") && l.contains("ServerBusy")),
        "{text}"
    );
    let answers = lines
        .iter()
        .filter(|l| l.starts_with("event TRACE unified_tables::http:") && l.contains("message=answered"))
        .count();
    assert_eq!(answers, 3, "{text}");
    assert!(
        !text.contains("sig=") && !text.contains("c2VjcmV0"),
        "no SAS parameter:\n{text}"
    );
}

#[tokio::test]
async fn a_key_connection_logs_no_signature_and_a_refused_connection_is_named() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let lines = Lines::default();
    let _default = tracing::subscriber::set_default(tracing_subscriber::registry().with(lines.clone()));
    // Callsites first seen by a parallel test without a subscriber cached "never"; ask again.
    tracing::callsite::rebuild_interest_cache();
    let connection = AzureConnection::parse(&format!(
        "AccountName=devstoreaccount1;AccountKey={EMULATOR_ACCOUNT_KEY};TableEndpoint=http://127.0.0.1:{port}/devstoreaccount1"
    ))
    .unwrap()
    .with_retry(crate::RetryPolicy::builder().attempts(2).build().unwrap());
    let err = connection
        .table_backend()
        .unwrap()
        .create_table("Orders")
        .await
        .unwrap_err();
    assert_eq!(err.kind(), crate::ErrorKind::Unavailable, "{err:?}");
    let text = lines.0.lock().unwrap().join("\n");
    assert!(
        text.contains("resource=\"table\"") && text.contains("http.request.method=POST"),
        "{text}"
    );
    assert_eq!(text.matches("error.type=\"connect\"").count(), 2, "{text}");
    assert!(
        !text.contains(EMULATOR_ACCOUNT_KEY) && !text.to_lowercase().contains("sharedkey"),
        "{text}"
    );
}
