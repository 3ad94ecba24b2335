//! Tests of connecting: the retry policy's attempts, timeouts and deadline
//! against loopback servers (one answering from a script, one that never
//! answers, a port with nothing listening), endpoint strings for token
//! credentials, SAS checks and trusted certificates. None needs Azurite.

use std::net::TcpListener;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::tests::{scripted_server, SCRIPTED_REQUEST_ID};
use super::*;
use crate::backend::blob::BlobBackend as _;
use crate::backend::retry::RetryPolicy;
use crate::backend::{IfMatch, UpdateMode, WriteOp};
use crate::ErrorKind;

const BUSY: (u16, &str, &str) = (
    503,
    "ServerBusy",
    r#"{"odata.error":{"code":"ServerBusy","message":{"lang":"en-US","value":"The server is busy."}}}"#,
);

fn connection_at(endpoint: &str) -> AzureConnection {
    AzureConnection::from_parsed(ConnectionString {
        account_name: EMULATOR_ACCOUNT.into(),
        credentials: AccountCredentials::AccountKey(EMULATOR_ACCOUNT_KEY.into()),
        table_endpoint: endpoint.into(),
        blob_endpoint: endpoint.into(),
    })
}

/// The error and its sources, as a reporter prints them on one line.
fn chain(err: &Error) -> String {
    let mut text = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

fn backend_with(endpoint: &str, policy: RetryPolicy) -> AzureBackend {
    connection_at(endpoint).with_retry(policy).table_backend().unwrap()
}

/// A loopback server that accepts connections and never answers; counts them.
fn silent_server() -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}/devstoreaccount1", listener.local_addr().unwrap());
    let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = count.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().take(20) {
            counter.fetch_add(1, Ordering::SeqCst);
            // Keep the connection open, unanswered, until the thread ends.
            held.push(stream);
        }
    });
    (endpoint, count)
}

#[tokio::test]
async fn the_policy_sets_the_number_of_attempts() {
    let (endpoint, count) = scripted_server(vec![BUSY]);
    let policy = RetryPolicy::builder()
        .attempts(2)
        .backoff(Duration::from_millis(10), Duration::from_millis(10))
        .build()
        .unwrap();
    let err = backend_with(&endpoint, policy).get("T", "p", "r").await.unwrap_err();
    assert_eq!(count.load(Ordering::SeqCst), 2, "two attempts in all");
    assert_eq!(err.kind(), ErrorKind::Throttled, "{err}");
    assert_eq!(err.request_id(), Some(SCRIPTED_REQUEST_ID));
    assert!(err.to_string().contains(SCRIPTED_REQUEST_ID), "{err}");

    let (endpoint, count) = scripted_server(vec![BUSY]);
    let err = backend_with(&endpoint, RetryPolicy::no_retries())
        .get("T", "p", "r")
        .await
        .unwrap_err();
    assert_eq!(count.load(Ordering::SeqCst), 1, "no retry");
    assert_eq!(err.service_code(), Some((503, "ServerBusy")));
}

const TIMED_OUT: (u16, &str, &str) = (
    500,
    "OperationTimedOut",
    r#"{"odata.error":{"code":"OperationTimedOut","message":{"lang":"en-US","value":"Operation could not be completed within the specified time."}}}"#,
);
const EXISTS: (u16, &str, &str) = (
    409,
    "EntityAlreadyExists",
    r#"{"odata.error":{"code":"EntityAlreadyExists","message":{"lang":"en-US","value":"The specified entity already exists."}}}"#,
);
const NOT_FOUND: (u16, &str, &str) = (
    404,
    "ResourceNotFound",
    r#"{"odata.error":{"code":"ResourceNotFound","message":{"lang":"en-US","value":"The specified resource does not exist."}}}"#,
);
const STALE: (u16, &str, &str) = (
    412,
    "UpdateConditionNotSatisfied",
    r#"{"odata.error":{"code":"UpdateConditionNotSatisfied","message":{"lang":"en-US","value":"The update condition specified in the request was not satisfied."}}}"#,
);

fn quick() -> RetryPolicy {
    RetryPolicy::builder()
        .backoff(Duration::from_millis(5), Duration::from_millis(5))
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_table_write_is_left_to_the_store_and_a_read_is_retried() {
    let row = || Row::new("p", "r");
    // A write's answer is classified by the store (with its write token): the
    // HTTP layer sends it once, whatever the answer.
    for first in [TIMED_OUT, BUSY, EXISTS] {
        let (endpoint, count) = scripted_server(vec![first, EXISTS]);
        let err = backend_with(&endpoint, quick())
            .execute("T", WriteOp::Insert(row()))
            .await
            .unwrap_err();
        assert_eq!(count.load(Ordering::SeqCst), 1, "{err}");
        assert_eq!(err.service_code(), Some((first.0, first.1)), "{err}");
    }
    let update = WriteOp::Update {
        row: row(),
        mode: UpdateMode::Replace,
        condition: IfMatch::ETag(ETag::new("W/\"datetime'2024-01-01T00%3A00%3A00Z'\"")),
    };
    let (endpoint, count) = scripted_server(vec![TIMED_OUT, STALE]);
    let err = backend_with(&endpoint, quick()).execute("T", update).await.unwrap_err();
    assert_eq!(count.load(Ordering::SeqCst), 1);
    assert_eq!(err.service_code(), Some((500, "OperationTimedOut")), "{err}");
    let delete = WriteOp::Delete {
        partition_key: "p".into(),
        row_key: "r".into(),
        condition: IfMatch::Any,
    };
    let (endpoint, count) = scripted_server(vec![TIMED_OUT, NOT_FOUND]);
    let err = backend_with(&endpoint, quick()).execute("T", delete).await.unwrap_err();
    assert_eq!(count.load(Ordering::SeqCst), 1);
    assert_eq!(err.service_code(), Some((500, "OperationTimedOut")), "{err}");

    // Creating a table is safe to repeat: retried, and "already exists" is success.
    let table_exists = (
        409,
        "TableAlreadyExists",
        r#"{"odata.error":{"code":"TableAlreadyExists","message":{"lang":"en-US","value":"The table specified already exists."}}}"#,
    );
    let (endpoint, count) = scripted_server(vec![TIMED_OUT, table_exists]);
    backend_with(&endpoint, quick()).create_table("T").await.unwrap();
    assert_eq!(count.load(Ordering::SeqCst), 2);

    // A read is safe to repeat: retried, and its 404 is the answer.
    let (endpoint, count) = scripted_server(vec![TIMED_OUT, NOT_FOUND]);
    let got = backend_with(&endpoint, quick()).get("T", "p", "r").await.unwrap();
    assert!(got.is_none());
    assert_eq!(count.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn the_request_timeout_bounds_each_attempt() {
    let (endpoint, count) = silent_server();
    let policy = RetryPolicy::builder()
        .attempts(2)
        .backoff(Duration::from_millis(10), Duration::from_millis(10))
        .request_timeout(Duration::from_millis(300))
        .connect_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let started = Instant::now();
    let err = backend_with(&endpoint, policy).get("T", "p", "r").await.unwrap_err();
    let took = started.elapsed();
    assert!(matches!(err, Error::Transport { .. }), "{err:?}");
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert_eq!(count.load(Ordering::SeqCst), 2, "a timed-out attempt is retried");
    assert!(took >= Duration::from_millis(600), "two attempts of 300 ms: {took:?}");
    assert!(took < Duration::from_secs(3), "{took:?}");
}

#[tokio::test]
async fn the_connect_timeout_covers_the_tls_handshake_and_a_write_stuck_there_is_retried() {
    // A server that accepts TCP and never answers the TLS handshake.
    let (endpoint, count) = silent_server();
    let endpoint = endpoint.replace("http://", "https://");
    let policy = RetryPolicy::builder()
        .attempts(2)
        .backoff(Duration::from_millis(10), Duration::from_millis(10))
        .connect_timeout(Duration::from_millis(300))
        .request_timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let started = Instant::now();
    let insert = WriteOp::Insert(crate::value::Row::new("p", "r"));
    let err = backend_with(&endpoint, policy).execute("T", insert).await.unwrap_err();
    let took = started.elapsed();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err:?}");
    assert!(chain(&err).contains("TLS handshake"), "{}", chain(&err));
    assert_eq!(
        count.load(Ordering::SeqCst),
        2,
        "a write whose handshake never finished never left: it is sent again"
    );
    assert!(
        took < Duration::from_secs(3),
        "the handshake waits the connect timeout, not the request's: {took:?}"
    );
}

#[tokio::test]
async fn the_deadline_cuts_the_request_and_its_retries() {
    let (endpoint, _) = silent_server();
    let policy = RetryPolicy::builder()
        .attempts(10)
        .deadline(Duration::from_millis(400))
        .build()
        .unwrap();
    let started = Instant::now();
    let err = backend_with(&endpoint, policy).get("T", "p", "r").await.unwrap_err();
    let took = started.elapsed();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert!(chain(&err).contains("deadline"), "{err:?}");
    assert!(
        took >= Duration::from_millis(400) && took < Duration::from_secs(2),
        "{took:?}"
    );

    // A write cut short by the deadline may have been applied: the store says so.
    let err = err.after_sending("T", "p", "r");
    assert_eq!(err.kind(), ErrorKind::OutcomeUnknown, "{err}");
}

#[tokio::test]
async fn an_unreachable_port_fails_within_the_policy_with_a_kind_to_match() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let endpoint = format!("http://127.0.0.1:{port}/devstoreaccount1");
    let policy = RetryPolicy::builder()
        .attempts(3)
        .backoff(Duration::from_millis(50), Duration::from_millis(100))
        .build()
        .unwrap();
    let connection = connection_at(&endpoint).with_retry(policy);
    let started = Instant::now();
    let err = connection
        .table_backend()
        .unwrap()
        .get("T", "p", "r")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Transport { .. }), "{err:?}");
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    let blob_err = connection.blob_backend().unwrap().now().await.unwrap_err();
    assert_eq!(blob_err.kind(), ErrorKind::Unavailable, "{blob_err}");
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
}

#[test]
fn endpoints_for_a_token_credential_carry_no_credential() {
    let e = connection_string::parse_endpoints("AccountName=myaccount").unwrap();
    assert_eq!(e.table_endpoint, "https://myaccount.table.core.windows.net");
    assert_eq!(e.blob_endpoint, "https://myaccount.blob.core.windows.net");
    let e = connection_string::parse_endpoints("AccountName=gov;EndpointSuffix=core.usgovcloudapi.net").unwrap();
    assert_eq!(e.table_endpoint, "https://gov.table.core.usgovcloudapi.net");
    let e = connection_string::parse_endpoints(
        "TableEndpoint=https://127.0.0.1:9/devstoreaccount1;BlobEndpoint=https://127.0.0.1:8/devstoreaccount1",
    )
    .unwrap();
    assert_eq!(e.account_name, "devstoreaccount1");
    assert_eq!(e.blob_endpoint, "https://127.0.0.1:8/devstoreaccount1");
    for with_credential in [
        "AccountName=a;AccountKey=a2V5",
        "UseDevelopmentStorage=true",
        "SharedAccessSignature=sv=1&sig=x;TableEndpoint=https://a.table.core.windows.net",
    ] {
        let err = connection_string::parse_endpoints(with_credential).unwrap_err();
        assert!(err.to_string().contains("the credential authorises"), "{err}");
    }
    // Without any credential, a connection string is still refused as such.
    let err = ConnectionString::parse("AccountName=myaccount").unwrap_err();
    assert!(err.to_string().contains("AccountKey is missing"), "{err}");
}

#[test]
fn a_sas_without_its_signature_or_version_is_refused() {
    let table = "TableEndpoint=https://a.table.core.windows.net";
    let err =
        ConnectionString::parse(&format!("SharedAccessSignature=sv=2018-11-09&se=2030-01-01;{table}")).unwrap_err();
    assert!(err.to_string().contains("`sig=`"), "{err}");
    let err = ConnectionString::parse(&format!("SharedAccessSignature=sig=abc;{table}")).unwrap_err();
    assert!(err.to_string().contains("`sv=`"), "{err}");
    let ok = ConnectionString::parse(&format!("SharedAccessSignature=?sv=2018-11-09&sig=abc%3D;{table}")).unwrap();
    assert_eq!(
        ok.credentials,
        AccountCredentials::SharedAccessSignature("sv=2018-11-09&sig=abc%3D".into())
    );
    assert_eq!(ok.account_name, "a");
}

#[test]
fn trusted_certificates_must_be_pem() {
    let err = connection_at("http://127.0.0.1:1/devstoreaccount1")
        .with_trusted_certificates_pem(b"not a certificate")
        .unwrap_err();
    assert!(matches!(err, Error::Config { .. }), "{err:?}");
    assert!(err.to_string().contains("trusted certificates"), "{err}");
}

#[cfg(feature = "entra-id")]
mod token {
    use super::*;
    use azure_core::credentials::{AccessToken, TokenCredential, TokenRequestOptions};

    #[derive(Debug)]
    struct Never;

    #[async_trait::async_trait]
    impl TokenCredential for Never {
        async fn get_token(
            &self,
            _scopes: &[&str],
            _options: Option<TokenRequestOptions<'_>>,
        ) -> azure_core::Result<AccessToken> {
            Err(azure_core::Error::with_message(
                azure_core::error::ErrorKind::Credential,
                "no token here",
            ))
        }
    }

    #[test]
    fn a_token_credential_refuses_http_endpoints() {
        let err = AzureConnection::with_token_credential(
            "TableEndpoint=http://127.0.0.1:9/devstoreaccount1;BlobEndpoint=https://127.0.0.1:8/devstoreaccount1",
            Arc::new(Never),
        )
        .unwrap_err();
        assert!(err.to_string().contains("https:// only"), "{err}");
        let c = AzureConnection::with_token_credential("AccountName=myaccount", Arc::new(Never)).unwrap();
        assert!(format!("{c:?}").contains("TokenCredential(..)"), "{c:?}");
    }

    #[test]
    fn the_default_credential_is_made_without_sending_anything() {
        // Only made, never asked for a token: that would reach for the
        // machine's managed identity endpoint.
        let c = AzureConnection::with_default_credential("AccountName=myaccount").unwrap();
        assert_eq!(c.table_endpoint(), "https://myaccount.table.core.windows.net");
        assert_eq!(c.blob_endpoint(), "https://myaccount.blob.core.windows.net");
        assert!(format!("{c:?}").contains("TokenCredential(..)"), "{c:?}");
        c.table_backend().unwrap();
        c.blob_backend().unwrap();
    }

    #[tokio::test]
    async fn a_credential_that_fails_is_reported_before_anything_is_sent() {
        let (endpoint, count) = scripted_server(vec![(200, "", "{}")]);
        let endpoint = endpoint.replace("http://", "https://");
        let c = AzureConnection::with_token_credential(
            &format!("TableEndpoint={endpoint};BlobEndpoint={endpoint}"),
            Arc::new(Never),
        )
        .unwrap();
        let err = c.table_backend().unwrap().get("T", "p", "r").await.unwrap_err();
        assert!(matches!(err, Error::Credential { .. }), "{err:?}");
        assert!(chain(&err).contains("no token here"), "{err:?}");
        assert_eq!(count.load(Ordering::SeqCst), 0, "nothing was sent");
    }
}
