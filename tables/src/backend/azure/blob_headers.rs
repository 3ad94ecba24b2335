//! Reading the blob service's answers: properties from response headers,
//! HTTP dates, ETags, content ranges, lease answers; and conditions and
//! lease actions as request headers.

use std::fmt;

use azure_core::headers::{self as h, HeaderName, Headers};
use azure_core::prelude::{IfMatchCondition, IfModifiedSinceCondition};

use super::http::REQUEST_ID;
use crate::backend::blob::{BlobCondition, BlobProperties, LeaseAction, LeaseAnswer, LeaseDuration, ReadCondition};
use crate::error::{Error, Result};
use crate::value::{DateTime, Guid};

/// Whether an error says the blob (not its container) does not exist.
pub(super) fn is_blob_missing(error: &Error) -> bool {
    matches!(error, Error::Service { status: 404, code, .. } if code != "ContainerNotFound")
}

pub(super) fn unreadable(what: &str, detail: impl fmt::Display) -> Error {
    Error::malformed_response(format!("the blob service's answer has an unreadable {what}: {detail}"))
}

/// A header whose value `value` does not parse; the parser's error is the source.
fn unparsable(what: &str, value: &str, error: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::malformed_response(format!("the blob service's answer has an unreadable {what} `{value}`"))
        .with_source(error)
}

/// An RFC 1123 date (`Sun, 06 Nov 1994 08:49:37 GMT`).
pub(super) fn parse_http_date(text: &str) -> Result<DateTime> {
    let at = azure_core::date::parse_rfc1123(text).map_err(|e| unparsable("date", text, e))?;
    Ok(DateTime::from_unix_nanos(at.unix_timestamp_nanos()))
}

/// The strong ETag as the `ETag` header writes it: quoted.
pub(super) fn quoted(etag: &str) -> String {
    if etag.starts_with('"') || etag.starts_with("W/") {
        etag.to_owned()
    } else {
        format!("\"{etag}\"")
    }
}

/// `bytes 0-4/100` → 100.
pub(super) fn total_from_content_range(text: &str) -> Option<u64> {
    text.rsplit_once('/')?.1.trim().parse().ok()
}

/// The service's `x-ms-request-id` of an answer.
pub(super) fn request_id_of(headers: &Headers) -> Option<&str> {
    headers.get_optional_str(&HeaderName::from_static(REQUEST_ID))
}

/// The properties a Get Blob / Get Blob Properties answer carries.
pub(super) fn properties_from_headers(headers: &Headers) -> Result<BlobProperties> {
    read_properties(headers).map_err(|e| e.with_request_id(request_id_of(headers)))
}

fn read_properties(headers: &Headers) -> Result<BlobProperties> {
    let etag = headers
        .get_optional_str(&h::ETAG)
        .ok_or_else(|| unreadable("ETag", "missing"))?;
    let last_modified = parse_http_date(
        headers
            .get_optional_str(&h::LAST_MODIFIED)
            .ok_or_else(|| unreadable("Last-Modified", "missing"))?,
    )?;
    let length = match headers.get_optional_str(&h::CONTENT_RANGE) {
        Some(range) => total_from_content_range(range).ok_or_else(|| unreadable("Content-Range", range))?,
        None => {
            let text = headers.get_optional_str(&h::CONTENT_LENGTH).unwrap_or("0").trim();
            text.parse().map_err(|e| unparsable("Content-Length", text, e))?
        }
    };
    let text = |name: &HeaderName| {
        headers
            .get_optional_str(name)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    Ok(BlobProperties {
        etag: quoted(etag),
        last_modified,
        length,
        content_type: text(&h::CONTENT_TYPE),
        content_encoding: text(&h::CONTENT_ENCODING),
    })
}

pub(super) fn if_match(
    condition: &BlobCondition,
) -> Result<(Option<IfMatchCondition>, Option<IfModifiedSinceCondition>)> {
    Ok(match condition {
        BlobCondition::None => (None, None),
        BlobCondition::IfNoneMatchAny => (Some(IfMatchCondition::NotMatch("*".into())), None),
        BlobCondition::IfMatch(etag) => (Some(IfMatchCondition::Match(etag.clone())), None),
        BlobCondition::IfUnmodifiedSince(at) => {
            // The header carries whole seconds; the crate formats the instant as RFC 1123.
            let at = azure_core::date::parse_rfc3339(&at.to_string()).map_err(|e| Error::InvalidValue {
                column: String::new(),
                reason: format!("If-Unmodified-Since `{at}` cannot be sent: {e}"),
            })?;
            (None, Some(IfModifiedSinceCondition::Unmodified(at)))
        }
    })
}

/// The crates' lease id of ours.
pub(super) fn lease_id(lease: Guid) -> Result<azure_core::prelude::LeaseId> {
    lease
        .to_string()
        .parse()
        .map_err(|e| Error::encode(format!("lease id `{lease}` cannot be sent")).with_source(e))
}

/// The headers of a read condition.
pub(super) fn read_condition_headers(condition: &ReadCondition) -> Headers {
    let mut headers = Headers::new();
    match condition {
        ReadCondition::None => {}
        ReadCondition::IfMatch(etag) => headers.insert(h::IF_MATCH, etag.clone()),
        ReadCondition::IfNoneMatch(etag) => headers.insert(h::IF_NONE_MATCH, etag.clone()),
    }
    headers
}

/// The headers of one Lease Blob action.
pub(super) fn lease_headers(action: LeaseAction) -> Headers {
    let mut headers = Headers::new();
    let seconds = |d: LeaseDuration| match d {
        LeaseDuration::Seconds(s) => s.to_string(),
        LeaseDuration::Infinite => "-1".to_owned(),
    };
    let (verb, lease, proposed) = match action {
        LeaseAction::Acquire { duration, proposed } => {
            headers.insert(HeaderName::from_static("x-ms-lease-duration"), seconds(duration));
            ("acquire", None, proposed)
        }
        LeaseAction::Renew { lease } => ("renew", Some(lease), None),
        LeaseAction::Change { lease, proposed } => ("change", Some(lease), Some(proposed)),
        LeaseAction::Release { lease } => ("release", Some(lease), None),
        LeaseAction::Break { period } => {
            if let Some(period) = period {
                headers.insert(HeaderName::from_static("x-ms-lease-break-period"), period.to_string());
            }
            ("break", None, None)
        }
    };
    headers.insert(h::LEASE_ACTION, verb);
    if let Some(lease) = lease {
        headers.insert(h::LEASE_ID, lease.to_string());
    }
    if let Some(proposed) = proposed {
        headers.insert(h::PROPOSED_LEASE_ID, proposed.to_string());
    }
    headers
}

/// The lease id (`x-ms-lease-id`) and break time (`x-ms-lease-time`) of a Lease Blob answer.
pub(super) fn lease_answer(headers: &Headers) -> Result<LeaseAnswer> {
    read_lease_answer(headers).map_err(|e| e.with_request_id(request_id_of(headers)))
}

fn read_lease_answer(headers: &Headers) -> Result<LeaseAnswer> {
    let lease = match headers.get_optional_str(&h::LEASE_ID) {
        Some(text) => Some(
            text.trim()
                .parse::<Guid>()
                .map_err(|e| unparsable("x-ms-lease-id", text, e))?,
        ),
        None => None,
    };
    let break_seconds = match headers.get_optional_str(&HeaderName::from_static("x-ms-lease-time")) {
        Some(text) => Some(
            text.trim()
                .parse::<u32>()
                .map_err(|e| unparsable("x-ms-lease-time", text, e))?,
        ),
        None => None,
    };
    Ok(LeaseAnswer { lease, break_seconds })
}
