//! Blob names of offloaded values and files, and the reference cell
//! `{Col}__blob` that points at one.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::is_blob_cell;
use crate::error::{Error, Result};
use crate::value::Row;

/// The default container of offloaded values and files.
pub const DEFAULT_CONTAINER: &str = "unified-tables-values";

/// Escapes one name segment as `Uri.EscapeDataString` does, with `.`
/// escaped too (so no segment is `.` or `..`); an empty segment is `%`.
pub fn escape_segment(segment: &str) -> String {
    if segment.is_empty() {
        return "%".to_owned();
    }
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'~' => out.push(b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Reverses [`escape_segment`]: `%` alone is the empty key.
pub fn unescape_segment(segment: &str) -> Option<String> {
    if segment == "%" {
        return Some(String::new());
    }
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The partition key a blob name holds when it has the offload shape
/// (`{table}/{partitionKey}/…`: a partition segment followed by a `/`), or
/// `None`. Every large value's and file's blob has it.
pub fn blob_partition(name: &str) -> Option<String> {
    let mut segments = name.splitn(3, '/');
    let (_table, partition, _rest) = (segments.next()?, segments.next()?, segments.next()?);
    if partition.is_empty() {
        return None;
    }
    unescape_segment(partition)
}

/// The blob name of a value: `{table}/{partitionKey}/{rowKey}/{column}/{sha256}`.
pub fn blob_name(table: &str, partition_key: &str, row_key: &str, column: &str, sha256: &str) -> String {
    format!(
        "{}{}/{sha256}",
        row_prefix(table, partition_key, row_key),
        escape_segment(column)
    )
}

/// The prefix (with its trailing `/`) of every blob of one row.
pub fn row_prefix(table: &str, partition_key: &str, row_key: &str) -> String {
    format!(
        "{}/{}/{}/",
        escape_segment(table),
        escape_segment(partition_key),
        escape_segment(row_key)
    )
}

/// The prefix of every blob of one partition.
pub fn partition_prefix(table: &str, partition_key: &str) -> String {
    format!("{}/{}/", escape_segment(table), escape_segment(partition_key))
}

/// Whether a name has the exact offload shape `{t}/{pk}/{rk}/{col}/{64 lower-hex}`.
pub fn is_offload_shape(name: &str) -> bool {
    let parts: Vec<&str> = name.split('/').collect();
    parts.len() == 5
        && parts[..4].iter().all(|p| !p.is_empty())
        && parts[4].len() == 64
        && parts[4]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

// --- The blob reference cell --------------------------------------------------------

/// The reference cell `{Col}__blob`: where a value's blob is and how to
/// check it. Stored as JSON with the members `path`, `sha256`, `length` and
/// the optional `contentType` and `encoding`.
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

impl BlobRef {
    /// The JSON text of the reference cell.
    pub fn to_cell(&self) -> String {
        // A struct of strings and a number always serializes.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Parses the JSON text of the reference cell `cell`.
    pub fn parse(cell: &str, json: &str) -> Result<BlobRef> {
        crate::value::case_insensitive_json::from_str(json).map_err(|e| Error::Decode {
            column: cell.to_owned(),
            expected: "a blob reference (JSON with path, sha256, length)".into(),
            found: e.to_string(),
        })
    }
}

/// The blob paths of every readable reference cell of a row.
pub fn blob_paths(row: &Row) -> BTreeSet<String> {
    row.properties
        .iter()
        .filter(|(k, _)| is_blob_cell(k))
        .filter_map(|(k, v)| v.as_str().and_then(|json| BlobRef::parse(k, json).ok()).map(|r| r.path))
        .collect()
}
