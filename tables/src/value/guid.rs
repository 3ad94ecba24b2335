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

    /// A random (version 4) GUID.
    ///
    /// ```
    /// use unified_tables::Guid;
    /// assert_ne!(Guid::new_random(), Guid::new_random());
    /// ```
    pub fn new_random() -> Guid {
        let mut bytes: [u8; 16] = rand::random();
        bytes[6] = (bytes[6] & 0x0f) | 0x40;
        bytes[8] = (bytes[8] & 0x3f) | 0x80;
        Guid(bytes)
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
        f.write_str(
            "not a GUID (expected xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx in hex digits, optionally in braces, or 32 hex digits)",
        )
    }
}

impl std::error::Error for ParseGuidError {}

/// The value of one ASCII hex digit.
fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

impl FromStr for Guid {
    type Err = ParseGuidError;

    /// Accepts exactly these forms (the .NET `D`, `B` and `N` formats), with
    /// hex digits in either case and surrounding whitespace ignored:
    /// `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, the same in `{}` braces, and
    /// 32 hex digits with no hyphens. Anything else, including signs, misplaced
    /// hyphens or other characters, is refused.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let s = match s.strip_prefix('{') {
            Some(inner) => inner
                .strip_suffix('}')
                .filter(|i| i.len() == 36)
                .ok_or(ParseGuidError)?,
            None => s,
        };
        let b = s.as_bytes();
        let hyphenated = match b.len() {
            36 => true,
            32 => false,
            _ => return Err(ParseGuidError),
        };
        let mut out = [0u8; 16];
        let mut pos = 0;
        for (i, byte) in out.iter_mut().enumerate() {
            if hyphenated && matches!(i, 4 | 6 | 8 | 10) {
                if b[pos] != b'-' {
                    return Err(ParseGuidError);
                }
                pos += 1;
            }
            let hi = hex_digit(b[pos]).ok_or(ParseGuidError)?;
            let lo = hex_digit(b[pos + 1]).ok_or(ParseGuidError)?;
            *byte = (hi << 4) | lo;
            pos += 2;
        }
        Ok(Guid(out))
    }
}

#[cfg(feature = "uuid")]
#[cfg_attr(docsrs, doc(cfg(feature = "uuid")))]
impl From<uuid::Uuid> for Guid {
    fn from(u: uuid::Uuid) -> Self {
        Guid(*u.as_bytes())
    }
}

#[cfg(feature = "uuid")]
#[cfg_attr(docsrs, doc(cfg(feature = "uuid")))]
impl From<Guid> for uuid::Uuid {
    fn from(g: Guid) -> Self {
        uuid::Uuid::from_bytes(g.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_documented_forms_only() {
        let g = Guid([
            0x6f, 0x96, 0x19, 0xff, 0x8b, 0x86, 0xd0, 0x11, 0xb4, 0x2d, 0x00, 0xc0, 0x4f, 0xc9, 0x64, 0xff,
        ]);
        for ok in [
            "6f9619ff-8b86-d011-b42d-00c04fc964ff",
            "6F9619FF-8B86-D011-B42D-00C04FC964FF",
            "{6f9619ff-8b86-d011-b42d-00c04fc964ff}",
            "6f9619ff8b86d011b42d00c04fc964ff",
            " 6f9619ff-8b86-d011-b42d-00c04fc964ff\n",
        ] {
            assert_eq!(ok.parse::<Guid>(), Ok(g), "{ok}");
        }
        for bad in [
            "+f9619ff-8b86-d011-b42d-00c04fc964ff",
            "6f9619ff-+b86-d011-b42d-00c04fc964ff",
            "+f+619ff+b86+011+42d+0c04fc964ff+1",
            "6f9619ff8-b86-d011-b42d-00c04fc964ff",
            "6f9619ff-8b86-d011-b42d00c04fc964ff-",
            "{{6f9619ff-8b86-d011-b42d-00c04fc964ff}",
            "{6f9619ff8b86d011b42d00c04fc964ff}",
            "6f9619ff-8b86-d011-b42d-00c04fc964f\u{e9}",
            "6f9619ff-8b86-d011-b42d-00c04fc964fg",
            "",
        ] {
            assert_eq!(bad.parse::<Guid>(), Err(ParseGuidError), "{bad:?}");
        }
    }
}
