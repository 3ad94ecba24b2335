//! Split values reassembled as their rows arrive: each chunk is hashed and
//! (for `gzip`) unpacked when it is fed, so the check and the gunzip overlap
//! the reads of the rows still to come instead of following the last one.
//!
//! The checks and their order are those of reading a split value whole:
//! a damaged manifest, a chunk that is not text or binary, a missing chunk,
//! a length that differs from the manifest, a SHA-256 mismatch, and only
//! then damaged gzip or text — every one an [`Error::Integrity`], found no
//! matter which row a chunk arrives in.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use super::gzip;
use super::sink::StoredSink;
use crate::entity::LargeForm;
use crate::error::{Error, Result};
use crate::layout::{chunks_cell, enc_cell, len_cell, parse_split_cell, sha256_cell, SplitCell};
use crate::value::{hex, Row, Value};

/// The split values of one entity being reassembled.
#[derive(Default)]
pub(crate) struct SplitAssembler {
    values: Vec<Pending>,
}

/// What the manifest on the main row declares.
struct Manifest {
    count: usize,
    encoding: String,
    sha256: String,
    len: Option<i64>,
}

/// One split value: its manifest, the chunks held until their turn, and
/// the bytes (or unpacked bytes) so far.
struct Pending {
    name: String,
    form: LargeForm,
    manifest: Result<Manifest>,
    next: usize,
    held: BTreeMap<usize, Value>,
    hasher: Sha256,
    stored_len: usize,
    /// The first chunk that is neither text nor binary.
    bad_chunk: Option<Error>,
    sink: StoredSink,
}

/// The fewest bytes of one run of chunks hashed on a thread of their own.
const PARALLEL_HASH: usize = 256 * 1024;

/// The stored bytes of a chunk (text or binary; anything else holds none).
fn chunk_bytes(chunk: &Value) -> &[u8] {
    match chunk {
        Value::String(s) => s.as_bytes(),
        Value::Binary(b) => b,
        _ => &[],
    }
}

fn damaged(column: &str, reason: String) -> Error {
    Error::Integrity {
        column: column.to_owned(),
        reason,
    }
}

/// The chunk count of the split value `name` on `row` when its manifest is
/// well formed (count, encoding and hash as [`SplitAssembler`] reads them).
pub(crate) fn well_formed_count(name: &str, row: &Row) -> Option<usize> {
    manifest(name, row).ok().map(|m| m.count)
}

/// The manifest of the split value `name` on `row`, checked as `assemble` checks it.
fn manifest(name: &str, row: &Row) -> Result<Manifest> {
    let count = match row.get(&chunks_cell(name)) {
        Some(Value::Int32(n)) if *n > 0 => *n as usize,
        Some(Value::Int64(n)) if *n > 0 => *n as usize,
        other => {
            return Err(damaged(
                name,
                format!("the chunk count is not a positive number: {other:?}"),
            ))
        }
    };
    let encoding = match row.get(&enc_cell(name)) {
        Some(Value::String(e)) => e.clone(),
        other => {
            return Err(damaged(
                name,
                format!("the encoding cell is missing or not text: {other:?}"),
            ))
        }
    };
    let sha256 = match row.get(&sha256_cell(name)) {
        Some(Value::String(h)) if h.len() == 64 => h.to_ascii_lowercase(),
        other => {
            return Err(damaged(
                name,
                format!("the hash cell is missing or malformed: {other:?}"),
            ))
        }
    };
    let len = match row.get(&len_cell(name)) {
        Some(Value::Int64(n)) => Some(*n),
        Some(Value::Int32(n)) => Some(i64::from(*n)),
        _ => None,
    };
    Ok(Manifest {
        count,
        encoding,
        sha256,
        len,
    })
}

impl Pending {
    fn new(name: &str, form: LargeForm, main: &Row) -> Pending {
        let manifest = manifest(name, main);
        let sink = match &manifest {
            Ok(m) => {
                let stored = m.len.and_then(|n| usize::try_from(n).ok()).unwrap_or(0);
                StoredSink::new(&m.encoding, form, stored, 64 << 20)
            }
            Err(_) => StoredSink::discard(),
        };
        Pending {
            name: name.to_owned(),
            form,
            manifest,
            next: 0,
            held: BTreeMap::new(),
            hasher: Sha256::new(),
            stored_len: 0,
            bad_chunk: None,
            sink,
        }
    }

    /// Consumes the held chunks that are next in order. A run of at least
    /// [`PARALLEL_HASH`] bytes is hashed on a thread of its own while this
    /// one unpacks (or keeps) it: a continuation row's work, which the read
    /// waits for, takes the time of the longer of the two.
    fn drain(&mut self) {
        let count = match &self.manifest {
            Ok(m) if self.bad_chunk.is_none() => m.count,
            _ => return,
        };
        let mut run = Vec::new();
        // Chunks past the count stay held: `finish` reports them.
        while let Some(chunk) = (self.next < count).then(|| self.held.remove(&self.next)).flatten() {
            if !matches!(chunk, Value::String(_) | Value::Binary(_)) {
                self.bad_chunk = Some(damaged(
                    &self.name,
                    format!("chunk {} is not text or binary: {chunk:?}", self.next),
                ));
                break;
            }
            run.push(chunk);
            self.next += 1;
        }
        let total: usize = run.iter().map(|chunk| chunk_bytes(chunk).len()).sum();
        self.stored_len += total;
        let (hasher, sink, run) = (&mut self.hasher, &mut self.sink, &run);
        let keep = |sink: &mut StoredSink| {
            for chunk in run {
                match chunk {
                    Value::String(text) => sink.push_str(text),
                    _ => sink.extend(chunk_bytes(chunk)),
                }
            }
        };
        let hash_into = |hasher: &mut Sha256| run.iter().for_each(|chunk| hasher.update(chunk_bytes(chunk)));
        if total < PARALLEL_HASH || gzip::workers() < 2 {
            hash_into(hasher);
            keep(sink);
            return;
        }
        std::thread::scope(|scope| {
            let mut copy = hasher.clone();
            let hashing = std::thread::Builder::new().spawn_scoped(scope, move || {
                hash_into(&mut copy);
                copy
            });
            keep(sink);
            // A thread that cannot start (or stops) leaves the hash to this one.
            match hashing.map(|thread| thread.join()) {
                Ok(Ok(hashed)) => *hasher = hashed,
                _ => hash_into(hasher),
            }
        });
    }

    fn finish(self) -> Result<Value> {
        let manifest = self.manifest?;
        if let Some(e) = self.bad_chunk {
            return Err(e);
        }
        if self.next < manifest.count {
            return Err(damaged(
                &self.name,
                format!(
                    "chunk {} of {} is missing; the row may have been damaged or changed while it was read",
                    self.next, manifest.count
                ),
            ));
        }
        if let Some(extra) = self.held.keys().find(|i| **i >= manifest.count) {
            return Err(damaged(
                &self.name,
                format!(
                    "the row holds chunk {extra} but the manifest counts {} chunks",
                    manifest.count
                ),
            ));
        }
        if let Some(len) = manifest.len {
            if len < 0 || len as usize != self.stored_len {
                return Err(damaged(
                    &self.name,
                    format!("{} stored bytes, the manifest says {len}", self.stored_len),
                ));
            }
        }
        let actual = hex(&self.hasher.finalize());
        if actual != manifest.sha256 {
            return Err(damaged(
                &self.name,
                format!("SHA-256 mismatch: stored {}, computed {actual}", manifest.sha256),
            ));
        }
        self.sink
            .finish(&self.name, self.stored_len, &manifest.encoding, self.form)
    }
}

impl SplitAssembler {
    /// Starts reassembling the split value stored under `name`, whose
    /// manifest is on `main` (a damaged manifest is reported by [`SplitAssembler::finish`]).
    pub(crate) fn start(&mut self, name: &str, form: LargeForm, main: &Row) {
        self.values.push(Pending::new(name, form, main));
    }

    /// Takes the chunk cells of the values being reassembled out of `row`
    /// (the main row or a continuation row, in any order) and consumes
    /// those whose turn has come.
    pub(crate) fn feed(&mut self, row: &mut Row) {
        if self.values.is_empty() {
            return;
        }
        let mut taken: Vec<(usize, usize, String)> = Vec::new();
        for key in row.properties.keys() {
            if let Some((name, SplitCell::Chunk(index))) = parse_split_cell(key) {
                if let Some(at) = self.values.iter().position(|v| v.name == name) {
                    taken.push((at, index, key.to_string()));
                }
            }
        }
        for (at, index, key) in taken {
            if let Some(chunk) = row.take(&key) {
                self.values[at].held.insert(index, chunk);
            }
        }
        for value in &mut self.values {
            value.drain();
        }
    }

    /// The one-cell form of the value stored under `name`, checked; `None`
    /// when no value of that name was started.
    pub(crate) fn finish(&mut self, name: &str) -> Option<Result<Value>> {
        let at = self.values.iter().position(|v| v.name == name)?;
        Some(self.values.swap_remove(at).finish())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entity::LargeEncoding;
    use crate::large::cells::MAX_INFLATED_VALUE_BYTES;
    use crate::large::cells::{chunks, manifest as manifest_cells, stored_bytes};
    use crate::layout::chunk_cell;
    use crate::value::sha256_hex;
    use std::io::Write;

    /// A split value's cells: the manifest and chunks on one row.
    fn split(text: &str, encoding: LargeEncoding) -> Row {
        let value = Value::String(text.to_owned());
        let stored = stored_bytes(&value, encoding);
        let parts = chunks(&value, &stored, encoding);
        let mut row = Row::new("p", "r");
        for (k, v) in manifest_cells("Body", parts.len(), stored.len(), &sha256_hex(&stored), encoding) {
            row.insert(k, v);
        }
        for (i, c) in parts.into_iter().enumerate() {
            row.insert(chunk_cell("Body", i), c);
        }
        row
    }

    /// Reassembles `row` by streaming, with its chunks spread over rows as `spread` says.
    fn streamed(row: &Row, spread: &[Vec<usize>]) -> Result<Value> {
        let mut main = row.clone();
        let mut rows: Vec<Row> = spread.iter().map(|_| Row::new("p", "r~0001")).collect();
        for (r, indexes) in spread.iter().enumerate() {
            for i in indexes {
                if let Some(v) = main.take(&chunk_cell("Body", *i)) {
                    rows[r].insert(chunk_cell("Body", *i), v);
                }
            }
        }
        let mut assembler = SplitAssembler::default();
        assembler.start("Body", LargeForm::Text, &main);
        assembler.feed(&mut main);
        for mut r in rows {
            assembler.feed(&mut r);
        }
        assembler.finish("Body").expect("started")
    }

    /// Letters that pack to about 60% (so a gzip value still takes several chunks).
    fn text(n: usize) -> String {
        let mut state: u64 = 0x2545_F491_4F6C_DD1D;
        (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                char::from(b'a' + (state % 26) as u8)
            })
            .collect()
    }

    #[test]
    fn chunks_in_any_row_and_any_order_reassemble_as_assemble_does() {
        for encoding in [LargeEncoding::Text, LargeEncoding::Gzip] {
            let body = text(300_000);
            let row = split(&body, encoding);
            let count = match row.get("Body__chunks") {
                Some(Value::Int32(n)) => *n as usize,
                _ => panic!("no count"),
            };
            assert!(count >= 3, "{count}");
            let expected = Value::String(body);
            let later: Vec<usize> = (1..count).collect();
            let reversed: Vec<usize> = (0..count).rev().collect();
            for spread in [
                vec![],
                vec![later.clone()],
                vec![vec![count - 1], vec![0]],
                vec![reversed],
            ] {
                assert_eq!(streamed(&row, &spread).unwrap(), expected, "{encoding:?} {spread:?}");
            }
        }
    }

    #[test]
    fn damage_found_while_streaming_is_integrity_in_the_order_of_the_checks() {
        let body = text(450_000);
        let row = split(&body, LargeEncoding::Gzip);
        // A flipped byte in the gzip stream: the hash says so, before the gzip does.
        let mut flipped = row.clone();
        if let Some(Value::Binary(b)) = flipped.properties.get_mut("Body__c1") {
            b[10] ^= 0x55;
        }
        let mut missing = row.clone();
        missing.take("Body__c1");
        let mut truncated = row.clone();
        if let Some(Value::Binary(b)) = truncated.properties.get_mut("Body__c2") {
            b.truncate(b.len() / 2);
        }
        let mut wrong = row.clone();
        wrong.insert("Body__c0", Value::Int32(1));
        let mut count = row.clone();
        count.insert("Body__chunks", Value::Int32(0));
        for (what, damaged_row, says) in [
            ("flipped", flipped, "SHA-256 mismatch"),
            ("missing", missing, "chunk 1 of"),
            ("truncated", truncated, "stored bytes, the manifest says"),
            ("wrong type", wrong, "chunk 0 is not text or binary"),
            ("count", count, "the chunk count is not a positive number"),
        ] {
            for spread in [vec![], vec![vec![1, 2]], vec![vec![3], vec![2, 1]]] {
                let err = streamed(&damaged_row, &spread).unwrap_err();
                assert!(
                    matches!(&err, Error::Integrity { column, .. } if column == "Body"),
                    "{what}: {err}"
                );
                assert!(err.to_string().contains(says), "{what} {spread:?}: {err}");
            }
        }
    }

    #[test]
    fn gzip_whose_hash_matches_but_does_not_unpack_is_integrity() {
        // A consistent manifest over bytes that are not a whole gzip stream.
        let packed = stored_bytes(&Value::String(text(100_000)), LargeEncoding::Gzip);
        for bytes in [packed[..packed.len() - 3].to_vec(), b"not gzip at all".to_vec()] {
            let mut row = Row::new("p", "r");
            for (k, v) in manifest_cells("Body", 1, bytes.len(), &sha256_hex(&bytes), LargeEncoding::Gzip) {
                row.insert(k, v);
            }
            row.insert("Body__c0", Value::Binary(bytes));
            let err = streamed(&row, &[]).unwrap_err();
            assert!(err.to_string().contains("gzip data is damaged"), "{err}");
        }
    }

    #[test]
    fn gzip_that_unpacks_past_the_bound_stops_at_the_bound() {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..=(MAX_INFLATED_VALUE_BYTES >> 20) {
            enc.write_all(&zeros).unwrap();
        }
        let packed = enc.finish().unwrap();
        let mut row = Row::new("p", "r");
        for (k, v) in manifest_cells("Body", 1, packed.len(), &sha256_hex(&packed), LargeEncoding::Gzip) {
            row.insert(k, v);
        }
        row.insert("Body__c0", Value::Binary(packed));
        let err = streamed(&row, &[]).unwrap_err();
        assert!(err.to_string().contains("more than 268435456 bytes"), "{err}");
    }

    #[test]
    fn a_chunk_count_that_differs_from_the_chunks_held_is_integrity() {
        for encoding in [LargeEncoding::Text, LargeEncoding::Gzip] {
            let row = split(&text(300_000), encoding);
            let count = match row.get("Body__chunks") {
                Some(Value::Int32(n)) => *n,
                _ => panic!("no count"),
            };
            // A count smaller than the chunks held: the value would read back whole, and must not.
            let mut fewer = row.clone();
            fewer.insert("Body__chunks", Value::Int32(count - 1));
            let err = streamed(&fewer, &[vec![1], vec![2]]).unwrap_err();
            assert!(
                matches!(&err, Error::Integrity { reason, .. } if reason.contains("manifest counts")),
                "{err}"
            );
            // A count larger than the chunks held.
            let mut more = row.clone();
            more.insert("Body__chunks", Value::Int32(count + 1));
            let err = streamed(&more, &[]).unwrap_err();
            assert!(
                matches!(&err, Error::Integrity { reason, .. } if reason.contains("is missing")),
                "{err}"
            );
            // One chunk too many, on a continuation row.
            let mut extra = row.clone();
            extra.insert(chunk_cell("Body", count as usize), Value::String("x".into()));
            let err = streamed(&extra, &[vec![count as usize]]).unwrap_err();
            assert!(matches!(&err, Error::Integrity { .. }), "{err}");
        }
    }
}
