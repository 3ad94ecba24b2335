use std::fmt;

use super::{utf16_len, DateTime, Properties, ToColumnName, Value};

/// An entity tag: the version of a row as the service reports it.
///
/// Opaque; compare for equality only. A write conditioned on an `ETag`
/// succeeds only if the row still has that version.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ETag(String);

impl ETag {
    /// Wraps the text of an ETag as returned by the service.
    pub fn new(text: impl Into<String>) -> ETag {
        ETag(text.into())
    }

    /// The ETag the service gives a row written at `timestamp`:
    /// `W/"datetime'2017-01-05T03%3A25%3A25.9422152Z'"`.
    pub fn from_timestamp(timestamp: DateTime) -> ETag {
        ETag(format!("W/\"datetime'{}'\"", timestamp.to_string().replace(':', "%3A")))
    }

    /// The ETag's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ETag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for ETag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ETag({})", self.0)
    }
}

/// One entity as stored: its keys, its typed properties and, when read
/// back, the service's ETag and Timestamp.
///
/// Properties are kept in the order they were set (equality does not
/// depend on it). `PartitionKey`, `RowKey` and `Timestamp` are not
/// properties: they live in their own fields.
///
/// ```
/// use unified_tables::{Row, Value};
///
/// let mut row = Row::new("eu", "c-1").with("Name", Value::String("Ada".into()));
/// row.insert(String::from("Visits"), Value::Int32(3));
/// assert_eq!(row.get("Visits"), Some(&Value::Int32(3)));
/// let names: Vec<&str> = row.properties.keys().map(|k| k.as_str()).collect();
/// assert_eq!(names, ["Name", "Visits"]);
/// assert_eq!(row, Row::new("eu", "c-1").with("Visits", Value::Int32(3)).with("Name", Value::String("Ada".into())));
/// ```
#[derive(Clone, Default, PartialEq)]
pub struct Row {
    /// The partition key.
    pub partition_key: String,
    /// The row key.
    pub row_key: String,
    /// The properties by column name.
    pub properties: Properties,
    /// The version, when the row was read from or written to a backend.
    pub etag: Option<ETag>,
    /// The service's last-modified time, when read from a backend.
    pub timestamp: Option<DateTime>,
}

impl Row {
    /// A row with the given keys and no properties.
    pub fn new(partition_key: impl Into<String>, row_key: impl Into<String>) -> Row {
        Row {
            partition_key: partition_key.into(),
            row_key: row_key.into(),
            ..Row::default()
        }
    }

    /// Sets a property, replacing any previous value of the column.
    #[inline]
    pub fn insert(&mut self, column: impl ToColumnName, value: Value) {
        self.properties.insert(column, value);
    }

    /// Sets a property (builder style).
    pub fn with(mut self, column: impl ToColumnName, value: Value) -> Row {
        self.insert(column, value);
        self
    }

    /// The value of a column, if present.
    #[inline]
    pub fn get(&self, column: &str) -> Option<&Value> {
        self.properties.get(column)
    }

    /// Removes and returns the value of a column.
    #[inline]
    pub fn take(&mut self, column: &str) -> Option<Value> {
        self.properties.remove(column)
    }

    /// The entity size as the service measures it:
    /// `4 + 2·len(PK+RK) + Σ(8 + 2·len(name) + value)` with lengths in UTF-16 units.
    pub fn stored_size(&self) -> usize {
        let keys = 4 + 2 * (utf16_len(&self.partition_key) + utf16_len(&self.row_key));
        keys + self
            .properties
            .iter()
            .map(|(name, v)| 8 + 2 * utf16_len(name) + v.stored_size())
            .sum::<usize>()
    }
}

impl fmt::Debug for Row {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Row")
            .field("partition_key", &self.partition_key)
            .field("row_key", &self.row_key)
            .field("properties", &self.properties)
            .field("etag", &self.etag)
            .field("timestamp", &self.timestamp)
            .finish()
    }
}
