//! Errors as JSON bodies: `{"error": "<code>", "message": "<what went wrong and what to do>"}`.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use unified_tables::{Error, ErrorKind};

/// An answer that is not a success: a status, a stable machine-readable
/// code and a sentence for the person reading it.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    /// Seconds to wait, sent as `Retry-After` (lockouts, a busy store).
    pub retry_after: Option<u64>,
}

#[derive(Serialize)]
struct Body<'a> {
    error: &'a str,
    message: &'a str,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
            retry_after: None,
        }
    }

    pub fn bad_request(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, code, message)
    }

    pub fn unauthenticated() -> ApiError {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthenticated",
            "sign in first: POST /login with your user name and password",
        )
    }

    pub fn internal(context: &str, error: impl std::fmt::Display) -> ApiError {
        // The cause is for the operator's log, not for the client.
        eprintln!("service: {context}: {error}");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            format!("{context} failed on the server; try again later"),
        )
    }

    /// A storage error met while working on `what` (`note "n1"`), as the
    /// client should see it. Errors a client cannot act on are logged and
    /// answered without their details.
    pub fn storage(what: &str, error: Error) -> ApiError {
        match &error {
            Error::InvalidCursor(reason) => ApiError::bad_request(
                "invalid_cursor",
                format!("the `cursor` parameter cannot be used: {reason} (send the `next_cursor` of the previous page unchanged, with the same `limit`)"),
            ),
            Error::InvalidKey { reason, .. } => {
                ApiError::bad_request("invalid_id", format!("{what}: the id cannot be used: {reason}"))
            }
            Error::Protected { column, roles, .. } => ApiError::new(
                StatusCode::FORBIDDEN,
                "forbidden_field",
                format!("{what}: changing `{}` needs the role {roles}, which you do not have", field_name(column)),
            ),
            _ => match error.kind() {
                ErrorKind::NotFound => ApiError::new(StatusCode::NOT_FOUND, "not_found", format!("{what} does not exist")),
                ErrorKind::AlreadyExists => ApiError::new(
                    StatusCode::CONFLICT,
                    "already_exists",
                    format!("{what} already exists; choose another id, or PUT to change it"),
                ),
                ErrorKind::PreconditionFailed => ApiError::new(
                    StatusCode::PRECONDITION_FAILED,
                    "stale_etag",
                    format!("{what} was changed since the version your If-Match names; GET it again, reapply your change and send the new ETag"),
                ),
                ErrorKind::Invalid => ApiError::bad_request("invalid_value", format!("{what}: {error}")),
                ErrorKind::Throttled | ErrorKind::Busy | ErrorKind::Unavailable => {
                    eprintln!("service: {what}: {error}");
                    ApiError {
                        retry_after: Some(1),
                        ..ApiError::new(
                            StatusCode::SERVICE_UNAVAILABLE,
                            "storage_unavailable",
                            "the storage service is busy or unreachable; try again shortly",
                        )
                    }
                }
                ErrorKind::OutcomeUnknown => {
                    eprintln!("service: {what}: {error}");
                    ApiError::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "outcome_unknown",
                        format!("the storage service did not answer, so {what} may or may not have been written; GET it before trying again"),
                    )
                }
                _ => ApiError::internal(what, error),
            },
        }
    }
}

/// The JSON field name of a column (`Published` → `published`).
fn field_name(column: &str) -> String {
    let mut out = String::new();
    for (i, c) in column.chars().enumerate() {
        if c.is_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = Body {
            error: self.code,
            message: &self.message,
        };
        let mut response = (self.status, Json(body)).into_response();
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

/// The answer to a request body that is not the JSON a route expects.
/// (`400` for JSON that does not parse, `415` without a JSON content type,
/// `422` for JSON that is not the route's shape.)
pub fn bad_body(rejection: axum::extract::rejection::JsonRejection) -> ApiError {
    ApiError::new(rejection.status(), "invalid_body", rejection.body_text())
}

/// The answer to query parameters that do not parse.
pub fn bad_query(rejection: axum::extract::rejection::QueryRejection) -> ApiError {
    ApiError::bad_request("invalid_query", rejection.body_text())
}
