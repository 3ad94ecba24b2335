//! Batch writes: every entity goes through the write pipeline's encode and
//! plan steps, and whole entities are packed into entity-group transactions
//! per partition by the one packer.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use crate::backend::pack::{op_weight, pack};
use crate::backend::race::lost_race;
use crate::entity::{Key, TableEntity};
use crate::error::{Error, ErrorKind, KeyKind, Result};
use crate::store::write::{reads_first, Encoded, Stamps, Unit, Verb};
use crate::store::write::{Committed, Write};
use crate::store::Store;
use crate::value::Row;

/// Groups items by partition key, keeping the order in which partitions and
/// items first appear.
pub(crate) fn group_by_partition<I>(items: Vec<(String, I)>) -> Vec<Vec<I>> {
    let mut order: Vec<String> = Vec::new();
    let mut groups: HashMap<String, Vec<I>> = HashMap::new();
    for (pk, item) in items {
        groups
            .entry(pk.clone())
            .or_insert_with(|| {
                order.push(pk);
                Vec::new()
            })
            .push(item);
    }
    order.into_iter().filter_map(|pk| groups.remove(&pk)).collect()
}

impl<T: TableEntity> Store<T> {
    /// Inserts many entities in entity-group transactions: grouped by
    /// partition, at most 100 operations and 4 MiB per transaction, each
    /// transaction atomic. Returns the number of entities written.
    ///
    /// A key that appears twice in `entities` is refused before anything is
    /// written. An existing key fails its transaction with
    /// [`Error::BatchFailed`] (source [`Error::AlreadyExists`]); the
    /// transactions before it stay committed.
    ///
    /// Entities are stamped (created and updated) as [`Store::create`] does;
    /// their ETags are not updated. Batch writes bypass the protected-field
    /// check: use them for imports and migrations, not for user edits.
    pub async fn create_batch(&self, entities: &[T]) -> Result<usize> {
        self.op("create_batch")
            .run(async move { self.write_batch(entities, Verb::Create).await })
            .await
    }

    /// Inserts or replaces many entities in entity-group transactions, packed
    /// as [`Store::create_batch`] packs them. Returns the number of entities
    /// passed. A key that appears twice in `entities` is refused with
    /// [`Error::InvalidKey`] before anything is written, whether or not the
    /// two would have shared a transaction (entities too large to share one
    /// are sent in transactions of their own).
    /// Batch writes bypass the protected-field check.
    pub async fn upsert_batch(&self, entities: &[T]) -> Result<usize> {
        self.op("upsert_batch")
            .run(async move { self.write_batch(entities, Verb::Upsert).await })
            .await
    }

    /// Encodes and plans every entity before anything is sent, then commits
    /// whole entities, packed per partition into transactions.
    async fn write_batch(&self, entities: &[T], verb: Verb) -> Result<usize> {
        crate::telemetry::record_batch_size(entities.len());
        if const { crate::index::any_unique_global(T::INDEXES) } {
            return self.write_reserving(entities, &verb).await;
        }
        let at = crate::store::now();
        let mut encoded = Vec::with_capacity(entities.len());
        for entity in entities {
            encoded.push(self.encode(entity, Stamps::of(&verb, entity, at)).await?);
        }
        // Whether the repeats would share a transaction depends on the
        // entities' sizes: refused here, a repeated key fails the same way always.
        refuse_repeated_keys(&encoded)?;
        self.ensure_created().await?;
        // Only types whose plan depends on the stored row read it (large
        // values); batches do not check protected fields.
        let read = const { T::SCHEMA.has_large_values() || !T::INDEXES.is_empty() } && reads_first::<T>(&verb);
        let mut units: Vec<(String, (usize, Unit))> = Vec::with_capacity(encoded.len());
        for (i, e) in encoded.into_iter().enumerate() {
            let stored = match read {
                true => {
                    let (pk, rk) = (&e.row.partition_key, &e.row.row_key);
                    self.shared.backend.get(&self.table, pk, rk).await?
                }
                false => None,
            };
            let partition_key = e.row.partition_key.clone();
            let unit = self
                .plan_unit(
                    &verb,
                    read,
                    Cow::Owned(e.row),
                    &e.files,
                    stored.as_ref(),
                    &HashSet::new(),
                )
                .map_err(|err| batch_failed(0, entities[i].key(), err))?;
            units.push((partition_key, (i, unit)));
        }
        let mut committed = 0;
        let mut released = Vec::new();
        for group in group_by_partition(units) {
            let ranges = pack(
                group
                    .iter()
                    .map(|(_, u)| (u.ops.len(), u.ops.iter().map(op_weight).sum())),
                self.profile().transaction_body_budget(),
            );
            let mut rest = group.into_iter();
            for range in ranges {
                let mut tx: Vec<(usize, Unit)> = rest.by_ref().take(range.len()).collect();
                for (i, unit) in &mut tx {
                    Box::pin(self.upload_all(std::mem::take(&mut unit.uploads)))
                        .await
                        .map_err(|e| batch_failed(committed, entities[*i].key(), e))?;
                }
                // Which entity each operation belongs to, for the error.
                let mut owners = Vec::new();
                let mut ops = Vec::new();
                let mut books = Vec::with_capacity(tx.len());
                let released_before = released.len();
                let mut index = crate::store::index::IndexPlan::default();
                for (i, unit) in tx {
                    owners.extend(std::iter::repeat_n(i, unit.ops.len()));
                    if !unit.old_refs.is_empty() {
                        released.push((unit.key(), unit.old_refs.clone(), unit.new_refs()));
                    }
                    books.push(i);
                    index.absorb(unit.index);
                    ops.extend(unit.ops);
                }
                let n = books.len();
                let error = match self.commit(Write::new(ops)).await.map(Committed::first) {
                    Ok(_) => {
                        self.intents_written(&index);
                        committed += n;
                        continue;
                    }
                    Err(e) => e,
                };
                // Nothing of this transaction was applied: nothing of it is released.
                released.truncate(released_before);
                let (at_op, source) = match error {
                    Error::Transaction { index, source } => (index, *source),
                    other => (0, other),
                };
                let failed = entities[owners.get(at_op).copied().unwrap_or(books[0])].key();
                // A unique index row taken by another entity fails the batch; a stale one was removed.
                let stale = source.kind() == ErrorKind::AlreadyExists
                    && match self.unique_conflict(&index.claims).await {
                        Ok(stale) => stale,
                        Err(e) => return Err(batch_failed(committed, failed, e)),
                    };
                if (read && lost_race(source.kind())) || stale {
                    // An upsert planned on a version that moved: the transaction applied
                    // nothing; write its entities one by one, each retrying as a single write does.
                    for i in books {
                        let entity = &entities[i];
                        let again = self.encode(entity, Stamps::of(&verb, entity, at)).await;
                        let written = match again {
                            Ok(e) => self.write_encoded(e, &verb).await.map(|_| ()),
                            Err(e) => Err(e),
                        };
                        written.map_err(|e| batch_failed(committed, entity.key(), e))?;
                        committed += 1;
                    }
                    continue;
                }
                // A transaction in doubt was settled by the send (or is `OutcomeUnknown`).
                let source = source.about_entity(&self.table, &failed.partition_key, &failed.row_key);
                return Err(batch_failed(committed, failed, source));
            }
        }
        // Blobs the replaced rows no longer reference, once every transaction committed.
        for (key, old, new) in released {
            Box::pin(self.release_blobs(&key, &old, &new)).await;
        }
        Ok(entities.len())
    }
}

pub(crate) fn batch_failed(committed: usize, key: Key, source: Error) -> Error {
    Error::BatchFailed {
        committed,
        partition_key: key.partition_key,
        row_key: key.row_key,
        source: Box::new(source),
    }
}

/// Refuses a batch that names one entity twice: nothing is written.
fn refuse_repeated_keys(encoded: &[Encoded]) -> Result<()> {
    refuse_repeated_rows(encoded.iter().map(|e| &e.row))
}

/// Refuses a batch of inserts that writes one row twice: nothing is written.
pub(crate) fn refuse_repeated_rows<'a>(rows: impl Iterator<Item = &'a Row>) -> Result<()> {
    let mut seen = HashMap::new();
    for (i, row) in rows.enumerate() {
        if let Some(first) = seen.insert((row.partition_key.as_str(), row.row_key.as_str()), i) {
            return Err(Error::InvalidKey {
                which: KeyKind::RowKey,
                key: row.row_key.clone(),
                reason: format!(
                    "entities {first} and {i} of the batch have the same keys (PartitionKey `{}`); nothing was written",
                    row.partition_key
                ),
            });
        }
    }
    Ok(())
}
