//! The one-cell form of large values, and their split form: chunk cells
//! `{Col}__c0..cN` with the manifest `__chunks`, `__sha256`, `__enc`, `__len`.

use std::io::{Read, Write};

use flate2::{read::GzDecoder, write::GzEncoder, Compression};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::codec::{JSON_SUFFIX, MAX_CELL_BYTES};
use crate::entity::{LargeEncoding, LargeForm};
use crate::error::{Error, Result};
use crate::value::{utf16_len, Row, Value};

/// UTF-16 units in one text chunk.
pub const TEXT_CHUNK_UNITS: usize = 32_000;
/// Bytes in one binary chunk (at most 64 KiB).
pub const BINARY_CHUNK_BYTES: usize = 64_000;

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
    if !json.is_null() {
        row.insert(format!("{column}{JSON_SUFFIX}"), Value::String(json.to_string()));
    }
    Ok(())
}

/// Where a large value's one-cell form lives.
pub(crate) fn inline_name(column: &str, form: LargeForm) -> String {
    match form {
        LargeForm::Json => format!("{column}{JSON_SUFFIX}"),
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

/// Lower-case hex SHA-256.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The stored bytes of a value under an encoding (what the hash covers).
pub(crate) fn stored_bytes(value: &Value, encoding: LargeEncoding) -> Vec<u8> {
    let raw: &[u8] = match value {
        Value::String(s) => s.as_bytes(),
        Value::Binary(b) => b,
        _ => &[],
    };
    match encoding {
        LargeEncoding::Gzip => {
            // Large values favour speed: level 1 is several times faster than the default and still gzip.
            let mut enc = GzEncoder::new(Vec::with_capacity(raw.len() / 3 + 64), Compression::fast());
            let _ = enc.write_all(raw);
            enc.finish().unwrap_or_default()
        }
        LargeEncoding::Text | LargeEncoding::Binary => raw.to_vec(),
    }
}

/// The one-cell form of a value from its stored bytes.
pub(crate) fn value_from_stored(column: &str, stored: Vec<u8>, encoding: &str, form: LargeForm) -> Result<Value> {
    let damaged = |reason: String| Error::Integrity {
        column: column.to_owned(),
        reason,
    };
    let raw = match encoding {
        "gzip" => {
            let mut out = Vec::with_capacity(stored.len() * 4);
            GzDecoder::new(stored.as_slice())
                .read_to_end(&mut out)
                .map_err(|e| damaged(format!("the gzip data is damaged: {e}")))?;
            out
        }
        "text" | "binary" => stored,
        "utf16le" => {
            let units: Vec<u16> = stored
                .chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect();
            String::from_utf16_lossy(&units).into_bytes()
        }
        other => return Err(damaged(format!("unknown encoding `{other}`"))),
    };
    Ok(match form {
        LargeForm::Bytes => Value::Binary(raw),
        LargeForm::Text | LargeForm::Json => {
            Value::String(String::from_utf8(raw).map_err(|_| damaged("the text is not UTF-8".into()))?)
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

/// Reassembles a split value from the cells of its rows, checking the
/// manifest and the hash. Returns the one-cell form.
pub(crate) fn assemble(column: &str, cells: &Row, form: LargeForm) -> Result<Value> {
    let damaged = |reason: String| Error::Integrity {
        column: column.to_owned(),
        reason,
    };
    let count = match cells.get(&format!("{column}__chunks")) {
        Some(Value::Int32(n)) if *n > 0 => *n as usize,
        Some(Value::Int64(n)) if *n > 0 => *n as usize,
        other => return Err(damaged(format!("the chunk count is not a positive number: {other:?}"))),
    };
    let encoding = match cells.get(&format!("{column}__enc")) {
        Some(Value::String(e)) => e.clone(),
        other => return Err(damaged(format!("the encoding cell is missing or not text: {other:?}"))),
    };
    let expected_hash = match cells.get(&format!("{column}__sha256")) {
        Some(Value::String(h)) if h.len() == 64 => h.to_ascii_lowercase(),
        other => return Err(damaged(format!("the hash cell is missing or malformed: {other:?}"))),
    };
    let mut stored: Vec<u8> = Vec::new();
    for i in 0..count {
        match cells.get(&format!("{column}__c{i}")) {
            Some(Value::String(s)) => stored.extend_from_slice(s.as_bytes()),
            Some(Value::Binary(b)) => stored.extend_from_slice(b),
            Some(other) => return Err(damaged(format!("chunk {i} is not text or binary: {other:?}"))),
            None => {
                return Err(damaged(format!(
                    "chunk {i} of {count} is missing; the row may have been damaged or changed while it was read"
                )))
            }
        }
    }
    let declared = match cells.get(&format!("{column}__len")) {
        Some(Value::Int64(n)) => Some(*n),
        Some(Value::Int32(n)) => Some(*n as i64),
        _ => None,
    };
    if let Some(len) = declared {
        if len < 0 || len as usize != stored.len() {
            return Err(damaged(format!(
                "{} stored bytes, the manifest says {len}",
                stored.len()
            )));
        }
    }
    let actual = sha256_hex(&stored);
    if actual != expected_hash {
        return Err(damaged(format!(
            "SHA-256 mismatch: stored {expected_hash}, computed {actual}"
        )));
    }
    value_from_stored(column, stored, &encoding, form)
}

/// The manifest cells of a split value.
pub(crate) fn manifest(column: &str, count: usize, stored: &[u8], encoding: LargeEncoding) -> Vec<(String, Value)> {
    vec![
        (format!("{column}__chunks"), Value::Int32(count as i32)),
        (format!("{column}__sha256"), Value::String(sha256_hex(stored))),
        (format!("{column}__enc"), Value::String(encoding.name().to_owned())),
        (format!("{column}__len"), Value::Int64(stored.len() as i64)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

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
            row.insert(format!("Body__c{i}"), c.clone());
        }
        for (k, v) in manifest("Body", parts.len(), &stored, LargeEncoding::Gzip) {
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
}
