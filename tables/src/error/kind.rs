//! The kinds of failure, whatever carried them.

/// What kind of failure an [`Error`](crate::Error) is, whatever carried it: the same kind
/// for a refusal the service sent and for one this crate detected itself.
///
/// ```
/// use unified_tables::{Error, ErrorKind};
/// assert_eq!(Error::service(412, "UpdateConditionNotSatisfied", "").kind(), ErrorKind::PreconditionFailed);
/// assert_eq!(Error::service(409, "EntityAlreadyExists", "").kind(), ErrorKind::AlreadyExists);
/// assert_eq!(Error::service(412, "LeaseIdMissing", "").kind(), ErrorKind::Busy);
/// assert_eq!(Error::service(304, "ConditionNotMet", "").kind(), ErrorKind::NotModified);
/// ```
///
/// A write that would give a second entity a unique index's value is
/// [`ErrorKind::UniqueViolation`], never `AlreadyExists`: "another entity has
/// this email" and "this key exists" are different answers.
///
/// ```
/// use unified_tables::{Error, ErrorKind, Key};
/// let taken = Error::UniqueViolation {
///     table: "Users".into(),
///     index: "email".into(),
///     value: "\"ada@example.com\"".into(),
///     holder: Box::new(Key::new("users", "ada")),
/// };
/// assert_eq!(taken.kind(), ErrorKind::UniqueViolation);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The entity, blob, table or container does not exist (404).
    NotFound,
    /// What a create would make exists already (409 `…AlreadyExists`): an
    /// entity with the same keys, a table, a blob or a container.
    AlreadyExists,
    /// Another entity holds the value of a unique index (`#[unique]`) that
    /// the write would give this one ([`Error::UniqueViolation`](crate::Error::UniqueViolation)):
    /// nothing was stored. Choose another value, or change or delete the
    /// holder. Not [`AlreadyExists`](ErrorKind::AlreadyExists): the entity's
    /// own keys may be free.
    UniqueViolation,
    /// The stored version is not the one the write was conditional on (412,
    /// or [`Error::Conflict`](crate::Error::Conflict)).
    PreconditionFailed,
    /// The resource is busy with another operation (other 409 answers).
    Busy,
    /// The service asked the client to slow down (429, 503 `ServerBusy`).
    Throttled,
    /// The service did not answer, or failed (408, 5xx, transport errors).
    Unavailable,
    /// A write was sent and its outcome is not known ([`Error::OutcomeUnknown`](crate::Error::OutcomeUnknown)).
    OutcomeUnknown,
    /// The service's answer could not be read ([`Error::MalformedResponse`](crate::Error::MalformedResponse)).
    MalformedResponse,
    /// The request was refused as malformed or over a limit, by the service
    /// (400, 413) or before sending.
    Invalid,
    /// Stored data could not be read back (a decode or integrity failure).
    Damaged,
    /// Anything else.
    Other,
    /// A conditional read found the version its `If-None-Match` named (304).
    NotModified,
}

impl crate::Error {
    /// What kind of failure this is. Store code decides on kinds, never on
    /// raw status numbers; backends keep the service's status and code in
    /// [`Error::Service`](crate::Error::Service).
    pub fn kind(&self) -> ErrorKind {
        use crate::Error;
        match self {
            Error::NotFound { .. } => ErrorKind::NotFound,
            Error::AlreadyExists { .. } => ErrorKind::AlreadyExists,
            Error::UniqueViolation { .. } => ErrorKind::UniqueViolation,
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
            Error::Transport { .. } => ErrorKind::Unavailable,
            Error::OutcomeUnknown { .. } => ErrorKind::OutcomeUnknown,
            Error::MalformedResponse { .. } => ErrorKind::MalformedResponse,
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
        use crate::Error;
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
                | Error::Config { .. }
                | Error::Encode { .. }
        )
    }
}
