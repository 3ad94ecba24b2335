//! Building errors: the constructors of the variants that carry an
//! underlying error (their text redacted, their source scrubbed), the
//! service's request ids, and the errors about one entity.

use super::{redact, scrub, BoxError, Error};

fn text(message: impl Into<String>) -> String {
    let message = message.into();
    match redact(&message) {
        std::borrow::Cow::Borrowed(_) => message,
        std::borrow::Cow::Owned(redacted) => redacted,
    }
}

impl Error {
    /// An [`Error::Transport`] saying what failed (secrets in the text are
    /// redacted); attach the underlying error with [`Error::with_source`].
    ///
    /// ```
    /// use unified_tables::{Error, ErrorKind};
    /// let e = Error::transport("connection reset");
    /// assert_eq!(e.kind(), ErrorKind::Unavailable);
    /// assert_eq!(e.to_string(), "cannot reach the storage service: connection reset");
    /// ```
    pub fn transport(message: impl Into<String>) -> Error {
        Error::Transport {
            message: text(message),
            sent: true,
            source: None,
        }
    }

    /// An [`Error::Transport`] for a request that provably never left: the
    /// connection (or its TLS handshake) could not be made, so nothing was
    /// applied and a write may be sent again as it is.
    ///
    /// ```
    /// use unified_tables::{Error, ErrorKind};
    /// let e = Error::unreachable("connection refused");
    /// assert_eq!(e.kind(), ErrorKind::Unavailable);
    /// assert!(!e.was_sent());
    /// assert!(Error::transport("connection reset").was_sent());
    /// ```
    pub fn unreachable(message: impl Into<String>) -> Error {
        Error::Transport {
            message: text(message),
            sent: false,
            source: None,
        }
    }

    /// Whether the request this error answers may have reached the service:
    /// `false` only for an [`Error::Transport`] built by
    /// [`Error::unreachable`] and for refusals made before sending.
    pub fn was_sent(&self) -> bool {
        match self {
            Error::Transport { sent, .. } => *sent,
            Error::Transaction { source, .. } => source.was_sent(),
            _ => !self.is_refusal(),
        }
    }

    /// An [`Error::MalformedResponse`] saying what could not be read.
    pub fn malformed_response(message: impl Into<String>) -> Error {
        Error::MalformedResponse {
            message: text(message),
            request_id: None,
            source: None,
        }
    }

    /// An [`Error::Config`] naming the option and what it must be.
    ///
    /// ```
    /// use unified_tables::{Error, ErrorKind};
    /// let e = Error::config("retry policy: `attempts` must be at least 1");
    /// assert_eq!(e.kind(), ErrorKind::Invalid);
    /// assert!(e.is_refusal());
    /// ```
    pub fn config(message: impl Into<String>) -> Error {
        Error::Config {
            message: text(message),
            source: None,
        }
    }

    /// An [`Error::Credential`] saying what failed.
    pub fn credential(message: impl Into<String>) -> Error {
        Error::Credential {
            message: text(message),
            source: None,
        }
    }

    /// An [`Error::Encode`] saying what could not be written.
    pub fn encode(message: impl Into<String>) -> Error {
        Error::Encode {
            message: text(message),
            source: None,
        }
    }

    /// Attaches `source` as the underlying error of an [`Error::Transport`],
    /// [`Error::MalformedResponse`], [`Error::Config`], [`Error::Credential`],
    /// [`Error::Encode`], [`Error::Archive`] or [`Error::LockLost`]; any
    /// other error is returned unchanged. A
    /// source whose text (or its sources' text) holds a secret is replaced by
    /// a copy of that text with the secrets redacted.
    ///
    /// ```
    /// use std::error::Error as _;
    /// use unified_tables::Error;
    /// let parse = "x".parse::<u32>().unwrap_err();
    /// let e = Error::config("retry policy: `attempts`").with_source(parse);
    /// assert_eq!(e.to_string(), "configuration: retry policy: `attempts`");
    /// assert_eq!(e.source().unwrap().to_string(), "invalid digit found in string");
    /// ```
    pub fn with_source(mut self, source: impl Into<BoxError>) -> Error {
        match &mut self {
            Error::Transport { source: slot, .. }
            | Error::MalformedResponse { source: slot, .. }
            | Error::Config { source: slot, .. }
            | Error::Credential { source: slot, .. }
            | Error::Encode { source: slot, .. }
            | Error::Archive { source: slot, .. }
            | Error::LockLost { source: slot, .. } => *slot = Some(scrub(source.into())),
            _ => {}
        }
        self
    }

    /// The error of a write that was sent: one whose answer never came
    /// (transport failure, timeout, 5xx) or could not be read becomes
    /// [`Error::OutcomeUnknown`]. (The store builds its own once a
    /// read-back could not settle the write; tests build one here.)
    #[cfg(all(test, feature = "azure"))]
    pub(crate) fn after_sending(self, table: &str, pk: &str, rk: &str) -> Error {
        match self.kind() {
            super::ErrorKind::Unavailable | super::ErrorKind::MalformedResponse => Error::OutcomeUnknown {
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
            retry_after: None,
        }
    }

    /// The same error, saying how long the service asked the client to wait
    /// before sending again (a service error only; others are returned as
    /// they are).
    pub fn with_retry_after(mut self, wait: std::time::Duration) -> Error {
        if let Error::Service { retry_after, .. } = &mut self {
            *retry_after = Some(wait);
        }
        self
    }

    /// How long the service asked the client to wait before sending again
    /// (`x-ms-retry-after-ms` on a 429 of Cosmos DB for Table), for a
    /// service error and the errors that wrap one.
    pub fn retry_after(&self) -> Option<std::time::Duration> {
        match self {
            Error::Service { retry_after, .. } => *retry_after,
            Error::Transaction { source, .. }
            | Error::BatchFailed { source, .. }
            | Error::OutcomeUnknown { source, .. } => source.retry_after(),
            _ => None,
        }
    }

    /// The service's id of the request that failed (`x-ms-request-id`), for
    /// every error built from a service answer ([`Error::Service`],
    /// [`Error::NotFound`], [`Error::AlreadyExists`], [`Error::Conflict`],
    /// [`Error::MalformedResponse`], the blob errors) and the errors that
    /// wrap one ([`Error::Transaction`], [`Error::BatchFailed`],
    /// [`Error::OutcomeUnknown`]). Give it to whoever reads the storage
    /// account's logs. `None` from the in-memory backend, and for errors no
    /// answer carried.
    ///
    /// ```
    /// use unified_tables::Error;
    /// let e = Error::Service {
    ///     status: 500,
    ///     code: "InternalError".into(),
    ///     message: "The server encountered an internal error.".into(),
    ///     request_id: Some("0f8fad5b-d9cb-469f-a165-70867728950e".into()),
    ///     retry_after: None,
    /// };
    /// assert_eq!(e.request_id(), Some("0f8fad5b-d9cb-469f-a165-70867728950e"));
    /// assert!(e.to_string().ends_with("(request id 0f8fad5b-d9cb-469f-a165-70867728950e)"));
    /// ```
    pub fn request_id(&self) -> Option<&str> {
        match self {
            Error::Service { request_id, .. }
            | Error::NotFound { request_id, .. }
            | Error::AlreadyExists { request_id, .. }
            | Error::Conflict { request_id, .. }
            | Error::MalformedResponse { request_id, .. }
            | Error::BlobAlreadyExists { request_id, .. }
            | Error::BlobConditionNotMet { request_id, .. }
            | Error::BlobLeased { request_id, .. } => request_id.as_deref(),
            Error::Transaction { source, .. }
            | Error::BatchFailed { source, .. }
            | Error::OutcomeUnknown { source, .. } => source.request_id(),
            _ => None,
        }
    }

    /// Fills in the request id of a service error (or an unreadable answer)
    /// that has none: the answer of one part of a transaction carries the id
    /// of the whole request.
    #[cfg_attr(not(feature = "azure"), allow(dead_code))]
    pub(crate) fn with_request_id(mut self, id: Option<&str>) -> Error {
        match &mut self {
            Error::Service { request_id, .. } | Error::MalformedResponse { request_id, .. } if request_id.is_none() => {
                *request_id = id.map(str::to_owned);
            }
            Error::Transaction { source, .. } => {
                let inner = std::mem::replace(&mut **source, Error::transport(""));
                **source = inner.with_request_id(id);
            }
            _ => {}
        }
        self
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
    /// [`Error::NotFound`], [`Error::AlreadyExists`] and [`Error::Conflict`],
    /// keeping the answer's request id.
    pub(crate) fn about_entity(self, table: &str, pk: &str, rk: &str) -> Error {
        let (table, partition_key, row_key) = (table.to_owned(), pk.to_owned(), rk.to_owned());
        match self {
            Error::Service {
                status: 404,
                ref code,
                request_id,
                ..
            } if code != "TableNotFound" => Error::NotFound {
                table,
                partition_key,
                row_key,
                request_id,
            },
            Error::Service {
                status: 409,
                ref code,
                request_id,
                ..
            } if code == "EntityAlreadyExists" => Error::AlreadyExists {
                table,
                partition_key,
                row_key,
                request_id,
            },
            Error::Service {
                status: 412,
                request_id,
                ..
            } => Error::Conflict {
                table,
                partition_key,
                row_key,
                request_id,
            },
            other => other,
        }
    }
}

impl Error {
    /// [`Error::NotFound`] for one entity.
    pub(crate) fn not_found(table: &str, key: &crate::value::Key) -> Error {
        Error::NotFound {
            table: table.to_owned(),
            partition_key: key.partition_key.clone(),
            row_key: key.row_key.clone(),
            request_id: None,
        }
    }

    /// [`Error::Conflict`] for one entity.
    pub(crate) fn conflict(table: &str, key: &crate::value::Key) -> Error {
        Error::Conflict {
            table: table.to_owned(),
            partition_key: key.partition_key.clone(),
            row_key: key.row_key.clone(),
            request_id: None,
        }
    }
}
