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
    /// The service refused a request for a reason not covered above.
    #[error("the service answered {status} {code}: {message}")]
    Service {
        /// HTTP status.
        status: u16,
        /// The service's error code, e.g. `PropertyValueTooLarge`.
        code: String,
        /// The service's message.
        message: String,
    },
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
}

impl Error {
    /// A service error with the given status, code and message.
    pub fn service(status: u16, code: impl Into<String>, message: impl Into<String>) -> Error {
        Error::Service {
            status,
            code: code.into(),
            message: message.into(),
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
