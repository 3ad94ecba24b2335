//! `Guid`: the value of an `Edm.Guid` cell.

use std::fmt;
use std::str::FromStr;

/// A 128-bit identifier stored as `Edm.Guid`, written in the hyphenated
/// lower-case form `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
///
/// With the `uuid` feature, `uuid::Uuid` fields are stored the same way and
/// convert to and from `Guid`.
///
/// ```
/// use unified_tables::Guid;
/// let g: Guid = "6F9619FF-8B86-D011-B42D-00C04FC964FF".parse().unwrap();
/// assert_eq!(g.to_string(), "6f9619ff-8b86-d011-b42d-00c04fc964ff");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Guid(pub [u8; 16]);

impl Guid {
    /// The big-endian bytes in the order they are written.
    pub const fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }
}

impl fmt::Display for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, b) in self.0.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                f.write_str("-")?;
            }
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The text was not a GUID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseGuidError;

impl fmt::Display for ParseGuidError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not a GUID (expected 32 hex digits, optionally hyphenated and braced)")
    }
}

impl std::error::Error for ParseGuidError {}

impl FromStr for Guid {
    type Err = ParseGuidError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim().trim_start_matches('{').trim_end_matches('}');
        let hex: Vec<u8> = s.bytes().filter(|b| *b != b'-').collect();
        if hex.len() != 32 || (s.len() != 32 && s.len() != 36) {
            return Err(ParseGuidError);
        }
        let mut out = [0u8; 16];
        for (i, pair) in hex.chunks(2).enumerate() {
            let text = std::str::from_utf8(pair).map_err(|_| ParseGuidError)?;
            out[i] = u8::from_str_radix(text, 16).map_err(|_| ParseGuidError)?;
        }
        Ok(Guid(out))
    }
}

#[cfg(feature = "uuid")]
impl From<uuid::Uuid> for Guid {
    fn from(u: uuid::Uuid) -> Self {
        Guid(*u.as_bytes())
    }
}

#[cfg(feature = "uuid")]
impl From<Guid> for uuid::Uuid {
    fn from(g: Guid) -> Self {
        uuid::Uuid::from_bytes(g.0)
    }
}
