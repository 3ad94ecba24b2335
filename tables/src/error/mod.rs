//! The one error type of the crate.
//!
//! Every error's text, and the text of every error it holds as its
//! [`source`](std::error::Error::source), is free of secrets: the values of a
//! shared access signature's parameters, bearer tokens, Shared Key
//! signatures and account keys are replaced by `REDACTED` (see
//! [`redact`]). Each cause is printed once: an error that holds another as
//! its source does not repeat it in its own message, so a reporter that walks
//! the chain (`anyhow`'s `{:#}`, `eyre`, `tracing`) shows every cause once.

use std::fmt;

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An underlying error, kept as an [`Error`]'s [`source`](std::error::Error::source).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Which key a key error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyKind {
    /// The `PartitionKey`.
    PartitionKey,
    /// The `RowKey`.
    RowKey,
    /// A composite id (`{PartitionKey}|{RowKey}`).
    Id,
}

impl fmt::Display for KeyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KeyKind::PartitionKey => "PartitionKey",
            KeyKind::RowKey => "RowKey",
            KeyKind::Id => "Id",
        })
    }
}

/// What went wrong. Each variant says what happened, not which HTTP code
/// carried it; a refusal detected before sending (a bad key, an oversized
/// value) means nothing was sent or stored.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[doc = include_str!("../../docs/errors.md")]
pub enum Error {
    /// The entity (or table) does not exist.
    #[error("{table}: no entity with PartitionKey `{partition_key}` and RowKey `{row_key}`{}", request_id_note(request_id.as_deref()))]
    NotFound {
        /// The table.
        table: String,
        /// The partition key looked up.
        partition_key: String,
        /// The row key looked up.
        row_key: String,
        /// The service's id of the request (`x-ms-request-id`) whose answer
        /// said so; `None` from the in-memory backend.
        request_id: Option<String>,
    },
    /// A create found an entity with the same keys.
    #[error("{table}: an entity with PartitionKey `{partition_key}` and RowKey `{row_key}` already exists{}", request_id_note(request_id.as_deref()))]
    AlreadyExists {
        /// The table.
        table: String,
        /// The partition key.
        partition_key: String,
        /// The row key.
        row_key: String,
        /// The service's id of the request (`x-ms-request-id`) whose answer
        /// said so; `None` from the in-memory backend.
        request_id: Option<String>,
    },
    /// A write would give a second entity the value of a unique index
    /// (`#[unique]`): nothing of it was stored. Choose another value, or
    /// change or delete the entity that holds it
    /// (see [`guide::secondary_indexes`](crate::guide::secondary_indexes)).
    #[error("{table}: index `{index}` is unique and the value {value} is held by the entity with PartitionKey `{}` and RowKey `{}`; nothing was written", holder.partition_key, holder.row_key)]
    UniqueViolation {
        /// The table.
        table: String,
        /// The index's name.
        index: String,
        /// The value, as the lookup shows it (text in quotes, numbers and dates as written).
        value: String,
        /// The keys of the entity holding the value.
        holder: Box<crate::value::Key>,
    },
    /// A conditional write lost an optimistic race: the row was modified by
    /// another writer since it was read (its ETag no longer matches).
    #[error("{table}: the entity with PartitionKey `{partition_key}` and RowKey `{row_key}` was modified by another writer since it was read; read it again and re-apply the change{}", request_id_note(request_id.as_deref()))]
    Conflict {
        /// The table.
        table: String,
        /// The partition key.
        partition_key: String,
        /// The row key.
        row_key: String,
        /// The service's id of the request (`x-ms-request-id`) whose answer
        /// said so; `None` from the in-memory backend.
        request_id: Option<String>,
    },
    /// An update that must be conditional was given an entity without an ETag.
    #[error("{table}: cannot update the entity with PartitionKey `{partition_key}` and RowKey `{row_key}` without its ETag: read it first, or choose Concurrency::LastWriterWins to overwrite unconditionally")]
    MissingETag {
        /// The table.
        table: String,
        /// The partition key.
        partition_key: String,
        /// The row key.
        row_key: String,
    },
    /// A key is empty where it may not be, too long, or holds a character the service refuses.
    #[error("invalid {which} `{key}`: {reason}")]
    InvalidKey {
        /// Which key.
        which: KeyKind,
        /// The key as given (shortened when very long).
        key: String,
        /// What is wrong and what to do.
        reason: String,
    },
    /// A value cannot be stored as it is (out of the service's range, a bad column name, ...).
    #[error("column `{column}`: {reason}")]
    InvalidValue {
        /// The column.
        column: String,
        /// What is wrong and what to do.
        reason: String,
    },
    /// A value is larger than its cell (or entity) can hold under the chosen policy.
    #[error("column `{column}` holds {bytes} bytes, over the limit of {limit}: {reason}")]
    OversizedValue {
        /// The physical column name.
        column: String,
        /// The encoded size in bytes.
        bytes: usize,
        /// The limit it broke.
        limit: usize,
        /// Why, and what to do instead.
        reason: String,
    },
    /// The entity as a whole breaks one of the service's limits (property
    /// count, entity size, transaction size).
    #[error("{limit}: {detail}")]
    LimitExceeded {
        /// The limit broken, named as the service names it (e.g. `TooManyProperties`).
        limit: &'static str,
        /// What exceeded it.
        detail: String,
    },
    /// A stored cell could not be read into the field's type.
    #[error("column `{column}`: expected {expected}, found {found}")]
    Decode {
        /// The column.
        column: String,
        /// The type the field needs.
        expected: String,
        /// What the row holds.
        found: String,
    },
    /// Stored data is damaged or incomplete (a missing part or a hash mismatch).
    #[error("column `{column}`: integrity check failed: {reason}")]
    Integrity {
        /// The column.
        column: String,
        /// What was found.
        reason: String,
    },
    /// A change of a protected field was refused.
    #[error("column `{column}` is protected (roles: {roles}); changing it from {from} to {to} needs an authorizer that allows one of them")]
    Protected {
        /// The column.
        column: String,
        /// The roles that may change it.
        roles: String,
        /// The stored value, described.
        from: String,
        /// The new value, described.
        to: String,
    },
    /// A value needs blob offload but no blob store was configured.
    #[error("column `{column}` needs blob offload, but this store has no blob container configured")]
    BlobOffloadNotConfigured {
        /// The column.
        column: String,
    },
    /// One operation of an entity-group transaction failed; none of the
    /// transaction's operations took effect. What happened to it is the
    /// `source` (also [`std::error::Error::source`]), not repeated in this
    /// message; the message names the service's request id, when there is one.
    #[error("operation {index} of the transaction failed{}", request_id_note(source.request_id()))]
    Transaction {
        /// The 0-based index of the failing operation.
        index: usize,
        /// What happened to it.
        source: Box<Error>,
    },
    /// A batch write failed part way. Every transaction before the failing one
    /// stayed committed; the failing transaction applied nothing. What
    /// happened is the `source` (also [`std::error::Error::source`]), not
    /// repeated in this message; the message names the service's request
    /// id, when there is one.
    #[error("batch write failed at the entity with PartitionKey `{partition_key}` and RowKey `{row_key}` ({committed} entities were committed before it){}", request_id_note(source.request_id()))]
    BatchFailed {
        /// Entities written by the transactions that committed.
        committed: usize,
        /// The partition key of the entity that failed.
        partition_key: String,
        /// The row key of the entity that failed.
        row_key: String,
        /// What happened to it.
        source: Box<Error>,
    },
    /// A write was sent, no answer says whether it was applied (the
    /// connection failed or timed out after the request left, or the service
    /// answered 5xx), and the store could not read the row back to settle it
    /// within its [`RetryPolicy`](crate::RetryPolicy), or found it replaced by
    /// another writer's version when it was written on condition of the
    /// version read (a write whose row can be read back is otherwise settled
    /// by its write token, and never ends here). Read
    /// the entity before applying the change again: it may already be stored.
    /// `mutate` and the other compare-and-swap verbs stop here, without
    /// running their intent again.
    /// What cut the request short is the `source` (also
    /// [`std::error::Error::source`]), not repeated in this message; the
    /// message names the service's request id, when there is one.
    #[error("{table}: the write of the entity with PartitionKey `{partition_key}` and RowKey `{row_key}` may or may not have been applied{}; read the entity before applying the change again", request_id_note(source.request_id()))]
    OutcomeUnknown {
        /// The table.
        table: String,
        /// The partition key.
        partition_key: String,
        /// The row key.
        row_key: String,
        /// What cut the request short.
        source: Box<Error>,
    },
    /// The service refused a request for a reason not covered above.
    ///
    /// Displayed with the service's request id, when the answer carried one,
    /// so the request can be found in the service's logs.
    #[error("the service answered {status} {code}: {message}{}", request_id_note(request_id.as_deref()))]
    Service {
        /// HTTP status.
        status: u16,
        /// The service's error code, e.g. `PropertyValueTooLarge`.
        code: String,
        /// The service's message.
        message: String,
        /// The service's id of the request (`x-ms-request-id`), to find it in
        /// the service's logs; `None` from the in-memory backend, or when the
        /// answer carried none.
        request_id: Option<String>,
        /// How long the service asked the client to wait before sending
        /// again (`x-ms-retry-after-ms` on a 429 of Cosmos DB for Table);
        /// the retries wait at least this long.
        retry_after: Option<std::time::Duration>,
    },
    /// The service answered with something this crate cannot read (JSON
    /// that does not parse, a transaction answer that does not match its
    /// request, a header in the wrong form). A write answered so is settled
    /// by the store, which reads the row back (or reports
    /// [`Error::OutcomeUnknown`] when it cannot). A retry
    /// may get a readable answer; if the same answer comes again, give the
    /// request id to whoever runs the service (or report the answer as a bug
    /// of this crate).
    ///
    /// Build one with [`Error::malformed_response`].
    #[error("the storage service answered with a response that cannot be read{}{}", detail(message), request_id_note(request_id.as_deref()))]
    MalformedResponse {
        /// What could not be read (empty when the source says it all).
        message: String,
        /// The service's id of the request (`x-ms-request-id`), when the
        /// answer carried one.
        request_id: Option<String>,
        /// The parse error, when there is one; not repeated in the message.
        #[source]
        source: Option<BoxError>,
    },
    /// The service could not be reached or did not answer in time: the
    /// connection was refused or reset, TLS failed, a timeout or the retry
    /// policy's deadline passed. Kind [`ErrorKind::Unavailable`]: retrying
    /// later may help (the [`RetryPolicy`](crate::RetryPolicy) already
    /// retried as it allows). A write that failed so after it was sent is
    /// settled by the store (its rows read back), and ends as applied or as
    /// [`Error::OutcomeUnknown`]: a write that ends with this error was not
    /// applied.
    ///
    /// Build one with [`Error::transport`] (the request may have reached the
    /// service) or [`Error::unreachable`] (it provably never left).
    #[error("cannot reach the storage service{}", detail(message))]
    Transport {
        /// What failed, in words (empty when the source says it all).
        message: String,
        /// Whether the request may have reached the service: `false` when
        /// it provably never left (the connection or its TLS handshake could
        /// not be made), so nothing of it was applied.
        sent: bool,
        /// The underlying failure (connection, TLS, timeout), its URL's
        /// secrets redacted; not repeated in the message.
        #[source]
        source: Option<BoxError>,
    },
    /// An orphan sweep could not delete some blobs; every orphan was tried.
    /// The message names each blob (or partition) and what happened to it;
    /// each one's error, with its own sources, is in `failures`.
    #[error("the orphan sweep deleted {deleted} blobs and failed on {}: {}", failures.len(), sweep_failures(failures))]
    SweepFailed {
        /// Blobs deleted.
        deleted: usize,
        /// Each blob (or partition) that failed, and its error.
        failures: Vec<SweepFailure>,
    },
    /// An export directory (see [`admin`](crate::admin)) or one of its files
    /// cannot be read or written, or does not match its manifest. An import
    /// that finds one writes nothing; export again, or point it at the right
    /// directory.
    #[error("export `{path}`: {reason}")]
    Archive {
        /// The directory or file.
        path: String,
        /// What is wrong.
        reason: String,
        /// The underlying error (the file system's, a parser's), when there
        /// is one; not repeated in the message.
        #[source]
        source: Option<BoxError>,
    },
    /// A page cursor is damaged, or belongs to another query.
    #[error("invalid page cursor: {0}")]
    InvalidCursor(String),
    /// A connection string or option is wrong: the message names it and
    /// says what it must be. Raised before anything is sent; fix the
    /// configuration (retrying cannot help).
    ///
    /// Build one with [`Error::config`].
    #[error("configuration: {message}")]
    Config {
        /// The option and what is wrong with it.
        message: String,
        /// The underlying error (a URL or certificate parser's), when there
        /// is one; not repeated in the message.
        #[source]
        source: Option<BoxError>,
    },
    /// A request could not be written here: a value could not be encoded
    /// into its body, a header or its URL. Nothing was sent, and retrying the
    /// same call cannot help (kind [`ErrorKind::Invalid`]): change the value,
    /// or report it as a bug of this crate when the value looks fine.
    ///
    /// Build one with [`Error::encode`].
    #[error("cannot write the request{}", detail(message))]
    Encode {
        /// What could not be written.
        message: String,
        /// The encoder's error, when there is one; not repeated in the message.
        #[source]
        source: Option<BoxError>,
    },
    /// A row of a union table names a type (its `_TypeName` token) that no
    /// variant of the union accepts, and the union has no `#[table(other)]`
    /// variant. Add the token to a variant (`#[table(also = [".."])]`) or
    /// declare a catch-all to read it.
    #[error("{table}: the row with PartitionKey `{partition_key}` and RowKey `{row_key}` holds `_TypeName` `{token}`, which no variant of the union accepts (accepted: {accepted}); add it to a variant with #[table(also = [\"..\"])] or declare a #[table(other)] variant")]
    UnknownType {
        /// The table.
        table: String,
        /// The partition key of the row.
        partition_key: String,
        /// The row key of the row.
        row_key: String,
        /// The token found.
        token: String,
        /// The tokens the union accepts, comma-separated.
        accepted: String,
    },
    /// A create-only blob upload found a blob of that name (409 `BlobAlreadyExists`).
    #[error("blob `{container}/{name}` already exists{}", request_id_note(request_id.as_deref()))]
    BlobAlreadyExists {
        /// The container.
        container: String,
        /// The blob's name.
        name: String,
        /// The service's id of the request (`x-ms-request-id`); `None` from
        /// the in-memory backend.
        request_id: Option<String>,
    },
    /// A conditional blob request found another version, or no blob, where
    /// its condition named one (412 `ConditionNotMet`): another writer got
    /// there first; read it again and re-apply the change.
    #[error("blob `{container}/{name}` does not meet the request's condition (it was changed, created or deleted by another writer); read it again{}", request_id_note(request_id.as_deref()))]
    BlobConditionNotMet {
        /// The container.
        container: String,
        /// The blob's name.
        name: String,
        /// The service's id of the request (`x-ms-request-id`); `None` from
        /// the in-memory backend.
        request_id: Option<String>,
    },
    /// A blob write named no lease id, or another one, while the blob is
    /// leased, or named one after the lease ended (412 `LeaseIdMissing`,
    /// `LeaseIdMismatchWithBlobOperation`, `LeaseNotPresentWithBlobOperation`).
    #[error("blob `{container}/{name}` is leased and the write did not carry its active lease ({code}){}", request_id_note(request_id.as_deref()))]
    BlobLeased {
        /// The container.
        container: String,
        /// The blob's name.
        name: String,
        /// The service's code.
        code: String,
        /// The service's id of the request (`x-ms-request-id`); `None` from
        /// the in-memory backend.
        request_id: Option<String>,
    },
    /// A lock was not (or is no longer) held: its lease was broken, expired,
    /// or taken by another holder.
    #[error("lock `{name}` is not held: {reason}")]
    LockLost {
        /// The lock's name.
        name: String,
        /// What happened.
        reason: String,
        /// The service's refusal that showed it, when there is one; not
        /// repeated in the message.
        #[source]
        source: Option<BoxError>,
    },
    /// The token credential could not give a token (nothing was sent to the
    /// storage service): a managed identity that is not assigned, an expired
    /// client secret, an Azure CLI that is not logged in, ... The source
    /// says which; fix the identity's setup (retrying rarely helps).
    ///
    /// Build one with [`Error::credential`].
    #[error("cannot get a token from the credential{}", detail(message))]
    Credential {
        /// What failed, in words (empty when the source says it all).
        message: String,
        /// The credential's error, secrets redacted; not repeated in the message.
        #[source]
        source: Option<BoxError>,
    },
}

/// One blob (or partition) an orphan sweep could not finish
/// ([`Error::SweepFailed`]).
#[derive(Debug)]
#[non_exhaustive]
pub struct SweepFailure {
    /// The blob's name, or `partition "<key>"`.
    pub what: String,
    /// What happened to it.
    pub error: Error,
}

impl SweepFailure {
    pub(crate) fn new(what: impl Into<String>, error: Error) -> SweepFailure {
        SweepFailure {
            what: what.into(),
            error,
        }
    }
}

/// `what: error; ..` for each failure of a sweep.
fn sweep_failures(failures: &[SweepFailure]) -> String {
    let lines: Vec<String> = failures.iter().map(|f| format!("{}: {}", f.what, f.error)).collect();
    lines.join("; ")
}

/// ` (request id ..)` after a service error's message, or nothing.
fn request_id_note(request_id: Option<&str>) -> String {
    request_id.map(|id| format!(" (request id {id})")).unwrap_or_default()
}

/// `: message` after a variant's own words, or nothing when the message is empty.
fn detail(message: &str) -> String {
    match message {
        "" => String::new(),
        m => format!(": {m}"),
    }
}

mod build;
mod kind;
mod redact;

pub use kind::ErrorKind;
pub use redact::redact;
pub(crate) use redact::scrub;
