//! [`Admin::import`]: an export written back through the planner, so the
//! target gets continuation rows and blobs of its own; and [`copy`].

use std::io::BufRead as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::archive::{archive_error, verify, write_atomically, ArchiveManifest};
use super::import_unit::Unit;
use super::{report, Admin, Event, ExportOptions, Observer, Stop};
use crate::backend::WriteOp;
use crate::error::{Error, ErrorKind, Result};
use crate::service::MAX_TRANSACTION_OPS;

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
                            .unit(dir, &line, options.mode == ImportMode::Replace, options.indexes)
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
                        let ops: usize = batch.iter().map(Unit::len).sum();
                        let weight: usize = batch.iter().map(|u| u.weight).sum();
                        let fits = ops + unit.len() <= MAX_TRANSACTION_OPS
                            && weight + unit.weight <= self.store.profile().transaction_body_budget();
                        let joins = same_partition && fits;
                        if !batch.is_empty() && !joins {
                            let n = batch.len() as u64;
                            let skipped = self
                                .commit(std::mem::take(&mut batch), &options, tolerate_present, &mut out)
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
                    let skipped = self.commit(batch, &options, tolerate_present, &mut out).await?;
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

    /// Writes a batch of one partition in one transaction, blobs first.
    /// An entity present already is dropped from the batch and the rest
    /// written again, under [`ImportMode::Skip`] or when `tolerate_present`;
    /// returns how many were dropped. The unique global values the batch
    /// moves to are reserved before it is sent and confirmed after it
    /// committed, as the store's own writes do; the index rows it removes
    /// are dropped from the transaction when they are gone already.
    async fn commit(
        &self,
        mut batch: Vec<Unit>,
        options: &ImportOptions,
        tolerate_present: bool,
        out: &mut ImportReport,
    ) -> Result<u64> {
        let mut skipped = 0;
        let uploads: Vec<_> = batch.iter_mut().flat_map(|u| std::mem::take(&mut u.uploads)).collect();
        out.blobs += uploads.len() as u64;
        self.store.upload_all(uploads).await?;
        let mut reserved = Vec::with_capacity(batch.len());
        for unit in &batch {
            match self.store.reserve_all(&unit.index.reservations).await {
                Ok(r) => reserved.push(r),
                Err(e) => {
                    for r in &reserved {
                        self.store.release_all(r).await;
                    }
                    return Err(self.refused(unit, out.written, e));
                }
            }
        }
        while !batch.is_empty() {
            let mut sent = Sent::of(&batch);
            let rows = sent.ops.iter().filter(|op| op.row().is_some()).count() as u64;
            let count = sent.ops.len();
            // Through the store's write pipeline: a throttled answer is sent
            // again after the retry policy's backoff, a lost one settled by
            // the main rows' write tokens, so a long import rides out both.
            // The removals go last, so a dropped one moves no other operation.
            let write = crate::store::Write::new(std::mem::take(&mut sent.ops)).droppable_from(sent.removals);
            match self.store.commit(write).await.map_err(|e| as_transaction(e, count)) {
                Ok(committed) => {
                    for ((unit, r), main) in batch.iter().zip(&reserved).zip(&sent.mains) {
                        let Some((written, previous)) = unit.reserving.as_ref().filter(|_| !r.is_empty()) else {
                            continue;
                        };
                        let etag = committed
                            .outcomes
                            .get(*main)
                            .and_then(|o| o.etag.clone())
                            .unwrap_or_else(|| crate::value::ETag::new(""));
                        let key = crate::entity::Key::new(unit.key.0.clone(), unit.key.1.clone());
                        self.store
                            .confirm_all(options.indexes, r, &key, &etag, written, previous.as_ref())
                            .await
                            .map_err(|e| self.refused(unit, out.written, e))?;
                    }
                    out.written += batch.len() as u64;
                    out.rows += rows;
                    return Ok(skipped);
                }
                // A unique index row taken: another entity holds the value (the import stops), or a stale row (removed, sent again).
                Err(Error::Transaction { index, source })
                    if source.kind() == ErrorKind::AlreadyExists && sent.claims_at(&batch, index) =>
                {
                    let claims: Vec<_> = batch.iter().flat_map(|u| u.index.claims.iter().cloned()).collect();
                    let conflict = self.store.unique_conflict(&claims).await;
                    if !matches!(conflict, Ok(true)) {
                        for r in &reserved {
                            self.store.release_all(r).await;
                        }
                        conflict?;
                        return Err(Error::Transaction { index, source });
                    }
                }
                Err(Error::Transaction { index, source })
                    if source.kind() == ErrorKind::AlreadyExists
                        && (options.mode == ImportMode::Skip || tolerate_present)
                        && index < sent.owners.len() =>
                {
                    let unit = sent.owners[index];
                    batch.remove(unit);
                    self.store.release_all(&reserved.remove(unit)).await;
                    out.skipped += 1;
                    skipped += 1;
                }
                Err(e) => {
                    for r in &reserved {
                        self.store.release_refused(r, &e).await;
                    }
                    return Err(e);
                }
            }
        }
        Ok(skipped)
    }

    /// The error an import stops with when `unit`'s unique global value is
    /// refused (taken, or lost while the write was confirmed): the entity
    /// and the index are named, the value is not.
    fn refused(&self, unit: &Unit, committed: u64, error: Error) -> Error {
        match error {
            Error::UniqueViolation {
                table, index, holder, ..
            } => Error::BatchFailed {
                committed: usize::try_from(committed).unwrap_or(usize::MAX),
                partition_key: unit.key.0.clone(),
                row_key: unit.key.1.clone(),
                source: Box::new(Error::UniqueViolation {
                    table,
                    index,
                    value: HIDDEN_VALUE.to_owned(),
                    holder,
                }),
            },
            other => other,
        }
    }
}

/// What an import's refusal shows for a unique value (values may be
/// personal data; the refused entity and the holder are named instead).
const HIDDEN_VALUE: &str = "(not shown)";

/// A batch's transaction: every unit's own rows, then every index row and
/// intent added, then every index row removed (the only operations that
/// may be dropped, when their row is gone).
struct Sent {
    ops: Vec<WriteOp>,
    /// The unit of each operation before the removals.
    owners: Vec<usize>,
    /// The operations of each unit's additions, by unit.
    additions: Vec<std::ops::Range<usize>>,
    /// The index of each unit's main row.
    mains: Vec<usize>,
    /// Where the removals start.
    removals: usize,
}

impl Sent {
    fn of(batch: &[Unit]) -> Sent {
        let mut sent = Sent {
            ops: Vec::new(),
            owners: Vec::new(),
            additions: Vec::new(),
            mains: Vec::new(),
            removals: 0,
        };
        for (u, unit) in batch.iter().enumerate() {
            sent.mains.push(sent.ops.len());
            sent.ops.extend(unit.ops.iter().cloned());
            sent.owners.extend(std::iter::repeat_n(u, unit.ops.len()));
        }
        for (u, unit) in batch.iter().enumerate() {
            let start = sent.ops.len();
            sent.ops.extend(unit.additions.iter().cloned());
            sent.owners.extend(std::iter::repeat_n(u, unit.additions.len()));
            sent.additions.push(start..sent.ops.len());
        }
        sent.removals = sent.ops.len();
        sent.ops.extend(batch.iter().flat_map(|u| u.removals.iter().cloned()));
        sent
    }

    /// Whether operation `index` is an index row a unit adds for a unique
    /// local value (not its entity's own rows).
    fn claims_at(&self, batch: &[Unit], index: usize) -> bool {
        self.owners
            .get(index)
            .is_some_and(|&u| self.additions[u].contains(&index) && !batch[u].index.claims.is_empty())
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

    #[allow(dead_code)]
    fn observer_is_send(o: Observer) -> impl Send {
        o
    }
}
