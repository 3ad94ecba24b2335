//! Row keys for time-ordered and versioned rows.
//!
//! The service sorts rows by RowKey ascending only, so keys that count
//! *down* make a plain scan return the newest rows first.

use std::sync::Mutex;

use crate::error::{Error, Result};
use crate::value::DateTime;

/// Thirty nines: the reverse-ticked key of the Unix epoch.
const THIRTY_NINES: u128 = 999_999_999_999_999_999_999_999_999_999;

/// The reverse-ticked key of an instant given as nanoseconds since the Unix
/// epoch: `999…9 (30 nines) − nanos`, zero-padded to 30 digits.
///
/// The function is its own inverse: applied to a key's number it gives the
/// nanoseconds back (see [`decode_reverse_ticked`]).
///
/// ```
/// use unified_tables::keys::reverse_ticked_at;
/// assert_eq!(reverse_ticked_at(0), "9".repeat(30));
/// assert_eq!(reverse_ticked_at(1_755_872_340_123_456_789), "999999999998244127659876543210");
/// ```
pub fn reverse_ticked_at(unix_nanos: u128) -> String {
    format!("{:030}", THIRTY_NINES.saturating_sub(unix_nanos))
}

/// A reverse-ticked key for now. Monotonic within the process: two calls
/// never return the same key, and a later call always sorts first.
pub fn reverse_ticked_now() -> String {
    static LAST: Mutex<u128> = Mutex::new(0);
    let now = DateTime::now().unix_nanos().max(0) as u128;
    let nanos = match LAST.lock() {
        Ok(mut last) => {
            let next = now.max(*last + 1);
            *last = next;
            next
        }
        Err(_) => now,
    };
    reverse_ticked_at(nanos)
}

/// The nanoseconds since the Unix epoch a reverse-ticked key encodes.
pub fn decode_reverse_ticked(key: &str) -> Option<u128> {
    if key.is_empty() || key.len() > 30 || !key.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u128 = key.parse().ok()?;
    THIRTY_NINES.checked_sub(n)
}

/// The instant a reverse-ticked key encodes (at 100 ns precision).
pub fn reverse_ticked_instant(key: &str) -> Option<DateTime> {
    decode_reverse_ticked(key).map(|n| DateTime::from_unix_nanos(n as i128))
}

/// The .NET library's inverted-ticks key: `3155378975999999999 − ticks`,
/// 19 digits, zero-padded.
///
/// ```
/// use unified_tables::{keys::inverted_ticks, DateTime};
/// let t = DateTime::parse("2026-01-01T00:00:00Z").unwrap();
/// assert_eq!(inverted_ticks(t), "2516350751999999999");
/// ```
pub fn inverted_ticks(at: DateTime) -> String {
    format!("{:019}", DateTime::MAX.ticks() - at.ticks())
}

/// The instant an inverted-ticks key encodes.
pub fn from_inverted_ticks(key: &str) -> Option<DateTime> {
    if key.len() != 19 || !key.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: i64 = key.parse().ok()?;
    DateTime::from_ticks(DateTime::MAX.ticks().checked_sub(n)?)
}

/// The highest version a version key can encode.
pub const MAX_VERSION: u32 = i32::MAX as u32;

/// The inverted, zero-padded key of a version: `2147483647 − v` in 20
/// digits, byte-compatible with the common `int.MaxValue - version` scheme,
/// so the newest version sorts first.
///
/// ```
/// use unified_tables::keys::version_key;
/// assert_eq!(version_key(0).unwrap(), "00000000002147483647");
/// assert_eq!(version_key(3).unwrap(), "00000000002147483644");
/// ```
pub fn version_key(version: u32) -> Result<String> {
    if version > MAX_VERSION {
        return Err(Error::InvalidValue {
            column: "RowKey".into(),
            reason: format!("version {version} is above {MAX_VERSION}, the highest a version key encodes"),
        });
    }
    Ok(format!("{:020}", MAX_VERSION - version))
}

/// The version a version key encodes.
pub fn version_from_key(key: &str) -> Option<u32> {
    if key.len() != 20 || !key.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = key.parse().ok()?;
    (n <= MAX_VERSION as u64).then(|| MAX_VERSION - n as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reverse_ticked_is_its_own_inverse_and_monotonic() {
        assert_eq!(reverse_ticked_at(u128::MAX), "000000000000000000000000000000");
        let n = 1_700_000_000_123_456_789u128;
        assert_eq!(decode_reverse_ticked(&reverse_ticked_at(n)), Some(n));
        assert_eq!(
            reverse_ticked_at(decode_reverse_ticked(&reverse_ticked_at(n)).unwrap()),
            reverse_ticked_at(n)
        );
        let keys: Vec<String> = (0..10_000).map(|_| reverse_ticked_now()).collect();
        assert!(
            keys.windows(2).all(|w| w[0] > w[1]),
            "later keys sort first and never repeat"
        );
        assert!(keys.iter().all(|k| k.len() == 30));
        assert!(decode_reverse_ticked("12a").is_none());
    }

    #[test]
    fn inverted_ticks_and_versions() {
        assert_eq!(inverted_ticks(DateTime::UNIX_EPOCH), "2534023007999999999");
        let t = DateTime::parse("2026-01-01T00:00:00Z").unwrap();
        assert_eq!(from_inverted_ticks(&inverted_ticks(t)), Some(t));
        assert_eq!(version_from_key(&version_key(42).unwrap()), Some(42));
        assert!(version_key(MAX_VERSION + 1).is_err());
        assert!(
            version_key(2).unwrap() < version_key(1).unwrap(),
            "newer versions sort first"
        );
    }
}
