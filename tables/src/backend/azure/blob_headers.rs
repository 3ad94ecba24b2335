//! Reading the blob service's answers: properties from response headers,
//! HTTP dates, ETags, content ranges, lease answers; and conditions and
//! lease actions as request headers.

use std::fmt;

use hyper::header::{
    HeaderMap, HeaderName, HeaderValue, CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_RANGE, CONTENT_TYPE, ETAG, IF_MATCH,
    IF_NONE_MATCH, IF_UNMODIFIED_SINCE, LAST_MODIFIED,
};

use super::http::REQUEST_ID;
use super::transport::header;
use super::transport::wire::http_date;
use crate::backend::blob::{BlobCondition, BlobProperties, LeaseAction, LeaseAnswer, LeaseDuration, ReadCondition};
use crate::error::{Error, Result};
use crate::value::{DateTime, Guid};

pub(super) const LEASE_ID: HeaderName = HeaderName::from_static("x-ms-lease-id");
const LEASE_ACTION: HeaderName = HeaderName::from_static("x-ms-lease-action");
const LEASE_DURATION: HeaderName = HeaderName::from_static("x-ms-lease-duration");
const LEASE_BREAK_PERIOD: HeaderName = HeaderName::from_static("x-ms-lease-break-period");
const PROPOSED_LEASE_ID: HeaderName = HeaderName::from_static("x-ms-proposed-lease-id");

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
    super::transport::wire::parse_http_date(text).ok_or_else(|| unreadable("date", text))
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
pub(super) fn request_id_of(headers: &HeaderMap) -> Option<&str> {
    header(headers, REQUEST_ID)
}

/// The properties a Get Blob / Get Blob Properties answer carries.
pub(super) fn properties_from_headers(headers: &HeaderMap) -> Result<BlobProperties> {
    read_properties(headers).map_err(|e| e.with_request_id(request_id_of(headers)))
}

fn read_properties(headers: &HeaderMap) -> Result<BlobProperties> {
    let etag = header(headers, ETAG.as_str()).ok_or_else(|| unreadable("ETag", "missing"))?;
    let last_modified = parse_http_date(
        header(headers, LAST_MODIFIED.as_str()).ok_or_else(|| unreadable("Last-Modified", "missing"))?,
    )?;
    let length = match header(headers, CONTENT_RANGE.as_str()) {
        Some(range) => total_from_content_range(range).ok_or_else(|| unreadable("Content-Range", range))?,
        None => {
            let text = header(headers, CONTENT_LENGTH.as_str()).unwrap_or("0").trim();
            text.parse().map_err(|e| unparsable("Content-Length", text, e))?
        }
    };
    let text = |name: &HeaderName| {
        header(headers, name.as_str())
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    Ok(BlobProperties {
        etag: quoted(etag),
        last_modified,
        length,
        content_type: text(&CONTENT_TYPE),
        content_encoding: text(&CONTENT_ENCODING),
    })
}

fn value(text: &str, what: &str) -> Result<HeaderValue> {
    HeaderValue::from_str(text).map_err(|e| Error::encode(format!("{what} `{text}` cannot be sent")).with_source(e))
}

/// The headers of a write condition.
pub(super) fn write_condition_headers(condition: &BlobCondition) -> Result<Vec<(HeaderName, HeaderValue)>> {
    Ok(match condition {
        BlobCondition::None => Vec::new(),
        BlobCondition::IfNoneMatchAny => vec![(IF_NONE_MATCH, HeaderValue::from_static("*"))],
        BlobCondition::IfMatch(etag) => vec![(IF_MATCH, value(etag, "the ETag")?)],
        // The header carries whole seconds.
        BlobCondition::IfUnmodifiedSince(at) => vec![(IF_UNMODIFIED_SINCE, value(&http_date(*at), "the date")?)],
    })
}

/// The `x-ms-lease-id` header of a request made under a lease.
pub(super) fn lease_header(lease: Guid) -> Result<(HeaderName, HeaderValue)> {
    Ok((LEASE_ID, value(&lease.to_string(), "the lease id")?))
}

/// The headers of a read condition.
pub(super) fn read_condition_headers(condition: &ReadCondition) -> Result<Vec<(HeaderName, HeaderValue)>> {
    Ok(match condition {
        ReadCondition::None => Vec::new(),
        ReadCondition::IfMatch(etag) => vec![(IF_MATCH, value(etag, "the ETag")?)],
        ReadCondition::IfNoneMatch(etag) => vec![(IF_NONE_MATCH, value(etag, "the ETag")?)],
    })
}

/// The headers of one Lease Blob action.
pub(super) fn lease_headers(action: LeaseAction) -> Vec<(HeaderName, HeaderValue)> {
    let mut headers = Vec::new();
    let seconds = |d: LeaseDuration| match d {
        LeaseDuration::Seconds(s) => HeaderValue::from(s),
        LeaseDuration::Infinite => HeaderValue::from_static("-1"),
    };
    let (verb, lease, proposed) = match action {
        LeaseAction::Acquire { duration, proposed } => {
            headers.push((LEASE_DURATION, seconds(duration)));
            ("acquire", None, proposed)
        }
        LeaseAction::Renew { lease } => ("renew", Some(lease), None),
        LeaseAction::Change { lease, proposed } => ("change", Some(lease), Some(proposed)),
        LeaseAction::Release { lease } => ("release", Some(lease), None),
        LeaseAction::Break { period } => {
            if let Some(period) = period {
                headers.push((LEASE_BREAK_PERIOD, HeaderValue::from(period)));
            }
            ("break", None, None)
        }
    };
    headers.push((LEASE_ACTION, HeaderValue::from_static(verb)));
    let guid = |g: Guid| HeaderValue::try_from(g.to_string()).expect("a GUID is a header value");
    if let Some(lease) = lease {
        headers.push((LEASE_ID, guid(lease)));
    }
    if let Some(proposed) = proposed {
        headers.push((PROPOSED_LEASE_ID, guid(proposed)));
    }
    headers
}

/// The lease id (`x-ms-lease-id`) and break time (`x-ms-lease-time`) of a Lease Blob answer.
pub(super) fn lease_answer(headers: &HeaderMap) -> Result<LeaseAnswer> {
    read_lease_answer(headers).map_err(|e| e.with_request_id(request_id_of(headers)))
}

fn read_lease_answer(headers: &HeaderMap) -> Result<LeaseAnswer> {
    let lease = match header(headers, LEASE_ID.as_str()) {
        Some(text) => Some(
            text.trim()
                .parse::<Guid>()
                .map_err(|e| unparsable("x-ms-lease-id", text, e))?,
        ),
        None => None,
    };
    let break_seconds = match header(headers, "x-ms-lease-time") {
        Some(text) => Some(
            text.trim()
                .parse::<u32>()
                .map_err(|e| unparsable("x-ms-lease-time", text, e))?,
        ),
        None => None,
    };
    Ok(LeaseAnswer { lease, break_seconds })
}
