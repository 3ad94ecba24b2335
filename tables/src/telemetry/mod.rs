//! What the crate tells a `tracing` subscriber and (feature `metrics`) a
//! `metrics` recorder: the names of its spans, events and metrics, and
//! their levels. The guide's chapter
//! [Telemetry](crate::guide::telemetry) shows how to see them.
//!
//! Spans follow OpenTelemetry's stable database conventions:
//!
//! - **one INFO span [`OPERATION_SPAN`] per public operation** of
//!   [`Store`](crate::Store), [`UnionStore`](crate::UnionStore),
//!   [`Lock`](crate::lock::Lock), [`BlobContainer`](crate::BlobContainer) and
//!   [`admin`](crate::admin), on the target [`OPERATION_TARGET`], named
//!   (`otel.name`) `{db.operation.name} {db.collection.name}`, with
//!   `otel.kind = "client"`, `db.system.name` ([`DB_SYSTEM`]; [`DB_SYSTEM_COSMOS`]
//!   on Cosmos DB for Table; or
//!   [`DB_SYSTEM_BLOBS`] for a blob container or a lock), `db.collection.name`
//!   (the table or container), `db.operation.name` (the verb: `get`,
//!   `upsert`, `create`, `mutate`, `query`, `create_batch`, …),
//!   `db.operation.batch.size` for a batch, `db.namespace`, `server.address`
//!   and `server.port` for a handle from
//!   [`Tables::connect_with`](crate::Tables::connect_with) (the account and
//!   its table endpoint), and on failure `error.type` (the
//!   [`ErrorKind`] in snake case: `already_exists`,
//!   `precondition_failed`, `not_found`, `throttled`, …) and
//!   `db.response.status_code` (the service's status, when the failure is
//!   one), and on Cosmos DB for Table [`REQUEST_CHARGE`]
//!   (`azure.cosmosdb.operation.request_charge`: the request units its
//!   requests were charged, from their answers' `x-ms-request-charge`).
//!   An operation called inside another (a `mutate`'s read) adds no
//!   span of its own. A stream ([`Store::stream`](crate::Store::stream),
//!   [`UnionStore::stream`](crate::UnionStore::stream), an index lookup's
//!   `stream` or its whole answer) is one operation (`stream`, or
//!   `index_find`) whose span is entered at each poll, so every page's
//!   request is inside it, also a page fetched ahead by a task of its own;
//!   it ends at the stream's end, at its first error, or when the stream is
//!   dropped before its end (a success). An index lookup's page is
//!   `index_page`, a unique index's `get` is `index_get`. Reading a file
//!   field is an operation on its container
//!   ([`BlobContent::read_all`](crate::BlobContent::read_all) is `read_all`,
//!   [`BlobContent::open`](crate::BlobContent::open) a stream `open`), and so
//!   is each job of a store: `converge` and `build_index` (streams, like
//!   `stream`), `check_indexes`, `apply_index_intents` and `drop_index`.
//!   A miss is an answer, not an error: a `get` of a missing row, an
//!   `exists` that is false, and the requests under them carry no
//!   `error.type` (on Azure the service's 404 for the missing entity or blob
//!   included);
//! - inside it, **one DEBUG span [`REQUEST_SPAN`] per request** a backend
//!   is asked for, on every backend (the in-memory one too), on the target
//!   [`REQUEST_TARGET`], with `request` (the backend call: `get`,
//!   `execute`, `transaction`, `query`, `put`, `get_blob`, `lease`, …),
//!   `resource` (`entity`, `batch`, `query`, `table`, `blob`, `lease`,
//!   `container`, `account`), `db.operation.batch.size` for a transaction,
//!   [`REQUEST_CHARGE`] on Cosmos DB for Table (the request units of its
//!   answers, retries included) and, on failure, `error.type` and
//!   `db.response.status_code`;
//! - on Azure, inside each request span, **one DEBUG span `http.request`
//!   per attempt** (target `unified_tables::http`; see
//!   [`backend::azure::transport`](crate::backend::azure::transport)) with
//!   the method, the resource, `server.address`, `server.port`, the URL
//!   (never a SAS), `http.request.resend_count` and the status.
//!
//! Events name what the crate decided (their `tracing` name is the event's
//! name; none carries a key, a row or a value):
//!
//! | event | level | fields | when |
//! | --- | --- | --- | --- |
//! | [`CACHE_HIT`] | DEBUG | `cache` (`entity`, `partition`) | a read served from the read cache |
//! | [`CACHE_MISS`] | TRACE | `cache` | a read the read cache could have served, sent to the table |
//! | [`SETTLE_READ_BACK`] | DEBUG | `verdict` (`applied`, `not_applied_yet`, `undecided`, `unreadable`) | a write whose answer was lost or left in doubt, read back |
//! | [`NOT_PROCESSED`] | DEBUG | `error.type`, `backoff_ms` | a write the service did not process (throttled, busy, not sent), sent again after the backoff |
//! | [`LOST_RACE`] | DEBUG | `attempt`, `backoff_ms` | a write that read first lost a race to another writer and is applied again |
//! | [`CONTINUATION_ROWS`] | DEBUG | `rows` | a large value's continuation rows fetched |
//! | [`BLOB_FETCHED`] | DEBUG | `bytes` | a large value's blob fetched |
//! | [`OPERATION_DONE`] | DEBUG | `elapsed_us`, `error.type` on failure | an operation ended |
//! | `retrying` (target `unified_tables::http`) | DEBUG | `attempt`, `backoff_ms`, `error` | an Azure request attempt that failed is sent again |
//!
//! With the feature `metrics`, through the [`metrics`](https://docs.rs/metrics)
//! facade (whatever recorder the program installs; without one, nothing):
//!
//! | metric | kind | labels |
//! | --- | --- | --- |
//! | [`OPERATION_DURATION`] (seconds) | histogram | `db.operation.name`, `db.collection.name`, `outcome` (`ok` or the `error.type`) |
//! | [`REQUESTS`] | counter | `db.operation.name` (the operation that made it, or `none`), `resource` |
//! | [`RETRIES`] | counter | `reason` (`not_processed`, `lost_race`, `transport`) |
//! | [`SETTLE_READ_BACKS`] | counter | `verdict` |
//! | [`CACHE_HITS`], [`CACHE_MISSES`] | counter | `cache` |
//! | [`BYTES_SENT`], [`BYTES_RECEIVED`] | counter | `resource` (Azure only: the in-memory backend sends nothing) |
//! | [`OPERATION_REQUEST_CHARGE`] (request units) | histogram | `db.operation.name` (or `none` for a request outside any operation); Cosmos DB for Table only |
//!
//! Without the feature, nothing of it is compiled.

mod charge;
mod metrics;
mod operation;

pub(crate) use self::charge::charged;

pub(crate) use self::metrics::*;
#[cfg(feature = "metrics")]
pub(crate) use self::operation::current_operation;
pub(crate) use self::operation::{carried, record_batch_size, Operation, Peer};

use crate::error::{Error, ErrorKind};

/// `db.system.name` of table operations. OpenTelemetry registers no value
/// for Azure Table Storage; this is the product's name in lower case.
pub const DB_SYSTEM: &str = "azure_table_storage";
/// `db.system.name` of a table operation on Azure Cosmos DB for Table (the
/// OpenTelemetry name of the Cosmos DB system).
pub const DB_SYSTEM_COSMOS: &str = "azure.cosmosdb";
/// `db.system.name` of blob-container and lock operations.
pub const DB_SYSTEM_BLOBS: &str = "azure_blob_storage";

/// The target of the operation spans and of [`OPERATION_DONE`].
pub const OPERATION_TARGET: &str = "unified_tables::operation";
/// The target of the request spans.
pub const REQUEST_TARGET: &str = "unified_tables::request";
/// The target of the events of what the crate decided.
pub const DECISION_TARGET: &str = "unified_tables::decision";

/// The name of the span of one public operation.
pub const OPERATION_SPAN: &str = "db.operation";
/// The name of the span of one backend request.
pub const REQUEST_SPAN: &str = "db.request";

/// Event: an operation ended.
pub const OPERATION_DONE: &str = "operation.done";
/// Event: a read served from the read cache.
pub const CACHE_HIT: &str = "cache.hit";
/// Event: a read the read cache could have served, sent to the table.
pub const CACHE_MISS: &str = "cache.miss";
/// Event: a write in doubt read back, with its verdict.
pub const SETTLE_READ_BACK: &str = "settle.read_back";
/// Event: a write the service did not process, sent again.
pub const NOT_PROCESSED: &str = "write.not_processed";
/// Event: a write that lost a race to another writer, applied again.
pub const LOST_RACE: &str = "write.lost_race";
/// Event: continuation rows of a large value fetched.
pub const CONTINUATION_ROWS: &str = "read.continuation_rows";
/// Event: a blob of a large value fetched.
pub const BLOB_FETCHED: &str = "read.blob";

/// Metric: how long an operation took, in seconds (histogram).
pub const OPERATION_DURATION: &str = "db.client.operation.duration";
/// Metric: requests asked of a backend (counter).
pub const REQUESTS: &str = "unified_tables.requests";
/// Metric: requests sent again (counter).
pub const RETRIES: &str = "unified_tables.retries";
/// Metric: writes in doubt read back (counter).
pub const SETTLE_READ_BACKS: &str = "unified_tables.settle.read_backs";
/// Metric: reads served from the read cache (counter).
pub const CACHE_HITS: &str = "unified_tables.cache.hits";
/// Metric: reads the read cache could have served, sent to the table (counter).
pub const CACHE_MISSES: &str = "unified_tables.cache.misses";
/// Metric: request bytes sent to the service (counter).
pub const BYTES_SENT: &str = "unified_tables.bytes.sent";
/// Metric: answer bytes received from the service (counter).
pub const BYTES_RECEIVED: &str = "unified_tables.bytes.received";
/// Metric: the request units (RU) Cosmos DB charged for one operation
/// (histogram), OpenTelemetry's name for it.
pub const OPERATION_REQUEST_CHARGE: &str = "azure.cosmosdb.client.operation.request_charge";

/// Attribute: the request units (RU) Cosmos DB charged, on a request span
/// (every attempt of the request) and on an operation span (every request
/// of the operation), named as OpenTelemetry's Cosmos DB conventions name
/// it (formerly `db.cosmosdb.request_charge`). Recorded only when the
/// service charged something: Table Storage charges nothing.
pub const REQUEST_CHARGE: &str = "azure.cosmosdb.operation.request_charge";

/// Records that the service charged `units` request units for a request
/// (one answer of it: each attempt is charged): added to the charge of the
/// running request (recorded on its [`REQUEST_SPAN`] when it ends) and of
/// the running operation (recorded on its [`OPERATION_SPAN`] and, feature
/// `metrics`, in [`OPERATION_REQUEST_CHARGE`] when it ends). Outside any
/// operation the metric takes the request's charge at once, as operation
/// `none`. A negative or non-finite value is ignored.
pub(crate) fn request_charge(units: f64) {
    if !units.is_finite() || units < 0.0 {
        return;
    }
    charge::add_to_request(units);
    if !operation::add_charge(units) {
        charge_recorded("none", units);
    }
}

/// `error.type` of a failure: its [`ErrorKind`] in snake case.
pub(crate) fn error_type(error: &Error) -> &'static str {
    match error.kind() {
        ErrorKind::NotFound => "not_found",
        ErrorKind::AlreadyExists => "already_exists",
        ErrorKind::UniqueViolation => "unique_violation",
        ErrorKind::PreconditionFailed => "precondition_failed",
        ErrorKind::Busy => "busy",
        ErrorKind::Throttled => "throttled",
        ErrorKind::Unavailable => "unavailable",
        ErrorKind::OutcomeUnknown => "outcome_unknown",
        ErrorKind::MalformedResponse => "malformed_response",
        ErrorKind::Invalid => "invalid",
        ErrorKind::Damaged => "damaged",
        ErrorKind::Other => "other",
        ErrorKind::NotModified => "not_modified",
    }
}

/// `db.response.status_code` of a failure: the service's status, or the
/// one its kind stands for (404, 409, 412) when the store decided it.
pub(crate) fn status_code(error: &Error) -> Option<u16> {
    if let Some((status, _)) = error.service_code() {
        return Some(status);
    }
    match error.kind() {
        ErrorKind::NotFound => Some(404),
        ErrorKind::AlreadyExists => Some(409),
        ErrorKind::PreconditionFailed => Some(412),
        _ => None,
    }
}
