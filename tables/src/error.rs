//! The one error type of the crate.

use std::fmt;

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

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
pub enum Error {
    /// The entity (or table) does not exist.
    #[error("{table}: no entity with PartitionKey `{partition_key}` and RowKey `{row_key}`")]
    NotFound {
        /// The table.
        table: String,
        /// The partition key looked up.
        partition_key: String,
        /// The row key looked up.
        row_key: String,
    },
    /// A create found an entity with the same keys.
    #[error("{table}: an entity with PartitionKey `{partition_key}` and RowKey `{row_key}` already exists")]
    AlreadyExists {
        /// The table.
        table: String,
        /// The partition key.
        partition_key: String,
        /// The row key.
        row_key: String,
    },
    /// A conditional write lost an optimistic race: the row was modified by
    /// another writer since it was read (its ETag no longer matches).
    #[error("{table}: the entity with PartitionKey `{partition_key}` and RowKey `{row_key}` was modified by another writer since it was read; read it again and re-apply the change")]
    Conflict {
        /// The table.
        table: String,
        /// The partition key.
        partition_key: String,
        /// The row key.
        row_key: String,
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
    /// transaction's operations took effect.
    #[error("operation {index} of the transaction failed: {source}")]
    Transaction {
        /// The 0-based index of the failing operation.
        index: usize,
        /// What happened to it.
        source: Box<Error>,
    },
    /// A batch write failed part way. Every transaction before the failing one
    /// stayed committed; the failing transaction applied nothing.
    #[error("batch write failed at the entity with PartitionKey `{partition_key}` and RowKey `{row_key}` ({committed} entities were committed before it): {source}")]
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
    /// A write was sent and no answer says whether it was applied (the
    /// connection failed or timed out after the request left). Read the
    /// entity before applying the change again: it may already be stored.
    #[error("{table}: the write of the entity with PartitionKey `{partition_key}` and RowKey `{row_key}` may or may not have been applied ({source}); read the entity before applying the change again")]
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
    },
    /// The service answered with something this crate cannot read (JSON
    /// that does not parse, a transaction answer that does not match its
    /// request, a header in the wrong form). For a write, the outcome is
    /// unknown: read the entity before applying the change again.
    #[error("the storage service answered with a response that cannot be read: {0}")]
    MalformedResponse(String),
    /// The service could not be reached or did not answer in time.
    #[error("cannot reach the storage service: {0}")]
    Transport(String),
    /// An orphan sweep could not delete some blobs; every orphan was tried.
    #[error("the orphan sweep deleted {deleted} blobs and failed on {}: {}", failures.len(), failures.join("; "))]
    SweepFailed {
        /// Blobs deleted.
        deleted: usize,
        /// One line per blob (or partition) that failed.
        failures: Vec<String>,
    },
    /// A page cursor is damaged, or belongs to another query.
    #[error("invalid page cursor: {0}")]
    InvalidCursor(String),
    /// A connection string or option is wrong.
    #[error("configuration: {0}")]
    Config(String),
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
    #[error("blob `{container}/{name}` already exists")]
    BlobAlreadyExists {
        /// The container.
        container: String,
        /// The blob's name.
        name: String,
    },
    /// A conditional blob request found another version, or no blob, where
    /// its condition named one (412 `ConditionNotMet`): another writer got
    /// there first; read it again and re-apply the change.
    #[error("blob `{container}/{name}` does not meet the request's condition (it was changed, created or deleted by another writer); read it again")]
    BlobConditionNotMet {
        /// The container.
        container: String,
        /// The blob's name.
        name: String,
    },
    /// A blob write named no lease id, or another one, while the blob is
    /// leased, or named one after the lease ended (412 `LeaseIdMissing`,
    /// `LeaseIdMismatchWithBlobOperation`, `LeaseNotPresentWithBlobOperation`).
    #[error("blob `{container}/{name}` is leased and the write did not carry its active lease ({code})")]
    BlobLeased {
        /// The container.
        container: String,
        /// The blob's name.
        name: String,
        /// The service's code.
        code: String,
    },
    /// A lock was not (or is no longer) held: its lease was broken, expired,
    /// or taken by another holder.
    #[error("lock `{name}` is not held: {reason}")]
    LockLost {
        /// The lock's name.
        name: String,
        /// What happened.
        reason: String,
    },
    /// The token credential could not give a token (nothing was sent to the
    /// storage service): a managed identity that is not assigned, an expired
    /// client secret, an Azure CLI that is not logged in, ...
    #[error("cannot get a token from the credential: {0}")]
    Credential(String),
}

/// ` (request id ..)` after a service error's message, or nothing.
fn request_id_note(request_id: Option<&str>) -> String {
    request_id.map(|id| format!(" (request id {id})")).unwrap_or_default()
}

mod kind;
pub use kind::ErrorKind;

impl Error {
    /// What kind of failure this is. Store code decides on kinds, never on
    /// raw status numbers; backends keep the service's status and code in
    /// [`Error::Service`].
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::NotFound { .. } => ErrorKind::NotFound,
            Error::AlreadyExists { .. } => ErrorKind::AlreadyExists,
            Error::Conflict { .. } => ErrorKind::PreconditionFailed,
            Error::Transaction { source, .. } | Error::BatchFailed { source, .. } => source.kind(),
            Error::Service { status, code, .. } => match (*status, code.as_str()) {
                (404, _) => ErrorKind::NotFound,
                (409, code) if code.ends_with("AlreadyExists") => ErrorKind::AlreadyExists,
                (409, _) => ErrorKind::Busy,
                // The blob is held under a lease: not a version mismatch.
                (412, code) if code.starts_with("Lease") => ErrorKind::Busy,
                (412, _) => ErrorKind::PreconditionFailed,
                (304, _) => ErrorKind::NotModified,
                (429, _) | (503, "ServerBusy") => ErrorKind::Throttled,
                (408, _) | (500..=599, _) => ErrorKind::Unavailable,
                (400 | 413 | 414 | 416, _) => ErrorKind::Invalid,
                _ => ErrorKind::Other,
            },
            Error::Transport(_) => ErrorKind::Unavailable,
            Error::OutcomeUnknown { .. } => ErrorKind::OutcomeUnknown,
            Error::MalformedResponse(_) => ErrorKind::MalformedResponse,
            Error::Decode { .. } | Error::Integrity { .. } | Error::UnknownType { .. } => ErrorKind::Damaged,
            Error::BlobAlreadyExists { .. } => ErrorKind::AlreadyExists,
            Error::BlobConditionNotMet { .. } => ErrorKind::PreconditionFailed,
            Error::BlobLeased { .. } | Error::LockLost { .. } => ErrorKind::Busy,
            _ if self.is_refusal() => ErrorKind::Invalid,
            _ => ErrorKind::Other,
        }
    }

    /// Whether this error was raised before anything was sent: nothing was
    /// stored, and retrying the same call cannot succeed.
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            Error::MissingETag { .. }
                | Error::InvalidKey { .. }
                | Error::InvalidValue { .. }
                | Error::OversizedValue { .. }
                | Error::LimitExceeded { .. }
                | Error::Protected { .. }
                | Error::BlobOffloadNotConfigured { .. }
                | Error::InvalidCursor(_)
                | Error::Config(_)
        )
    }

    /// The error of a write that was sent: one whose answer never came
    /// (transport failure, timeout, 5xx) or could not be read becomes
    /// [`Error::OutcomeUnknown`].
    pub(crate) fn after_sending(self, table: &str, pk: &str, rk: &str) -> Error {
        match self.kind() {
            ErrorKind::Unavailable | ErrorKind::MalformedResponse => Error::OutcomeUnknown {
                table: table.to_owned(),
                partition_key: pk.to_owned(),
                row_key: rk.to_owned(),
                source: Box::new(self),
            },
            _ => self,
        }
    }

    /// A service error with the given status, code and message (and no request id).
    pub fn service(status: u16, code: impl Into<String>, message: impl Into<String>) -> Error {
        Error::Service {
            status,
            code: code.into(),
            message: message.into(),
            request_id: None,
        }
    }

    /// The service's id of the request that failed (`x-ms-request-id`), for
    /// an [`Error::Service`] and the errors that wrap one
    /// ([`Error::Transaction`], [`Error::BatchFailed`], [`Error::OutcomeUnknown`]).
    /// Give it to whoever reads the storage account's logs.
    ///
    /// ```
    /// use unified_tables::Error;
    /// let e = Error::Service {
    ///     status: 500,
    ///     code: "InternalError".into(),
    ///     message: "The server encountered an internal error.".into(),
    ///     request_id: Some("0f8fad5b-d9cb-469f-a165-70867728950e".into()),
    /// };
    /// assert_eq!(e.request_id(), Some("0f8fad5b-d9cb-469f-a165-70867728950e"));
    /// assert!(e.to_string().ends_with("(request id 0f8fad5b-d9cb-469f-a165-70867728950e)"));
    /// ```
    pub fn request_id(&self) -> Option<&str> {
        match self {
            Error::Service { request_id, .. } => request_id.as_deref(),
            Error::Transaction { source, .. }
            | Error::BatchFailed { source, .. }
            | Error::OutcomeUnknown { source, .. } => source.request_id(),
            _ => None,
        }
    }

    /// Fills in the request id of a service error that has none (the answer
    /// of one part of a transaction carries the id of the whole request).
    #[cfg_attr(not(feature = "azure"), allow(dead_code))]
    pub(crate) fn with_request_id(self, id: Option<&str>) -> Error {
        match (self, id) {
            (
                Error::Service {
                    status,
                    code,
                    message,
                    request_id: None,
                },
                Some(id),
            ) => Error::Service {
                status,
                code,
                message,
                request_id: Some(id.to_owned()),
            },
            (Error::Transaction { index, source }, id) => Error::Transaction {
                index,
                source: Box::new(source.with_request_id(id)),
            },
            (other, _) => other,
        }
    }

    /// The service's HTTP status and error code, when this error is a service answer.
    pub fn service_code(&self) -> Option<(u16, &str)> {
        match self {
            Error::Service { status, code, .. } => Some((*status, code)),
            Error::Transaction { source, .. } | Error::BatchFailed { source, .. } => source.service_code(),
            _ => None,
        }
    }

    /// Turns the service's 404 / 409 / 412 answers about one entity into
    /// [`Error::NotFound`], [`Error::AlreadyExists`] and [`Error::Conflict`].
    pub(crate) fn about_entity(self, table: &str, pk: &str, rk: &str) -> Error {
        let who = || (table.to_owned(), pk.to_owned(), rk.to_owned());
        match self {
            Error::Service {
                status: 404, ref code, ..
            } if code != "TableNotFound" => {
                let (table, partition_key, row_key) = who();
                Error::NotFound {
                    table,
                    partition_key,
                    row_key,
                }
            }
            Error::Service {
                status: 409, ref code, ..
            } if code == "EntityAlreadyExists" => {
                let (table, partition_key, row_key) = who();
                Error::AlreadyExists {
                    table,
                    partition_key,
                    row_key,
                }
            }
            Error::Service { status: 412, .. } => {
                let (table, partition_key, row_key) = who();
                Error::Conflict {
                    table,
                    partition_key,
                    row_key,
                }
            }
            other => other,
        }
    }
}
