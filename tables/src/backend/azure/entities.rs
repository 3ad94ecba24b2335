//! Entity requests (get, insert, update, merge, the upserts, delete and
//! query) written here and sent through the connection's transport
//! ([`super::transport`]), whatever the credential.
//!
//! A body is written straight from the row ([`wire::write_row`]) and an
//! answer is read straight into rows ([`wire::row_from_slice`],
//! [`wire::page_from_slice`]): no JSON map in between. The requests are the
//! ones `azure_data_tables` sends (same URLs, headers and full metadata on
//! reads).

use hyper::header::{HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE, ETAG, IF_MATCH};
use hyper::Method;

use super::transport::{Answer, Outgoing, Resource};
use super::{entity_path, timestamp_from_etag, AzureBackend};
use crate::backend::{IfMatch, PageBody, PageToken, QueryRequest, UpdateMode, WriteOp, WriteOutcome};
use crate::error::{Error, Result};
use crate::value::{wire, ETag, Row};

/// What reads ask for: every property typed by its annotation.
const FULL_METADATA: HeaderValue = HeaderValue::from_static("application/json;odata=fullmetadata");
const JSON: HeaderValue = HeaderValue::from_static("application/json");
const NEXT_PARTITION_KEY: &str = "x-ms-continuation-nextpartitionkey";
const NEXT_ROW_KEY: &str = "x-ms-continuation-nextrowkey";
pub(super) const PREFER: HeaderName = HeaderName::from_static("prefer");
pub(super) const DATA_SERVICE_VERSION: HeaderName = HeaderName::from_static("dataserviceversion");
pub(super) const MAX_DATA_SERVICE_VERSION: HeaderName = HeaderName::from_static("maxdataserviceversion");

/// The path of one entity: `/Table(PartitionKey='..',RowKey='..')`, `'` doubled.
fn entity(table: &str, pk: &str, rk: &str) -> String {
    format!("/{}", entity_path(table, pk, rk))
}

impl AzureBackend {
    pub(super) async fn get_entity(&self, table: &str, pk: &str, rk: &str) -> Result<Option<Row>> {
        let request = Outgoing::new(Method::GET, Resource::Entity, entity(table, pk, rk))
            .header(ACCEPT, FULL_METADATA)
            .absent_is_an_answer(crate::service::ENTITY_NOT_FOUND);
        let answer = match self.transport.send(request).await {
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
        let request = match op {
            WriteOp::Insert(_) => Outgoing::new(Method::POST, Resource::Entity, format!("/{table}"))
                .header(PREFER, HeaderValue::from_static("return-no-content"))
                .header(ACCEPT, FULL_METADATA),
            WriteOp::Update { row, mode, condition } => Outgoing::new(
                method_of(*mode),
                Resource::Entity,
                entity(table, &row.partition_key, &row.row_key),
            )
            .header(IF_MATCH, if_match(condition)?),
            WriteOp::Upsert { row, mode } => Outgoing::new(
                method_of(*mode),
                Resource::Entity,
                entity(table, &row.partition_key, &row.row_key),
            ),
            WriteOp::Delete {
                partition_key,
                row_key,
                condition,
            } => {
                let request = Outgoing::new(Method::DELETE, Resource::Entity, entity(table, partition_key, row_key))
                    .header(IF_MATCH, if_match(condition)?);
                self.transport.send(request).await?;
                return Ok(WriteOutcome {
                    etag: None,
                    timestamp: None,
                });
            }
        };
        let mut request = request.header(CONTENT_TYPE, JSON);
        if let Some(row) = op.row() {
            request = request.body(wire::row_body(row));
        }
        let answer = self.transport.send(request).await?;
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
        let mut out = Outgoing::new(Method::GET, Resource::Query, format!("/{table}()")).header(ACCEPT, FULL_METADATA);
        if let Some(filter) = &request.filter {
            out = out.query("$filter", filter.to_odata());
        }
        if let Some(select) = &request.select {
            let mut columns: Vec<&str> = vec!["PartitionKey", "RowKey", "Timestamp"];
            for c in select {
                if !columns.contains(&c.as_str()) {
                    columns.push(c);
                }
            }
            out = out.query("$select", columns.join(","));
        }
        if let Some(top) = request.top {
            out = out.query("$top", top.to_string());
        }
        if let Some(token) = token {
            out = out.query("NextPartitionKey", token.next_partition_key.clone());
            if let Some(rk) = &token.next_row_key {
                out = out.query("NextRowKey", rk.clone());
            }
        }
        let answer = self.transport.send(out).await?;
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
