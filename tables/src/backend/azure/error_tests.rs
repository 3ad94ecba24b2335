//! Errors keep their causes and no secret. Every error path that can carry
//! a URL (connection refused, a timeout, a TLS failure, garbage for an
//! answer, an answer that cannot be read) is taken with a SAS connection
//! against a loopback listener, and the error is printed every way (Display,
//! Debug, each source, anyhow's `{:#}` and `{:?}`): no SAS parameter's value
//! and no key appears, and each cause is printed once. Requests carry an
//! `x-ms-client-request-id`, and errors built from an answer keep its
//! `x-ms-request-id`. None needs Azurite.

use std::error::Error as _;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::*;
use crate::backend::blob::BlobBackend as _;
use crate::backend::retry::RetryPolicy;
use crate::backend::IfMatch;
use crate::ErrorKind;

const SECRET: &str = "SECRETSIG123";

/// An account SAS whose every value is recognisable.
fn sas() -> String {
    format!("sv=2020-08-04&ss=tb&srt=sco&sp=rwdlacu&se=2031-02-03T04%3A05%3A06Z&spr=https,http&sig={SECRET}%3D")
}

fn policy() -> RetryPolicy {
    RetryPolicy::builder()
        .attempts(1)
        .request_timeout(Duration::from_millis(300))
        .connect_timeout(Duration::from_millis(300))
        .build()
        .unwrap()
}

fn sas_connection(endpoint: &str) -> AzureConnection {
    AzureConnection::parse(&format!(
        "SharedAccessSignature={};TableEndpoint={endpoint};BlobEndpoint={endpoint}",
        sas()
    ))
    .unwrap()
    .with_retry(policy())
}

/// Everything an error prints: Display, Debug, each source's Display and
/// Debug, and anyhow's reports.
fn printed(err: Error) -> String {
    let mut all = vec![err.to_string(), format!("{err:?}")];
    let mut source = err.source();
    while let Some(s) = source {
        all.push(s.to_string());
        all.push(format!("{s:?}"));
        source = s.source();
    }
    let report = anyhow::Error::new(err);
    all.push(format!("{report:#}"));
    all.push(format!("{report:?}"));
    all.join("\n")
}

/// No value of the SAS and no key in `text`.
fn assert_clean(what: &str, text: &str) {
    for secret in [
        SECRET,
        "rwdlacu",
        "2031-02-03",
        "2020-08-04",
        "ss=tb",
        EMULATOR_ACCOUNT_KEY,
        "eyJhbGciOi",
    ] {
        assert!(!text.contains(secret), "{what}: `{secret}` leaked:\n{text}");
    }
    for (at, _) in text.match_indices("sig=") {
        let value = &text[at + 4..];
        assert!(
            value.starts_with("REDACTED") || value.starts_with('`'),
            "{what}: a signature leaked:\n{text}"
        );
    }
}

/// A loopback address with nothing listening.
fn refusing() -> String {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    format!("127.0.0.1:{port}")
}

/// Reads one request's head and the body its Content-Length announces.
fn read_request(stream: &mut TcpStream) -> String {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        if let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&seen[..end]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if seen.len() >= end + 4 + length {
                return head;
            }
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return String::from_utf8_lossy(&seen).to_ascii_lowercase(),
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
    }
}

/// A loopback listener that answers each connection with `answer` (raw
/// bytes, or nothing and the connection held open), recording the request
/// heads it read.
fn listener(answer: Option<&'static [u8]>) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let heads = Arc::new(Mutex::new(Vec::new()));
    let seen = heads.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().take(20) {
            let Ok(mut stream) = stream else { return };
            match answer {
                Some(bytes) => {
                    // One read: a TLS client hello has no blank line to wait for.
                    let mut buf = [0u8; 4096];
                    let n = stream.read(&mut buf).unwrap_or(0);
                    seen.lock()
                        .unwrap()
                        .push(String::from_utf8_lossy(&buf[..n]).to_ascii_lowercase());
                    let _ = stream.write_all(bytes);
                }
                None => held.push(stream),
            }
        }
    });
    (address, heads)
}

/// An HTTP answer with a request id of its own, from a script (the last repeats).
fn scripted(answers: Vec<(u16, &'static str, String)>) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}/devstoreaccount1", listener.local_addr().unwrap());
    let heads = Arc::new(Mutex::new(Vec::new()));
    let seen = heads.clone();
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().take(20).enumerate() {
            let Ok(mut stream) = stream else { return };
            seen.lock().unwrap().push(read_request(&mut stream));
            let (status, code, body) = &answers[n.min(answers.len() - 1)];
            let mut head = format!(
                "HTTP/1.1 {status} X\r\nConnection: close\r\nContent-Length: {}\r\nx-ms-request-id: answer-{n}\r\nDate: Mon, 01 Jan 2024 00:00:00 GMT\r\n",
                body.len()
            );
            if !code.is_empty() {
                head.push_str(&format!(
                    "x-ms-error-code: {code}\r\nContent-Type: application/json\r\n"
                ));
            } else {
                head.push_str("Content-Type: application/json;odata=fullmetadata\r\nETag: W/\"datetime'2024-01-01T00%3A00%3A00Z'\"\r\n");
            }
            head.push_str("\r\n");
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
        }
    });
    (endpoint, heads)
}

fn odata_error(code: &str) -> String {
    format!(r#"{{"odata.error":{{"code":"{code}","message":{{"lang":"en-US","value":"{code}."}}}}}}"#)
}

/// The value of `header` in a recorded (lower-cased) request head.
fn header<'a>(head: &'a str, header: &str) -> Option<&'a str> {
    head.lines()
        .find_map(|l| l.strip_prefix(header)?.strip_prefix(':'))
        .map(str::trim)
}

#[tokio::test]
async fn no_error_path_with_a_sas_prints_the_signature() {
    let mut errors = Vec::new();

    // Connection refused, on the table and the blob side.
    let refused = format!("http://{}/devstoreaccount1", refusing());
    let c = sas_connection(&refused);
    let err = c.table_backend().unwrap().get("T", "p", "r").await.unwrap_err();
    assert!(matches!(err, Error::Transport { .. }), "{err:?}");
    let text = printed(err);
    assert!(
        text.contains("/devstoreaccount1/T(") && !text.contains("sig="),
        "the URL is kept, without the signature's parameters:\n{text}"
    );
    errors.push(("refused (table)", text));
    let err = c.blob_backend().unwrap().get("docs", "b", None).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err:?}");
    errors.push(("refused (blob)", printed(err)));

    // A listener that never answers: the request timeout.
    let (silent, _) = listener(None);
    let err = sas_connection(&format!("http://{silent}/devstoreaccount1"))
        .table_backend()
        .unwrap()
        .get("T", "p", "r")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Transport { .. }), "{err:?}");
    errors.push(("timeout", printed(err)));

    // Garbage for an answer.
    let (garbage, _) = listener(Some(b"this is not HTTP at all\r\n\r\n"));
    let err = sas_connection(&format!("http://{garbage}/devstoreaccount1"))
        .table_backend()
        .unwrap()
        .get("T", "p", "r")
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err:?}");
    errors.push(("garbage", printed(err)));

    // An https:// URL answered in plain HTTP: the TLS handshake fails.
    let (plain, _) = listener(Some(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"));
    let c = sas_connection(&format!("https://{plain}/devstoreaccount1"));
    let err = c.table_backend().unwrap().get("T", "p", "r").await.unwrap_err();
    assert!(matches!(err, Error::Transport { .. }), "{err:?}");
    errors.push(("tls (table)", printed(err)));
    let err = c.blob_backend().unwrap().now().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err:?}");
    errors.push(("tls (blob)", printed(err)));

    // Answers that cannot be read: an entity, a listing.
    let listing = "<EnumerationResults><Blobs><Blob><Name>a</Name><Properties><Etag>x</Etag>\
        <Last-Modified>Tue, 05 Mar 2024 10:11:12 GMT</Last-Modified><Content-Length>many</Content-Length>\
        </Properties></Blob></Blobs></EnumerationResults>";
    let (endpoint, _) = scripted(vec![(200, "", listing.into())]);
    let c = sas_connection(&endpoint);
    let err = c.table_backend().unwrap().get("T", "p", "r").await.unwrap_err();
    assert!(matches!(err, Error::MalformedResponse { .. }), "{err:?}");
    errors.push(("unreadable entity", printed(err)));
    let err = c
        .blob_backend()
        .unwrap()
        .list("docs", "", None, None, 10)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::MalformedResponse, "{err:?}");
    errors.push(("unreadable listing", printed(err)));

    for (what, text) in &errors {
        assert_clean(what, text);
    }
}

#[test]
fn configuration_errors_do_not_echo_a_secret() {
    // A SAS pasted into an endpoint, and a key given where it does not belong.
    for text in [
        format!(
            "SharedAccessSignature={};TableEndpoint=https://a.table.core.windows.net/?{}",
            sas(),
            sas()
        ),
        format!(
            "SharedAccessSignature={};AccountKey={EMULATOR_ACCOUNT_KEY};AccountName=a",
            sas()
        ),
        format!(
            "AccountName=a;AccountKey={EMULATOR_ACCOUNT_KEY};TableEndpoint=not a url?{}",
            sas()
        ),
        format!("AccountName=a;AccountKey {EMULATOR_ACCOUNT_KEY}"),
    ] {
        let err = ConnectionString::parse(&text).unwrap_err();
        assert!(matches!(err, Error::Config { .. }), "{err:?}");
        assert_clean("config", &printed(err));
    }
    let parsed = ConnectionString::parse(&format!(
        "SharedAccessSignature={};TableEndpoint=https://a.table.core.windows.net",
        sas()
    ))
    .unwrap();
    let connection = AzureConnection::from_parsed(parsed.clone());
    let backend = connection.table_backend().unwrap();
    for text in [format!("{parsed:?}"), format!("{connection:?}"), format!("{backend:?}")] {
        assert_clean("Debug", &text);
    }
}

/// Each cause's text appears exactly once in anyhow's one-line report.
fn assert_each_cause_once(err: Error) {
    let mut causes = vec![err.to_string()];
    let mut source = err.source();
    while let Some(s) = source {
        causes.push(s.to_string());
        source = s.source();
    }
    assert!(causes.len() > 1, "{err:?} keeps its cause as its source");
    let report = format!("{:#}", anyhow::Error::new(err));
    for cause in causes.iter().filter(|c| !c.is_empty()) {
        assert_eq!(report.matches(cause.as_str()).count(), 1, "`{cause}` in:\n{report}");
    }
}

#[tokio::test]
async fn a_report_prints_each_cause_once() {
    let refused = format!("http://{}/devstoreaccount1", refusing());
    let err = sas_connection(&refused)
        .table_backend()
        .unwrap()
        .get("T", "p", "r")
        .await
        .unwrap_err();
    let report = format!("{:#}", anyhow::Error::new(Error::transport("x").with_source(err)));
    assert_eq!(report.matches("Connection refused").count(), 1, "{report}");

    let err = || async {
        sas_connection(&refused)
            .table_backend()
            .unwrap()
            .get("T", "p", "r")
            .await
            .unwrap_err()
    };
    assert_each_cause_once(err().await);
    assert_each_cause_once(err().await.after_sending("T", "p", "r"));
    let failed_op = Error::Transaction {
        index: 1,
        source: Box::new(Error::service(
            409,
            "EntityAlreadyExists",
            "The specified entity already exists.",
        )),
    };
    assert_each_cause_once(Error::BatchFailed {
        committed: 100,
        partition_key: "p".into(),
        row_key: "r".into(),
        source: Box::new(failed_op),
    });
    let config = ConnectionString::parse("AccountName=a;AccountKey=bXlrZXk=;TableEndpoint=not a url").unwrap_err();
    assert_each_cause_once(config);
    let listing = "<EnumerationResults><Blobs><Blob><Name>a</Name><Properties><Etag>x</Etag>\
        <Last-Modified>Tue, 05 Mar 2024 10:11:12 GMT</Last-Modified><Content-Length>many</Content-Length>\
        </Properties></Blob></Blobs></EnumerationResults>";
    let (endpoint, _) = scripted(vec![(200, "", listing.into())]);
    let err = sas_connection(&endpoint)
        .blob_backend()
        .unwrap()
        .list("docs", "", None, None, 10)
        .await
        .unwrap_err();
    assert_each_cause_once(err);
}

#[tokio::test]
async fn every_request_carries_a_client_request_id_kept_across_retries() {
    let entity = r#"{"odata.metadata":"m","PartitionKey":"p","RowKey":"r","Timestamp":"2024-01-01T00:00:00Z"}"#;
    let (endpoint, heads) = scripted(vec![
        (503, "ServerBusy", odata_error("ServerBusy")),
        (200, "", entity.into()),
    ]);
    let quick = RetryPolicy::builder()
        .backoff(Duration::from_millis(5), Duration::from_millis(5))
        .build()
        .unwrap();
    let c = sas_connection(&endpoint).with_retry(quick);
    let backend = c.table_backend().unwrap();
    backend.get("T", "p", "r").await.unwrap().unwrap();
    backend.get("T", "p", "r").await.unwrap().unwrap();
    c.blob_backend().unwrap().now().await.unwrap();
    let heads = heads.lock().unwrap().clone();
    let ids: Vec<&str> = heads
        .iter()
        .map(|h| header(h, "x-ms-client-request-id").expect("x-ms-client-request-id"))
        .collect();
    assert_eq!(ids.len(), 4, "{heads:?}");
    assert_eq!(ids[0], ids[1], "a retry sends its request's id");
    assert_ne!(ids[1], ids[2], "each request has an id of its own");
    assert_ne!(ids[2], ids[3]);
    for id in ids {
        assert!(id.parse::<crate::value::Guid>().is_ok(), "{id}");
    }
}

#[tokio::test]
async fn errors_built_from_an_answer_keep_its_request_id() {
    let answers = |status, code: &'static str| scripted(vec![(status, code, odata_error(code))]);
    let delete = WriteOp::Delete {
        partition_key: "p".into(),
        row_key: "r".into(),
        condition: IfMatch::Any,
    };
    let cases = [
        (404, "ResourceNotFound", delete.clone()),
        (409, "EntityAlreadyExists", WriteOp::Insert(Row::new("p", "r"))),
        (412, "UpdateConditionNotSatisfied", delete),
    ];
    for (status, code, op) in cases {
        let (endpoint, _) = answers(status, code);
        let backend = sas_connection(&endpoint).table_backend().unwrap();
        let err = backend.execute("T", op).await.unwrap_err().about_entity("T", "p", "r");
        assert!(
            matches!(
                (status, &err),
                (404, Error::NotFound { .. }) | (409, Error::AlreadyExists { .. }) | (412, Error::Conflict { .. })
            ),
            "{err:?}"
        );
        assert_eq!(err.request_id(), Some("answer-0"), "{err:?}");
        assert!(err.to_string().contains("(request id answer-0)"), "{err}");
    }
    let listing = "<EnumerationResults><Blobs><Blob><Name>a</Name><Properties><Etag>x</Etag>\
        <Last-Modified>Tue, 05 Mar 2024 10:11:12 GMT</Last-Modified><Content-Length>many</Content-Length>\
        </Properties></Blob></Blobs></EnumerationResults>";
    let (endpoint, _) = scripted(vec![(200, "", listing.into())]);
    let err = sas_connection(&endpoint)
        .table_backend()
        .unwrap()
        .get("T", "p", "r")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::MalformedResponse { .. }), "{err:?}");
    assert_eq!(err.request_id(), Some("answer-0"), "{err:?}");
}

#[cfg(feature = "entra-id")]
#[tokio::test]
async fn a_credential_error_prints_no_token() {
    use azure_core::credentials::{AccessToken, TokenCredential, TokenRequestOptions};

    #[derive(Debug)]
    struct Leaky;

    #[async_trait::async_trait]
    impl TokenCredential for Leaky {
        async fn get_token(
            &self,
            _scopes: &[&str],
            _options: Option<TokenRequestOptions<'_>>,
        ) -> azure_core::Result<AccessToken> {
            Err(azure_core::Error::with_message(
                azure_core::error::ErrorKind::Credential,
                format!(
                    "the endpoint https://login.invalid/token?sig={SECRET} refused Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.abcdef"
                ),
            ))
        }
    }

    let (endpoint, _) = scripted(vec![(200, "", "{}".into())]);
    let endpoint = endpoint.replace("http://", "https://");
    let c = AzureConnection::with_token_credential(
        &format!("TableEndpoint={endpoint};BlobEndpoint={endpoint}"),
        Arc::new(Leaky),
    )
    .unwrap();
    let err = c.table_backend().unwrap().get("T", "p", "r").await.unwrap_err();
    assert!(matches!(err, Error::Credential { .. }), "{err:?}");
    let text = printed(err);
    assert!(text.contains("Bearer REDACTED"), "{text}");
    assert_clean("credential", &text);
}

#[tokio::test]
async fn a_request_that_cannot_be_written_is_refused_without_sending() {
    let (endpoint, heads) = scripted(vec![(201, "", String::new())]);
    let options = crate::backend::blob::PutOptions {
        content_type: Some("text/plain\r\nx-injected: 1".into()),
        ..Default::default()
    };
    let err = sas_connection(&endpoint)
        .blob_backend()
        .unwrap()
        .put("docs", "a.txt", b"x".to_vec(), options)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Encode { .. }), "{err:?}");
    assert_eq!(err.kind(), ErrorKind::Invalid, "not a transport failure to retry");
    assert!(err.is_refusal());
    assert!(heads.lock().unwrap().is_empty(), "nothing was sent");
    assert_clean("encode", &printed(err));
}
