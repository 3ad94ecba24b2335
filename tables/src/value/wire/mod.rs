//! The service's JSON representation of rows.
//!
//! Request bodies are ASCII: non-ASCII characters are written `\uXXXX`, as
//! the Azure SDKs write them (see [`write_row`] for why and what it costs),
//! and [`wire_size`] counts them so.
//!
//! Int64, Double, DateTime, Guid and Binary are annotated with
//! `{name}@odata.type` on write. On read, an annotation decides the type;
//! without one, a number is typed from its token (a `.` or exponent means
//! Double, otherwise Int32, or Int64 when it does not fit).

mod page_into;
mod read;
mod write;

pub use page_into::{page_into, WireRow};
pub use read::{page_from_slice, row_from_slice};
pub use write::{row_body, write_row};

use std::borrow::Cow;

use base64::Engine as _;
use serde_json::{Map, Number, Value as Json};

use super::{DateTime, EdmType, Guid, Row, Value};

const ANNOTATION: &str = "@odata.type";

/// `bytes` as text when they are UTF-8 (checked with SIMD where the CPU
/// has it: text of many-byte characters checks several times faster than
/// with the standard library's check, which accepts the same bytes).
pub(crate) fn utf8(bytes: &[u8]) -> Result<&str, simdutf8::basic::Utf8Error> {
    simdutf8::basic::from_utf8(bytes)
}

/// Appends `value` under `name` (with its type annotation) to a JSON object.
pub(crate) fn put_value(obj: &mut Map<String, Json>, name: &str, value: &Value) {
    let annotate = |obj: &mut Map<String, Json>, t: EdmType| {
        obj.insert(format!("{name}{ANNOTATION}"), Json::String(t.name().to_owned()));
    };
    match value {
        Value::String(s) => {
            obj.insert(name.to_owned(), Json::String(s.clone()));
        }
        Value::Bool(b) => {
            obj.insert(name.to_owned(), Json::Bool(*b));
        }
        Value::Int32(v) => {
            obj.insert(name.to_owned(), Json::Number((*v).into()));
        }
        Value::Int64(v) => {
            obj.insert(name.to_owned(), Json::String(v.to_string()));
            annotate(obj, EdmType::Int64);
        }
        Value::Double(v) => {
            let json = match Number::from_f64(*v) {
                Some(n) => Json::Number(n),
                None if v.is_nan() => Json::String("NaN".into()),
                None if *v > 0.0 => Json::String("Infinity".into()),
                None => Json::String("-Infinity".into()),
            };
            obj.insert(name.to_owned(), json);
            annotate(obj, EdmType::Double);
        }
        Value::DateTime(t) => {
            obj.insert(name.to_owned(), Json::String(t.to_string()));
            annotate(obj, EdmType::DateTime);
        }
        Value::Guid(g) => {
            obj.insert(name.to_owned(), Json::String(g.to_string()));
            annotate(obj, EdmType::Guid);
        }
        Value::Binary(b) => {
            obj.insert(
                name.to_owned(),
                Json::String(base64::engine::general_purpose::STANDARD.encode(b)),
            );
            annotate(obj, EdmType::Binary);
        }
    }
}

/// The row as the JSON body of an insert or update (keys and properties, no Timestamp).
pub fn row_to_json(row: &Row) -> Map<String, Json> {
    let mut obj = Map::with_capacity(row.properties.len() * 2 + 2);
    obj.insert("PartitionKey".into(), Json::String(row.partition_key.clone()));
    obj.insert("RowKey".into(), Json::String(row.row_key.clone()));
    for (name, value) in &row.properties {
        put_value(&mut obj, name, value);
    }
    obj
}

/// The number of bytes the row takes as a JSON request body (as
/// [`write_row`] writes it: every non-ASCII UTF-16 unit as the six bytes of
/// `\uXXXX`), without building it. Every request-size budget of the crate
/// is counted with it, and the in-memory backend measures transactions
/// with it, as the service measures the body it reads.
pub fn wire_size(row: &Row) -> usize {
    let mut size = 2 + string_size("PartitionKey") + 1 + string_size(&row.partition_key);
    size += 1 + string_size("RowKey") + 1 + string_size(&row.row_key);
    for (name, value) in &row.properties {
        size += 1 + string_size(name) + 1;
        size += match value {
            Value::String(s) => string_size(s),
            Value::Bool(b) => {
                if *b {
                    4
                } else {
                    5
                }
            }
            Value::Int32(v) => v.to_string().len(),
            Value::Int64(v) => v.to_string().len() + 2 + annotation_size(name, EdmType::Int64),
            Value::Double(v) => {
                let literal = match Number::from_f64(*v) {
                    Some(n) => n.to_string().len(),
                    None if v.is_nan() => 5,
                    None if *v > 0.0 => 10,
                    None => 11,
                };
                literal + annotation_size(name, EdmType::Double)
            }
            Value::DateTime(_) => 30 + annotation_size(name, EdmType::DateTime),
            Value::Guid(_) => 38 + annotation_size(name, EdmType::Guid),
            Value::Binary(b) => b.len().div_ceil(3) * 4 + 2 + annotation_size(name, EdmType::Binary),
        };
    }
    size
}

/// Bytes of a JSON string literal as [`write_row`] writes it, escaping
/// included: six bytes per non-ASCII UTF-16 unit (twelve for a character
/// outside the Basic Multilingual Plane). Non-ASCII is escaped as the
/// Azure SDKs escape it (see [`write_row`]); this also keeps U+2028 and
/// U+2029, which the storage emulator refuses raw in a batch body, out of
/// the body.
pub(crate) fn string_size(s: &str) -> usize {
    write::str_size(s)
}

/// Bytes of `,"{name}@odata.type":"Edm.X"`.
fn annotation_size(name: &str, t: EdmType) -> usize {
    1 + string_size(name) + ANNOTATION.len() + 1 + 2 + t.name().len()
}

/// One property's JSON value as its token says, before an annotation types it.
pub(super) enum Raw<'de> {
    Null,
    Bool(bool),
    /// An integer token that fits `i64`.
    Int(i64),
    /// An integer token above `i64::MAX`.
    BigInt(u64),
    /// A token with a fraction or an exponent.
    Float(f64),
    Text(Cow<'de, str>),
    /// An array or object, which no cell holds.
    Nested(&'static str),
}

/// Decodes one property's token with the type its annotation names
/// (`None`: typed from the token: a `.` or exponent means Double, otherwise
/// Int32, or Int64 when it does not fit).
pub(super) fn decode_typed<'de>(raw: Raw<'de>, typed: Option<EdmType>) -> Result<Option<Value>, String> {
    let text = |raw: Raw<'de>| match raw {
        Raw::Text(s) => Ok(s),
        other => Err(format!("expected a string, found {}", other.describe())),
    };
    Ok(Some(match (typed, raw) {
        (_, Raw::Null) => return Ok(None),
        (None | Some(EdmType::String), Raw::Text(s)) => Value::String(s.into_owned()),
        (None | Some(EdmType::Boolean), Raw::Bool(b)) => Value::Bool(b),
        (None, Raw::Int(v)) => match i32::try_from(v) {
            Ok(small) => Value::Int32(small),
            Err(_) => Value::Int64(v),
        },
        (None, Raw::BigInt(v)) => Value::Double(v as f64),
        (None, Raw::Float(v)) => Value::Double(v),
        (Some(EdmType::Int32), Raw::Int(v)) => {
            Value::Int32(i32::try_from(v).map_err(|_| format!("`{v}` is not an Int32"))?)
        }
        (Some(EdmType::Int32), r @ (Raw::BigInt(_) | Raw::Float(_))) => {
            return Err(format!("`{}` is not an Int32", r.describe()))
        }
        (Some(EdmType::Int64), raw) => {
            let v = match &raw {
                Raw::Int(v) => Some(*v),
                Raw::Text(s) => s.parse().ok(),
                _ => None,
            };
            Value::Int64(v.ok_or_else(|| format!("`{}` is not an Int64", raw.describe()))?)
        }
        (Some(EdmType::Double), raw) => Value::Double(match raw {
            Raw::Int(v) => v as f64,
            Raw::BigInt(v) => v as f64,
            Raw::Float(v) => v,
            Raw::Text(s) => match &*s {
                "NaN" => f64::NAN,
                "Infinity" | "INF" => f64::INFINITY,
                "-Infinity" | "-INF" => f64::NEG_INFINITY,
                other => other.parse().map_err(|_| format!("`{other}` is not a Double"))?,
            },
            other => return Err(format!("`{}` is not a Double", other.describe())),
        }),
        (Some(EdmType::DateTime), raw) => {
            let s = text(raw)?;
            Value::DateTime(DateTime::try_parse(&s).ok_or_else(|| format!("`{s}` is not a DateTime"))?)
        }
        (Some(EdmType::Guid), raw) => {
            let s = text(raw)?;
            Value::Guid(s.parse::<Guid>().map_err(|_| format!("`{s}` is not a Guid"))?)
        }
        (Some(EdmType::Binary), raw) => {
            let s = text(raw)?;
            Value::Binary(
                base64::engine::general_purpose::STANDARD
                    .decode(s.as_bytes())
                    .map_err(|_| "binary cell is not base64".to_owned())?,
            )
        }
        (t, raw) => return Err(format!("`{}` does not match its annotation {t:?}", raw.describe())),
    }))
}

/// Text for an error message, cut to a readable length.
pub(crate) fn short_text(text: &str) -> String {
    let mut text = text.to_owned();
    if text.len() > 80 {
        let mut end = 80;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

/// Decodes an entity from a query or get response already parsed into a
/// JSON object. A property that does not match its type annotation, or a
/// key, ETag or Timestamp that is not what the service sends, is an error
/// naming the column. The same reader as [`row_from_slice`], which reads
/// the body's bytes without building the object.
pub fn row_from_json(obj: &Map<String, Json>) -> Result<Row, String> {
    use serde::de::DeserializeSeed as _;
    read::RowSeed::new(&mut read::Scratch::default())
        .deserialize(obj)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_round_trip() {
        let row = Row::new("p", "r")
            .with("Big", Value::Int64(i64::MIN))
            .with("Small", Value::Int32(-5))
            .with("Whole", Value::Double(10.0))
            .with("Nan", Value::Double(f64::NAN))
            .with("Inf", Value::Double(f64::NEG_INFINITY))
            .with("When", Value::DateTime(DateTime::MIN_STORABLE))
            .with("Bytes", Value::Binary(vec![0, 1, 255]));
        let json = row_to_json(&row);
        assert_eq!(json["Big"], Json::String(i64::MIN.to_string()));
        assert_eq!(json["Big@odata.type"], "Edm.Int64");
        assert_eq!(json["Nan"], "NaN");
        assert_eq!(json["When"], "1601-01-01T00:00:00.0000000Z");
        assert_eq!(serde_json::to_string(&json["Whole"]).unwrap(), "10.0");
        let back = row_from_json(&json).unwrap();
        assert_eq!(back.get("Big"), Some(&Value::Int64(i64::MIN)));
        assert_eq!(back.get("Small"), Some(&Value::Int32(-5)));
        assert_eq!(back.get("Whole"), Some(&Value::Double(10.0)));
        assert!(matches!(back.get("Nan"), Some(Value::Double(v)) if v.is_nan()));
        assert_eq!(back.get("Bytes"), Some(&Value::Binary(vec![0, 1, 255])));
    }

    #[test]
    fn wire_size_is_the_length_of_the_body() {
        let row = Row::new("p'\"", "ü")
            .with("S", Value::String("a\"b\\c\u{1}é😀".into()))
            .with("B", Value::Bool(false))
            .with("I", Value::Int32(-12))
            .with("L", Value::Int64(i64::MIN))
            .with("D", Value::Double(1.5e-300))
            .with("N", Value::Double(f64::NEG_INFINITY))
            .with("T", Value::DateTime(DateTime::MAX))
            .with("G", Value::Guid(Guid([7; 16])))
            .with("X", Value::Binary(vec![1, 2, 3, 4]));
        assert_eq!(wire_size(&row), row_body(&row).len());
    }

    #[test]
    fn unannotated_numbers_are_typed_from_the_token() {
        let obj: Map<String, Json> = serde_json::from_str(r#"{"A":10.0,"B":10,"C":4294967296,"D":null}"#).unwrap();
        let row = row_from_json(&obj).unwrap();
        assert_eq!(row.get("A"), Some(&Value::Double(10.0)));
        assert_eq!(row.get("B"), Some(&Value::Int32(10)));
        assert_eq!(row.get("C"), Some(&Value::Int64(4_294_967_296)));
        assert_eq!(row.get("D"), None);
    }

    #[test]
    fn line_separators_are_escaped_and_counted() {
        let text = "a\u{2028}b\u{2029}\u{e9}\u{2027}";
        let mut json = Vec::new();
        write::write_str(&mut json, text);
        assert_eq!(json, br#""a\u2028b\u2029\u00e9\u2027""#);
        assert_eq!(string_size(text), json.len());
        assert_eq!(serde_json::from_slice::<String>(&json).unwrap(), text);
    }
}
