//! The names a [`Properties`] accepts for a column: the [`ToColumnName`]
//! impls of `&str`, `String`, `&String`, [`ColumnName`], `Arc<str>` and `Box<str>`.

use super::properties::ToColumnName;
use super::{ColumnName, Properties};

impl ToColumnName for &str {
    #[inline]
    fn to_column_name(self, properties: &mut Properties) -> ColumnName {
        properties.intern(self)
    }
    #[inline]
    fn borrowed(&self) -> Option<&str> {
        Some(self)
    }
    #[inline]
    fn text(&self) -> &str {
        self
    }
}

impl ToColumnName for &String {
    #[inline]
    fn to_column_name(self, properties: &mut Properties) -> ColumnName {
        properties.intern(self)
    }
    #[inline]
    fn text(&self) -> &str {
        self
    }
}

impl ToColumnName for ColumnName {
    #[inline]
    fn to_column_name(self, _: &mut Properties) -> ColumnName {
        self
    }
    #[inline]
    fn text(&self) -> &str {
        self
    }
}

impl ToColumnName for &ColumnName {
    #[inline]
    fn to_column_name(self, _: &mut Properties) -> ColumnName {
        self.clone()
    }
    #[inline]
    fn text(&self) -> &str {
        self
    }
}

/// Owned names, kept as they are.
macro_rules! owned_names {
    ($($ty:ty),*) => {$(
        impl ToColumnName for $ty {
            #[inline]
            fn to_column_name(self, _: &mut Properties) -> ColumnName {
                ColumnName::from(self)
            }
            #[inline]
            fn text(&self) -> &str {
                self
            }
        }
    )*};
}

owned_names!(String, std::sync::Arc<str>, Box<str>);
