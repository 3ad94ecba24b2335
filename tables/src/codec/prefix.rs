//! Where a nested record's cells go: the `Parent_` prefix of their names,
//! and those names spelled out at compile time when the parent knows them.
//!
//! A `#[table(flatten)]` field of a concrete record type gets its cells'
//! full names (`ShipTo_Street`, `ShipTo_City`, ...) as constants joined by
//! [`joined_names!`](crate::joined_names): the record's generated code then
//! names each cell with a `&'static str`, as hand-written code would, and
//! the row borrows it instead of copying it.

use std::ops::Deref;

use super::JoinedName;

/// The prefix of a nested record's columns, with the record's cell names
/// already joined to it when the parent spelled them at compile time.
#[derive(Debug, Clone, Copy)]
pub struct Prefix<'a> {
    text: &'a str,
    /// `text` joined to each of the record's `CELL_NAMES`, or empty.
    names: &'static [&'static str],
}

impl<'a> Prefix<'a> {
    /// A prefix whose names are joined at run time.
    #[inline]
    pub const fn new(text: &'a str) -> Prefix<'a> {
        Prefix { text, names: &[] }
    }

    /// A prefix with the record's cell names joined to it: `names[i]` is
    /// `text` followed by the record's `CELL_NAMES[i]`.
    #[inline]
    pub const fn with_names(text: &'a str, names: &'static [&'static str]) -> Prefix<'a> {
        Prefix { text, names }
    }

    /// The prefix's text (`ShipTo_`).
    #[inline]
    pub fn as_str(&self) -> &'a str {
        self.text
    }

    /// The name of the record's cell `i` (its position in `CELL_NAMES`),
    /// whose name inside the record is `name`.
    #[inline]
    pub fn column(&self, i: usize, name: &str) -> PrefixedName {
        match self.names.get(i) {
            Some(joined) => PrefixedName::Static(joined),
            None => PrefixedName::Joined([self.text, name].concat()),
        }
    }

    /// The prefix of a record nested in this one at cell `i`, with `len`
    /// cells of its own, whose name inside this record is `name`.
    #[inline]
    pub fn nested(&self, i: usize, len: usize, name: &str, joiner: &str) -> NestedPrefix {
        NestedPrefix {
            text: JoinedName::new(&[self.text, name, joiner]),
            names: self.names.get(i..i + len).unwrap_or(&[]),
        }
    }
}

/// The prefix of a record nested in a nested record: [`Prefix::nested`].
#[derive(Debug)]
pub struct NestedPrefix {
    text: JoinedName,
    names: &'static [&'static str],
}

impl NestedPrefix {
    /// The prefix to pass to the nested record.
    #[inline]
    pub fn prefix(&self) -> Prefix<'_> {
        Prefix {
            text: &self.text,
            names: self.names,
        }
    }
}

/// A nested record's cell name: spelled at compile time, or joined now
/// (only under a parent whose own names were joined at run time).
#[derive(Debug)]
pub enum PrefixedName {
    /// Joined at compile time.
    Static(&'static str),
    /// Joined at run time.
    Joined(String),
}

impl Deref for PrefixedName {
    type Target = str;

    #[inline]
    fn deref(&self) -> &str {
        match self {
            PrefixedName::Static(name) => name,
            PrefixedName::Joined(name) => name,
        }
    }
}

/// The bytes `prefix` joined to each of `names` take.
#[doc(hidden)]
pub const fn joined_len(prefix: &str, names: &[&str]) -> usize {
    let mut total = 0;
    let mut i = 0;
    while i < names.len() {
        total += prefix.len() + names[i].len();
        i += 1;
    }
    total
}

/// `prefix` joined to each of `names`, one after another.
#[doc(hidden)]
pub const fn join_each<const N: usize>(prefix: &str, names: &[&str]) -> [u8; N] {
    let mut out = [0u8; N];
    let mut at = 0;
    let mut i = 0;
    while i < names.len() {
        at = copy_into(&mut out, at, prefix.as_bytes());
        at = copy_into(&mut out, at, names[i].as_bytes());
        i += 1;
    }
    out
}

const fn copy_into<const N: usize>(out: &mut [u8; N], mut at: usize, bytes: &[u8]) -> usize {
    let mut j = 0;
    while j < bytes.len() {
        out[at] = bytes[j];
        at += 1;
        j += 1;
    }
    at
}

/// The names [`join_each`] wrote into `joined`, one per name of `names`.
#[doc(hidden)]
pub const fn split_joined<const M: usize>(joined: &'static [u8], prefix: &str, names: &[&str]) -> [&'static str; M] {
    let mut out = [""; M];
    let mut rest = joined;
    let mut i = 0;
    while i < M {
        let (name, tail) = rest.split_at(prefix.len() + names[i].len());
        out[i] = match std::str::from_utf8(name) {
            Ok(name) => name,
            Err(_) => panic!("names joined from whole strings are UTF-8"),
        };
        rest = tail;
        i += 1;
    }
    out
}

/// The number of names in `lists` together.
#[doc(hidden)]
pub const fn total_len(lists: &[&[&'static str]]) -> usize {
    let mut total = 0;
    let mut i = 0;
    while i < lists.len() {
        total += lists[i].len();
        i += 1;
    }
    total
}

/// The names of `lists`, one list after another.
#[doc(hidden)]
pub const fn concat_lists<const M: usize>(lists: &[&[&'static str]]) -> [&'static str; M] {
    let mut out = [""; M];
    let mut at = 0;
    let mut i = 0;
    while i < lists.len() {
        let mut j = 0;
        while j < lists[i].len() {
            out[at] = lists[i][j];
            at += 1;
            j += 1;
        }
        i += 1;
    }
    out
}

/// A constant `&'static [&'static str]`: `prefix` joined to each of
/// `names`, computed at compile time. Both must be constants.
///
/// ```
/// const NAMES: &[&str] = unified_tables::joined_names!("ShipTo_", &["Street", "City"]);
/// assert_eq!(NAMES, ["ShipTo_Street", "ShipTo_City"]);
/// ```
#[doc(hidden)]
#[macro_export]
macro_rules! joined_names {
    ($prefix:expr, $names:expr) => {{
        const __PREFIX: &str = $prefix;
        const __NAMES: &[&str] = $names;
        const __BYTES: [u8; $crate::__private::joined_len(__PREFIX, __NAMES)] =
            $crate::__private::join_each(__PREFIX, __NAMES);
        const __LIST: [&str; __NAMES.len()] = $crate::__private::split_joined(&__BYTES, __PREFIX, __NAMES);
        &__LIST
    }};
}

/// A constant `&'static [&'static str]`: the names of several constant
/// lists, one after another, computed at compile time.
///
/// ```
/// const NAMES: &[&str] = unified_tables::concat_names!(&["Title"], &["ShipTo_City"], &[]);
/// assert_eq!(NAMES, ["Title", "ShipTo_City"]);
/// ```
#[doc(hidden)]
#[macro_export]
macro_rules! concat_names {
    ($($list:expr),* $(,)?) => {{
        const __LISTS: &[&[&str]] = &[$($list),*];
        const __LIST: [&str; $crate::__private::total_len(__LISTS)] = $crate::__private::concat_lists(__LISTS);
        &__LIST
    }};
}

#[cfg(test)]
mod tests {
    use super::Prefix;

    const SHIP_TO: &[&str] = crate::joined_names!("ShipTo_", &["Street", "Zip", "Ünïcode"]);

    #[test]
    fn names_are_joined_at_compile_time() {
        assert_eq!(SHIP_TO, ["ShipTo_Street", "ShipTo_Zip", "ShipTo_Ünïcode"]);
        const EMPTY: &[&str] = crate::joined_names!("P_", &[]);
        assert!(EMPTY.is_empty());
        const ALL: &[&str] = crate::concat_names!(&["A"], SHIP_TO, &[], &["B"]);
        assert_eq!(ALL.len(), 5);
        assert_eq!((ALL[0], ALL[1], ALL[4]), ("A", "ShipTo_Street", "B"));
    }

    #[test]
    fn a_prefix_names_cells_from_its_table_or_joins_them() {
        let spelled = Prefix::with_names("ShipTo_", SHIP_TO);
        assert_eq!(&*spelled.column(1, "Zip"), "ShipTo_Zip");
        assert!(std::ptr::eq(spelled.column(1, "Zip").as_ptr(), SHIP_TO[1].as_ptr()));
        let joined = Prefix::new("Bill_");
        assert_eq!(&*joined.column(1, "Zip"), "Bill_Zip");
        let nested = spelled.nested(0, 2, "Geo", "_");
        assert_eq!(nested.prefix().as_str(), "ShipTo_Geo_");
        assert_eq!(&*nested.prefix().column(1, "Zip"), "ShipTo_Zip");
        let unnamed = joined.nested(0, 2, "Geo", "_");
        assert_eq!(&*unnamed.prefix().column(0, "Lat"), "Bill_Geo_Lat");
    }
}
