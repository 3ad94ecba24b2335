//! An entity's write, the steps before the pipeline's entry:
//!
//! 1. **encode**: the derive's `to_row`, the stamps, key checks, files, and
//!    the main row's write token (reserved here, before planning, so the
//!    plan counts its cell);
//! 2. **plan**: the rows, continuation rows and blobs the entity takes (a
//!    plain entity is a plan of one row);
//! 3. **guard**: the read the type needs (large values, protected fields),
//!    the caller's condition, protected-field checks;
//!
//! then uploads, and [`Store::commit`] of the planned operations; a
//! rejection is classified here (a lost race is tried again) and the blobs
//! the replaced version referenced are released.
//!
//! Single writes ([`Store::write_entity`]) and batches
//! ([`Store::write_batch`](crate::store::write::batch)) share every step.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashSet};

use super::{Committed, Store, Write};
use crate::backend::race::{lost_race, race_backoff, RACE_ATTEMPTS};
use crate::backend::{IfMatch, UpdateMode, WriteOp, WriteOutcome};
use crate::entity::{Key, TableEntity};
use crate::error::{Error, ErrorKind, KeyKind, Result};
use crate::large::entity_rows::continuation_owner;
use crate::large::plan::{check_row_key, large_columns, plan, Limits};
use crate::layout::{blob_paths, continuation_key, split_parts};
use crate::service::{check_row_limits, validate_key};
use crate::store::cache::Settled;
use crate::store::offload::{Files, Upload};
use crate::store::write::conditions::check_condition;
use crate::telemetry;
use crate::value::{DateTime, ETag, Row, Value};

/// What a write does to the stored entity.
#[derive(Debug, Clone)]
pub(crate) enum Verb {
    /// Insert; the entity must not exist.
    Create,
    /// Insert or replace, whatever is stored.
    Upsert,
    /// Replace an existing entity on this condition.
    Replace(IfMatch),
}

/// Stamps a write sets.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stamps {
    pub(crate) created: Option<DateTime>,
    pub(crate) updated: Option<DateTime>,
}

impl Stamps {
    /// The stamps `verb` sets on `entity` at `at`: a create sets both, an
    /// upsert keeps a created stamp the caller set, a replace sets the updated one.
    pub(crate) fn of<T: TableEntity>(verb: &Verb, entity: &T, at: DateTime) -> Stamps {
        let created = match verb {
            Verb::Create => Some(at),
            Verb::Upsert => entity.created_at().is_none().then_some(at),
            Verb::Replace(_) => None,
        };
        Stamps {
            created,
            updated: Some(at),
        }
    }
}

/// Moves the written state into the caller's entity after a successful write.
/// Returns the new ETag: empty, and `None` in the entity, when the write was
/// settled after a lost answer and its row is no longer exactly what it
/// wrote (no version of it can be reported; see `settle.rs`).
pub(crate) fn apply_written<T: TableEntity>(entity: &mut T, stamps: Stamps, outcome: WriteOutcome) -> ETag {
    if let Some(at) = stamps.created {
        entity.set_created_at(at);
    }
    if let Some(at) = stamps.updated {
        entity.set_updated_at(at);
    }
    entity.set_etag(outcome.etag.clone());
    entity.set_timestamp(outcome.timestamp);
    outcome.etag.unwrap_or_else(|| ETag::new(""))
}

/// An encoded entity: its full row (large values in their one-cell form)
/// and its files.
#[derive(Debug)]
pub(crate) struct Encoded {
    pub(crate) row: Row,
    pub(crate) files: Files,
}

impl Encoded {
    pub(crate) fn key(&self) -> Key {
        Key::new(self.row.partition_key.clone(), self.row.row_key.clone())
    }
}

/// What a committed write of one entity reports.
#[derive(Debug)]
pub(crate) struct Written {
    /// The main row's outcome.
    pub(crate) outcome: WriteOutcome,
    /// The entity's files.
    pub(crate) files: Files,
    /// What lets the write cache the entity, with a read cache.
    pub(crate) settled: Option<Settled>,
    /// The row written, for the read cache, when the type is cached.
    pub(crate) row: Option<Row>,
}

/// The operations, uploads and blob bookkeeping of one entity's write.
#[derive(Debug)]
pub(crate) struct Unit {
    /// The main row's operation first, then continuation rows, then deletes of stale ones.
    pub(crate) ops: Vec<WriteOp>,
    /// How many continuation rows `ops` writes (they follow the main op).
    pub(crate) new_parts: usize,
    pub(crate) uploads: Vec<Upload>,
    /// Blobs the replaced version referenced.
    pub(crate) old_refs: BTreeSet<String>,
    /// What the index step added (its operations follow the entity's).
    pub(crate) index: crate::store::index::IndexPlan,
}

impl Unit {
    /// Blobs the new version references.
    pub(crate) fn new_refs(&self) -> BTreeSet<String> {
        self.ops
            .first()
            .and_then(WriteOp::row)
            .map(blob_paths)
            .unwrap_or_default()
    }

    pub(crate) fn key(&self) -> Key {
        Unit::key_of(&self.ops)
    }

    fn key_of(ops: &[WriteOp]) -> Key {
        let (pk, rk) = ops[0].keys();
        Key::new(pk, rk)
    }
}

/// Whether writes of `verb` read the stored row first: only for types whose
/// plan or guard depends on it (large values, protected fields), and never
/// for a create.
pub(crate) fn reads_first<T: TableEntity>(verb: &Verb) -> bool {
    !matches!(verb, Verb::Create)
        && const { T::SCHEMA.has_large_values() || T::SCHEMA.has_protected() || !T::INDEXES.is_empty() }
}

impl<T: TableEntity> Store<T> {
    /// Encodes an entity with `stamps` written into their columns (the
    /// caller's value is stamped only once the write succeeds), checks its
    /// keys, and prepares its files.
    pub(crate) async fn encode(&self, entity: &T, stamps: Stamps) -> Result<Encoded> {
        let mut row = entity.to_row(&self.encode_options())?;
        if let (Some(at), Some(col)) = (stamps.created, T::SCHEMA.created_column) {
            row.insert(col, Value::DateTime(at));
        }
        if let (Some(at), Some(col)) = (stamps.updated, T::SCHEMA.updated_column) {
            row.insert(col, Value::DateTime(at));
        }
        self.reserve_token(&mut row);
        validate_key(KeyKind::PartitionKey, &row.partition_key)?;
        validate_key(KeyKind::RowKey, &row.row_key)?;
        check_row_key(T::SCHEMA, &row.row_key)?;
        let files = if const { T::SCHEMA.has_large_values() } {
            let key = Key::new(row.partition_key.clone(), row.row_key.clone());
            Box::pin(self.prepare_files(entity, &mut row, &key)).await?
        } else {
            Files::default()
        };
        Ok(Encoded { row, files })
    }

    /// The guard of a write that read the stored row: the caller's
    /// condition against the version read, and protected fields.
    fn guard(&self, verb: &Verb, key: &Key, stored: Option<&Row>, row: &Row) -> Result<()> {
        let version = stored.and_then(|s| s.etag.as_ref());
        match (verb, version) {
            (Verb::Replace(_), None) => return Err(Error::not_found(&self.table, key)),
            (Verb::Replace(IfMatch::ETag(wanted)), Some(v)) if wanted != v => {
                return Err(Error::conflict(&self.table, key))
            }
            _ => {}
        }
        if const { T::SCHEMA.has_protected() } {
            self.check_protected(stored, row)?;
        }
        Ok(())
    }

    /// Plans the unit that writes `encoded` over `stored` (the row read
    /// first, if the write reads). `leftovers` are continuation indexes held
    /// by this entity's own leftover rows, which are overwritten.
    pub(crate) fn plan_unit(
        &self,
        verb: &Verb,
        read: bool,
        row: Cow<'_, Row>,
        files: &Files,
        stored: Option<&Row>,
        leftovers: &HashSet<usize>,
    ) -> Result<Unit> {
        let old_parts = stored.map_or(0, split_parts);
        let limits = Limits {
            threshold: self.blobs().map_or(usize::MAX, |b| b.options.threshold_bytes),
            blobs: self.blobs().is_some(),
            extra_ops: old_parts + crate::store::index::reserved_ops(T::INDEXES),
            budget: self.profile().transaction_body_budget(),
        };
        let planned = plan(&self.table, row, &large_columns(T::SCHEMA.columns), limits)?;
        check_row_limits(&planned.main)?;
        let version = stored.and_then(|s| s.etag.clone());
        let main = match (read, verb, version) {
            (true, Verb::Create, _) | (true, _, None) | (false, Verb::Create, _) => WriteOp::Insert(planned.main),
            (true, _, Some(v)) => WriteOp::Update {
                row: planned.main,
                mode: UpdateMode::Replace,
                condition: IfMatch::ETag(v),
            },
            (false, Verb::Upsert, _) => WriteOp::Upsert {
                row: planned.main,
                mode: UpdateMode::Replace,
            },
            (false, Verb::Replace(condition), _) => WriteOp::Update {
                row: planned.main,
                mode: UpdateMode::Replace,
                condition: condition.clone(),
            },
        };
        let new_parts = planned.continuations.len();
        let mut ops = Vec::with_capacity(1 + new_parts + old_parts.saturating_sub(new_parts));
        ops.push(main);
        for (i, cont) in planned.continuations.into_iter().enumerate() {
            let index = i + 1;
            ops.push(if index <= old_parts || leftovers.contains(&index) {
                WriteOp::Upsert {
                    row: cont,
                    mode: UpdateMode::Replace,
                }
            } else {
                WriteOp::Insert(cont)
            });
        }
        if old_parts > new_parts {
            let (pk, rk) = {
                let (pk, rk) = ops[0].keys();
                (pk.to_owned(), rk.to_owned())
            };
            for index in new_parts + 1..=old_parts {
                ops.push(WriteOp::Delete {
                    partition_key: pk.clone(),
                    row_key: continuation_key(&rk, index),
                    condition: IfMatch::Any,
                });
            }
        }
        let (index_ops, index) = self.plan_indexes(&Unit::key_of(&ops), stored, ops[0].row())?;
        ops.extend(index_ops);
        crate::index::check_transaction(&ops, self.profile().transaction_body_budget())?;
        let mut uploads: Vec<Upload> = planned.blobs.into_iter().map(Upload::from).collect();
        uploads.extend(files.uploads.iter().cloned());
        Ok(Unit {
            ops,
            new_parts,
            uploads,
            old_refs: stored.map(blob_paths).unwrap_or_default(),
            index,
        })
    }
}

impl<T: TableEntity> Store<T> {
    /// Writes one entity through the pipeline and records the new version
    /// (stamps, ETag, files) on it.
    pub(crate) async fn write_entity(&self, entity: &mut T, verb: Verb) -> Result<ETag> {
        if let Verb::Replace(condition) = &verb {
            check_condition(condition)?;
        }
        let stamps = Stamps::of(&verb, entity, crate::store::now());
        let written = self.write_encoded(self.encode(entity, stamps).await?, &verb).await?;
        if const { T::SCHEMA.has_large_values() } {
            self.bind_stored_files(entity, &written.files.refs);
        }
        // Only a version the service reported whole (ETag and Timestamp) is cached.
        let timestamp = written.outcome.timestamp;
        let reported = written.outcome.etag.is_some() && timestamp.is_some();
        let etag = apply_written(entity, stamps, written.outcome);
        if let (Some(settled), Some(row), true) = (written.settled, written.row, reported) {
            self.keep_written(&settled, row, &etag, timestamp);
        }
        Ok(etag)
    }

    /// Guards, plans and commits an encoded entity, retrying lost races when
    /// the write read first and its condition allows it. Returns the outcome
    /// of the main row and the entity's files.
    pub(crate) async fn write_encoded(&self, encoded: Encoded, verb: &Verb) -> Result<Written> {
        self.ensure_created().await?;
        let read = reads_first::<T>(verb);
        // Only a write that reads, has large values or has indexes can take a second
        // attempt (a stale unique claim is removed and the write sent again) or
        // need its row after the send (a lost reservation writes the entity back
        // and leaves intents for its global index rows); any other moves its row
        // into the one request it sends.
        let retries = read || const { T::SCHEMA.has_large_values() || !T::INDEXES.is_empty() };
        let key = encoded.key();
        let Encoded {
            row: mut encoded_row,
            files,
        } = encoded;
        let cache_row = self.row_for_cache(&encoded_row);
        let mut leftovers: HashSet<usize> = HashSet::new();
        let mut attempt = 0;
        loop {
            attempt += 1;
            debug_assert!(
                retries || attempt == 1,
                "a second attempt of a write whose row was sent"
            );
            let stored = match read {
                true => {
                    self.shared
                        .backend
                        .get(&self.table, &key.partition_key, &key.row_key)
                        .await?
                }
                false => None,
            };
            if read {
                self.guard(verb, &key, stored.as_ref(), &encoded_row)?;
            }
            let row = match retries {
                true => Cow::Borrowed(&encoded_row),
                false => Cow::Owned(std::mem::take(&mut encoded_row)),
            };
            let mut unit = self.plan_unit(verb, read, row, &files, stored.as_ref(), &leftovers)?;
            let reserved = self.reserve_all(&unit.index.reservations).await?;
            Box::pin(self.upload_all(std::mem::take(&mut unit.uploads))).await?;
            let new_refs = if unit.old_refs.is_empty() {
                BTreeSet::new()
            } else {
                unit.new_refs()
            };
            let (old_refs, new_parts, indexed) = (unit.old_refs, unit.new_parts, unit.index);
            let write = Write::new(unit.ops)
                .droppable_from(new_parts + 1)
                .send_before(self.send_deadline(&reserved));
            let error = match self.commit(write).await {
                Ok(Committed {
                    mut outcomes, settled, ..
                }) => {
                    let outcome = outcomes.swap_remove(0);
                    self.intents_written(&indexed);
                    let etag = outcome.etag.clone().unwrap_or_else(|| ETag::new(""));
                    self.confirm_all(T::INDEXES, &reserved, &key, &etag, &encoded_row, stored.as_ref())
                        .await?;
                    if !old_refs.is_empty() {
                        Box::pin(self.release_blobs(&key, &old_refs, &new_refs)).await;
                    }
                    return Ok(Written {
                        outcome,
                        files,
                        settled,
                        row: cache_row,
                    });
                }
                Err(e) => e,
            };
            let (index, error) = match error {
                Error::Transaction { index, source } => (index, *source),
                other => (0, other),
            };
            let kind = error.kind();
            self.release_refused(&reserved, &error).await;
            // A unique index row taken: by another entity (refused) or by a stale row (removed, tried again).
            if kind == ErrorKind::AlreadyExists
                && attempt < RACE_ATTEMPTS
                && self.unique_conflict(&indexed.claims).await?
            {
                tokio::time::sleep(race_backoff(attempt)).await;
                continue;
            }
            // A continuation key already taken: our own leftover is reclaimed, a foreign row fails the write.
            if index > 0 && index <= new_parts && kind == ErrorKind::AlreadyExists {
                let taken = continuation_key(&key.row_key, index);
                let holder = self.shared.backend.get(&self.table, &key.partition_key, &taken).await?;
                let ours = holder
                    .as_ref()
                    .is_some_and(|r| continuation_owner(r) == Some(key.row_key.as_str()));
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
            let may_retry = read && !matches!(verb, Verb::Replace(IfMatch::ETag(_)));
            if lost_race(kind) && may_retry && attempt < RACE_ATTEMPTS {
                let pause = race_backoff(attempt);
                tracing::debug!(name: telemetry::LOST_RACE, target: telemetry::DECISION_TARGET, attempt, backoff_ms = pause.as_millis() as u64, "another writer got there first; applying the write again");
                telemetry::retry("lost_race");
                tokio::time::sleep(pause).await;
                continue;
            }
            // After a read, a lost race is a conflict whatever the service said.
            let conflict = read
                && match kind {
                    ErrorKind::AlreadyExists | ErrorKind::PreconditionFailed => true,
                    ErrorKind::NotFound => matches!(verb, Verb::Upsert),
                    _ => false,
                };
            return Err(if conflict {
                Error::conflict(&self.table, &key)
            } else {
                error.about_entity(&self.table, &key.partition_key, &key.row_key)
            });
        }
    }
}
