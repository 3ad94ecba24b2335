//! Tests of Azure Cosmos DB for Table on the Azure backend: the service
//! recognised from the table endpoint or named, the blob endpoint a Cosmos
//! DB connection string gives (none derived), the headers of its answers
//! (`x-ms-retry-after-ms`, `x-ms-request-charge`), and 429 answers retried
//! after the wait they ask for, against the scripted loopback server.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::blob::tests::{blob_answer, scripted_server as blob_server};
use super::connection_string::endpoint_profile;
use super::http::{request_charge, retry_after_ms};
use super::tests::{backend_at, scripted_server_with};
use super::*;
use crate::service::ServiceProfile;
use crate::value::Value;

const COSMOS: &str =
    "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=bXlrZXk=;TableEndpoint=https://acct.table.cosmos.azure.com:443/;";

const ENTITY: &str = r#"{"odata.metadata":"m","PartitionKey":"p","RowKey":"r","Timestamp":"2024-01-01T00:00:00Z","N@odata.type":"Edm.Int64","N":"7"}"#;
const THROTTLED_BODY: &str =
    r#"{"odata.error":{"code":"TooManyRequests","message":{"lang":"en-US","value":"Request rate is large."}}}"#;

#[test]
fn cosmos_endpoints_are_recognised_by_their_host() {
    for endpoint in [
        "https://acct.table.cosmos.azure.com",
        "https://acct.table.cosmos.azure.com:443/",
        "https://ACCT.Table.Cosmos.Azure.COM",
        "https://acct.table.cosmos.azure.com.",
        "https://acct.table.cosmos.azure.com.:443",
        "http://acct.table.cosmos.azure.com:8081/",
    ] {
        assert_eq!(endpoint_profile(endpoint), ServiceProfile::CosmosTable, "{endpoint}");
    }
    for endpoint in [
        "https://acct.table.core.windows.net",
        "http://127.0.0.1:10002/devstoreaccount1",
        "https://acct.table.cosmos.azure.com.example.com",
        "https://tables.example.com/acct.table.cosmos.azure.com",
        "not a url",
    ] {
        assert_eq!(endpoint_profile(endpoint), ServiceProfile::TableStorage, "{endpoint}");
    }
    // Through a connection string, upper case and port included.
    let connection = AzureConnection::parse(
        "AccountName=acct;AccountKey=bXlrZXk=;TableEndpoint=HTTPS://ACCT.TABLE.COSMOS.AZURE.COM:443/",
    )
    .unwrap();
    assert_eq!(connection.profile(), ServiceProfile::CosmosTable);
    assert_eq!(connection.table_endpoint(), "https://acct.table.cosmos.azure.com");
    let backend = connection.table_backend().unwrap();
    assert_eq!(backend.profile(), ServiceProfile::CosmosTable);
    // Table Storage and Azurite stay Table Storage.
    let storage = AzureConnection::parse("AccountName=acct;AccountKey=bXlrZXk=").unwrap();
    assert_eq!(storage.table_backend().unwrap().profile(), ServiceProfile::TableStorage);
    let azurite = AzureBackend::from_connection_string("UseDevelopmentStorage=true").unwrap();
    assert_eq!(azurite.profile(), ServiceProfile::TableStorage);
}

#[test]
fn a_cosmos_connection_string_derives_no_blob_endpoint() {
    let cs = ConnectionString::parse(COSMOS).unwrap();
    assert_eq!(cs.table_endpoint, "https://acct.table.cosmos.azure.com");
    assert_eq!(cs.blob_endpoint, "", "no blob service at acct.blob.core.windows.net");
    let connection = AzureConnection::parse(COSMOS).unwrap();
    assert_eq!(connection.blob_endpoint(), "");
    let err = connection.blob_backend().unwrap_err();
    assert!(matches!(err, Error::Config { .. }), "{err:?}");
    // The handle has no blob store: no request goes to a derived endpoint.
    let db = crate::Tables::connect(COSMOS).unwrap();
    assert!(format!("{db:?}").contains("blobs: None"), "{db:?}");
    // A Cosmos DB account's name may hold dashes.
    let dashed = ConnectionString::parse(
        "AccountName=my-acct;AccountKey=bXlrZXk=;TableEndpoint=https://my-acct.table.cosmos.azure.com:443/",
    )
    .unwrap();
    assert_eq!(dashed.account_name, "my-acct");
    let refused = ConnectionString::parse("AccountName=my-acct;AccountKey=bXlrZXk=").unwrap_err();
    assert!(refused.to_string().contains("letters and digits"), "{refused}");
}

#[test]
fn a_cosmos_connection_string_with_a_blob_endpoint_uses_it() {
    let text = format!("{COSMOS}BlobEndpoint=https://other.blob.core.windows.net/");
    let cs = ConnectionString::parse(&text).unwrap();
    assert_eq!(cs.blob_endpoint, "https://other.blob.core.windows.net");
    let connection = AzureConnection::parse(&text).unwrap();
    assert_eq!(connection.profile(), ServiceProfile::CosmosTable);
    let blobs = connection.blob_backend().unwrap();
    assert_eq!(blobs.blob_endpoint(), "https://other.blob.core.windows.net");
    let db = crate::Tables::connect(&text).unwrap();
    assert!(format!("{db:?}").contains("other.blob.core.windows.net"), "{db:?}");
}

#[test]
fn a_profile_named_for_a_custom_domain() {
    let text = "AccountName=orders;AccountKey=bXlrZXk=;TableEndpoint=https://tables.example.com";
    let connection = AzureConnection::parse(text).unwrap();
    assert_eq!(connection.profile(), ServiceProfile::TableStorage);
    assert_eq!(connection.blob_endpoint(), "https://orders.blob.core.windows.net");
    let cosmos = connection.clone().with_profile(ServiceProfile::CosmosTable);
    assert_eq!(cosmos.profile(), ServiceProfile::CosmosTable);
    assert_eq!(cosmos.table_backend().unwrap().profile(), ServiceProfile::CosmosTable);
    assert_eq!(
        cosmos.blob_endpoint(),
        "",
        "the blob endpoint derived from the name is dropped"
    );
    // Named back, the profile changes; the dropped endpoint is not guessed again.
    let back = cosmos.with_profile(ServiceProfile::TableStorage);
    assert_eq!(back.table_backend().unwrap().profile(), ServiceProfile::TableStorage);
    // A blob endpoint given stays.
    let given = AzureConnection::parse(&format!("{text};BlobEndpoint=https://blobs.example.com"))
        .unwrap()
        .with_profile(ServiceProfile::CosmosTable);
    assert_eq!(given.blob_endpoint(), "https://blobs.example.com");
    // So does one of a parsed connection string, taken as given.
    let parsed =
        AzureConnection::from_parsed(ConnectionString::parse(text).unwrap()).with_profile(ServiceProfile::CosmosTable);
    assert_eq!(parsed.blob_endpoint(), "https://orders.blob.core.windows.net");
}

#[test]
fn the_retry_after_and_request_charge_headers_are_read() {
    assert_eq!(retry_after_ms("300"), Some(Duration::from_millis(300)));
    assert_eq!(retry_after_ms(" 12.5 "), Some(Duration::from_micros(12_500)));
    assert_eq!(retry_after_ms("0"), Some(Duration::ZERO));
    for bad in ["", "-1", "abc", "NaN", "inf", "1e400", "300ms"] {
        assert_eq!(retry_after_ms(bad), None, "{bad:?}");
    }
    assert_eq!(request_charge("5.71"), Some(5.71));
    assert_eq!(request_charge("1"), Some(1.0));
    assert_eq!(request_charge(" 0 "), Some(0.0));
    for bad in ["", "-2", "x", "NaN", "inf"] {
        assert_eq!(request_charge(bad), None, "{bad:?}");
    }
}

#[tokio::test]
async fn a_429_is_retried_after_the_wait_it_asks_for() {
    let (endpoint, count) = scripted_server_with(vec![
        (429, "TooManyRequests", THROTTLED_BODY, "x-ms-retry-after-ms: 300\r\n"),
        (200, "", ENTITY, ""),
    ]);
    let started = Instant::now();
    let row = backend_at(&endpoint).get("T", "p", "r").await.unwrap().unwrap();
    let waited = started.elapsed();
    assert_eq!(count.load(Ordering::SeqCst), 2);
    assert_eq!(row.get("N"), Some(&Value::Int64(7)));
    assert!(waited >= Duration::from_millis(300), "{waited:?}");
}

#[tokio::test]
async fn a_429_without_a_wait_is_retried_after_the_backoff() {
    let (endpoint, count) = scripted_server_with(vec![
        (429, "TooManyRequests", THROTTLED_BODY, ""),
        (200, "", ENTITY, ""),
    ]);
    let started = Instant::now();
    let row = backend_at(&endpoint).get("T", "p", "r").await.unwrap();
    let waited = started.elapsed();
    assert!(row.is_some());
    assert_eq!(count.load(Ordering::SeqCst), 2, "retried");
    // The default backoff's first pause is 50 to 100 ms.
    assert!(waited < Duration::from_millis(300), "{waited:?}");
}

#[tokio::test]
async fn a_wait_past_the_retry_budget_is_not_made_and_the_error_carries_it() {
    let (endpoint, count) = scripted_server_with(vec![(
        429,
        "TooManyRequests",
        THROTTLED_BODY,
        "x-ms-retry-after-ms: 10000\r\n",
    )]);
    let started = Instant::now();
    let err = backend_at(&endpoint).get("T", "p", "r").await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    assert_eq!(
        count.load(Ordering::SeqCst),
        1,
        "the 4 s budget cannot hold a 10 s wait"
    );
    assert_eq!(err.service_code(), Some((429, "TooManyRequests")));
    assert_eq!(err.kind(), crate::ErrorKind::Throttled);
    assert_eq!(err.retry_after(), Some(Duration::from_secs(10)));
}

#[tokio::test]
async fn a_throttled_write_is_not_sent_again_here_and_carries_its_wait() {
    // The store decides about writes; the error tells it how long to wait.
    let (endpoint, count) = scripted_server_with(vec![(
        429,
        "TooManyRequests",
        THROTTLED_BODY,
        "x-ms-retry-after-ms: 25.5\r\n",
    )]);
    let err = backend_at(&endpoint)
        .execute("T", WriteOp::Insert(Row::new("p", "r")))
        .await
        .unwrap_err();
    assert_eq!(count.load(Ordering::SeqCst), 1);
    assert_eq!(err.retry_after(), Some(Duration::from_micros(25_500)));
}

#[tokio::test]
async fn the_blobs_of_a_cosmos_account_are_a_storage_account_given_on_its_own() {
    // Without a blob store, a blob container names what to do, and nothing is sent.
    let db = crate::Tables::connect(COSMOS).unwrap();
    let err = db.blobs("files").get("a").await.unwrap_err();
    assert!(err.to_string().contains("Tables::with_blobs"), "{err}");
    // The storage account, with its own name and key, given to with_blobs.
    let (endpoint, heads) = blob_server(vec![
        ("201 Created", Vec::new(), Vec::new()),
        blob_answer(b"hello", &[]),
    ]);
    let blobs = AzureBlobBackend::from_account(&endpoint, "otherblobs", "b3RoZXJrZXk=").unwrap();
    let db = crate::Tables::connect(COSMOS)
        .unwrap()
        .with_blobs(blobs, crate::BlobOptions::default());
    let read = db.blobs("files").get("a").await.unwrap().expect("the blob");
    assert_eq!(read.bytes, b"hello");
    let heads = heads.lock().unwrap().clone();
    assert_eq!(heads.len(), 2, "{heads:?}");
    for head in &heads {
        assert!(head.contains("authorization: sharedkey otherblobs:"), "{head}");
    }
}
