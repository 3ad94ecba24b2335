//! Tests of the Azure backend. Connection-string parsing and the retry policy
//! (against a tiny loopback HTTP server) always run; the rest talks to Azurite
//! (or Azure) when `UNIFIED_TABLES_TEST_CONNECTION` holds a connection string,
//! and prints one line and returns when it does not.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;
use crate::backend::{IfMatch, UpdateMode};
use crate::query::{CmpOp, Filter};
use crate::value::{Guid, Value};

const ENV: &str = "UNIFIED_TABLES_TEST_CONNECTION";

fn live() -> Option<AzureBackend> {
    crate::backend::azure::test_connection()
        .map(|cs| AzureBackend::from_connection_string(&cs).expect("valid test connection"))
}

/// A table name unique to this test run.
fn table_name(prefix: &str) -> String {
    format!("{prefix}{:012x}", rand::random::<u64>() & 0xffff_ffff_ffff)
}

fn service_code(result: &Result<impl fmt::Debug>) -> Option<(u16, String)> {
    match result {
        Err(Error::Service { status, code, .. }) => Some((*status, code.clone())),
        _ => None,
    }
}

fn insert(row: &Row) -> WriteOp {
    WriteOp::Insert(row.clone())
}

fn typed_row(pk: &str, rk: &str) -> Row {
    Row::new(pk, rk)
        .with("Text", Value::String("héllo 'quoted' \"double\" ☃".into()))
        .with("Flag", Value::Bool(true))
        .with("Small", Value::Int32(-7))
        .with("SmallInt64", Value::Int64(5))
        .with("BigInt64", Value::Int64(i64::MIN + 1))
        .with("Whole", Value::Double(10.0))
        .with("Fraction", Value::Double(-1.25e-7))
        .with("Huge", Value::Double(1.797_693_134_862_315_7e308))
        .with("Infinite", Value::Double(f64::NEG_INFINITY))
        .with(
            "When",
            Value::DateTime(DateTime::parse("2024-02-29T23:59:59.1234567Z").unwrap()),
        )
        .with(
            "Id",
            Value::Guid("c9da6455-213d-42c9-9a79-3e9149a57833".parse::<Guid>().unwrap()),
        )
        .with("Bytes", Value::Binary(vec![0, 1, 2, 254, 255]))
}

// ---------------------------------------------------------------------------
// Always run: connection strings.

#[test]
fn development_storage_uses_the_emulator_defaults() {
    let cs = ConnectionString::parse("UseDevelopmentStorage=true").unwrap();
    assert_eq!(cs.account_name, "devstoreaccount1");
    assert_eq!(
        cs.credentials,
        AccountCredentials::AccountKey(EMULATOR_ACCOUNT_KEY.into())
    );
    assert_eq!(cs.table_endpoint, "http://127.0.0.1:10002/devstoreaccount1");
    assert_eq!(cs.blob_endpoint, "http://127.0.0.1:10000/devstoreaccount1");
    let b = AzureBackend::from_connection_string("UseDevelopmentStorage=true;").unwrap();
    assert_eq!(b.table_endpoint(), "http://127.0.0.1:10002/devstoreaccount1");
}

#[test]
fn account_key_and_suffix_build_the_public_endpoints() {
    let cs = ConnectionString::parse(
        "DefaultEndpointsProtocol=https;AccountName=myacct;AccountKey=bXlrZXk=;EndpointSuffix=core.chinacloudapi.cn",
    )
    .unwrap();
    assert_eq!(cs.account_name, "myacct");
    assert_eq!(cs.table_endpoint, "https://myacct.table.core.chinacloudapi.cn");
    assert_eq!(cs.blob_endpoint, "https://myacct.blob.core.chinacloudapi.cn");
    let cs = ConnectionString::parse("accountname=a1;accountkey=bXlrZXk=").unwrap();
    assert_eq!(cs.table_endpoint, "https://a1.table.core.windows.net");
}

#[test]
fn explicit_emulator_endpoints_keep_the_account_in_the_path() {
    let text = format!(
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={EMULATOR_ACCOUNT_KEY};\
         TableEndpoint=http://127.0.0.1:41002/devstoreaccount1/;BlobEndpoint=http://127.0.0.1:41000/devstoreaccount1;"
    );
    let cs = ConnectionString::parse(&text).unwrap();
    assert_eq!(cs.table_endpoint, "http://127.0.0.1:41002/devstoreaccount1");
    assert_eq!(cs.blob_endpoint, "http://127.0.0.1:41000/devstoreaccount1");
    let b = AzureBackend::from_parsed(cs).unwrap();
    assert_eq!(b.table_endpoint(), "http://127.0.0.1:41002/devstoreaccount1");
    assert_eq!(
        entity_path("T", "it's", "a b+c%&ü"),
        "T(PartitionKey='it''s',RowKey='a%20b%2Bc%25%26%C3%BC')"
    );
    // The account may also come from a path-style TableEndpoint alone.
    let cs = ConnectionString::parse(&format!(
        "AccountKey={EMULATOR_ACCOUNT_KEY};TableEndpoint=http://127.0.0.1:1/devstoreaccount1"
    ))
    .unwrap();
    assert_eq!(cs.account_name, "devstoreaccount1");
}

#[test]
fn connection_string_errors_name_the_bad_part() {
    let err = |s: &str| match ConnectionString::parse(s) {
        Err(Error::Config { message: m, .. }) => m,
        other => panic!("{s}: expected a config error, got {other:?}"),
    };
    assert!(err("AccountName=a;AccountKey=not base64!").contains("AccountKey"));
    assert!(err("AccountName=a").contains("AccountKey"));
    assert!(err("AccountKey=bXlrZXk=").contains("AccountName"));
    assert!(err("AccountName=a;AccountKey=bXlrZXk=;Bogus=1").contains("Bogus"));
    assert!(err("AccountName=a;AccountKey=bXlrZXk=;JustText").contains("JustText"));
    assert!(err("AccountName=a;AccountKey=bXlrZXk=;TableEndpoint=ftp://x").contains("TableEndpoint"));
    assert!(err("AccountName=a;AccountKey=bXlrZXk=;TableEndpoint=not a url").contains("TableEndpoint"));
    assert!(
        err("AccountName=a;AccountKey=bXlrZXk=;DefaultEndpointsProtocol=gopher").contains("DefaultEndpointsProtocol")
    );
    assert!(err("UseDevelopmentStorage=maybe").contains("UseDevelopmentStorage"));
    assert!(err("AccountName=My_Acct;AccountKey=bXlrZXk=").contains("AccountName"));
    assert!(err("AccountName=a;AccountName=b;AccountKey=bXlrZXk=").contains("AccountName"));
    assert!(matches!(crate::Tables::connect("nonsense"), Err(Error::Config { .. })));
    assert!(matches!(
        AzureBackend::from_account("http://127.0.0.1:1/devstoreaccount1", "devstoreaccount1", "%%%"),
        Err(Error::Config { .. })
    ));
}

#[test]
fn credentials_are_not_printed() {
    let b = AzureBackend::from_connection_string("UseDevelopmentStorage=true").unwrap();
    let cs = ConnectionString::parse("UseDevelopmentStorage=true").unwrap();
    for text in [format!("{b:?}"), format!("{cs:?}")] {
        assert!(!text.contains(EMULATOR_ACCOUNT_KEY), "{text}");
    }
}

#[test]
fn etag_timestamps_are_read() {
    let etag = ETag::new("W/\"datetime'2017-01-05T03%3A25%3A25.9422152Z'\"");
    assert_eq!(
        timestamp_from_etag(&etag).map(|t| t.to_string()).as_deref(),
        Some("2017-01-05T03:25:25.9422152Z")
    );
    assert_eq!(timestamp_from_etag(&ETag::new("\"0x8D72069A295B958\"")), None);
}

#[test]
fn error_bodies_are_read_in_every_form() {
    use super::http::error_from_body;
    let json = br#"{"odata.error":{"code":"EntityAlreadyExists","message":{"lang":"en-US","value":"The specified entity already exists."}}}"#;
    assert_eq!(
        error_from_body(json),
        (
            Some("EntityAlreadyExists".into()),
            Some("The specified entity already exists.".into())
        )
    );
    let storage_xml = b"<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>AuthorizationFailure</Code><Message>Server failed to authenticate the request.</Message></Error>";
    assert_eq!(
        error_from_body(storage_xml),
        (
            Some("AuthorizationFailure".into()),
            Some("Server failed to authenticate the request.".into())
        )
    );
    let odata_xml = b"<?xml version=\"1.0\"?><error xmlns=\"http://schemas.microsoft.com/ado/2007/08/dataservices/metadata\"><code>ResourceNotFound</code><message xml:lang=\"en-US\">The specified resource does not exist.</message></error>";
    assert_eq!(
        error_from_body(odata_xml),
        (
            Some("ResourceNotFound".into()),
            Some("The specified resource does not exist.".into())
        )
    );
    assert_eq!(error_from_body(b""), (None, None));
    // Without a body the code falls back to nothing and the message to the reason phrase.
    let failure = super::http::ServiceFailure::from_status(404, b"");
    assert_eq!((failure.code.as_str(), failure.message.as_str()), ("", "Not Found"));
}

// ---------------------------------------------------------------------------
// Always run: retries, against a loopback server that answers from a script.

/// The `x-ms-request-id` of every answer of [`scripted_server`].
pub(super) const SCRIPTED_REQUEST_ID: &str = "0f8fad5b-d9cb-469f-a165-70867728950e";

/// Serves one canned answer per connection, in order (the last one repeats),
/// and counts the requests.
pub(super) fn scripted_server(answers: Vec<(u16, &'static str, &'static str)>) -> (String, Arc<AtomicUsize>) {
    scripted_server_with(
        answers
            .into_iter()
            .map(|(status, code, body)| (status, code, body, ""))
            .collect(),
    )
}

/// [`scripted_server`] with extra header lines in each answer (`"name: value\r\n"` each).
pub(super) fn scripted_server_with(
    answers: Vec<(u16, &'static str, &'static str, &'static str)>,
) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}/devstoreaccount1", listener.local_addr().unwrap());
    let count = Arc::new(AtomicUsize::new(0));
    let counter = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(20) {
            let Ok(mut stream) = stream else { return };
            let n = counter.fetch_add(1, Ordering::SeqCst);
            let (status, code, body, extra) = answers[n.min(answers.len() - 1)];
            // Read the request head and the body its Content-Length announces.
            let mut buf = [0u8; 4096];
            let mut seen = Vec::new();
            let mut wanted = None;
            loop {
                if wanted.is_none() {
                    if let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&seen[..end]).to_ascii_lowercase();
                        let length = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        wanted = Some(end + 4 + length);
                    }
                }
                if wanted.is_some_and(|w| seen.len() >= w) {
                    break;
                }
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(k) => seen.extend_from_slice(&buf[..k]),
                }
            }
            let mut head = format!(
                "HTTP/1.1 {status} X\r\nConnection: close\r\nContent-Length: {}\r\nx-ms-request-id: {SCRIPTED_REQUEST_ID}\r\n",
                body.len()
            );
            if !code.is_empty() {
                head.push_str(&format!(
                    "x-ms-error-code: {code}\r\nContent-Type: application/json\r\n"
                ));
            } else {
                head.push_str("Content-Type: application/json;odata=fullmetadata\r\nETag: W/\"datetime'2024-01-01T00%3A00%3A00Z'\"\r\nx-ms-version: 2022-11-02\r\nServer: scripted\r\nDate: Mon, 01 Jan 2024 00:00:00 GMT\r\n");
            }
            head.push_str(extra);
            head.push_str("\r\n");
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
        }
    });
    (endpoint, count)
}

pub(super) fn backend_at(endpoint: &str) -> AzureBackend {
    AzureBackend::from_account(endpoint, EMULATOR_ACCOUNT, EMULATOR_ACCOUNT_KEY).unwrap()
}

const BUSY: (u16, &str, &str) = (
    503,
    "ServerBusy",
    r#"{"odata.error":{"code":"ServerBusy","message":{"lang":"en-US","value":"The server is busy."}}}"#,
);

#[tokio::test]
async fn an_answer_that_cannot_be_read_is_a_malformed_response() {
    let (endpoint, _) = scripted_server(vec![(200, "", "{not json")]);
    let err = backend_at(&endpoint).get("T", "p", "r").await.unwrap_err();
    assert!(matches!(err, Error::MalformedResponse { .. }), "{err}");
    assert_eq!(err.kind(), crate::ErrorKind::MalformedResponse);
    let bad_date =
        r#"{"odata.metadata":"m","PartitionKey":"p","RowKey":"r","Timestamp":"2024-01-01T00:00:00+99999999999:00"}"#;
    let (endpoint, _) = scripted_server(vec![(200, "", bad_date)]);
    let err = backend_at(&endpoint).get("T", "p", "r").await.unwrap_err();
    assert!(matches!(err, Error::MalformedResponse { .. }), "{err}");
    assert!(err.to_string().contains("Timestamp"), "{err}");
}

#[tokio::test]
async fn transient_failures_are_retried_then_succeed() {
    let entity = r#"{"odata.metadata":"m","PartitionKey":"p","RowKey":"r","Timestamp":"2024-01-01T00:00:00Z","N@odata.type":"Edm.Int64","N":"7"}"#;
    let (endpoint, count) = scripted_server(vec![
        BUSY,
        (
            500,
            "OperationTimedOut",
            r#"{"odata.error":{"code":"OperationTimedOut","message":{"lang":"en-US","value":"Operation could not be completed within the specified time."}}}"#,
        ),
        (200, "", entity),
    ]);
    let row = backend_at(&endpoint).get("T", "p", "r").await.unwrap().unwrap();
    assert_eq!(count.load(Ordering::SeqCst), 3);
    assert_eq!(row.get("N"), Some(&Value::Int64(7)));
    assert!(row.etag.is_some() && row.timestamp.is_some());
}

#[tokio::test]
async fn retries_are_bounded_and_report_the_service_error() {
    let (endpoint, count) = scripted_server(vec![BUSY]);
    let started = Instant::now();
    let result = backend_at(&endpoint).get("T", "p", "r").await;
    assert_eq!(count.load(Ordering::SeqCst), 4, "one attempt and three retries");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    match result {
        Err(Error::Service {
            status,
            code,
            message,
            request_id,
            ..
        }) => {
            assert_eq!((status, code.as_str()), (503, "ServerBusy"));
            assert_eq!(message, "The server is busy.");
            assert_eq!(request_id.as_deref(), Some(SCRIPTED_REQUEST_ID), "the last answer's id");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn refusals_are_not_retried() {
    let (endpoint, count) = scripted_server(vec![(
        409,
        "EntityAlreadyExists",
        r#"{"odata.error":{"code":"EntityAlreadyExists","message":{"lang":"en-US","value":"The specified entity already exists."}}}"#,
    )]);
    let result = backend_at(&endpoint).execute("T", insert(&Row::new("p", "r"))).await;
    assert_eq!(service_code(&result), Some((409, "EntityAlreadyExists".into())));
    assert_eq!(count.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn an_unreachable_endpoint_fails_fast_as_transport() {
    // A loopback port with nothing listening.
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let b = backend_at(&format!("http://127.0.0.1:{port}/devstoreaccount1"));
    let started = Instant::now();
    let result = b.get("T", "p", "r").await;
    assert!(matches!(result, Err(Error::Transport { .. })), "{result:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
}

// ---------------------------------------------------------------------------
// Against Azurite / Azure.

#[tokio::test]
async fn tables_are_created_if_absent_and_deleted() {
    let Some(b) = live() else { return };
    let t = table_name("UtCreate");
    b.create_table(&t).await.unwrap();
    b.create_table(&t).await.unwrap();
    // Concurrent creators all succeed.
    let t2 = table_name("UtRace");
    let results = futures::future::join_all((0..4).map(|_| b.create_table(&t2))).await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    b.delete_table(&t).await.unwrap();
    b.delete_table(&t2).await.unwrap();
    let again = b.delete_table(&t).await;
    assert_eq!(service_code(&again).map(|(s, _)| s), Some(404), "{again:?}");
}

#[tokio::test]
async fn every_type_round_trips_with_etag_and_timestamp() {
    let Some(b) = live() else { return };
    let t = table_name("UtTypes");
    b.create_table(&t).await.unwrap();
    let row = typed_row("p", "r");
    let written = b.execute(&t, insert(&row)).await.unwrap();
    assert!(written.etag.is_some() && written.timestamp.is_some(), "{written:?}");

    let got = b.get(&t, "p", "r").await.unwrap().expect("stored");
    assert_eq!(
        got.properties, row.properties,
        "get keeps every type (Int64 stays Int64, Double stays Double)"
    );
    assert_eq!(got.etag, written.etag);
    assert!(got.timestamp.is_some());

    let page = b.query(&t, &QueryRequest::default(), None).await.unwrap();
    assert_eq!(page.rows.len(), 1);
    assert_eq!(page.rows[0].properties, row.properties, "query keeps every type");
    assert_eq!(page.rows[0].etag, written.etag);
    assert!(page.rows[0].timestamp.is_some());
    b.delete_table(&t).await.unwrap();
}

#[tokio::test]
async fn writes_answer_with_the_service_codes() {
    let Some(b) = live() else { return };
    let t = table_name("UtCodes");
    b.create_table(&t).await.unwrap();
    let row = Row::new("p", "r")
        .with("A", Value::Int32(1))
        .with("B", Value::String("b".into()));
    let first = b.execute(&t, insert(&row)).await.unwrap();
    let first_etag = first.etag.clone().unwrap();

    let dup = b.execute(&t, insert(&row)).await;
    assert_eq!(service_code(&dup), Some((409, "EntityAlreadyExists".into())));

    // Replace on the current ETag, then a stale ETag fails with 412.
    let replaced = b
        .execute(
            &t,
            WriteOp::Update {
                row: Row::new("p", "r").with("A", Value::Int32(2)),
                mode: UpdateMode::Replace,
                condition: IfMatch::ETag(first_etag.clone()),
            },
        )
        .await
        .unwrap();
    assert_ne!(replaced.etag.as_ref(), Some(&first_etag));
    let stale = b
        .execute(
            &t,
            WriteOp::Update {
                row: row.clone(),
                mode: UpdateMode::Replace,
                condition: IfMatch::ETag(first_etag.clone()),
            },
        )
        .await;
    assert_eq!(service_code(&stale), Some((412, "UpdateConditionNotSatisfied".into())));
    let got = b.get(&t, "p", "r").await.unwrap().unwrap();
    assert_eq!(got.get("B"), None, "replace removed B");
    assert_eq!(got.etag, replaced.etag);

    // Merge keeps what it does not send.
    b.execute(
        &t,
        WriteOp::Update {
            row: Row::new("p", "r").with("C", Value::Bool(false)),
            mode: UpdateMode::Merge,
            condition: IfMatch::Any,
        },
    )
    .await
    .unwrap();
    let got = b.get(&t, "p", "r").await.unwrap().unwrap();
    assert_eq!(got.get("A"), Some(&Value::Int32(2)));
    assert_eq!(got.get("C"), Some(&Value::Bool(false)));

    // Upserts insert or replace / merge, unconditionally.
    b.execute(
        &t,
        WriteOp::Upsert {
            row: Row::new("p", "new").with("X", Value::Int64(1)),
            mode: UpdateMode::Merge,
        },
    )
    .await
    .unwrap();
    b.execute(
        &t,
        WriteOp::Upsert {
            row: Row::new("p", "r").with("D", Value::Double(0.5)),
            mode: UpdateMode::Replace,
        },
    )
    .await
    .unwrap();
    let got = b.get(&t, "p", "r").await.unwrap().unwrap();
    assert_eq!(got.properties.len(), 1);
    assert_eq!(got.get("D"), Some(&Value::Double(0.5)));
    assert_eq!(
        b.get(&t, "p", "new").await.unwrap().unwrap().get("X"),
        Some(&Value::Int64(1))
    );

    // Missing rows: update 404, delete 404, get None.
    let missing = b
        .execute(
            &t,
            WriteOp::Update {
                row: Row::new("p", "absent"),
                mode: UpdateMode::Merge,
                condition: IfMatch::Any,
            },
        )
        .await;
    assert_eq!(service_code(&missing), Some((404, "ResourceNotFound".into())));
    let del_stale = b
        .execute(
            &t,
            WriteOp::Delete {
                partition_key: "p".into(),
                row_key: "r".into(),
                condition: IfMatch::ETag(first_etag),
            },
        )
        .await;
    assert_eq!(
        service_code(&del_stale),
        Some((412, "UpdateConditionNotSatisfied".into()))
    );
    let del = b
        .execute(
            &t,
            WriteOp::Delete {
                partition_key: "p".into(),
                row_key: "r".into(),
                condition: IfMatch::Any,
            },
        )
        .await
        .unwrap();
    assert_eq!(del.etag, None);
    assert!(b.get(&t, "p", "r").await.unwrap().is_none());
    let del_missing = b
        .execute(
            &t,
            WriteOp::Delete {
                partition_key: "p".into(),
                row_key: "r".into(),
                condition: IfMatch::Any,
            },
        )
        .await;
    assert_eq!(service_code(&del_missing), Some((404, "ResourceNotFound".into())));
    b.delete_table(&t).await.unwrap();
}

const AWKWARD: &[&str] = &[
    "it's",
    "'",
    "''",
    "a''b'",
    "100%",
    "%27",
    "a+b",
    "a b",
    " lead and trail ",
    "a&b=c",
    "ünïcødé ☃ 𝄞",
    "(x,y)",
    "$@!*;:,",
    "~tilde.dot-dash_",
    "[a]|b^c{d}\"<>`=",
];

#[tokio::test]
async fn awkward_keys_address_the_right_row_in_single_operations() {
    let Some(b) = live() else { return };
    let t = table_name("UtKeys");
    b.create_table(&t).await.unwrap();
    // A decoy for every prefix the broken escaping would address instead.
    for decoy in ["it", "a", "100", ""] {
        b.execute(&t, insert(&Row::new(decoy, decoy).with("Decoy", Value::Bool(true))))
            .await
            .unwrap();
    }
    for key in AWKWARD {
        let row = Row::new(*key, *key).with("Key", Value::String((*key).into()));
        b.execute(&t, insert(&row))
            .await
            .unwrap_or_else(|e| panic!("insert {key:?}: {e}"));
        let got = b
            .get(&t, key, key)
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("get {key:?}"));
        assert_eq!((got.partition_key.as_str(), got.row_key.as_str()), (*key, *key));
        assert_eq!(got.get("Key"), Some(&Value::String((*key).into())));
        let updated = b
            .execute(
                &t,
                WriteOp::Update {
                    row: Row::new(*key, *key).with("Updated", Value::Bool(true)),
                    mode: UpdateMode::Merge,
                    condition: IfMatch::ETag(got.etag.clone().unwrap()),
                },
            )
            .await
            .unwrap_or_else(|e| panic!("update {key:?}: {e}"));
        let got = b.get(&t, key, key).await.unwrap().unwrap();
        assert_eq!(got.get("Updated"), Some(&Value::Bool(true)), "{key:?}");
        assert_eq!(got.etag, updated.etag);
        // The query filter escapes the key too.
        let page = b
            .query(
                &t,
                &QueryRequest {
                    filter: Some(Filter::eq("PartitionKey", Value::String((*key).into()))),
                    ..QueryRequest::default()
                },
                None,
            )
            .await
            .unwrap();
        assert_eq!(page.rows.len(), 1, "{key:?}");
        assert_eq!(page.rows[0].row_key, *key);
        b.execute(
            &t,
            WriteOp::Delete {
                partition_key: (*key).into(),
                row_key: (*key).into(),
                condition: IfMatch::ETag(updated.etag.unwrap()),
            },
        )
        .await
        .unwrap_or_else(|e| panic!("delete {key:?}: {e}"));
        assert!(b.get(&t, key, key).await.unwrap().is_none(), "{key:?}");
    }
    // The decoys were never touched.
    let page = b.query(&t, &QueryRequest::default(), None).await.unwrap();
    assert_eq!(page.rows.len(), 4);
    assert!(page.rows.iter().all(|r| r.properties.len() == 1));
    b.delete_table(&t).await.unwrap();
}

#[tokio::test]
async fn awkward_keys_address_the_right_row_in_transactions() {
    let Some(b) = live() else { return };
    let t = table_name("UtTxKeys");
    b.create_table(&t).await.unwrap();
    let pk = "it's a 100% + & ☃";
    b.execute(&t, insert(&Row::new("it", "decoy"))).await.unwrap();
    let inserts: Vec<WriteOp> = AWKWARD
        .iter()
        .map(|rk| insert(&Row::new(pk, *rk).with("N", Value::Int64(1))))
        .collect();
    let outcomes = b.transaction(&t, inserts).await.unwrap();
    assert_eq!(outcomes.len(), AWKWARD.len());
    assert!(outcomes.iter().all(|o| o.etag.is_some() && o.timestamp.is_some()));
    for (rk, o) in AWKWARD.iter().zip(&outcomes) {
        let got = b.get(&t, pk, rk).await.unwrap().unwrap_or_else(|| panic!("{rk:?}"));
        assert_eq!(got.etag, o.etag, "{rk:?}");
    }
    // Update and delete through a transaction, conditioned on each row's ETag.
    let ops: Vec<WriteOp> = AWKWARD
        .iter()
        .zip(&outcomes)
        .enumerate()
        .map(|(i, (rk, o))| {
            if i % 2 == 0 {
                WriteOp::Update {
                    row: Row::new(pk, *rk).with("N", Value::Int64(2)),
                    mode: UpdateMode::Replace,
                    condition: IfMatch::ETag(o.etag.clone().unwrap()),
                }
            } else {
                WriteOp::Delete {
                    partition_key: pk.into(),
                    row_key: (*rk).into(),
                    condition: IfMatch::ETag(o.etag.clone().unwrap()),
                }
            }
        })
        .collect();
    b.transaction(&t, ops).await.unwrap();
    for (i, rk) in AWKWARD.iter().enumerate() {
        let got = b.get(&t, pk, rk).await.unwrap();
        if i % 2 == 0 {
            assert_eq!(got.unwrap().get("N"), Some(&Value::Int64(2)), "{rk:?}");
        } else {
            assert!(got.is_none(), "{rk:?}");
        }
    }
    assert!(b.get(&t, "it", "decoy").await.unwrap().is_some());
    b.delete_table(&t).await.unwrap();
}

#[tokio::test]
async fn a_failed_transaction_is_an_error_with_the_failing_index() {
    let Some(b) = live() else { return };
    let t = table_name("UtTxFail");
    b.create_table(&t).await.unwrap();
    let existing = Row::new("p", "b").with("V", Value::Int32(1));
    let first = b.execute(&t, insert(&existing)).await.unwrap();

    // Operation 1 (0-based) inserts a row that exists.
    let result = b
        .transaction(
            &t,
            vec![
                insert(&Row::new("p", "a")),
                insert(&existing),
                insert(&Row::new("p", "c")),
            ],
        )
        .await;
    match &result {
        Err(Error::Transaction { index, source }) => {
            assert_eq!(*index, 1, "{result:?}");
            assert_eq!(source.service_code(), Some((409, "EntityAlreadyExists")), "{result:?}");
        }
        other => panic!("expected a transaction error, got {other:?}"),
    }
    // Nothing took effect.
    assert!(b.get(&t, "p", "a").await.unwrap().is_none());
    assert!(b.get(&t, "p", "c").await.unwrap().is_none());

    // A stale ETag at index 2 fails with 412.
    b.execute(
        &t,
        WriteOp::Update {
            row: existing.clone().with("V", Value::Int32(2)),
            mode: UpdateMode::Replace,
            condition: IfMatch::Any,
        },
    )
    .await
    .unwrap();
    let result = b
        .transaction(
            &t,
            vec![
                insert(&Row::new("p", "x")),
                WriteOp::Upsert {
                    row: Row::new("p", "y"),
                    mode: UpdateMode::Merge,
                },
                WriteOp::Update {
                    row: existing.clone(),
                    mode: UpdateMode::Merge,
                    condition: IfMatch::ETag(first.etag.clone().unwrap()),
                },
            ],
        )
        .await;
    match &result {
        Err(Error::Transaction { index, source }) => {
            assert_eq!(*index, 2, "{result:?}");
            assert_eq!(source.service_code().map(|(s, _)| s), Some(412), "{result:?}");
        }
        other => panic!("expected a transaction error, got {other:?}"),
    }
    assert!(b.get(&t, "p", "x").await.unwrap().is_none());
    // A delete of a missing row at index 0 fails with 404.
    let result = b
        .transaction(
            &t,
            vec![WriteOp::Delete {
                partition_key: "p".into(),
                row_key: "absent".into(),
                condition: IfMatch::Any,
            }],
        )
        .await;
    match &result {
        Err(Error::Transaction { index: 0, source }) => {
            assert_eq!(source.service_code().map(|(s, _)| s), Some(404), "{result:?}");
        }
        other => panic!("expected a transaction error, got {other:?}"),
    }
    b.delete_table(&t).await.unwrap();
}

#[tokio::test]
async fn queries_page_filter_and_select() {
    let Some(b) = live() else { return };
    let t = table_name("UtQuery");
    b.create_table(&t).await.unwrap();
    let mut expected = Vec::new();
    for p in ["a", "b", "c"] {
        let ops: Vec<WriteOp> = (0..9)
            .map(|i| {
                let row = Row::new(p, format!("{i:02}"))
                    .with("I", Value::Int64(i))
                    .with("Half", Value::Double(i as f64 / 2.0))
                    .with("Other", Value::String("x".into()));
                expected.push((p.to_owned(), format!("{i:02}")));
                insert(&row)
            })
            .collect();
        b.transaction(&t, ops).await.unwrap();
    }
    // Paging with $top: every row once, in key order, through page tokens.
    let request = QueryRequest {
        top: Some(4),
        ..QueryRequest::default()
    };
    let mut seen = Vec::new();
    let mut token = None;
    let mut pages = 0;
    loop {
        let page = b.query(&t, &request, token.as_ref()).await.unwrap();
        assert!(page.rows.len() <= 4);
        pages += 1;
        seen.extend(page.rows.iter().map(|r| (r.partition_key.clone(), r.row_key.clone())));
        match page.next {
            Some(c) => token = Some(c),
            None => break,
        }
        assert!(pages < 50, "runaway paging");
    }
    assert_eq!(seen, expected);
    assert!(pages >= 7);

    // Filter with typed literals, and a projection.
    let request = QueryRequest {
        filter: Some(
            Filter::eq("PartitionKey", Value::String("b".into()))
                .and(Filter::cmp("I", CmpOp::Ge, Value::Int64(6)))
                .and(Filter::cmp("Half", CmpOp::Lt, Value::Double(4.0))),
        ),
        select: Some(vec!["I".into()]),
        top: None,
    };
    let page = b.query(&t, &request, None).await.unwrap();
    let keys: Vec<&str> = page.rows.iter().map(|r| r.row_key.as_str()).collect();
    assert_eq!(keys, ["06", "07"]);
    for r in &page.rows {
        assert_eq!(r.partition_key, "b");
        assert!(r.etag.is_some() && r.timestamp.is_some());
        assert_eq!(r.properties.keys().collect::<Vec<_>>(), ["I"], "{r:?}");
        assert!(matches!(r.get("I"), Some(Value::Int64(_))));
    }
    b.delete_table(&t).await.unwrap();
}

#[tokio::test]
async fn a_missing_table_is_reported() {
    let Some(b) = live() else { return };
    let t = table_name("UtMissing");
    let result = b.execute(&t, insert(&Row::new("p", "r"))).await;
    assert_eq!(service_code(&result).map(|(s, _)| s), Some(404), "{result:?}");
    let result = b.query(&t, &QueryRequest::default(), None).await;
    assert_eq!(service_code(&result).map(|(s, _)| s), Some(404), "{result:?}");
}

#[tokio::test]
async fn tables_connect_reaches_the_service() {
    let Some(_) = live() else { return };
    let db = crate::Tables::connect(&std::env::var(ENV).unwrap()).unwrap();
    let t = table_name("UtConnect");
    db.backend().create_table(&t).await.unwrap();
    db.backend().execute(&t, insert(&Row::new("p", "r"))).await.unwrap();
    assert!(db.backend().get(&t, "p", "r").await.unwrap().is_some());
    db.backend().delete_table(&t).await.unwrap();
}
