//! Azure Table Storage (and Azurite) over `azure_data_tables` /
//! `azure_storage` / `azure_core`.
//!
//! What this backend adds to the crates:
//!
//! - **Retries under the user's control.** The crates' default policy
//!   retries for over a minute. Here every request follows the
//!   [`RetryPolicy`](crate::RetryPolicy) of its [`AzureConnection`]: by default
//!   a 2.5 s connect timeout, 35 s per attempt, and transient failures (408,
//!   500, 502, 503, 504, transport errors and time-outs) retried at most 3
//!   times with exponential backoff and jitter, no retry started after 4 s;
//!   an optional deadline bounds a request and its retries. Transparent gzip is off.
//! - **Credentials.** Shared Key, a shared access signature, or (feature
//!   `identity`) bearer tokens from a token credential, for tables and blobs alike.
//! - **Service errors with their codes.** Every non-success answer becomes
//!   [`Error::Service`] with the status, the `x-ms-error-code` (or the
//!   `odata.error` code), the message and the `x-ms-request-id`; every
//!   request carries an `x-ms-client-request-id` of its own (the same across
//!   its retries).
//! - **Errors with their causes and no secrets.** A transport failure, an
//!   answer that cannot be read, a credential's failure keep the underlying
//!   error as their `source()`, with the SAS parameters of the URL it names
//!   redacted ([`redact`](crate::redact)); so do the log lines of retries.
//! - **Keys with `'`.** The crate writes `(PartitionKey='..',RowKey='..')`
//!   without doubling quotes, so a key holding `'` would address another row;
//!   keys are escaped here.
//! - **Transactions.** The crate reports a failed entity-group transaction as
//!   `Ok`; here it is [`Error::Transaction`] with the failing operation's
//!   0-based index, status, code, message and the request's id. Transactions
//!   are written and read by this module and sent as entity requests are.
//! - **Typed cells, no detour.** Entity requests are written and read here.
//!   With an account key or a SAS they are signed here (the key's HMAC
//!   schedule prepared once) and sent straight through `hyper` over the same
//!   TLS, with the retries, deadline and error capture above, and no header
//!   maps, policy chain or `reqwest` layers between the row and the socket;
//!   with a token credential, or when the environment names a proxy
//!   (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`), they go through the crate
//!   family's pipeline and its `reqwest` client, which uses the proxy. A
//!   row is written straight into its request body by [`wire::write_row`](crate::wire::write_row) (Int64, Double, DateTime, Guid and
//!   Binary annotated), and answers, read with full metadata, are parsed
//!   straight into rows by [`wire::row_from_slice`](crate::wire::row_from_slice) and
//!   [`wire::page_from_slice`](crate::wire::page_from_slice), so Int64 stays Int64 and Double stays Double.

mod azure_connection;
mod batch;
mod blob;
mod blob_headers;
mod connection_string;
mod credential;
mod direct;
mod entities;
mod http;

#[cfg(test)]
mod azure_connection_tests;
#[cfg(test)]
mod error_tests;
#[cfg(test)]
mod tests;

pub use azure_connection::AzureConnection;
/// The Entra ID credentials of the same `azure_core` generation (managed
/// identity, workload identity, client secret, Azure CLI, the default chain).
#[cfg(feature = "identity")]
#[cfg_attr(docsrs, doc(cfg(feature = "identity")))]
pub use azure_identity;
pub use blob::AzureBlobBackend;
pub use connection_string::{ConnectionString, Credentials, EMULATOR_ACCOUNT, EMULATOR_ACCOUNT_KEY};

use std::fmt;

use async_trait::async_trait;
use azure_core::{Pipeline, Url};
use azure_data_tables::clients::TableServiceClientBuilder;
use azure_data_tables::prelude::TableServiceClient;
use azure_storage::CloudLocation;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};

use crate::backend::{Backend, Page, PageAnswer, PageToken, QueryRequest, WriteOp, WriteOutcome};
use crate::error::{Error, Result};
use crate::value::{DateTime, ETag, Row};

use self::credential::Auth;
use self::direct::Direct;
use self::http::{client_options, map_error};

/// Row-level access to Azure Table Storage or Azurite.
///
/// ```no_run
/// use unified_tables::backend::azure::AzureBackend;
/// use unified_tables::Tables;
/// let backend = AzureBackend::from_connection_string("UseDevelopmentStorage=true")?;
/// let db = Tables::with_backend(backend);
/// # Ok::<(), unified_tables::Error>(())
/// ```
#[derive(Clone)]
pub struct AzureBackend {
    service: TableServiceClient,
    pipeline: Pipeline,
    /// Entity requests sent straight through `hyper` (an account key or a
    /// SAS); `None` sends them through `pipeline` (a token credential, or a
    /// proxy named by the environment).
    direct: Option<Direct>,
    account_name: String,
    table_endpoint: String,
    /// `table_endpoint` parsed once: every entity request's URL starts from it.
    table_url: Url,
    blob_endpoint: String,
}

impl fmt::Debug for AzureBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AzureBackend")
            .field("account_name", &self.account_name)
            .field("table_endpoint", &self.table_endpoint)
            .finish_non_exhaustive()
    }
}

impl AzureBackend {
    /// Connects with a storage connection string: `UseDevelopmentStorage=true`,
    /// `DefaultEndpointsProtocol=..;AccountName=..;AccountKey=..;EndpointSuffix=..`,
    /// optionally with explicit `TableEndpoint=` / `BlobEndpoint=` (see
    /// [`ConnectionString`]). Nothing is sent until the first operation.
    ///
    /// A malformed string is [`Error::Config`] naming the bad part.
    pub fn from_connection_string(connection_string: &str) -> Result<AzureBackend> {
        AzureBackend::from_parsed(ConnectionString::parse(connection_string)?)
    }

    /// Connects to the table endpoint `account_url` (e.g.
    /// `https://acct.table.core.windows.net`, or `http://127.0.0.1:10002/devstoreaccount1`
    /// for Azurite) with the account's name and base64 key.
    pub fn from_account(account_url: &str, account_name: &str, key: &str) -> Result<AzureBackend> {
        AzureBackend::from_parsed(ConnectionString {
            table_endpoint: connection_string::normalize_endpoint("account URL", account_url)?,
            ..connection_string::with_account_key(account_name, key)?
        })
    }

    /// Connects with an already parsed connection string, with the default
    /// [`RetryPolicy`](crate::RetryPolicy) (see [`AzureConnection`] for another).
    pub fn from_parsed(connection: ConnectionString) -> Result<AzureBackend> {
        AzureConnection::from_parsed(connection).table_backend()
    }

    pub(crate) fn build(connection: &AzureConnection, client: reqwest::Client) -> Result<AzureBackend> {
        let credentials = connection.auth().storage_credentials(connection.account_name())?;
        let options = client_options(client, *connection.retry());
        let location = CloudLocation::Custom {
            account: connection.account_name().to_owned(),
            uri: connection.table_endpoint().to_owned(),
        };
        let service = TableServiceClientBuilder::with_location(location, credentials.clone())
            .client_options(options.clone())
            .build();
        let pipeline = azure_storage::clients::new_pipeline_from_options(options, credentials);
        let table_url = Url::parse(connection.table_endpoint())
            .map_err(|e| Error::config(format!("table endpoint `{}`", connection.table_endpoint())).with_source(e))?;
        let direct = match connection.auth() {
            // The pipeline's client is the one that sends through a proxy.
            Auth::Parsed(_) if direct::proxy_named(|name| std::env::var(name).ok()) => None,
            Auth::Parsed(credentials) => Some(Direct::new(
                connection.account_name(),
                credentials,
                *connection.retry(),
                connection.roots(),
            )?),
            #[cfg(feature = "identity")]
            Auth::Token(_) => None,
        };
        Ok(AzureBackend {
            service,
            pipeline,
            direct,
            account_name: connection.account_name().to_owned(),
            table_endpoint: connection.table_endpoint().to_owned(),
            table_url,
            blob_endpoint: connection.blob_endpoint().to_owned(),
        })
    }

    /// The storage account name.
    pub fn account_name(&self) -> &str {
        &self.account_name
    }

    /// The table service endpoint, without a trailing `/`.
    pub fn table_endpoint(&self) -> &str {
        &self.table_endpoint
    }

    /// The blob service endpoint from the connection string, without a
    /// trailing `/` (empty when constructed with [`AzureBackend::from_account`]).
    pub fn blob_endpoint(&self) -> &str {
        &self.blob_endpoint
    }
}

/// Doubles `'` so that the key can stand inside `'..'` in an entity address.
fn quote_key(key: &str) -> String {
    key.replace('\'', "''")
}

/// Percent-encodes everything but unreserved characters and `'`.
fn encode_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len() * 3);
    for &b in quote_key(key).as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'\'') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `Table(PartitionKey='..',RowKey='..')`, escaped for a URL path.
pub(crate) fn entity_path(table: &str, pk: &str, rk: &str) -> String {
    format!("{table}(PartitionKey='{}',RowKey='{}')", encode_key(pk), encode_key(rk))
}

/// The Timestamp a table ETag carries: `W/"datetime'2017-01-05T03%3A25%3A25.9422152Z'"`.
pub(crate) fn timestamp_from_etag(etag: &ETag) -> Option<DateTime> {
    let text = etag.as_str();
    let start = text.find("datetime'")? + "datetime'".len();
    let end = text[start..].find('\'')? + start;
    DateTime::try_parse(&text[start..end].replace("%3A", ":").replace("%3a", ":"))
}

#[async_trait]
impl Backend for AzureBackend {
    async fn create_table(&self, table: &str) -> Result<()> {
        match self.service.table_client(table).create().await {
            Ok(_) => Ok(()),
            Err(e) => match map_error(e) {
                Error::Service { status: 409, code, .. } if code == "TableAlreadyExists" => Ok(()),
                other => Err(other),
            },
        }
    }

    async fn delete_table(&self, table: &str) -> Result<()> {
        self.service
            .table_client(table)
            .delete()
            .await
            .map(|_| ())
            .map_err(map_error)
    }

    async fn get(&self, table: &str, partition_key: &str, row_key: &str) -> Result<Option<Row>> {
        self.get_entity(table, partition_key, row_key).await
    }

    async fn execute(&self, table: &str, op: WriteOp) -> Result<WriteOutcome> {
        self.write_entity(table, &op).await
    }

    async fn transaction(&self, table: &str, ops: Vec<WriteOp>) -> Result<Vec<WriteOutcome>> {
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        let batch_boundary = format!("batch_{:032x}", rand::random::<u128>());
        let changeset_boundary = format!("changeset_{:032x}", rand::random::<u128>());
        let body = batch::build_body(&self.table_endpoint, table, &ops, &batch_boundary, &changeset_boundary)?;
        let url = self.url_of("$batch")?;
        let mut headers = HeaderMap::new();
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_str(&format!("multipart/mixed; boundary={batch_boundary}"))
                .map_err(|e| Error::encode("a batch boundary HTTP cannot carry").with_source(e))?,
        );
        headers.insert(
            ACCEPT,
            HeaderValue::from_static("application/json;odata=minimalmetadata"),
        );
        headers.insert(
            HeaderName::from_static("dataserviceversion"),
            HeaderValue::from_static("3.0;"),
        );
        headers.insert(
            HeaderName::from_static("maxdataserviceversion"),
            HeaderValue::from_static("3.0;NetFx"),
        );
        let answer = self
            .send(reqwest::Method::POST, url, headers, Some(body.into_bytes()))
            .await?;
        let text = String::from_utf8_lossy(&answer.body);
        let parts = batch::parse_parts(&text);
        // A failing part's answer is inside the one answer: it carries that answer's request id.
        let request_id = answer.request_id();
        batch::interpret(&ops, &parts).map_err(|e| e.with_request_id(request_id))
    }

    async fn query(&self, table: &str, request: &QueryRequest, token: Option<&PageToken>) -> Result<Page> {
        self.query_page(table, request, token).await?.into_page()
    }
    async fn query_body(&self, table: &str, request: &QueryRequest, token: Option<&PageToken>) -> Result<PageAnswer> {
        self.query_page(table, request, token).await.map(PageAnswer::Body)
    }
}

/// The test connection string, or `None` (with one line) when it is not set.
/// With `UNIFIED_TABLES_REQUIRE_AZURE` set, a missing one fails the test.
#[cfg(test)]
pub(crate) fn test_connection() -> Option<String> {
    const ENV: &str = "UNIFIED_TABLES_TEST_CONNECTION";
    match std::env::var(ENV) {
        Ok(cs) if !cs.trim().is_empty() => Some(cs),
        _ => {
            assert!(
                std::env::var_os("UNIFIED_TABLES_REQUIRE_AZURE").is_none(),
                "UNIFIED_TABLES_REQUIRE_AZURE is set but {ENV} is not"
            );
            println!("skipped: {ENV} is not set (scripts/test.sh starts Azurite and sets it)");
            None
        }
    }
}
