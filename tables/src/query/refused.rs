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

macro_rules! unfilterable {
    ($(#[$doc:meta])* $name:ident: $reason:path) => {
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

        unfilterable!(@methods $name, $reason, eq, ne, lt, le, gt, ge);
    };
    (@methods $name:ident, $reason:path, $($m:ident),*) => {
        impl<E> $name<E> {
            $(
                /// Refused at compile time; the error says why.
                pub fn $m<V>(&self, _value: V) -> Where<E>
                where
                    E: $reason,
                {
                    unreachable!("the reason trait has no implementations")
                }
            )*
        }
    };
}

unfilterable!(
    /// The filter column of a skipped field: every comparison is a compile error.
    SkippedCol: reason::SkippedFieldsCannotBeFiltered
);
unfilterable!(
    /// The filter column of a `#[table(json)]` field: every comparison is a compile error.
    JsonCol: reason::JsonFieldsCannotBeFiltered
);
unfilterable!(
    /// The filter column of a large value or blob: every comparison is a compile error.
    LargeCol: reason::LargeFieldsCannotBeFiltered
);
