//! The raw requests of a stored layout: what the library stored for one
//! value is read back, written again under other keys through the backends
//! directly, and read back again, every read checked.

use std::time::Duration;

use unified_tables::backend::blob::{BlobCondition, PutOptions};
use unified_tables::backend::Backend;
use unified_tables::backend::{QueryRequest, WriteOp};
use unified_tables::layout::{
    continuation_key, is_blob_cell, parse_split_cell, BlobRef, SplitCell, SPLIT_OF, SPLIT_PARTS,
};
use unified_tables::query::{CmpOp, Filter};
use unified_tables::{Row, Value};

use super::{timed, Bench, PARTITION};
use crate::common::Failure;

/// What the library stored for one value: the main row, its continuation
/// rows, and each blob it references with its bytes.
pub(super) struct Layout {
    rows: Vec<Row>,
    blobs: Vec<(BlobRef, Vec<u8>, PutOptions)>,
}

impl Layout {
    /// `rows: 1 + n` or `blob, x MB`.
    pub(super) fn describe(&self) -> String {
        match self.blobs.first() {
            Some((reference, ..)) => format!("blob {:.2} MB", reference.length as f64 / 1e6),
            None => format!("rows 1+{}", self.rows.len() - 1),
        }
    }

    /// The share of the value's stored bytes that its last continuation
    /// row holds, for a value on continuation rows. A read unpacks a row
    /// once all of it is in (the emulator answers a row in one burst), so
    /// its work on that share comes after the last byte.
    pub(super) fn last_row_share(&self) -> Option<f64> {
        let chunk_bytes = |row: &Row| -> usize {
            row.properties
                .iter()
                .filter(|(cell, _)| matches!(parse_split_cell(cell), Some((_, SplitCell::Chunk(_)))))
                .map(|(_, value)| match value {
                    Value::Binary(b) => b.len(),
                    Value::String(s) => s.len(),
                    _ => 0,
                })
                .sum()
        };
        let total: usize = self.rows.iter().map(chunk_bytes).sum();
        match self.rows.last() {
            Some(last) if self.rows.len() > 1 && total > 0 => Some(chunk_bytes(last) as f64 / total as f64),
            _ => None,
        }
    }

    /// The rows again under the main row key `rk`, unversioned.
    fn rows_as(&self, rk: &str) -> Vec<Row> {
        self.rows
            .iter()
            .enumerate()
            .map(|(i, row)| {
                let mut row = row.clone();
                row.etag = None;
                row.timestamp = None;
                if i == 0 {
                    row.row_key = rk.to_owned();
                } else {
                    row.row_key = continuation_key(rk, i);
                    row.insert(SPLIT_OF, Value::String(rk.to_owned()));
                }
                row
            })
            .collect()
    }
}

impl Bench {
    /// Reads back what the library stored under `rk`.
    pub(super) async fn layout(&self, rk: &str) -> Result<Layout, Failure> {
        let backend = self.db.backend();
        let main = backend
            .get(&self.table, PARTITION, rk)
            .await?
            .ok_or("the main row is missing")?;
        let parts = match main.get(SPLIT_PARTS) {
            Some(Value::Int32(n)) => *n as usize,
            _ => 0,
        };
        let mut blobs = Vec::new();
        for (column, cell) in main.properties.iter().filter(|(c, _)| is_blob_cell(c)) {
            let Value::String(json) = cell else {
                return Err(format!("{column} is not a string").into());
            };
            let reference: BlobRef = serde_json::from_str(json)?;
            let (blob_backend, container) = &self.raw;
            let got = blob_backend.get(container, &reference.path, None).await?;
            let (stored, bytes) = got.ok_or("a blob is missing")?;
            // The raw upload sets the headers the library's upload set.
            let options = PutOptions {
                content_type: stored.content_type,
                content_encoding: stored.content_encoding,
                condition: BlobCondition::IfNoneMatchAny,
                ..PutOptions::default()
            };
            blobs.push((reference, bytes, options));
        }
        let mut rows = vec![main];
        for i in 1..=parts {
            let key = continuation_key(rk, i);
            rows.push(
                backend
                    .get(&self.table, PARTITION, &key)
                    .await?
                    .ok_or("a continuation row is missing")?,
            );
        }
        Ok(Layout { rows, blobs })
    }

    /// The names the raw requests give the layout's blobs under `rk`.
    fn raw_names(&self, layout: &Layout, rk: &str) -> Vec<String> {
        (0..layout.blobs.len())
            .map(|i| format!("{}/raw/{rk}/{i}", self.table))
            .collect()
    }

    /// Writes the layout's rows and blob bytes again under `rk`.
    pub(super) async fn raw_write(&self, layout: &Layout, rk: &str) -> Result<Duration, Failure> {
        let (blob_backend, container) = &self.raw;
        let backend = self.db.backend();
        let rows = layout.rows_as(rk);
        let names = self.raw_names(layout, rk);
        // The bytes and rows are copied before the clock starts: the requests own what they send.
        let puts: Vec<(Vec<u8>, PutOptions)> = layout
            .blobs
            .iter()
            .map(|(_, bytes, options)| (bytes.clone(), options.clone()))
            .collect();
        let mut ops: Vec<WriteOp> = rows.iter().cloned().map(WriteOp::Insert).collect();
        let (write, _) = timed(async {
            for ((bytes, options), name) in puts.into_iter().zip(&names) {
                blob_backend.put(container, name, bytes, options).await?;
            }
            if ops.len() == 1 {
                backend.execute(&self.table, ops.remove(0)).await?;
            } else {
                backend.transaction(&self.table, ops).await?;
            }
            Ok(())
        })
        .await?;
        Ok(write)
    }

    /// Reads back what [`Bench::raw_write`] wrote under `rk` (main row, then
    /// its blobs or continuation rows) and checks it.
    pub(super) async fn raw_read(&self, layout: &Layout, rk: &str) -> Result<Duration, Failure> {
        let (blob_backend, container) = &self.raw;
        let backend = self.db.backend();
        let rows = layout.rows_as(rk);
        let names = self.raw_names(layout, rk);
        let (read, (main, blobs, continuation)) = timed(async {
            let main = backend
                .get(&self.table, PARTITION, rk)
                .await?
                .ok_or("the raw main row is missing")?;
            let mut blobs = Vec::new();
            for name in &names {
                blobs.push(
                    blob_backend
                        .get(container, name, None)
                        .await?
                        .ok_or("a raw blob is missing")?
                        .1,
                );
            }
            let mut continuation = Vec::new();
            if rows.len() > 1 {
                let range = Filter::eq("PartitionKey", Value::String(PARTITION.into()))
                    .and(Filter::cmp("RowKey", CmpOp::Ge, Value::String(continuation_key(rk, 1))))
                    .and(Filter::cmp(
                        "RowKey",
                        CmpOp::Le,
                        Value::String(continuation_key(rk, rows.len() - 1)),
                    ));
                let request = QueryRequest {
                    filter: Some(range),
                    select: None,
                    top: None,
                };
                let mut next = None;
                loop {
                    let page = backend.query(&self.table, &request, next.as_ref()).await?;
                    continuation.extend(page.rows);
                    match page.next {
                        Some(c) => next = Some(c),
                        None => break,
                    }
                }
            }
            Ok((main, blobs, continuation))
        })
        .await?;
        let same_rows = main.properties == rows[0].properties
            && continuation.len() == rows.len() - 1
            && continuation
                .iter()
                .zip(&rows[1..])
                .all(|(a, b)| a.properties == b.properties);
        let same_blobs = blobs.iter().zip(&layout.blobs).all(|(a, (_, b, _))| a == b);
        if !same_rows || !same_blobs {
            return Err(format!("{rk}: the raw rows or blobs read back differ").into());
        }
        Ok(read)
    }

    /// Drops the table and every blob under its name.
    pub(super) async fn clean_up(&self) -> Result<(), Failure> {
        self.db.backend().delete_table(&self.table).await?;
        let (blobs, container) = &self.raw;
        let prefix = format!("{}/", self.table);
        let mut marker: Option<String> = None;
        loop {
            let page = blobs.list(container, &prefix, None, marker.as_deref(), 1000).await?;
            for item in &page.items {
                blobs.delete(container, &item.name, BlobCondition::None).await?;
            }
            match page.next_marker {
                Some(m) => marker = Some(m),
                None => return Ok(()),
            }
        }
    }
}
