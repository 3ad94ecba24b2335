//! The one-cell form of large values, and their split form: chunk cells
//! `{Col}__c0..cN` with the manifest `__chunks`, `__sha256`, `__enc`, `__len`.

use std::io::Write;

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::gather::Gathered;
use super::gzip::{self, GunzipFailure};
use crate::entity::{LargeEncoding, LargeForm};
use crate::error::{Error, Result};
use crate::layout::{chunks_cell, enc_cell, json_cell, len_cell, sha256_cell};
use crate::service::MAX_CELL_BYTES;
use crate::value::{hex, sha256_hex, utf16_len, Row, Value};

/// UTF-16 units in one text chunk.
pub(crate) const TEXT_CHUNK_UNITS: usize = 32_000;
/// Bytes in one binary chunk (at most 64 KiB).
pub(crate) const BINARY_CHUNK_BYTES: usize = 64_000;
/// The most bytes a `gzip` large value may unpack to (256 MiB). The manifest
/// and a blob reference give only the stored (compressed) length, so the
/// unpacked size has this fixed bound; beyond it a read fails with
/// [`Error::Integrity`] instead of filling memory.
pub(crate) const MAX_INFLATED_VALUE_BYTES: usize = 256 << 20;

/// Writes a large string field as one full-size cell; the store plans it.
pub fn encode_large_text(value: Option<&str>, column: &str, row: &mut Row) {
    if let Some(v) = value {
        row.insert(column, Value::String(v.to_owned()));
    }
}

/// Writes a large byte field as one full-size cell; the store plans it.
pub fn encode_large_bytes(value: Option<&[u8]>, column: &str, row: &mut Row) {
    if let Some(v) = value {
        row.insert(column, Value::Binary(v.to_vec()));
    }
}

/// Writes a large JSON-stored field as one full-size `{Col}__Json` cell; the store plans it.
pub fn encode_large_json<T: Serialize + ?Sized>(value: &T, column: &str, row: &mut Row) -> Result<()> {
    let json = serde_json::to_value(value).map_err(|e| Error::InvalidValue {
        column: column.to_owned(),
        reason: format!("cannot be written as JSON: {e}"),
    })?;
    encode_large_json_value(json, column, row);
    Ok(())
}

/// [`encode_large_json`] of a value already turned into JSON.
pub fn encode_large_json_value(json: serde_json::Value, column: &str, row: &mut Row) {
    if !json.is_null() {
        row.insert(json_cell(column), Value::String(json.to_string()));
    }
}

/// Where a large value's one-cell form lives.
pub(crate) fn inline_name(column: &str, form: LargeForm) -> String {
    match form {
        LargeForm::Json => json_cell(column),
        LargeForm::Text | LargeForm::Bytes => column.to_owned(),
    }
}

/// Whether a one-cell form fits the service's cell limit.
pub(crate) fn fits_one_cell(value: &Value) -> bool {
    match value {
        // Each UTF-16 unit takes 1 to 3 UTF-8 bytes (4 bytes per surrogate pair), so the byte length bounds it.
        Value::String(s) if s.len() * 2 <= MAX_CELL_BYTES => true,
        Value::String(s) if s.len() > MAX_CELL_BYTES / 2 * 3 => false,
        Value::String(s) => utf16_len(s) * 2 <= MAX_CELL_BYTES,
        Value::Binary(b) => b.len() <= MAX_CELL_BYTES,
        _ => true,
    }
}

/// The stored bytes of a value under an encoding (what the hash covers).
#[cfg(test)]
pub(crate) fn stored_bytes(value: &Value, encoding: LargeEncoding) -> Vec<u8> {
    stored_bytes_hashed(value, encoding).0
}

/// The value's own bytes.
fn raw_bytes(value: &Value) -> &[u8] {
    match value {
        Value::String(s) => s.as_bytes(),
        Value::Binary(b) => b,
        _ => &[],
    }
}

/// Bytes hashed as they are written, in the same pass.
struct Hashing {
    bytes: Vec<u8>,
    hasher: Sha256,
}

impl Write for Hashing {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.hasher.update(buf);
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Bytes taken (or hashed) at a time when one pass hashes while it copies:
/// small enough to stay in cache between the two.
const HASH_BLOCK: usize = 64 * 1024;

/// Values of at least this many bytes are copied on a second core while
/// this one hashes them.
const PARALLEL_COPY: usize = 1 << 20;

/// A copy of `raw` and its hex SHA-256, the copy made on a second thread
/// while this one hashes (the hash takes several times as long as the copy).
fn copy_while_hashing(raw: &[u8]) -> (Vec<u8>, String) {
    // Allocated here, filled there: the buffer comes from (and goes back to) this thread's
    // allocator arena, where the next large buffer of this thread (a read's) finds it again.
    let bytes = Vec::with_capacity(raw.len());
    std::thread::scope(|scope| {
        let copy = std::thread::Builder::new().spawn_scoped(scope, move || {
            let mut bytes = bytes;
            bytes.extend_from_slice(raw);
            bytes
        });
        let sha = sha256_hex(raw);
        let bytes = match copy {
            Ok(copying) => copying.join().unwrap_or_else(|_| raw.to_vec()),
            Err(_) => raw.to_vec(),
        };
        (bytes, sha)
    })
}

/// The stored bytes of a value and their lower-case hex SHA-256, in one
/// pass over the value: gzip output is hashed as the compressor writes it;
/// the bytes of `text` and `binary` are hashed while they are copied (a
/// large value's copy made on another core).
pub(crate) fn stored_bytes_hashed(value: &Value, encoding: LargeEncoding) -> (Vec<u8>, String) {
    let raw = raw_bytes(value);
    let mut out = Hashing {
        bytes: Vec::with_capacity(match encoding {
            LargeEncoding::Gzip => raw.len() / 3 + 64,
            LargeEncoding::Text | LargeEncoding::Binary => raw.len(),
        }),
        hasher: Sha256::new(),
    };
    match encoding {
        LargeEncoding::Gzip => {
            // Large values favour speed: level 1, in pieces on every core. Writing to memory cannot fail.
            let _ = gzip::pack(raw, &mut out);
        }
        LargeEncoding::Text | LargeEncoding::Binary if raw.len() >= PARALLEL_COPY && gzip::workers() > 1 => {
            return copy_while_hashing(raw);
        }
        LargeEncoding::Text | LargeEncoding::Binary => {
            for block in raw.chunks(HASH_BLOCK) {
                let _ = out.write_all(block);
            }
        }
    }
    (out.bytes, hex(&out.hasher.finalize()))
}

/// The [`Error::Integrity`] of `stored_len` bytes of gzip data that did not unpack.
pub(crate) fn gunzip_failure(column: &str, stored_len: usize, failure: GunzipFailure) -> Error {
    let reason = match failure {
        GunzipFailure::Damaged(reason) => format!("the gzip data is damaged: {reason}"),
        GunzipFailure::TooLarge => format!(
            "the {stored_len} bytes of gzip data unpack to more than {MAX_INFLATED_VALUE_BYTES} bytes, the most a large value may hold"
        ),
    };
    Error::Integrity {
        column: column.to_owned(),
        reason,
    }
}

/// The one-cell form of a value from its stored bytes. Damaged data is an
/// [`Error::Integrity`] naming the column: gzip that does not unpack or
/// unpacks past [`MAX_INFLATED_VALUE_BYTES`], `utf16le` of an odd length or
/// with an unpaired surrogate (which a Rust string cannot hold), text that is
/// not UTF-8.
pub(crate) fn value_from_stored(column: &str, stored: Gathered, encoding: &str, form: LargeForm) -> Result<Value> {
    let damaged = |reason: String| Error::Integrity {
        column: column.to_owned(),
        reason,
    };
    let raw = match encoding {
        "gzip" => {
            let stored = stored.into_bytes();
            let raw =
                gzip::unpack(&stored, MAX_INFLATED_VALUE_BYTES).map_err(|e| gunzip_failure(column, stored.len(), e))?;
            Gathered::Bytes(raw)
        }
        "text" | "binary" => stored,
        "utf16le" => {
            let stored = stored.into_bytes();
            if !stored.len().is_multiple_of(2) {
                return Err(damaged(format!(
                    "utf16le data must have an even number of bytes, found {}",
                    stored.len()
                )));
            }
            let units = stored.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]]));
            let mut text = String::with_capacity(stored.len() / 2);
            let mut at = 0;
            for unit in char::decode_utf16(units) {
                match unit {
                    Ok(c) => {
                        text.push(c);
                        at += c.len_utf16();
                    }
                    Err(e) => {
                        return Err(damaged(format!(
                            "the utf16le text holds an unpaired surrogate U+{:04X} at unit {at}, which a Rust String cannot hold",
                            e.unpaired_surrogate()
                        )))
                    }
                }
            }
            Gathered::Text(text)
        }
        other => return Err(damaged(format!("unknown encoding `{other}`"))),
    };
    value_from_raw(column, raw, form)
}

/// The one-cell form of a value from its own (unpacked) bytes: text must be
/// UTF-8 (text gathered as [`Gathered::Text`] was checked on the way).
pub(crate) fn value_from_raw(column: &str, raw: Gathered, form: LargeForm) -> Result<Value> {
    Ok(match (form, raw) {
        (LargeForm::Bytes, raw) => Value::Binary(raw.into_bytes()),
        (LargeForm::Text | LargeForm::Json, Gathered::Text(text)) => Value::String(text),
        (LargeForm::Text | LargeForm::Json, Gathered::Bytes(raw)) => {
            Value::String(String::from_utf8(raw).map_err(|_| Error::Integrity {
                column: column.to_owned(),
                reason: "the text is not UTF-8".into(),
            })?)
        }
    })
}

/// The chunk cells of a value: strings of at most 32,000 UTF-16 units (never
/// inside a surrogate pair) for `text`, binary cells of at most 64,000 bytes otherwise.
pub(crate) fn chunks(value: &Value, stored: &[u8], encoding: LargeEncoding) -> Vec<Value> {
    match (encoding, value) {
        (LargeEncoding::Text, Value::String(s)) => {
            let mut out = Vec::new();
            let (mut start, mut units) = (0, 0);
            for (i, c) in s.char_indices() {
                let w = c.len_utf16();
                if units + w > TEXT_CHUNK_UNITS {
                    out.push(Value::String(s[start..i].to_owned()));
                    start = i;
                    units = 0;
                }
                units += w;
            }
            if start < s.len() || out.is_empty() {
                out.push(Value::String(s[start..].to_owned()));
            }
            out
        }
        _ => {
            let mut out: Vec<Value> = stored
                .chunks(BINARY_CHUNK_BYTES)
                .map(|c| Value::Binary(c.to_vec()))
                .collect();
            if out.is_empty() {
                out.push(Value::Binary(Vec::new()));
            }
            out
        }
    }
}

/// The manifest cells of a split value whose `len` stored bytes hash to `sha256`.
pub(crate) fn manifest(
    column: &str,
    count: usize,
    len: usize,
    sha256: &str,
    encoding: LargeEncoding,
) -> Vec<(String, Value)> {
    vec![
        (chunks_cell(column), Value::Int32(count as i32)),
        (sha256_cell(column), Value::String(sha256.to_owned())),
        (enc_cell(column), Value::String(encoding.name().to_owned())),
        (len_cell(column), Value::Int64(len as i64)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::chunk_cell;
    use flate2::{write::GzEncoder, Compression};

    /// Reassembles a split value from the cells of its rows (merged into one
    /// row), checking the manifest and the hash. Returns the one-cell form.
    fn assemble(column: &str, cells: &Row, form: LargeForm) -> Result<Value> {
        let mut row = cells.clone();
        let mut assembler = crate::large::stream::SplitAssembler::default();
        assembler.start(column, form, &row);
        assembler.feed(&mut row);
        assembler
            .finish(column)
            .unwrap_or_else(|| unreachable!("the value was started"))
    }

    #[test]
    fn stored_bytes_and_their_hash_at_every_size() {
        for n in [0, 5, PARALLEL_COPY - 1, PARALLEL_COPY, 3 * PARALLEL_COPY + 7] {
            let raw: Vec<u8> = (0..n).map(|i| (i * 31 % 253) as u8).collect();
            for value in [
                Value::Binary(raw.clone()),
                Value::String(String::from_utf8_lossy(&raw).into_owned()),
            ] {
                let own = match &value {
                    Value::Binary(b) => b.clone(),
                    Value::String(s) => s.clone().into_bytes(),
                    _ => unreachable!(),
                };
                for encoding in [LargeEncoding::Binary, LargeEncoding::Text] {
                    let (bytes, sha) = stored_bytes_hashed(&value, encoding);
                    assert!(bytes == own, "{n} bytes, {encoding:?}");
                    assert_eq!(sha, sha256_hex(&own), "{n} bytes, {encoding:?}");
                }
                let (packed, sha) = stored_bytes_hashed(&value, LargeEncoding::Gzip);
                assert_eq!(sha, sha256_hex(&packed));
                assert!(
                    super::gzip::unpack(&packed, usize::MAX).unwrap() == own,
                    "{n} bytes gzip"
                );
            }
        }
    }

    #[test]
    fn text_chunks_never_split_a_surrogate_pair() {
        let s: String = std::iter::repeat_n('a', 31_999)
            .chain(std::iter::repeat_n('😀', 3))
            .collect();
        let parts = chunks(&Value::String(s.clone()), s.as_bytes(), LargeEncoding::Text);
        assert_eq!(parts.len(), 2);
        let Value::String(first) = &parts[0] else { panic!() };
        assert_eq!(
            utf16_len(first),
            31_999,
            "the pair that would straddle the boundary moves to the next chunk"
        );
        let joined: String = parts.iter().filter_map(Value::as_str).collect();
        assert_eq!(joined, s);
    }

    #[test]
    fn assemble_checks_count_hash_and_length() {
        let text = "x".repeat(70_000);
        let v = Value::String(text.clone());
        let stored = stored_bytes(&v, LargeEncoding::Gzip);
        let parts = chunks(&v, &stored, LargeEncoding::Gzip);
        let mut row = Row::new("p", "r");
        for (i, c) in parts.iter().enumerate() {
            row.insert(chunk_cell("Body", i), c.clone());
        }
        for (k, v) in manifest(
            "Body",
            parts.len(),
            stored.len(),
            &sha256_hex(&stored),
            LargeEncoding::Gzip,
        ) {
            row.insert(k, v);
        }
        assert_eq!(assemble("Body", &row, LargeForm::Text).unwrap(), Value::String(text));
        let mut flipped = row.clone();
        if let Some(Value::Binary(b)) = flipped.properties.get_mut("Body__c0") {
            let last = b.len() - 1;
            b[last] ^= 1;
        }
        assert!(matches!(
            assemble("Body", &flipped, LargeForm::Text),
            Err(Error::Integrity { .. })
        ));
        let mut missing = row.clone();
        missing.take("Body__c0");
        assert!(matches!(
            assemble("Body", &missing, LargeForm::Text),
            Err(Error::Integrity { .. })
        ));
    }

    /// A split value whose cells and manifest are consistent (the hash matches).
    fn split_row(column: &str, stored: &[u8], encoding: &str) -> Row {
        let mut row = Row::new("p", "r");
        row.insert(format!("{column}__c0"), Value::Binary(stored.to_vec()));
        row.insert(format!("{column}__chunks"), Value::Int32(1));
        row.insert(format!("{column}__sha256"), Value::String(sha256_hex(stored)));
        row.insert(format!("{column}__enc"), Value::String(encoding.to_owned()));
        row.insert(format!("{column}__len"), Value::Int64(stored.len() as i64));
        row
    }

    fn integrity_reason(result: Result<Value>, column: &str) -> String {
        match result {
            Err(Error::Integrity { column: c, reason }) => {
                assert_eq!(c, column);
                reason
            }
            other => panic!("expected Error::Integrity, got {other:?}"),
        }
    }

    #[test]
    fn utf16le_of_an_odd_length_is_an_integrity_error() {
        let stored = [b'a', 0, b'b'];
        let reason = integrity_reason(
            assemble("Body", &split_row("Body", &stored, "utf16le"), LargeForm::Text),
            "Body",
        );
        assert!(reason.contains("even number of bytes, found 3"), "{reason}");
    }

    #[test]
    fn utf16le_with_an_unpaired_surrogate_is_an_integrity_error() {
        for units in [vec![0x61, 0xD800], vec![0xDC00, 0x61], vec![0xD800, 0xD800, 0xDC00]] {
            let stored: Vec<u8> = units.iter().flat_map(|u: &u16| u.to_le_bytes()).collect();
            for form in [LargeForm::Text, LargeForm::Bytes] {
                let reason = integrity_reason(assemble("Body", &split_row("Body", &stored, "utf16le"), form), "Body");
                assert!(reason.contains("unpaired surrogate"), "{reason}");
            }
        }
        let pair: Vec<u8> = "a😀".encode_utf16().flat_map(u16::to_le_bytes).collect();
        assert_eq!(
            assemble("Body", &split_row("Body", &pair, "utf16le"), LargeForm::Text).unwrap(),
            Value::String("a😀".into())
        );
    }

    #[test]
    fn gzip_that_unpacks_past_the_bound_is_an_integrity_error() {
        let mut enc = GzEncoder::new(Vec::new(), Compression::fast());
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..=(MAX_INFLATED_VALUE_BYTES >> 20) {
            enc.write_all(&zeros).unwrap();
        }
        let stored = enc.finish().unwrap();
        let reason = integrity_reason(
            value_from_stored("Body", Gathered::Bytes(stored), "gzip", LargeForm::Bytes),
            "Body",
        );
        assert!(reason.contains("more than 268435456 bytes"), "{reason}");
    }

    #[test]
    fn gzip_within_the_bound_and_damaged_gzip() {
        let stored = stored_bytes(&Value::Binary(vec![7; 100_000]), LargeEncoding::Gzip);
        assert_eq!(
            value_from_stored("Body", Gathered::Bytes(stored.clone()), "gzip", LargeForm::Bytes).unwrap(),
            Value::Binary(vec![7; 100_000])
        );
        let mut damaged = stored;
        let at = damaged.len() - 5;
        damaged[at] ^= 1;
        let reason = integrity_reason(
            value_from_stored("Body", Gathered::Bytes(damaged), "gzip", LargeForm::Bytes),
            "Body",
        );
        assert!(reason.contains("damaged"), "{reason}");
    }

    mod fuzz {
        use super::*;
        use proptest::prelude::*;

        fn config() -> ProptestConfig {
            crate::fuzz::config()
        }

        fn manifest_value() -> impl Strategy<Value = Value> {
            prop_oneof![
                any::<i32>().prop_map(Value::Int32),
                any::<i64>().prop_map(Value::Int64),
                prop_oneof![Just("text"), Just("gzip"), Just("binary"), Just("utf16le"), Just("zip")]
                    .prop_map(|s| Value::String(s.to_owned())),
                "[0-9a-fA-F]{0,70}".prop_map(Value::String),
                any::<String>().prop_map(Value::String),
                proptest::collection::vec(any::<u8>(), 0..64).prop_map(Value::Binary),
                any::<bool>().prop_map(Value::Bool),
            ]
        }

        fn typed(result: Result<Value>) -> std::result::Result<(), TestCaseError> {
            match result {
                Ok(_) => Ok(()),
                Err(Error::Integrity { column, .. }) if column == "Body" => Ok(()),
                Err(other) => Err(TestCaseError::fail(format!("unexpected error: {other:?}"))),
            }
        }

        proptest! {
            #![proptest_config(config())]

            #[test]
            fn random_manifests_give_a_value_or_an_integrity_error(
                cells in proptest::collection::vec(
                    (prop_oneof![Just("chunks"), Just("enc"), Just("sha256"), Just("len"), Just("c0"), Just("c1"), Just("c2")], manifest_value()),
                    0..10,
                ),
                form in prop_oneof![Just(LargeForm::Text), Just(LargeForm::Bytes), Just(LargeForm::Json)],
            ) {
                let mut row = Row::new("p", "r");
                for (name, value) in cells {
                    row.insert(format!("Body__{name}"), value);
                }
                typed(assemble("Body", &row, form))?;
            }

            #[test]
            fn consistent_manifests_over_random_bytes_give_a_value_or_an_integrity_error(
                stored in prop_oneof![
                    proptest::collection::vec(any::<u8>(), 0..200),
                    proptest::collection::vec(any::<u8>(), 0..200).prop_map(|b| stored_bytes(&Value::Binary(b), LargeEncoding::Gzip)),
                    (proptest::collection::vec(any::<u8>(), 1..200), any::<usize>(), 1..=255u8).prop_map(|(b, at, flip)| {
                        let mut g = stored_bytes(&Value::Binary(b), LargeEncoding::Gzip);
                        let i = at % g.len();
                        g[i] ^= flip;
                        g
                    }),
                ],
                encoding in prop_oneof![Just("text"), Just("gzip"), Just("binary"), Just("utf16le")],
                form in prop_oneof![Just(LargeForm::Text), Just(LargeForm::Bytes), Just(LargeForm::Json)],
            ) {
                typed(assemble("Body", &split_row("Body", &stored, encoding), form))?;
            }
        }
    }
}
