//! A row written straight into a request body: no JSON map in between, no
//! copy of the row, and the body's length (the wire-size budget) known as
//! it is written.
//!
//! The text holds the members [`row_to_json`](super::row_to_json) builds,
//! in ASCII only (every non-ASCII character escaped), and its length is
//! [`wire_size`](super::wire_size) exactly.

use base64::Engine as _;

use super::ANNOTATION;
use crate::value::{DateTime, EdmType, Guid, Row, Value};

/// Appends the JSON body of an insert or update of `row` (keys and
/// properties, no Timestamp) to `out`, and returns the bytes appended.
///
/// The body is ASCII: every non-ASCII character of a key, a property name
/// or a string value is written `\uXXXX` (one outside the Basic
/// Multilingual Plane, such as an emoji, as its UTF-16 surrogate pair), as
/// Microsoft's Azure SDKs write table bodies. The storage emulator Azurite
/// corrupts raw multi-byte UTF-8 in large bodies: it turns each piece of
/// the request into text on its own, so a character cut between two pieces
/// is stored as U+FFFD and the value then fails its integrity check. An
/// ASCII body cannot be cut inside a character. The cost is six bytes per non-ASCII UTF-16 unit instead of
/// two to four UTF-8 bytes: none for ASCII text, about 2.1 times the UTF-8
/// size for text of mixed widths, 3 times for Cyrillic; and CPU: a row with
/// 1,000 mixed characters encodes in about 2.5 µs, one with 1,000 ASCII
/// characters in 0.6 µs (`FIGURES=cpu` of the figures command).
/// [`wire_size`](super::wire_size) counts the escapes, and so every request-size budget
/// (transactions, continuation rows) and the in-memory backend's body limits.
///
/// ```
/// use unified_tables::wire::{row_body, wire_size, write_row};
/// use unified_tables::{Row, Value};
/// let row = Row::new("p", "r").with("N", Value::Int64(7));
/// let mut body = Vec::new();
/// let n = write_row(&row, &mut body);
/// assert_eq!(body, br#"{"PartitionKey":"p","RowKey":"r","N":"7","N@odata.type":"Edm.Int64"}"#);
/// assert_eq!(n, wire_size(&row));
///
/// let text = Row::new("p", "r").with("S", Value::String("ä€😀".into()));
/// assert_eq!(
///     row_body(&text),
///     br#"{"PartitionKey":"p","RowKey":"r","S":"\u00e4\u20ac\ud83d\ude00"}"#
/// );
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

/// The escape of one byte of a JSON string: `0` for none, `u` for
/// `\u00XX`, `x` for the first byte of a non-ASCII character (written as
/// `\uXXXX`, or two of them for a character outside the Basic
/// Multilingual Plane), `c` for the bytes that continue one, otherwise the
/// letter after `\`.
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
        0x80..=0xBF => b'c',
        0xC0..=0xFF => b'x',
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

/// Bytes the escape adds to a byte of a string, built at compile time: a
/// character of two UTF-8 bytes becomes 6 (`\uXXXX`), of three 6, of four
/// 12 (a surrogate pair); the growth is counted on its first byte.
static GROWTH: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        table[i] = match escape_of(i as u8) {
            0 | b'c' => 0,
            b'u' => 5,
            b'x' if i < 0xE0 => 4,
            b'x' if i < 0xF0 => 3,
            b'x' => 8,
            _ => 1,
        };
        i += 1;
    }
    table
};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// `\uXXXX` for one UTF-16 unit.
fn push_unit(out: &mut Vec<u8>, unit: u32) {
    out.extend_from_slice(&[
        b'\\',
        b'u',
        HEX[(unit >> 12) as usize & 0xF],
        HEX[(unit >> 8) as usize & 0xF],
        HEX[(unit >> 4) as usize & 0xF],
        HEX[unit as usize & 0xF],
    ]);
}

/// A JSON string literal holding only ASCII: serde_json's escapes for `"`,
/// `\` and control characters, and every non-ASCII character as `\uXXXX`
/// (a character outside the Basic Multilingual Plane as its UTF-16
/// surrogate pair, `😀` as `\ud83d\ude00`), as the Azure SDKs write bodies.
/// Runs of plain ASCII are copied whole.
/// Whether any of the eight bytes of `word` is escaped: a control byte,
/// `"`, `\\`, or a byte of a non-ASCII character.
fn needs_escape(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // A byte is zero (after the xor) or below 0x20 when subtracting borrows into its high bit.
    let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
    let below_space = word.wrapping_sub(ONES * 0x20) & !word & HIGHS;
    (word & HIGHS) | below_space | zero(word ^ (ONES * b'"' as u64)) | zero(word ^ (ONES * b'\\' as u64)) != 0
}

pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    let b = s.as_bytes();
    out.reserve(b.len() + 2);
    out.push(b'"');
    let (mut from, mut i) = (0, 0);
    while i < b.len() {
        // Eight bytes at a time while none of them needs an escape.
        while let Some(word) = b.get(i..i + 8) {
            if needs_escape(u64::from_le_bytes(word.try_into().unwrap_or([0x80; 8]))) {
                break;
            }
            i += 8;
        }
        let Some(&byte) = b.get(i) else { break };
        let esc = ESCAPES[usize::from(byte)];
        if esc == 0 {
            i += 1;
            continue;
        }
        out.extend_from_slice(&b[from..i]);
        let cont = |k: usize| u32::from(b[i + k] & 0x3F);
        match esc {
            b'x' if byte < 0xE0 => {
                push_unit(out, (u32::from(byte & 0x1F) << 6) | cont(1));
                i += 2;
            }
            b'x' if byte < 0xF0 => {
                push_unit(out, (u32::from(byte & 0x0F) << 12) | (cont(1) << 6) | cont(2));
                i += 3;
            }
            b'x' => {
                let c = (u32::from(byte & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3);
                let c = c - 0x1_0000;
                push_unit(out, 0xD800 | (c >> 10));
                push_unit(out, 0xDC00 | (c & 0x3FF));
                i += 4;
            }
            // A `str` starts no character with a continuation byte.
            b'c' => i += 1,
            b'u' => {
                push_unit(out, u32::from(byte));
                i += 1;
            }
            letter => {
                out.extend_from_slice(&[b'\\', letter]);
                i += 1;
            }
        }
        from = i;
    }
    out.extend_from_slice(&b[from..]);
    out.push(b'"');
}

/// The bytes [`write_str`] writes for `s`, without writing them: six per
/// non-ASCII UTF-16 unit.
pub(crate) fn str_size(s: &str) -> usize {
    let b = s.as_bytes();
    let growth: usize = b.iter().map(|&byte| usize::from(GROWTH[usize::from(byte)])).sum();
    b.len() + 2 + growth
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::wire::{row_to_json, wire_size};

    /// The map route's text with every non-ASCII character escaped as UTF-16
    /// units, as the writer escapes them.
    fn map_route(row: &Row) -> String {
        let text = serde_json::to_string(&row_to_json(row)).unwrap();
        let mut out = String::new();
        for c in text.chars() {
            if c.is_ascii() {
                out.push(c);
            } else {
                for unit in c.encode_utf16(&mut [0; 2]) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
        out
    }

    #[test]
    fn the_body_is_the_map_routes_text_escaped_and_its_length_the_wire_size() {
        let row = Row::new("p'\"ä", "ü\u{2028}")
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
            .with("Q\"uote", Value::Int64(5))
            .with("Größe€", Value::Int64(6))
            .with("Имя", Value::String("Жанна 🎉".into()));
        let body = row_body(&row);
        assert!(body.is_ascii(), "{}", String::from_utf8_lossy(&body));
        // The members in another order (the map's), the same text otherwise.
        assert_eq!(body.len(), map_route(&row).len());
        assert_eq!(body.len(), wire_size(&row));
        // Read back, the same members and values as the unescaped map route.
        let ours: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(ours, serde_json::Value::Object(row_to_json(&row)));
    }

    #[test]
    fn string_sizes_count_every_escape() {
        for s in [
            "",
            "plain",
            "\"\\",
            "\u{0}\u{1f}",
            "\u{7f}\u{80}\u{7ff}\u{800}\u{ffff}\u{10000}\u{10ffff}",
            "\u{2028}\u{2029}",
            "\u{e2}",
            "a\u{2027}b",
            "äЖ€😀中",
        ] {
            let mut out = Vec::new();
            write_str(&mut out, s);
            assert!(out.is_ascii(), "{s:?}");
            assert_eq!(out.len(), str_size(s), "{s:?}");
            assert_eq!(serde_json::from_slice::<String>(&out).unwrap(), s);
        }
    }

    #[test]
    fn non_ascii_is_six_bytes_a_utf16_unit() {
        let mut out = Vec::new();
        write_str(&mut out, "aäЖ€😀");
        assert_eq!(out, br#""a\u00e4\u0416\u20ac\ud83d\ude00""#);
        for (text, units) in [("ä", 1), ("Ж", 1), ("€", 1), ("中", 1), ("😀", 2)] {
            assert_eq!(str_size(&text.repeat(1000)), 2 + 6 * units * 1000, "{text}");
        }
    }

    #[test]
    fn an_escaped_character_at_any_place_in_a_run_of_plain_bytes_is_escaped() {
        // Plain runs are skipped eight bytes at a time: put each kind of escaped
        // byte at every offset of such a run, with runs before and after it.
        for special in ['"', '\\', '\n', '\u{1f}', '\u{7f}', 'é', '€', '😀'] {
            for before in 0..20 {
                for after in [0, 1, 7, 8, 9, 17] {
                    let s = format!("{}{special}{}", "a".repeat(before), "b".repeat(after));
                    let mut out = Vec::new();
                    write_str(&mut out, &s);
                    assert!(out.is_ascii(), "{s:?}");
                    assert_eq!(out.len(), str_size(&s), "{s:?}");
                    assert_eq!(serde_json::from_slice::<String>(&out).unwrap(), s);
                }
            }
        }
    }

    #[test]
    fn every_character_round_trips() {
        // Every scalar value, in strings of a few thousand, between ASCII.
        let all: Vec<char> = (0..=0x10_FFFFu32).filter_map(char::from_u32).collect();
        for piece in all.chunks(4096) {
            let s: String = piece.iter().flat_map(|&c| [c, 'a']).collect();
            let mut out = Vec::new();
            write_str(&mut out, &s);
            assert!(out.is_ascii());
            assert_eq!(out.len(), str_size(&s));
            assert_eq!(serde_json::from_slice::<String>(&out).unwrap(), s);
        }
    }
}
