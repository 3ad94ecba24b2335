//! A proxy named by the environment: with `HTTP_PROXY` set, every request
//! of an account key's connection (entities and table management alike)
//! goes through the proxy, signed; without it they go straight to the endpoint.
//!
//! The environment is the process's own, so this binary holds one test.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use unified_tables::backend::azure::{AzureConnection, EMULATOR_ACCOUNT, EMULATOR_ACCOUNT_KEY};
use unified_tables::backend::Backend;
use unified_tables::{Error, RetryPolicy};

/// The service's answer to a read of a row that is not there.
fn not_found() -> Vec<u8> {
    let body = r#"{"odata.error":{"code":"ResourceNotFound","message":{"lang":"en-US","value":"Not found."}}}"#;
    format!(
        "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nx-ms-error-code: ResourceNotFound\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A forward proxy that records each request's head and answers "not found".
fn proxy() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let heads = Arc::new(Mutex::new(Vec::new()));
    let seen = heads.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let head = read_head(&mut stream);
            seen.lock().unwrap().push(head);
            let _ = stream.write_all(&not_found());
        }
    });
    (address, heads)
}

/// The request's head, up to its blank line.
fn read_head(stream: &mut TcpStream) -> String {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&seen).into_owned()
}

#[tokio::test]
async fn entity_requests_follow_a_proxy_named_by_the_environment() {
    // Nothing listens at the endpoint: only the proxy can answer.
    let endpoint = {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        format!("http://127.0.0.1:{port}/{EMULATOR_ACCOUNT}")
    };
    let text = format!("AccountName={EMULATOR_ACCOUNT};AccountKey={EMULATOR_ACCOUNT_KEY};TableEndpoint={endpoint}");
    let backend = || {
        AzureConnection::parse(&text)
            .unwrap()
            .with_retry(RetryPolicy::no_retries())
            .table_backend()
            .unwrap()
    };
    let (address, heads) = proxy();

    // Set before any other thread of this binary reads the environment.
    std::env::set_var("HTTP_PROXY", format!("http://{address}"));
    let proxied = backend();
    std::env::remove_var("HTTP_PROXY");
    assert_eq!(proxied.get("Orders", "p", "r").await.unwrap(), None);
    let heads_seen = heads.lock().unwrap().clone();
    assert_eq!(heads_seen.len(), 1, "{heads_seen:?}");
    let line = heads_seen[0].lines().next().unwrap_or_default();
    assert_eq!(
        line,
        format!("GET {endpoint}/Orders(PartitionKey='p',RowKey='r') HTTP/1.1"),
        "the proxy is asked for the entity's whole URL"
    );
    assert!(
        heads_seen[0]
            .to_ascii_lowercase()
            .contains("authorization: sharedkey devstoreaccount1:"),
        "the request is signed: {}",
        heads_seen[0]
    );

    // Table management takes the same client, so the same proxy.
    let err = proxied.delete_table("Orders").await.unwrap_err();
    assert_eq!(err.service_code(), Some((404, "ResourceNotFound")), "{err:?}");
    let heads_seen = heads.lock().unwrap().clone();
    assert_eq!(
        heads_seen[1].lines().next().unwrap_or_default(),
        format!("DELETE {endpoint}/Tables('Orders') HTTP/1.1")
    );

    // Without the variable the same request goes straight to the endpoint.
    let err = backend().get("Orders", "p", "r").await.unwrap_err();
    assert!(matches!(err, Error::Transport { .. }), "{err:?}");
    assert_eq!(heads.lock().unwrap().len(), 2, "the proxy saw nothing more");
}
