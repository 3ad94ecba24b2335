//! Cell codecs: how each field type becomes cells and comes back.
//!
//! The derive calls [`TableValue`] for every ordinary field, so the choice of
//! cell format is made by the compiler, never by inspecting a value at run
//! time. Scalars become native Edm cells; containers and other serde types
//! become one JSON cell `{Col}__Json` (gzip-compressed into `{Col}__GZip`
//! when it would not fit a cell).

mod binary;
pub(crate) mod blob_content;
mod dates;
mod gzip_cells;
mod ids;
mod json;
mod json_value;
mod name;
mod numbers;
mod prefix;
mod scalar;

pub use binary::{decode_binary, decode_optional_binary, encode_binary};
pub use blob_content::{decode_blob_ref, encode_blob_ref, BlobContent, BlobContentStream};
pub use json::{decode_json, encode_json};
pub use json_value::JsonValue;
pub use name::JoinedName;
pub use prefix::{concat_lists, join_each, joined_len, split_joined, total_len, Prefix};
pub use scalar::take_scalar_value;

use crate::error::{Error, Result};
use crate::value::{EdmType, Row, Value};

pub(crate) use crate::layout::{GZIP_SUFFIX, JSON_SUFFIX, TRUNCATED_SUFFIX};
pub(crate) use crate::service::MAX_CELL_BYTES;
/// The most bytes the gzip data of one `{Col}__GZip` cell may unpack to (32 MiB).
///
/// A cell the service accepts holds at most 32,767 base64 characters, about
/// 24 KB of gzip, which deflate cannot expand past about 25 MB; a cell that
/// unpacks to more is refused with [`Error::Integrity`].
pub(crate) const MAX_GZIP_CELL_INFLATED_BYTES: usize = 32 << 20;

/// What to do with a value too large for its cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OversizedCellPolicy {
    /// Refuse the write with [`Error::OversizedValue`] (the default). Nothing is stored.
    #[default]
    Refuse,
    /// Keep a prefix and write a `{Col}__Truncated` marker saying what was kept.
    TrimWithMarker,
    /// Keep a prefix, no marker.
    TrimSilently,
}

/// Options that shape how an entity is encoded.
#[derive(Debug, Clone, Copy, Default)]
pub struct EncodeOptions {
    /// What to do with a value too large for its cell.
    pub oversized: OversizedCellPolicy,
}

/// How a type is stored, known at compile time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// One native cell of this type.
    Cell(EdmType),
    /// One JSON cell (`{Col}__Json`, or `{Col}__GZip` when large).
    Json,
}

impl ValueKind {
    /// Whether the type is stored as one JSON cell.
    pub const fn is_json(self) -> bool {
        matches!(self, ValueKind::Json)
    }
}

/// `json` for a type stored as JSON, else `plain`: the names a field of
/// type kind `kind` is expected to write, chosen at compile time.
#[doc(hidden)]
pub const fn pick_names(
    kind: ValueKind,
    plain: &'static [&'static str],
    json: &'static [&'static str],
) -> &'static [&'static str] {
    if kind.is_json() {
        json
    } else {
        plain
    }
}

/// A type that can be stored in a table column.
///
/// Implemented for strings, `bool`, the integer types, `f32`/`f64`,
/// [`DateTime`](crate::DateTime) (and `chrono`/`time` instants with their
/// features), [`Guid`](crate::Guid) (and `uuid::Uuid`), `rust_decimal::Decimal`,
/// `Option<T>`, standard containers of serde types (as JSON), and unit enums
/// through `#[derive(TableEnum)]`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be stored in a table column",
    label = "this field's type has no cell format",
    note = "for a unit enum add `#[derive(TableEnum)]`; to store a serde type as one JSON cell mark the field `#[table(json)]`; for a nested struct add `#[derive(TableRecord)]` and mark the field `#[table(flatten)]`; a list, set or map is one JSON cell and needs elements that implement serde's `Serialize` and `Deserialize`; or mark the field `#[table(skip)]` (see https://docs.rs/unified-tables/latest/unified_tables/derive.TableEntity.html#field-attributes)"
)]
pub trait TableValue: Sized {
    /// How the type is stored.
    const KIND: ValueKind;
    /// Whether an absent column is an expected state (`Option<T>`).
    const OPTIONAL: bool = false;

    /// Writes the value's cell(s) for `column` into the row. Writes nothing
    /// for an absent value.
    fn encode(&self, column: &str, row: &mut Row, options: &EncodeOptions) -> Result<()>;

    /// Takes the value of `column` out of the row. An absent column reads as
    /// the type's default where it has one (as the .NET library does).
    fn decode(row: &mut Row, column: &str) -> Result<Self>;

    /// [`decode`](TableValue::decode) when any form of `column` is present,
    /// else `None`: how `Option<Self>` reads. Types override it to look the
    /// column up once.
    #[inline]
    fn decode_present(row: &mut Row, column: &str) -> Result<Option<Self>> {
        if has_any_form(row, column) {
            Self::decode(row, column).map(Some)
        } else {
            Ok(None)
        }
    }

    /// [`decode`](TableValue::decode) of a row holding `cell` under
    /// `column` and no other form of it: how a page read straight into
    /// entities reads the field. Types override it to read the cell
    /// without the row, with the same result.
    #[doc(hidden)]
    #[inline]
    fn decode_cell(cell: Option<Value>, column: &str) -> Result<Self> {
        decode_in_row(cell, column)
    }
}

/// [`TableValue::decode`] of a row holding only `cell` under `column`.
#[doc(hidden)]
#[cold]
#[inline(never)]
pub fn decode_in_row<T: TableValue>(cell: Option<Value>, column: &str) -> Result<T> {
    let mut row = Row::default();
    if let Some(value) = cell {
        row.insert(column, value);
    }
    T::decode(&mut row, column)
}

/// Which stored column a field reads from: the canonical name when any of
/// its forms (plain, `__Json`, `__GZip`) is present, otherwise the first
/// alias that has one, otherwise the canonical name.
pub fn resolve_column<'a>(row: &Row, canonical: &'a str, aliases: &[&'a str]) -> &'a str {
    if aliases.is_empty() || has_any_form(row, canonical) {
        return canonical;
    }
    aliases
        .iter()
        .copied()
        .find(|a| has_any_form(row, a))
        .unwrap_or(canonical)
}

pub(crate) fn has_any_form(row: &Row, column: &str) -> bool {
    row.get(column).is_some()
        || row.properties.get_suffixed(column, JSON_SUFFIX).is_some()
        || row.properties.get_suffixed(column, GZIP_SUFFIX).is_some()
        || row
            .properties
            .get_suffixed(column, crate::layout::BLOB_SUFFIX)
            .is_some()
}

/// Calls `f` with the name `{column}{suffix}`, built on the stack for
/// ordinary column lengths so that probing the row does not allocate.
pub(crate) fn with_suffixed<R>(column: &str, suffix: &str, f: impl FnOnce(&str) -> R) -> R {
    f(&JoinedName::new(&[column, suffix]))
}

/// Inserts the cell `{column}{suffix}`, naming it with the row's expected
/// name when that is the one (see [`Properties::expecting`](crate::Properties::expecting)),
/// else with the name joined on the stack.
pub(crate) fn insert_suffixed(row: &mut Row, column: &str, suffix: &str, value: Value) {
    if let Err(value) = row.properties.insert_expected_suffixed(column, suffix, value) {
        with_suffixed(column, suffix, |name| row.insert(name, value));
    }
}

/// The owned name `{column}{suffix}`.
pub(crate) fn suffixed(column: &str, suffix: &str) -> String {
    let mut name = String::with_capacity(column.len() + suffix.len());
    name.push_str(column);
    name.push_str(suffix);
    name
}

/// The error for a cell of the wrong type.
pub(crate) fn type_mismatch(column: &str, expected: &str, found: &Value) -> Error {
    Error::Decode {
        column: column.to_owned(),
        expected: expected.to_owned(),
        found: format!("{} cell {found:?}", found.edm_type()),
    }
}

/// The error for a required column that is absent.
pub(crate) fn absent(column: &str, expected: &str) -> Error {
    Error::Decode {
        column: column.to_owned(),
        expected: expected.to_owned(),
        found: "no such column (make the field an Option to allow it to be absent)".to_owned(),
    }
}

impl<T: TableValue> TableValue for Option<T> {
    const KIND: ValueKind = T::KIND;
    const OPTIONAL: bool = true;

    fn encode(&self, column: &str, row: &mut Row, options: &EncodeOptions) -> Result<()> {
        match self {
            Some(v) => v.encode(column, row, options),
            None => Ok(()),
        }
    }

    #[inline]
    fn decode(row: &mut Row, column: &str) -> Result<Self> {
        T::decode_present(row, column)
    }

    #[inline]
    fn decode_cell(cell: Option<Value>, column: &str) -> Result<Self> {
        match cell {
            None => Ok(None),
            cell => T::decode_cell(cell, column).map(Some),
        }
    }
}

impl<T: TableValue> TableValue for Box<T> {
    const KIND: ValueKind = T::KIND;
    const OPTIONAL: bool = T::OPTIONAL;

    fn encode(&self, column: &str, row: &mut Row, options: &EncodeOptions) -> Result<()> {
        (**self).encode(column, row, options)
    }

    fn decode(row: &mut Row, column: &str) -> Result<Self> {
        T::decode(row, column).map(Box::new)
    }
}
