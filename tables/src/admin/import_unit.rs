//! The writes of one exported entity, planned for an import: its blob
//! files under the target table's names, its large values planned anew,
//! its index rows, and the continuation rows of the stored version it
//! leaves behind.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use super::archive::{archive_error, blob_file};
use super::lines::entity_from_line;
use super::Admin;
use crate::backend::pack::op_weight;
use crate::backend::{IfMatch, UpdateMode, WriteOp};
use crate::entity::{LargeEncoding, LargeForm};
use crate::error::Result;
use crate::large::entity_rows::continuation_index;
use crate::large::logical::LargeValue;
use crate::large::plan::{checked_blob_name, LargeColumn, Limits};
use crate::layout::{blob_cell, split_parts, BlobRef, BLOB_SUFFIX, WRITE_TOKEN};
use crate::value::{Row, Value};

/// One entity's writes.
pub(super) struct Unit {
    pub(super) key: (String, String),
    /// Its own rows: the main row first, then continuation rows.
    pub(super) ops: Vec<WriteOp>,
    /// Its index rows and intent to add (refused with 409 when a unique
    /// local value is taken).
    pub(super) additions: Vec<WriteOp>,
    /// The index rows of the stored version to remove (dropped when gone).
    pub(super) removals: Vec<WriteOp>,
    /// With unique global values to reserve: the row as written, in its
    /// one-cell form, and the stored version it replaces (what a lost
    /// reservation writes back).
    pub(super) reserving: Option<(Row, Option<Row>)>,
    pub(super) uploads: Vec<crate::store::Upload>,
    pub(super) weight: usize,
    /// Its index step (what a refusal on a unique index row means).
    pub(super) index: crate::store::index::IndexPlan,
}

impl Unit {
    /// How many operations it adds to a transaction.
    pub(super) fn len(&self) -> usize {
        self.ops.len() + self.additions.len() + self.removals.len()
    }
}

/// Column names of large values, kept for the life of the process (the
/// planner's columns are static; a table has few such names).
fn interned(name: &str) -> &'static str {
    static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(n) = names.get(name) {
        return n;
    }
    let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.insert(leaked);
    leaked
}

/// The planner's column for an exported large value: its encoding as
/// exported, read back in the form its value has.
fn large_column(value: &LargeValue, row: &Row, offload: bool) -> LargeColumn {
    let encoding = match value.encoding.as_deref() {
        Some("gzip") => LargeEncoding::Gzip,
        Some("binary") => LargeEncoding::Binary,
        _ => LargeEncoding::Text,
    };
    let form = match row.get(&value.column) {
        Some(Value::Binary(_)) => LargeForm::Bytes,
        _ => LargeForm::Text,
    };
    LargeColumn {
        name: interned(&value.column),
        aliases: &[],
        encoding,
        offload,
        form,
    }
}

impl Admin {
    /// The writes of one exported entity: its blob files under this
    /// table's names, its large values planned anew; with `replace`
    /// ([`ImportMode::Replace`](super::ImportMode::Replace)) over the stored version, else inserted.
    pub(super) async fn unit(
        &self,
        dir: &Path,
        line: &str,
        replace: bool,
        indexes: &'static [crate::index::IndexDef],
    ) -> Result<Unit> {
        let (mut row, large) = entity_from_line(line)?;
        row.etag = None;
        row.timestamp = None;
        // A token of this write's own (one in the line is another write's),
        // given by the store's planning below so the row's limits count it.
        row.properties.remove(WRITE_TOKEN);
        let (pk, rk) = (row.partition_key.clone(), row.row_key.clone());
        let mut uploads = Vec::new();
        let references: Vec<(String, Value)> = row
            .properties
            .iter()
            .filter(|(k, _)| k.ends_with(BLOB_SUFFIX))
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        for (cell, value) in references {
            let column = &cell[..cell.len() - BLOB_SUFFIX.len()];
            let json = value.as_str().unwrap_or_default();
            let reference = BlobRef::parse(&cell, json).map_err(|e| {
                archive_error(Path::new(""), format!("`{cell}` is not a blob reference")).with_source(e)
            })?;
            let file = blob_file(dir, &reference.sha256);
            let bytes = std::fs::read(&file).map_err(|e| archive_error(&file, "cannot be read").with_source(e))?;
            let own = BlobRef {
                path: checked_blob_name(&self.table, &pk, &rk, column, &reference.sha256)?,
                ..reference
            };
            row.insert(blob_cell(column), Value::String(own.to_cell()));
            uploads.push(crate::store::Upload {
                path: own.path,
                bytes: Arc::new(bytes),
                content_type: own.content_type,
                content_encoding: (own.encoding.as_deref() == Some("gzip")).then(|| "gzip".to_owned()),
            });
        }
        let blobs = self.tables.shared.blobs.as_ref();
        let columns: Vec<LargeColumn> = large.iter().map(|v| large_column(v, &row, blobs.is_some())).collect();
        // Continuation rows of the stored version past the new ones go (replace only).
        let stale = if replace {
            self.stale_rows(&pk, &rk).await?
        } else {
            Vec::new()
        };
        let limits = Limits {
            threshold: blobs.map_or(usize::MAX, |b| b.options.threshold_bytes),
            blobs: blobs.is_some(),
            extra_ops: stale.len(),
            budget: self.tables.shared.backend.profile().transaction_body_budget(),
        };
        let stored = if replace && !indexes.is_empty() {
            self.tables.shared.backend.get(&self.table, &pk, &rk).await?
        } else {
            None
        };
        let key = crate::entity::Key::new(pk.clone(), rk.clone());
        let (index_ops, index) = crate::store::index::maintain::plan(indexes, &key, stored.as_ref(), Some(&row))?;
        let limits = Limits {
            extra_ops: limits.extra_ops + index_ops.len(),
            ..limits
        };
        let reserving = (!index.reservations.is_empty()).then(|| (row.clone(), stored.clone()));
        let planned = self.store.plan_row(row, &columns, limits)?;
        uploads.extend(planned.blobs.into_iter().map(crate::store::Upload::from));
        let new_parts = planned.continuations.len();
        let write = |row: Row| {
            if replace {
                WriteOp::Upsert {
                    row,
                    mode: UpdateMode::Replace,
                }
            } else {
                WriteOp::Insert(row)
            }
        };
        let mut ops: Vec<WriteOp> = std::iter::once(planned.main)
            .chain(planned.continuations)
            .map(write)
            .collect();
        for stale_row in stale {
            if continuation_index(&rk, &stale_row.row_key).is_some_and(|i| i > new_parts) {
                ops.push(WriteOp::Delete {
                    partition_key: stale_row.partition_key,
                    row_key: stale_row.row_key,
                    condition: stale_row.etag.map_or(IfMatch::Any, IfMatch::ETag),
                });
            }
        }
        let (removals, additions): (Vec<WriteOp>, Vec<WriteOp>) = index_ops
            .into_iter()
            .partition(|op| matches!(op, WriteOp::Delete { .. }));
        let weight = ops.iter().chain(&additions).chain(&removals).map(op_weight).sum();
        Ok(Unit {
            key: (pk, rk),
            ops,
            additions,
            removals,
            reserving,
            uploads,
            weight,
            index,
        })
    }

    /// The continuation rows the stored version of an entity has.
    async fn stale_rows(&self, pk: &str, rk: &str) -> Result<Vec<Row>> {
        match self.tables.shared.backend.get(&self.table, pk, rk).await? {
            Some(main) if split_parts(&main) > 0 => self.continuation_rows(pk, rk, split_parts(&main)).await,
            _ => Ok(Vec::new()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_interned_once() {
        let a = interned("Body");
        let b = interned(&String::from("Body"));
        assert!(std::ptr::eq(a, b));
    }

    #[test]
    fn the_planner_column_follows_the_exported_encoding_and_value() {
        let row = Row::new("p", "r").with("B", Value::Binary(vec![1]));
        let v = LargeValue {
            column: "B".into(),
            tier: super::super::Tier::Split,
            encoding: Some("gzip".into()),
            stored_bytes: 0,
            sha256: String::new(),
        };
        let c = large_column(&v, &row, true);
        assert_eq!((c.encoding, c.form), (LargeEncoding::Gzip, LargeForm::Bytes));
    }
}
