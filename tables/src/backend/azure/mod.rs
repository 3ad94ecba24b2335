//! Azure Table Storage and Blob Storage (and Azurite), spoken by this
//! crate itself over one transport ([`transport`]): no `azure_*` crate and
//! no `reqwest` build or send a request. The `entra-id` feature takes the
//! credentials of `azure_core` 1.x and `azure_identity` 1.x (without their
//! default features, so without reqwest); their own token requests go
//! through the same transport ([`transport::IdentityHttpClient`]).
//!
//! - **One transport.** Every request of an [`AzureConnection`] (entities,
//!   transactions, queries, table management, blobs, leases) goes through
//!   one pooled `hyper` client with one TLS set-up (rustls, the public
//!   roots and the connection's own), one proxy rule (`HTTPS_PROXY`,
//!   `HTTP_PROXY`, `ALL_PROXY`, `NO_PROXY`), one retry loop and one signer
//!   for its credential: Shared Key (the table and the blob service's
//!   canonical forms), a shared access signature, or (feature `entra-id`)
//!   bearer tokens from a token credential, cached and refreshed five
//!   minutes ahead of their expiry. The signer applies the credential to
//!   each request right before `hyper` takes it: no dependency sees an
//!   `Authorization` header or a SAS URL, so none can log one.
//! - **Retries under the user's control.** Every request follows the
//!   [`RetryPolicy`](crate::RetryPolicy) of its [`AzureConnection`]: by default
//!   a 2.5 s connect timeout (the TCP connection, a proxy tunnel and the TLS
//!   handshake together), 35 s per attempt, and transient failures (408,
//!   500, 502, 503, 504, transport errors and time-outs) retried at most 3
//!   times with exponential backoff and jitter, no retry started after 4 s;
//!   an optional deadline bounds a request and its retries. A table write
//!   (an entity or a transaction) is sent again only when its attempt never
//!   left (the connection, tunnel or handshake failed); any other failure
//!   goes back to the store, which settles it (see
//!   [`Tables::with_retry`](crate::Tables::with_retry)). Creating or
//!   deleting a table, reads and blob requests are retried as the policy
//!   allows. Transparent gzip is off.
//! - **Service errors with their codes.** Every non-success answer becomes
//!   [`Error::Service`] with the status, the `x-ms-error-code` (or the
//!   `odata.error` code), the message and the `x-ms-request-id`; every
//!   request carries an `x-ms-client-request-id` of its own (the same across
//!   its retries).
//! - **Errors with their causes and no secrets.** A transport failure, an
//!   answer that cannot be read, a credential's failure keep the underlying
//!   error as their `source()`; the URL an error names carries no SAS
//!   parameter, and messages pass through [`redact`](crate::redact).
//! - **Telemetry.** One DEBUG span per request attempt and events for
//!   retries and answers, on the target [`transport::TARGET`]
//!   (`unified_tables::http`); see [`transport`] for the fields. No span or
//!   event carries a header, a key, a signature or a token.
//! - **Keys with `'`.** Keys are escaped in entity addresses
//!   (`(PartitionKey='..',RowKey='..')`, `'` doubled, percent-encoded).
//! - **Transactions.** A failed entity-group transaction is
//!   [`Error::Transaction`] with the failing operation's 0-based index,
//!   status, code, message and the request's id.
//! - **Typed cells, no detour.** A row is written straight into its request
//!   body by [`wire::write_row`](crate::wire::write_row) (Int64, Double,
//!   DateTime, Guid and Binary annotated), and answers, read with full
//!   metadata, are parsed straight into rows by
//!   [`wire::row_from_slice`](crate::wire::row_from_slice) and
//!   [`wire::page_from_slice`](crate::wire::page_from_slice), so Int64 stays
//!   Int64 and Double stays Double.

mod azure_connection;
mod batch;
mod blob;
mod blob_headers;
mod blob_list;
mod connection_string;
mod credential;
#[cfg(feature = "entra-id")]
mod default_credential;
mod entities;
mod http;
pub mod transport;

#[cfg(test)]
mod azure_connection_tests;
#[cfg(test)]
mod cosmos_tests;
#[cfg(test)]
mod error_tests;
#[cfg(test)]
mod tests;

pub use azure_connection::AzureConnection;
pub use blob::AzureBlobBackend;
pub use connection_string::{AccountCredentials, ConnectionString, EMULATOR_ACCOUNT, EMULATOR_ACCOUNT_KEY};

use std::fmt;

use async_trait::async_trait;
use hyper::header::{HeaderValue, ACCEPT, CONTENT_TYPE};
use hyper::Method;

use crate::backend::{Backend, Page, PageAnswer, PageToken, QueryRequest, WriteOp, WriteOutcome};
use crate::error::{Error, Result};
use crate::service::ServiceProfile;
use crate::value::{DateTime, ETag, Row};

use self::transport::{Outgoing, Resource, Transport};

/// Row-level access to Azure Table Storage, Azurite or Azure Cosmos DB for
/// Table (recognised by its endpoint's host, or named with
/// [`AzureConnection::with_profile`]; see [`Backend::profile`]).
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
    /// Every request of this backend goes through it.
    transport: Transport,
    account_name: String,
    table_endpoint: String,
    blob_endpoint: String,
    /// The service behind the table endpoint.
    profile: ServiceProfile,
}

impl fmt::Debug for AzureBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AzureBackend")
            .field("account_name", &self.account_name)
            .field("table_endpoint", &self.table_endpoint)
            .field("profile", &self.profile)
            .finish_non_exhaustive()
    }
}

impl AzureConnection {
    /// The table backend. Nothing is sent until its first operation.
    pub fn table_backend(&self) -> Result<AzureBackend> {
        AzureBackend::build(self)
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

    pub(crate) fn build(connection: &AzureConnection) -> Result<AzureBackend> {
        let transport = Transport::new(
            connection.client()?,
            connection.auth().signer(connection.account_name())?,
            *connection.retry(),
            connection.table_endpoint(),
        )?;
        Ok(AzureBackend {
            transport,
            account_name: connection.account_name().to_owned(),
            table_endpoint: connection.table_endpoint().to_owned(),
            blob_endpoint: connection.blob_endpoint().to_owned(),
            profile: connection.profile(),
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
        let body = serde_json::json!({ "TableName": table }).to_string();
        let request = Outgoing::new(Method::POST, Resource::Table, "/Tables")
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .header(ACCEPT, HeaderValue::from_static("application/json;odata=nometadata"))
            .header(entities::PREFER, HeaderValue::from_static("return-no-content"))
            .body(body);
        match self.transport.send(request).await {
            Ok(_) => Ok(()),
            Err(Error::Service { status: 409, code, .. }) if code == "TableAlreadyExists" => Ok(()),
            Err(other) => Err(other),
        }
    }

    async fn delete_table(&self, table: &str) -> Result<()> {
        let path = format!("/Tables('{}')", transport::wire::segment(table));
        let request = Outgoing::new(Method::DELETE, Resource::Table, path)
            .header(ACCEPT, HeaderValue::from_static("application/json;odata=nometadata"));
        self.transport.send(request).await.map(|_| ())
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
        let content_type = HeaderValue::try_from(format!("multipart/mixed; boundary={batch_boundary}"))
            .map_err(|e| Error::encode("a batch boundary HTTP cannot carry").with_source(e))?;
        let request = Outgoing::new(Method::POST, Resource::Batch, "/$batch")
            .header(CONTENT_TYPE, content_type)
            .header(
                ACCEPT,
                HeaderValue::from_static("application/json;odata=minimalmetadata"),
            )
            .header(entities::DATA_SERVICE_VERSION, HeaderValue::from_static("3.0;"))
            .header(
                entities::MAX_DATA_SERVICE_VERSION,
                HeaderValue::from_static("3.0;NetFx"),
            )
            .body(body.into_bytes());
        let answer = self.transport.send(request).await?;
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
    /// The service behind the table endpoint: recognised from its host
    /// (`*.table.cosmos.azure.com` is Cosmos DB for Table), or named with
    /// [`AzureConnection::with_profile`].
    fn profile(&self) -> ServiceProfile {
        self.profile
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
