//! Filter columns of fields the service cannot filter on (skipped, JSON-stored,
//! large values): every comparison is a compile error whose message says why.

use std::marker::PhantomData;

use super::typed::Where;

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
}

// The types, constructors and `Debug` come from a macro; the refused
// comparisons are written out below it, so that the compiler's note
// ("required by a bound in `LargeCol::<E>::eq`") shows them and no macro.
macro_rules! unfilterable {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        pub struct $name<E> {
            _entity: PhantomData<fn() -> E>,
        }

        impl<E> $name<E> {
            #[doc(hidden)]
            pub fn new() -> Self {
                $name { _entity: PhantomData }
            }
        }

        impl<E> std::fmt::Debug for $name<E> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(stringify!($name))
            }
        }

        impl<E> Default for $name<E> {
            fn default() -> Self {
                Self::new()
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
