//! What a subscriber sees: one span per public operation with the
//! OpenTelemetry database attributes, one span per request inside it (on
//! every backend; on Azure, the transport's attempt spans inside those),
//! events for what the store decided, and never a key or a value of a row.

use futures::TryStreamExt as _;
use unified_tables::backend::faulty::{FaultTarget, FaultTiming};
use unified_tables::telemetry::{
    BLOB_FETCHED, CACHE_HIT, CONTINUATION_ROWS, DB_SYSTEM_BLOBS, OPERATION_DONE, OPERATION_SPAN, REQUEST_SPAN,
    SETTLE_READ_BACK,
};
use unified_tables::{
    BlobContent, BuildIndexOptions, CachePolicy, ConvergeOptions, IndexCheckOptions, QueryOptions, ReadCache,
};

use super::exactly_once::{faulty_tables, lost};
use super::indexes::Member;
use crate::model::{Customer, Document};
use crate::telemetry::{capture, Captured, SpanRecord};
use crate::{noise, Env};

const PK: &str = "pk-7d3f9a";
const RK: &str = "rk-91ab4c";
const NAME: &str = "name-c0ffee";

/// The one operation span named `operation`, checked for its attributes.
fn operation(seen: &Captured, env: &Env, operation: &str) -> SpanRecord {
    let ops: Vec<SpanRecord> = seen
        .named(OPERATION_SPAN)
        .into_iter()
        .filter(|s| s.fields.get("db.operation.name").map(String::as_str) == Some(operation))
        .collect();
    assert_eq!(ops.len(), 1, "one {operation} span: {ops:#?}");
    let op = ops.into_iter().next().unwrap();
    let field = |name: &str| op.fields.get(name).cloned().unwrap_or_default();
    assert_eq!(field("otel.name"), format!("{operation} {}", env.table));
    assert_eq!(field("otel.kind"), "client");
    assert_eq!(field("db.system.name"), env.db_system());
    assert_eq!(field("db.collection.name"), env.table);
    op
}

/// No span field or event field holds a key or a value of the rows written.
fn no_row_content(seen: &Captured, contents: &[&str]) {
    let fields = seen.every_field();
    assert!(fields.len() > 5, "fields were captured: {}", fields.len());
    for (at, value) in fields {
        for content in contents {
            assert!(!value.contains(content), "{at} holds {content:?}: {value}");
        }
    }
}

pub async fn a_get_of_a_large_entity_shows_each_request_in_its_operation(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    let mut doc = Document::new(PK, RK);
    doc.title = NAME.into();
    doc.body = noise(3_500_000, 1); // over the 3 MiB threshold: a blob
    doc.local = noise(1_500_000, 2);
    store.create(&mut doc).await.unwrap();
    env.reset_counts();

    let (seen, guard) = capture();
    let read = store.get((PK, RK)).await.unwrap().expect("stored");
    drop(guard);
    assert_eq!(read.body, doc.body);

    let op = operation(&seen, env, "get");
    assert!(!op.fields.contains_key("error.type"), "{op:?}");
    let counts = env.counts();
    let made = counts.entity_requests() + counts.blob_requests();
    let requests: Vec<SpanRecord> = seen
        .named(REQUEST_SPAN)
        .into_iter()
        .filter(|r| seen.within(r.id, op.id))
        .collect();
    assert!(made >= 3, "a main row, continuation rows and a blob: {counts:?}");
    assert_eq!(
        requests.len() as u64,
        made,
        "one request span per request: {requests:#?}"
    );
    assert!(requests.iter().any(|r| r.fields["resource"] == "blob"), "{requests:#?}");
    assert!(
        requests.iter().any(|r| r.fields["resource"] == "entity"),
        "{requests:#?}"
    );
    if env.is_azure() {
        // Each request's attempts are the transport's spans inside it.
        let attempts = seen.named("http.request");
        for r in &requests {
            assert!(
                attempts.iter().any(|a| a.parent == Some(r.id)),
                "an attempt inside {r:?}"
            );
        }
        assert!(attempts.iter().all(|a| requests.iter().any(|r| a.parent == Some(r.id))));
    }
    let events = seen.events();
    let inside = |name: &str| {
        events
            .iter()
            .any(|e| e.name == name && e.span.is_some_and(|s| seen.within(s, op.id)))
    };
    assert!(inside(CONTINUATION_ROWS), "{events:#?}");
    assert!(inside(BLOB_FETCHED), "{events:#?}");
    no_row_content(&seen, &[PK, RK, NAME, &doc.body[..32], &doc.local[..32]]);
}

pub async fn a_write_settled_by_a_read_back_tells_its_verdict(env: &Env) {
    let (faulty, tables) = faulty_tables(env);
    let store = tables.store_in::<Customer>(&env.table);
    store.ensure_created().await.unwrap();
    faulty.fail_next(FaultTarget::Write, FaultTiming::After, lost);

    let (seen, guard) = capture();
    let mut c = Customer::new(PK, RK, NAME);
    store.create(&mut c).await.unwrap();
    drop(guard);

    let op = operation(&seen, env, "create");
    assert!(!op.fields.contains_key("error.type"), "settled as applied: {op:?}");
    let verdicts: Vec<String> = seen
        .events()
        .into_iter()
        .filter(|e| e.name == SETTLE_READ_BACK && e.span.is_some_and(|s| seen.within(s, op.id)))
        .map(|e| e.fields["verdict"].clone())
        .collect();
    assert_eq!(verdicts, ["applied"]);
    // The lost write and its read-back are two requests of the operation.
    let requests: Vec<String> = seen
        .named(REQUEST_SPAN)
        .into_iter()
        .filter(|r| seen.within(r.id, op.id))
        .map(|r| r.fields["request"].clone())
        .collect();
    assert_eq!(requests, ["insert", "get"]);
    no_row_content(&seen, &[PK, RK, NAME]);
}

pub async fn a_read_served_by_the_cache_tells_so(env: &Env) {
    let cached = env.cached(
        ReadCache::builder()
            .policy(CachePolicy::Sliding(std::time::Duration::from_secs(60)))
            .build()
            .unwrap(),
    );
    let store = cached.store_in::<Customer>(&env.table);
    let mut c = Customer::new(PK, RK, NAME);
    store.create(&mut c).await.unwrap();

    let (seen, guard) = capture();
    let hit = store.get((PK, RK)).await.unwrap().expect("cached");
    drop(guard);
    assert_eq!(hit.name, NAME);

    let op = operation(&seen, env, "get");
    let hits = seen
        .events()
        .into_iter()
        .filter(|e| e.name == CACHE_HIT && e.span.is_some_and(|s| seen.within(s, op.id)))
        .count();
    assert_eq!(hits, 1);
    assert!(
        seen.named(REQUEST_SPAN).is_empty(),
        "a read from the cache sends nothing"
    );
    no_row_content(&seen, &[PK, RK, NAME]);
}

pub async fn a_refused_write_is_an_error_type_on_its_operation(env: &Env) {
    let store = env.tables.store_in::<Customer>(&env.table);
    let mut c = Customer::new(PK, RK, NAME);
    store.create(&mut c).await.unwrap();
    let mut stale = c.clone();
    store.upsert(&mut c).await.unwrap();

    let (seen, guard) = capture();
    let again = store.create(&mut Customer::new(PK, RK, NAME)).await;
    let conflict = store.update(&mut stale).await;
    drop(guard);
    assert!(again.is_err() && conflict.is_err());

    let create = operation(&seen, env, "create");
    assert_eq!(create.fields["error.type"], "already_exists");
    assert_eq!(create.fields["db.response.status_code"], "409");
    let update = operation(&seen, env, "update");
    assert_eq!(update.fields["error.type"], "precondition_failed");
    assert_eq!(update.fields["db.response.status_code"], "412");
    // The request the service refused says so too.
    let refused = seen
        .named(REQUEST_SPAN)
        .into_iter()
        .filter(|r| seen.within(r.id, create.id))
        .filter(|r| r.fields.get("error.type").map(String::as_str) == Some("already_exists"))
        .count();
    assert_eq!(refused, 1);
    no_row_content(&seen, &[PK, RK, NAME]);
}

/// The requests captured inside `op`, and whether each is: every request
/// this thread saw during the capture must be inside its operation.
fn requests_inside(seen: &Captured, op: &SpanRecord) -> usize {
    let requests = seen.named(REQUEST_SPAN);
    assert!(
        requests.iter().all(|r| seen.within(r.id, op.id)),
        "every request inside the operation: {requests:#?}"
    );
    requests.len()
}

/// The `done` event of `op`, inside its span.
fn ended_once(seen: &Captured, op: &SpanRecord) {
    let done = seen
        .events()
        .into_iter()
        .filter(|e| e.name == OPERATION_DONE && e.span == Some(op.id))
        .count();
    assert_eq!(done, 1, "one done event in {op:?}");
}

pub async fn a_stream_and_an_index_lookup_are_one_operation_each(env: &Env) {
    let store = env.tables.store_in::<Customer>(&env.table);
    // Three pages: the second and third are fetched ahead, each by a task of its own.
    let customers: Vec<Customer> = (0..2_500)
        .map(|i| Customer::new(PK, &format!("{RK}-{i:05}"), NAME))
        .collect();
    store.upsert_batch(&customers).await.unwrap();

    let (seen, guard) = capture();
    let mut stream = store.stream(QueryOptions::partition(PK));
    let mut read = 0;
    while let Some(c) = stream.next().await {
        c.unwrap();
        read += 1;
    }
    drop(stream);
    drop(guard);
    assert_eq!(read, 2_500);
    let op = operation(&seen, env, "stream");
    assert!(!op.fields.contains_key("error.type"), "{op:?}");
    assert!(requests_inside(&seen, &op) >= 1, "the first page's query, at least");
    ended_once(&seen, &op);

    // An index lookup: the index rows' query and the entity's read, in one operation.
    let members = env.tables.store_in::<Member>(&env.table);
    let team = "team-telemetry";
    members
        .create(&mut Member::new(team, "m1", NAME, "Lviv"))
        .await
        .unwrap();
    let (seen, guard) = capture();
    let found = Member::find_by_city(&members, team, "Lviv").await.unwrap();
    let held = Member::get_by_email(&members, team, NAME).await.unwrap();
    drop(guard);
    assert_eq!((found.len(), held.map(|m| m.id)), (1, Some("m1".to_owned())));
    for name in ["index_find", "index_get"] {
        let op = operation(&seen, env, name);
        let requests: Vec<SpanRecord> = seen
            .named(REQUEST_SPAN)
            .into_iter()
            .filter(|r| seen.within(r.id, op.id))
            .collect();
        assert!(
            requests.len() >= 2,
            "the index rows and the entity, inside {name}: {requests:#?}"
        );
        ended_once(&seen, &op);
    }
    assert_eq!(seen.named(REQUEST_SPAN).len(), 4, "no request outside the two lookups");

    // A stream dropped before its end ends its operation as a success.
    let (seen, guard) = capture();
    let mut stream = store.stream(QueryOptions::partition(PK));
    stream.next().await.expect("a customer").unwrap();
    drop(stream);
    drop(guard);
    let op = operation(&seen, env, "stream");
    assert!(!op.fields.contains_key("error.type"), "{op:?}");
    ended_once(&seen, &op);
    no_row_content(&seen, &[PK, RK, NAME]);
}

/// The operations of `seen` named `name`, whatever their collection.
fn operations_named(seen: &Captured, name: &str) -> Vec<SpanRecord> {
    seen.named(OPERATION_SPAN)
        .into_iter()
        .filter(|s| s.fields.get("db.operation.name").map(String::as_str) == Some(name))
        .collect()
}

pub async fn a_file_read_and_the_jobs_are_operations_each(env: &Env) {
    let docs = env.tables.store_in::<Document>(&env.table);
    let mut doc = Document::new(PK, RK);
    doc.attachment = Some(BlobContent::from_bytes(noise(200_000, 3), "text/plain"));
    docs.create(&mut doc).await.unwrap();
    let read = docs.get((PK, RK)).await.unwrap().expect("the document");
    let file = read.attachment.expect("its file");

    // A file read in one request, and a file streamed: one operation each,
    // on the container, with every blob request inside it.
    for name in ["read_all", "open"] {
        let (seen, guard) = capture();
        let bytes = match name {
            "read_all" => file.read_all().await.unwrap(),
            _ => {
                let mut stream = file.open();
                let mut bytes = Vec::new();
                while let Some(chunk) = stream.try_next().await.unwrap() {
                    bytes.extend(chunk);
                }
                bytes
            }
        };
        drop(guard);
        assert_eq!(bytes.len(), 200_000);
        let ops = operations_named(&seen, name);
        assert_eq!(ops.len(), 1, "one {name} span: {ops:#?}");
        let op = &ops[0];
        assert_eq!(op.fields["db.system.name"], DB_SYSTEM_BLOBS, "{op:?}");
        assert!(!op.fields.contains_key("error.type"), "{op:?}");
        assert!(requests_inside(&seen, op) >= 1, "the blob's read, inside {name}");
        ended_once(&seen, op);
    }

    // The jobs of a store: each one operation, every request inside it.
    let members = env.tables.store_in::<Member>(&env.table);
    members
        .create(&mut Member::new("team-jobs", "m1", NAME, "Lviv"))
        .await
        .unwrap();
    let (seen, guard) = capture();
    let converged: Vec<_> = members
        .converge(ConvergeOptions::default())
        .try_collect()
        .await
        .unwrap();
    let built: Vec<_> = members
        .build_index(Member::BY_CITY, BuildIndexOptions::default())
        .try_collect()
        .await
        .unwrap();
    let report = members.check_indexes(IndexCheckOptions::default()).await.unwrap();
    let applied = members.apply_index_intents(None).await.unwrap();
    let dropped = members.drop_index("retired_index").await.unwrap();
    drop(guard);
    assert!(!converged.is_empty() && !built.is_empty(), "{converged:?} {built:?}");
    assert!(report.is_clean(), "{report:?}");
    assert!(applied.failed.is_empty(), "{applied:?}");
    assert_eq!(dropped, 0);
    let jobs = [
        "converge",
        "build_index",
        "check_indexes",
        "apply_index_intents",
        "drop_index",
    ];
    let ops: Vec<SpanRecord> = jobs.iter().map(|name| operation(&seen, env, name)).collect();
    for op in &ops {
        assert!(!op.fields.contains_key("error.type"), "{op:?}");
        let inside = seen
            .named(REQUEST_SPAN)
            .into_iter()
            .filter(|r| seen.within(r.id, op.id))
            .count();
        assert!(inside >= 1, "{op:?} reads the table");
        ended_once(&seen, op);
    }
    assert_eq!(seen.named(OPERATION_SPAN).len(), jobs.len(), "no other operation");
    for request in seen.named(REQUEST_SPAN) {
        assert!(
            ops.iter().any(|op| seen.within(request.id, op.id)),
            "every request inside its job: {request:?}"
        );
    }
    no_row_content(&seen, &[PK, RK, NAME]);
}

pub async fn a_miss_is_no_error_on_any_span(env: &Env) {
    let store = env.tables.store_in::<Customer>(&env.table);
    store.create(&mut Customer::new(PK, RK, NAME)).await.unwrap();
    let docs = env.tables.store_in::<Document>(&env.table);

    let (seen, guard) = capture();
    assert!(store.get((PK, "missing")).await.unwrap().is_none());
    assert!(!store.exists((PK, "missing")).await.unwrap());
    assert!(docs.get(("missing", RK)).await.unwrap().is_none());
    drop(guard);
    let ops = seen.named(OPERATION_SPAN);
    assert_eq!(ops.len(), 3, "{ops:#?}");
    assert!(seen.spans().len() > 3, "the requests' spans were seen");
    for span in seen.spans() {
        assert!(
            !span.fields.contains_key("error.type") && !span.fields.contains_key("otel.status_code"),
            "a miss is an answer, not an error: {span:#?}"
        );
    }
    for event in seen.events() {
        assert!(!event.fields.contains_key("error.type"), "{event:#?}");
    }
}
