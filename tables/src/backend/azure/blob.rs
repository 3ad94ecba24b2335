//! Azure Blob Storage (and Azurite): every request written and read here
//! and sent through the connection's transport ([`super::transport`]).
//!
//! - **The same transport as the table backend**: one client, the
//!   [`RetryPolicy`](crate::RetryPolicy)'s timeouts and retries, no
//!   transparent gzip (Content-Encoding is stored and echoed, never
//!   applied), the blob service's Shared Key form, the SAS or the bearer
//!   token, and every error answer as [`Error::Service`] with the
//!   `x-ms-error-code` and the `x-ms-request-id`.
//! - **Empty blobs.** The service answers 416 `InvalidRange` to any range on
//!   an empty blob. Whole-blob reads here are a plain `GET` without a range
//!   (one request, so the bytes and the properties are of the same
//!   version); a ranged read that the service answers with 416 (a range
//!   starting at or past the end, or any range on an empty blob) reads the
//!   properties and returns no bytes, as the contract's clipping asks.
//! - **Names.** Names are folded with [`BlobName::parse`](crate::service::BlobName::parse)
//!   (`a/../b` is `b`, as the service stores it), then each segment is
//!   percent-encoded. Both backends refuse the names they could not agree on.
//! - **Conditions**: `If-None-Match: *`, `If-Match` and `If-Unmodified-Since`
//!   on writes; `If-Match` / `If-None-Match` on reads (a 304 answer is
//!   returned as [`Error::Service`] with status 304).
//! - **Leases**: Lease Blob (`comp=lease` with `x-ms-lease-action`), and the
//!   `x-ms-lease-id` of a put or delete.
//! - **`touch`** reads the properties and user metadata, then re-sets the
//!   same metadata (Set Blob Metadata) under `If-Match`, so the bytes,
//!   content headers and metadata stay and only ETag and Last-Modified move;
//!   a concurrent write makes it read and try again.
//! - **`now`** is the `Date` header of Get Account Information (needs
//!   account-level access: the account key, or an account SAS).
//! - **Listings** are read from the service's XML ([`super::blob_list`]);
//!   their ETags come back quoted, as in the `ETag` header.
//!
//! Azurite 3.37 differs from the service here (the conformance scenarios in
//! `tests/src/blob_scenarios.rs` assert each side):
//!
//! - A delete with `If-None-Match: *` deletes an existing blob (the service
//!   and the in-memory backend answer 412 `ConditionNotMet`).
//! - It stores names longer than 1024 characters (both backends refuse them
//!   before sending).
//! - A name holding U+0001 makes its listing fail with 500 (a tab is
//!   listed as written).
//! - Its markers are the last name returned, and it accepts any marker; the
//!   service's markers are opaque.
//!

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use hyper::header::{HeaderMap, HeaderName, HeaderValue, DATE, ETAG, IF_MATCH, LAST_MODIFIED};
use hyper::Method;

use super::azure_connection::AzureConnection;
use super::blob_headers::{
    is_blob_missing, lease_answer, lease_header, lease_headers, parse_http_date, properties_from_headers, quoted,
    read_condition_headers, request_id_of, unreadable, write_condition_headers,
};
use super::blob_list::parse_listing;
use super::connection_string::{self, ConnectionString};
use super::transport::wire::blob_path;
use super::transport::{header, Answer, Outgoing, Resource, Transport};
use crate::backend::blob::{
    BlobBackend, BlobListing, BlobProperties, BlobSink, DeleteOptions, GetOptions, LeaseAction, LeaseAnswer, PutOptions,
};
use crate::error::{Error, Result};
use crate::service::{check_container_name, BlobName, MAX_LIST_RESULTS};
use crate::value::DateTime;

/// How often `touch` reads and retries when writers keep changing the blob.
const TOUCH_ATTEMPTS: usize = 5;
/// Blob storage on Azure or Azurite, built from the same connection string
/// as [`AzureBackend`](super::AzureBackend) (its `BlobEndpoint`, or the
/// endpoint derived from the account name and suffix).
///
/// ```no_run
/// use unified_tables::backend::azure::AzureBlobBackend;
/// use unified_tables::backend::blob::{BlobBackend, PutOptions};
/// # async fn demo() -> unified_tables::Result<()> {
/// let blobs = AzureBlobBackend::from_connection_string("UseDevelopmentStorage=true")?;
/// blobs.create_container("large-values").await?;
/// blobs.put("large-values", "a/b", b"hello".to_vec(), PutOptions::default()).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct AzureBlobBackend {
    /// Every request of this backend goes through it.
    transport: Transport,
    account_name: String,
    blob_endpoint: String,
}

impl fmt::Debug for AzureBlobBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AzureBlobBackend")
            .field("account_name", &self.account_name)
            .field("blob_endpoint", &self.blob_endpoint)
            .finish_non_exhaustive()
    }
}

impl AzureConnection {
    /// The blob backend, or [`Error::Config`] when no blob endpoint is known.
    pub fn blob_backend(&self) -> Result<AzureBlobBackend> {
        AzureBlobBackend::build(self)
    }
}

impl AzureBlobBackend {
    /// Connects with a storage connection string (the forms
    /// [`ConnectionString`] accepts). Nothing is sent until the first
    /// operation. A malformed string, or one without a blob endpoint, is
    /// [`Error::Config`].
    pub fn from_connection_string(connection_string: &str) -> Result<AzureBlobBackend> {
        AzureBlobBackend::from_parsed(ConnectionString::parse(connection_string)?)
    }

    /// Connects to the blob endpoint `account_url` (e.g.
    /// `https://acct.blob.core.windows.net`, or `http://127.0.0.1:10000/devstoreaccount1`
    /// for Azurite) with the account's name and base64 key.
    pub fn from_account(account_url: &str, account_name: &str, key: &str) -> Result<AzureBlobBackend> {
        AzureBlobBackend::from_parsed(ConnectionString {
            blob_endpoint: connection_string::normalize_endpoint("account URL", account_url)?,
            ..connection_string::with_account_key(account_name, key)?
        })
    }

    /// Connects with an already parsed connection string, with the default
    /// [`RetryPolicy`](crate::RetryPolicy) (see [`AzureConnection`] for another).
    pub fn from_parsed(connection: ConnectionString) -> Result<AzureBlobBackend> {
        AzureConnection::from_parsed(connection).blob_backend()
    }

    pub(crate) fn build(connection: &AzureConnection) -> Result<AzureBlobBackend> {
        if connection.blob_endpoint().is_empty() {
            return Err(Error::config(
                "connection string: no blob endpoint (give BlobEndpoint=, or AccountName= to derive it)",
            ));
        }
        let transport = Transport::new(
            connection.client()?,
            connection.auth().signer(connection.account_name())?,
            *connection.retry(),
            connection.blob_endpoint(),
        )?;
        Ok(AzureBlobBackend {
            transport,
            account_name: connection.account_name().to_owned(),
            blob_endpoint: connection.blob_endpoint().to_owned(),
        })
    }

    /// The storage account name.
    pub fn account_name(&self) -> &str {
        &self.account_name
    }

    /// The blob service endpoint, without a trailing `/`.
    pub fn blob_endpoint(&self) -> &str {
        &self.blob_endpoint
    }

    /// A request about the blob `canonical` (a name already folded) of `container`.
    fn blob_request(&self, method: Method, resource: Resource, container: &str, canonical: &str) -> Result<Outgoing> {
        check_container_name(container)?;
        Ok(Outgoing::new(method, resource, blob_path(container, canonical)))
    }

    /// Sends a request through the connection's transport.
    async fn send(&self, request: Outgoing) -> Result<Answer> {
        self.transport.send(request).await
    }

    /// Get Blob Properties: the properties and the response headers, or
    /// `None` when the blob does not exist.
    async fn head(&self, container: &str, canonical: &str) -> Result<Option<(BlobProperties, HeaderMap)>> {
        self.head_with(container, canonical, Vec::new()).await
    }

    /// [`Self::head`] with request headers (read conditions).
    async fn head_with(
        &self,
        container: &str,
        canonical: &str,
        headers: Vec<(HeaderName, HeaderValue)>,
    ) -> Result<Option<(BlobProperties, HeaderMap)>> {
        let mut request = self
            .blob_request(Method::HEAD, Resource::Blob, container, canonical)?
            .absent_is_an_answer(crate::service::BLOB_NOT_FOUND);
        request.headers.extend(headers);
        match self.send(request).await {
            Ok(answer) => Ok(Some((properties_from_headers(&answer.headers)?, answer.headers))),
            Err(e) if is_blob_missing(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

#[async_trait]
impl BlobBackend for AzureBlobBackend {
    async fn create_container(&self, container: &str) -> Result<()> {
        check_container_name(container)?;
        let request = Outgoing::new(
            Method::PUT,
            Resource::Container,
            format!("/{}", super::transport::wire::segment(container)),
        )
        .query("restype", "container");
        match self.send(request).await {
            Ok(_) => Ok(()),
            Err(Error::Service { status: 409, code, .. }) if code == "ContainerAlreadyExists" => Ok(()),
            Err(other) => Err(other),
        }
    }

    async fn put(&self, container: &str, name: &str, bytes: Vec<u8>, options: PutOptions) -> Result<BlobProperties> {
        self.put_bytes(container, name, Bytes::from(bytes), options).await
    }

    async fn put_shared(
        &self,
        container: &str,
        name: &str,
        bytes: Arc<Vec<u8>>,
        options: PutOptions,
    ) -> Result<BlobProperties> {
        // Sent from the shared buffer: an 8 MiB file is not copied to be uploaded.
        self.put_bytes(container, name, Bytes::from_owner(Shared(bytes)), options)
            .await
    }

    async fn get_with(
        &self,
        container: &str,
        name: &str,
        options: GetOptions,
    ) -> Result<Option<(BlobProperties, Vec<u8>)>> {
        let name = BlobName::parse(name)?.into_string();
        let conditions = read_condition_headers(&options.condition)?;
        let mut request = self
            .blob_request(Method::GET, Resource::Blob, container, &name)?
            .absent_is_an_answer(crate::service::BLOB_NOT_FOUND);
        request.headers.extend(conditions.clone());
        let range = options.range;
        if let Some(range) = &range {
            if range.start >= range.end {
                // Nothing to read: an empty range cannot be sent.
                let props = self.head_with(container, &name, conditions).await?;
                return Ok(props.map(|(props, _)| (props, Vec::new())));
            }
            let value = if range.end == u64::MAX {
                format!("bytes={}-", range.start)
            } else {
                format!("bytes={}-{}", range.start, range.end - 1)
            };
            request = request.header(
                HeaderName::from_static("x-ms-range"),
                HeaderValue::try_from(value).expect("a range is a header value"),
            );
        }
        match self.send(request).await {
            Ok(answer) => Ok(Some((properties_from_headers(&answer.headers)?, answer.body))),
            Err(e) if is_blob_missing(&e) => Ok(None),
            Err(Error::Service { status: 416, .. }) if range.is_some() => {
                // The range starts at or past the end (any range does, on an empty blob).
                let props = self.head_with(container, &name, conditions).await?;
                Ok(props.map(|(props, _)| (props, Vec::new())))
            }
            Err(e) => Err(e),
        }
    }

    async fn get_into(&self, container: &str, name: &str, sink: &mut dyn BlobSink) -> Result<Option<BlobProperties>> {
        let name = BlobName::parse(name)?.into_string();
        let request = self
            .blob_request(Method::GET, Resource::Blob, container, &name)?
            .absent_is_an_answer(crate::service::BLOB_NOT_FOUND);
        let mut answer = match self.transport.send_streamed(request).await {
            Ok(answer) => answer,
            Err(e) if is_blob_missing(&e) => return Ok(None),
            Err(e) => return Err(e),
        };
        let props = properties_from_headers(&answer.headers)?;
        sink.start(&props);
        // The body is read by a task of its own, which keeps taking bytes off the connection while
        // this one hands them to the sink: the sink's work (hashing, unpacking) overlaps the
        // transfer instead of pausing it. The task stops when this read is dropped.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            loop {
                let chunk = answer.chunk().await;
                let last = !matches!(chunk, Ok(Some(_)));
                if tx.send(chunk).is_err() || last {
                    break;
                }
            }
        });
        while let Some(chunk) = rx.recv().await {
            match chunk? {
                Some(bytes) => sink.write(&bytes),
                None => break,
            }
        }
        Ok(Some(props))
    }

    async fn properties(&self, container: &str, name: &str) -> Result<Option<BlobProperties>> {
        let name = BlobName::parse(name)?.into_string();
        Ok(self.head(container, &name).await?.map(|(props, _)| props))
    }

    async fn touch(&self, container: &str, name: &str) -> Result<BlobProperties> {
        let name = BlobName::parse(name)?.into_string();
        let mut last_error = None;
        for _ in 0..TOUCH_ATTEMPTS {
            let Some((props, current)) = self.head(container, &name).await? else {
                return Err(Error::service(
                    404,
                    "BlobNotFound",
                    format!("The specified blob does not exist: `{container}/{name}`."),
                ));
            };
            let mut request = self
                .blob_request(Method::PUT, Resource::Blob, container, &name)?
                .query("comp", "metadata")
                .header(
                    IF_MATCH,
                    HeaderValue::try_from(props.etag.as_str())
                        .map_err(|e| Error::encode("the blob's ETag cannot be sent").with_source(e))?,
                );
            for (header, value) in current.iter() {
                if header.as_str().starts_with("x-ms-meta-") {
                    request.headers.append(header.clone(), value.clone());
                }
            }
            match self.send(request).await {
                Ok(answer) => {
                    let answer = answer.headers;
                    let with_id = |e: Error| e.with_request_id(request_id_of(&answer));
                    let etag = header(&answer, ETAG.as_str()).ok_or_else(|| with_id(unreadable("ETag", "missing")))?;
                    let last_modified = match header(&answer, LAST_MODIFIED.as_str()) {
                        Some(text) => parse_http_date(text).map_err(with_id)?,
                        None => props.last_modified,
                    };
                    return Ok(BlobProperties {
                        etag: quoted(etag),
                        last_modified,
                        ..props
                    });
                }
                // Written or deleted since it was read: read it again (a lease's 412 stands).
                Err(e @ Error::Service { status: 404, .. }) => last_error = Some(e),
                Err(e @ Error::Service { status: 412, .. }) if e.service_code() == Some((412, "ConditionNotMet")) => {
                    last_error = Some(e)
                }
                Err(e) => return Err(e),
            }
        }
        Err(last_error.unwrap_or_else(|| Error::transport("touch gave up")))
    }

    async fn delete_with(&self, container: &str, name: &str, options: DeleteOptions) -> Result<bool> {
        let name = BlobName::parse(name)?.into_string();
        let mut request = self.blob_request(Method::DELETE, Resource::Blob, container, &name)?;
        request.headers.extend(write_condition_headers(&options.condition)?);
        if let Some(lease) = options.lease {
            let (name, value) = lease_header(lease)?;
            request.headers.insert(name, value);
        }
        match self.send(request).await {
            Ok(_) => Ok(true),
            Err(e) if is_blob_missing(&e) => Ok(false),
            Err(other) => Err(other),
        }
    }

    async fn lease(&self, container: &str, name: &str, action: LeaseAction) -> Result<LeaseAnswer> {
        let name = BlobName::parse(name)?.into_string();
        let mut request = self
            .blob_request(Method::PUT, Resource::Lease, container, &name)?
            .query("comp", "lease");
        request.headers.extend(lease_headers(action));
        let answer = self.send(request).await?;
        lease_answer(&answer.headers)
    }

    async fn list(
        &self,
        container: &str,
        prefix: &str,
        delimiter: Option<&str>,
        marker: Option<&str>,
        max_results: u32,
    ) -> Result<BlobListing> {
        check_container_name(container)?;
        let max_results = max_results.min(MAX_LIST_RESULTS);
        if max_results == 0 {
            // The service answers 0 with this error.
            return Err(Error::service(
                400,
                "InvalidQueryParameterValue",
                "Value for one of the query parameters specified in the request URI is invalid: maxresults=`0`.",
            ));
        }
        let mut request = Outgoing::new(
            Method::GET,
            Resource::Container,
            format!("/{}", super::transport::wire::segment(container)),
        )
        .query("restype", "container")
        .query("comp", "list")
        .query("maxresults", max_results.to_string());
        if !prefix.is_empty() {
            request = request.query("prefix", prefix);
        }
        if let Some(delimiter) = delimiter.filter(|d| !d.is_empty()) {
            request = request.query("delimiter", delimiter);
        }
        if let Some(marker) = marker.filter(|m| !m.is_empty()) {
            request = request.query("marker", marker);
        }
        let answer = self.send(request).await?;
        parse_listing(&answer.body).map_err(|e| e.with_request_id(answer.request_id()))
    }

    async fn now(&self) -> Result<DateTime> {
        let request = Outgoing::new(Method::HEAD, Resource::Account, "")
            .query("restype", "account")
            .query("comp", "properties");
        let headers = self.send(request).await?.headers;
        let with_id = |e: Error| e.with_request_id(request_id_of(&headers));
        let date = header(&headers, DATE.as_str()).ok_or_else(|| with_id(unreadable("Date", "missing")))?;
        parse_http_date(date).map_err(with_id)
    }
}

#[path = "blob_put.rs"]
mod put;
use put::Shared;

#[cfg(test)]
#[path = "blob_tests.rs"]
pub(super) mod tests;
