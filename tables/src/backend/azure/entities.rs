//! Entity requests (get, insert, update, merge, the upserts, delete and
//! query) written here and sent straight through `hyper` for an account
//! key or a SAS ([`super::direct`]), or through the connection's pipeline
//! for a token credential; either way with the retries, deadline and capture
//! of service errors of [`super::http`].
//!
//! A body is written straight from the row ([`wire::write_row`]) and an
//! answer is read straight into rows ([`wire::row_from_slice`],
//! [`wire::page_from_slice`]): no JSON map in between. The requests are the
//! ones `azure_data_tables` sends (same URLs, headers and full metadata on
//! reads).

use azure_core::headers::{HeaderName as CoreHeaderName, Headers};
use azure_core::{Context, Method as CoreMethod, Url};
use azure_storage::clients::ServiceType;
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, CONTENT_TYPE, ETAG, IF_MATCH};
use reqwest::Method;

pub(super) use super::direct::Answer;
use super::http::{local_error, map_error};
use super::{quote_key, timestamp_from_etag, AzureBackend};
use crate::backend::{IfMatch, PageBody, PageToken, QueryRequest, UpdateMode, WriteOp, WriteOutcome};
use crate::error::{Error, Result};
use crate::value::{wire, ETag, Row};

/// What reads ask for: every property typed by its annotation.
const FULL_METADATA: HeaderValue = HeaderValue::from_static("application/json;odata=fullmetadata");
const JSON: HeaderValue = HeaderValue::from_static("application/json");
const NEXT_PARTITION_KEY: &str = "x-ms-continuation-nextpartitionkey";
const NEXT_ROW_KEY: &str = "x-ms-continuation-nextrowkey";
const PREFER: reqwest::header::HeaderName = reqwest::header::HeaderName::from_static("prefer");

impl AzureBackend {
    /// `{endpoint}/{segment}`, the segment percent-encoded as a path segment
    /// (as the crate builds its URLs).
    pub(super) fn url_of(&self, segment: &str) -> Result<Url> {
        let mut url = self.table_url.clone();
        url.path_segments_mut()
            .map_err(|()| Error::config(format!("table endpoint `{}` cannot hold a path", self.table_endpoint)))?
            .push(segment);
        Ok(url)
    }

    /// The URL of one entity: `Table(PartitionKey='..',RowKey='..')`, `'` doubled.
    pub(super) fn entity_url(&self, table: &str, pk: &str, rk: &str) -> Result<Url> {
        self.url_of(&format!(
            "{table}(PartitionKey='{}',RowKey='{}')",
            quote_key(pk),
            quote_key(rk)
        ))
    }

    /// Sends a request built here: straight through `hyper` for an
    /// account key or a SAS, else through the crate family's pipeline (the
    /// connection's authorisation, our retries and error capture).
    pub(super) async fn send(
        &self,
        method: Method,
        url: Url,
        headers: HeaderMap,
        body: Option<Vec<u8>>,
    ) -> Result<Answer> {
        if let Some(direct) = &self.direct {
            return direct.send(method, url, headers, body).await;
        }
        let mut core_headers = Headers::new();
        for (name, value) in &headers {
            if let Ok(value) = value.to_str() {
                core_headers.insert(CoreHeaderName::from(name.as_str().to_owned()), value.to_owned());
            }
        }
        let method = match method {
            Method::GET => CoreMethod::Get,
            Method::POST => CoreMethod::Post,
            Method::PUT => CoreMethod::Put,
            Method::DELETE => CoreMethod::Delete,
            other if other.as_str() == "MERGE" => CoreMethod::Merge,
            other => return Err(Error::encode(format!("an entity request with the method {other}"))),
        };
        let mut request = azure_storage::clients::finalize_request(url, method, core_headers, body.map(Into::into))
            .map_err(local_error)?;
        let mut ctx = Context::new();
        ctx.insert(ServiceType::Table);
        let response = self.pipeline.send(&ctx, &mut request).await.map_err(map_error)?;
        let (_, answer_headers, body) = response.deconstruct();
        let body = body.collect().await.map_err(map_error)?;
        let mut headers = HeaderMap::new();
        for (name, value) in answer_headers.iter() {
            if let (Ok(name), Ok(value)) = (
                reqwest::header::HeaderName::from_bytes(name.as_str().as_bytes()),
                HeaderValue::from_str(value.as_str()),
            ) {
                headers.append(name, value);
            }
        }
        Ok(Answer {
            headers,
            body: body.into(),
        })
    }

    pub(super) async fn get_entity(&self, table: &str, pk: &str, rk: &str) -> Result<Option<Row>> {
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, FULL_METADATA);
        let answer = match self
            .send(Method::GET, self.entity_url(table, pk, rk)?, headers, None)
            .await
        {
            Ok(answer) => answer,
            Err(Error::Service { status: 404, code, .. }) if code != "TableNotFound" => return Ok(None),
            Err(other) => return Err(other),
        };
        let mut row = wire::row_from_slice(&answer.body).map_err(|reason| unreadable_entity(reason, &answer))?;
        if let Some(etag) = answer.header(ETAG.as_str()) {
            row.etag = Some(ETag::new(etag));
        }
        Ok(Some(row))
    }

    /// One write: its body written straight from the row.
    pub(super) async fn write_entity(&self, table: &str, op: &WriteOp) -> Result<WriteOutcome> {
        let mut headers = HeaderMap::new();
        let (method, url) = match op {
            WriteOp::Insert(_) => {
                headers.insert(PREFER, HeaderValue::from_static("return-no-content"));
                headers.insert(ACCEPT, FULL_METADATA);
                (Method::POST, self.url_of(table)?)
            }
            WriteOp::Update { row, mode, condition } => {
                headers.insert(IF_MATCH, if_match(condition)?);
                (
                    method_of(*mode),
                    self.entity_url(table, &row.partition_key, &row.row_key)?,
                )
            }
            WriteOp::Upsert { row, mode } => (
                method_of(*mode),
                self.entity_url(table, &row.partition_key, &row.row_key)?,
            ),
            WriteOp::Delete {
                partition_key,
                row_key,
                condition,
            } => {
                headers.insert(IF_MATCH, if_match(condition)?);
                let url = self.entity_url(table, partition_key, row_key)?;
                self.send(Method::DELETE, url, headers, None).await?;
                return Ok(WriteOutcome {
                    etag: None,
                    timestamp: None,
                });
            }
        };
        headers.insert(CONTENT_TYPE, JSON);
        let body = op.row().map(wire::row_body);
        let answer = self.send(method, url, headers, body).await?;
        let etag = answer.header(ETAG.as_str()).map(ETag::new).ok_or_else(|| {
            Error::malformed_response("a write was answered without an ETag").with_request_id(answer.request_id())
        })?;
        Ok(WriteOutcome {
            timestamp: timestamp_from_etag(&etag),
            etag: Some(etag),
        })
    }

    /// Query Entities: one page, starting at `token`.
    pub(super) async fn query_page(
        &self,
        table: &str,
        request: &QueryRequest,
        token: Option<&PageToken>,
    ) -> Result<PageBody> {
        let mut url = self.url_of(&format!("{table}()"))?;
        {
            let mut query = url.query_pairs_mut();
            if let Some(filter) = &request.filter {
                query.append_pair("$filter", &filter.to_odata());
            }
            if let Some(select) = &request.select {
                let mut columns: Vec<&str> = vec!["PartitionKey", "RowKey", "Timestamp"];
                for c in select {
                    if !columns.contains(&c.as_str()) {
                        columns.push(c);
                    }
                }
                query.append_pair("$select", &columns.join(","));
            }
            if let Some(top) = request.top {
                query.append_pair("$top", &top.to_string());
            }
            if let Some(token) = token {
                query.append_pair("NextPartitionKey", &token.next_partition_key);
                if let Some(rk) = &token.next_row_key {
                    query.append_pair("NextRowKey", rk);
                }
            }
        }
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, FULL_METADATA);
        let answer = self.send(Method::GET, url, headers, None).await?;
        let next = answer.header(NEXT_PARTITION_KEY).map(|pk| PageToken {
            next_partition_key: pk.to_owned(),
            next_row_key: answer.header(NEXT_ROW_KEY).map(str::to_owned),
        });
        let request_id = answer.request_id().map(str::to_owned);
        Ok(PageBody::new(answer.body, next).with_request_id(request_id.as_deref()))
    }
}

fn method_of(mode: UpdateMode) -> Method {
    match mode {
        UpdateMode::Replace => Method::PUT,
        UpdateMode::Merge => Method::from_bytes(b"MERGE").expect("MERGE is a method name"),
    }
}

fn if_match(condition: &IfMatch) -> Result<HeaderValue> {
    match condition {
        IfMatch::Any => Ok(HeaderValue::from_static("*")),
        IfMatch::ETag(e) => HeaderValue::from_str(e.as_str()).map_err(|err| {
            Error::encode(format!("the ETag `{}` cannot be sent in If-Match", e.as_str())).with_source(err)
        }),
    }
}

fn unreadable_entity(reason: String, answer: &Answer) -> Error {
    Error::malformed_response(format!("an entity that cannot be read: {reason}")).with_request_id(answer.request_id())
}
