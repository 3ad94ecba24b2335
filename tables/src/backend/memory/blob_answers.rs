//! The answers of the in-memory blob backend that the service gives in
//! words: its errors, and the checks of write and read conditions against
//! a blob's properties.

use crate::backend::blob::{BlobCondition, BlobProperties, ReadCondition};
use crate::error::{Error, Result};
use crate::value::DateTime;

/// Ticks (100 ns) in one second.
pub(super) const TICKS_PER_SECOND: i64 = 10_000_000;

/// `at`, truncated to the whole second.
pub(super) fn whole_seconds(at: DateTime) -> DateTime {
    DateTime::from_ticks(at.ticks() - at.ticks().rem_euclid(TICKS_PER_SECOND)).unwrap_or(at)
}

pub(super) fn container_not_found(name: &str) -> Error {
    Error::service(
        404,
        "ContainerNotFound",
        format!("The specified container does not exist: `{name}`."),
    )
}

pub(super) fn blob_not_found(container: &str, name: &str) -> Error {
    Error::service(
        404,
        crate::service::BLOB_NOT_FOUND,
        format!("The specified blob does not exist: `{container}/{name}`."),
    )
}

pub(super) fn condition_not_met() -> Error {
    Error::service(
        412,
        "ConditionNotMet",
        "The condition specified using HTTP conditional header(s) is not met.",
    )
}

pub(super) fn invalid_query_parameter(name: &str, value: &str, reason: &str) -> Error {
    Error::service(
        400,
        "InvalidQueryParameterValue",
        format!("Value for one of the query parameters specified in the request URI is invalid: {name}=`{value}`: {reason}."),
    )
}

/// Checks a write's condition against the blob as stored. `put` tells a
/// put (where `If-None-Match: *` on an existing blob is 409) from a delete.
pub(super) fn check_condition(existing: Option<&BlobProperties>, condition: &BlobCondition, put: bool) -> Result<()> {
    match (condition, existing) {
        (BlobCondition::None, _) => Ok(()),
        (BlobCondition::IfNoneMatchAny, None) => Ok(()),
        (BlobCondition::IfNoneMatchAny, Some(_)) if put => Err(Error::service(
            409,
            "BlobAlreadyExists",
            "The specified blob already exists.",
        )),
        (BlobCondition::IfNoneMatchAny, Some(_)) => Err(condition_not_met()),
        (BlobCondition::IfMatch(_), None) => Err(condition_not_met()),
        (BlobCondition::IfMatch(etag), Some(blob)) => {
            if etag.trim() == "*" || *etag == blob.etag {
                Ok(())
            } else {
                Err(condition_not_met())
            }
        }
        (BlobCondition::IfUnmodifiedSince(_), None) => Ok(()),
        (BlobCondition::IfUnmodifiedSince(since), Some(blob)) => {
            // The header carries whole seconds (RFC 1123), and so does Last-Modified.
            if whole_seconds(*since) < blob.last_modified {
                Err(condition_not_met())
            } else {
                Ok(())
            }
        }
    }
}

pub(super) fn unsatisfiable_condition() -> Error {
    Error::service(
        400,
        "UnsatisfiableCondition",
        "The request includes an unsatisfiable condition for this operation.",
    )
}

/// Checks a read's condition against the blob as stored.
pub(super) fn check_read_condition(blob: &BlobProperties, condition: &ReadCondition) -> Result<()> {
    match condition {
        ReadCondition::None => Ok(()),
        ReadCondition::IfNoneMatch(etag) if etag == "*" => Err(unsatisfiable_condition()),
        ReadCondition::IfMatch(etag) if etag.trim() != "*" && *etag != blob.etag => Err(condition_not_met()),
        ReadCondition::IfNoneMatch(etag) if *etag == blob.etag => Err(Error::service(
            304,
            "ConditionNotMet",
            "The condition specified using HTTP conditional header(s) is not met.",
        )),
        ReadCondition::IfMatch(_) | ReadCondition::IfNoneMatch(_) => Ok(()),
    }
}
