//! Column names that cost nothing to make from a literal and little to
//! clone: a row built by generated code, or read from a page where every
//! row repeats the same names, does not allocate a name per cell.

use std::borrow::{Borrow, Cow};
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

/// Whether no two of `names` are the same (a `const fn`, for generated code
/// to check its list at compile time).
pub const fn names_are_distinct(names: &[&str]) -> bool {
    let mut i = 0;
    while i < names.len() {
        let mut j = i + 1;
        while j < names.len() {
            if same_bytes(names[i].as_bytes(), names[j].as_bytes()) {
                return false;
            }
            j += 1;
        }
        i += 1;
    }
    true
}

const fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut k = 0;
    while k < a.len() {
        if a[k] != b[k] {
            return false;
        }
        k += 1;
    }
    true
}

/// The name of a column: a `&'static str`, a short name held inline, or a
/// shared string.
///
/// Derefs to `str` and compares, orders and hashes as its text, so it goes
/// where a `&str` does. Made from a literal it borrows it; a name of up to
/// 22 bytes is held in place (no allocation); a longer one is copied once
/// and cloned by reference count.
///
/// ```
/// use unified_tables::ColumnName;
/// let name = ColumnName::from("Total");
/// assert_eq!(name, "Total");
/// assert!(name.starts_with("To"));
/// assert_eq!(ColumnName::from(String::from("Total")), name);
/// ```
#[derive(Clone)]
pub struct ColumnName(Repr);

#[derive(Clone)]
enum Repr {
    Static(&'static str),
    /// The first `len` bytes are the UTF-8 text.
    Inline {
        len: u8,
        bytes: [u8; INLINE],
    },
    Shared(Arc<str>),
}

/// The longest name held in place.
const INLINE: usize = 22;

impl ColumnName {
    /// The longest name held in place, in bytes.
    pub(crate) const INLINE: usize = INLINE;

    /// A name borrowing a literal (or any `'static` text).
    pub const fn from_static(name: &'static str) -> ColumnName {
        ColumnName(Repr::Static(name))
    }

    /// A name holding a copy of `name`.
    pub fn copied(name: &str) -> ColumnName {
        match Self::inline(name) {
            Some(inline) => inline,
            None => ColumnName(Repr::Shared(Arc::from(name))),
        }
    }

    /// `name` held in place, when it is short enough.
    fn inline(name: &str) -> Option<ColumnName> {
        let len = name.len();
        if len > INLINE {
            return None;
        }
        let mut bytes = [0u8; INLINE];
        bytes[..len].copy_from_slice(name.as_bytes());
        Some(ColumnName(Repr::Inline { len: len as u8, bytes }))
    }

    /// The name's text.
    #[inline]
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Static(s) => s,
            // Made from a `&str` only: always UTF-8.
            Repr::Inline { len, bytes } => std::str::from_utf8(&bytes[..usize::from(*len)]).unwrap_or_default(),
            Repr::Shared(s) => s,
        }
    }

    /// The name's UTF-8 bytes (no check: the cheap way to compare names).
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Static(s) => s.as_bytes(),
            Repr::Inline { len, bytes } => &bytes[..usize::from(*len)],
            Repr::Shared(s) => s.as_bytes(),
        }
    }

    /// The name as an owned `String`.
    pub fn into_string(self) -> String {
        self.as_str().to_owned()
    }
}

impl Default for ColumnName {
    /// The empty name.
    fn default() -> ColumnName {
        ColumnName::from_static("")
    }
}

impl Deref for ColumnName {
    type Target = str;
    #[inline]
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for ColumnName {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for ColumnName {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl From<&'static str> for ColumnName {
    fn from(name: &'static str) -> ColumnName {
        ColumnName::from_static(name)
    }
}

impl From<String> for ColumnName {
    fn from(name: String) -> ColumnName {
        match ColumnName::inline(&name) {
            Some(inline) => inline,
            None => ColumnName(Repr::Shared(Arc::from(name))),
        }
    }
}

impl From<&String> for ColumnName {
    fn from(name: &String) -> ColumnName {
        ColumnName::copied(name)
    }
}

impl From<Box<str>> for ColumnName {
    fn from(name: Box<str>) -> ColumnName {
        ColumnName(Repr::Shared(Arc::from(name)))
    }
}

impl From<Arc<str>> for ColumnName {
    fn from(name: Arc<str>) -> ColumnName {
        ColumnName(Repr::Shared(name))
    }
}

impl From<Cow<'static, str>> for ColumnName {
    fn from(name: Cow<'static, str>) -> ColumnName {
        match name {
            Cow::Borrowed(s) => ColumnName::from_static(s),
            Cow::Owned(s) => ColumnName::from(s),
        }
    }
}

impl From<&ColumnName> for ColumnName {
    fn from(name: &ColumnName) -> ColumnName {
        name.clone()
    }
}

impl From<ColumnName> for String {
    fn from(name: ColumnName) -> String {
        name.into_string()
    }
}

impl PartialEq for ColumnName {
    fn eq(&self, other: &ColumnName) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for ColumnName {}

impl PartialEq<str> for ColumnName {
    fn eq(&self, other: &str) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl PartialEq<&str> for ColumnName {
    fn eq(&self, other: &&str) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl PartialEq<String> for ColumnName {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other.as_str()
    }
}

impl PartialEq<ColumnName> for str {
    fn eq(&self, other: &ColumnName) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<ColumnName> for &str {
    fn eq(&self, other: &ColumnName) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<ColumnName> for String {
    fn eq(&self, other: &ColumnName) -> bool {
        self.as_str() == other.as_str()
    }
}

impl PartialOrd for ColumnName {
    fn partial_cmp(&self, other: &ColumnName) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ColumnName {
    fn cmp(&self, other: &ColumnName) -> Ordering {
        // Byte order of UTF-8 is the order of the text.
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl Hash for ColumnName {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl fmt::Display for ColumnName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for ColumnName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl serde::Serialize for ColumnName {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}
