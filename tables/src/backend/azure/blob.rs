//! Azure Blob Storage (and Azurite) over `azure_storage_blobs`.
//!
//! What this backend adds to the crate:
//!
//! - **The same HTTP policy as the table backend**: the reqwest client with
//!   the [`RetryPolicy`](crate::RetryPolicy)'s timeouts and no transparent gzip
//!   (Content-Encoding is stored and echoed, never applied), retries of
//!   transient failures as the policy says, and every error answer as
//!   [`Error::Service`] with the `x-ms-error-code` and the `x-ms-request-id`.
//! - **Empty blobs.** The crate's `get` always sends a `Range` header, and
//!   the service answers 416 `InvalidRange` to any range on an empty blob, so
//!   the crate cannot download one. Whole-blob reads here are a plain `GET`
//!   without a range (one request, so the bytes and the properties are of the
//!   same version); a ranged read that the service answers with 416 (a range
//!   starting at or past the end, or any range on an empty blob) reads the
//!   properties and returns no bytes, as the contract's clipping asks.
//! - **Names.** Names are folded with [`BlobName::parse`](crate::service::BlobName::parse)
//!   before they reach the crate: `url`'s path-segment setter drops `.` and
//!   `..` segments instead of resolving them (`a/../b` would address `a/b`,
//!   where the service stores `b`), and the crate trims leading and trailing
//!   `/`. Both backends refuse the names they could not agree on.
//! - **Conditions**: `If-None-Match: *`, `If-Match` and `If-Unmodified-Since`
//!   on writes through the crate's `IfMatchCondition` / `IfModifiedSinceCondition`;
//!   `If-Match` / `If-None-Match` on reads as headers of the plain `GET`
//!   (a 304 answer is returned as [`Error::Service`] with status 304).
//! - **Leases**: Lease Blob is sent as a plain request (`comp=lease` with
//!   `x-ms-lease-action`), and the lease id of a put or delete through the
//!   crates' `LeaseId`.
//! - **`touch`** reads the properties and user metadata, then re-sets the
//!   same metadata (Set Blob Metadata) under `If-Match`, so the bytes,
//!   content headers and metadata stay and only ETag and Last-Modified move;
//!   a concurrent write makes it read and try again.
//! - **`now`** is the `Date` header of Get Account Information (needs
//!   account-level access: the account key, or an account SAS).
//! - **Listing ETags** come back quoted, as in the `ETag` header (the listing
//!   XML carries them bare).
//!
//! Azurite 3.37 differs from the service here (the conformance scenarios in
//! `tests/src/blob_scenarios.rs` assert each side):
//!
//! - A delete with `If-None-Match: *` deletes an existing blob (the service
//!   and the in-memory backend answer 412 `ConditionNotMet`).
//! - It stores names longer than 1024 characters (both backends refuse them
//!   before sending).
//! - Its listing XML drops control characters from names (a tab vanishes),
//!   and a name holding U+0001 makes the listing fail with 500.
//! - Its markers are the last name returned, and it accepts any marker; the
//!   service's markers are opaque.
//!
//! Get Blob, Get Blob Properties, the metadata write of `touch` and Get
//! Account Information are sent as plain requests through the crate family's
//! pipeline (the connection's authorisation, our retries and error capture): the crate's Get Blob
//! always sends a range, its `Blob::from_headers` requires
//! `x-ms-creation-time` and `x-ms-server-encrypted` and puts
//! `application/octet-stream` where no Content-Type came, and its Set Blob
//! Metadata answer drops Last-Modified. Container creation, Put Blob, Delete
//! Blob and List Blobs go through the crate's builders.

use std::fmt;
use std::num::NonZeroU32;
use std::sync::Arc;

use async_trait::async_trait;
use azure_core::headers::{self as h, HeaderName, Headers};
use azure_core::prelude::{Delimiter, MaxResults, NextMarker, Prefix};
use azure_core::{Context, Method, Pipeline, Url};
use azure_storage::clients::ServiceType;
use azure_storage::CloudLocation;
use azure_storage_blobs::container::operations::BlobItem as CrateBlobItem;
use azure_storage_blobs::prelude::{BlobClient, BlobServiceClient, ClientBuilder};
use bytes::Bytes;
use futures::StreamExt as _;

use super::azure_connection::AzureConnection;
use super::blob_headers::{
    if_match, is_blob_missing, lease_answer, lease_headers, lease_id, parse_http_date, properties_from_headers, quoted,
    read_condition_headers, request_id_of, unreadable,
};
use super::connection_string::{self, ConnectionString};
use super::http::{client_options, local_error, map_error};
use crate::backend::blob::{
    BlobBackend, BlobItem, BlobListing, BlobProperties, BlobSink, DeleteOptions, GetOptions, LeaseAction, LeaseAnswer,
    PutOptions,
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
    service: BlobServiceClient,
    pipeline: Pipeline,
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

    pub(crate) fn build(connection: &AzureConnection, client: reqwest::Client) -> Result<AzureBlobBackend> {
        if connection.blob_endpoint().is_empty() {
            return Err(Error::config(
                "connection string: no blob endpoint (give BlobEndpoint=, or AccountName= to derive it)",
            ));
        }
        let credentials = connection.auth().storage_credentials(connection.account_name())?;
        let options = client_options(client, *connection.retry());
        let location = CloudLocation::Custom {
            account: connection.account_name().to_owned(),
            uri: connection.blob_endpoint().to_owned(),
        };
        let service = ClientBuilder::with_location(location, credentials.clone())
            .client_options(options.clone())
            .blob_service_client();
        let pipeline = azure_storage::clients::new_pipeline_from_options(options, credentials);
        Ok(AzureBlobBackend {
            service,
            pipeline,
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

    /// The crate's client of a blob whose name is already canonical.
    fn blob_client(&self, container: &str, canonical: &str) -> Result<BlobClient> {
        check_container_name(container)?;
        Ok(self.service.container_client(container).blob_client(canonical))
    }

    fn blob_url(&self, container: &str, canonical: &str) -> Result<Url> {
        self.blob_client(container, canonical)?.url().map_err(local_error)
    }

    /// Sends a request built here through the crate family's pipeline
    /// (the connection's authorisation, our retries and error capture).
    async fn send(&self, method: Method, url: Url, headers: Headers) -> Result<(Headers, Vec<u8>)> {
        let mut request = azure_storage::clients::finalize_request(url, method, headers, None).map_err(local_error)?;
        let mut ctx = Context::new();
        ctx.insert(ServiceType::Blob);
        let response = self.pipeline.send(&ctx, &mut request).await.map_err(map_error)?;
        let (_, headers, body) = response.deconstruct();
        let bytes = body.collect().await.map_err(map_error)?;
        Ok((headers, Vec::from(bytes)))
    }

    /// Get Blob Properties: the properties and the response headers, or
    /// `None` when the blob does not exist.
    async fn head(&self, container: &str, canonical: &str) -> Result<Option<(BlobProperties, Headers)>> {
        self.head_with(container, canonical, Headers::new()).await
    }

    /// [`Self::head`] with request headers (read conditions).
    async fn head_with(
        &self,
        container: &str,
        canonical: &str,
        headers: Headers,
    ) -> Result<Option<(BlobProperties, Headers)>> {
        let url = self.blob_url(container, canonical)?;
        match self.send(Method::Head, url, headers).await {
            Ok((headers, _)) => Ok(Some((properties_from_headers(&headers)?, headers))),
            Err(e) if is_blob_missing(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

#[async_trait]
impl BlobBackend for AzureBlobBackend {
    async fn create_container(&self, container: &str) -> Result<()> {
        check_container_name(container)?;
        match self.service.container_client(container).create().await {
            Ok(_) => Ok(()),
            Err(e) => match map_error(e) {
                Error::Service { status: 409, code, .. } if code == "ContainerAlreadyExists" => Ok(()),
                other => Err(other),
            },
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
        let url = self.blob_url(container, &name)?;
        let conditions = read_condition_headers(&options.condition);
        let mut headers = conditions.clone();
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
            headers.insert(HeaderName::from_static("x-ms-range"), value);
        }
        match self.send(Method::Get, url, headers).await {
            Ok((headers, bytes)) => Ok(Some((properties_from_headers(&headers)?, bytes))),
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
        let url = self.blob_url(container, &name)?;
        let mut request =
            azure_storage::clients::finalize_request(url, Method::Get, Headers::new(), None).map_err(local_error)?;
        let mut ctx = Context::new();
        ctx.insert(ServiceType::Blob);
        let response = match self.pipeline.send(&ctx, &mut request).await.map_err(map_error) {
            Ok(r) => r,
            Err(e) if is_blob_missing(&e) => return Ok(None),
            Err(e) => return Err(e),
        };
        let (_, headers, mut body) = response.deconstruct();
        let props = properties_from_headers(&headers)?;
        sink.start(&props);
        // The body is read by a task of its own, which keeps taking bytes off the connection while
        // this one hands them to the sink: the sink's work (hashing, unpacking) overlaps the
        // transfer instead of pausing it. The task stops when this read is dropped.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Some(chunk) = body.next().await {
                let failed = chunk.is_err();
                if tx.send(chunk).is_err() || failed {
                    break;
                }
            }
        });
        while let Some(chunk) = rx.recv().await {
            sink.write(&chunk.map_err(map_error)?);
        }
        Ok(Some(props))
    }

    async fn properties(&self, container: &str, name: &str) -> Result<Option<BlobProperties>> {
        let name = BlobName::parse(name)?.into_string();
        Ok(self.head(container, &name).await?.map(|(props, _)| props))
    }

    async fn touch(&self, container: &str, name: &str) -> Result<BlobProperties> {
        let name = BlobName::parse(name)?.into_string();
        let url = {
            let mut url = self.blob_url(container, &name)?;
            url.query_pairs_mut().append_pair("comp", "metadata");
            url
        };
        let mut last_error = None;
        for _ in 0..TOUCH_ATTEMPTS {
            let Some((props, current)) = self.head(container, &name).await? else {
                return Err(Error::service(
                    404,
                    "BlobNotFound",
                    format!("The specified blob does not exist: `{container}/{name}`."),
                ));
            };
            let mut headers = Headers::new();
            headers.insert(h::IF_MATCH, props.etag.clone());
            for (header, value) in current.iter() {
                if header.as_str().starts_with("x-ms-meta-") {
                    headers.insert(header.clone(), value.clone());
                }
            }
            match self.send(Method::Put, url.clone(), headers).await {
                Ok((answer, _)) => {
                    let with_id = |e: Error| e.with_request_id(request_id_of(&answer));
                    let etag = answer
                        .get_optional_str(&h::ETAG)
                        .ok_or_else(|| with_id(unreadable("ETag", "missing")))?;
                    let last_modified = match answer.get_optional_str(&h::LAST_MODIFIED) {
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
        let mut builder = self.blob_client(container, &name)?.delete();
        let (etag_condition, date_condition) = if_match(&options.condition)?;
        if let Some(condition) = etag_condition {
            builder = builder.if_match(condition);
        }
        if let Some(condition) = date_condition {
            builder = builder.if_modified_since(condition);
        }
        if let Some(lease) = options.lease {
            builder = builder.lease_id(lease_id(lease)?);
        }
        match builder.await {
            Ok(_) => Ok(true),
            Err(e) => match map_error(e) {
                e if is_blob_missing(&e) => Ok(false),
                other => Err(other),
            },
        }
    }

    async fn lease(&self, container: &str, name: &str, action: LeaseAction) -> Result<LeaseAnswer> {
        let name = BlobName::parse(name)?.into_string();
        let mut url = self.blob_url(container, &name)?;
        url.query_pairs_mut().append_pair("comp", "lease");
        let (headers, _) = self.send(Method::Put, url, lease_headers(action)).await?;
        lease_answer(&headers)
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
        let Some(max_results) = NonZeroU32::new(max_results.min(MAX_LIST_RESULTS)) else {
            // The crate cannot send 0; the service answers it with this error.
            return Err(Error::service(
                400,
                "InvalidQueryParameterValue",
                "Value for one of the query parameters specified in the request URI is invalid: maxresults=`0`.",
            ));
        };
        let mut builder = self
            .service
            .container_client(container)
            .list_blobs()
            .max_results(MaxResults::new(max_results));
        if !prefix.is_empty() {
            builder = builder.prefix(Prefix::new(prefix.to_owned()));
        }
        if let Some(delimiter) = delimiter.filter(|d| !d.is_empty()) {
            builder = builder.delimiter(Delimiter::new(delimiter.to_owned()));
        }
        if let Some(marker) = marker.filter(|m| !m.is_empty()) {
            builder = builder.marker(NextMarker::new(marker.to_owned()));
        }
        let page = builder
            .into_stream()
            .next()
            .await
            .ok_or_else(|| Error::transport("the listing returned no page"))?
            .map_err(map_error)?;
        let mut listing = BlobListing {
            next_marker: page
                .next_marker
                .map(|m| m.as_str().to_owned())
                .filter(|m| !m.is_empty()),
            ..BlobListing::default()
        };
        for item in page.blobs.items {
            match item {
                CrateBlobItem::Blob(blob) => {
                    let p = blob.properties;
                    listing.items.push(BlobItem {
                        name: blob.name,
                        properties: BlobProperties {
                            etag: quoted(p.etag.as_ref()),
                            last_modified: DateTime::from_unix_nanos(p.last_modified.unix_timestamp_nanos()),
                            length: p.content_length,
                            content_type: Some(p.content_type).filter(|t| !t.is_empty()),
                            content_encoding: p.content_encoding.filter(|e| !e.is_empty()),
                        },
                    });
                }
                CrateBlobItem::BlobPrefix(prefix) => listing.prefixes.push(prefix.name),
            }
        }
        Ok(listing)
    }

    async fn now(&self) -> Result<DateTime> {
        let mut url = self.service.url().map_err(local_error)?;
        url.query_pairs_mut()
            .append_pair("restype", "account")
            .append_pair("comp", "properties");
        let (headers, _) = self.send(Method::Head, url, Headers::new()).await?;
        let with_id = |e: Error| e.with_request_id(request_id_of(&headers));
        let date = headers
            .get_optional_str(&h::DATE)
            .ok_or_else(|| with_id(unreadable("Date", "missing")))?;
        parse_http_date(date).map_err(with_id)
    }
}

#[path = "blob_put.rs"]
mod put;
use put::Shared;

#[cfg(test)]
#[path = "blob_tests.rs"]
mod tests;
