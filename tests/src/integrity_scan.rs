//! An integrity scan of a table and its blobs, written from the on-storage
//! layout (`unified_tables::layout`) and independent of the store's reader:
//! what a crash or a lost answer must never leave behind.
//!
//! - every main row's split values reassemble: each chunk present, the
//!   stored length and SHA-256 as the manifest says;
//! - every continuation row a main row declares exists, and no continuation
//!   row exists that no main row declares;
//! - every blob reference names a blob of that length and hash, and every
//!   blob under the table's prefix is referenced by a row (the ones that
//!   are not are listed apart: a crash leaves them to the orphan sweep).

use std::collections::{BTreeMap, BTreeSet};

use unified_tables::backend::blob::BlobBackend;
use unified_tables::backend::{Backend, QueryRequest};
use unified_tables::layout::{
    blob_paths, chunk_cell, continuation_key, enc_cell, escape_segment, is_blob_cell, is_continuation_key,
    is_index_row, len_cell, parse_split_cell, sha256_cell, split_parts, BlobRef, SplitCell, SPLIT_INDEX, SPLIT_OF,
};
use unified_tables::{Row, Value};

/// What a scan found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanReport {
    /// Main rows read.
    pub main_rows: usize,
    /// Continuation rows read.
    pub continuation_rows: usize,
    /// Index rows and intents of secondary indexes read (checked by the index tools, not here).
    pub index_rows: usize,
    /// Split values reassembled and checked.
    pub split_values: usize,
    /// Blob references checked.
    pub blob_refs: usize,
    /// Blobs listed under the table's prefix.
    pub blobs: usize,
    /// Everything in the table that is wrong (and every reference to a
    /// missing or changed blob), one line each.
    pub problems: Vec<String>,
    /// Blobs under the table's prefix that no row references: what the
    /// orphan sweep removes once they are older than its cut-off.
    pub orphan_blobs: Vec<String>,
}

/// Lower-case hex SHA-256 of `bytes`, as the layout's manifests and references hold it.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

async fn all_rows(backend: &dyn Backend, table: &str) -> unified_tables::Result<Vec<Row>> {
    let request = QueryRequest::default();
    let mut rows = Vec::new();
    let mut token = None;
    loop {
        let page = backend.query(table, &request, token.as_ref()).await?;
        rows.extend(page.rows);
        match page.next {
            Some(next) => token = Some(next),
            None => return Ok(rows),
        }
    }
}

fn cell_bytes(value: &Value) -> Option<&[u8]> {
    match value {
        Value::String(s) => Some(s.as_bytes()),
        Value::Binary(b) => Some(b),
        _ => None,
    }
}

/// Checks every split value of `cells` (a main row with its continuation rows' cells merged in).
fn check_split_values(at: &str, cells: &Row, report: &mut ScanReport) {
    let columns: BTreeSet<&str> = cells
        .properties
        .keys()
        .filter_map(|k| parse_split_cell(k))
        .filter(|(_, cell)| *cell == SplitCell::Chunks)
        .map(|(column, _)| column)
        .collect();
    for column in columns {
        report.split_values += 1;
        let chunks = match cells.get(&format!("{column}__chunks")) {
            Some(Value::Int32(n)) if *n >= 0 => *n as usize,
            other => {
                report.problems.push(format!("{at}: {column}__chunks is {other:?}"));
                continue;
            }
        };
        let mut stored = Vec::new();
        for i in 0..chunks {
            match cells.get(&chunk_cell(column, i)).and_then(cell_bytes) {
                Some(bytes) => stored.extend_from_slice(bytes),
                None => report.problems.push(format!("{at}: chunk {i} of {column} is missing")),
            }
        }
        let len = match cells.get(&len_cell(column)) {
            Some(Value::Int64(n)) => *n as usize,
            Some(Value::Int32(n)) => *n as usize,
            _ => usize::MAX,
        };
        if stored.len() != len {
            report.problems.push(format!(
                "{at}: {column} has {} stored bytes, its manifest says {len}",
                stored.len()
            ));
        }
        let sha = cells.get(&sha256_cell(column)).and_then(|v| v.as_str()).unwrap_or("");
        if sha256_hex(&stored) != sha {
            report
                .problems
                .push(format!("{at}: {column} does not hash to its manifest"));
        }
        if cells.get(&enc_cell(column)).is_none() {
            report.problems.push(format!("{at}: {column} has no encoding"));
        }
    }
}

/// Scans `table` and the blobs under its prefix in `container`.
pub async fn scan(
    backend: &dyn Backend,
    blobs: &dyn BlobBackend,
    table: &str,
    container: &str,
) -> unified_tables::Result<ScanReport> {
    let mut report = ScanReport::default();
    let rows = all_rows(backend, table).await?;
    let mut by_key: BTreeMap<(String, String), Row> = BTreeMap::new();
    for row in rows {
        by_key.insert((row.partition_key.clone(), row.row_key.clone()), row);
    }
    let mut referenced = BTreeSet::new();
    for ((pk, rk), row) in &by_key {
        let at = format!("{pk}/{rk}");
        if is_index_row(row) {
            report.index_rows += 1;
            continue;
        }
        if is_continuation_key(rk) {
            report.continuation_rows += 1;
            let main = row.get(SPLIT_OF).and_then(|v| v.as_str()).unwrap_or("");
            let index = match row.get(SPLIT_INDEX) {
                Some(Value::Int32(n)) => *n as usize,
                _ => 0,
            };
            let declared = by_key.get(&(pk.clone(), main.to_owned())).map(split_parts);
            if !declared.is_some_and(|parts| index >= 1 && index <= parts) || continuation_key(main, index) != *rk {
                report.problems.push(format!(
                    "{at}: a continuation row no main row declares (of `{main}`, index {index}, declared {declared:?})"
                ));
            }
            continue;
        }
        report.main_rows += 1;
        let mut cells = row.clone();
        for index in 1..=split_parts(row) {
            match by_key.get(&(pk.clone(), continuation_key(rk, index))) {
                Some(part) => {
                    for (name, value) in &part.properties {
                        if name != SPLIT_OF && name != SPLIT_INDEX {
                            cells.insert(name.clone(), value.clone());
                        }
                    }
                }
                None => report
                    .problems
                    .push(format!("{at}: continuation row {index} is missing")),
            }
        }
        check_split_values(&at, &cells, &mut report);
        for (name, value) in cells.properties.iter().filter(|(k, _)| is_blob_cell(k)) {
            report.blob_refs += 1;
            let Some(reference) = value.as_str().and_then(|json| BlobRef::parse(name, json).ok()) else {
                report.problems.push(format!("{at}: {name} is not a blob reference"));
                continue;
            };
            match blobs.get_hashed(container, &reference.path).await? {
                None => report
                    .problems
                    .push(format!("{at}: {name} names a missing blob {}", reference.path)),
                Some((_, bytes, sha)) if sha != reference.sha256 || bytes.len() as u64 != reference.length => report
                    .problems
                    .push(format!("{at}: the blob of {name} does not match its reference")),
                Some(_) => {}
            }
        }
        referenced.extend(blob_paths(&cells));
    }
    let prefix = format!("{}/", escape_segment(table));
    let mut marker: Option<String> = None;
    loop {
        let listing = blobs.list(container, &prefix, None, marker.as_deref(), 5_000).await?;
        for item in listing.items {
            report.blobs += 1;
            if !referenced.contains(&item.name) {
                report.orphan_blobs.push(item.name);
            }
        }
        match listing.next_marker {
            Some(m) => marker = Some(m),
            None => break,
        }
    }
    Ok(report)
}
