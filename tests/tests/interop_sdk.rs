//! Rows shared with the official Azure SDK for Rust, on Azurite: what
//! `azure_data_tables` (the official Tables crate, frozen at the `azure_core`
//! 0.21 generation) writes, derived structs read, and the reverse, for every
//! cell type (String, Int32, Int64, Double, Boolean, DateTime, Guid, Binary,
//! null and absent), keys with the characters that need escaping, and an
//! entity-group transaction each way; and the credentials of `azure_identity`
//! 1.x authorising the crate's requests (HTTPS Azurite with bearer tokens).
//!
//! Without Azurite these are skipped with one line, unless `CI=true` or
//! `UNIFIED_TABLES_REQUIRE_AZURE=1` make them required.

use std::ffi::OsStr;
use std::io;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Output};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use azure_core::cloud::{CloudConfiguration, CustomConfiguration};
use azure_core::credentials::TokenCredential;
use azure_core::http::ClientOptions;
use azure_data_tables::clients::TableServiceClientBuilder;
use azure_data_tables::prelude::TableClient;
use azure_identity::{
    AzureCliCredential, AzureCliCredentialOptions, ClientSecretCredential, ClientSecretCredentialOptions, Executor,
};
use azure_storage::{CloudLocation, StorageCredentials};
use chrono::{DateTime, TimeZone as _, Utc};
use futures::StreamExt as _;
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{json, Value as Json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use unified_tables::backend::azure::transport::IdentityHttpClient;
use unified_tables::backend::azure::{AccountCredentials, AzureConnection, ConnectionString};
use unified_tables::{QueryOptions, TableEntity, Tables};
use unified_tables_tests::connect::{oauth_connection, skip, test_jwt, CA_VAR};
use unified_tables_tests::{azure_env, unique_table, Env, CONNECTION_VAR};

/// Every cell type the service stores, and two optional ones.
#[derive(TableEntity, Debug, Clone, PartialEq)]
struct Cells {
    #[table(partition_key)]
    pk: String,
    #[table(row_key)]
    rk: String,
    /// `Text`, Edm.String.
    text: String,
    /// `Small`, Edm.Int32.
    small: i32,
    /// `Big`, Edm.Int64.
    big: i64,
    /// `Ratio`, Edm.Double.
    ratio: f64,
    /// `Whole`, Edm.Double holding a whole number.
    whole: f64,
    /// `Flag`, Edm.Boolean.
    flag: bool,
    /// `At`, Edm.DateTime (100 ns).
    at: DateTime<Utc>,
    /// `Ident`, Edm.Guid.
    ident: uuid::Uuid,
    /// `Bytes`, Edm.Binary.
    bytes: Vec<u8>,
    /// `Maybe`: null from the SDK, absent from us.
    maybe: Option<String>,
    /// `Later`: never written.
    later: Option<i64>,
}

/// Keys with the characters that need escaping somewhere: in an entity
/// address (`'` doubled, then percent-encoded), in a filter, in a URL
/// (space, `%`, `+`, `&`, `=`, `;`, `:`, `@`, `$`, `,`) and in JSON (`"`),
/// and text of 1- to 4-byte UTF-8 characters. The service refuses `/`, `\`,
/// `#`, `?` and control characters in keys.
const KEYS: &[&str] = &[
    "with space",
    "it's",
    "''",
    "100%",
    "%27%2F looks encoded",
    "a+b",
    "a&b=c;d,e:f@g$h!i*j(k)l~m",
    "quote\" <angle> [square] {curly} |pipe^ `tick`",
    "  padded  ",
    "ünïcødé ключ 中文 🦀",
];

fn cells(pk: &str, rk: &str, i: usize) -> Cells {
    Cells {
        pk: pk.to_owned(),
        rk: rk.to_owned(),
        text: format!("text {i}: ünï 中 🦀 'quoted' \"double\""),
        small: i32::MIN + i as i32,
        big: i64::MAX - i as i64,
        ratio: 0.1 + i as f64,
        whole: 3.0 + i as f64,
        flag: i.is_multiple_of(2),
        at: Utc.with_ymd_and_hms(2026, 3, 4, 5, 6, 7).unwrap()
            + chrono::Duration::nanoseconds(123_456_700 + i as i64 * 100),
        ident: uuid::Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cd00 + i as u128),
        bytes: vec![0, 1, 2, 0xfe, 0xff, i as u8],
        maybe: None,
        later: None,
    }
}

/// The row as the SDK's user writes it: a JSON object, the types the service
/// cannot infer from JSON annotated, `Maybe` null and `Later` left out.
fn sdk_entity(c: &Cells) -> Json {
    use base64::Engine as _;
    json!({
        "PartitionKey": c.pk,
        "RowKey": c.rk,
        "Text": c.text,
        "Small": c.small,
        "Big": c.big.to_string(),
        "Big@odata.type": "Edm.Int64",
        "Ratio": c.ratio,
        "Ratio@odata.type": "Edm.Double",
        "Whole": c.whole,
        "Whole@odata.type": "Edm.Double",
        "Flag": c.flag,
        "At": c.at.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true),
        "At@odata.type": "Edm.DateTime",
        "Ident": c.ident.to_string(),
        "Ident@odata.type": "Edm.Guid",
        "Bytes": base64::engine::general_purpose::STANDARD.encode(&c.bytes),
        "Bytes@odata.type": "Edm.Binary",
        "Maybe": null,
    })
}

/// What the SDK's user reads from a row we wrote: every value, with the
/// service's type annotation where JSON alone would lose the type.
fn assert_sdk_reads(row: &Json, c: &Cells) {
    use base64::Engine as _;
    let text = |name: &str| {
        row[name]
            .as_str()
            .unwrap_or_else(|| panic!("{name} in {row}"))
            .to_owned()
    };
    let annotation = |name: &str| row[format!("{name}@odata.type")].as_str().map(str::to_owned);
    assert_eq!(text("PartitionKey"), c.pk, "{row}");
    assert_eq!(text("RowKey"), c.rk, "{row}");
    assert_eq!(text("Text"), c.text, "{row}");
    assert_eq!(row["Small"].as_i64(), Some(i64::from(c.small)), "{row}");
    assert_eq!(annotation("Small"), None, "an Int32 is a plain JSON number: {row}");
    assert_eq!(
        (text("Big"), annotation("Big")),
        (c.big.to_string(), Some("Edm.Int64".into())),
        "{row}"
    );
    // A Double is annotated, or (Azurite) a JSON number with a fraction or
    // exponent, which every reader takes for a Double: never an integer,
    // which a reader would take for an Int32.
    for (name, value) in [("Ratio", c.ratio), ("Whole", c.whole)] {
        assert_eq!(row[name].as_f64(), Some(value), "{row}");
        match annotation(name).as_deref() {
            Some(annotated) => assert_eq!(annotated, "Edm.Double", "{row}"),
            None => assert!(row[name].is_f64(), "a Double, not an integer: {name} in {row}"),
        }
    }
    assert_eq!(row["Flag"].as_bool(), Some(c.flag), "{row}");
    assert_eq!(annotation("At").as_deref(), Some("Edm.DateTime"), "{row}");
    let at = DateTime::parse_from_rfc3339(&text("At")).unwrap_or_else(|e| panic!("At: {e}: {row}"));
    assert_eq!(at.with_timezone(&Utc), c.at, "100 ns kept: {row}");
    assert_eq!(annotation("Ident").as_deref(), Some("Edm.Guid"), "{row}");
    assert_eq!(text("Ident").parse::<uuid::Uuid>().unwrap(), c.ident, "{row}");
    assert_eq!(annotation("Bytes").as_deref(), Some("Edm.Binary"), "{row}");
    let bytes = base64::engine::general_purpose::STANDARD.decode(text("Bytes")).unwrap();
    assert_eq!(bytes, c.bytes, "{row}");
    for absent in ["Maybe", "Later"] {
        assert!(row.get(absent).is_none(), "None is no column at all: {row}");
    }
}

/// The official crate's client for the test account, or `None` (with the
/// environment) when Azurite is missing and not required.
async fn both(hint: &str) -> Option<(Env, TableClient)> {
    let env = azure_env(hint).await?;
    let connection = std::env::var(CONNECTION_VAR).expect("set when the environment is");
    let parsed = ConnectionString::parse(&connection).expect("the test connection string");
    let AccountCredentials::AccountKey(key) = &parsed.credentials else {
        panic!("the interop test signs with the account key of {CONNECTION_VAR}");
    };
    let location = CloudLocation::Custom {
        account: parsed.account_name.clone(),
        uri: parsed.table_endpoint.clone(),
    };
    let credentials = StorageCredentials::access_key(parsed.account_name.clone(), key.clone());
    let service = TableServiceClientBuilder::with_location(location, credentials).build();
    let table = service.table_client(env.table.clone());
    Some((env, table))
}

/// `'` doubled, as OData string literals spell it.
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// The SDK's user reading one row through a filter.
async fn sdk_query_one(table: &TableClient, pk: &str, rk: &str) -> Json {
    let filter = format!("PartitionKey eq {} and RowKey eq {}", literal(pk), literal(rk));
    let mut pages = table.query().filter(filter).into_stream::<Json>();
    let page = pages.next().await.expect("a page").expect("the query");
    assert_eq!(page.entities.len(), 1, "{pk:?}/{rk:?}: {:?}", page.entities);
    page.entities.into_iter().next().unwrap()
}

/// The SDK's user reading one row by its address. The official crate puts
/// the keys into `(PartitionKey='..',RowKey='..')` as they are: a key with
/// `'` must be given with `'` doubled.
async fn sdk_get(table: &TableClient, pk: &str, rk: &str) -> Json {
    let double = |k: &str| k.replace('\'', "''");
    table
        .partition_key_client(double(pk))
        .entity_client(double(rk))
        .get::<Json>()
        .await
        .unwrap_or_else(|e| panic!("{pk:?}/{rk:?}: {e}"))
        .entity
}

#[tokio::test]
async fn rows_the_official_crate_writes_read_into_derived_structs() {
    let Some((env, table)) = both("sdk_writes").await else {
        return;
    };
    table.create().await.expect("the SDK creates the table");
    let store = env.tables.store_in::<Cells>(&env.table);
    for (i, key) in KEYS.iter().enumerate() {
        let pk = format!("p {key}");
        let written = cells(&pk, key, i);
        table
            .insert::<_, Json>(sdk_entity(&written))
            .expect("an SDK insert")
            .await
            .unwrap_or_else(|e| panic!("the SDK inserts {key:?}: {e}"));
        let read = store
            .get((pk.as_str(), *key))
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("{key:?} is found"));
        assert_eq!(read, written, "{key:?}");
    }
    // An entity-group transaction: inserts (the keys in the body) and an
    // insert-or-replace (the keys in the address), read as one partition.
    let pk = "batch ü 'q' 100% a+b";
    let batch: Vec<Cells> = KEYS.iter().enumerate().map(|(i, k)| cells(pk, k, 100 + i)).collect();
    let mut transaction = table.partition_key_client(pk.replace('\'', "''")).transaction();
    for c in &batch[1..] {
        transaction = transaction.insert(sdk_entity(c)).expect("a transaction insert");
    }
    transaction = transaction
        .insert_or_replace(batch[0].rk.replace('\'', "''"), sdk_entity(&batch[0]))
        .expect("a transaction insert-or-replace");
    let answer = transaction.into_future().await.expect("the SDK's transaction");
    assert_eq!(answer.operation_responses.len(), batch.len());
    let mut read = store.query(QueryOptions::partition(pk)).await.unwrap();
    let mut expected = batch.clone();
    expected.sort_by(|a, b| a.rk.cmp(&b.rk));
    read.sort_by(|a, b| a.rk.cmp(&b.rk));
    assert_eq!(read, expected);
}

#[tokio::test]
async fn rows_derived_structs_write_read_through_the_official_crate() {
    let Some((env, table)) = both("crate_writes").await else {
        return;
    };
    let store = env.tables.store_in::<Cells>(&env.table);
    store.ensure_created().await.unwrap();
    for (i, key) in KEYS.iter().enumerate() {
        let pk = format!("p {key}");
        let mut written = cells(&pk, key, i);
        store
            .create(&mut written)
            .await
            .unwrap_or_else(|e| panic!("{key:?}: {e}"));
        assert_sdk_reads(&sdk_query_one(&table, &pk, key).await, &written);
        assert_sdk_reads(&sdk_get(&table, &pk, key).await, &written);
    }
    // One entity-group transaction of ours, read by the SDK as one partition.
    let pk = "batch ü 'q' 100% a+b";
    let batch: Vec<Cells> = KEYS.iter().enumerate().map(|(i, k)| cells(pk, k, 100 + i)).collect();
    env.reset_counts();
    assert_eq!(store.create_batch(&batch).await.unwrap(), batch.len());
    let counts = env.counts();
    assert_eq!(
        (counts.transactions, counts.writes),
        (1, 0),
        "one transaction: {counts:?}"
    );
    let filter = format!("PartitionKey eq {}", literal(pk));
    let page = table
        .query()
        .filter(filter)
        .into_stream::<Json>()
        .next()
        .await
        .expect("a page")
        .expect("the query");
    assert_eq!(page.entities.len(), batch.len(), "{:?}", page.entities);
    for c in &batch {
        let row = page
            .entities
            .iter()
            .find(|row| row["RowKey"].as_str() == Some(c.rk.as_str()))
            .unwrap_or_else(|| panic!("{:?} in the partition", c.rk));
        assert_sdk_reads(row, c);
    }
}

/// The Azure CLI as `AzureCliCredential` runs it, scripted: every run
/// prints a token shaped as the OAuth Azurite expects, and is recorded.
#[derive(Debug, Default)]
struct ScriptedCli {
    commands: Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl Executor for ScriptedCli {
    async fn run(&self, program: &OsStr, args: &[&OsStr]) -> io::Result<Output> {
        let mut command = program.to_string_lossy().into_owned();
        for arg in args {
            command.push(' ');
            command.push_str(&arg.to_string_lossy());
        }
        self.commands.lock().unwrap().push(command);
        let now = unix_now();
        let printed = json!({
            "accessToken": test_jwt(now - 60, now + 3600),
            "expires_on": now + 3600,
            "tokenType": "Bearer",
        });
        Ok(Output {
            status: ExitStatus::from_raw(0),
            stdout: printed.to_string().into_bytes(),
            stderr: Vec::new(),
        })
    }
}

fn unix_now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64
}

/// A row written and read back through `connection`.
async fn round_trip(connection: AzureConnection, hint: &str) {
    let db = Tables::connect_with(connection).unwrap();
    let store = db.store_in::<Cells>(&unique_table(hint));
    store.ensure_created().await.unwrap();
    let mut written = cells("p 'ü'", "it's 100%", 1);
    store.create(&mut written).await.unwrap();
    let read = store.get(("p 'ü'", "it's 100%")).await.unwrap();
    assert_eq!(read, Some(written));
}

#[tokio::test]
async fn an_azure_cli_credential_of_azure_identity_authorises_requests() {
    let cli = Arc::new(ScriptedCli::default());
    let credential: Arc<dyn TokenCredential> = AzureCliCredential::new(Some(AzureCliCredentialOptions {
        executor: Some(cli.clone()),
        ..Default::default()
    }))
    .expect("the Azure CLI credential");
    let Some(connection) = oauth_connection(credential) else {
        return;
    };
    round_trip(connection, "cli").await;
    let commands = cli.commands.lock().unwrap().clone();
    assert_eq!(commands.len(), 1, "one token for every request, cached: {commands:?}");
    assert!(
        commands[0].contains("az account get-access-token -o json --scope https://storage.azure.com/.default"),
        "{commands:?}"
    );
}

/// The server certificate `scripts/test.sh` makes beside the authority of
/// [`CA_VAR`], or `None` (with one line) when there is none and none is required.
fn server_certificate() -> Option<(Vec<u8>, PathBuf)> {
    let Ok(ca) = std::env::var(CA_VAR) else {
        return skip("token endpoint", &format!("{CA_VAR} is not set"));
    };
    let pem = std::fs::read(&ca).unwrap_or_else(|e| panic!("{CA_VAR} `{ca}`: {e}"));
    let dir = PathBuf::from(ca).parent().expect("a file").to_owned();
    if !dir.join("server.pem").exists() {
        return skip("token endpoint", "no server.pem beside the authority");
    }
    Some((pem, dir))
}

/// An Entra ID token endpoint over TLS on a free port, with the test
/// server certificate: every request (its head and body) is recorded and
/// answered with a token shaped as the OAuth Azurite expects.
async fn token_endpoint(certificates: &Path) -> (u16, Arc<Mutex<Vec<String>>>) {
    let chain = CertificateDer::pem_file_iter(certificates.join("server.pem"))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_file(certificates.join("server.key")).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let requests = Arc::new(Mutex::new(Vec::new()));
    let recorded = requests.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let recorded = recorded.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut received = Vec::new();
                let mut buffer = [0u8; 4096];
                let request = loop {
                    let Ok(n) = tls.read(&mut buffer).await else { return };
                    if n == 0 {
                        return;
                    }
                    received.extend_from_slice(&buffer[..n]);
                    let text = String::from_utf8_lossy(&received).into_owned();
                    let Some(end) = text.find("\r\n\r\n") else { continue };
                    let length = text[..end]
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().to_owned())
                        })
                        .and_then(|v| v.parse::<usize>().ok())
                        .unwrap_or(0);
                    if received.len() >= end + 4 + length {
                        break text;
                    }
                };
                recorded.lock().unwrap().push(request);
                let now = unix_now();
                let body = json!({
                    "token_type": "Bearer",
                    "expires_in": 3600,
                    "ext_expires_in": 3600,
                    "access_token": test_jwt(now - 60, now + 3600),
                })
                .to_string();
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = tls.write_all(answer.as_bytes()).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    (port, requests)
}

#[tokio::test]
async fn a_client_secret_credential_asks_for_its_token_through_the_crates_transport() {
    let Some((ca, certificates)) = server_certificate() else {
        return;
    };
    let (port, requests) = token_endpoint(&certificates).await;
    let tenant = "72f988bf-86f1-41af-91ab-2d7cd011db47";
    let mut cloud = CustomConfiguration::default();
    cloud.authority_host = format!("https://127.0.0.1:{port}");
    let options = ClientSecretCredentialOptions {
        client_options: ClientOptions {
            cloud: Some(Arc::new(CloudConfiguration::from(cloud))),
            ..IdentityHttpClient::with_trusted_certificates_pem(&ca)
                .unwrap()
                .client_options()
        },
    };
    let credential: Arc<dyn TokenCredential> =
        ClientSecretCredential::new(tenant, "the-client".into(), "the secret".into(), Some(options))
            .expect("the client secret credential");
    let Some(connection) = oauth_connection(credential) else {
        return;
    };
    round_trip(connection, "secret").await;
    let requests = requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 1, "one token for every request, cached: {requests:?}");
    let request = &requests[0];
    assert!(
        request.starts_with(&format!("POST /{tenant}/oauth2/v2.0/token HTTP/1.1\r\n")),
        "{request}"
    );
    for part in [
        "client_id=the-client",
        "client_secret=the+secret",
        "grant_type=client_credentials",
        "scope=https%3A%2F%2Fstorage.azure.com%2F.default",
    ] {
        assert!(request.contains(part), "{part} in {request}");
    }
}
