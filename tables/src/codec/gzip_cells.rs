//! Cells packed with gzip and written as base64 text (`{Col}__GZip`):
//! packing, and unpacking bounded so that a hostile cell cannot make the
//! reader hold more than a cell can hold.

use std::io::{Read, Write};

use base64::Engine as _;
use flate2::{read::GzDecoder, write::GzEncoder, Compression};

use super::{type_mismatch, GZIP_SUFFIX, MAX_GZIP_CELL_INFLATED_BYTES};
use crate::error::{Error, Result};
use crate::value::Value;

pub(crate) fn gzip_base64(bytes: &[u8]) -> String {
    let mut enc = GzEncoder::new(Vec::with_capacity(bytes.len() / 3 + 32), Compression::default());
    // Writing to a Vec cannot fail.
    let _ = enc.write_all(bytes);
    let packed = enc.finish().unwrap_or_default();
    base64::engine::general_purpose::STANDARD.encode(packed)
}

/// Why gzip data could not be unpacked.
#[derive(Debug)]
pub(crate) enum GunzipError {
    /// Not gzip, truncated, or failing its CRC or length check.
    Damaged(String),
    /// It unpacks to more than the limit allows.
    TooLarge {
        /// The most bytes the data may unpack to.
        limit: usize,
    },
}

/// Deflate expands data at most about 1032-fold; a claim beyond that is false.
const DEFLATE_MAX_RATIO: usize = 1032;

/// Unpacks one gzip member, refusing output larger than `limit` bytes; it
/// never holds more than `limit` bytes of output.
///
/// The size the gzip trailer declares is untrusted: it only sizes the first
/// allocation, and then no larger than the limit, what deflate can expand the
/// input to, and a small multiple of the input.
pub(crate) fn gunzip_bounded(packed: &[u8], limit: usize) -> std::result::Result<Vec<u8>, GunzipError> {
    let declared = match packed.len().checked_sub(4).and_then(|at| packed.get(at..)) {
        Some(&[a, b, c, d]) => usize::try_from(u32::from_le_bytes([a, b, c, d])).unwrap_or(usize::MAX),
        _ => 0,
    };
    let first = declared
        .min(limit)
        .min(packed.len().saturating_mul(DEFLATE_MAX_RATIO))
        .min(packed.len().saturating_mul(16).max(1 << 16));
    let mut out = Vec::with_capacity(first);
    // At most one byte past the limit is ever unpacked, straight into `out`.
    let mut decoder = GzDecoder::new(packed).take(limit as u64 + 1);
    decoder
        .read_to_end(&mut out)
        .map_err(|e| GunzipError::Damaged(format!("not gzip data, or damaged: {e}")))?;
    if out.len() > limit {
        return Err(GunzipError::TooLarge { limit });
    }
    Ok(out)
}

/// Unpacks the base64 text of a `{Col}__GZip` cell (bounded by [`MAX_GZIP_CELL_INFLATED_BYTES`]).
pub(crate) fn gunzip_base64(text: &str) -> std::result::Result<Vec<u8>, GunzipError> {
    let packed = base64::engine::general_purpose::STANDARD
        .decode(text.as_bytes())
        .map_err(|e| GunzipError::Damaged(format!("not base64: {e}")))?;
    gunzip_bounded(&packed, MAX_GZIP_CELL_INFLATED_BYTES)
}

/// Unpacks a `{Col}__GZip` cell: a damaged one is a [`Error::Decode`], one
/// that unpacks past [`super::MAX_GZIP_CELL_INFLATED_BYTES`] an [`Error::Integrity`].
pub(super) fn gunzip_cell(column: &str, cell: &Value) -> Result<Vec<u8>> {
    match cell {
        Value::String(text) => gunzip_base64(text).map_err(|e| match e {
            GunzipError::Damaged(reason) => Error::Decode {
                column: format!("{column}{GZIP_SUFFIX}"),
                expected: "base64 of gzip data".into(),
                found: reason,
            },
            GunzipError::TooLarge { limit } => Error::Integrity {
                column: format!("{column}{GZIP_SUFFIX}"),
                reason: format!(
                    "the gzip data unpacks to more than {limit} bytes, more than any cell the service accepts can hold"
                ),
            },
        }),
        other => Err(type_mismatch(&format!("{column}{GZIP_SUFFIX}"), "a string", other)),
    }
}
