//! One logical entity read without its type: the main row, its
//! continuation rows and its blobs, reassembled and checked with the
//! reader's own assembler, every piece of damage named.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::entity::LargeForm;
use crate::error::{Error, Result};
use crate::large::cells::value_from_stored;
use crate::large::entity_rows::continuation_index;
use crate::large::gather::Gathered;
use crate::large::stream::{well_formed_count, SplitAssembler};
use crate::layout::{
    enc_cell, is_blob_cell, len_cell, parse_split_cell, sha256_cell, split_cell, split_parts, BlobRef, SplitCell,
    BLOB_SUFFIX, GZIP_SUFFIX, JSON_SUFFIX, RESERVED_SYSTEM_COLUMNS, SPLIT_OF, TYPE_NAME,
};
use crate::value::{Row, Value};

/// Where a large value is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// Split cells (`{Col}__c0..`) all on the main row.
    Split,
    /// Split cells of which some are on continuation rows (`{RowKey}~0001..`).
    Continuation,
    /// A blob named by its hash, referenced by `{Col}__blob` (a large value or a file).
    Blob,
}

/// One large value of an entity, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LargeValue {
    /// The column (the cells are `{column}__…`).
    pub column: String,
    /// Where it is stored.
    pub tier: Tier,
    /// The stored encoding (`text`, `gzip`, `binary`, `utf16le`; none for a file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding: Option<String>,
    /// Stored bytes (what the hash covers).
    pub stored_bytes: u64,
    /// SHA-256 of the stored bytes, lower-case hex.
    pub sha256: String,
}

/// One piece of damage to a large value or the rows that hold it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Damage {
    /// The manifest (`__chunks`, `__enc`, `__sha256`, `__len`) is missing a cell or holds a bad one.
    MalformedManifest {
        /// The column.
        column: String,
        /// What is wrong.
        reason: String,
    },
    /// A chunk the manifest counts is on no row.
    MissingChunk {
        /// The column.
        column: String,
        /// The chunk's index.
        index: usize,
    },
    /// A chunk past the count the manifest gives.
    ExtraChunk {
        /// The column.
        column: String,
        /// The chunk's index.
        index: usize,
    },
    /// A continuation row the main row declares (`_SplitParts`) is missing.
    MissingContinuationRow {
        /// Its index (1-based).
        index: usize,
    },
    /// The reassembled value does not match its manifest (length, SHA-256, encoding).
    ChangedValue {
        /// The column.
        column: String,
        /// What differs.
        reason: String,
    },
    /// The blob reference is not a readable reference.
    MalformedReference {
        /// The column.
        column: String,
        /// What is wrong.
        reason: String,
    },
    /// The referenced blob does not exist.
    DanglingBlob {
        /// The column.
        column: String,
        /// The blob's path.
        path: String,
    },
    /// The referenced blob's bytes differ from the reference (length or SHA-256).
    ChangedBlob {
        /// The column.
        column: String,
        /// The blob's path.
        path: String,
    },
}

/// A blob an entity references, read and checked.
#[derive(Debug, Clone)]
pub struct EntityBlob {
    /// The column whose `__blob` cell references it.
    pub column: String,
    /// The reference.
    pub reference: BlobRef,
    /// The stored bytes, when they were read.
    pub bytes: Option<Vec<u8>>,
}

/// An entity read without its type: every cell as stored, except that
/// each split value is back in its one-cell form under its column
/// (a string, or bytes when its stored form is not text) and the layout's
/// own columns (`_SplitParts`) are gone. Blob references stay as they are
/// (`{Col}__blob`), their blobs in [`LogicalEntity::blobs`].
#[derive(Debug, Clone)]
pub struct LogicalEntity {
    /// The logical row, with the main row's ETag and Timestamp.
    pub row: Row,
    /// The entity's large values, by column.
    pub large: Vec<LargeValue>,
    /// The blobs the entity references.
    pub blobs: Vec<EntityBlob>,
    /// The rows as stored: the main row first, then its continuation rows
    /// (and, from [`Admin::get`](crate::admin::Admin::get), the rows of its
    /// secondary indexes and intents after them).
    pub raw: Vec<Row>,
}

/// An entity as assembled, damaged or not.
#[derive(Debug)]
pub(crate) struct Assembled {
    pub(crate) entity: LogicalEntity,
    pub(crate) damage: Vec<Damage>,
}

/// The form a split value is read in, by its stored encoding: `binary` is
/// bytes, `text` and `utf16le` are text, `gzip` is read as bytes and shown
/// as text when they are UTF-8.
fn form_of(encoding: Option<&str>) -> LargeForm {
    match encoding {
        Some("text" | "utf16le") => LargeForm::Text,
        _ => LargeForm::Bytes,
    }
}

/// Bytes that are UTF-8 become text (a `gzip` or blob value of a string).
fn text_if_utf8(value: Value) -> Value {
    match value {
        Value::Binary(bytes) => match String::from_utf8(bytes) {
            Ok(text) => Value::String(text),
            Err(e) => Value::Binary(e.into_bytes()),
        },
        other => other,
    }
}

/// Removes the system columns the layout reserves for its own bookkeeping
/// (`_SplitParts`, and any other [`RESERVED_SYSTEM_COLUMNS`] entry but
/// `_TypeName`, which names a union row's variant and travels with it): a
/// logical entity carries none, a writer sets its own.
fn drop_layout_columns(row: &mut Row) {
    for name in RESERVED_SYSTEM_COLUMNS.iter().filter(|c| **c != TYPE_NAME) {
        row.properties.remove(name);
    }
}

/// Reassembles one entity from its main row and the continuation rows read
/// with it (any order; rows that are not its own are ignored). Blobs are
/// not read here.
pub(crate) fn assemble(main: Row, continuations: Vec<Row>) -> Assembled {
    assemble_with(main, continuations, true)
}

/// [`assemble`], keeping the raw rows in the entity only when `keep_raw`
/// (a copy of every cell: only what shows them needs it).
pub(crate) fn assemble_with(mut main: Row, continuations: Vec<Row>, keep_raw: bool) -> Assembled {
    let parts = split_parts(&main);
    // A row with no suffixed cell holds no large value: it is its own logical entity.
    if parts == 0 && !main.properties.keys().any(|k| k.contains("__")) {
        let raw = if keep_raw { vec![main.clone()] } else { Vec::new() };
        drop_layout_columns(&mut main);
        return Assembled {
            entity: LogicalEntity {
                row: main,
                large: Vec::new(),
                blobs: Vec::new(),
                raw,
            },
            damage: Vec::new(),
        };
    }
    let mut damage = Vec::new();
    let mut own: BTreeMap<usize, Row> = BTreeMap::new();
    for row in continuations {
        let index = continuation_index(&main.row_key, &row.row_key).filter(|i| *i <= parts);
        let owned = row.get(SPLIT_OF).and_then(Value::as_str) == Some(main.row_key.as_str());
        if let (Some(index), true) = (index, owned) {
            own.insert(index, row);
        }
    }
    for index in (1..=parts).filter(|i| !own.contains_key(i)) {
        damage.push(Damage::MissingContinuationRow { index });
    }
    let raw: Vec<Row> = match keep_raw {
        true => std::iter::once(main.clone()).chain(own.values().cloned()).collect(),
        false => Vec::new(),
    };
    let mut row = main;
    drop_layout_columns(&mut row);
    // Every split value: its chunk indexes on the main row and on continuation rows.
    let mut chunks: BTreeMap<String, (BTreeSet<usize>, bool)> = BTreeMap::new();
    for (on_continuation, r) in std::iter::once((false, &row)).chain(own.values().map(|r| (true, r))) {
        for key in r.properties.keys() {
            if let Some((name, cell)) = parse_split_cell(key) {
                let entry = chunks.entry(name.to_owned()).or_default();
                if let SplitCell::Chunk(i) = cell {
                    entry.0.insert(i);
                    entry.1 |= on_continuation;
                }
            }
        }
    }
    let mut large = Vec::new();
    let mut assembler = SplitAssembler::default();
    let mut started = Vec::new();
    for (name, (indexes, on_continuation)) in &chunks {
        let Some(count) = well_formed_count(name, &row) else {
            damage.push(Damage::MalformedManifest {
                column: name.clone(),
                reason: manifest_reason(name, &row),
            });
            continue;
        };
        let missing: Vec<usize> = (0..count).filter(|i| !indexes.contains(i)).collect();
        let extra: Vec<usize> = indexes.iter().copied().filter(|i| *i >= count).collect();
        let whole = missing.is_empty() && extra.is_empty();
        for index in missing {
            // A chunk on a missing continuation row is reported as that row.
            if parts == own.len() {
                damage.push(Damage::MissingChunk {
                    column: name.clone(),
                    index,
                });
            }
        }
        for index in extra {
            damage.push(Damage::ExtraChunk {
                column: name.clone(),
                index,
            });
        }
        let encoding = row.get(&enc_cell(name)).and_then(Value::as_str).map(str::to_owned);
        large.push(LargeValue {
            column: name.clone(),
            tier: if *on_continuation {
                Tier::Continuation
            } else {
                Tier::Split
            },
            stored_bytes: match row.get(&len_cell(name)) {
                Some(Value::Int64(n)) => u64::try_from(*n).unwrap_or(0),
                Some(Value::Int32(n)) => u64::try_from(*n).unwrap_or(0),
                _ => 0,
            },
            sha256: row
                .get(&sha256_cell(name))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_ascii_lowercase(),
            encoding: encoding.clone(),
        });
        if whole
            && damage
                .iter()
                .all(|d| !matches!(d, Damage::MissingContinuationRow { .. }))
        {
            assembler.start(name, form_of(encoding.as_deref()), &row);
            started.push((name.clone(), encoding.as_deref() == Some("gzip")));
        }
    }
    assembler.feed(&mut row);
    for mut r in own.into_values() {
        assembler.feed(&mut r);
    }
    for (name, gzip) in started {
        match assembler.finish(&name) {
            Some(Ok(value)) => {
                row.insert(name.as_str(), if gzip { text_if_utf8(value) } else { value });
            }
            Some(Err(e)) => damage.push(Damage::ChangedValue {
                column: name.clone(),
                reason: reason_of(e),
            }),
            None => {}
        }
    }
    // The split cells left (of damaged values) are dropped: the value is not whole.
    row.properties
        .retain(|k, _| !chunks.keys().any(|name| split_cell(k, name).is_some()));
    let mut blobs = Vec::new();
    for (cell, value) in row.properties.iter() {
        if !is_blob_cell(cell) {
            continue;
        }
        let column = cell[..cell.len() - BLOB_SUFFIX.len()].to_owned();
        let reference = match value.as_str().map(|json| BlobRef::parse(cell, json)) {
            Some(Ok(r)) => r,
            Some(Err(e)) => {
                damage.push(Damage::MalformedReference {
                    column,
                    reason: reason_of(e),
                });
                continue;
            }
            None => {
                damage.push(Damage::MalformedReference {
                    column,
                    reason: format!("`{cell}` is not text: {value:?}"),
                });
                continue;
            }
        };
        large.push(LargeValue {
            column: column.clone(),
            tier: Tier::Blob,
            encoding: reference.encoding.clone(),
            stored_bytes: reference.length,
            sha256: reference.sha256.clone(),
        });
        blobs.push(EntityBlob {
            column,
            reference,
            bytes: None,
        });
    }
    Assembled {
        entity: LogicalEntity { row, large, blobs, raw },
        damage,
    }
}

/// Why the manifest of `name` is not well formed, in the assembler's words.
fn manifest_reason(name: &str, row: &Row) -> String {
    let mut assembler = SplitAssembler::default();
    assembler.start(name, LargeForm::Bytes, row);
    match assembler.finish(name) {
        Some(Err(e)) => reason_of(e),
        _ => "the manifest is incomplete".into(),
    }
}

fn reason_of(e: Error) -> String {
    match e {
        Error::Integrity { reason, .. } => reason,
        other => other.to_string(),
    }
}

impl LogicalEntity {
    /// The one-cell value of each blob the entity references, decoded by its
    /// encoding (text when its bytes are UTF-8), for blobs read with their bytes.
    pub fn blob_values(&self) -> Vec<(String, Result<Value>)> {
        self.blobs
            .iter()
            .filter_map(|b| {
                let bytes = b.bytes.clone()?;
                let encoding = b.reference.encoding.as_deref().unwrap_or("binary");
                let value = value_from_stored(&b.column, Gathered::Bytes(bytes), encoding, LargeForm::Bytes);
                Some((b.column.clone(), value.map(text_if_utf8)))
            })
            .collect()
    }
}

impl LogicalEntity {
    /// The values of the entity's JSON cells (`{Col}__Json`, and
    /// `{Col}__GZip`, unpacked), parsed, by column.
    pub fn json_values(&self) -> Vec<(String, Result<serde_json::Value>)> {
        let mut out = Vec::new();
        for (cell, value) in self.row.properties.iter() {
            let Some(column) = cell
                .strip_suffix(JSON_SUFFIX)
                .or_else(|| cell.strip_suffix(GZIP_SUFFIX))
            else {
                continue;
            };
            let mut one = Row::new("", "");
            one.insert(cell.to_string(), value.clone());
            out.push((column.to_owned(), crate::codec::decode_json(&mut one, column)));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entity::LargeEncoding;
    use crate::large::cells::{chunks, manifest, stored_bytes};
    use crate::layout::{chunk_cell, continuation_key, SPLIT_INDEX, SPLIT_PARTS};
    use crate::value::sha256_hex;

    /// A main row holding `text` split under `Body`, chunks from `on_main` on, the rest on row 1.
    fn split(text: &str, encoding: LargeEncoding, on_continuation: bool) -> (Row, Vec<Row>) {
        let value = Value::String(text.to_owned());
        let stored = stored_bytes(&value, encoding);
        let parts = chunks(&value, &stored, encoding);
        let mut main = Row::new("p", "r");
        main.insert("Title", Value::String("t".into()));
        for (k, v) in manifest("Body", parts.len(), stored.len(), &sha256_hex(&stored), encoding) {
            main.insert(k, v);
        }
        let mut cont = Row::new("p", continuation_key("r", 1));
        cont.insert(SPLIT_OF, Value::String("r".into()));
        cont.insert(SPLIT_INDEX, Value::Int32(1));
        for (i, c) in parts.into_iter().enumerate() {
            match on_continuation && i > 0 {
                true => cont.insert(chunk_cell("Body", i), c),
                false => main.insert(chunk_cell("Body", i), c),
            };
        }
        if on_continuation {
            main.insert(SPLIT_PARTS, Value::Int32(1));
            (main, vec![cont])
        } else {
            (main, Vec::new())
        }
    }

    fn text(n: usize) -> String {
        (0..n).map(|i| char::from(b'a' + (i * 7 % 26) as u8)).collect()
    }

    #[test]
    fn split_values_come_back_whole_with_their_tier() {
        let body = text(100_000);
        for (encoding, cont) in [
            (LargeEncoding::Text, false),
            (LargeEncoding::Text, true),
            (LargeEncoding::Gzip, false),
            (LargeEncoding::Binary, true),
        ] {
            let (main, rows) = split(&body, encoding, cont);
            let a = assemble(main, rows);
            assert!(a.damage.is_empty(), "{encoding:?}: {:?}", a.damage);
            let expected = match encoding {
                LargeEncoding::Binary => Value::Binary(body.clone().into_bytes()),
                _ => Value::String(body.clone()),
            };
            assert_eq!(a.entity.row.get("Body"), Some(&expected), "{encoding:?}");
            assert_eq!(a.entity.row.properties.len(), 2, "only Title and Body stay");
            let tier = if cont { Tier::Continuation } else { Tier::Split };
            assert_eq!(a.entity.large[0].tier, tier);
        }
    }

    #[test]
    fn each_kind_of_damage_is_named() {
        let body = text(100_000);
        let (main, rows) = split(&body, LargeEncoding::Text, true);
        let a = assemble(main.clone(), Vec::new());
        assert_eq!(a.damage, vec![Damage::MissingContinuationRow { index: 1 }]);
        let mut no_chunk = main.clone();
        no_chunk.take("Body__c0");
        let a = assemble(no_chunk, rows.clone());
        assert!(
            matches!(&a.damage[..], [Damage::MissingChunk { index: 0, .. }]),
            "{:?}",
            a.damage
        );
        let mut extra = main.clone();
        extra.insert("Body__c9", Value::String("x".into()));
        let a = assemble(extra, rows.clone());
        assert!(
            matches!(&a.damage[..], [Damage::ExtraChunk { index: 9, .. }]),
            "{:?}",
            a.damage
        );
        let mut bad = main.clone();
        bad.insert("Body__enc", Value::Int32(3));
        let a = assemble(bad, rows.clone());
        assert!(
            matches!(&a.damage[..], [Damage::MalformedManifest { .. }]),
            "{:?}",
            a.damage
        );
        let mut changed = main.clone();
        changed.insert("Body__c0", Value::String(text(32_000).replace('a', "b")));
        let a = assemble(changed, rows.clone());
        assert!(matches!(&a.damage[..], [Damage::ChangedValue { .. }]), "{:?}", a.damage);
        let mut reference = main;
        reference.insert("File__blob", Value::String("{}".into()));
        let a = assemble(reference, rows);
        assert!(
            matches!(&a.damage[..], [Damage::MalformedReference { .. }]),
            "{:?}",
            a.damage
        );
    }
}
