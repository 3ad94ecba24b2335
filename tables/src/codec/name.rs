//! Column names joined from parts without allocating: a nested record's
//! `Parent_` prefix and a field's name, or a column and a suffix.

use std::ops::Deref;

/// Bytes a joined name may take on the stack; longer names (rare: the
/// service allows 255 characters) go on the heap.
const STACK_BYTES: usize = 64;

/// A column name joined from parts, held on the stack for names of up to
/// 64 bytes. Derefs to `str`.
///
/// The derive's generated code builds one per nested-record field, so that
/// encoding and decoding a nested record allocates no names of its own.
pub struct JoinedName {
    buf: [u8; STACK_BYTES],
    len: usize,
    heap: Option<String>,
}

impl JoinedName {
    /// The name `parts` spell one after another.
    #[inline]
    pub fn new(parts: &[&str]) -> Self {
        let len = parts.iter().map(|p| p.len()).sum();
        let mut buf = [0u8; STACK_BYTES];
        if len > STACK_BYTES {
            return Self {
                buf,
                len: 0,
                heap: Some(parts.concat()),
            };
        }
        let mut at = 0;
        for part in parts {
            buf[at..at + part.len()].copy_from_slice(part.as_bytes());
            at += part.len();
        }
        Self { buf, len, heap: None }
    }

    /// The joined name.
    #[inline]
    pub fn as_str(&self) -> &str {
        match &self.heap {
            Some(name) => name,
            // Whole UTF-8 strings joined are UTF-8; the check cannot fail.
            None => std::str::from_utf8(&self.buf[..self.len]).unwrap_or_default(),
        }
    }
}

impl Deref for JoinedName {
    type Target = str;

    #[inline]
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for JoinedName {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl std::fmt::Debug for JoinedName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::JoinedName;

    #[test]
    fn joins_parts_in_order() {
        assert_eq!(&*JoinedName::new(&["Address_", "City"]), "Address_City");
        assert_eq!(&*JoinedName::new(&["", "Ünïcode_", "名前"]), "Ünïcode_名前");
        assert_eq!(&*JoinedName::new(&[]), "");
    }

    #[test]
    fn names_longer_than_the_stack_buffer_are_whole() {
        let long = "x".repeat(300);
        let joined = JoinedName::new(&["A_", &long]);
        assert_eq!(joined.len(), 302);
        assert_eq!(&*joined, format!("A_{long}"));
        let exact = "y".repeat(64);
        assert_eq!(&*JoinedName::new(&[&exact[..20], &exact[20..]]), exact);
        let over = "z".repeat(65);
        assert_eq!(&*JoinedName::new(&[&over[..20], &over[20..]]), over);
    }
}
