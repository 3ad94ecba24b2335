//! Typed cells (`Value`), rows (`Row`) and their wire form.

pub(crate) mod case_insensitive_json;
mod column_name;
mod datetime;
mod guid;
mod key;
mod properties;
mod row;
mod sha256;
mod to_column_name;
pub mod wire;

pub use column_name::names_are_distinct;
pub use column_name::ColumnName;
pub use datetime::DateTime;
pub use guid::{Guid, ParseGuidError};
pub use key::{normalize_id, restore_id, Key};
pub use properties::{Properties, ToColumnName};
pub use row::{ETag, Row};
pub(crate) use sha256::hex;
pub use sha256::sha256_hex;

use std::fmt;

/// The Entity Data Model type of a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EdmType {
    /// `Edm.String`.
    String,
    /// `Edm.Boolean`.
    Boolean,
    /// `Edm.Int32`.
    Int32,
    /// `Edm.Int64`.
    Int64,
    /// `Edm.Double`.
    Double,
    /// `Edm.DateTime`.
    DateTime,
    /// `Edm.Guid`.
    Guid,
    /// `Edm.Binary`.
    Binary,
}

impl EdmType {
    /// The annotation name, e.g. `Edm.Int64`.
    pub const fn name(self) -> &'static str {
        match self {
            EdmType::String => "Edm.String",
            EdmType::Boolean => "Edm.Boolean",
            EdmType::Int32 => "Edm.Int32",
            EdmType::Int64 => "Edm.Int64",
            EdmType::Double => "Edm.Double",
            EdmType::DateTime => "Edm.DateTime",
            EdmType::Guid => "Edm.Guid",
            EdmType::Binary => "Edm.Binary",
        }
    }

    /// Parses an annotation name such as `Edm.Guid`.
    pub fn from_name(name: &str) -> Option<EdmType> {
        Some(match name {
            "Edm.String" => EdmType::String,
            "Edm.Boolean" => EdmType::Boolean,
            "Edm.Int32" => EdmType::Int32,
            "Edm.Int64" => EdmType::Int64,
            "Edm.Double" => EdmType::Double,
            "Edm.DateTime" => EdmType::DateTime,
            "Edm.Guid" => EdmType::Guid,
            "Edm.Binary" => EdmType::Binary,
            _ => return None,
        })
    }
}

impl fmt::Display for EdmType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One typed cell of a row.
///
/// Nulls are never stored: an absent value is an absent property.
#[derive(Clone, PartialEq)]
pub enum Value {
    /// `Edm.String`.
    String(String),
    /// `Edm.Boolean`.
    Bool(bool),
    /// `Edm.Int32`.
    Int32(i32),
    /// `Edm.Int64`.
    Int64(i64),
    /// `Edm.Double`; NaN and the infinities are stored as the service encodes them.
    Double(f64),
    /// `Edm.DateTime` at 100 ns precision.
    DateTime(DateTime),
    /// `Edm.Guid`.
    Guid(Guid),
    /// `Edm.Binary`.
    Binary(Vec<u8>),
}

impl Value {
    /// The cell's Edm type.
    pub fn edm_type(&self) -> EdmType {
        match self {
            Value::String(_) => EdmType::String,
            Value::Bool(_) => EdmType::Boolean,
            Value::Int32(_) => EdmType::Int32,
            Value::Int64(_) => EdmType::Int64,
            Value::Double(_) => EdmType::Double,
            Value::DateTime(_) => EdmType::DateTime,
            Value::Guid(_) => EdmType::Guid,
            Value::Binary(_) => EdmType::Binary,
        }
    }

    /// The bytes this value counts toward the entity-size limit
    /// (string: 2 per UTF-16 unit + 4, binary: length + 4, fixed types their width).
    pub fn stored_size(&self) -> usize {
        match self {
            Value::String(s) => utf16_len(s) * 2 + 4,
            Value::Binary(b) => b.len() + 4,
            Value::Bool(_) => 1,
            Value::Int32(_) => 4,
            Value::Int64(_) | Value::Double(_) | Value::DateTime(_) => 8,
            Value::Guid(_) => 16,
        }
    }

    /// The string, if this is an `Edm.String` cell.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::String(s) if s.len() > 80 => write!(f, "String(<{} bytes>)", s.len()),
            Value::String(s) => write!(f, "String({s:?})"),
            Value::Bool(b) => write!(f, "Bool({b})"),
            Value::Int32(v) => write!(f, "Int32({v})"),
            Value::Int64(v) => write!(f, "Int64({v})"),
            Value::Double(v) => write!(f, "Double({v:?})"),
            Value::DateTime(v) => write!(f, "DateTime({v})"),
            Value::Guid(v) => write!(f, "Guid({v})"),
            Value::Binary(b) => write!(f, "Binary(<{} bytes>)", b.len()),
        }
    }
}

/// The number of UTF-16 code units in `s`: the unit the service measures strings in.
pub fn utf16_len(s: &str) -> usize {
    // Every char is one unit, except those beyond the BMP which are two.
    s.chars().map(char::len_utf16).sum()
}

/// Compares two strings in UTF-16 code-unit order, the order the service
/// sorts keys in (it differs from `str`'s order for characters beyond the
/// BMP against U+E000..U+FFFF).
pub fn cmp_utf16(a: &str, b: &str) -> std::cmp::Ordering {
    if a.is_ascii() && b.is_ascii() {
        return a.cmp(b);
    }
    a.encode_utf16().cmp(b.encode_utf16())
}
