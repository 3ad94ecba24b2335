use std::collections::HashSet;
use std::sync::Arc;

use super::*;
use crate::query::CmpOp;
use crate::service::{MAX_CELL_BYTES, MAX_ENTITY_BYTES, MAX_PROPERTIES};
use crate::value::Value;

const T: &str = "Things";

async fn backend() -> MemoryBackend {
    let b = MemoryBackend::new();
    b.create_table(T).await.unwrap();
    b
}

fn row(pk: &str, rk: &str) -> Row {
    Row::new(pk, rk)
}

/// (status, code) of a service error.
fn code(e: &Error) -> (u16, &str) {
    match e {
        Error::Service { status, code, .. } => (*status, code.as_str()),
        other => panic!("expected a service error, got {other:?}"),
    }
}

/// (index, status, code) of a transaction error.
fn tx_code(e: &Error) -> (usize, u16, &str) {
    match e {
        Error::Transaction { index, source } => {
            let (status, code) = code(source);
            (*index, status, code)
        }
        other => panic!("expected a transaction error, got {other:?}"),
    }
}

fn message(e: &Error) -> &str {
    match e {
        Error::Service { message, .. } => message,
        Error::Transaction { source, .. } => message(source),
        other => panic!("expected a service error, got {other:?}"),
    }
}

async fn insert(b: &MemoryBackend, r: Row) -> Result<WriteOutcome> {
    b.execute(T, WriteOp::Insert(r)).await
}

async fn get(b: &MemoryBackend, pk: &str, rk: &str) -> Option<Row> {
    b.get(T, pk, rk).await.unwrap()
}

async fn all_rows(b: &MemoryBackend) -> Vec<Row> {
    let mut out = Vec::new();
    let mut token = None;
    loop {
        let page = b.query(T, &QueryRequest::default(), token.as_ref()).await.unwrap();
        out.extend(page.rows);
        match page.next {
            Some(c) => token = Some(c),
            None => return out,
        }
    }
}

fn keys(rows: &[Row]) -> Vec<(String, String)> {
    rows.iter()
        .map(|r| (r.partition_key.clone(), r.row_key.clone()))
        .collect()
}

fn update(r: Row, mode: UpdateMode, condition: IfMatch) -> WriteOp {
    WriteOp::Update {
        row: r,
        mode,
        condition,
    }
}

fn delete(pk: &str, rk: &str, condition: IfMatch) -> WriteOp {
    WriteOp::Delete {
        partition_key: pk.into(),
        row_key: rk.into(),
        condition,
    }
}

// ---------------------------------------------------------------- tables

#[test]
fn backend_is_send_sync_debug() {
    fn assert_backend<B: Backend>() {}
    assert_backend::<MemoryBackend>();
}

#[tokio::test]
async fn debug_lists_tables_without_rows() {
    let b = backend().await;
    insert(&b, row("p", "r").with("Secret", Value::String("hidden".into())))
        .await
        .unwrap();
    let text = format!("{b:?}");
    assert!(text.contains("Things"), "{text}");
    assert!(!text.contains("hidden"), "{text}");
}

#[tokio::test]
async fn tables_are_case_insensitive_and_create_is_idempotent() {
    let b = MemoryBackend::new();
    b.create_table("Things").await.unwrap();
    insert(&b, row("p", "r")).await.unwrap();
    b.create_table("THINGS").await.unwrap();
    assert!(
        b.get("things", "p", "r").await.unwrap().is_some(),
        "re-create kept rows"
    );
    b.delete_table("tHiNgS").await.unwrap();
    let e = b.delete_table("Things").await.unwrap_err();
    assert_eq!(code(&e), (404, "TableNotFound"));
}

#[tokio::test]
async fn missing_table_is_404_table_not_found_for_everything() {
    let b = MemoryBackend::new();
    let e = b.get("Nope", "p", "r").await.unwrap_err();
    assert_eq!(code(&e), (404, "TableNotFound"));
    let e = b.execute("Nope", WriteOp::Insert(row("p", "r"))).await.unwrap_err();
    assert_eq!(code(&e), (404, "TableNotFound"));
    let e = b.execute("Nope", delete("p", "r", IfMatch::Any)).await.unwrap_err();
    assert_eq!(code(&e), (404, "TableNotFound"));
    let e = b.query("Nope", &QueryRequest::default(), None).await.unwrap_err();
    assert_eq!(code(&e), (404, "TableNotFound"));
    let e = b
        .transaction("Nope", vec![WriteOp::Insert(row("p", "r"))])
        .await
        .unwrap_err();
    assert_eq!(tx_code(&e), (0, 404, "TableNotFound"));
    assert_eq!(e.service_code(), Some((404, "TableNotFound")));
    let e = b.delete_table("Nope").await.unwrap_err();
    assert_eq!(code(&e), (404, "TableNotFound"));
}

#[tokio::test]
async fn deleting_a_table_drops_its_rows() {
    let b = backend().await;
    insert(&b, row("p", "r")).await.unwrap();
    b.delete_table(T).await.unwrap();
    b.create_table(T).await.unwrap();
    assert_eq!(get(&b, "p", "r").await, None);
}

// ---------------------------------------------------------------- single writes

#[tokio::test]
async fn insert_then_get_returns_the_row_with_its_version() {
    let b = backend().await;
    let r = row("p", "r")
        .with("S", Value::String("x".into()))
        .with("N", Value::Double(f64::NAN))
        .with("I", Value::Double(f64::NEG_INFINITY))
        .with("Z", Value::Double(-0.0))
        .with("B", Value::Binary(vec![0, 255]))
        .with("D", Value::DateTime(DateTime::MIN_STORABLE))
        .with("L", Value::Int64(i64::MIN));
    let out = insert(&b, r.clone()).await.unwrap();
    let ts = out.timestamp.expect("timestamp");
    assert_eq!(out.etag, Some(ETag::from_timestamp(ts)));
    assert!(out.etag.as_ref().unwrap().as_str().starts_with("W/\"datetime'"));
    let got = get(&b, "p", "r").await.unwrap();
    assert_eq!(got.etag, out.etag);
    assert_eq!(got.timestamp, out.timestamp);
    assert!(matches!(got.get("N"), Some(Value::Double(v)) if v.is_nan()));
    assert!(matches!(got.get("Z"), Some(Value::Double(v)) if *v == 0.0 && v.is_sign_negative()));
    assert_eq!(got.get("I"), Some(&Value::Double(f64::NEG_INFINITY)));
    assert_eq!(got.get("B"), r.get("B"));
    assert_eq!(got.get("D"), r.get("D"));
    assert_eq!(got.get("L"), r.get("L"));
    assert_eq!(got.properties.len(), r.properties.len());
    assert_eq!(get(&b, "p", "other").await, None);
}

#[tokio::test]
async fn sent_etag_and_timestamp_are_ignored() {
    let b = backend().await;
    let mut r = row("p", "r");
    r.etag = Some(ETag::new("W/\"bogus\""));
    r.timestamp = Some(DateTime::MIN_STORABLE);
    let out = insert(&b, r).await.unwrap();
    let got = get(&b, "p", "r").await.unwrap();
    assert_eq!(got.etag, out.etag);
    assert_ne!(got.timestamp, Some(DateTime::MIN_STORABLE));
}

#[tokio::test]
async fn insert_of_an_existing_row_is_409() {
    let b = backend().await;
    insert(&b, row("p", "r").with("A", Value::Int32(1))).await.unwrap();
    let e = insert(&b, row("p", "r").with("A", Value::Int32(2))).await.unwrap_err();
    assert_eq!(code(&e), (409, "EntityAlreadyExists"));
    assert_eq!(get(&b, "p", "r").await.unwrap().get("A"), Some(&Value::Int32(1)));
}

#[tokio::test]
async fn every_write_changes_the_etag_and_raises_the_timestamp() {
    let b = backend().await;
    let mut outcomes = vec![insert(&b, row("p", "r")).await.unwrap()];
    let ops = [
        update(row("p", "r"), UpdateMode::Replace, IfMatch::Any),
        update(row("p", "r"), UpdateMode::Merge, IfMatch::Any),
        WriteOp::Upsert {
            row: row("p", "r"),
            mode: UpdateMode::Replace,
        },
        WriteOp::Upsert {
            row: row("p", "r"),
            mode: UpdateMode::Merge,
        },
    ];
    for op in ops {
        outcomes.push(b.execute(T, op).await.unwrap());
        let last = outcomes.last().unwrap();
        let stored = get(&b, "p", "r").await.unwrap();
        assert_eq!(stored.etag, last.etag);
        assert_eq!(stored.timestamp, last.timestamp);
    }
    for pair in outcomes.windows(2) {
        assert_ne!(pair[0].etag, pair[1].etag);
        assert!(pair[0].timestamp.unwrap() < pair[1].timestamp.unwrap());
    }
}

#[tokio::test]
async fn timestamps_rise_strictly_across_rows_and_tables() {
    let b = backend().await;
    b.create_table("Other").await.unwrap();
    let mut last: Option<DateTime> = None;
    for i in 0..500 {
        let table = if i % 2 == 0 { T } else { "Other" };
        let out = b
            .execute(table, WriteOp::Insert(row("p", &format!("{i:04}"))))
            .await
            .unwrap();
        let ts = out.timestamp.unwrap();
        if let Some(prev) = last {
            assert!(ts > prev, "{ts} after {prev}");
        }
        let now = DateTime::now();
        assert!(ts <= DateTime::from_ticks(now.ticks() + 1000).unwrap());
        last = Some(ts);
    }
}

#[tokio::test]
async fn concurrent_writers_get_distinct_timestamps() {
    let b = Arc::new(backend().await);
    let mut tasks = Vec::new();
    for w in 0..8 {
        let b = b.clone();
        tasks.push(tokio::spawn(async move {
            let mut stamps = Vec::new();
            for i in 0..50 {
                let out = b
                    .execute(T, WriteOp::Insert(row("p", &format!("{w}-{i}"))))
                    .await
                    .unwrap();
                stamps.push(out.timestamp.unwrap());
            }
            stamps
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let n = all.len();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), n);
    assert_eq!(all_rows(&b).await.len(), 400);
}

#[tokio::test]
async fn update_missing_is_404_and_stale_is_412() {
    let b = backend().await;
    for mode in [UpdateMode::Replace, UpdateMode::Merge] {
        let e = b
            .execute(T, update(row("p", "r"), mode, IfMatch::Any))
            .await
            .unwrap_err();
        assert_eq!(code(&e), (404, "ResourceNotFound"));
    }
    let first = insert(&b, row("p", "r")).await.unwrap().etag.unwrap();
    let second = b
        .execute(
            T,
            update(row("p", "r"), UpdateMode::Replace, IfMatch::ETag(first.clone())),
        )
        .await
        .unwrap()
        .etag
        .unwrap();
    for mode in [UpdateMode::Replace, UpdateMode::Merge] {
        let e = b
            .execute(
                T,
                update(
                    row("p", "r").with("A", Value::Int32(1)),
                    mode,
                    IfMatch::ETag(first.clone()),
                ),
            )
            .await
            .unwrap_err();
        assert_eq!(code(&e), (412, "UpdateConditionNotSatisfied"));
    }
    let stored = get(&b, "p", "r").await.unwrap();
    assert_eq!(stored.etag, Some(second.clone()));
    assert!(stored.properties.is_empty());
    b.execute(T, update(row("p", "r"), UpdateMode::Merge, IfMatch::ETag(second)))
        .await
        .unwrap();
}

#[tokio::test]
async fn replace_drops_unsent_properties_and_merge_keeps_them() {
    let b = backend().await;
    let base = row("p", "r").with("A", Value::Int32(1)).with("B", Value::Int32(2));
    insert(&b, base.clone()).await.unwrap();

    b.execute(
        T,
        update(
            row("p", "r").with("B", Value::Int32(20)).with("C", Value::Int32(3)),
            UpdateMode::Merge,
            IfMatch::Any,
        ),
    )
    .await
    .unwrap();
    let got = get(&b, "p", "r").await.unwrap();
    assert_eq!(got.get("A"), Some(&Value::Int32(1)));
    assert_eq!(got.get("B"), Some(&Value::Int32(20)));
    assert_eq!(got.get("C"), Some(&Value::Int32(3)));

    b.execute(
        T,
        update(
            row("p", "r").with("B", Value::String("b".into())),
            UpdateMode::Replace,
            IfMatch::Any,
        ),
    )
    .await
    .unwrap();
    let got = get(&b, "p", "r").await.unwrap();
    assert_eq!(got.properties.len(), 1);
    assert_eq!(got.get("B"), Some(&Value::String("b".into())));
}

#[tokio::test]
async fn upsert_never_fails_on_existence() {
    let b = backend().await;
    let upsert = |r: Row, mode| WriteOp::Upsert { row: r, mode };
    b.execute(T, upsert(row("p", "m").with("A", Value::Int32(1)), UpdateMode::Merge))
        .await
        .unwrap();
    b.execute(T, upsert(row("p", "r").with("A", Value::Int32(1)), UpdateMode::Replace))
        .await
        .unwrap();
    assert_eq!(get(&b, "p", "m").await.unwrap().get("A"), Some(&Value::Int32(1)));

    b.execute(T, upsert(row("p", "m").with("B", Value::Int32(2)), UpdateMode::Merge))
        .await
        .unwrap();
    let got = get(&b, "p", "m").await.unwrap();
    assert_eq!(
        (got.get("A"), got.get("B")),
        (Some(&Value::Int32(1)), Some(&Value::Int32(2)))
    );

    b.execute(T, upsert(row("p", "r").with("B", Value::Int32(2)), UpdateMode::Replace))
        .await
        .unwrap();
    let got = get(&b, "p", "r").await.unwrap();
    assert_eq!((got.get("A"), got.get("B")), (None, Some(&Value::Int32(2))));
}

#[tokio::test]
async fn delete_missing_is_404_stale_is_412_and_success_has_no_etag() {
    let b = backend().await;
    let e = b.execute(T, delete("p", "r", IfMatch::Any)).await.unwrap_err();
    assert_eq!(code(&e), (404, "ResourceNotFound"));
    let old = insert(&b, row("p", "r")).await.unwrap().etag.unwrap();
    let e = b
        .execute(
            T,
            delete(
                "p",
                "r",
                IfMatch::ETag(ETag::new("W/\"datetime'2000-01-01T00%3A00%3A00.0000000Z'\"")),
            ),
        )
        .await
        .unwrap_err();
    assert_eq!(code(&e), (412, "UpdateConditionNotSatisfied"));
    let out = b
        .execute(T, delete("p", "r", IfMatch::ETag(old.clone())))
        .await
        .unwrap();
    assert_eq!(out.etag, None);
    assert_eq!(get(&b, "p", "r").await, None);
    let e = b.execute(T, delete("p", "r", IfMatch::ETag(old))).await.unwrap_err();
    assert_eq!(code(&e), (404, "ResourceNotFound"));
    insert(&b, row("p", "r")).await.unwrap();
    b.execute(T, delete("p", "r", IfMatch::Any)).await.unwrap();
    assert_eq!(get(&b, "p", "r").await, None);
}

// ---------------------------------------------------------------- validation

async fn refused(b: &MemoryBackend, r: Row) -> (u16, String, String) {
    let pk = r.partition_key.clone();
    let rk = r.row_key.clone();
    let e = insert(b, r.clone()).await.unwrap_err();
    let (status, c) = code(&e);
    let out = (status, c.to_owned(), message(&e).to_owned());
    // The same refusal for every kind of write, and nothing stored.
    for op in [
        WriteOp::Upsert {
            row: r.clone(),
            mode: UpdateMode::Merge,
        },
        WriteOp::Upsert {
            row: r.clone(),
            mode: UpdateMode::Replace,
        },
        update(r.clone(), UpdateMode::Replace, IfMatch::Any),
    ] {
        let e = b.execute(T, op).await.unwrap_err();
        assert_eq!((code(&e).0, code(&e).1), (out.0, out.1.as_str()));
    }
    let e = b.transaction(T, vec![WriteOp::Insert(r)]).await.unwrap_err();
    assert_eq!(tx_code(&e), (0, out.0, out.1.as_str()));
    let addressable = crate::value::utf16_len(&pk) <= 1024
        && crate::value::utf16_len(&rk) <= 1024
        && !pk.chars().chain(rk.chars()).any(crate::service::is_refused_key_char);
    if addressable {
        assert_eq!(get(b, &pk, &rk).await, None);
    }
    out
}

#[tokio::test]
async fn keys_longer_than_1024_utf16_units_are_key_value_too_large() {
    let b = backend().await;
    let ok = "k".repeat(1024);
    insert(&b, row(&ok, &ok)).await.unwrap();
    // 512 characters beyond the BMP are 1024 units.
    let astral = "\u{1F600}".repeat(512);
    insert(&b, row("p", &astral)).await.unwrap();
    let long = "k".repeat(1025);
    let (status, c, msg) = refused(&b, row(&long, "r")).await;
    assert_eq!((status, c.as_str()), (400, "KeyValueTooLarge"));
    assert!(msg.contains("PartitionKey"), "{msg}");
    let (status, c, msg) = refused(&b, row("p", &format!("{astral}x"))).await;
    assert_eq!((status, c.as_str()), (400, "KeyValueTooLarge"));
    assert!(msg.contains("RowKey"), "{msg}");
    let e = b.execute(T, delete(&long, "r", IfMatch::Any)).await.unwrap_err();
    assert_eq!(code(&e), (400, "KeyValueTooLarge"));
}

#[tokio::test]
async fn refused_key_characters_are_out_of_range_input() {
    let b = backend().await;
    for c in ['/', '\\', '#', '?', '\u{0}', '\u{1F}', '\u{7F}', '\u{9F}', '\n'] {
        let bad = format!("a{c}b");
        let (status, code, msg) = refused(&b, row(&bad, "r")).await;
        assert_eq!((status, code.as_str()), (400, "OutOfRangeInput"), "{c:?}");
        assert!(msg.contains("PartitionKey"), "{msg}");
        let (status, code, msg) = refused(&b, row("p", &bad)).await;
        assert_eq!((status, code.as_str()), (400, "OutOfRangeInput"), "{c:?}");
        assert!(msg.contains("RowKey"), "{msg}");
    }
    // Neighbours of the refused ranges, and empty keys, are fine.
    for ok in ["a\u{20}b", "a\u{7E}b", "a\u{A0}b", "", "a|b", "\u{FFFD}"] {
        insert(&b, row(ok, ok)).await.unwrap();
    }
}

#[tokio::test]
async fn more_than_252_properties_is_too_many_properties() {
    let b = backend().await;
    let mut r = row("p", "ok");
    for i in 0..MAX_PROPERTIES {
        r.insert(format!("P{i}"), Value::Int32(i as i32));
    }
    insert(&b, r.clone()).await.unwrap();
    r.row_key = "bad".into();
    r.insert("OneMore", Value::Bool(true));
    let (status, c, _) = refused(&b, r).await;
    assert_eq!((status, c.as_str()), (400, "TooManyProperties"));
}

#[tokio::test]
async fn merge_past_252_properties_is_too_many_properties() {
    let b = backend().await;
    let mut r = row("p", "r");
    for i in 0..MAX_PROPERTIES {
        r.insert(format!("P{i}"), Value::Int32(i as i32));
    }
    let etag = insert(&b, r).await.unwrap().etag;
    let extra = row("p", "r").with("Extra", Value::Int32(0));
    let e = b
        .execute(T, update(extra.clone(), UpdateMode::Merge, IfMatch::Any))
        .await
        .unwrap_err();
    assert_eq!(code(&e), (400, "TooManyProperties"));
    let e = b
        .execute(
            T,
            WriteOp::Upsert {
                row: extra.clone(),
                mode: UpdateMode::Merge,
            },
        )
        .await
        .unwrap_err();
    assert_eq!(code(&e), (400, "TooManyProperties"));
    assert_eq!(get(&b, "p", "r").await.unwrap().etag, etag);
    // Replacing with the same row is fine.
    b.execute(T, update(extra, UpdateMode::Replace, IfMatch::Any))
        .await
        .unwrap();
}

#[tokio::test]
async fn oversized_strings_and_binaries_are_property_value_too_large() {
    let b = backend().await;
    let max_chars = MAX_CELL_BYTES / 2; // 32,767 units = 65,534 bytes
    insert(&b, row("p", "s").with("S", Value::String("x".repeat(max_chars))))
        .await
        .unwrap();
    let (status, c, msg) = refused(&b, row("p", "s2").with("Big", Value::String("x".repeat(max_chars + 1)))).await;
    assert_eq!((status, c.as_str()), (400, "PropertyValueTooLarge"));
    assert!(msg.contains("Big"), "{msg}");
    // Characters beyond the BMP count two units each.
    let astral = "\u{1F600}".repeat(max_chars / 2 + 1);
    let (status, c, _) = refused(&b, row("p", "s3").with("S", Value::String(astral))).await;
    assert_eq!((status, c.as_str()), (400, "PropertyValueTooLarge"));

    insert(&b, row("p", "b").with("B", Value::Binary(vec![7; MAX_CELL_BYTES])))
        .await
        .unwrap();
    let (status, c, msg) = refused(
        &b,
        row("p", "b2").with("Blob", Value::Binary(vec![7; MAX_CELL_BYTES + 1])),
    )
    .await;
    assert_eq!((status, c.as_str()), (400, "PropertyValueTooLarge"));
    assert!(msg.contains("Blob"), "{msg}");
}

/// A row of exactly `size` bytes by the service's formula.
fn row_of_size(rk: &str, size: usize) -> Row {
    let mut r = row("p", rk);
    let mut i = 0;
    loop {
        let name = format!("B{i:02}");
        let overhead = 8 + 2 * name.len() + 4;
        let left = size - r.stored_size();
        let len = (left - overhead).min(MAX_CELL_BYTES);
        r.insert(name, Value::Binary(vec![1; len]));
        if r.stored_size() == size {
            return r;
        }
        i += 1;
    }
}

#[tokio::test]
async fn entities_over_1048488_bytes_are_entity_too_large() {
    let b = backend().await;
    let ok = row_of_size("ok", MAX_ENTITY_BYTES);
    assert_eq!(ok.stored_size(), MAX_ENTITY_BYTES);
    insert(&b, ok).await.unwrap();
    let big = row_of_size("big", MAX_ENTITY_BYTES + 1);
    let (status, c, msg) = refused(&b, big).await;
    assert_eq!((status, c.as_str()), (400, "EntityTooLarge"));
    assert!(msg.contains("big"), "{msg}");
}

#[tokio::test]
async fn merge_past_the_entity_size_is_entity_too_large() {
    let b = backend().await;
    insert(&b, row_of_size("r", MAX_ENTITY_BYTES - 100)).await.unwrap();
    let e = b
        .execute(
            T,
            update(
                row("p", "r").with("More", Value::Binary(vec![0; 200])),
                UpdateMode::Merge,
                IfMatch::Any,
            ),
        )
        .await
        .unwrap_err();
    assert_eq!(code(&e), (400, "EntityTooLarge"));
}

#[tokio::test]
async fn bad_property_names_are_refused() {
    let b = backend().await;
    for bad in ["1abc", "a-b", "a b", "", "a.b", "odata.etag", "é-"] {
        let (status, c, _) = refused(&b, row("p", "r").with(bad, Value::Int32(1))).await;
        assert_eq!((status, c.as_str()), (400, "PropertyNameInvalid"), "{bad:?}");
    }
    for reserved in ["PartitionKey", "RowKey", "Timestamp"] {
        let (status, c, msg) = refused(&b, row("p", "r").with(reserved, Value::String("x".into()))).await;
        assert_eq!((status, c.as_str()), (400, "PropertyNameInvalid"), "{reserved}");
        assert!(msg.contains(reserved), "{msg}");
    }
    let long = "a".repeat(256);
    let (status, c, _) = refused(&b, row("p", "r").with(long, Value::Int32(1))).await;
    assert_eq!((status, c.as_str()), (400, "PropertyNameTooLong"));
    for (i, ok) in ["_x", "a1", "Été", "x_Y_9", &"a".repeat(255)].into_iter().enumerate() {
        insert(&b, row("p", &format!("ok{i}")).with(ok, Value::Int32(1)))
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn datetimes_outside_the_storable_range_are_invalid_input() {
    let b = backend().await;
    let early = DateTime::from_ticks(DateTime::MIN_STORABLE.ticks() - 1).unwrap();
    let (status, c, msg) = refused(&b, row("p", "r").with("When", Value::DateTime(early))).await;
    assert_eq!((status, c.as_str()), (400, "InvalidInput"));
    assert!(msg.contains("When"), "{msg}");
    insert(
        &b,
        row("p", "min").with("When", Value::DateTime(DateTime::MIN_STORABLE)),
    )
    .await
    .unwrap();
    insert(&b, row("p", "max").with("When", Value::DateTime(DateTime::MAX)))
        .await
        .unwrap();
}

// ---------------------------------------------------------------- queries

#[tokio::test]
async fn rows_come_in_utf16_key_order() {
    let b = backend().await;
    // In UTF-16, U+1F600 (D83D DE00) sorts before U+FFFD; in UTF-8 it sorts after.
    let astral = "\u{1F600}";
    let replacement = "\u{FFFD}";
    for pk in [replacement, astral, "b", "a"] {
        for rk in [replacement, "z", astral, "a", ""] {
            insert(&b, row(pk, rk)).await.unwrap();
        }
    }
    let got = keys(&all_rows(&b).await);
    let mut expected = Vec::new();
    for pk in ["a", "b", astral, replacement] {
        for rk in ["", "a", "z", astral, replacement] {
            expected.push((pk.to_owned(), rk.to_owned()));
        }
    }
    assert_eq!(got, expected);
}

#[tokio::test]
async fn paging_2500_rows_with_page_tokens() {
    let b = backend().await;
    for i in 0..2500 {
        insert(
            &b,
            row(&format!("p{}", i / 1000), &format!("{i:05}")).with("I", Value::Int32(i)),
        )
        .await
        .unwrap();
    }
    let request = QueryRequest::default();
    let first = b.query(T, &request, None).await.unwrap();
    assert_eq!(first.rows.len(), 1000);
    let c1 = first.next.clone().unwrap();
    assert_eq!(
        c1,
        PageToken {
            next_partition_key: "p1".into(),
            next_row_key: Some("01000".into()),
        }
    );
    let second = b.query(T, &request, Some(&c1)).await.unwrap();
    assert_eq!(second.rows.len(), 1000);
    assert_eq!(second.rows[0].row_key, "01000");
    let c2 = second.next.clone().unwrap();
    assert_eq!(c2.next_row_key.as_deref(), Some("02000"));
    let third = b.query(T, &request, Some(&c2)).await.unwrap();
    assert_eq!(third.rows.len(), 500);
    assert_eq!(third.next, None);
    assert_eq!(third.rows.last().unwrap().row_key, "02499");
    // Resuming with the same token gives the same page.
    let again = b.query(T, &request, Some(&c1)).await.unwrap();
    assert_eq!(keys(&again.rows), keys(&second.rows));
    // A token without a row key starts at the partition's first row.
    let partition = PageToken {
        next_partition_key: "p2".into(),
        next_row_key: None,
    };
    let page = b.query(T, &request, Some(&partition)).await.unwrap();
    assert_eq!(page.rows.len(), 500);
    assert_eq!(page.rows[0].row_key, "02000");
    // Every row once, in order, with versions.
    let all = all_rows(&b).await;
    assert_eq!(all.len(), 2500);
    assert!(all.iter().all(|r| r.etag.is_some() && r.timestamp.is_some()));
    let rks: Vec<_> = all.iter().map(|r| r.row_key.clone()).collect();
    let mut sorted = rks.clone();
    sorted.sort();
    assert_eq!(rks, sorted);
}

#[tokio::test]
async fn filters_apply_with_paging() {
    let b = backend().await;
    for i in 0..2500 {
        insert(&b, row("p", &format!("{i:05}")).with("I", Value::Int32(i)))
            .await
            .unwrap();
    }
    // 1,500 matching rows in pages of 600.
    let high = Filter::cmp("I", CmpOp::Ge, Value::Int32(1000)).and(Filter::cmp("I", CmpOp::Lt, Value::Int32(2500)));
    let request = QueryRequest {
        filter: Some(high),
        top: Some(600),
        ..QueryRequest::default()
    };
    let page = b.query(T, &request, None).await.unwrap();
    assert_eq!(page.rows.len(), 600);
    assert_eq!(page.rows[0].row_key, "01000");
    let c = page.next.unwrap();
    assert_eq!(c.next_row_key.as_deref(), Some("01600"));
    let page = b.query(T, &request, Some(&c)).await.unwrap();
    assert_eq!(page.rows.len(), 600);
    let c = page.next.unwrap();
    assert_eq!(c.next_row_key.as_deref(), Some("02200"));
    let page = b.query(T, &request, Some(&c)).await.unwrap();
    assert_eq!(page.rows.len(), 300);
    assert_eq!(page.next, None);
    // A filter on the keys and a filter matching nothing.
    let request = QueryRequest {
        filter: Some(Filter::eq("RowKey", Value::String("00042".into()))),
        ..QueryRequest::default()
    };
    let page = b.query(T, &request, None).await.unwrap();
    assert_eq!(keys(&page.rows), vec![("p".to_owned(), "00042".to_owned())]);
    let request = QueryRequest {
        filter: Some(Filter::eq("Missing", Value::Int32(1))),
        ..QueryRequest::default()
    };
    let page = b.query(T, &request, None).await.unwrap();
    assert!(page.rows.is_empty() && page.next.is_none());
}

#[tokio::test]
async fn top_limits_each_page_and_zero_is_invalid() {
    let b = backend().await;
    for i in 0..25 {
        insert(&b, row("p", &format!("{i:03}"))).await.unwrap();
    }
    let request = QueryRequest {
        top: Some(10),
        ..QueryRequest::default()
    };
    let mut sizes = Vec::new();
    let mut token = None;
    loop {
        let page = b.query(T, &request, token.as_ref()).await.unwrap();
        sizes.push(page.rows.len());
        match page.next {
            Some(c) => token = Some(c),
            None => break,
        }
    }
    assert_eq!(sizes, vec![10, 10, 5]);
    let e = b
        .query(
            T,
            &QueryRequest {
                top: Some(0),
                ..QueryRequest::default()
            },
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(code(&e), (400, "InvalidInput"));
    // Exactly `top` rows left: no token.
    let page = b
        .query(
            T,
            &QueryRequest {
                top: Some(25),
                ..QueryRequest::default()
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!((page.rows.len(), page.next), (25, None));
}

#[tokio::test]
async fn top_above_1000_is_capped() {
    let b = backend().await;
    for i in 0..1001 {
        insert(&b, row("p", &format!("{i:04}"))).await.unwrap();
    }
    let request = QueryRequest {
        top: Some(5000),
        ..QueryRequest::default()
    };
    let page = b.query(T, &request, None).await.unwrap();
    assert_eq!(page.rows.len(), 1000);
    assert_eq!(page.next.unwrap().next_row_key.as_deref(), Some("1000"));
}

#[tokio::test]
async fn select_returns_only_the_chosen_properties() {
    let b = backend().await;
    let out = insert(
        &b,
        row("p", "r")
            .with("A", Value::Int32(1))
            .with("B", Value::Int32(2))
            .with("C", Value::Int32(3)),
    )
    .await
    .unwrap();
    let request = QueryRequest {
        select: Some(vec!["A".into(), "C".into(), "Nope".into(), "RowKey".into()]),
        ..QueryRequest::default()
    };
    let page = b.query(T, &request, None).await.unwrap();
    let got = &page.rows[0];
    assert_eq!((got.partition_key.as_str(), got.row_key.as_str()), ("p", "r"));
    assert_eq!(got.properties.keys().collect::<Vec<_>>(), vec!["A", "C"]);
    assert_eq!(got.etag, out.etag);
    assert_eq!(got.timestamp, out.timestamp);
    // Keys only.
    let request = QueryRequest {
        select: Some(vec!["RowKey".into()]),
        ..QueryRequest::default()
    };
    let page = b.query(T, &request, None).await.unwrap();
    assert!(page.rows[0].properties.is_empty());
    // A filter still sees properties that are not selected.
    let request = QueryRequest {
        select: Some(vec!["A".into()]),
        filter: Some(Filter::eq("B", Value::Int32(2))),
        ..QueryRequest::default()
    };
    let page = b.query(T, &request, None).await.unwrap();
    assert_eq!(page.rows.len(), 1);
    assert_eq!(page.rows[0].properties.len(), 1);
}

#[tokio::test]
async fn raw_filters_are_refused() {
    let b = backend().await;
    let request = QueryRequest {
        filter: Some(Filter::eq("A", Value::Int32(1)).and(Filter::Raw("A eq 1".into()))),
        ..QueryRequest::default()
    };
    // Refused even on an empty table, where nothing is evaluated.
    let e = b.query(T, &request, None).await.unwrap_err();
    assert_eq!(code(&e), (501, "NotImplemented"));
}

#[tokio::test]
async fn page_quirks_return_empty_pages_with_page_tokens() {
    let b = MemoryBackend::with_page_quirks(2);
    b.create_table(T).await.unwrap();
    for i in 0..2500 {
        insert(&b, row("p", &format!("{i:05}"))).await.unwrap();
    }
    let mut rows = Vec::new();
    let mut empty_pages = 0;
    let mut token: Option<PageToken> = None;
    loop {
        let page = b.query(T, &QueryRequest::default(), token.as_ref()).await.unwrap();
        if page.rows.is_empty() {
            empty_pages += 1;
            // The empty page points where it would have started.
            let expected = match &token {
                Some(c) => c.clone(),
                None => PageToken {
                    next_partition_key: "p".into(),
                    next_row_key: Some("00000".into()),
                },
            };
            if page.next.is_some() {
                assert_eq!(page.next.as_ref(), Some(&expected));
            }
        }
        rows.extend(page.rows);
        match page.next {
            Some(c) => token = Some(c),
            None => break,
        }
    }
    assert!(empty_pages >= 2, "{empty_pages}");
    assert_eq!(rows.len(), 2500);
    let distinct: HashSet<_> = rows.iter().map(|r| r.row_key.clone()).collect();
    assert_eq!(distinct.len(), 2500);
    // The quirk is off by default, and `1` still progresses.
    assert_eq!(all_rows(&backend().await).await.len(), 0);
    let b = MemoryBackend::new().page_quirks(1);
    b.create_table(T).await.unwrap();
    insert(&b, row("p", "r")).await.unwrap();
    assert_eq!(all_rows(&b).await.len(), 1);
}

// ---------------------------------------------------------------- transactions

#[tokio::test]
async fn transaction_applies_all_with_rising_versions() {
    let b = backend().await;
    insert(&b, row("p", "u").with("A", Value::Int32(1))).await.unwrap();
    let d = insert(&b, row("p", "d")).await.unwrap().etag.unwrap();
    let ops = vec![
        WriteOp::Insert(row("p", "i")),
        update(
            row("p", "u").with("B", Value::Int32(2)),
            UpdateMode::Merge,
            IfMatch::Any,
        ),
        WriteOp::Upsert {
            row: row("p", "s"),
            mode: UpdateMode::Replace,
        },
        delete("p", "d", IfMatch::ETag(d)),
    ];
    let outcomes = b.transaction(T, ops).await.unwrap();
    assert_eq!(outcomes.len(), 4);
    assert_eq!(
        outcomes[3],
        WriteOutcome {
            etag: None,
            timestamp: None
        }
    );
    assert!(outcomes[0].timestamp < outcomes[1].timestamp);
    assert!(outcomes[1].timestamp < outcomes[2].timestamp);
    assert_ne!(outcomes[0].etag, outcomes[1].etag);
    for (rk, outcome) in [("i", &outcomes[0]), ("u", &outcomes[1]), ("s", &outcomes[2])] {
        let stored = get(&b, "p", rk).await.unwrap();
        assert_eq!(stored.etag, outcome.etag);
        assert_eq!(stored.timestamp, outcome.timestamp);
    }
    let u = get(&b, "p", "u").await.unwrap();
    assert_eq!(
        (u.get("A"), u.get("B")),
        (Some(&Value::Int32(1)), Some(&Value::Int32(2)))
    );
    assert_eq!(get(&b, "p", "d").await, None);
    // Later writes still rise past the transaction's stamps.
    let next = insert(&b, row("p", "later")).await.unwrap();
    assert!(next.timestamp > outcomes[2].timestamp);
}

#[tokio::test]
async fn transaction_of_100_is_fine_and_empty_or_101_is_invalid_input() {
    let b = backend().await;
    let ops = |n: usize| {
        (0..n)
            .map(|i| WriteOp::Insert(row("p", &format!("{i:03}"))))
            .collect::<Vec<_>>()
    };
    let e = b.transaction(T, Vec::new()).await.unwrap_err();
    assert_eq!(tx_code(&e), (0, 400, "InvalidInput"));
    let e = b.transaction(T, ops(101)).await.unwrap_err();
    assert_eq!(tx_code(&e), (99, 400, "InvalidInput"));
    assert!(all_rows(&b).await.is_empty());
    assert_eq!(b.transaction(T, ops(100)).await.unwrap().len(), 100);
    assert_eq!(all_rows(&b).await.len(), 100);
}

#[tokio::test]
async fn transaction_on_two_partitions_fails_at_the_first_other_one() {
    let b = backend().await;
    let ops = vec![
        WriteOp::Insert(row("p", "1")),
        WriteOp::Insert(row("p", "2")),
        WriteOp::Insert(row("q", "3")),
        WriteOp::Insert(row("p", "4")),
    ];
    let e = b.transaction(T, ops).await.unwrap_err();
    assert_eq!(tx_code(&e), (2, 400, "CommandsInBatchActOnDifferentPartitions"));
    assert!(all_rows(&b).await.is_empty());
}

#[tokio::test]
async fn transaction_with_a_row_twice_fails_at_the_second() {
    let b = backend().await;
    let ops = vec![
        WriteOp::Insert(row("p", "1")),
        WriteOp::Insert(row("p", "2")),
        delete("p", "1", IfMatch::Any),
    ];
    let e = b.transaction(T, ops).await.unwrap_err();
    assert_eq!(tx_code(&e), (2, 400, "InvalidDuplicateRow"));
    // ("a", "bc") and ("ab", "c") are different rows.
    let ops = vec![WriteOp::Insert(row("a", "bc")), WriteOp::Insert(row("a", "b"))];
    b.transaction(T, ops).await.unwrap();
}

#[tokio::test]
async fn transaction_failing_in_the_middle_applies_nothing() {
    let b = backend().await;
    let before = insert(&b, row("p", "exists").with("A", Value::Int32(1))).await.unwrap();
    let other = insert(&b, row("p", "other").with("A", Value::Int32(1))).await.unwrap();
    let ops = vec![
        WriteOp::Insert(row("p", "new1")),
        update(
            row("p", "other").with("A", Value::Int32(2)),
            UpdateMode::Replace,
            IfMatch::Any,
        ),
        WriteOp::Insert(row("p", "exists")),
        WriteOp::Insert(row("p", "new2")),
    ];
    let e = b.transaction(T, ops).await.unwrap_err();
    assert_eq!(tx_code(&e), (2, 409, "EntityAlreadyExists"));
    assert_eq!(e.service_code(), Some((409, "EntityAlreadyExists")));
    let rows = all_rows(&b).await;
    assert_eq!(
        keys(&rows),
        vec![
            ("p".to_owned(), "exists".to_owned()),
            ("p".to_owned(), "other".to_owned())
        ]
    );
    assert_eq!(rows[0].etag, before.etag);
    assert_eq!(rows[1].etag, other.etag);
    assert_eq!(rows[1].get("A"), Some(&Value::Int32(1)));
}

#[tokio::test]
async fn transaction_with_a_stale_etag_or_missing_row_fails_at_its_index() {
    let b = backend().await;
    let first = insert(&b, row("p", "r")).await.unwrap().etag.unwrap();
    b.execute(T, update(row("p", "r"), UpdateMode::Merge, IfMatch::Any))
        .await
        .unwrap();
    let ops = vec![
        WriteOp::Insert(row("p", "a")),
        update(row("p", "r"), UpdateMode::Replace, IfMatch::ETag(first.clone())),
    ];
    let e = b.transaction(T, ops).await.unwrap_err();
    assert_eq!(tx_code(&e), (1, 412, "UpdateConditionNotSatisfied"));
    let ops = vec![WriteOp::Insert(row("p", "a")), delete("p", "r", IfMatch::ETag(first))];
    let e = b.transaction(T, ops).await.unwrap_err();
    assert_eq!(tx_code(&e), (1, 412, "UpdateConditionNotSatisfied"));
    let ops = vec![
        WriteOp::Insert(row("p", "a")),
        WriteOp::Insert(row("p", "b")),
        update(row("p", "missing"), UpdateMode::Merge, IfMatch::Any),
    ];
    let e = b.transaction(T, ops).await.unwrap_err();
    assert_eq!(tx_code(&e), (2, 404, "ResourceNotFound"));
    assert_eq!(get(&b, "p", "a").await, None);
}

#[tokio::test]
async fn transaction_row_validation_fails_at_its_index() {
    let b = backend().await;
    let ops = vec![
        WriteOp::Insert(row("p", "a")),
        WriteOp::Insert(row("p", "b")),
        WriteOp::Insert(row("p", "c?")),
    ];
    let e = b.transaction(T, ops).await.unwrap_err();
    assert_eq!(tx_code(&e), (2, 400, "OutOfRangeInput"));
    let ops = vec![
        WriteOp::Insert(row("p", "a")),
        WriteOp::Insert(row("p", "b").with("bad-name", Value::Int32(1))),
    ];
    let e = b.transaction(T, ops).await.unwrap_err();
    assert_eq!(tx_code(&e), (1, 400, "PropertyNameInvalid"));
    assert!(all_rows(&b).await.is_empty());
}

#[tokio::test]
async fn transaction_over_4_mib_is_413() {
    let b = backend().await;
    // Each row is about 1 MB by the size formula and about 1.3 MB as base64 JSON.
    let big = |rk: &str| row_of_size(rk, MAX_ENTITY_BYTES);
    let ops = (0..2).map(|i| WriteOp::Insert(big(&i.to_string()))).collect::<Vec<_>>();
    b.transaction(T, ops).await.unwrap();
    let ops = (2..6).map(|i| WriteOp::Insert(big(&i.to_string()))).collect::<Vec<_>>();
    let e = b.transaction(T, ops).await.unwrap_err();
    assert_eq!(e.service_code(), Some((413, "RequestBodyTooLarge")));
    assert_eq!(all_rows(&b).await.len(), 2);
}
