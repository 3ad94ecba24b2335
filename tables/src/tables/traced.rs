//! The decorator every handle puts around its backends (not a public
//! decorator: a handle always has it): one span per
//! request asked of a backend, whatever the backend (the in-memory one has
//! no transport of its own), and the count of requests per operation.

use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use tracing::field::Empty;
use tracing::{Instrument as _, Span};

use crate::backend::blob::{
    BlobBackend, BlobCondition, BlobListing, BlobProperties, BlobSink, DeleteOptions, GetOptions, LeaseAction,
    LeaseAnswer, PutOptions,
};
use crate::backend::{Backend, Page, PageAnswer, PageToken, QueryRequest, WriteOp, WriteOutcome};
use crate::error::Result;
use crate::telemetry::{charged, error_type, request as count_request, status_code, REQUEST_CHARGE, REQUEST_TARGET};
use crate::value::{DateTime, Row};

/// A backend whose requests each run in a [`REQUEST_SPAN`](crate::telemetry::REQUEST_SPAN).
#[derive(Debug, Clone)]
pub(crate) struct Traced<B: ?Sized>(pub(crate) Arc<B>);

fn span(request: &'static str, resource: &'static str) -> Span {
    tracing::debug_span!(
        target: REQUEST_TARGET,
        "db.request",
        request,
        resource,
        db.operation.batch.size = Empty,
        { REQUEST_CHARGE } = Empty,
        db.response.status_code = Empty,
        error.type = Empty,
    )
}

/// Runs one request in `span`, recording a failure on it.
async fn traced<R>(
    span: Span,
    resource: &'static str,
    work: impl std::future::Future<Output = Result<R>>,
) -> Result<R> {
    count_request(resource);
    if span.is_disabled() {
        return work.await;
    }
    let result = charged(&span, work.instrument(span.clone())).await;
    if let Err(error) = &result {
        span.record("error.type", error_type(error));
        if let Some(status) = status_code(error) {
            span.record("db.response.status_code", tracing::field::display(status));
        }
    }
    result
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<B: Backend + ?Sized> Backend for Traced<B> {
    async fn create_table(&self, table: &str) -> Result<()> {
        traced(span("create_table", "table"), "table", self.0.create_table(table)).await
    }
    async fn delete_table(&self, table: &str) -> Result<()> {
        traced(span("delete_table", "table"), "table", self.0.delete_table(table)).await
    }
    async fn get(&self, table: &str, partition_key: &str, row_key: &str) -> Result<Option<Row>> {
        traced(
            span("get", "entity"),
            "entity",
            self.0.get(table, partition_key, row_key),
        )
        .await
    }
    async fn execute(&self, table: &str, op: WriteOp) -> Result<WriteOutcome> {
        let name = match &op {
            WriteOp::Insert(_) => "insert",
            WriteOp::Update { .. } => "update",
            WriteOp::Upsert { .. } => "upsert",
            WriteOp::Delete { .. } => "delete",
        };
        traced(span(name, "entity"), "entity", self.0.execute(table, op)).await
    }
    async fn transaction(&self, table: &str, ops: Vec<WriteOp>) -> Result<Vec<WriteOutcome>> {
        let span = span("transaction", "batch");
        span.record("db.operation.batch.size", ops.len());
        traced(span, "batch", self.0.transaction(table, ops)).await
    }
    async fn query(&self, table: &str, request: &QueryRequest, token: Option<&PageToken>) -> Result<Page> {
        traced(span("query", "query"), "query", self.0.query(table, request, token)).await
    }
    async fn query_body(&self, table: &str, request: &QueryRequest, token: Option<&PageToken>) -> Result<PageAnswer> {
        traced(
            span("query", "query"),
            "query",
            self.0.query_body(table, request, token),
        )
        .await
    }
    fn profile(&self) -> crate::service::ServiceProfile {
        self.0.profile()
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<B: BlobBackend + ?Sized> BlobBackend for Traced<B> {
    async fn create_container(&self, container: &str) -> Result<()> {
        traced(
            span("create_container", "container"),
            "container",
            self.0.create_container(container),
        )
        .await
    }
    async fn put(&self, container: &str, name: &str, bytes: Vec<u8>, options: PutOptions) -> Result<BlobProperties> {
        traced(span("put", "blob"), "blob", self.0.put(container, name, bytes, options)).await
    }
    async fn put_shared(
        &self,
        container: &str,
        name: &str,
        bytes: Arc<Vec<u8>>,
        options: PutOptions,
    ) -> Result<BlobProperties> {
        traced(
            span("put", "blob"),
            "blob",
            self.0.put_shared(container, name, bytes, options),
        )
        .await
    }
    async fn get(
        &self,
        container: &str,
        name: &str,
        range: Option<Range<u64>>,
    ) -> Result<Option<(BlobProperties, Vec<u8>)>> {
        traced(span("get_blob", "blob"), "blob", self.0.get(container, name, range)).await
    }
    async fn get_with(
        &self,
        container: &str,
        name: &str,
        options: GetOptions,
    ) -> Result<Option<(BlobProperties, Vec<u8>)>> {
        traced(
            span("get_blob", "blob"),
            "blob",
            self.0.get_with(container, name, options),
        )
        .await
    }
    async fn get_into(&self, container: &str, name: &str, sink: &mut dyn BlobSink) -> Result<Option<BlobProperties>> {
        traced(span("get_blob", "blob"), "blob", self.0.get_into(container, name, sink)).await
    }
    async fn get_hashed(&self, container: &str, name: &str) -> Result<Option<(BlobProperties, Vec<u8>, String)>> {
        traced(span("get_blob", "blob"), "blob", self.0.get_hashed(container, name)).await
    }
    async fn properties(&self, container: &str, name: &str) -> Result<Option<BlobProperties>> {
        traced(span("properties", "blob"), "blob", self.0.properties(container, name)).await
    }
    async fn touch(&self, container: &str, name: &str) -> Result<BlobProperties> {
        traced(span("touch", "blob"), "blob", self.0.touch(container, name)).await
    }
    async fn delete(&self, container: &str, name: &str, condition: BlobCondition) -> Result<bool> {
        traced(
            span("delete_blob", "blob"),
            "blob",
            self.0.delete(container, name, condition),
        )
        .await
    }
    async fn delete_with(&self, container: &str, name: &str, options: DeleteOptions) -> Result<bool> {
        traced(
            span("delete_blob", "blob"),
            "blob",
            self.0.delete_with(container, name, options),
        )
        .await
    }
    async fn lease(&self, container: &str, name: &str, action: LeaseAction) -> Result<LeaseAnswer> {
        traced(span("lease", "lease"), "lease", self.0.lease(container, name, action)).await
    }
    async fn list(
        &self,
        container: &str,
        prefix: &str,
        delimiter: Option<&str>,
        marker: Option<&str>,
        max_results: u32,
    ) -> Result<BlobListing> {
        traced(
            span("list", "container"),
            "container",
            self.0.list(container, prefix, delimiter, marker, max_results),
        )
        .await
    }
    async fn now(&self) -> Result<DateTime> {
        traced(span("now", "account"), "account", self.0.now()).await
    }
}
