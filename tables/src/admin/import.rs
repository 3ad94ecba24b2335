//! [`Admin::import`]: an export written back through the planner, so the
//! target gets continuation rows and blobs of its own; and [`copy`].

use std::collections::HashSet;
use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use serde::{Deserialize, Serialize};

use super::archive::{archive_error, blob_file, verify, write_atomically, ArchiveManifest};
use super::lines::entity_from_line;
use super::{report, Admin, Event, ExportOptions, Observer, Stop};
use crate::backend::pack::{op_weight, TRANSACTION_BODY_BUDGET};
use crate::backend::{IfMatch, UpdateMode, WriteOp};
use crate::entity::{LargeEncoding, LargeForm};
use crate::error::{Error, ErrorKind, Result};
use crate::large::entity_rows::continuation_index;
use crate::large::logical::LargeValue;
use crate::large::plan::{checked_blob_name, LargeColumn, Limits};
use crate::layout::{blob_cell, split_parts, BlobRef, BLOB_SUFFIX, WRITE_TOKEN};
use crate::service::MAX_TRANSACTION_OPS;
use crate::value::{Row, Value};

/// What an import does with an entity the table already holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ImportMode {
    /// Refuse it: the import stops with [`Error::Transaction`] naming it
    /// (the entities written before it stay written).
    #[default]
    Insert,
    /// Keep the stored entity; the exported one is skipped.
    Skip,
    /// Replace the stored entity (its continuation rows past the new ones
    /// are deleted; blobs it no longer references are left to the sweep).
    Replace,
}

/// What [`Admin::import`] does.
#[derive(Clone, Default)]
pub struct ImportOptions {
    /// What to do with entities that exist.
    pub mode: ImportMode,
    /// Continue an import into this table that was stopped or killed
    /// (its position is kept in the export directory); without it, an
    /// import whose position file is present is refused.
    pub resume: bool,
    /// Where the position is kept (default: `import-{table}.position.json`
    /// in the export directory).
    pub position_file: Option<PathBuf>,
    /// Where progress goes.
    pub observer: Option<Observer>,
    /// Stops the import after the transaction being written.
    pub stop: Stop,
    /// The secondary indexes to write with each entity (the entity type's
    /// [`TableEntity::INDEXES`](crate::TableEntity::INDEXES)): each entity's
    /// index rows go in its transaction, a taken unique value stops the
    /// import with [`Error::UniqueViolation`], and global indexes get
    /// intents for [`Store::apply_index_intents`](crate::Store::apply_index_intents).
    /// Exports hold no index rows: without this, build the indexes after the
    /// import with [`Store::build_index`](crate::Store::build_index).
    pub indexes: &'static [crate::index::IndexDef],
}

impl std::fmt::Debug for ImportOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImportOptions")
            .field("mode", &self.mode)
            .field("resume", &self.resume)
            .field("position_file", &self.position_file)
            .field("indexes", &self.indexes.iter().map(|d| d.name).collect::<Vec<_>>())
            .finish()
    }
}

/// What [`Admin::import`] did (this run).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ImportReport {
    /// Entities written (inserted or replaced).
    pub written: u64,
    /// Entities skipped (present already, under [`ImportMode::Skip`] or on resume).
    pub skipped: u64,
    /// Rows written, continuation rows included.
    pub rows: u64,
    /// Blobs uploaded.
    pub blobs: u64,
    /// Whether the import was stopped before the end (continue with `resume`).
    pub interrupted: bool,
}

/// How often the position of a running import is saved.
const SAVE_EVERY: std::time::Duration = std::time::Duration::from_millis(200);

/// Where an import stands: every line before (`file`, `line`) is in the table.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Position {
    table: String,
    file: usize,
    line: u64,
}

/// One entity's writes.
struct Unit {
    key: (String, String),
    ops: Vec<WriteOp>,
    uploads: Vec<crate::store::Upload>,
    weight: usize,
    /// Its index step (what a refusal on a unique index row means).
    index: crate::store::index::IndexPlan,
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
    /// Imports the export in `dir` into this table. The manifest and every
    /// file's SHA-256 are checked before anything is written. Each entity is
    /// planned by this table's own planner (split cells, continuation rows,
    /// blobs of its own, named for this table); blob files are uploaded under
    /// this table's names. Entities of one partition go 100 operations per
    /// transaction, each sent as the store sends its own writes: retried
    /// after a throttled answer (503 `ServerBusy`, 429) and settled by its
    /// write token after a lost one, as the handle's
    /// [`RetryPolicy`](crate::RetryPolicy) allows. The position is saved as
    /// the transactions commit, so a resumed import finishes the job without
    /// writing anything twice.
    pub async fn import(&self, dir: &Path, options: ImportOptions) -> Result<ImportReport> {
        self.store
            .op("import")
            .run(async move {
                let manifest = ArchiveManifest::read(dir)?;
                let position_path = options
                    .position_file
                    .clone()
                    .unwrap_or_else(|| dir.join(format!("import-{}.position.json", self.table)));
                let mut position = match (options.resume, std::fs::read(&position_path)) {
                    (true, Ok(bytes)) => {
                        let p: Position = serde_json::from_slice(&bytes)
                            .map_err(|e| archive_error(&position_path, "not an import's position").with_source(e))?;
                        if p.table != self.table {
                            return Err(archive_error(
                                &position_path,
                                format!("it is the position of an import into `{}`", p.table),
                            ));
                        }
                        p
                    }
                    (false, Ok(_)) => {
                        return Err(archive_error(
                            &position_path,
                            "an import into this table from this export was interrupted; pass resume to finish it",
                        ))
                    }
                    (_, Err(_)) => Position {
                        table: self.table.clone(),
                        file: 0,
                        line: 0,
                    },
                };
                report(
                    &options.observer,
                    Event::Phase {
                        name: "verify",
                        total: Some(manifest.data_bytes + manifest.blob_bytes),
                    },
                );
                let mut checked = 0;
                verify(dir, &manifest, |len| {
                    checked += len;
                    report(
                        &options.observer,
                        Event::Progress {
                            rows: 0,
                            entities: 0,
                            bytes: checked,
                        },
                    );
                })?;
                self.store.ensure_created().await?;
                write_atomically(&position_path, &serde_json::to_vec(&position).unwrap_or_default())?;
                report(
                    &options.observer,
                    Event::Phase {
                        name: "write",
                        total: Some(manifest.entities),
                    },
                );
                let mut out = ImportReport::default();
                // The transactions after a resumed position may have been committed
                // already (the position is saved a few times a second, not after each):
                // until one commits without finding its entities, those found are skipped.
                let mut tolerate_present = options.resume;
                let mut done = manifest.files[..position.file.min(manifest.files.len())]
                    .iter()
                    .map(|f| f.entities)
                    .sum::<u64>()
                    + position.line;
                let mut bytes = 0u64;
                let mut saved = std::time::Instant::now();
                for (index, file) in manifest.files.iter().enumerate().skip(position.file) {
                    let path = dir.join(&file.name);
                    let file = std::fs::File::open(&path)
                        .map_err(|e| archive_error(&path, "cannot be opened").with_source(e))?;
                    let reader = std::io::BufReader::new(file);
                    let mut batch: Vec<Unit> = Vec::new();
                    let mut line_no = 0u64;
                    let skip = if index == position.file { position.line } else { 0 };
                    for line in reader.lines() {
                        let line = line.map_err(|e| archive_error(&path, "cannot be read").with_source(e))?;
                        line_no += 1;
                        if line_no <= skip || line.is_empty() {
                            continue;
                        }
                        bytes += line.len() as u64 + 1;
                        let unit = self
                            .unit(dir, &line, options.mode, options.indexes)
                            .await
                            .map_err(|e| match e {
                                Error::Archive { reason, source, .. } => Error::Archive {
                                    path: path.display().to_string(),
                                    reason: format!("line {line_no}: {reason}"),
                                    source,
                                },
                                other => other,
                            })?;
                        let same_partition = batch.first().is_none_or(|u| u.key.0 == unit.key.0);
                        let ops: usize = batch.iter().map(|u| u.ops.len()).sum();
                        let weight: usize = batch.iter().map(|u| u.weight).sum();
                        let fits = ops + unit.ops.len() <= MAX_TRANSACTION_OPS
                            && weight + unit.weight <= TRANSACTION_BODY_BUDGET;
                        let joins = same_partition && fits;
                        if !batch.is_empty() && !joins {
                            let n = batch.len() as u64;
                            let skipped = self
                                .commit(std::mem::take(&mut batch), options.mode, tolerate_present, &mut out)
                                .await?;
                            tolerate_present &= skipped > 0;
                            done += n;
                            position = Position {
                                table: self.table.clone(),
                                file: index,
                                line: line_no - 1,
                            };
                            // Saved a few times a second: a resumed import skips what a lagging position replays.
                            if saved.elapsed() >= SAVE_EVERY || options.stop.is_raised() {
                                saved = std::time::Instant::now();
                                write_atomically(&position_path, &serde_json::to_vec(&position).unwrap_or_default())?;
                            }
                            report(
                                &options.observer,
                                Event::Progress {
                                    rows: out.rows,
                                    entities: done,
                                    bytes,
                                },
                            );
                            if options.stop.is_raised() {
                                out.interrupted = true;
                                return Ok(out);
                            }
                        }
                        batch.push(unit);
                    }
                    let n = batch.len() as u64;
                    let skipped = self.commit(batch, options.mode, tolerate_present, &mut out).await?;
                    tolerate_present &= skipped > 0;
                    done += n;
                    position = Position {
                        table: self.table.clone(),
                        file: index + 1,
                        line: 0,
                    };
                    write_atomically(&position_path, &serde_json::to_vec(&position).unwrap_or_default())?;
                    report(
                        &options.observer,
                        Event::Progress {
                            rows: out.rows,
                            entities: done,
                            bytes,
                        },
                    );
                    if options.stop.is_raised() && index + 1 < manifest.files.len() {
                        out.interrupted = true;
                        return Ok(out);
                    }
                }
                let _ = std::fs::remove_file(&position_path);
                Ok(out)
            })
            .await
    }

    /// The writes of one exported entity: its blob files under this
    /// table's names, its large values planned anew.
    async fn unit(
        &self,
        dir: &Path,
        line: &str,
        mode: ImportMode,
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
        let stale = match mode {
            ImportMode::Replace => self.stale_rows(&pk, &rk).await?,
            _ => Vec::new(),
        };
        let limits = Limits {
            threshold: blobs.map_or(usize::MAX, |b| b.options.threshold_bytes),
            blobs: blobs.is_some(),
            extra_ops: stale.len(),
        };
        let stored = match (mode, indexes.is_empty()) {
            (ImportMode::Replace, false) => self.tables.shared.backend.get(&self.table, &pk, &rk).await?,
            _ => None,
        };
        let key = crate::entity::Key::new(pk.clone(), rk.clone());
        let (index_ops, index) = crate::store::index::maintain::plan(indexes, &key, stored.as_ref(), Some(&row))?;
        let limits = Limits {
            extra_ops: limits.extra_ops + index_ops.len(),
            ..limits
        };
        let planned = self.store.plan_row(row, &columns, limits)?;
        uploads.extend(planned.blobs.into_iter().map(crate::store::Upload::from));
        let new_parts = planned.continuations.len();
        let write = |row: Row| match mode {
            ImportMode::Replace => WriteOp::Upsert {
                row,
                mode: UpdateMode::Replace,
            },
            _ => WriteOp::Insert(row),
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
        ops.extend(index_ops);
        let weight = ops.iter().map(op_weight).sum();
        Ok(Unit {
            key: (pk, rk),
            ops,
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

    /// Writes a batch of one partition in one transaction, blobs first.
    /// An entity present already is dropped from the batch and the rest
    /// written again, under [`ImportMode::Skip`] or when `tolerate_present`;
    /// returns how many were dropped.
    async fn commit(
        &self,
        mut batch: Vec<Unit>,
        mode: ImportMode,
        tolerate_present: bool,
        out: &mut ImportReport,
    ) -> Result<u64> {
        let mut skipped = 0;
        let uploads: Vec<_> = batch.iter_mut().flat_map(|u| std::mem::take(&mut u.uploads)).collect();
        out.blobs += uploads.len() as u64;
        self.store.upload_all(uploads).await?;
        while !batch.is_empty() {
            let ops: Vec<WriteOp> = batch.iter().flat_map(|u| u.ops.iter().cloned()).collect();
            let rows = ops.iter().filter(|op| op.row().is_some()).count() as u64;
            let count = ops.len();
            // Through the store's write pipeline: a throttled answer is sent
            // again after the retry policy's backoff, a lost one settled by
            // the main rows' write tokens, so a long import rides out both.
            match self
                .store
                .commit(crate::store::Write::new(ops).droppable_from(count))
                .await
                .map_err(|e| as_transaction(e, count))
            {
                Ok(_) => {
                    out.written += batch.len() as u64;
                    out.rows += rows;
                    return Ok(skipped);
                }
                // A unique index row taken: another entity holds the value (the import stops), or a stale row (removed, sent again).
                Err(Error::Transaction { index, source })
                    if source.kind() == ErrorKind::AlreadyExists && claims_at(&batch, index) =>
                {
                    let claims: Vec<_> = batch.iter().flat_map(|u| u.index.claims.iter().cloned()).collect();
                    if !self.store.unique_conflict(&claims).await? {
                        return Err(Error::Transaction { index, source });
                    }
                }
                Err(Error::Transaction { index, source })
                    if source.kind() == ErrorKind::AlreadyExists && (mode == ImportMode::Skip || tolerate_present) =>
                {
                    let mut at = index;
                    let unit = batch.iter().position(|u| {
                        let inside = at < u.ops.len();
                        at = at.saturating_sub(u.ops.len());
                        inside
                    });
                    match unit {
                        Some(i) => {
                            batch.remove(i);
                            out.skipped += 1;
                            skipped += 1;
                        }
                        None => return Err(Error::Transaction { index, source }),
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(skipped)
    }
}

/// A refusal of a lone operation (sent alone, not as a transaction) in
/// the shape a transaction's has, so an import reports and handles every
/// refusal alike.
fn as_transaction(error: Error, ops: usize) -> Error {
    let about_the_row = matches!(
        error.kind(),
        ErrorKind::AlreadyExists | ErrorKind::NotFound | ErrorKind::PreconditionFailed
    );
    match error {
        Error::Transaction { .. } => error,
        other if ops == 1 && about_the_row => Error::Transaction {
            index: 0,
            source: Box::new(other),
        },
        other => other,
    }
}

/// Whether operation `index` of a batch's transaction is a unit's index
/// operation (not its entity's main row).
fn claims_at(batch: &[Unit], index: usize) -> bool {
    let mut at = index;
    for u in batch {
        if at < u.ops.len() {
            return at > 0 && !u.index.claims.is_empty();
        }
        at -= u.ops.len();
    }
    false
}

/// Copies a table into another (on the same account or another): an
/// export into `work_dir` (which must be empty, or hold this copy's
/// export when `resume`), then an import of it; the copy gets continuation
/// rows and blobs of its own. Stops with the export's or the import's
/// error; with `resume`, continues where it stopped.
pub async fn copy(
    source: &Admin,
    target: &Admin,
    work_dir: &Path,
    export: ExportOptions,
    import: ImportOptions,
) -> Result<ImportReport> {
    let exported = source.export(work_dir, export).await?;
    if exported.interrupted {
        return Ok(ImportReport {
            interrupted: true,
            ..ImportReport::default()
        });
    }
    target.import(work_dir, import).await
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

    #[allow(dead_code)]
    fn observer_is_send(o: Observer) -> impl Send {
        o
    }
}
