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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The entity, blob, table or container does not exist (404).
    NotFound,
    /// What a create would make exists already (409 `…AlreadyExists`).
    AlreadyExists,
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
