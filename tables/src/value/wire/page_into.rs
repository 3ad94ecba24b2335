//! A page body read straight into entities: the cells of the type's own
//! columns are typed as [`RowSeed`](super::read) types them and handed to
//! the type, with no row in between.
//!
//! The read only succeeds where the row path would read the same entity:
//! it gives up (and the caller reads the page as rows, which then also
//! says what is wrong) on any column the type does not declare (a JSON
//! or compressed form, a continuation row's marker, a column of another
//! version of the type), on a column given twice, and on anything the row
//! path refuses.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::read::{member_text, Annotation, RawSeed, Text};
use super::{decode_typed, Raw, ANNOTATION};
use crate::error::Result;
use crate::value::{DateTime, ETag, EdmType, Value};

/// One entity of a page read for [`page_into`]: its keys, version,
/// Timestamp, and the cells of the columns given, in their order (`None`
/// for a column the row does not hold).
#[derive(Debug)]
pub struct WireRow<'a> {
    /// `PartitionKey` (empty when absent, as in a row).
    pub partition_key: String,
    /// `RowKey` (empty when absent).
    pub row_key: String,
    /// `odata.etag`, or the version the Timestamp makes (`None` unless
    /// [`page_into`] was asked for it).
    pub etag: Option<ETag>,
    /// `Timestamp`.
    pub timestamp: Option<DateTime>,
    /// The typed cells, one per column given to [`page_into`]; take them out.
    pub cells: &'a mut [Option<Value>],
}

/// Reads the entities of a Query Entities answer body (`{"value":[..]}`)
/// with `build`, each from the cells of `columns` only (the type's stored
/// column names); the ETag is read only `with_etag` (a type without an
/// ETag field has no use for it, though it is checked as the row path checks it). `None` when a row holds anything else, or anything the
/// row path ([`page_from_slice`](super::page_from_slice) then `from_row`)
/// refuses or would read differently: read the page as rows then.
///
/// ```
/// use unified_tables::wire::{page_into, WireRow};
/// use unified_tables::Value;
/// fn build(row: WireRow<'_>) -> unified_tables::Result<(String, i64)> {
///     match row.cells[0].take() {
///         Some(Value::Int64(n)) => Ok((row.row_key, n)),
///         _ => Err(unified_tables::Error::config("no N")),
///     }
/// }
/// let body = br#"{"value":[{"PartitionKey":"p","RowKey":"a","N@odata.type":"Edm.Int64","N":"7"}]}"#;
/// assert_eq!(page_into(body, &["N"], false, build), Some(vec![("a".to_owned(), 7)]));
/// // A column the reader does not take: read the page as rows.
/// let other = br#"{"value":[{"PartitionKey":"p","RowKey":"a","M":1}]}"#;
/// assert_eq!(page_into(other, &["N"], false, build), None);
/// ```
pub fn page_into<T>(
    body: &[u8],
    columns: &'static [&'static str],
    with_etag: bool,
    build: fn(WireRow<'_>) -> Result<T>,
) -> Option<Vec<T>> {
    // A column whose name a suffixed form or a continuation marker could
    // take is left to the row path, which knows those forms.
    // So is a column named as a system member, which never reads a cell.
    let special = |c: &str| matches!(c, "PartitionKey" | "RowKey" | "Timestamp") || c == crate::layout::SPLIT_OF;
    if columns
        .iter()
        .any(|c| special(c) || c.contains("__") || c.contains('@') || c.starts_with("odata."))
    {
        return None;
    }
    let text = super::utf8(body).ok()?;
    let mut de = serde_json::Deserializer::from_str(text);
    let entities = de
        .deserialize_map(PageVisitor {
            columns,
            with_etag,
            build,
            // Room for the entities the body can hold (the service's rows
            // take hundreds of bytes each), so that the list is not moved as it grows.
            capacity: (body.len() / 128).min(crate::service::MAX_PAGE_SIZE as usize),
        })
        .ok()?;
    de.end().ok()?;
    Some(entities)
}

struct PageVisitor<T> {
    columns: &'static [&'static str],
    with_etag: bool,
    build: fn(WireRow<'_>) -> Result<T>,
    capacity: usize,
}

impl<'de, T> Visitor<'de> for PageVisitor<T> {
    type Value = Vec<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a query answer")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<T>, A::Error> {
        let mut entities = None;
        while let Some(key) = map.next_key::<Text<'de>>()? {
            if key.0 == "value" {
                if entities.is_some() {
                    return Err(give_up());
                }
                entities = Some(map.next_value_seed(EntitiesSeed {
                    columns: self.columns,
                    with_etag: self.with_etag,
                    build: self.build,
                    capacity: self.capacity,
                })?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(entities.unwrap_or_default())
    }
}

/// The read gives up: the page is read as rows.
fn give_up<E: de::Error>() -> E {
    E::custom("read as rows")
}

struct EntitiesSeed<T> {
    columns: &'static [&'static str],
    with_etag: bool,
    build: fn(WireRow<'_>) -> Result<T>,
    capacity: usize,
}

impl<'de, T> DeserializeSeed<'de> for EntitiesSeed<T> {
    type Value = Vec<T>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Vec<T>, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de, T> Visitor<'de> for EntitiesSeed<T> {
    type Value = Vec<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of entities")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
        let mut entities = Vec::with_capacity(self.capacity);
        let n = self.columns.len();
        let mut slots = Slots {
            columns: self.columns,
            raw: (0..n).map(|_| None).collect(),
            annotations: (0..n).map(|_| None).collect(),
            cells: (0..n).map(|_| None).collect(),
            last_timestamp: None,
            next: 0,
        };
        while let Some(entity) = seq.next_element_seed(EntitySeed {
            slots: &mut slots,
            with_etag: self.with_etag,
            build: self.build,
        })? {
            entities.push(entity);
        }
        Ok(entities)
    }
}

/// A string value, checked and dropped (an escaped one is unescaped into
/// the reader's buffer, not copied out).
struct AnyText;

impl<'de> DeserializeSeed<'de> for AnyText {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for AnyText {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
}

/// A `Timestamp` member's instant, read in place. The rows one transaction
/// wrote share their Timestamp: the last text read and its instant are
/// kept, and the same text is not parsed again.
struct Instant<'s, 'de>(&'s mut Option<(&'de str, DateTime)>);

impl<'de> DeserializeSeed<'de> for Instant<'_, 'de> {
    type Value = DateTime;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<DateTime, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Instant<'_, 'de> {
    type Value = DateTime;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an instant")
    }
    fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<DateTime, E> {
        match *self.0 {
            Some((last, instant)) if last == text => Ok(instant),
            _ => {
                let instant = DateTime::try_parse(text).ok_or_else(give_up)?;
                *self.0 = Some((text, instant));
                Ok(instant)
            }
        }
    }
    fn visit_str<E: de::Error>(self, text: &str) -> Result<DateTime, E> {
        DateTime::try_parse(text).ok_or_else(give_up)
    }
}

/// The cells of the row being read, by column, kept between the rows of a page.
struct Slots<'de> {
    columns: &'static [&'static str],
    raw: Vec<Option<Raw<'de>>>,
    annotations: Vec<Option<Annotation<'de>>>,
    cells: Vec<Option<Value>>,
    /// The last `Timestamp` text read, and its instant.
    last_timestamp: Option<(&'de str, DateTime)>,
    /// Where the next search starts: just after the last column found
    /// (the rows of a page list their columns in the same order).
    next: usize,
}

impl Slots<'_> {
    #[inline(always)]
    fn find(&mut self, name: &str) -> Option<usize> {
        let columns = self.columns;
        let i = match columns.get(self.next) {
            Some(expected) if *expected == name => self.next,
            _ => columns.iter().position(|c| *c == name)?,
        };
        self.next = i + 1;
        Some(i)
    }
}

struct EntitySeed<'s, 'de, T> {
    slots: &'s mut Slots<'de>,
    with_etag: bool,
    build: fn(WireRow<'_>) -> Result<T>,
}

impl<'de, T> DeserializeSeed<'de> for EntitySeed<'_, 'de, T> {
    type Value = T;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<T, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, T> Visitor<'de> for EntitySeed<'_, 'de, T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an entity: a JSON object")
    }

    // Member by member as `RowSeed::visit_map`, which is the reference.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        let slots = self.slots;
        let (mut partition_key, mut row_key) = (String::new(), String::new());
        let (mut etag, mut timestamp) = (None, None);
        while let Some(Text(name)) = map.next_key::<Text<'de>>()? {
            // One of the type's columns (none is a system member's name,
            // an annotation or an `odata.` member): a cell.
            if let Some(i) = slots.find(&name) {
                if slots.raw[i].is_some() {
                    return Err(give_up());
                }
                slots.raw[i] = Some(map.next_value_seed(RawSeed)?);
                continue;
            }
            // The members `RowSeed::visit_map` tells apart, in an order that
            // tests the common ones first (the arms are disjoint).
            match &*name {
                // A key that is not a string is refused by `String`'s reader too.
                "PartitionKey" => partition_key = map.next_value::<String>()?,
                "RowKey" => row_key = map.next_value::<String>()?,
                "Timestamp" => timestamp = Some(map.next_value_seed(Instant(&mut slots.last_timestamp))?),
                "odata.etag" if self.with_etag => {
                    etag = Some(ETag::new(member_text(&mut map, &name)?.into_owned()));
                }
                // Unused, but checked as the row path checks it, without a copy.
                "odata.etag" => map.next_value_seed(AnyText)?,
                n if n.starts_with("odata.") => {
                    map.next_value::<IgnoredAny>()?;
                }
                "Timestamp@odata.type" | "PartitionKey@odata.type" | "RowKey@odata.type" => {
                    map.next_value::<IgnoredAny>()?;
                }
                n if n.ends_with(ANNOTATION) => {
                    let annotation = match map.next_value_seed(RawSeed)? {
                        Raw::Text(t) => match EdmType::from_name(&t) {
                            Some(known) => Annotation::Known(known),
                            None => Annotation::Unknown(t),
                        },
                        other => Annotation::Unknown(Cow::Owned(other.describe())),
                    };
                    // An annotation of a column the row does not hold types nothing.
                    if let Some(i) = slots.find(&n[..n.len() - ANNOTATION.len()]) {
                        slots.annotations[i] = Some(annotation);
                    }
                }
                n if n.contains('@') => {
                    map.next_value::<IgnoredAny>()?;
                }
                // A column the type does not declare.
                _ => return Err(give_up()),
            }
        }
        for i in 0..slots.columns.len() {
            let annotation = slots.annotations[i].take();
            let Some(raw) = slots.raw[i].take() else {
                slots.cells[i] = None;
                continue;
            };
            let typed = match annotation {
                None => None,
                Some(Annotation::Known(t)) => Some(t),
                Some(Annotation::Unknown(_)) => return Err(give_up()),
            };
            slots.cells[i] = decode_typed(raw, typed).map_err(|_| give_up())?;
        }
        if etag.is_none() && self.with_etag {
            etag = timestamp.map(ETag::from_timestamp);
        }
        (self.build)(WireRow {
            partition_key,
            row_key,
            etag,
            timestamp,
            cells: &mut slots.cells,
        })
        .map_err(|_| give_up())
    }
}
