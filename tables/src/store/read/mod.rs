//! Reading one entity: this module (the read path), `continuation.rs` (the
//! keys of continuation rows and their reads as they arrive),
//! `large_read.rs` (the main row with its continuation rows, blobs and
//! manifests) and `plain_fields.rs` (split values under fields that are not
//! large).
//!
//! The read path: fetch → assemble → verify → decode. A plain row decodes
//! directly; a row of a type with large values is reassembled from its
//! split cells, continuation rows and blobs, each checked against its hash.

pub(crate) mod continuation;
pub(super) mod large_read;
pub(super) mod plain_fields;

use std::collections::BTreeSet;

use super::cache::row_bytes;
use super::Store;
use crate::backend::race::{race_backoff, RACE_ATTEMPTS};
use crate::entity::{Key, LargeForm, TableEntity};
use crate::error::{Error, Result};
use crate::large::cells::inline_name;
use crate::large::entity_rows::{continuation_index, continuation_owner, DAMAGE_CONFIRMATIONS};
use crate::large::plan::large_columns;
use crate::large::stream::SplitAssembler;
use crate::layout::{
    blob_cell, chunks_cell, is_cell_of, parse_split_cell, split_cell, split_parts, BlobRef, SplitCell, SPLIT_OF,
    SPLIT_PARTS,
};
use crate::store::read::continuation::ContinuationRead;
use crate::store::read::plain_fields::take_split_values_of_plain_fields;
use crate::value::{ETag, Row, Value};

/// Whether a row is a continuation row of a large value (never an entity).
pub(crate) fn is_continuation_row(row: &Row) -> bool {
    row.get(SPLIT_OF).is_some()
}

/// Whether a row is never an entity: a continuation row of a large value,
/// or an index row or intent of a secondary index.
pub(crate) fn is_not_an_entity(row: &Row) -> bool {
    is_continuation_row(row) || crate::layout::is_index_row(row)
}

/// The continuation rows of one main row taken so far.
struct TakenRows<'r> {
    main_key: &'r str,
    /// How many the main row declares.
    parts: usize,
    seen: BTreeSet<usize>,
}

impl TakenRows<'_> {
    /// Feeds `row` to the split values when it is one of the main row's
    /// continuation rows not taken yet (anything else is left out). Its
    /// chunk cells of no value being reassembled go to `merged`, for the
    /// checks of the values they belong to.
    fn take(&mut self, mut row: Row, split: &mut SplitAssembler, merged: &mut Row) {
        let index = continuation_index(self.main_key, &row.row_key).filter(|i| *i <= self.parts);
        let owned = continuation_owner(&row) == Some(self.main_key);
        let Some(index) = index.filter(|i| owned && !self.seen.contains(i)) else {
            return;
        };
        self.seen.insert(index);
        split.feed(&mut row);
        for (k, v) in row.properties {
            if matches!(parse_split_cell(&k), Some((_, SplitCell::Chunk(_)))) {
                merged.properties.insert(k, v);
            }
        }
    }

    /// The declared continuation rows not taken, in order.
    fn missing(&self) -> impl Iterator<Item = usize> + '_ {
        (1..=self.parts).filter(|i| !self.seen.contains(i))
    }
}

impl<T> Store<T> {
    /// The main row stored under `key` (a continuation row there is not an
    /// entity: `None`), as the table holds it.
    pub(crate) async fn main_row(&self, key: &Key) -> Result<Option<Row>> {
        Ok(self
            .shared
            .backend
            .get(&self.table, &key.partition_key, &key.row_key)
            .await?
            .filter(|r| r.get(crate::layout::SPLIT_OF).is_none()))
    }
}

impl<T: TableEntity> Store<T> {
    /// Reads one row as an entity together with its version (which entities
    /// without an ETag field cannot carry): from the read cache when it holds
    /// the entity, else from the table, keeping what it read when no write of
    /// the entity ran meanwhile.
    pub(crate) async fn read(&self, key: &Key) -> Result<Option<(T, ETag)>> {
        if let Some(hit) = self.cached_entity(key) {
            return Ok(Some(hit));
        }
        self.read_table(key).await
    }

    /// [`Store::read`] once the read cache was looked up and missed.
    pub(crate) async fn read_table(&self, key: &Key) -> Result<Option<(T, ETag)>> {
        let keeping = self.read_ticket(key);
        self.ensure_created().await?;
        let (row, prefetched) = self.get_main_row(key).await?;
        let Some(row) = row.filter(|row| !is_not_an_entity(row) && self.admits(row)) else {
            return Ok(None);
        };
        let decoded = match self.decode_prefetched(row, keeping.is_some(), prefetched).await {
            Ok(decoded) => decoded,
            Err(e) => {
                if matches!(e, Error::Integrity { .. }) {
                    self.evict(&key.partition_key, &key.row_key);
                }
                return Err(e);
            }
        };
        // The version of the row the value came from (a read that raced a replace ends on a fresher row).
        Ok(decoded.map(|(e, bytes, etag)| {
            let etag = e.etag().cloned().or(etag).unwrap_or_else(|| ETag::new(""));
            if let Some(keeping) = keeping {
                self.keep_read(keeping, key, &e, &etag, bytes);
            }
            (e, etag)
        }))
    }

    /// Decodes a main row: directly for a plain type; for a type with large
    /// values, reassembled and checked, retrying a read that raced a replace
    /// (`None` when the entity was deleted under the read).
    pub(crate) async fn decode_row(&self, row: Row) -> Result<Option<T>> {
        Ok(self.decode_weighed(row, false).await?.map(|(e, _)| e))
    }

    /// [`Store::decode_row`], with the bytes of the decoded cells when `weigh`
    /// (the size the entity counts for in the read cache; 0 otherwise).
    pub(crate) async fn decode_weighed(&self, row: Row, weigh: bool) -> Result<Option<(T, usize)>> {
        Ok(self
            .decode_prefetched(row, weigh, None)
            .await?
            .map(|(e, bytes, _)| (e, bytes)))
    }

    /// [`Store::decode_weighed`], with the reads of the continuation rows
    /// when they were sent together with the main row's read, and the
    /// version of the row the entity was decoded from.
    async fn decode_prefetched(
        &self,
        row: Row,
        weigh: bool,
        prefetched: Option<ContinuationRead<'_>>,
    ) -> Result<Option<(T, usize, Option<ETag>)>> {
        let mut row = row;
        take_split_values_of_plain_fields(T::SCHEMA, &mut row)?;
        if !const { T::SCHEMA.has_large_values() } {
            let bytes = if weigh { row_bytes(&row) } else { 0 };
            let etag = row.etag.clone();
            return T::from_row(row).map(|e| Some((e, bytes, etag)));
        }
        Box::pin(self.decode_assembled(row, weigh, prefetched)).await
    }

    /// [`Store::decode_weighed`] of a type with large values.
    async fn decode_assembled(
        &self,
        row: Row,
        weigh: bool,
        mut prefetched: Option<ContinuationRead<'_>>,
    ) -> Result<Option<(T, usize, Option<ETag>)>> {
        let mut main = row;
        // Re-reads after a failed check: those that found the row at a new
        // version (a replace raced the read), and those that found it unchanged.
        let (mut moved, mut unchanged) = (0u32, 0u32);
        loop {
            // The row is taken apart as it is assembled: its key and version are what a retry needs.
            let (partition_key, row_key, etag) = (main.partition_key.clone(), main.row_key.clone(), main.etag.clone());
            // Rows read beside the main row serve the first attempt only; a retry reads them after it.
            match self.assemble_row(main, prefetched.take()).await {
                Ok(row) => {
                    let bytes = if weigh { row_bytes(&row) } else { 0 };
                    let mut entity = T::from_row(row)?;
                    self.bind_read_files(&mut entity);
                    return Ok(Some((entity, bytes, etag)));
                }
                Err(e @ Error::Integrity { .. }) => {
                    let Some(fresh) = self.shared.backend.get(&self.table, &partition_key, &row_key).await? else {
                        return Ok(None);
                    };
                    if fresh.etag != etag {
                        moved += 1;
                        if moved >= RACE_ATTEMPTS {
                            let key = Key::new(partition_key, row_key);
                            return Err(Error::conflict(&self.table, &key));
                        }
                    } else {
                        // The same version failed its check again: damage, unless a
                        // transaction that has not finished showing its rows is
                        // still under way (an emulator can show some of a
                        // transaction's rows before the rest).
                        unchanged += 1;
                        if unchanged > DAMAGE_CONFIRMATIONS {
                            return Err(e);
                        }
                    }
                    tokio::time::sleep(race_backoff(moved + unchanged)).await;
                    main = fresh;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The row with every large value back in its one-cell form, checked.
    /// Split values are hashed and unpacked as their rows arrive: the main
    /// row's chunks while its continuation rows are read (by `prefetched`,
    /// when those reads went with the main row's read), then each
    /// continuation row as soon as it and the rows before it are back.
    async fn assemble_row(&self, main: Row, prefetched: Option<ContinuationRead<'_>>) -> Result<Row> {
        let parts = split_parts(&main);
        let mut merged = main;
        merged.properties.remove(SPLIT_PARTS);
        let columns = large_columns(T::SCHEMA.columns);
        let mut split = SplitAssembler::default();
        for column in &columns {
            let Some(name) = stored_name(&merged, column.name, column.aliases) else {
                continue;
            };
            if merged.get(&blob_cell(name)).is_none() && merged.get(&chunks_cell(name)).is_some() {
                split.start(name, column.form, &merged);
            }
        }
        let (pk, rk) = (merged.partition_key.clone(), merged.row_key.clone());
        let (pk, rk) = (pk.as_str(), rk.as_str());
        let mut taken = TakenRows {
            main_key: rk,
            parts,
            seen: BTreeSet::new(),
        };
        match (parts, prefetched) {
            (0, _) => split.feed(&mut merged),
            // Rows read beside the main row were a guess from the handle's last sight of the entity.
            (_, Some(reads)) => {
                self.take_continuations(reads, true, pk, &mut taken, &mut split, &mut merged)
                    .await?
            }
            (_, None) => {
                let reads = self.read_continuations(pk, rk, 1..parts + 1, parts);
                self.take_continuations(reads, false, pk, &mut taken, &mut split, &mut merged)
                    .await?
            }
        }
        if let Some(index) = taken.missing().next() {
            return Err(Error::Integrity {
                column: SPLIT_PARTS.into(),
                reason: format!(
                    "continuation row {index} of {parts} is missing; the row may have changed while it was read"
                ),
            });
        }
        self.note_continuations(pk, rk, parts);
        for column in columns {
            let stored_under = stored_name(&merged, column.name, column.aliases);
            let Some(name) = stored_under else { continue };
            let value = self
                .assemble_value(&mut merged, &mut split, column.name, name, column.form)
                .await?;
            if let Some(v) = value {
                merged.insert(inline_name(column.name, column.form), v);
            }
        }
        Ok(merged)
    }

    /// Takes the continuation rows `reads` brings into `taken`, feeding
    /// the main row's chunks once the reads are sent. When the reads were a
    /// guess (`guessed`), a failure is not the read's failure, and a row the
    /// guess did not cover is not missing yet: the rows still missing are
    /// read after it.
    async fn take_continuations(
        &self,
        mut reads: ContinuationRead<'_>,
        guessed: bool,
        partition_key: &str,
        taken: &mut TakenRows<'_>,
        split: &mut SplitAssembler,
        merged: &mut Row,
    ) -> Result<()> {
        reads.send().await;
        // The main row's chunks are unpacked while the continuation rows are read.
        split.feed(merged);
        while let Some(row) = reads.next().await {
            match row {
                Ok(row) => taken.take(row, split, merged),
                Err(_) if guessed => break,
                Err(e) => return Err(e),
            }
        }
        if guessed && taken.missing().next().is_some() {
            let missing: Vec<usize> = taken.missing().collect();
            let (main_key, parts) = (taken.main_key, taken.parts);
            let mut again = self.read_continuations(partition_key, main_key, missing.into_iter(), parts);
            while let Some(row) = again.next().await {
                taken.take(row?, split, merged);
            }
        }
        Ok(())
    }

    /// The one-cell form of the large value stored under `name` (the
    /// column's name or one of its aliases), taking its cells out of `row`.
    async fn assemble_value(
        &self,
        row: &mut Row,
        split: &mut SplitAssembler,
        column: &str,
        name: &str,
        form: LargeForm,
    ) -> Result<Option<Value>> {
        let reference_cell = blob_cell(name);
        if let Some(cell) = row.take(&reference_cell) {
            let Value::String(json) = cell else {
                return Err(Error::Integrity {
                    column: column.to_owned(),
                    reason: format!("`{reference_cell}` is not a blob reference (found {cell:?})"),
                });
            };
            let reference = BlobRef::parse(&reference_cell, &json).map_err(|e| Error::Integrity {
                column: column.to_owned(),
                reason: format!("the blob reference is damaged: {e}"),
            })?;
            return self.blob_value(column, &reference, form).await.map(Some);
        }
        if let Some(assembled) = split.finish(name) {
            let v = assembled.map_err(|e| renamed(e, name, column))?;
            row.properties.retain(|k, _| split_cell(k, name).is_none());
            return Ok(Some(v));
        }
        // Parts of a split value without its chunk count are damage, not an absent value.
        if let Some(cell) = row.properties.keys().find(|k| split_cell(k, name).is_some()) {
            return Err(Error::Integrity {
                column: column.to_owned(),
                reason: format!(
                    "the row holds `{cell}` but no `{}`: the split value is incomplete",
                    chunks_cell(name)
                ),
            });
        }
        // The one-cell form under an alias moves to the column's own name.
        if name != column {
            let inline = inline_name(name, form);
            if let Some(v) = row.take(&inline) {
                return Ok(Some(v));
            }
        }
        Ok(None)
    }
}

/// The name a large value is stored under: the column's own name when any
/// of its forms is present, else the first alias that has one.
fn stored_name<'a>(row: &Row, column: &'a str, aliases: &'a [&'a str]) -> Option<&'a str> {
    std::iter::once(column)
        .chain(aliases.iter().copied())
        .find(|name| has_large_form(row, name))
}

fn has_large_form(row: &Row, name: &str) -> bool {
    row.properties.keys().any(|k| is_cell_of(k, name))
}

/// An integrity error about an alias's cells, named for the field's column.
fn renamed(e: Error, stored: &str, column: &str) -> Error {
    match e {
        Error::Integrity { reason, .. } if stored != column => Error::Integrity {
            column: column.to_owned(),
            reason: format!("{reason} (stored under the old name `{stored}`)"),
        },
        other => other,
    }
}
