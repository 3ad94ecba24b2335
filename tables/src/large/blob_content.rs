use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::value::{Row, Value};

/// Suffix of a blob-reference cell.
pub(crate) const BLOB_SUFFIX: &str = "__blob";

/// The reference cell `{Col}__blob`: where a value's blob is and how to check it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlobRef {
    /// The blob's path in the container.
    pub path: String,
    /// Lower-case hex SHA-256 of the stored bytes.
    pub sha256: String,
    /// The stored length in bytes.
    pub length: u64,
    /// The content type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// The encoding of the stored bytes (`text`, `gzip`, `binary`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding: Option<String>,
}

/// A file kept in blob storage, referenced from its row by `{Col}__blob`.
///
/// A field of this type is marked `#[blob_content]`. Reading the entity
/// never downloads the file: the content carries only the reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobContent {
    pending: Option<(Vec<u8>, Option<String>)>,
    stored: Option<BlobRef>,
}

impl BlobContent {
    /// New content to upload on the next write.
    pub fn from_bytes(bytes: impl Into<Vec<u8>>, content_type: impl Into<String>) -> BlobContent {
        BlobContent {
            pending: Some((bytes.into(), Some(content_type.into()))),
            stored: None,
        }
    }

    /// The stored reference, once the content has been written or read.
    pub fn reference(&self) -> Option<&BlobRef> {
        self.stored.as_ref()
    }

    /// The length in bytes, when known.
    pub fn len(&self) -> Option<u64> {
        match (&self.stored, &self.pending) {
            (Some(r), _) => Some(r.length),
            (None, Some((b, _))) => Some(b.len() as u64),
            _ => None,
        }
    }

    /// Whether the content is known to be empty.
    pub fn is_empty(&self) -> bool {
        self.len() == Some(0)
    }
}

/// Writes the reference cell of a blob field. Content that has not been
/// uploaded yet needs a store with a blob container.
pub fn encode_blob_ref(content: Option<&BlobContent>, column: &str, row: &mut Row) -> Result<()> {
    let Some(content) = content else {
        return Ok(());
    };
    match &content.stored {
        Some(r) if content.pending.is_none() => {
            let json = serde_json::to_string(r).map_err(|e| Error::InvalidValue {
                column: column.to_owned(),
                reason: e.to_string(),
            })?;
            row.insert(format!("{column}{BLOB_SUFFIX}"), Value::String(json));
            Ok(())
        }
        _ => Err(Error::BlobOffloadNotConfigured {
            column: column.to_owned(),
        }),
    }
}

/// Reads the reference cell of a blob field (no download).
pub fn decode_blob_ref(row: &mut Row, column: &str) -> Result<Option<BlobContent>> {
    let name = format!("{column}{BLOB_SUFFIX}");
    match row.take(&name) {
        None => Ok(None),
        Some(Value::String(json)) => {
            let r: BlobRef = serde_json::from_str(&json).map_err(|e| Error::Decode {
                column: name,
                expected: "a blob reference (JSON with path, sha256, length)".into(),
                found: e.to_string(),
            })?;
            Ok(Some(BlobContent {
                pending: None,
                stored: Some(r),
            }))
        }
        Some(other) => Err(crate::codec::type_mismatch(&name, "a blob reference", &other)),
    }
}
