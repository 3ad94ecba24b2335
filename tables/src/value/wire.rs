//! The service's JSON representation of rows (minimal metadata).
//!
//! Int64, Double, DateTime, Guid and Binary are annotated with
//! `{name}@odata.type` on write. On read, an annotation decides the type;
//! without one, a number is typed from its token (a `.` or exponent means
//! Double, otherwise Int32, or Int64 when it does not fit).

use base64::Engine as _;
use serde_json::{Map, Number, Value as Json};

use super::{DateTime, ETag, EdmType, Guid, Row, Value};

const ANNOTATION: &str = "@odata.type";

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
/// [`row_to_json`] writes it), escaping included, without building it.
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

/// Counts bytes written through it.
struct Counter(usize);

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Bytes of a JSON string literal, escaping included (U+2028 and U+2029
/// escaped as in [`escape_line_separators`]).
pub(crate) fn string_size(s: &str) -> usize {
    let mut c = Counter(0);
    let _ = serde_json::to_writer(&mut c, s);
    c.0 + 3 * line_separators(s)
}

/// How many U+2028 and U+2029 a text holds.
fn line_separators(s: &str) -> usize {
    // Both are E2 80 A8 / E2 80 A9 in UTF-8.
    let b = s.as_bytes();
    let mut n = 0;
    let mut i = 0;
    while let Some(at) = b[i..].iter().position(|&x| x == 0xE2) {
        let j = i + at;
        if b.len() > j + 2 && b[j + 1] == 0x80 && (b[j + 2] == 0xA8 || b[j + 2] == 0xA9) {
            n += 1;
        }
        i = j + 1;
    }
    n
}

/// JSON text with U+2028 and U+2029 written as `\u2028` and `\u2029`. JSON
/// allows them raw, but the storage emulator refuses a batch body holding
/// them; escaped, they mean the same string everywhere.
pub(crate) fn escape_line_separators(json: String) -> String {
    if line_separators(&json) == 0 {
        return json;
    }
    json.replace('\u{2028}', "\\u2028").replace('\u{2029}', "\\u2029")
}

/// Bytes of `,"{name}@odata.type":"Edm.X"`.
fn annotation_size(name: &str, t: EdmType) -> usize {
    1 + string_size(name) + ANNOTATION.len() + 1 + 2 + t.name().len()
}

/// Decodes one JSON property. `annotation` is the `@odata.type` beside it, if any.
pub(crate) fn decode_value(json: &Json, annotation: Option<&str>) -> Result<Option<Value>, String> {
    let typed = annotation.and_then(EdmType::from_name);
    if let Some(a) = annotation {
        if typed.is_none() {
            return Err(format!("unknown type annotation `{a}`"));
        }
    }
    let text = |j: &Json| {
        j.as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("expected a string, found {}", short_json(j)))
    };
    Ok(Some(match (typed, json) {
        (_, Json::Null) => return Ok(None),
        (None | Some(EdmType::String), Json::String(s)) => Value::String(s.clone()),
        (None | Some(EdmType::Boolean), Json::Bool(b)) => Value::Bool(*b),
        (None, Json::Number(n)) => {
            if n.is_f64() {
                Value::Double(n.as_f64().unwrap_or(f64::NAN))
            } else if let Some(v) = n.as_i64() {
                match i32::try_from(v) {
                    Ok(small) => Value::Int32(small),
                    Err(_) => Value::Int64(v),
                }
            } else {
                Value::Double(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        (Some(EdmType::Int32), Json::Number(n)) => Value::Int32(
            n.as_i64()
                .and_then(|v| i32::try_from(v).ok())
                .ok_or_else(|| format!("`{n}` is not an Int32"))?,
        ),
        (Some(EdmType::Int64), j) => {
            let v = match j {
                Json::Number(n) => n.as_i64(),
                Json::String(s) => s.parse().ok(),
                _ => None,
            };
            Value::Int64(v.ok_or_else(|| format!("`{j}` is not an Int64"))?)
        }
        (Some(EdmType::Double), j) => Value::Double(match j {
            Json::Number(n) => n.as_f64().unwrap_or(f64::NAN),
            Json::String(s) => match s.as_str() {
                "NaN" => f64::NAN,
                "Infinity" | "INF" => f64::INFINITY,
                "-Infinity" | "-INF" => f64::NEG_INFINITY,
                other => other.parse().map_err(|_| format!("`{other}` is not a Double"))?,
            },
            other => return Err(format!("`{other}` is not a Double")),
        }),
        (Some(EdmType::DateTime), j) => {
            let s = text(j)?;
            Value::DateTime(DateTime::try_parse(&s).ok_or_else(|| format!("`{s}` is not a DateTime"))?)
        }
        (Some(EdmType::Guid), j) => {
            let s = text(j)?;
            Value::Guid(s.parse::<Guid>().map_err(|_| format!("`{s}` is not a Guid"))?)
        }
        (Some(EdmType::Binary), j) => {
            let s = text(j)?;
            Value::Binary(
                base64::engine::general_purpose::STANDARD
                    .decode(s.as_bytes())
                    .map_err(|_| "binary cell is not base64".to_owned())?,
            )
        }
        (t, j) => return Err(format!("`{j}` does not match its annotation {t:?}")),
    }))
}

/// A JSON value for an error message, cut to a readable length.
fn short_json(json: &Json) -> String {
    let mut text = json.to_string();
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

/// Decodes an entity from a query or get response. A property that does not
/// match its type annotation, or a key, ETag or Timestamp that is not what
/// the service sends, is an error naming the column.
pub fn row_from_json(obj: &Map<String, Json>) -> Result<Row, String> {
    let mut row = Row::default();
    let text = |name: &str, json: &Json| -> Result<String, String> {
        json.as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("column `{name}`: expected a string, found {}", short_json(json)))
    };
    for (name, json) in obj {
        if name.contains('@') || name.starts_with("odata.") {
            if name == "odata.etag" {
                row.etag = Some(ETag::new(text(name, json)?));
            }
            continue;
        }
        match name.as_str() {
            "PartitionKey" => row.partition_key = text(name, json)?,
            "RowKey" => row.row_key = text(name, json)?,
            "Timestamp" => {
                let s = text(name, json)?;
                let t = DateTime::try_parse(&s).ok_or_else(|| {
                    format!(
                        "column `Timestamp`: expected an ISO 8601 instant from year 1 to 9999, found {}",
                        short_json(json)
                    )
                })?;
                row.timestamp = Some(t);
            }
            _ => {
                let annotation = obj.get(&format!("{name}{ANNOTATION}")).and_then(Json::as_str);
                if let Some(v) = decode_value(json, annotation).map_err(|e| format!("column `{name}`: {e}"))? {
                    row.properties.insert(name.clone(), v);
                }
            }
        }
    }
    if row.etag.is_none() {
        row.etag = row.timestamp.map(ETag::from_timestamp);
    }
    Ok(row)
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
        assert_eq!(wire_size(&row), serde_json::to_vec(&row_to_json(&row)).unwrap().len());
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
        let json = escape_line_separators(serde_json::to_string(text).unwrap());
        assert_eq!(json, "\"a\\u2028b\\u2029\u{e9}\u{2027}\"");
        assert_eq!(string_size(text), json.len());
        assert_eq!(serde_json::from_str::<String>(&json).unwrap(), text);
    }
}
