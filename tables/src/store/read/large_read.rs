//! Reading the rows of an entity with large values: the main row, and its
//! continuation rows (see [`ContinuationRead`]) — sent together with the
//! point read when the entity's last version seen through the handle had
//! continuation rows (see [`ContinuationHints`](crate::large::continuation_hints::ContinuationHints)),
//! else after it.

use crate::backend::{QueryRequest, UpdateMode, WriteOp};
use crate::entity::{Key, LargeForm, TableEntity};
use crate::error::{Error, Result};
use crate::large::blob_value::BlobValue;
use crate::large::entity_rows::continuation_range;
use crate::layout::{split_parts, BlobRef, MAX_CONTINUATION_ROWS, SPLIT_OF};
use crate::store::read::continuation::ContinuationRead;
use crate::store::Store;
use crate::telemetry;
use crate::value::{Row, Value};

impl<T: TableEntity> Store<T> {
    /// The stored row at `key`, and, when the read expects continuation
    /// rows, the reads of as many continuation rows as the entity's last
    /// version seen had, sent at the same time and still under way when the
    /// main row is back (the caller unpacks the main row's chunks while they
    /// run, and checks which rows the main row declares).
    pub(crate) async fn get_main_row<'a>(
        &'a self,
        key: &'a Key,
    ) -> Result<(Option<Row>, Option<ContinuationRead<'a>>)> {
        let (pk, rk) = (key.partition_key.as_str(), key.row_key.as_str());
        let get = self.shared.backend.get(&self.table, pk, rk);
        let expected = match const { T::SCHEMA.has_large_values() } {
            true => self.shared.continuation_hints.expects(&self.table, pk, rk),
            false => 0,
        };
        if expected == 0 {
            return Ok((get.await?, None));
        }
        // Past the point reads' bound, the range query takes every row the entity may have now.
        let mut rest = self.read_continuations(pk, rk, 1..expected + 1, MAX_CONTINUATION_ROWS);
        // The point read goes first, and the other reads are sent even when the main row is back at
        // once (a backend in memory): the read costs the same requests on every backend.
        let main = rest.alongside(get).await?;
        if main.is_none() {
            self.note_continuations(pk, rk, 0);
        }
        Ok((main, Some(rest)))
    }

    /// The continuation rows `1..=last` of a main row (one range query).
    pub(crate) async fn continuation_rows(&self, partition_key: &str, row_key: &str, last: usize) -> Result<Vec<Row>> {
        let request = QueryRequest {
            filter: Some(continuation_range(partition_key, row_key, last)),
            select: None,
            top: None,
        };
        let mut pages = self.pages(request).await?;
        let mut rows = Vec::new();
        while let Some(page) = pages.next(|_| true).await? {
            rows.extend(page);
        }
        tracing::debug!(name: telemetry::CONTINUATION_ROWS, target: telemetry::DECISION_TARGET, rows = rows.len(), "continuation rows fetched");
        Ok(rows)
    }

    /// The one-cell form of the large value of `column` offloaded to the
    /// blob `reference`, checked (and unpacked) as its bytes arrive.
    pub(crate) async fn blob_value(&self, column: &str, reference: &BlobRef, form: LargeForm) -> Result<Value> {
        let blobs = self.blobs().ok_or_else(|| Error::BlobOffloadNotConfigured {
            column: column.to_owned(),
        })?;
        let mut value = BlobValue::new(column, reference, form);
        let found = blobs
            .backend
            .get_into(&blobs.options.container, &reference.path, &mut value)
            .await?;
        if let Some(props) = &found {
            tracing::debug!(name: telemetry::BLOB_FETCHED, target: telemetry::DECISION_TARGET, bytes = props.length, "large value's blob fetched");
        }
        if found.is_none() {
            return Err(Error::Integrity {
                column: column.to_owned(),
                reason: format!(
                    "the blob {} is missing; the row may have changed while it was read",
                    reference.path
                ),
            });
        }
        value.finish()
    }

    /// Records how many continuation rows the entity just read has.
    pub(crate) fn note_continuations(&self, partition_key: &str, row_key: &str, parts: usize) {
        if const { T::SCHEMA.has_large_values() } {
            self.shared
                .continuation_hints
                .note(&self.table, partition_key, row_key, parts);
        }
    }
}

// Writes do not depend on the entity type (a union store writes too).
impl<T> Store<T> {
    /// Records what `ops` leave behind, before they are sent: a main row
    /// written whole has the continuation rows it declares, a deleted row
    /// none. Merges change no part count; continuation rows are not entities.
    /// Returns the keys noted, for [`Store::forget_written`] when the write fails.
    pub(crate) fn note_written(&self, ops: &[WriteOp]) -> Vec<(String, String)> {
        let hints = &self.shared.continuation_hints;
        let mut noted = Vec::new();
        for op in ops {
            let parts = match op {
                WriteOp::Update {
                    mode: UpdateMode::Merge,
                    ..
                } => continue,
                WriteOp::Delete { .. } => 0,
                WriteOp::Insert(row) | WriteOp::Upsert { row, .. } | WriteOp::Update { row, .. } => {
                    if row.get(SPLIT_OF).is_some() {
                        continue;
                    }
                    split_parts(row)
                }
            };
            let (pk, rk) = op.keys();
            hints.note(&self.table, pk, rk, parts);
            if parts > 0 {
                noted.push((pk.to_owned(), rk.to_owned()));
            }
        }
        noted
    }

    /// Forgets what [`Store::note_written`] noted for a write that failed:
    /// the stored rows are whatever they were, so the next read of them is
    /// not sent with guessed reads of continuation rows.
    pub(crate) fn forget_written(&self, noted: &[(String, String)]) {
        for (pk, rk) in noted {
            self.shared.continuation_hints.note(&self.table, pk, rk, 0);
        }
    }
}
