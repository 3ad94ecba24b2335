//! Response bodies read straight into rows: a serde visitor over the body's
//! bytes, with no JSON map in between.
//!
//! What no reader needs is skipped unread (`odata.metadata`, `odata.type`,
//! `odata.id`, `odata.editLink`, other annotations); a type annotation is
//! used once, to type its column, and dropped. Text that needs no escaping
//! is borrowed from the body until a cell keeps it.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::{decode_typed, short_text, Raw, ANNOTATION};
use crate::value::{ColumnName, DateTime, ETag, EdmType, Properties, Row};

/// Reads one entity (a Get Entity answer) from its JSON body.
///
/// A property that does not match its type annotation, or a key, ETag or
/// Timestamp that is not what the service sends, is an error naming the
/// column; text that is not JSON is an error saying where.
///
/// ```
/// use unified_tables::wire::row_from_slice;
/// use unified_tables::Value;
/// let body = br#"{"odata.etag":"W/\"1\"","PartitionKey":"p","RowKey":"r","N@odata.type":"Edm.Int64","N":"7"}"#;
/// let row = row_from_slice(body).unwrap();
/// assert_eq!(row.get("N"), Some(&Value::Int64(7)));
/// assert!(row_from_slice(br#"{"PartitionKey":"p","RowKey":"r","N@odata.type":"Edm.Int64","N":"x"}"#)
///     .unwrap_err()
///     .contains("`N`"));
/// ```
pub fn row_from_slice(body: &[u8]) -> Result<Row, String> {
    match super::utf8(body) {
        Ok(text) => row_from(serde_json::Deserializer::from_str(text)),
        // Read byte-wise, the reader names where the bad bytes are.
        Err(_) => row_from(serde_json::Deserializer::from_slice(body)),
    }
}

/// [`row_from_slice`] from either reader of the body.
fn row_from<'de, R: serde_json::de::Read<'de>>(mut de: serde_json::Deserializer<R>) -> Result<Row, String> {
    let row = RowSeed::new(&mut Scratch::default())
        .deserialize(&mut de)
        .map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok(row)
}

/// Reads the rows of a Query Entities answer (`{"value":[..]}`) from its JSON body.
///
/// ```
/// use unified_tables::wire::page_from_slice;
/// let body = br#"{"odata.metadata":"m","value":[{"PartitionKey":"p","RowKey":"a"},{"PartitionKey":"p","RowKey":"b"}]}"#;
/// let rows = page_from_slice(body).unwrap();
/// assert_eq!(rows.iter().map(|r| r.row_key.as_str()).collect::<Vec<_>>(), ["a", "b"]);
/// ```
pub fn page_from_slice(body: &[u8]) -> Result<Vec<Row>, String> {
    // Checked as UTF-8 once, the body is read without checking each of its
    // strings again.
    match super::utf8(body) {
        Ok(text) => page_from(serde_json::Deserializer::from_str(text)),
        Err(_) => page_from(serde_json::Deserializer::from_slice(body)),
    }
}

/// [`page_from_slice`] from either reader of the body.
fn page_from<'de, R: serde_json::de::Read<'de>>(mut de: serde_json::Deserializer<R>) -> Result<Vec<Row>, String> {
    let rows = de.deserialize_map(PageVisitor).map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok(rows)
}

/// The cells and annotations of the entity being read, kept between the
/// rows of a page so that their buffers are allocated once per page.
#[derive(Default)]
pub(super) struct Scratch<'de> {
    cells: Vec<(Cow<'de, str>, Raw<'de>)>,
    annotations: Vec<(Cow<'de, str>, Annotation<'de>)>,
    names: Names,
}

/// The long column names met so far in a page: the rows of a page repeat
/// them, so each is copied once and shared by the rows after (a short name
/// is held in place, which costs less than sharing it).
#[derive(Default)]
struct Names {
    seen: Vec<ColumnName>,
    /// Where the next search starts: just after the last name found.
    next: usize,
}

impl Names {
    /// At most this many names are kept: a page of ever-new names copies each.
    const MAX: usize = 512;

    fn get(&mut self, name: &str) -> ColumnName {
        if name.len() <= ColumnName::INLINE {
            return ColumnName::copied(name);
        }
        let n = self.seen.len();
        for k in 0..n {
            let i = (self.next + k) % n;
            if self.seen[i].as_str() == name {
                self.next = i + 1;
                return self.seen[i].clone();
            }
        }
        let copied = ColumnName::copied(name);
        if n < Names::MAX {
            self.seen.push(copied.clone());
        }
        copied
    }
}

/// Reads one entity from any serde deserializer (the body, or a JSON value).
pub(super) struct RowSeed<'s, 'de> {
    scratch: &'s mut Scratch<'de>,
}

impl<'s, 'de> RowSeed<'s, 'de> {
    pub(super) fn new(scratch: &'s mut Scratch<'de>) -> Self {
        scratch.cells.clear();
        scratch.annotations.clear();
        RowSeed { scratch }
    }
}

impl<'de> DeserializeSeed<'de> for RowSeed<'_, 'de> {
    type Value = Row;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Row, D::Error> {
        deserializer.deserialize_map(self)
    }
}

struct PageVisitor;

impl<'de> Visitor<'de> for PageVisitor {
    type Value = Vec<Row>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a query answer: an object with a `value` array of entities")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<Row>, A::Error> {
        let mut rows = Vec::new();
        while let Some(key) = map.next_key::<Text<'de>>()? {
            if key.0 == "value" {
                rows = map.next_value_seed(RowsSeed)?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(rows)
    }
}

struct RowsSeed;

impl<'de> DeserializeSeed<'de> for RowsSeed {
    type Value = Vec<Row>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Vec<Row>, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for RowsSeed {
    type Value = Vec<Row>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of entities")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Row>, A::Error> {
        let mut rows = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1000));
        let mut scratch = Scratch::default();
        while let Some(row) = seq.next_element_seed(RowSeed::new(&mut scratch))? {
            rows.push(row);
        }
        Ok(rows)
    }
}

/// Text borrowed from the body when it has no escapes, owned otherwise.
pub(super) struct Text<'de>(pub(super) Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(TextVisitor)
    }
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Text<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Text<'de>, E> {
        Ok(Text(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Text<'de>, E> {
        Ok(Text(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Text<'de>, E> {
        Ok(Text(Cow::Owned(v)))
    }
}

/// One JSON value of a property, as its token says, before its annotation types it.
pub(super) struct RawSeed;

impl<'de> DeserializeSeed<'de> for RawSeed {
    type Value = Raw<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Raw<'de>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for RawSeed {
    type Value = Raw<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a property value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Raw<'de>, E> {
        Ok(Raw::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Raw<'de>, E> {
        Ok(Raw::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Raw<'de>, E> {
        Ok(i64::try_from(v).map_or(Raw::BigInt(v), Raw::Int))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Raw<'de>, E> {
        Ok(Raw::Float(v))
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Raw<'de>, E> {
        Ok(Raw::Text(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Raw<'de>, E> {
        Ok(Raw::Text(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Raw<'de>, E> {
        Ok(Raw::Text(Cow::Owned(v)))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Raw<'de>, E> {
        Ok(Raw::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Raw<'de>, E> {
        Ok(Raw::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Raw<'de>, D::Error> {
        deserializer.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Raw<'de>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Raw::Nested("an array"))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Raw<'de>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Raw::Nested("an object"))
    }
}

/// What an annotation says: a known type, or the text of an unknown one.
pub(super) enum Annotation<'de> {
    Known(EdmType),
    Unknown(Cow<'de, str>),
}

/// A key, ETag or Timestamp member's text, or an error naming it.
pub(super) fn member_text<'de, A: MapAccess<'de>>(map: &mut A, name: &str) -> Result<Cow<'de, str>, A::Error> {
    match map.next_value_seed(RawSeed)? {
        Raw::Text(t) => Ok(t),
        other => Err(de::Error::custom(format_args!(
            "column `{name}`: expected a string, found {}",
            other.describe()
        ))),
    }
}

impl<'de> Visitor<'de> for RowSeed<'_, 'de> {
    type Value = Row;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an entity: a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Row, A::Error> {
        let mut row = Row::default();
        let Scratch {
            cells,
            annotations,
            names,
        } = self.scratch;
        while let Some(Text(name)) = map.next_key::<Text<'de>>()? {
            match &*name {
                "PartitionKey" => row.partition_key = member_text(&mut map, &name)?.into_owned(),
                "RowKey" => row.row_key = member_text(&mut map, &name)?.into_owned(),
                "odata.etag" => row.etag = Some(ETag::new(member_text(&mut map, &name)?.into_owned())),
                "Timestamp" => {
                    let text = member_text(&mut map, &name)?;
                    let t = DateTime::try_parse(&text).ok_or_else(|| {
                        de::Error::custom(format_args!(
                            "column `Timestamp`: expected an ISO 8601 instant from year 1 to 9999, found {}",
                            short_text(&format!("{text:?}"))
                        ))
                    })?;
                    row.timestamp = Some(t);
                }
                // The system columns' own annotations say nothing their names do not.
                "Timestamp@odata.type" | "PartitionKey@odata.type" | "RowKey@odata.type" => {
                    map.next_value::<IgnoredAny>()?;
                }
                n if n.ends_with(ANNOTATION) && !n.starts_with("odata.") => {
                    let annotation = match map.next_value_seed(RawSeed)? {
                        Raw::Text(t) => match EdmType::from_name(&t) {
                            Some(known) => Annotation::Known(known),
                            None => Annotation::Unknown(t),
                        },
                        other => Annotation::Unknown(Cow::Owned(other.describe())),
                    };
                    let base = match name {
                        Cow::Borrowed(b) => Cow::Borrowed(&b[..b.len() - ANNOTATION.len()]),
                        Cow::Owned(mut o) => {
                            o.truncate(o.len() - ANNOTATION.len());
                            Cow::Owned(o)
                        }
                    };
                    annotations.push((base, annotation));
                }
                n if n.contains('@') || n.starts_with("odata.") => {
                    map.next_value::<IgnoredAny>()?;
                }
                _ => {
                    let raw = map.next_value_seed(RawSeed)?;
                    cells.push((name, raw));
                }
            }
        }
        row.properties = Properties::with_capacity(cells.len());
        for (name, raw) in cells.drain(..) {
            // The last annotation of a name wins, as the last member of a JSON object does.
            let annotation = annotations.iter().rev().find(|(base, _)| *base == name).map(|(_, a)| a);
            let typed = match annotation {
                None => None,
                Some(Annotation::Known(t)) => Some(*t),
                Some(Annotation::Unknown(text)) => {
                    return Err(de::Error::custom(format_args!(
                        "column `{name}`: unknown type annotation `{text}`"
                    )))
                }
            };
            match decode_typed(raw, typed) {
                Ok(Some(value)) => {
                    row.properties.insert(names.get(&name), value);
                }
                Ok(None) => {}
                Err(e) => return Err(de::Error::custom(format_args!("column `{name}`: {e}"))),
            }
        }
        if row.etag.is_none() {
            row.etag = row.timestamp.map(ETag::from_timestamp);
        }
        Ok(row)
    }
}

impl Raw<'_> {
    /// The value for an error message.
    pub(super) fn describe(&self) -> String {
        match self {
            Raw::Null => "null".to_owned(),
            Raw::Bool(b) => b.to_string(),
            Raw::Int(v) => v.to_string(),
            Raw::BigInt(v) => v.to_string(),
            Raw::Float(v) => serde_json::Number::from_f64(*v).map_or_else(|| v.to_string(), |n| n.to_string()),
            Raw::Text(t) => short_text(&format!("{t:?}")),
            Raw::Nested(what) => (*what).to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;

    #[test]
    fn a_page_reads_its_rows_and_skips_what_no_reader_needs() {
        let body = br#"{"odata.metadata":"http://x/$metadata#T","value":[
            {"odata.type":"a.T","odata.id":"http://x/T(PartitionKey='p',RowKey='a')","odata.etag":"W/\"datetime'2024-05-01T10%3A00%3A00Z'\"",
             "odata.editLink":"T(PartitionKey='p',RowKey='a')","PartitionKey":"p","RowKey":"a",
             "Timestamp@odata.type":"Edm.DateTime","Timestamp":"2024-05-01T10:00:00Z",
             "N@odata.type":"Edm.Int64","N":"7","S":"t\u00e9\"x","D":10.0,"I":3,"Late":"5","Late@odata.type":"Edm.Int64","Gone":null},
            {"PartitionKey":"p","RowKey":"b","Timestamp":"2024-05-01T10:00:01Z"}]}"#;
        let rows = page_from_slice(body).unwrap();
        assert_eq!(rows.len(), 2);
        let a = &rows[0];
        assert_eq!((a.partition_key.as_str(), a.row_key.as_str()), ("p", "a"));
        assert_eq!(
            a.etag.as_ref().unwrap().as_str(),
            "W/\"datetime'2024-05-01T10%3A00%3A00Z'\""
        );
        assert_eq!(a.timestamp, DateTime::try_parse("2024-05-01T10:00:00Z"));
        assert_eq!(a.get("N"), Some(&Value::Int64(7)));
        assert_eq!(a.get("S"), Some(&Value::String("té\"x".into())));
        assert_eq!(a.get("D"), Some(&Value::Double(10.0)));
        assert_eq!(a.get("I"), Some(&Value::Int32(3)));
        assert_eq!(
            a.get("Late"),
            Some(&Value::Int64(5)),
            "an annotation after its value still types it"
        );
        assert_eq!(
            a.properties.len(),
            5,
            "no odata member, annotation or null is a property: {a:?}"
        );
        // Without odata.etag, the ETag comes from the Timestamp.
        assert!(rows[1]
            .etag
            .as_ref()
            .unwrap()
            .as_str()
            .contains("2024-05-01T10%3A00%3A01"));
        assert!(page_from_slice(br#"{"odata.metadata":"m"}"#).unwrap().is_empty());
    }

    #[test]
    fn hostile_bodies_are_errors_naming_what_is_wrong() {
        for (body, says) in [
            (&br#"{"value":[{"PartitionKey":"p""#[..], "EOF"),
            (
                br#"{"value":[{"PartitionKey":"p","RowKey":"r","N":1e400}]}"#,
                "number out of range",
            ),
            (
                br#"{"value":[{"PartitionKey":"p","RowKey":"r","N@odata.type":"Edm.Int32","N":99999999999}]}"#,
                "`N`",
            ),
            (
                br#"{"value":[{"PartitionKey":"p","RowKey":"r","N@odata.type":"Edm.Int64","N":"1e3"}]}"#,
                "`N`",
            ),
            (
                br#"{"value":[{"PartitionKey":"p","RowKey":"r","N@odata.type":"Edm.Nope","N":null}]}"#,
                "`N`",
            ),
            (
                br#"{"value":[{"PartitionKey":"p","RowKey":"r","N":[1,{"a":2}]}]}"#,
                "`N`",
            ),
            (br#"{"value":[{"PartitionKey":7,"RowKey":"r"}]}"#, "`PartitionKey`"),
            (
                br#"{"value":[{"PartitionKey":"p","RowKey":"r","Timestamp":"soon"}]}"#,
                "`Timestamp`",
            ),
            (br#"{"value":{"PartitionKey":"p"}}"#, "array"),
            (br#"[1,2]"#, "object"),
            (br#"{"value":[]} trailing"#, "trailing"),
        ] {
            let err = page_from_slice(body).expect_err(&String::from_utf8_lossy(body));
            assert!(err.contains(says), "{err} (for {})", String::from_utf8_lossy(body));
        }
        let err =
            row_from_slice(br#"{"PartitionKey":"p","RowKey":"r","B@odata.type":"Edm.Binary","B":"***"}"#).unwrap_err();
        assert!(err.contains("`B`"), "{err}");
    }
}
