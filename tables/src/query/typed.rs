//! Typed filter columns, generated per entity by the derive.
//!
//! `Customer::filter(|c| c.status.eq(Status::Open) & c.balance.ge(100.0))`
//! builds a [`Where`] that renders to OData and that the in-memory backend
//! evaluates with the service's semantics. Shapes the service cannot filter,
//! or where its answer would surprise (a JSON-stored or large value, an
//! ordering on an enum name, an inequality on an optional column), do not
//! compile.

use std::marker::PhantomData;
use std::ops::{BitAnd, BitOr, Not};

use super::{CmpOp, Filter, Selected};
use crate::codec::{EncodeOptions, TableValue};
use crate::entity::IntoColumnValue;
use crate::error::Error;
use crate::value::{Row, Value};

/// A filter over entities of type `E`, safe to negate.
#[must_use]
pub struct Where<E> {
    filter: Result<Filter, String>,
    _entity: PhantomData<fn() -> E>,
}

/// A filter over `E` that compares an optional column: a row missing the
/// property never matches a comparison on it, so negating it would not mean
/// "the opposite". It combines with `&` and `|` but cannot be negated.
#[must_use]
pub struct WherePartial<E> {
    filter: Result<Filter, String>,
    _entity: PhantomData<fn() -> E>,
}

macro_rules! untyped_impls {
    ($($name:ident),*) => {$(
        impl<E> Clone for $name<E> {
            fn clone(&self) -> Self {
                $name { filter: self.filter.clone(), _entity: PhantomData }
            }
        }

        impl<E> std::fmt::Debug for $name<E> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                match &self.filter {
                    Ok(filter) => write!(f, "{}({})", stringify!($name), filter.to_odata()),
                    Err(e) => write!(f, "{}(invalid: {e})", stringify!($name)),
                }
            }
        }
    )*};
}

untyped_impls!(Where, WherePartial);

fn combine(a: Result<Filter, String>, b: Result<Filter, String>, and: bool) -> Result<Filter, String> {
    let (a, b) = (a?, b?);
    Ok(if and { a.and(b) } else { a.or(b) })
}

macro_rules! combinators {
    ($lhs:ident, $rhs:ident => $out:ident) => {
        impl<E> BitAnd<$rhs<E>> for $lhs<E> {
            type Output = $out<E>;
            fn bitand(self, rhs: $rhs<E>) -> $out<E> {
                $out {
                    filter: combine(self.filter, rhs.filter, true),
                    _entity: PhantomData,
                }
            }
        }
        impl<E> BitOr<$rhs<E>> for $lhs<E> {
            type Output = $out<E>;
            fn bitor(self, rhs: $rhs<E>) -> $out<E> {
                $out {
                    filter: combine(self.filter, rhs.filter, false),
                    _entity: PhantomData,
                }
            }
        }
    };
}

combinators!(Where, Where => Where);
combinators!(Where, WherePartial => WherePartial);
combinators!(WherePartial, Where => WherePartial);
combinators!(WherePartial, WherePartial => WherePartial);

impl<E> Not for Where<E> {
    type Output = Where<E>;
    fn not(self) -> Where<E> {
        Where {
            filter: self.filter.map(Filter::not),
            _entity: PhantomData,
        }
    }
}

impl<E> Where<E> {
    fn new(filter: Result<Filter, String>) -> Where<E> {
        Where {
            filter,
            _entity: PhantomData,
        }
    }

    /// Both hold.
    pub fn and(self, other: Where<E>) -> Where<E> {
        self & other
    }

    /// Either holds.
    pub fn or(self, other: Where<E>) -> Where<E> {
        self | other
    }

    /// The untyped filter, or why the filter could not be built (a literal
    /// the service cannot store, such as a `u64` above `i64::MAX`).
    pub fn into_filter(self) -> Result<Filter, Error> {
        self.filter.map_err(|reason| Error::InvalidValue {
            column: "filter".into(),
            reason,
        })
    }
}

impl<E> WherePartial<E> {
    /// The untyped filter (see [`Where::into_filter`]).
    pub fn into_filter(self) -> Result<Filter, Error> {
        self.filter.map_err(|reason| Error::InvalidValue {
            column: "filter".into(),
            reason,
        })
    }
}

/// Something that can be used as the filter of a query over entities of
/// type `E`: a typed filter built from `E`'s own columns, or an untyped
/// [`Filter`] (which is not checked against any type).
#[diagnostic::on_unimplemented(
    message = "this filter was built for another entity type and cannot filter a query over `{E}`",
    label = "a filter built from another type's columns",
    note = "a typed filter belongs to the entity whose columns built it: build this one from `{E}`'s columns, as in `{E}::filter(|c| ..)`"
)]
pub trait IntoFilter<E> {
    /// The untyped filter.
    fn into_filter(self) -> Result<Filter, Error>;
}

impl<E> IntoFilter<E> for Where<E> {
    fn into_filter(self) -> Result<Filter, Error> {
        Where::into_filter(self)
    }
}

impl<E> IntoFilter<E> for WherePartial<E> {
    fn into_filter(self) -> Result<Filter, Error> {
        WherePartial::into_filter(self)
    }
}

impl<E> IntoFilter<E> for Filter {
    fn into_filter(self) -> Result<Filter, Error> {
        Ok(self)
    }
}

/// A value the service can compare in a filter: a native cell (not JSON).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be compared in a filter",
    label = "the service cannot filter on this column",
    note = "only columns stored as one native cell can be filtered; a JSON-stored value (a Vec, a map, a #[table(json)] type) is opaque text to the service: keep the value you filter on in its own column, or filter in Rust after reading"
)]
pub trait Filterable: TableValue {}

/// A value whose stored order is its Rust order, so `<`, `<=`, `>`, `>=` mean the same to the service.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be ordered in a filter",
    label = "ordering comparisons need a column whose stored order is the value's order",
    note = "use `eq` / `ne` on this column: an enum is stored as its variant name, which sorts by name rather than by declaration, a u64 may not fit the Int64 the service orders, and Guids and booleans have no useful order"
)]
pub trait Ordered: Filterable {}

macro_rules! filterable {
    (ordered: $($t:ty),*) => {$( impl Filterable for $t {} #[diagnostic::do_not_recommend] impl Ordered for $t {} )*};
    (unordered: $($t:ty),*) => {$( impl Filterable for $t {} )*};
}

filterable!(ordered: String, i8, i16, i32, i64, u8, u16, u32, isize, usize, f32, f64, char, crate::DateTime, std::time::SystemTime);
filterable!(unordered: bool, u64, crate::Guid);
#[cfg(feature = "chrono")]
filterable!(ordered: chrono::DateTime<chrono::Utc>);
#[cfg(feature = "time")]
filterable!(ordered: time::OffsetDateTime);
#[cfg(feature = "decimal")]
filterable!(ordered: rust_decimal::Decimal);
#[cfg(feature = "uuid")]
filterable!(unordered: uuid::Uuid);

/// The literal a value is stored as.
fn literal<T: TableValue>(column: &str, value: &T) -> Result<Value, String> {
    let mut row = Row::default();
    value
        .encode(column, &mut row, &EncodeOptions::default())
        .map_err(|e| e.to_string())?;
    match row.take(column) {
        Some(v) if row.properties.is_empty() => Ok(v),
        _ => Err(format!(
            "the value for `{column}` does not fit one cell, so no stored row can match it"
        )),
    }
}

/// A filterable column of entity `E` holding a `T`.
pub struct Col<E, T> {
    name: String,
    _types: PhantomData<fn() -> (E, T)>,
}

impl<E, T> std::fmt::Debug for Col<E, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Col({})", self.name)
    }
}

impl<E, T> std::fmt::Debug for OptCol<E, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OptCol({})", self.name)
    }
}

impl<E, T> Col<E, T> {
    #[doc(hidden)]
    pub fn new(name: String) -> Col<E, T> {
        Col {
            name,
            _types: PhantomData,
        }
    }

    /// The stored column name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// This column, for a projection: `Customer::projection(|c| [c.name.col()])`.
    pub fn col(&self) -> Selected<E> {
        Selected::column(&self.name)
    }
}

impl<E, T> Col<E, T> {
    fn cmp(&self, op: CmpOp, value: &T) -> Where<E>
    where
        T: Filterable,
    {
        Where::new(literal(&self.name, value).map(|v| Filter::cmp(self.name.clone(), op, v)))
    }

    /// `column eq value`.
    pub fn eq(&self, value: impl IntoColumnValue<T>) -> Where<E>
    where
        T: Filterable,
    {
        self.cmp(CmpOp::Eq, &value.into_column_value())
    }

    /// `column ne value`.
    pub fn ne(&self, value: impl IntoColumnValue<T>) -> Where<E>
    where
        T: Filterable,
    {
        self.cmp(CmpOp::Ne, &value.into_column_value())
    }

    /// `column lt value`.
    pub fn lt(&self, value: impl IntoColumnValue<T>) -> Where<E>
    where
        T: Ordered,
    {
        self.cmp(CmpOp::Lt, &value.into_column_value())
    }

    /// `column le value`.
    pub fn le(&self, value: impl IntoColumnValue<T>) -> Where<E>
    where
        T: Ordered,
    {
        self.cmp(CmpOp::Le, &value.into_column_value())
    }

    /// `column gt value`.
    pub fn gt(&self, value: impl IntoColumnValue<T>) -> Where<E>
    where
        T: Ordered,
    {
        self.cmp(CmpOp::Gt, &value.into_column_value())
    }

    /// `column ge value`.
    pub fn ge(&self, value: impl IntoColumnValue<T>) -> Where<E>
    where
        T: Ordered,
    {
        self.cmp(CmpOp::Ge, &value.into_column_value())
    }
}

impl<E> Col<E, bool> {
    /// The column on its own: rows where it is `true`.
    pub fn is_true(&self) -> Where<E> {
        Where::new(Ok(Filter::Column(self.name.clone())))
    }

    /// Rows where the column is `false` (a row without the column does not match).
    pub fn is_false(&self) -> Where<E> {
        self.eq(false)
    }
}

/// The filter columns of a flattened record `R` inside entity `E`; derefs to
/// the record's own columns (`c.address.city`).
pub struct Nested<E, R: ?Sized> {
    prefix: String,
    columns: std::sync::OnceLock<Box<dyn std::any::Any + Send + Sync>>,
    _types: PhantomData<TypeTag<E, R>>,
}

/// Ties a value to types without owning them.
type TypeTag<E, R> = fn() -> (E, Box<R>);

impl<E, R: ?Sized> std::fmt::Debug for Nested<E, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Nested({})", self.prefix)
    }
}

impl<E, R: ?Sized> Nested<E, R> {
    #[doc(hidden)]
    pub fn new(prefix: &str) -> Self {
        Nested {
            prefix: prefix.to_owned(),
            columns: std::sync::OnceLock::new(),
            _types: PhantomData,
        }
    }

    /// The whole flattened record, for a projection: every column of it
    /// (`c.address.col()`); `c.address.city.col()` selects one.
    pub fn col(&self) -> Selected<E> {
        Selected::column(self.prefix.strip_suffix('_').unwrap_or(&self.prefix))
    }
}

impl<E: 'static, R: crate::entity::TableRecord + 'static> std::ops::Deref for Nested<E, R>
where
    R::Columns<E>: Send + Sync,
{
    type Target = R::Columns<E>;
    fn deref(&self) -> &R::Columns<E> {
        self.columns
            .get_or_init(|| Box::new(R::columns::<E>(&self.prefix)))
            .downcast_ref()
            .expect("the columns of this record")
    }
}

/// A filterable optional column of entity `E` holding an `Option<T>`. Only
/// `eq` is offered: a row without the property never matches, so `ne` and
/// the orderings would silently skip `None` rows.
pub struct OptCol<E, T> {
    name: String,
    _types: PhantomData<fn() -> (E, T)>,
}

impl<E, T> OptCol<E, T> {
    #[doc(hidden)]
    pub fn new(name: String) -> OptCol<E, T> {
        OptCol {
            name,
            _types: PhantomData,
        }
    }

    /// The stored column name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// This column, for a projection (a row without it reads as `None`).
    pub fn col(&self) -> Selected<E> {
        Selected::column(&self.name)
    }
}

impl<E, T> OptCol<E, T> {
    /// `column eq value`: rows whose column holds `value` (never rows where it is `None`).
    pub fn eq(&self, value: impl IntoColumnValue<T>) -> WherePartial<E>
    where
        T: Filterable,
    {
        WherePartial {
            filter: literal(&self.name, &value.into_column_value())
                .map(|v| Filter::cmp(self.name.clone(), CmpOp::Eq, v)),
            _entity: PhantomData,
        }
    }

    /// `ne` is refused on an optional column.
    pub fn ne(&self, _value: impl IntoColumnValue<T>) -> WherePartial<E>
    where
        T: NotOnOptional,
    {
        unreachable!("NotOnOptional has no implementations")
    }

    /// Orderings are refused on an optional column.
    pub fn lt(&self, _value: impl IntoColumnValue<T>) -> WherePartial<E>
    where
        T: NotOnOptional,
    {
        unreachable!("NotOnOptional has no implementations")
    }

    /// Orderings are refused on an optional column.
    pub fn gt(&self, _value: impl IntoColumnValue<T>) -> WherePartial<E>
    where
        T: NotOnOptional,
    {
        unreachable!("NotOnOptional has no implementations")
    }

    /// Orderings are refused on an optional column.
    pub fn le(&self, _value: impl IntoColumnValue<T>) -> WherePartial<E>
    where
        T: NotOnOptional,
    {
        unreachable!("NotOnOptional has no implementations")
    }

    /// Orderings are refused on an optional column.
    pub fn ge(&self, _value: impl IntoColumnValue<T>) -> WherePartial<E>
    where
        T: NotOnOptional,
    {
        unreachable!("NotOnOptional has no implementations")
    }
}

/// Never implemented: names why `ne` and orderings are refused on optional columns.
#[diagnostic::on_unimplemented(
    message = "`ne` and ordering comparisons are not available on an optional column",
    label = "a row whose column is None has no property, and the service never matches a missing property, not even with `ne`",
    note = "compare with `eq` only, or make the field non-optional (store a default) if rows without a value should match"
)]
pub trait NotOnOptional {}
