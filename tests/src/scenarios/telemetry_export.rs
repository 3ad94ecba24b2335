//! The operation spans as an OpenTelemetry collector receives them: through
//! `tracing-opentelemetry` into `opentelemetry_sdk`'s in-memory exporter,
//! with the stable database attributes, each request a child of its
//! operation, and `error.type` and an error status only on a failure.

use opentelemetry::trace::{SpanKind, Status, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing_subscriber::layer::SubscriberExt as _;
use unified_tables::telemetry::REQUEST_SPAN;

use crate::model::Customer;
use crate::Env;

const PK: &str = "pk-5e1d0a";
const RK: &str = "rk-77c2b1";

/// The value of the attribute `key` of `span`, as text.
fn attribute(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.to_string())
}

/// Every span of `spans` under `root` (its children, theirs, …).
fn descendants<'a>(spans: &'a [SpanData], root: &SpanData) -> Vec<&'a SpanData> {
    let mut found: Vec<&SpanData> = Vec::new();
    let mut parents = vec![root.span_context.span_id()];
    while let Some(parent) = parents.pop() {
        for span in spans.iter().filter(|s| s.parent_span_id == parent) {
            assert_eq!(
                span.span_context.trace_id(),
                root.span_context.trace_id(),
                "a child is in its operation's trace: {span:#?}"
            );
            parents.push(span.span_context.span_id());
            found.push(span);
        }
    }
    found
}

pub async fn operations_export_to_opentelemetry_with_the_database_attributes(env: &Env) {
    let store = env.tables.store_in::<Customer>(&env.table);
    store.ensure_created().await.unwrap();

    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("conformance"));
    crate::telemetry::undecided_globally();
    let guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));
    tracing::callsite::rebuild_interest_cache();
    store.create(&mut Customer::new(PK, RK, "Ada")).await.unwrap();
    let again = store.create(&mut Customer::new(PK, RK, "Ada")).await;
    let missing = store.get((PK, "missing")).await.unwrap();
    drop(guard);
    provider.force_flush().unwrap();
    assert!(again.is_err() && missing.is_none());

    let spans = exporter.get_finished_spans().unwrap();
    let name = |verb: &str| format!("{verb} {}", env.table);
    let ops: Vec<&SpanData> = spans
        .iter()
        .filter(|s| s.parent_span_id == opentelemetry::trace::SpanId::INVALID)
        .collect();
    let names: Vec<&str> = ops.iter().map(|s| s.name.as_ref()).collect();
    assert_eq!(names, [name("create"), name("create"), name("get")], "{ops:#?}");
    for (op, verb) in ops.iter().zip(["create", "create", "get"]) {
        assert_eq!(op.span_kind, SpanKind::Client, "{op:#?}");
        assert_eq!(attribute(op, "db.system.name").as_deref(), Some(env.db_system()));
        assert_eq!(attribute(op, "db.collection.name"), Some(env.table.clone()));
        assert_eq!(attribute(op, "db.operation.name").as_deref(), Some(verb));
        let requests: Vec<&SpanData> = descendants(&spans, op)
            .into_iter()
            .filter(|s| s.name == REQUEST_SPAN)
            .collect();
        assert_eq!(requests.len(), 1, "one request, a child of {verb}: {requests:#?}");
        assert_eq!(requests[0].parent_span_id, op.span_context.span_id());
    }
    assert_eq!(
        spans.len(),
        ops.iter().map(|op| 1 + descendants(&spans, op).len()).sum::<usize>(),
        "every span is an operation or inside one"
    );

    // The refused create: its kind as `error.type`, an error status, the status code.
    let refused = ops[1];
    assert_eq!(attribute(refused, "error.type").as_deref(), Some("already_exists"));
    assert_eq!(attribute(refused, "db.response.status_code").as_deref(), Some("409"));
    assert!(matches!(refused.status, Status::Error { .. }), "{refused:#?}");
    // The others, the miss among them, are no error anywhere.
    for op in [ops[0], ops[2]] {
        for span in std::iter::once(op).chain(descendants(&spans, op)) {
            assert_eq!(attribute(span, "error.type"), None, "{span:#?}");
            assert!(!matches!(span.status, Status::Error { .. }), "{span:#?}");
        }
    }
}
