//! [`ToColumnName`]: what a [`Properties`] accepts as a column's name.

use super::{ColumnName, Properties};

/// What names a column where a [`Properties`] takes one: `&str` (copied,
/// or borrowed when it is one of the row's [expected
/// names](Properties::expecting)), `String`, `&String`, or a
/// [`ColumnName`] (kept as it is).
pub trait ToColumnName: sealed::Sealed {
    /// The name, as `properties` keeps it.
    #[doc(hidden)]
    fn to_column_name(self, properties: &mut Properties) -> ColumnName;
    /// The name's text.
    #[doc(hidden)]
    fn text(&self) -> &str;
    /// The text, for a name given by reference (`&str`): it may be the very
    /// text of one of the row's expected names.
    #[doc(hidden)]
    #[inline]
    fn borrowed(&self) -> Option<&str> {
        None
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for &str {}
    impl Sealed for String {}
    impl Sealed for &String {}
    impl Sealed for super::ColumnName {}
    impl Sealed for &super::ColumnName {}
    impl Sealed for std::sync::Arc<str> {}
    impl Sealed for Box<str> {}
}

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
