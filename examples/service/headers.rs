//! `ETag`, `If-Match` and `If-None-Match`: the store's versions in HTTP headers.
//!
//! A row's ETag, as the table service gives it (`W/"datetime'…'"`), is sent
//! as the `ETag` header verbatim, and an `If-Match` naming it makes the
//! write conditional on that version in the store. The store compares the
//! text exactly; a table ETag changes on every write, so the text is a
//! version, even though the service marks it weak.

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use unified_tables::ETag;

use super::error::ApiError;

/// What an `If-Match` header asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Precondition {
    /// `If-Match: *`: whatever version is stored (the row must exist).
    Any,
    /// `If-Match: <etag>`: exactly this version.
    Version(ETag),
}

/// The `If-Match` of a write. A write without one is refused with `428`:
/// an unconditional overwrite must be asked for with `*`.
pub fn if_match(headers: &HeaderMap) -> Result<Precondition, ApiError> {
    let values: Vec<&HeaderValue> = headers.get_all(header::IF_MATCH).iter().collect();
    let [value] = values.as_slice() else {
        return Err(if values.is_empty() {
            ApiError::new(
                StatusCode::PRECONDITION_REQUIRED,
                "if_match_required",
                "send If-Match with the ETag of the version you read (GET it first), or If-Match: * to overwrite whatever is stored",
            )
        } else {
            one_etag_only()
        });
    };
    let text = value
        .to_str()
        .map_err(|_| {
            ApiError::bad_request(
                "invalid_if_match",
                "If-Match must be visible ASCII: an ETag as this service sent it, or *",
            )
        })?
        .trim();
    match text {
        "*" => Ok(Precondition::Any),
        "" => Err(ApiError::bad_request(
            "invalid_if_match",
            "If-Match is empty: send an ETag as this service sent it, or *",
        )),
        t if !t.ends_with('"') => Err(ApiError::bad_request(
            "invalid_if_match",
            format!(
                "If-Match `{t}` is not an entity tag: send the ETag header of a GET unchanged (quotes included), or *"
            ),
        )),
        t if t.contains("\",") => Err(one_etag_only()),
        t => Ok(Precondition::Version(ETag::new(t))),
    }
}

fn one_etag_only() -> ApiError {
    ApiError::bad_request(
        "invalid_if_match",
        "If-Match must name exactly one ETag (the version you read), or *",
    )
}

/// Whether an `If-None-Match` header names `etag` (or `*`): the client's copy is current.
pub fn none_match_hits(headers: &HeaderMap, etag: &ETag) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| {
            let v = v.trim();
            v == "*" || v == etag.as_str()
        })
}

/// The `ETag` header of a response.
pub fn etag_header(etag: &ETag) -> Result<(header::HeaderName, HeaderValue), ApiError> {
    HeaderValue::from_str(etag.as_str())
        .map(|v| (header::ETAG, v))
        .map_err(|e| ApiError::internal("rendering the ETag", e))
}
