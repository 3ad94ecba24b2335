//! Counting what a table holds ([`Admin::stats`]): partitions, rows,
//! entities, index rows, large values by tier, blobs.

use std::collections::BTreeMap;

use serde::Serialize;

use super::scan::{Range, Scanned};
use super::{report, Admin, Event, Observer};
use crate::error::Result;
use crate::index::rows::is_intent;
use crate::large::logical::Tier;
use crate::large::stream::well_formed_count;
use crate::layout::{chunk_cell, len_cell, BlobRef, BLOB_SUFFIX, CHUNKS_SUFFIX};
use crate::value::{Row, Value};

/// Large values of one tier.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TierStats {
    /// How many.
    pub values: u64,
    /// Their stored bytes.
    pub bytes: u64,
}

/// What a table holds ([`Admin::stats`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Partitions with at least one row.
    pub partitions: u64,
    /// Rows, continuation rows included.
    pub rows: u64,
    /// Entities (main rows).
    pub entities: u64,
    /// Continuation rows.
    pub continuation_rows: u64,
    /// Rows of secondary indexes (local and global index rows).
    pub index_rows: u64,
    /// Intents of global index writes not applied yet.
    pub index_intents: u64,
    /// Stored bytes of every cell of every row.
    pub row_bytes: u64,
    /// Large values by tier (`split`, `continuation`, `blob`).
    pub large: BTreeMap<Tier, TierStats>,
    /// Blobs of the table in the container (whether referenced or not).
    pub blobs: u64,
    /// Their bytes.
    pub blob_bytes: u64,
}

impl Admin {
    /// Counts what the table (or one partition) holds: partitions, rows,
    /// entities, large values by tier and their stored bytes, and the blobs
    /// of the table in the container. Reads every row once; nothing is checked.
    pub async fn stats(&self, partition: Option<&str>, observer: Option<Observer>) -> Result<Stats> {
        self.store
            .op("stats")
            .run(async move {
                let range = Range {
                    partition: partition.map(str::to_owned),
                    after: None,
                };
                let mut scan = self.scan(&range).await?;
                let mut stats = Stats::default();
                let mut last_partition: Option<String> = None;
                report(
                    &observer,
                    Event::Phase {
                        name: "scan",
                        total: None,
                    },
                );
                while let Some(item) = scan.next().await? {
                    let (main, continuations) = match item {
                        Scanned::Entity { main, continuations } => (main, continuations),
                        Scanned::Index(row) if is_intent(&row) => {
                            stats.index_intents += 1;
                            continue;
                        }
                        Scanned::Index(_) => {
                            stats.index_rows += 1;
                            continue;
                        }
                        Scanned::Leftover(_) => continue,
                    };
                    if last_partition.as_deref() != Some(main.partition_key.as_str()) {
                        stats.partitions += 1;
                        last_partition = Some(main.partition_key.clone());
                    }
                    stats.entities += 1;
                    stats.continuation_rows += continuations.len() as u64;
                    for (tier, bytes) in shape(&main) {
                        let t = stats.large.entry(tier).or_default();
                        t.values += 1;
                        t.bytes += bytes;
                    }
                    if stats.entities % 1000 == 0 {
                        report(
                            &observer,
                            Event::Progress {
                                rows: scan.rows,
                                entities: stats.entities,
                                bytes: scan.bytes,
                            },
                        );
                    }
                }
                stats.rows = scan.rows;
                stats.row_bytes = scan.bytes;
                if let Ok(mut pages) = self.blob_pages(&range) {
                    while let Some(items) = pages.next().await? {
                        for item in items {
                            stats.blobs += 1;
                            stats.blob_bytes += item.properties.length;
                        }
                    }
                }
                Ok(stats)
            })
            .await
    }
}

/// The (tier, stored bytes) of each large value of a main row, from its
/// cells alone: a blob reference, or a manifest whose chunks are all on
/// the main row (split) or not (continuation).
fn shape(main: &Row) -> Vec<(Tier, u64)> {
    let mut out = Vec::new();
    for (cell, value) in main.properties.iter() {
        if cell.ends_with(BLOB_SUFFIX) {
            let length = value
                .as_str()
                .and_then(|json| BlobRef::parse(cell, json).ok())
                .map_or(0, |r| r.length);
            out.push((Tier::Blob, length));
        } else if let Some(column) = cell.strip_suffix(CHUNKS_SUFFIX) {
            let count = well_formed_count(column, main).unwrap_or(0);
            let on_main = (0..count).all(|i| main.get(&chunk_cell(column, i)).is_some());
            let tier = if on_main { Tier::Split } else { Tier::Continuation };
            let bytes = match main.get(&len_cell(column)) {
                Some(Value::Int64(n)) => u64::try_from(*n).unwrap_or(0),
                Some(Value::Int32(n)) => u64::try_from(*n).unwrap_or(0),
                _ => 0,
            };
            out.push((tier, bytes));
        }
    }
    out
}
