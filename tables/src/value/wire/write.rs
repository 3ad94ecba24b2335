//! A row written straight into a request body: no JSON map in between, no
//! copy of the row, and the body's length (the wire-size budget) known as
//! it is written.
//!
//! The text holds the members [`row_to_json`](super::row_to_json) builds,
//! with U+2028 and U+2029 escaped, and its length is
//! [`wire_size`](super::wire_size) exactly.

use base64::Engine as _;

use super::ANNOTATION;
use crate::value::{DateTime, EdmType, Guid, Row, Value};

/// Appends the JSON body of an insert or update of `row` (keys and
/// properties, no Timestamp) to `out`, and returns the bytes appended.
///
/// ```
/// use unified_tables::wire::{wire_size, write_row};
/// use unified_tables::{Row, Value};
/// let row = Row::new("p", "r").with("N", Value::Int64(7));
/// let mut body = Vec::new();
/// let n = write_row(&row, &mut body);
/// assert_eq!(body, br#"{"PartitionKey":"p","RowKey":"r","N":"7","N@odata.type":"Edm.Int64"}"#);
/// assert_eq!(n, wire_size(&row));
/// ```
pub fn write_row(row: &Row, out: &mut Vec<u8>) -> usize {
    let start = out.len();
    out.reserve(64 + row.properties.len() * 32);
    out.extend_from_slice(b"{\"PartitionKey\":");
    write_str(out, &row.partition_key);
    out.extend_from_slice(b",\"RowKey\":");
    write_str(out, &row.row_key);
    for (name, value) in &row.properties {
        out.push(b',');
        write_str(out, name);
        out.push(b':');
        let annotation = write_value(out, value);
        if let Some(t) = annotation {
            out.push(b',');
            // The name again, with the suffix inside the quotes.
            write_str(out, name);
            out.pop();
            out.extend_from_slice(ANNOTATION.as_bytes());
            out.extend_from_slice(b"\":\"");
            out.extend_from_slice(t.name().as_bytes());
            out.push(b'"');
        }
    }
    out.push(b'}');
    out.len() - start
}

/// The body of [`write_row`] as a new buffer.
pub fn row_body(row: &Row) -> Vec<u8> {
    let mut out = Vec::new();
    write_row(row, &mut out);
    out
}

/// Writes one value; returns the annotation it needs.
fn write_value(out: &mut Vec<u8>, value: &Value) -> Option<EdmType> {
    match value {
        Value::String(s) => write_str(out, s),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Int32(v) => write_integer(out, i64::from(*v)),
        Value::Int64(v) => {
            out.push(b'"');
            write_integer(out, *v);
            out.push(b'"');
            return Some(EdmType::Int64);
        }
        Value::Double(v) => {
            write_double(out, *v);
            return Some(EdmType::Double);
        }
        Value::DateTime(t) => {
            write_datetime(out, *t);
            return Some(EdmType::DateTime);
        }
        Value::Guid(g) => {
            write_guid(out, g);
            return Some(EdmType::Guid);
        }
        Value::Binary(b) => {
            out.push(b'"');
            let at = out.len();
            out.resize(at + b.len().div_ceil(3) * 4, 0);
            let n = base64::engine::general_purpose::STANDARD
                .encode_slice(b, &mut out[at..])
                .expect("the buffer holds the padded encoding");
            out.truncate(at + n);
            out.push(b'"');
            return Some(EdmType::Binary);
        }
    }
    None
}

/// An integer in decimal.
fn write_integer(out: &mut Vec<u8>, v: i64) {
    // serde_json's integer formatting; writing into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, &v);
}

/// A finite double as serde_json writes it (`10.0`, `1.5e-300`); NaN and the
/// infinities as the service's strings.
fn write_double(out: &mut Vec<u8>, v: f64) {
    if v.is_finite() {
        // serde_json's own formatting (ryu), so that the text is the map route's.
        let _ = serde_json::to_writer(&mut *out, &v);
    } else if v.is_nan() {
        out.extend_from_slice(b"\"NaN\"");
    } else if v > 0.0 {
        out.extend_from_slice(b"\"Infinity\"");
    } else {
        out.extend_from_slice(b"\"-Infinity\"");
    }
}

/// `"YYYY-MM-DDTHH:MM:SS.fffffffZ"`, as [`DateTime`]'s `Display` writes it.
fn write_datetime(out: &mut Vec<u8>, t: DateTime) {
    let (y, mo, d, h, mi, s, frac) = t.parts();
    let mut buf = *b"\"0000-00-00T00:00:00.0000000Z\"";
    if !(0..=9999).contains(&y) {
        // Not storable, but written as the map route writes it.
        out.extend_from_slice(format!("\"{t}\"").as_bytes());
        return;
    }
    let mut put = |at: usize, width: usize, mut v: u32| {
        for i in (0..width).rev() {
            buf[at + i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(1, 4, y as u32);
    put(6, 2, mo);
    put(9, 2, d);
    put(12, 2, h);
    put(15, 2, mi);
    put(18, 2, s);
    put(21, 7, frac);
    out.extend_from_slice(&buf);
}

/// `"xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"`, lower-case.
fn write_guid(out: &mut Vec<u8>, g: &Guid) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    for (i, b) in g.0.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push(b'-');
        }
        out.push(HEX[usize::from(b >> 4)]);
        out.push(HEX[usize::from(b & 0xF)]);
    }
    out.push(b'"');
}

/// The escape of one byte of a JSON string, as serde_json writes it:
/// `0` for none, `u` for `\u00XX`, otherwise the letter after `\`.
const fn escape_of(b: u8) -> u8 {
    match b {
        b'"' => b'"',
        b'\\' => b'\\',
        b'\n' => b'n',
        b'\r' => b'r',
        b'\t' => b't',
        0x08 => b'b',
        0x0C => b'f',
        0x00..=0x1F => b'u',
        _ => 0,
    }
}

/// Escapes by byte, built at compile time.
static ESCAPES: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        table[i] = escape_of(i as u8);
        i += 1;
    }
    table
};

/// Whether bytes `i..` of `b` start U+2028 or U+2029 (`E2 80 A8` / `E2 80 A9`).
fn line_separator_at(b: &[u8], i: usize) -> bool {
    b.len() > i + 2 && b[i + 1] == 0x80 && (b[i + 2] == 0xA8 || b[i + 2] == 0xA9)
}

/// A JSON string literal: serde_json's escapes, plus `\u2028` and `\u2029`.
pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let b = s.as_bytes();
    out.reserve(b.len() + 2);
    out.push(b'"');
    let mut from = 0;
    for (i, &byte) in b.iter().enumerate() {
        let esc = ESCAPES[usize::from(byte)];
        if esc == 0 && !(byte == 0xE2 && line_separator_at(b, i)) {
            continue;
        }
        out.extend_from_slice(&b[from..i]);
        match esc {
            0 => {
                // U+2028 / U+2029: three bytes become `\u2028` / `\u2029`.
                out.extend_from_slice(if b[i + 2] == 0xA8 { b"\\u2028" } else { b"\\u2029" });
                from = i + 3;
                continue;
            }
            b'u' => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0xF)],
            ]),
            letter => out.extend_from_slice(&[b'\\', letter]),
        }
        from = i + 1;
    }
    out.extend_from_slice(&b[from..]);
    out.push(b'"');
}

/// The bytes [`write_str`] writes for `s`, without writing them.
pub(crate) fn str_size(s: &str) -> usize {
    let b = s.as_bytes();
    let mut n = b.len() + 2;
    for (i, &byte) in b.iter().enumerate() {
        match ESCAPES[usize::from(byte)] {
            0 if byte == 0xE2 && line_separator_at(b, i) => n += 3,
            0 => {}
            b'u' => n += 5,
            _ => n += 1,
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::wire::{row_to_json, wire_size};

    /// The map route's text, U+2028 and U+2029 escaped as the writer escapes them.
    fn map_route(row: &Row) -> String {
        let text = serde_json::to_string(&row_to_json(row)).unwrap();
        text.replace('\u{2028}', "\\u2028").replace('\u{2029}', "\\u2029")
    }

    #[test]
    fn the_body_is_the_map_routes_text_and_its_length_the_wire_size() {
        let row = Row::new("p'\"", "ü\u{2028}")
            .with(
                "S",
                Value::String("a\"b\\c\u{1}\u{8}\u{c}\n\r\t\u{1f}\u{7f}é😀\u{2029}x\u{2027}".into()),
            )
            .with("B", Value::Bool(false))
            .with("T1", Value::Bool(true))
            .with("I", Value::Int32(i32::MIN))
            .with("L", Value::Int64(i64::MIN))
            .with("D", Value::Double(1.5e-300))
            .with("W", Value::Double(10.0))
            .with("Nan", Value::Double(f64::NAN))
            .with("Inf", Value::Double(f64::INFINITY))
            .with("N", Value::Double(f64::NEG_INFINITY))
            .with("T", Value::DateTime(DateTime::MAX))
            .with("T0", Value::DateTime(DateTime::MIN_STORABLE))
            .with("G", Value::Guid(Guid([0xa7; 16])))
            .with("X", Value::Binary(vec![1, 2, 3, 4]))
            .with("E", Value::Binary(Vec::new()))
            .with("Q\"uote", Value::Int64(5));
        let body = row_body(&row);
        let text = String::from_utf8(body.clone()).unwrap();
        // Same members, same values: compare as parsed JSON, then the lengths.
        let ours: serde_json::Value = serde_json::from_str(&text).unwrap();
        let theirs: serde_json::Value = serde_json::from_str(&map_route(&row)).unwrap();
        assert_eq!(ours, theirs);
        assert_eq!(text.len(), map_route(&row).len());
        assert_eq!(body.len(), wire_size(&row));
        assert!(!text.contains('\u{2028}') && !text.contains('\u{2029}'), "{text}");
    }

    #[test]
    fn string_sizes_count_every_escape() {
        for s in [
            "",
            "plain",
            "\"\\",
            "\u{0}\u{1f}",
            "\u{2028}\u{2029}",
            "\u{e2}",
            "a\u{2027}b",
        ] {
            let mut out = Vec::new();
            write_str(&mut out, s);
            assert_eq!(out.len(), str_size(s), "{s:?}");
            assert_eq!(serde_json::from_slice::<String>(&out).unwrap(), s);
        }
    }
}
