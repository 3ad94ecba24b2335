//! Offline tests (connection strings, the crate's URL building, and the
//! HTTP policy against a scripted loopback server) always run; the rest
//! talks to Azurite (or Azure) when `UNIFIED_TABLES_TEST_CONNECTION` holds a
//! connection string, and prints one line and returns when it does not.
//! The shared blob conformance scenarios are in `tests/src/blob_scenarios.rs`.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::backend::blob::BlobCondition;
use hyper::header::{CONTENT_LENGTH, CONTENT_RANGE, CONTENT_TYPE};

use super::*;
use crate::backend::azure::blob_headers::total_from_content_range;
use crate::backend::azure::{EMULATOR_ACCOUNT, EMULATOR_ACCOUNT_KEY};

fn live() -> Option<AzureBlobBackend> {
    crate::backend::azure::test_connection()
        .map(|cs| AzureBlobBackend::from_connection_string(&cs).expect("valid test connection"))
}

/// A fresh container on the live service.
async fn live_container(b: &AzureBlobBackend, hint: &str) -> String {
    let name = format!("{hint}-{:012x}", rand::random::<u64>() & 0xffff_ffff_ffff);
    b.create_container(&name).await.unwrap();
    name
}

fn code<T: fmt::Debug>(result: Result<T>) -> (u16, String) {
    match result {
        Err(Error::Service { status, code, .. }) => (status, code),
        other => panic!("expected a service error, got {other:?}"),
    }
}

// --- always run: configuration and the crate's addressing -----------------

#[test]
fn the_blob_endpoint_comes_from_the_connection_string() {
    let b = AzureBlobBackend::from_connection_string("UseDevelopmentStorage=true").unwrap();
    assert_eq!(b.blob_endpoint(), "http://127.0.0.1:10000/devstoreaccount1");
    assert_eq!(b.account_name(), "devstoreaccount1");
    let b = AzureBlobBackend::from_connection_string(&format!(
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={EMULATOR_ACCOUNT_KEY};\
         TableEndpoint=http://127.0.0.1:41002/devstoreaccount1;BlobEndpoint=http://127.0.0.1:41000/devstoreaccount1/"
    ))
    .unwrap();
    assert_eq!(b.blob_endpoint(), "http://127.0.0.1:41000/devstoreaccount1");
    let b = AzureBlobBackend::from_connection_string("AccountName=acct;AccountKey=bXlrZXk=").unwrap();
    assert_eq!(b.blob_endpoint(), "https://acct.blob.core.windows.net");
    // Only a table endpoint: nowhere to send blobs.
    let only_tables = format!("AccountKey={EMULATOR_ACCOUNT_KEY};TableEndpoint=http://127.0.0.1:1/devstoreaccount1");
    assert!(matches!(
        AzureBlobBackend::from_connection_string(&only_tables),
        Err(Error::Config { .. })
    ));
    assert!(matches!(
        AzureBlobBackend::from_connection_string("AccountName=a;AccountKey=not base64!"),
        Err(Error::Config { .. })
    ));
}

#[test]
fn names_are_folded_then_every_segment_escaped() {
    // Folded first, the name reaches the service as the service would store it.
    let folded = BlobName::parse("a/../b").unwrap().into_string();
    assert_eq!(blob_path("c1c", &folded), "/c1c/b");
    assert_eq!(blob_path("c1c", "a/b c"), "/c1c/a/b%20c");
    // Characters that mean something in a URL are escaped.
    assert_eq!(blob_path("c1c", "q?x#y%z"), "/c1c/q%3Fx%23y%25z");
}

#[test]
fn properties_are_read_from_the_headers() {
    let mut headers = HeaderMap::new();
    headers.insert(ETAG, HeaderValue::from_static("\"0x8D72069A295B958\""));
    headers.insert(LAST_MODIFIED, HeaderValue::from_static("Tue, 05 Mar 2024 10:11:12 GMT"));
    headers.insert(CONTENT_LENGTH, HeaderValue::from_static("3"));
    headers.insert(CONTENT_RANGE, HeaderValue::from_static("bytes 2-4/100"));
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    let props = properties_from_headers(&headers).unwrap();
    assert_eq!(props.etag, "\"0x8D72069A295B958\"");
    assert_eq!(props.last_modified, DateTime::parse("2024-03-05T10:11:12Z").unwrap());
    assert_eq!(props.length, 100, "the whole blob's length, from Content-Range");
    assert_eq!(props.content_type.as_deref(), Some("text/plain"));
    assert_eq!(props.content_encoding, None);
    assert_eq!(quoted("0x8D72069A295B958"), "\"0x8D72069A295B958\"");
    assert_eq!(total_from_content_range("bytes 0-0/1"), Some(1));
}

// --- always run: the HTTP policy, against a scripted loopback server --------

/// One canned answer: status line, extra headers, body.
pub(in crate::backend::azure) type Answer = (&'static str, Vec<(&'static str, String)>, Vec<u8>);

/// Serves one answer per connection, in order (the last one repeats), and
/// keeps the request heads it received.
pub(in crate::backend::azure) fn scripted_server(answers: Vec<Answer>) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}/devstoreaccount1", listener.local_addr().unwrap());
    let heads = Arc::new(Mutex::new(Vec::new()));
    let seen_heads = heads.clone();
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().take(20).enumerate() {
            let Ok(mut stream) = stream else { return };
            let (status, headers, body) = &answers[n.min(answers.len() - 1)];
            let mut buf = [0u8; 4096];
            let mut seen = Vec::new();
            while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(k) => seen.extend_from_slice(&buf[..k]),
                }
            }
            seen_heads
                .lock()
                .unwrap()
                .push(String::from_utf8_lossy(&seen).to_lowercase());
            let mut head = format!(
                "HTTP/1.1 {status}\r\nConnection: close\r\nContent-Length: {}\r\nDate: Tue, 05 Mar 2024 10:11:12 GMT\r\nx-ms-request-id: 0f8fad5b-d9cb-469f-a165-70867728950e\r\nServer: scripted\r\n",
                body.len()
            );
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body);
        }
    });
    (endpoint, heads)
}

fn backend_at(endpoint: &str) -> AzureBlobBackend {
    AzureBlobBackend::from_account(endpoint, EMULATOR_ACCOUNT, EMULATOR_ACCOUNT_KEY).unwrap()
}

fn storage_error(status: &'static str, code: &'static str, message: &str) -> Answer {
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>{code}</Code><Message>{message}</Message></Error>"
    );
    (
        status,
        vec![
            ("x-ms-error-code", code.to_owned()),
            ("Content-Type", "application/xml".to_owned()),
        ],
        body.into_bytes(),
    )
}

pub(in crate::backend::azure) fn blob_answer(body: &[u8], extra: &[(&'static str, &str)]) -> Answer {
    let mut headers = vec![
        ("ETag", "\"0x8DC3D0F1A2B3C4D\"".to_owned()),
        ("Last-Modified", "Tue, 05 Mar 2024 10:11:10 GMT".to_owned()),
        ("x-ms-blob-type", "BlockBlob".to_owned()),
    ];
    headers.extend(extra.iter().map(|(n, v)| (*n, (*v).to_owned())));
    ("200 OK", headers, body.to_vec())
}

#[tokio::test]
async fn transient_failures_are_retried_and_now_reads_the_date_header() {
    let (endpoint, heads) = scripted_server(vec![
        storage_error("503 Server Busy", "ServerBusy", "The server is busy."),
        storage_error("500 Internal", "OperationTimedOut", "Operation could not be completed."),
        ("200 OK", Vec::new(), Vec::new()),
    ]);
    let now = backend_at(&endpoint).now().await.unwrap();
    assert_eq!(now, DateTime::parse("2024-03-05T10:11:12Z").unwrap());
    let heads = heads.lock().unwrap();
    assert_eq!(heads.len(), 3);
    assert!(
        heads[2].starts_with("head /devstoreaccount1?restype=account&comp=properties "),
        "{}",
        heads[2]
    );
}

#[tokio::test]
async fn retries_are_bounded_and_refusals_are_not_retried() {
    let (endpoint, heads) = scripted_server(vec![storage_error(
        "503 Server Busy",
        "ServerBusy",
        "The server is busy.",
    )]);
    let started = Instant::now();
    let result = backend_at(&endpoint).properties("c1c", "k").await;
    assert_eq!(code(result), (503, "ServerBusy".to_owned()));
    assert_eq!(heads.lock().unwrap().len(), 4, "one attempt and three retries");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());

    let (endpoint, heads) = scripted_server(vec![storage_error(
        "412 Precondition Failed",
        "ConditionNotMet",
        "The condition specified using HTTP conditional header(s) is not met.",
    )]);
    let options = PutOptions {
        condition: BlobCondition::IfMatch("\"0x1\"".into()),
        ..PutOptions::default()
    };
    let result = backend_at(&endpoint).put("c1c", "k", b"v".to_vec(), options).await;
    match result {
        Err(Error::Service {
            status, code, message, ..
        }) => {
            assert_eq!((status, code.as_str()), (412, "ConditionNotMet"));
            assert_eq!(
                message,
                "The condition specified using HTTP conditional header(s) is not met."
            );
        }
        other => panic!("{other:?}"),
    }
    let heads = heads.lock().unwrap();
    assert_eq!(heads.len(), 1);
    assert!(heads[0].contains("if-match: \"0x1\""), "{}", heads[0]);
}

#[tokio::test]
async fn a_whole_blob_read_sends_no_range_and_an_empty_blob_reads_empty() {
    let (endpoint, heads) = scripted_server(vec![blob_answer(b"", &[("Content-Type", "application/octet-stream")])]);
    let (props, bytes) = backend_at(&endpoint).get("c1c", "k", None).await.unwrap().unwrap();
    assert_eq!((props.length, bytes), (0, Vec::new()));
    let heads = heads.lock().unwrap();
    assert!(heads[0].starts_with("get /devstoreaccount1/c1c/k "), "{}", heads[0]);
    assert!(
        !heads[0].contains("range:"),
        "a whole-blob read must not send a range: {}",
        heads[0]
    );
}

#[tokio::test]
async fn a_range_past_the_end_reads_the_properties_and_no_bytes() {
    let (endpoint, heads) = scripted_server(vec![
        storage_error(
            "416 Range Not Satisfiable",
            "InvalidRange",
            "The range specified is invalid for the current size of the resource.",
        ),
        blob_answer(b"", &[]),
    ]);
    let (props, bytes) = backend_at(&endpoint)
        .get("c1c", "k", Some(5..9))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((props.etag.as_str(), bytes), ("\"0x8DC3D0F1A2B3C4D\"", Vec::new()));
    let heads = heads.lock().unwrap();
    assert!(heads[0].contains("x-ms-range: bytes=5-8"), "{}", heads[0]);
    assert!(heads[1].starts_with("head "), "{}", heads[1]);
}

#[tokio::test]
async fn content_encoding_is_not_applied_on_the_way_back() {
    // "hello" gzipped: reqwest must hand the bytes over as they came.
    let gzipped = [
        0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0xff, 0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0x86,
        0xa6, 0x10, 0x36, 0x05, 0x00, 0x00, 0x00,
    ];
    let (endpoint, heads) = scripted_server(vec![blob_answer(&gzipped, &[("Content-Encoding", "gzip")])]);
    let (props, bytes) = backend_at(&endpoint).get("c1c", "k", None).await.unwrap().unwrap();
    assert_eq!(bytes, gzipped);
    assert_eq!(props.content_encoding.as_deref(), Some("gzip"));
    assert_eq!(props.length, gzipped.len() as u64);
    assert!(!heads.lock().unwrap()[0].contains("accept-encoding: gzip"));
}

// --- live: Azurite or Azure -------------------------------------------------

#[tokio::test]
async fn live_an_empty_blob_reads_empty_whole_and_in_any_range() {
    let Some(b) = live() else { return };
    let c = live_container(&b, "empty").await;
    let stored = b.put(&c, "empty", Vec::new(), PutOptions::default()).await.unwrap();
    // Any range of an empty blob is answered 416 `InvalidRange`: whole reads
    // send no range; ranged reads fall back to the properties.
    for range in [None, Some(0..1), Some(0..0), Some(3..7)] {
        let (props, bytes) = b.get(&c, "empty", range.clone()).await.unwrap().unwrap();
        assert_eq!(
            (props.etag.as_str(), props.length, bytes),
            (stored.etag.as_str(), 0, Vec::new()),
            "{range:?}"
        );
    }
}

#[tokio::test]
async fn live_touch_keeps_bytes_content_headers_and_metadata() {
    let Some(b) = live() else { return };
    let c = live_container(&b, "touch").await;
    let options = PutOptions {
        content_type: Some("text/plain".into()),
        content_encoding: Some("identity".into()),
        condition: BlobCondition::None,
        ..PutOptions::default()
    };
    let stored = b.put(&c, "k", b"bytes".to_vec(), options).await.unwrap();
    let set_metadata = b
        .blob_request(Method::PUT, Resource::Blob, &c, "k")
        .unwrap()
        .query("comp", "metadata")
        .header(
            HeaderName::from_static("x-ms-meta-owner"),
            HeaderValue::from_static("tests"),
        );
    b.send(set_metadata).await.unwrap();
    let touched = b.touch(&c, "k").await.unwrap();
    assert_ne!(touched.etag, stored.etag);
    assert!(touched.last_modified >= stored.last_modified);
    let (props, headers) = b.head(&c, "k").await.unwrap().unwrap();
    assert_eq!(props, touched);
    assert_eq!(header(&headers, "x-ms-meta-owner"), Some("tests"));
    assert_eq!(b.get(&c, "k", None).await.unwrap().unwrap().1, b"bytes");
    assert_eq!(code(b.touch(&c, "missing").await), (404, "BlobNotFound".to_owned()));
}

#[tokio::test]
async fn live_now_is_the_service_clock_at_whole_seconds() {
    let Some(b) = live() else { return };
    let now = b.now().await.unwrap();
    assert_eq!(now.ticks() % 10_000_000, 0);
    let local = DateTime::now();
    // Shared Key requests only work within 15 minutes of the service clock.
    let skew = (now.unix_nanos() - local.unix_nanos()).abs();
    assert!(skew < 15 * 60 * 1_000_000_000, "service {now}, local {local}");
    let c = live_container(&b, "clock").await;
    let stored = b.put(&c, "k", b"v".to_vec(), PutOptions::default()).await.unwrap();
    let after = b.now().await.unwrap();
    assert!(stored.last_modified <= after, "{} > {after}", stored.last_modified);
}

#[tokio::test]
async fn live_listing_etags_are_quoted_like_the_etag_header() {
    let Some(b) = live() else { return };
    let c = live_container(&b, "etags").await;
    let stored = b.put(&c, "k", b"v".to_vec(), PutOptions::default()).await.unwrap();
    let listing = b.list(&c, "", None, None, 10).await.unwrap();
    assert_eq!(listing.items.len(), 1);
    assert_eq!(listing.items[0].properties, stored);
    assert_eq!(b.properties(&c, "k").await.unwrap(), Some(stored));
}
