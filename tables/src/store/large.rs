//! Writes and reads of entity types with large values or files: planning,
//! blob uploads, continuation rows in one transaction with the main row,
//! integrity checks, and cleanup of released blobs.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use super::crud::{commit, race_backoff, Stamps, RACE_ATTEMPTS};
use super::{check_row_limits, Store};
use crate::backend::blob::{BlobCondition, PutOptions};
use crate::backend::{IfMatch, QueryRequest, UpdateMode, WriteOp, WriteOutcome};
use crate::entity::{Key, TableEntity};
use crate::error::{Error, KeyKind, Result};
use crate::large::blob_content::{parse_ref, BlobRef, BlobSource};
use crate::large::cells::{assemble, inline_name, sha256_hex, value_from_stored};
use crate::large::naming::{blob_name, row_prefix};
use crate::large::plan::{continuation_key, is_continuation_key, large_columns, plan, Limits, SPLIT_OF, SPLIT_PARTS};
use crate::query::{CmpOp, Filter};
use crate::tables::Blobs;
use crate::value::{ETag, Row, Value};

/// The longest RowKey of a type with large values (room for `~0001`).
pub const MAX_LARGE_ROW_KEY: usize = 480;

/// The blob references of an entity's files, by column.
type FileRefs = Vec<(&'static str, BlobRef)>;
/// Files to upload before the rows are written (`None`: the blob exists).
type FileUploads = Vec<(BlobRef, Option<Arc<Vec<u8>>>)>;

/// A blob to upload: path, bytes, content type, content encoding.
type Upload = (String, Vec<u8>, Option<String>, Option<String>);

/// What a large write does to the stored row.
#[derive(Debug, Clone)]
pub(crate) enum LargeWrite {
    /// Insert; the row must not exist.
    Create,
    /// Insert or replace, whatever is stored.
    Upsert,
    /// Replace an existing row: on condition of this ETag, or of the version read.
    Replace(IfMatch),
}

fn split_parts(row: &Row) -> usize {
    match row.get(SPLIT_PARTS) {
        Some(Value::Int32(n)) if *n > 0 => *n as usize,
        Some(Value::Int64(n)) if *n > 0 => *n as usize,
        _ => 0,
    }
}

/// Every blob path a row references (its `__blob` cells).
fn referenced_blobs(row: &Row) -> BTreeSet<String> {
    row.properties
        .iter()
        .filter(|(k, _)| k.ends_with("__blob"))
        .filter_map(|(k, v)| v.as_str().and_then(|json| parse_ref(k, json).ok()).map(|r| r.path))
        .collect()
}

/// The operations that write one entity: its main row (inserted, or
/// replaced on condition of the version read), its continuation rows, and
/// deletes of the continuation rows it no longer needs.
fn unit_ops(
    kind: &LargeWrite,
    version: Option<&ETag>,
    key: &Key,
    planned: &crate::large::plan::Plan,
    old_parts: usize,
    leftovers: &HashSet<usize>,
) -> Vec<WriteOp> {
    let main_op = match version {
        Some(v) if !matches!(kind, LargeWrite::Create) => WriteOp::Update {
            row: planned.main.clone(),
            mode: UpdateMode::Replace,
            condition: IfMatch::ETag(v.clone()),
        },
        _ => WriteOp::Insert(planned.main.clone()),
    };
    let mut ops = vec![main_op];
    for (i, cont) in planned.continuations.iter().enumerate() {
        let index = i + 1;
        ops.push(if index <= old_parts || leftovers.contains(&index) {
            WriteOp::Upsert {
                row: cont.clone(),
                mode: UpdateMode::Replace,
            }
        } else {
            WriteOp::Insert(cont.clone())
        });
    }
    for index in planned.continuations.len() + 1..=old_parts {
        ops.push(WriteOp::Delete {
            partition_key: key.partition_key.clone(),
            row_key: continuation_key(&key.row_key, index),
            condition: IfMatch::Any,
        });
    }
    ops
}

impl<T: TableEntity> Store<T> {
    /// Whether entities of this type have large values or files.
    pub(crate) fn is_large(&self) -> bool {
        const { T::SCHEMA.has_large_values() }
    }

    fn blobs(&self) -> Option<&Blobs> {
        self.tables.blobs.as_deref()
    }

    fn blob_source(&self) -> Option<BlobSource> {
        self.blobs().map(|b| BlobSource {
            backend: b.backend.clone(),
            container: b.options.container.clone(),
        })
    }

    pub(crate) async fn blob_container(&self) -> Result<&Blobs> {
        let blobs = self
            .blobs()
            .ok_or_else(|| Error::BlobOffloadNotConfigured { column: String::new() })?;
        blobs
            .container_ready
            .get_or_try_init(|| blobs.backend.create_container(&blobs.options.container))
            .await?;
        Ok(blobs)
    }

    /// Refuses keys a type with large values cannot use.
    pub(crate) fn check_large_key(&self, row_key: &str) -> Result<()> {
        if is_continuation_key(row_key) {
            return Err(Error::InvalidKey {
                which: KeyKind::RowKey,
                key: row_key.to_owned(),
                reason: "it ends with `~` and four digits, the shape of a continuation row of an entity with large values; choose another key".into(),
            });
        }
        if crate::value::utf16_len(row_key) > MAX_LARGE_ROW_KEY {
            return Err(Error::InvalidKey {
                which: KeyKind::RowKey,
                key: row_key.chars().take(64).collect(),
                reason: format!(
                    "an entity with large values needs room for its continuation rows' `~0001` suffix: keep RowKeys to {MAX_LARGE_ROW_KEY} UTF-16 units"
                ),
            });
        }
        Ok(())
    }

    /// Uploads a blob create-only; an existing blob of the same name (and so
    /// the same hash) counts as success and is touched.
    async fn upload(
        &self,
        path: &str,
        bytes: Vec<u8>,
        content_type: Option<String>,
        encoding: Option<String>,
    ) -> Result<()> {
        let blobs = self.blob_container().await?;
        let options = PutOptions {
            content_type,
            content_encoding: encoding,
            condition: BlobCondition::IfNoneMatchAny,
        };
        match blobs.backend.put(&blobs.options.container, path, bytes, options).await {
            Ok(_) => Ok(()),
            Err(e) if e.service_code().map(|c| c.0) == Some(409) => {
                blobs.backend.touch(&blobs.options.container, path).await.map(|_| ())
            }
            Err(e) => Err(e),
        }
    }

    /// Deletes the blobs `old` referenced and `new` does not, when they are
    /// this row's own and older than the cleanup grace on the service clock.
    async fn release_blobs(&self, key: &Key, old: &BTreeSet<String>, new: &BTreeSet<String>) {
        let Some(blobs) = self.blobs() else { return };
        let own = row_prefix(&self.table, &key.partition_key, &key.row_key);
        let released: Vec<&String> = old
            .iter()
            .filter(|p| !new.contains(*p) && p.starts_with(&own))
            .collect();
        if released.is_empty() {
            return;
        }
        let Ok(service_now) = blobs.backend.now().await else {
            return;
        };
        let grace = blobs.options.cleanup_grace;
        for path in released {
            let Ok(Some(props)) = blobs.backend.properties(&blobs.options.container, path).await else {
                continue;
            };
            let age_nanos = service_now.unix_nanos() - props.last_modified.unix_nanos();
            if age_nanos >= 0 && age_nanos as u128 > grace.as_nanos() {
                let condition = BlobCondition::IfUnmodifiedSince(props.last_modified);
                if let Err(e) = blobs.backend.delete(&blobs.options.container, path, condition).await {
                    tracing::debug!(path = %path, error = %e, "a released blob was left for the orphan sweep");
                }
            }
        }
    }

    /// Writes an entity of a type with large values, and records the new
    /// version (and its files' blobs) on it.
    pub(crate) async fn write_large(&self, entity: &mut T, stamps: Stamps, kind: LargeWrite) -> Result<ETag> {
        let (outcome, files) = self.write_large_rows(entity, stamps, kind).await?;
        if let Some(source) = self.blob_source() {
            for (column, content) in entity.blob_contents_mut() {
                if let Some((_, r)) = files.iter().find(|(c, _)| *c == column) {
                    content.mark_stored(r.clone(), source.clone());
                }
            }
        }
        Ok(commit(entity, stamps, outcome))
    }

    /// Writes the rows and blobs of an entity of a type with large values.
    /// Returns the main row's outcome and the blobs its files were stored in.
    pub(crate) async fn write_large_rows(
        &self,
        entity: &T,
        stamps: Stamps,
        kind: LargeWrite,
    ) -> Result<(WriteOutcome, Vec<(&'static str, BlobRef)>)> {
        let mut row = entity.to_row(&self.encode_options())?;
        if let (Some(at), Some(col)) = (stamps.created, T::SCHEMA.created_column) {
            row.insert(col, Value::DateTime(at));
        }
        if let (Some(at), Some(col)) = (stamps.updated, T::SCHEMA.updated_column) {
            row.insert(col, Value::DateTime(at));
        }
        let key = Key::new(row.partition_key.clone(), row.row_key.clone());
        key.validate()?;
        self.check_large_key(&key.row_key)?;
        let (stored_files, file_uploads) = self.prepare_files(entity, &mut row, &key).await?;
        let columns = large_columns(T::SCHEMA.columns);
        let threshold = self.blobs().map_or(usize::MAX, |b| b.options.threshold_bytes);
        self.ensure_created().await?;
        let mut leftovers: HashSet<usize> = HashSet::new();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let stored = match kind {
                LargeWrite::Create => None,
                _ => {
                    self.tables
                        .backend
                        .get(&self.table, &key.partition_key, &key.row_key)
                        .await?
                }
            };
            let version = stored.as_ref().and_then(|s| s.etag.clone());
            match (&kind, &version) {
                (LargeWrite::Replace(_), None) => {
                    return Err(Error::NotFound {
                        table: self.table.clone(),
                        partition_key: key.partition_key.clone(),
                        row_key: key.row_key.clone(),
                    })
                }
                (LargeWrite::Replace(IfMatch::ETag(wanted)), Some(v)) if wanted != v => {
                    return Err(self.conflict_of(&key))
                }
                _ => {}
            }
            if let (Some(old), true) = (&stored, const { T::SCHEMA.has_protected() }) {
                self.check_protected(Some(old), &row)?;
            }
            let old_parts = stored.as_ref().map_or(0, split_parts);
            let limits = Limits {
                threshold,
                blobs: self.blobs().is_some(),
                extra_ops: old_parts,
            };
            let mut planned = plan(&self.table, &row, &columns, limits)?;
            check_row_limits(&planned.main)?;
            // Blobs first (create-only), then the rows.
            for b in std::mem::take(&mut planned.blobs) {
                self.upload(&b.reference.path, b.bytes, b.reference.content_type, b.content_encoding)
                    .await?;
            }
            for (reference, bytes) in &file_uploads {
                if let Some(bytes) = bytes {
                    self.upload(&reference.path, (**bytes).clone(), reference.content_type.clone(), None)
                        .await?;
                }
            }
            let new_parts = planned.continuations.len();
            let mut ops = unit_ops(&kind, version.as_ref(), &key, &planned, old_parts, &leftovers);
            // Stale continuation rows already gone (a damaged entity) are dropped from the transaction.
            let result: Result<WriteOutcome> = loop {
                let r = if ops.len() == 1 {
                    self.tables.backend.execute(&self.table, ops[0].clone()).await
                } else {
                    self.tables
                        .backend
                        .transaction(&self.table, ops.clone())
                        .await
                        .map(|mut outcomes| outcomes.swap_remove(0))
                };
                match r {
                    Err(Error::Transaction { index, source })
                        if index > new_parts && source.service_code().map(|c| c.0) == Some(404) =>
                    {
                        ops.remove(index);
                    }
                    other => break other,
                }
            };
            let (index, error) = match result {
                Ok(outcome) => {
                    let old_refs = stored.as_ref().map(referenced_blobs).unwrap_or_default();
                    let new_refs = referenced_blobs(&planned.main);
                    self.release_blobs(&key, &old_refs, &new_refs).await;
                    return Ok((outcome, stored_files));
                }
                Err(Error::Transaction { index, source }) => (index, *source),
                Err(e) => (0, e),
            };
            let status = error.service_code().map(|c| c.0);
            // A continuation key already taken: our own leftover is reclaimed, a foreign row fails the write.
            if index > 0 && index <= new_parts && status == Some(409) {
                let taken = continuation_key(&key.row_key, index);
                let foreign = self.tables.backend.get(&self.table, &key.partition_key, &taken).await?;
                let ours = foreign
                    .as_ref()
                    .is_some_and(|r| r.get(SPLIT_OF).and_then(Value::as_str) == Some(key.row_key.as_str()));
                if ours && attempt < RACE_ATTEMPTS {
                    leftovers.insert(index);
                    continue;
                }
                return Err(Error::InvalidKey {
                    which: KeyKind::RowKey,
                    key: taken,
                    reason: "a row that is not a continuation row of this entity holds a key the entity's large values need; nothing was written".into(),
                });
            }
            let lost_race = matches!(status, Some(404) | Some(409) | Some(412));
            let may_retry = !matches!(kind, LargeWrite::Create | LargeWrite::Replace(IfMatch::ETag(_)));
            if lost_race && may_retry && attempt < RACE_ATTEMPTS {
                tokio::time::sleep(race_backoff(attempt)).await;
                continue;
            }
            return Err(match (status, &kind) {
                (Some(409), LargeWrite::Create) if index == 0 => {
                    error.about_entity(&self.table, &key.partition_key, &key.row_key)
                }
                (Some(412), _) | (Some(409), _) | (Some(404), LargeWrite::Upsert) => self.conflict_of(&key),
                _ => error.about_entity(&self.table, &key.partition_key, &key.row_key),
            });
        }
    }

    /// Files of an entity: new content gets a blob of its own under this
    /// row's name (uploaded later); a kept blob is touched. Writes the
    /// reference cells into `row`. Returns the references and the uploads.
    async fn prepare_files(&self, entity: &T, row: &mut Row, key: &Key) -> Result<(FileRefs, FileUploads)> {
        let mut stored_files: Vec<(&'static str, BlobRef)> = Vec::new();
        let mut file_uploads: Vec<(BlobRef, Option<Arc<Vec<u8>>>)> = Vec::new();
        for (column, content) in entity.blob_contents() {
            let own = |sha: &str| blob_name(&self.table, &key.partition_key, &key.row_key, column, sha);
            let (reference, bytes) = match (content.pending().transpose()?, content.reference()) {
                (Some((bytes, content_type)), _) => {
                    let sha = sha256_hex(&bytes);
                    let r = BlobRef {
                        path: own(&sha),
                        sha256: sha,
                        length: bytes.len() as u64,
                        content_type: content_type.map(str::to_owned),
                        encoding: None,
                    };
                    (r, Some(bytes))
                }
                (None, Some(r)) if r.path == own(&r.sha256) => {
                    // The row's own blob, kept: it must still exist, and is touched so a
                    // concurrent release (older than the grace) does not delete it under this write.
                    let blobs = self.blob_container().await?;
                    if let Err(e) = blobs.backend.touch(&blobs.options.container, &r.path).await {
                        return Err(match e.service_code().map(|c| c.0) {
                            Some(404) => Error::Integrity {
                                column: column.to_owned(),
                                reason: "the file was read from a version whose blob is gone: read the entity again"
                                    .into(),
                            },
                            _ => e,
                        });
                    }
                    (r.clone(), None)
                }
                (None, Some(r)) => {
                    // A content taken from another row gets a blob of its own.
                    let bytes = content.read_all().await?;
                    (
                        BlobRef {
                            path: own(&r.sha256),
                            ..r.clone()
                        },
                        Some(Arc::new(bytes)),
                    )
                }
                (None, None) => continue,
            };
            if self.blobs().is_none() {
                return Err(Error::BlobOffloadNotConfigured {
                    column: column.to_owned(),
                });
            }
            row.insert(
                format!("{column}__blob"),
                Value::String(serde_json::to_string(&reference).unwrap_or_default()),
            );
            stored_files.push((column, reference.clone()));
            file_uploads.push((reference, bytes));
        }
        Ok((stored_files, file_uploads))
    }

    fn conflict_of(&self, key: &Key) -> Error {
        Error::Conflict {
            table: self.table.clone(),
            partition_key: key.partition_key.clone(),
            row_key: key.row_key.clone(),
        }
    }

    /// The continuation rows of a main row, by index.
    async fn continuation_rows(&self, main: &Row) -> Result<Vec<Row>> {
        let parts = split_parts(main);
        if parts == 0 {
            return Ok(Vec::new());
        }
        let request = QueryRequest {
            filter: Some(
                Filter::eq("PartitionKey", Value::String(main.partition_key.clone()))
                    .and(Filter::cmp(
                        "RowKey",
                        CmpOp::Ge,
                        Value::String(continuation_key(&main.row_key, 1)),
                    ))
                    .and(Filter::cmp(
                        "RowKey",
                        CmpOp::Le,
                        Value::String(continuation_key(&main.row_key, parts)),
                    )),
            ),
            select: None,
            top: None,
        };
        let mut pages = self.pages(request).await?;
        let mut rows = Vec::new();
        while let Some(page) = pages.next().await? {
            rows.extend(page);
        }
        Ok(rows)
    }

    /// The row with every large value back in its one-cell form, checked.
    async fn assemble_row(&self, main: &Row) -> Result<Row> {
        let parts = split_parts(main);
        let conts = self.continuation_rows(main).await?;
        let mut merged = main.clone();
        let mut seen = BTreeSet::new();
        for cont in conts {
            if cont.get(SPLIT_OF).and_then(Value::as_str) != Some(main.row_key.as_str()) {
                continue;
            }
            seen.insert(cont.row_key.clone());
            for (k, v) in cont.properties {
                if k.contains("__c") {
                    merged.properties.insert(k, v);
                }
            }
        }
        for index in 1..=parts {
            if !seen.contains(&continuation_key(&main.row_key, index)) {
                return Err(Error::Integrity {
                    column: SPLIT_PARTS.into(),
                    reason: format!(
                        "continuation row {index} of {parts} is missing; the row may have changed while it was read"
                    ),
                });
            }
        }
        merged.properties.remove(SPLIT_PARTS);
        for column in large_columns(T::SCHEMA.columns) {
            let name = column.name;
            let blob_cell = format!("{name}__blob");
            let value = if let Some(Value::String(json)) = merged.get(&blob_cell).cloned() {
                let reference = parse_ref(&blob_cell, &json).map_err(|e| Error::Integrity {
                    column: name.to_owned(),
                    reason: format!("the blob reference is damaged: {e}"),
                })?;
                let blobs = self.blobs().ok_or_else(|| Error::BlobOffloadNotConfigured {
                    column: name.to_owned(),
                })?;
                let found = blobs
                    .backend
                    .get_hashed(&blobs.options.container, &reference.path)
                    .await?;
                let (_, bytes, sha) = found.ok_or_else(|| Error::Integrity {
                    column: name.to_owned(),
                    reason: format!(
                        "the blob {} is missing; the row may have changed while it was read",
                        reference.path
                    ),
                })?;
                if bytes.len() as u64 != reference.length || sha != reference.sha256 {
                    return Err(Error::Integrity {
                        column: name.to_owned(),
                        reason: format!(
                            "the blob {} does not match its reference (length or SHA-256)",
                            reference.path
                        ),
                    });
                }
                merged.properties.remove(&blob_cell);
                let encoding = reference.encoding.as_deref().unwrap_or("binary");
                Some(value_from_stored(name, bytes, encoding, column.form)?)
            } else if merged.get(&format!("{name}__chunks")).is_some() {
                let v = assemble(name, &merged, column.form)?;
                let prefix = format!("{name}__");
                merged.properties.retain(|k, _| {
                    !(k.starts_with(&prefix)
                        && (k[prefix.len()..].starts_with('c')
                            && k[prefix.len() + 1..].bytes().all(|b| b.is_ascii_digit())
                            || matches!(&k[prefix.len()..], "chunks" | "sha256" | "enc" | "len")))
                });
                Some(v)
            } else {
                // Parts of a split value without its chunk count are damage, not an absent value.
                let prefix = format!("{name}__");
                let stray = merged.properties.keys().find(|k| {
                    k.strip_prefix(&prefix).is_some_and(|rest| {
                        matches!(rest, "sha256" | "enc" | "len")
                            || rest
                                .strip_prefix('c')
                                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                    })
                });
                if let Some(cell) = stray {
                    return Err(Error::Integrity {
                        column: name.to_owned(),
                        reason: format!(
                            "the row holds `{cell}` but no `{name}__chunks`: the split value is incomplete"
                        ),
                    });
                }
                None
            };
            if let Some(v) = value {
                merged.insert(inline_name(name, column.form), v);
            }
        }
        Ok(merged)
    }

    /// Decodes a main row of a large type: reassembles, retries a read that
    /// raced a replace (5 attempts), binds files to their blobs.
    pub(crate) async fn decode_large(&self, mut main: Row) -> Result<Option<T>> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.assemble_row(&main).await {
                Ok(row) => {
                    let mut entity = T::from_row(row)?;
                    if let Some(source) = self.blob_source() {
                        for (_, content) in entity.blob_contents_mut() {
                            content.bind(source.clone());
                        }
                    }
                    return Ok(Some(entity));
                }
                Err(e @ Error::Integrity { .. }) => {
                    let again = self
                        .tables
                        .backend
                        .get(&self.table, &main.partition_key, &main.row_key)
                        .await?;
                    match again {
                        None => return Ok(None),
                        Some(fresh) if fresh.etag != main.etag && attempt < RACE_ATTEMPTS => {
                            tokio::time::sleep(race_backoff(attempt)).await;
                            main = fresh;
                        }
                        Some(fresh) if fresh.etag != main.etag => {
                            return Err(Error::Conflict {
                                table: self.table.clone(),
                                partition_key: main.partition_key,
                                row_key: main.row_key,
                            })
                        }
                        Some(_) => return Err(e),
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Deletes an entity of a large type with its continuation rows, then
    /// releases its blobs. Returns whether it existed.
    pub(crate) async fn delete_large(&self, key: &Key, condition: IfMatch) -> Result<bool> {
        self.ensure_created().await?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            // A continuation row is not an entity: deleting its key is a no-op.
            let Some(stored) = self
                .tables
                .backend
                .get(&self.table, &key.partition_key, &key.row_key)
                .await?
                .filter(|row| row.get(SPLIT_OF).is_none())
            else {
                if let IfMatch::ETag(_) = condition {
                    return Err(Error::NotFound {
                        table: self.table.clone(),
                        partition_key: key.partition_key.clone(),
                        row_key: key.row_key.clone(),
                    });
                }
                return Ok(false);
            };
            if let IfMatch::ETag(wanted) = &condition {
                if stored.etag.as_ref() != Some(wanted) {
                    return Err(self.conflict_of(key));
                }
            }
            let version = stored.etag.clone().map(IfMatch::ETag).unwrap_or(IfMatch::Any);
            let mut ops = vec![WriteOp::Delete {
                partition_key: key.partition_key.clone(),
                row_key: key.row_key.clone(),
                condition: version,
            }];
            for index in 1..=split_parts(&stored) {
                ops.push(WriteOp::Delete {
                    partition_key: key.partition_key.clone(),
                    row_key: continuation_key(&key.row_key, index),
                    condition: IfMatch::Any,
                });
            }
            // Continuation rows already gone (a damaged entity) are dropped from the transaction.
            let result = loop {
                let attempt_ops = ops.clone();
                let r = if attempt_ops.len() == 1 {
                    self.tables
                        .backend
                        .execute(&self.table, attempt_ops.into_iter().next().expect("one op"))
                        .await
                        .map(|_| ())
                } else {
                    self.tables
                        .backend
                        .transaction(&self.table, attempt_ops)
                        .await
                        .map(|_| ())
                };
                match r {
                    Err(Error::Transaction { index, source })
                        if index > 0 && source.service_code().map(|c| c.0) == Some(404) =>
                    {
                        ops.remove(index);
                    }
                    other => break other,
                }
            };
            match result {
                Ok(()) => {
                    self.release_blobs(key, &referenced_blobs(&stored), &BTreeSet::new())
                        .await;
                    return Ok(true);
                }
                Err(e) => {
                    let status = e.service_code().map(|c| c.0);
                    if matches!(status, Some(404) | Some(412))
                        && attempt < RACE_ATTEMPTS
                        && matches!(condition, IfMatch::Any)
                    {
                        tokio::time::sleep(race_backoff(attempt)).await;
                        continue;
                    }
                    return Err(e.about_entity(&self.table, &key.partition_key, &key.row_key));
                }
            }
        }
    }
}

impl<T: TableEntity> Store<T> {
    /// Batch writes of a type with large values: each entity is written as a
    /// unit (its rows in one transaction), one after the other.
    pub(crate) async fn write_large_batch(&self, entities: &[T], create: bool) -> Result<usize> {
        // Every key is checked before anything is written.
        for entity in entities {
            let key = entity.key();
            key.validate()?;
            self.check_large_key(&key.row_key)?;
        }
        let at = crate::store::now();
        let stamps_of = |entity: &T| Stamps {
            created: if create || entity.created_at().is_none() {
                Some(at)
            } else {
                None
            },
            updated: Some(at),
        };
        let kind = if create { LargeWrite::Create } else { LargeWrite::Upsert };
        let columns = large_columns(T::SCHEMA.columns);
        let threshold = self.blobs().map_or(usize::MAX, |b| b.options.threshold_bytes);
        self.ensure_created().await?;
        // Plan every entity as a unit: its rows, its blobs, the version it replaces.
        struct Unit {
            entity: usize,
            key: Key,
            ops: Vec<WriteOp>,
            uploads: Vec<Upload>,
            old_refs: BTreeSet<String>,
            new_refs: BTreeSet<String>,
        }
        let mut units = Vec::with_capacity(entities.len());
        for (i, entity) in entities.iter().enumerate() {
            let stamps = stamps_of(entity);
            let failed = |e: Error, committed: usize| {
                let key = entity.key();
                Error::BatchFailed {
                    committed,
                    partition_key: key.partition_key,
                    row_key: key.row_key,
                    source: Box::new(e),
                }
            };
            let mut row = entity.to_row(&self.encode_options()).map_err(|e| failed(e, 0))?;
            if let (Some(at), Some(col)) = (stamps.created, T::SCHEMA.created_column) {
                row.insert(col, Value::DateTime(at));
            }
            if let (Some(at), Some(col)) = (stamps.updated, T::SCHEMA.updated_column) {
                row.insert(col, Value::DateTime(at));
            }
            let key = Key::new(row.partition_key.clone(), row.row_key.clone());
            let (_, files) = self
                .prepare_files(entity, &mut row, &key)
                .await
                .map_err(|e| failed(e, 0))?;
            // Upserts read each row first and replace it on condition of that version.
            let stored = if create {
                None
            } else {
                self.tables
                    .backend
                    .get(&self.table, &key.partition_key, &key.row_key)
                    .await?
            };
            let version = stored.as_ref().and_then(|s| s.etag.clone());
            let old_parts = stored.as_ref().map_or(0, split_parts);
            let limits = Limits {
                threshold,
                blobs: self.blobs().is_some(),
                extra_ops: old_parts,
            };
            let planned = plan(&self.table, &row, &columns, limits).map_err(|e| failed(e, 0))?;
            check_row_limits(&planned.main).map_err(|e| failed(e, 0))?;
            let ops = unit_ops(&kind, version.as_ref(), &key, &planned, old_parts, &HashSet::new());
            let mut uploads: Vec<Upload> = planned
                .blobs
                .iter()
                .map(|b| {
                    (
                        b.reference.path.clone(),
                        b.bytes.clone(),
                        b.reference.content_type.clone(),
                        b.content_encoding.clone(),
                    )
                })
                .collect();
            for (reference, bytes) in files {
                if let Some(bytes) = bytes {
                    uploads.push((
                        reference.path,
                        Arc::unwrap_or_clone(bytes),
                        reference.content_type,
                        None,
                    ));
                }
            }
            units.push(Unit {
                entity: i,
                key,
                ops,
                uploads,
                old_refs: stored.as_ref().map(referenced_blobs).unwrap_or_default(),
                new_refs: referenced_blobs(&planned.main),
            });
        }
        // Pack whole units, partition by partition, into transactions; a unit never straddles two.
        let mut order: Vec<String> = Vec::new();
        let mut groups: std::collections::HashMap<String, Vec<Unit>> = std::collections::HashMap::new();
        for unit in units {
            let pk = unit.key.partition_key.clone();
            groups
                .entry(pk.clone())
                .or_insert_with(|| {
                    order.push(pk);
                    Vec::new()
                })
                .push(unit);
        }
        let mut committed = 0;
        let mut released: Vec<(Key, BTreeSet<String>, BTreeSet<String>)> = Vec::new();
        for pk in order {
            let group = groups.remove(&pk).unwrap_or_default();
            let mut transactions: Vec<Vec<Unit>> = Vec::new();
            let (mut ops, mut bytes) = (0usize, 0usize);
            for unit in group {
                let size: usize = unit
                    .ops
                    .iter()
                    .map(|op| op.row().map_or(0, crate::value::wire::wire_size) + 400)
                    .sum();
                let fits = ops + unit.ops.len() <= crate::store::MAX_TRANSACTION_OPS
                    && bytes + size <= crate::store::TRANSACTION_BODY_BUDGET;
                if transactions.is_empty() || !fits {
                    transactions.push(Vec::new());
                    ops = 0;
                    bytes = 0;
                }
                ops += unit.ops.len();
                bytes += size;
                if let Some(last) = transactions.last_mut() {
                    last.push(unit);
                }
            }
            for tx in transactions {
                // Each transaction's blobs are uploaded just before it.
                for unit in &tx {
                    for (path, data, content_type, encoding) in &unit.uploads {
                        self.upload(path, data.clone(), content_type.clone(), encoding.clone())
                            .await?;
                    }
                }
                let all: Vec<WriteOp> = tx.iter().flat_map(|u| u.ops.iter().cloned()).collect();
                let result = if all.len() == 1 {
                    self.tables
                        .backend
                        .execute(&self.table, all[0].clone())
                        .await
                        .map(|_| ())
                } else {
                    self.tables.backend.transaction(&self.table, all).await.map(|_| ())
                };
                match result {
                    Ok(()) => {
                        committed += tx.len();
                        released.extend(tx.into_iter().map(|u| (u.key, u.old_refs, u.new_refs)));
                    }
                    Err(e) => {
                        let (index, source) = match e {
                            Error::Transaction { index, source } => (index, *source),
                            other => (0, other),
                        };
                        // Which entity the failing operation belongs to.
                        let mut at = index;
                        let unit = tx
                            .iter()
                            .find(|u| {
                                if at < u.ops.len() {
                                    true
                                } else {
                                    at -= u.ops.len();
                                    false
                                }
                            })
                            .unwrap_or(&tx[0]);
                        let status = source.service_code().map(|c| c.0);
                        if !create && matches!(status, Some(404) | Some(409) | Some(412)) {
                            // An upsert lost a race: the transaction applied nothing; write its
                            // entities one by one, each retrying as a single write does.
                            for u in &tx {
                                let entity = &entities[u.entity];
                                if let Err(e) = self
                                    .write_large_rows(entity, stamps_of(entity), LargeWrite::Upsert)
                                    .await
                                {
                                    return Err(Error::BatchFailed {
                                        committed,
                                        partition_key: u.key.partition_key.clone(),
                                        row_key: u.key.row_key.clone(),
                                        source: Box::new(e),
                                    });
                                }
                                committed += 1;
                            }
                            continue;
                        }
                        let source = source.about_entity(&self.table, &unit.key.partition_key, &unit.key.row_key);
                        return Err(Error::BatchFailed {
                            committed,
                            partition_key: unit.key.partition_key.clone(),
                            row_key: unit.key.row_key.clone(),
                            source: Box::new(source),
                        });
                    }
                }
            }
        }
        // Blobs the replaced rows no longer reference, once every transaction committed.
        for (key, old, new) in released {
            self.release_blobs(&key, &old, &new).await;
        }
        Ok(entities.len())
    }

    /// Deletes a partition of a large type entity by entity, never separating
    /// a main row from its continuation rows; leftover continuation rows
    /// without a main row are removed last.
    pub(crate) async fn delete_large_partition(&self, partition_key: &str) -> Result<usize> {
        let request = QueryRequest {
            filter: Some(Filter::eq("PartitionKey", Value::String(partition_key.to_owned()))),
            select: Some(vec!["RowKey".to_owned(), SPLIT_OF.to_owned()]),
            top: Some(crate::store::MAX_PAGE_SIZE),
        };
        let mut pages = self.pages(request).await?;
        let (mut mains, mut leftovers) = (Vec::new(), Vec::new());
        while let Some(rows) = pages.next().await? {
            for row in rows {
                match row.get(SPLIT_OF).and_then(Value::as_str) {
                    Some(owner) => leftovers.push((owner.to_owned(), row.row_key)),
                    None => mains.push(row.row_key),
                }
            }
        }
        let mut deleted = 0;
        for rk in &mains {
            if self
                .delete_large(&Key::new(partition_key, rk.clone()), IfMatch::Any)
                .await?
            {
                deleted += 1;
            }
        }
        for (owner, rk) in leftovers {
            let main_exists = self
                .tables
                .backend
                .get(&self.table, partition_key, &owner)
                .await?
                .is_some();
            if !main_exists {
                let op = WriteOp::Delete {
                    partition_key: partition_key.to_owned(),
                    row_key: rk,
                    condition: IfMatch::Any,
                };
                if let Err(e) = self.tables.backend.execute(&self.table, op).await {
                    if e.service_code().map(|c| c.0) != Some(404) {
                        return Err(e);
                    }
                }
            }
        }
        Ok(deleted)
    }
}
