//! A caller's ETag is a version: the one check every verb that writes or
//! reads on condition of a caller's ETag goes through, and that the write
//! pipeline (`Store::commit`, in `write/mod.rs`) applies again to every operation it sends.

use crate::backend::{IfMatch, WriteOp};
use crate::error::{Error, Result};
use crate::value::ETag;

/// Refuses a caller's ETag that is not a version: `*` (sent as `If-Match`,
/// the service reads it as any version, so the write would be
/// unconditional) and the empty ETag. Every verb that writes or reads on
/// condition of a caller's ETag (`update`, `update_with`, `delete_entity`,
/// `patch`, `merge_columns_if`, the conditional blob verbs) passes here
/// before anything is sent, and `Store::commit` checks every
/// operation again, so no such condition reaches a backend from a store.
pub(crate) fn check_caller_etag(etag: &str) -> Result<()> {
    let trimmed = etag.trim();
    if trimmed.is_empty() || trimmed == "*" {
        return Err(Error::InvalidValue {
            column: "ETag".into(),
            reason: format!(
                "`{etag}` is not a version, and the service would read it as any version: pass the ETag \
                 the entity or blob was read with, or use the unconditional verb (`replace`, \
                 `Concurrency::LastWriterWins`, `delete`, `patch` without `with_etag`, `merge_columns`, \
                 a blob `put` or `delete`) to write whatever version is stored; nothing was sent"
            ),
        });
    }
    Ok(())
}

/// [`check_caller_etag`] for a table write's condition (`IfMatch::Any` is
/// the caller's explicit choice and passes).
pub(crate) fn check_condition(condition: &IfMatch) -> Result<()> {
    match condition {
        IfMatch::Any => Ok(()),
        IfMatch::ETag(etag) => check_caller_etag(etag.as_str()),
    }
}

/// The condition of a write on a caller's version: `If-Match` with that
/// ETag, refused as [`check_caller_etag`] says when it is not a version.
pub(crate) fn caller_version(etag: &ETag) -> Result<IfMatch> {
    check_caller_etag(etag.as_str())?;
    Ok(IfMatch::ETag(etag.clone()))
}

/// [`check_condition`] for every operation of one request or transaction.
pub(crate) fn check_conditions(ops: &[WriteOp]) -> Result<()> {
    for op in ops {
        if let WriteOp::Update { condition, .. } | WriteOp::Delete { condition, .. } = op {
            check_condition(condition)?;
        }
    }
    Ok(())
}
