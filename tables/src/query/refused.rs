//! Filter columns of fields the service cannot filter on (skipped, JSON-stored,
//! large values): every comparison is a compile error whose message says why.
//! A JSON-stored or large field can still be selected in a projection (it is
//! read whole); a skipped one cannot.

use std::marker::PhantomData;

use super::typed::Where;
use super::Selected;

/// Why a field has no filter column: one never-implemented trait per
/// reason, whose message the compiler shows when a comparison is attempted.
pub mod reason {
    /// Never implemented: the field is `#[table(skip)]`.
    #[diagnostic::on_unimplemented(
        message = "this field is #[table(skip)]: it is not stored, so the service cannot filter on it",
        label = "not a stored column",
        note = "remove #[table(skip)] to store the field, or filter in Rust after reading"
    )]
    pub trait SkippedFieldsCannotBeFiltered {}

    /// Never implemented: the field is stored as JSON.
    #[diagnostic::on_unimplemented(
        message = "this field is stored as one JSON cell: the service cannot filter inside it",
        label = "a JSON-stored column",
        note = "keep the value you filter on in its own column, or filter in Rust after reading"
    )]
    pub trait JsonFieldsCannotBeFiltered {}

    /// Never implemented: the field is a large value or a blob.
    #[diagnostic::on_unimplemented(
        message = "this field is a large value (#[table(split)] or #[blob_content]): it may live in several cells or a blob, so the service cannot filter on it",
        label = "a large-value column",
        note = "keep a small summary of it (a length, a hash, a flag) in its own column and filter on that"
    )]
    pub trait LargeFieldsCannotBeFiltered {}

    /// Never implemented: a skipped field has no stored column to select.
    #[diagnostic::on_unimplemented(
        message = "this field is #[table(skip)]: it is not stored, so a projection cannot select it",
        label = "not a stored column",
        note = "leave it out of the projection: a skipped field always reads as its default; remove #[table(skip)] to store it"
    )]
    pub trait SkippedFieldsCannotBeSelected {}
}

// The types, constructors and `Debug` come from a macro; the refused
// comparisons are written out below it, so that the compiler's note
// ("required by a bound in `LargeCol::<E>::eq`") shows them and no macro.
macro_rules! unfilterable {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        pub struct $name<E> {
            name: String,
            _entity: PhantomData<fn() -> E>,
        }

        impl<E> $name<E> {
            #[doc(hidden)]
            pub fn new(name: String) -> Self {
                $name { name, _entity: PhantomData }
            }

            /// The stored column name (the field's, before any cell suffix).
            pub fn name(&self) -> &str {
                &self.name
            }
        }

        impl<E> std::fmt::Debug for $name<E> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}({})", stringify!($name), self.name)
            }
        }
    };
}

unfilterable!(
    /// The filter column of a skipped field: every comparison is a compile error.
    SkippedCol
);
unfilterable!(
    /// The filter column of a `#[table(json)]` field: every comparison is a compile error.
    JsonCol
);
unfilterable!(
    /// The filter column of a large value or blob: every comparison is a compile error.
    LargeCol
);

const REFUSED: &str = "a refused comparison has no implementations of its bound";

impl<E> SkippedCol<E> {
    /// Refused at compile time; the error says why.
    pub fn eq<V>(&self, _value: V) -> Where<E>
    where
        E: reason::SkippedFieldsCannotBeFiltered,
    {
        unreachable!("{REFUSED}")
    }

    /// Refused at compile time; the error says why.
    pub fn ne<V>(&self, _value: V) -> Where<E>
    where
        E: reason::SkippedFieldsCannotBeFiltered,
    {
        unreachable!("{REFUSED}")
    }

    /// Refused at compile time; the error says why.
    pub fn lt<V>(&self, _value: V) -> Where<E>
    where
        E: reason::SkippedFieldsCannotBeFiltered,
    {
        unreachable!("{REFUSED}")
    }

    /// Refused at compile time; the error says why.
    pub fn le<V>(&self, _value: V) -> Where<E>
    where
        E: reason::SkippedFieldsCannotBeFiltered,
    {
        unreachable!("{REFUSED}")
    }

    /// Refused at compile time; the error says why.
    pub fn gt<V>(&self, _value: V) -> Where<E>
    where
        E: reason::SkippedFieldsCannotBeFiltered,
    {
        unreachable!("{REFUSED}")
    }

    /// Refused at compile time; the error says why.
    pub fn ge<V>(&self, _value: V) -> Where<E>
    where
        E: reason::SkippedFieldsCannotBeFiltered,
    {
        unreachable!("{REFUSED}")
    }
}

impl<E> JsonCol<E> {
    /// Refused at compile time; the error says why.
    pub fn eq<V>(&self, _value: V) -> Where<E>
    where
        E: reason::JsonFieldsCannotBeFiltered,
    {
        unreachable!("{REFUSED}")
    }

    /// Refused at compile time; the error says why.
    pub fn ne<V>(&self, _value: V) -> Where<E>
    where
        E: reason::JsonFieldsCannotBeFiltered,
    {
        unreachable!("{REFUSED}")
    }

    /// Refused at compile time; the error says why.
    pub fn lt<V>(&self, _value: V) -> Where<E>
    where
        E: reason::JsonFieldsCannotBeFiltered,
    {
        unreachable!("{REFUSED}")
    }

    /// Refused at compile time; the error says why.
    pub fn le<V>(&self, _value: V) -> Where<E>
    where
        E: reason::JsonFieldsCannotBeFiltered,
    {
        unreachable!("{REFUSED}")
    }

    /// Refused at compile time; the error says why.
    pub fn gt<V>(&self, _value: V) -> Where<E>
    where
        E: reason::JsonFieldsCannotBeFiltered,
    {
        unreachable!("{REFUSED}")
    }

    /// Refused at compile time; the error says why.
    pub fn ge<V>(&self, _value: V) -> Where<E>
    where
        E: reason::JsonFieldsCannotBeFiltered,
    {
        unreachable!("{REFUSED}")
    }
}

impl<E> LargeCol<E> {
    /// Refused at compile time; the error says why.
    pub fn eq<V>(&self, _value: V) -> Where<E>
    where
        E: reason::LargeFieldsCannotBeFiltered,
    {
        unreachable!("{REFUSED}")
    }

    /// Refused at compile time; the error says why.
    pub fn ne<V>(&self, _value: V) -> Where<E>
    where
        E: reason::LargeFieldsCannotBeFiltered,
    {
        unreachable!("{REFUSED}")
    }

    /// Refused at compile time; the error says why.
    pub fn lt<V>(&self, _value: V) -> Where<E>
    where
        E: reason::LargeFieldsCannotBeFiltered,
    {
        unreachable!("{REFUSED}")
    }

    /// Refused at compile time; the error says why.
    pub fn le<V>(&self, _value: V) -> Where<E>
    where
        E: reason::LargeFieldsCannotBeFiltered,
    {
        unreachable!("{REFUSED}")
    }

    /// Refused at compile time; the error says why.
    pub fn gt<V>(&self, _value: V) -> Where<E>
    where
        E: reason::LargeFieldsCannotBeFiltered,
    {
        unreachable!("{REFUSED}")
    }

    /// Refused at compile time; the error says why.
    pub fn ge<V>(&self, _value: V) -> Where<E>
    where
        E: reason::LargeFieldsCannotBeFiltered,
    {
        unreachable!("{REFUSED}")
    }
}

impl<E> JsonCol<E> {
    /// This field, for a projection: its one JSON cell (or compressed cell),
    /// read and decoded whole.
    pub fn col(&self) -> Selected<E> {
        Selected::column(&self.name)
    }
}

impl<E> LargeCol<E> {
    /// This field, for a projection. A large value's parts live in cells and
    /// rows a projection cannot name, so a query that selects one reads its
    /// rows whole: every field comes back, as without a projection.
    pub fn col(&self) -> Selected<E> {
        Selected::column(&self.name)
    }
}

impl<E> SkippedCol<E> {
    /// Refused at compile time: a skipped field is not stored.
    pub fn col(&self) -> Selected<E>
    where
        E: reason::SkippedFieldsCannotBeSelected,
    {
        unreachable!("the reason trait has no implementations")
    }
}
