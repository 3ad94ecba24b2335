//! Create, read, update, upsert, delete.

use std::time::Duration;

use rand::Rng;

use super::large::LargeWrite;
use super::{now, Concurrency, Lookup, Store};
use crate::backend::{IfMatch, UpdateMode, WriteOp, WriteOutcome};
use crate::entity::TableEntity;
use crate::error::{Error, Result};
use crate::value::{DateTime, ETag, Row, Value};

impl<T: TableEntity> Store<T> {
    /// Inserts a new entity. Fails with [`Error::AlreadyExists`] if one with
    /// the same keys exists. Sets the entity's created and updated stamps to
    /// now, and its ETag and Timestamp to the stored version.
    ///
    /// One round trip.
    pub async fn create(&self, entity: &mut T) -> Result<ETag> {
        let at = now();
        let stamps = Stamps {
            created: Some(at),
            updated: Some(at),
        };
        if self.is_large() {
            return self.write_large(entity, stamps, LargeWrite::Create).await;
        }
        let row = self.encode_stamped(entity, stamps)?;
        let outcome = self.write(WriteOp::Insert(row.clone()), &row).await?;
        Ok(commit(entity, stamps, outcome))
    }

    /// Reads one entity with its ETag, or `None` if it does not exist.
    ///
    /// One round trip.
    pub async fn get(&self, key: impl Into<Lookup>) -> Result<Option<T>> {
        let key = self.resolve(key)?;
        Ok(self.read(&key).await?.map(|(entity, _)| entity))
    }

    /// Reads one row as an entity together with its version (which entities
    /// without an ETag field cannot carry).
    pub(crate) async fn read(&self, key: &crate::entity::Key) -> Result<Option<(T, ETag)>> {
        self.ensure_created().await?;
        match self
            .tables
            .backend
            .get(&self.table, &key.partition_key, &key.row_key)
            .await?
        {
            // A continuation row of a large value is not an entity.
            Some(row) if row.get(crate::large::SPLIT_OF).is_some() => Ok(None),
            Some(row) if self.is_large() => {
                let etag = row.etag.clone().unwrap_or_else(|| ETag::new(""));
                Ok(self.decode_large(row).await?.map(|e| {
                    let etag = e.etag().cloned().unwrap_or(etag);
                    (e, etag)
                }))
            }
            Some(row) => {
                let etag = row.etag.clone().unwrap_or_else(|| ETag::new(""));
                Ok(Some((T::from_row(row)?, etag)))
            }
            None => Ok(None),
        }
    }

    /// Whether an entity with these keys exists.
    pub async fn exists(&self, key: impl Into<Lookup>) -> Result<bool> {
        let key = self.resolve(key)?;
        self.ensure_created().await?;
        // A continuation row of a large value is not an entity.
        Ok(self
            .tables
            .backend
            .get(&self.table, &key.partition_key, &key.row_key)
            .await?
            .is_some_and(|row| row.get(crate::large::SPLIT_OF).is_none()))
    }

    /// Inserts or replaces the entity, unconditionally, in one round trip.
    /// Keeps a created stamp the caller set (otherwise sets it to now) and
    /// sets the updated stamp to now.
    pub async fn upsert(&self, entity: &mut T) -> Result<ETag> {
        let at = now();
        let stamps = Stamps {
            created: entity.created_at().is_none().then_some(at),
            updated: Some(at),
        };
        if self.is_large() {
            return self.write_large(entity, stamps, LargeWrite::Upsert).await;
        }
        let row = self.encode_stamped(entity, stamps)?;
        if const { T::SCHEMA.has_protected() } {
            let outcome = self.guarded_write(&row, None).await?;
            return Ok(commit(entity, stamps, outcome));
        }
        let op = WriteOp::Upsert {
            row: row.clone(),
            mode: UpdateMode::Replace,
        };
        let outcome = self.write(op, &row).await?;
        Ok(commit(entity, stamps, outcome))
    }

    /// A write of a type with protected fields: read the stored row, check
    /// the protected values, and write on condition of the version read,
    /// retrying lost races. `required` is the caller's condition for an
    /// update (`None` for an upsert, which may insert).
    async fn guarded_write(&self, row: &Row, required: Option<&IfMatch>) -> Result<WriteOutcome> {
        self.ensure_created().await?;
        let (pk, rk) = (&row.partition_key, &row.row_key);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let stored = self.tables.backend.get(&self.table, pk, rk).await?;
            let version = stored.as_ref().and_then(|s| s.etag.clone());
            match (required, &version) {
                (Some(_), None) => {
                    return Err(Error::NotFound {
                        table: self.table.clone(),
                        partition_key: pk.clone(),
                        row_key: rk.clone(),
                    })
                }
                (Some(IfMatch::ETag(wanted)), Some(v)) if wanted != v => {
                    return Err(Error::Conflict {
                        table: self.table.clone(),
                        partition_key: pk.clone(),
                        row_key: rk.clone(),
                    })
                }
                _ => {}
            }
            self.check_protected(stored.as_ref(), row)?;
            let op = match version {
                None => WriteOp::Insert(row.clone()),
                Some(v) => WriteOp::Update {
                    row: row.clone(),
                    mode: UpdateMode::Replace,
                    condition: IfMatch::ETag(v),
                },
            };
            match self.write(op, row).await {
                Ok(outcome) => return Ok(outcome),
                // Another writer got between the read and the write: read again,
                // unless the caller's own condition already failed.
                Err(Error::Conflict { .. } | Error::AlreadyExists { .. } | Error::NotFound { .. })
                    if attempt < RACE_ATTEMPTS && !matches!(required, Some(IfMatch::ETag(_))) =>
                {
                    tokio::time::sleep(race_backoff(attempt)).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Replaces the stored entity on condition of the ETag it was read with
    /// ([`Concurrency::Auto`]). A stale ETag fails with [`Error::Conflict`];
    /// an entity without an ETag is refused with [`Error::MissingETag`].
    pub async fn update(&self, entity: &mut T) -> Result<ETag> {
        self.update_with(entity, Concurrency::Auto).await
    }

    /// Replaces the stored entity under an explicit concurrency mode.
    ///
    /// | mode | without an ETag | with an ETag |
    /// |---|---|---|
    /// | `Auto` | refused (or `*` when `implicit_last_writer_wins`) | conditional |
    /// | `Strict` | refused | conditional |
    /// | `LastWriterWins` | `*` | `*` |
    ///
    /// `*` still requires the row to exist ([`Error::NotFound`] otherwise).
    pub async fn update_with(&self, entity: &mut T, mode: Concurrency) -> Result<ETag> {
        let condition = self.condition_for(entity, mode)?;
        self.replace_if(entity, condition).await
    }

    /// Replaces the stored row under an explicit condition.
    pub(crate) async fn replace_if(&self, entity: &mut T, condition: IfMatch) -> Result<ETag> {
        let stamps = Stamps {
            created: None,
            updated: Some(now()),
        };
        if self.is_large() {
            return self.write_large(entity, stamps, LargeWrite::Replace(condition)).await;
        }
        let row = self.encode_stamped(entity, stamps)?;
        if const { T::SCHEMA.has_protected() } {
            let outcome = self.guarded_write(&row, Some(&condition)).await?;
            return Ok(commit(entity, stamps, outcome));
        }
        let op = WriteOp::Update {
            row: row.clone(),
            mode: UpdateMode::Replace,
            condition,
        };
        let outcome = self.write(op, &row).await?;
        Ok(commit(entity, stamps, outcome))
    }

    /// Deletes the entity with these keys, whatever its version. Returns
    /// whether it existed; deleting a missing entity is not an error.
    pub async fn delete(&self, key: impl Into<Lookup>) -> Result<bool> {
        let key = self.resolve(key)?;
        if self.is_large() {
            return self.delete_large(&key, IfMatch::Any).await;
        }
        self.ensure_created().await?;
        let op = WriteOp::Delete {
            partition_key: key.partition_key.clone(),
            row_key: key.row_key.clone(),
            condition: IfMatch::Any,
        };
        match self.tables.backend.execute(&self.table, op).await {
            Ok(_) => Ok(true),
            Err(e) => match e.about_entity(&self.table, &key.partition_key, &key.row_key) {
                Error::NotFound { .. } => Ok(false),
                other => Err(other),
            },
        }
    }

    /// Deletes the entity on condition of its ETag: [`Error::Conflict`] if it
    /// changed since it was read, [`Error::NotFound`] if it is gone.
    pub async fn delete_entity(&self, entity: &T) -> Result<()> {
        let key = entity.key();
        key.validate()?;
        let condition = self.condition_for(entity, Concurrency::Strict)?;
        if self.is_large() {
            return self.delete_large(&key, condition).await.map(|_| ());
        }
        self.ensure_created().await?;
        let op = WriteOp::Delete {
            partition_key: key.partition_key.clone(),
            row_key: key.row_key.clone(),
            condition,
        };
        self.tables
            .backend
            .execute(&self.table, op)
            .await
            .map(|_| ())
            .map_err(|e| e.about_entity(&self.table, &key.partition_key, &key.row_key))
    }

    fn condition_for(&self, entity: &T, mode: Concurrency) -> Result<IfMatch> {
        match (mode, entity.etag()) {
            (Concurrency::LastWriterWins, _) => Ok(IfMatch::Any),
            (_, Some(etag)) => Ok(IfMatch::ETag(etag.clone())),
            (Concurrency::Auto, None) if self.tables.options.implicit_last_writer_wins => {
                tracing::warn!(table = %self.table, "update without an ETag: overwriting (implicit_last_writer_wins)");
                Ok(IfMatch::Any)
            }
            (_, None) => {
                let key = entity.key();
                Err(Error::MissingETag {
                    table: self.table.clone(),
                    partition_key: key.partition_key,
                    row_key: key.row_key,
                })
            }
        }
    }

    pub(crate) async fn write(&self, op: WriteOp, row: &Row) -> Result<WriteOutcome> {
        self.ensure_created().await?;
        self.tables
            .backend
            .execute(&self.table, op)
            .await
            .map_err(|e| e.about_entity(&self.table, &row.partition_key, &row.row_key))
    }

    /// Encodes the entity with the given stamps written into their columns
    /// (the caller's value is stamped only once the write succeeds).
    pub(crate) fn encode_stamped(&self, entity: &T, stamps: Stamps) -> Result<Row> {
        let mut row = entity.to_row(&self.encode_options())?;
        if let (Some(at), Some(col)) = (stamps.created, T::SCHEMA.created_column) {
            row.insert(col, Value::DateTime(at));
        }
        if let (Some(at), Some(col)) = (stamps.updated, T::SCHEMA.updated_column) {
            row.insert(col, Value::DateTime(at));
        }
        self.check(&row)?;
        Ok(row)
    }
}

/// Attempts of a write that reads first and loses races to other writers.
pub(crate) const RACE_ATTEMPTS: u32 = 5;

/// The pause before retry `attempt`: 5–10 ms, doubling each time.
pub(crate) fn race_backoff(attempt: u32) -> Duration {
    let base = 5u64 << (attempt.saturating_sub(1)).min(4);
    Duration::from_millis(base + rand::thread_rng().gen_range(0..=base))
}

/// Stamps a write sets.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stamps {
    pub(crate) created: Option<DateTime>,
    pub(crate) updated: Option<DateTime>,
}

/// Moves the written state into the caller's entity after a successful write.
pub(crate) fn commit<T: TableEntity>(entity: &mut T, stamps: Stamps, outcome: WriteOutcome) -> ETag {
    if let Some(at) = stamps.created {
        entity.set_created_at(at);
    }
    if let Some(at) = stamps.updated {
        entity.set_updated_at(at);
    }
    let etag = outcome.etag.unwrap_or_else(|| ETag::new(""));
    entity.set_etag(Some(etag.clone()));
    entity.set_timestamp(outcome.timestamp);
    etag
}
