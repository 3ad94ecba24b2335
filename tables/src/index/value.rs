//! Which field types an index can be declared on, and what a lookup takes
//! for each: [`IndexValue`] (one field), [`IndexKey`] (a field or a tuple
//! of fields), and the markers of the lookups a type allows.

use crate::codec::{EncodeOptions, TableValue};
use crate::error::{Error, Result};
use crate::value::{Row, Value};

/// A field type an index can be declared on: stored as one native cell whose
/// text form sorts as the value does (see [`index`](crate::index)).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be indexed",
    label = "an index needs a field stored as one native cell",
    note = "index a string, integer, float, bool, date, GUID, bytes or #[derive(TableEnum)] field (or an Option of one); a JSON-stored value (a Vec, a map, a #[table(json)] type) has no order-preserving key: keep the value you look up by in a field of its own (see https://docs.rs/unified-tables/latest/unified_tables/guide/secondary_indexes/index.html#declaring)"
)]
pub trait IndexValue {
    /// What a lookup takes for a value of this type: `&str` for a `String`,
    /// `&[u8]` for bytes, the value itself otherwise.
    type Arg<'a>;

    /// The cell a lookup argument is stored as.
    fn arg_cell(arg: Self::Arg<'_>) -> Result<Value>;
}

/// An indexed type whose values have an order a range lookup can use
/// (every indexable type but an enum, which sorts by its stored name).
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no order a range lookup can use",
    label = "a range needs values that sort as they are stored",
    note = "an enum is stored as its variant's name, which sorts by name rather than by declaration: look up each value with `find`"
)]
pub trait OrderedIndexValue: IndexValue {}

/// An indexed type whose values can be looked up by prefix (strings).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be looked up by prefix",
    label = "a prefix lookup needs a string field",
    note = "use `range` for numbers and dates, or `find` for one value"
)]
pub trait PrefixIndexValue: IndexValue {}

/// The cell `value` is stored as.
#[doc(hidden)]
pub fn stored_cell<T: TableValue>(value: &T) -> Result<Value> {
    let mut row = Row::default();
    value.encode("Value", &mut row, &EncodeOptions::default())?;
    match row.take("Value") {
        Some(v) if row.properties.is_empty() => Ok(v),
        _ => Err(Error::InvalidValue {
            column: "index lookup".into(),
            reason: "the value is not stored as one cell, so no index row can hold it".into(),
        }),
    }
}

macro_rules! by_value {
    (ordered: $($t:ty),*) => {$(
        impl IndexValue for $t {
            type Arg<'a> = $t;
            fn arg_cell(arg: $t) -> Result<Value> {
                stored_cell(&arg)
            }
        }
        #[diagnostic::do_not_recommend]
        impl OrderedIndexValue for $t {}
    )*};
}

by_value!(ordered: bool, char, i8, i16, i32, i64, u8, u16, u32, u64, isize, usize, f32, f64, crate::DateTime, crate::Guid, std::time::SystemTime);
#[cfg(feature = "chrono")]
by_value!(ordered: chrono::DateTime<chrono::Utc>);
#[cfg(feature = "time")]
by_value!(ordered: time::OffsetDateTime);
#[cfg(feature = "decimal")]
by_value!(ordered: rust_decimal::Decimal);
#[cfg(feature = "uuid")]
by_value!(ordered: uuid::Uuid);

impl IndexValue for String {
    type Arg<'a> = &'a str;
    fn arg_cell(arg: &str) -> Result<Value> {
        Ok(Value::String(arg.to_owned()))
    }
}
#[diagnostic::do_not_recommend]
impl OrderedIndexValue for String {}
#[diagnostic::do_not_recommend]
impl PrefixIndexValue for String {}

impl IndexValue for Vec<u8> {
    type Arg<'a> = &'a [u8];
    fn arg_cell(arg: &[u8]) -> Result<Value> {
        Ok(Value::Binary(arg.to_vec()))
    }
}
#[diagnostic::do_not_recommend]
impl OrderedIndexValue for Vec<u8> {}

/// `None` has no index row: a lookup names a present value.
impl<T: IndexValue> IndexValue for Option<T> {
    type Arg<'a> = T::Arg<'a>;
    fn arg_cell(arg: T::Arg<'_>) -> Result<Value> {
        T::arg_cell(arg)
    }
}
#[diagnostic::do_not_recommend]
impl<T: OrderedIndexValue> OrderedIndexValue for Option<T> {}
#[diagnostic::do_not_recommend]
impl<T: PrefixIndexValue> PrefixIndexValue for Option<T> {}

/// The values of one index: a field's type, or a tuple of the fields' types
/// of a composite index.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be indexed",
    label = "an index needs a field stored as one native cell",
    note = "index a string, integer, float, bool, date, GUID, bytes or #[derive(TableEnum)] field (or an Option of one); a JSON-stored value (a Vec, a map, a #[table(json)] type) has no order-preserving key: keep the value you look up by in a field of its own (see https://docs.rs/unified-tables/latest/unified_tables/guide/secondary_indexes/index.html#declaring)"
)]
pub trait IndexKey {
    /// What a lookup takes: the field's [`IndexValue::Arg`], or a tuple of them.
    type Arg<'a>;

    /// The cells of a lookup argument, in index order.
    fn arg_cells(arg: Self::Arg<'_>) -> Result<Vec<Value>>;
}

/// An [`IndexKey`] whose values can be ranged over.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no order a range lookup can use",
    label = "a range needs values that sort as they are stored",
    note = "an enum is stored as its variant's name, which sorts by name rather than by declaration: look up each value with `find`"
)]
pub trait OrderedIndexKey: IndexKey {}

impl<V: IndexValue> IndexKey for V {
    type Arg<'a> = V::Arg<'a>;
    fn arg_cells(arg: V::Arg<'_>) -> Result<Vec<Value>> {
        Ok(vec![V::arg_cell(arg)?])
    }
}
#[diagnostic::do_not_recommend]
impl<V: OrderedIndexValue> OrderedIndexKey for V {}

macro_rules! tuple_key {
    ($($n:ident),+) => {
        impl<$($n: IndexValue),+> IndexKey for ($($n,)+) {
            type Arg<'a> = ($($n::Arg<'a>,)+);
            #[allow(non_snake_case)]
            fn arg_cells(arg: Self::Arg<'_>) -> Result<Vec<Value>> {
                let ($($n,)+) = arg;
                Ok(vec![$($n::arg_cell($n)?),+])
            }
        }
        #[diagnostic::do_not_recommend]
        impl<$($n: OrderedIndexValue),+> OrderedIndexKey for ($($n,)+) {}
    };
}

tuple_key!(A, B);
tuple_key!(A, B, C);
tuple_key!(A, B, C, D);
