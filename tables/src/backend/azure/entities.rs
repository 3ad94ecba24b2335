//! Entity requests (get, insert, update, merge, the upserts, delete and
//! query) written here and sent through the connection's pipeline, so that
//! authorisation, retries and the capture of service errors are the ones
//! every other request of the backend passes.
//!
//! A body is written straight from the row ([`wire::write_row`]) and an
//! answer is read straight into rows ([`wire::row_from_slice`],
//! [`wire::page_from_slice`]): no JSON map in between. The requests are the
//! ones `azure_data_tables` sends (same URLs, headers and full metadata on
//! reads).

use azure_core::headers::{self, HeaderName, Headers};
use azure_core::{Context, Method, Url};
use azure_storage::clients::ServiceType;

use super::http::{local_error, map_error, REQUEST_ID};
use super::{quote_key, timestamp_from_etag, AzureBackend};
use crate::backend::{IfMatch, PageBody, PageToken, QueryRequest, UpdateMode, WriteOp, WriteOutcome};
use crate::error::{Error, Result};
use crate::value::{wire, ETag, Row};

/// What reads ask for: every property typed by its annotation.
const FULL_METADATA: &str = "application/json;odata=fullmetadata";
const NEXT_PARTITION_KEY: &str = "x-ms-continuation-nextpartitionkey";
const NEXT_ROW_KEY: &str = "x-ms-continuation-nextrowkey";

/// An answer: its headers and its body.
pub(super) struct Answer {
    pub(super) headers: Headers,
    pub(super) body: Vec<u8>,
}

impl Answer {
    /// The service's `x-ms-request-id` of this answer.
    pub(super) fn request_id(&self) -> Option<&str> {
        self.headers.get_optional_str(&HeaderName::from_static(REQUEST_ID))
    }
}

impl AzureBackend {
    /// `{endpoint}/{segment}`, the segment percent-encoded as a path segment
    /// (as the crate builds its URLs).
    fn url_of(&self, segment: &str) -> Result<Url> {
        let mut url = Url::parse(&self.table_endpoint)
            .map_err(|e| Error::config(format!("table endpoint `{}`", self.table_endpoint)).with_source(e))?;
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

    /// Sends a request built here through the crate family's pipeline
    /// (the connection's authorisation, our retries and error capture).
    pub(super) async fn send(
        &self,
        method: Method,
        url: Url,
        headers: Headers,
        body: Option<Vec<u8>>,
    ) -> Result<Answer> {
        let mut request = azure_storage::clients::finalize_request(url, method, headers, body.map(Into::into))
            .map_err(local_error)?;
        let mut ctx = Context::new();
        ctx.insert(ServiceType::Table);
        let response = self.pipeline.send(&ctx, &mut request).await.map_err(map_error)?;
        let (_, headers, body) = response.deconstruct();
        let body = body.collect().await.map_err(map_error)?;
        Ok(Answer {
            headers,
            body: body.into(),
        })
    }

    /// Get Entity: the row, or `None` when it does not exist.
    pub(super) async fn get_entity(&self, table: &str, pk: &str, rk: &str) -> Result<Option<Row>> {
        let mut headers = Headers::new();
        headers.insert(headers::ACCEPT, FULL_METADATA);
        let answer = match self
            .send(Method::Get, self.entity_url(table, pk, rk)?, headers, None)
            .await
        {
            Ok(answer) => answer,
            Err(Error::Service { status: 404, code, .. }) if code != "TableNotFound" => return Ok(None),
            Err(other) => return Err(other),
        };
        let mut row = wire::row_from_slice(&answer.body).map_err(|reason| unreadable_entity(reason, &answer))?;
        if let Some(etag) = answer.headers.get_optional_string(&headers::ETAG) {
            row.etag = Some(ETag::new(etag));
        }
        Ok(Some(row))
    }

    /// One write: its body written straight from the row.
    pub(super) async fn write_entity(&self, table: &str, op: &WriteOp) -> Result<WriteOutcome> {
        let mut headers = Headers::new();
        let (method, url) = match op {
            WriteOp::Insert(_) => {
                headers.insert(headers::PREFER, "return-no-content");
                headers.insert(headers::ACCEPT, FULL_METADATA);
                (Method::Post, self.url_of(table)?)
            }
            WriteOp::Update { row, mode, condition } => {
                headers.insert(headers::IF_MATCH, if_match(condition));
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
                headers.insert(headers::IF_MATCH, if_match(condition));
                let url = self.entity_url(table, partition_key, row_key)?;
                self.send(Method::Delete, url, headers, None).await?;
                return Ok(WriteOutcome {
                    etag: None,
                    timestamp: None,
                });
            }
        };
        headers.insert(headers::CONTENT_TYPE, "application/json");
        let body = op.row().map(wire::row_body);
        let answer = self.send(method, url, headers, body).await?;
        let etag = answer
            .headers
            .get_optional_string(&headers::ETAG)
            .map(ETag::new)
            .ok_or_else(|| {
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
        let mut headers = Headers::new();
        headers.insert(headers::ACCEPT, FULL_METADATA);
        let answer = self.send(Method::Get, url, headers, None).await?;
        let next = answer
            .headers
            .get_optional_string(&HeaderName::from_static(NEXT_PARTITION_KEY))
            .map(|pk| PageToken {
                next_partition_key: pk,
                next_row_key: answer
                    .headers
                    .get_optional_string(&HeaderName::from_static(NEXT_ROW_KEY)),
            });
        let request_id = answer.request_id().map(str::to_owned);
        Ok(PageBody::new(answer.body, next).with_request_id(request_id.as_deref()))
    }
}

fn method_of(mode: UpdateMode) -> Method {
    match mode {
        UpdateMode::Replace => Method::Put,
        UpdateMode::Merge => Method::Merge,
    }
}

fn if_match(condition: &IfMatch) -> String {
    match condition {
        IfMatch::Any => "*".to_owned(),
        IfMatch::ETag(e) => e.as_str().to_owned(),
    }
}

fn unreadable_entity(reason: String, answer: &Answer) -> Error {
    Error::malformed_response(format!("an entity that cannot be read: {reason}")).with_request_id(answer.request_id())
}
