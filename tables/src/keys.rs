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

/// The next inverted-ticks key for now, monotonic within the process: two
/// calls never encode the same tick, and a later call always sorts first.
fn inverted_ticks_now() -> String {
    static LAST: Mutex<i64> = Mutex::new(i64::MIN);
    let now = DateTime::now().ticks();
    let ticks = match LAST.lock() {
        Ok(mut last) => {
            let next = now.max(last.saturating_add(1)).min(DateTime::MAX.ticks());
            *last = next;
            next
        }
        Err(_) => now,
    };
    format!("{:019}", DateTime::MAX.ticks() - ticks)
}

// --- Append-log keys -------------------------------------------------------

/// The character between a sub-stream's name and the time-ordered part of
/// an append-log key (`{sub}~{time}`). A key is split on its **last** `~`, so
/// a sub-stream name may contain `~` in the [`AppendKeyFormat::DotNet`] format.
pub const SUB_STREAM_SEPARATOR: char = '~';

/// Digits of a [`AppendKeyFormat::ReverseTicked`] key.
const REVERSE_TICKED_DIGITS: usize = 30;
/// Digits of a [`AppendKeyFormat::DotNet`] key's inverted ticks.
const INVERTED_TICKS_DIGITS: usize = 19;
/// Hex digits of the random suffix of a [`AppendKeyFormat::DotNet`] key.
const DOTNET_SUFFIX_HEX: usize = 8;

/// How [`Store::append`](crate::Store::append) keys the rows of an append log.
/// Reads ([`Store::recent`](crate::Store::recent)) accept both formats in one
/// log and merge them by time.
///
/// ```
/// use unified_tables::keys::{append_key_at, AppendKeyFormat};
/// use unified_tables::DateTime;
/// let t = DateTime::parse("2026-01-01T00:00:00Z").unwrap();
/// assert_eq!(
///     append_key_at(AppendKeyFormat::ReverseTicked, Some("s1"), t, None),
///     "s1~999999999998232774399999999999"
/// );
/// assert_eq!(
///     append_key_at(AppendKeyFormat::DotNet, Some("s1"), t, Some(0x1a2b3c4d)),
///     "s1~2516350751999999999-1a2b3c4d"
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum AppendKeyFormat {
    /// `[{sub}~]{30 digits}`: thirty nines minus the nanoseconds since the
    /// Unix epoch ([`reverse_ticked_at`]). The default.
    #[default]
    ReverseTicked,
    /// `[{sub}~]{19 digits}-{8 hex}`: the .NET library's key, 19-digit
    /// inverted ticks ([`inverted_ticks`]) and 8 random lower-case hex digits.
    /// Choose it for a log that .NET services also append to or read.
    DotNet,
}

/// An append-log RowKey, split into its parts by [`parse_append_key`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendKey<'a> {
    /// The sub-stream, when the key has one.
    pub sub_stream: Option<&'a str>,
    /// Which format the time-ordered part has.
    pub format: AppendKeyFormat,
    /// The instant, as nanoseconds since the Unix epoch (in steps of 100 ns
    /// for the .NET format).
    pub unix_nanos: i128,
    /// The random suffix of a .NET key (8 hex digits), when present.
    pub unique: Option<&'a str>,
}

impl AppendKey<'_> {
    /// The instant the key encodes (at 100 ns precision).
    pub fn instant(&self) -> DateTime {
        DateTime::from_unix_nanos(self.unix_nanos)
    }
}

fn with_sub_stream(sub_stream: Option<&str>, time: &str) -> String {
    match sub_stream {
        Some(s) => format!("{s}{SUB_STREAM_SEPARATOR}{time}"),
        None => time.to_owned(),
    }
}

/// The append-log key of `at` in `format`. `unique` is the suffix of a .NET
/// key (its low 32 bits as 8 hex digits; `None` writes no suffix); the
/// [`AppendKeyFormat::ReverseTicked`] format has none and ignores it.
pub fn append_key_at(format: AppendKeyFormat, sub_stream: Option<&str>, at: DateTime, unique: Option<u32>) -> String {
    match format {
        AppendKeyFormat::ReverseTicked => {
            with_sub_stream(sub_stream, &reverse_ticked_at(at.unix_nanos().max(0) as u128))
        }
        AppendKeyFormat::DotNet => {
            let mut time = inverted_ticks(at);
            if let Some(u) = unique {
                time.push_str(&format!("-{u:08x}"));
            }
            with_sub_stream(sub_stream, &time)
        }
    }
}

/// A new append-log key for now in `format`: unique and decreasing within the
/// process (a later key always sorts first); a .NET key carries a random suffix,
/// as the .NET library's keys do, so that writers in other processes do not collide.
pub fn append_key_now(format: AppendKeyFormat, sub_stream: Option<&str>) -> String {
    match format {
        AppendKeyFormat::ReverseTicked => with_sub_stream(sub_stream, &reverse_ticked_now()),
        AppendKeyFormat::DotNet => {
            let time = format!("{}-{:08x}", inverted_ticks_now(), rand::random::<u32>());
            with_sub_stream(sub_stream, &time)
        }
    }
}

/// Splits an append-log RowKey of either format on its **last** `~`, as the
/// .NET library does: `None` when the part after it (or the whole key,
/// without a `~`) is neither 30 digits nor 19 digits with an optional `-`
/// and 8 hex digits.
///
/// ```
/// use unified_tables::keys::{parse_append_key, AppendKeyFormat};
/// let k = parse_append_key("a~b~2516350751999999999-1a2b3c4d").unwrap();
/// assert_eq!(k.sub_stream, Some("a~b"));
/// assert_eq!(k.format, AppendKeyFormat::DotNet);
/// assert_eq!(k.instant().to_string(), "2026-01-01T00:00:00.0000000Z");
/// assert!(parse_append_key("session~12").is_none());
/// ```
pub fn parse_append_key(row_key: &str) -> Option<AppendKey<'_>> {
    let (sub_stream, time) = match row_key.rfind(SUB_STREAM_SEPARATOR) {
        Some(at) => (Some(&row_key[..at]), &row_key[at + SUB_STREAM_SEPARATOR.len_utf8()..]),
        None => (None, row_key),
    };
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if time.len() == REVERSE_TICKED_DIGITS && all_digits(time) {
        let nanos = decode_reverse_ticked(time)?;
        return Some(AppendKey {
            sub_stream,
            format: AppendKeyFormat::ReverseTicked,
            unix_nanos: i128::try_from(nanos).ok()?,
            unique: None,
        });
    }
    let ticks = time.get(..INVERTED_TICKS_DIGITS)?;
    let unique = match &time[INVERTED_TICKS_DIGITS..] {
        "" => None,
        rest => {
            let hex = rest.strip_prefix('-')?;
            if hex.len() != DOTNET_SUFFIX_HEX || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            Some(hex)
        }
    };
    let at = from_inverted_ticks(ticks)?;
    Some(AppendKey {
        sub_stream,
        format: AppendKeyFormat::DotNet,
        unix_nanos: at.unix_nanos(),
        unique,
    })
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

    #[test]
    fn append_keys_of_both_formats_parse_back() {
        let t = DateTime::parse("2026-01-01T00:00:00Z").unwrap();
        for format in [AppendKeyFormat::ReverseTicked, AppendKeyFormat::DotNet] {
            for sub in [None, Some("s"), Some("a~b"), Some("~")] {
                let key = append_key_at(format, sub, t, Some(0xdead_beef));
                let parsed = parse_append_key(&key).unwrap();
                assert_eq!(
                    (parsed.sub_stream, parsed.format, parsed.instant()),
                    (sub, format, t),
                    "{key}"
                );
                let now = append_key_now(format, sub);
                assert_eq!(parse_append_key(&now).unwrap().sub_stream, sub, "{now}");
            }
        }
        assert_eq!(
            parse_append_key("a~2516350751999999999-deadbeef").unwrap().unique,
            Some("deadbeef")
        );
        assert_eq!(parse_append_key("2516350751999999999").unwrap().unique, None);
        for bad in [
            "",
            "a~",
            "a~251635075199999999",
            "a~2516350751999999999-",
            "a~2516350751999999999-deadbee",
            "a~2516350751999999999-deadbeefa",
            "a~2516350751999999999xdeadbeef",
            "a~2516350751999999999-deadbeeg",
            "a~99999999999823277439999999999",
            "a~0001",
            "a~9999999999982327743999999999é",
        ] {
            assert!(parse_append_key(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn dotnet_keys_now_decrease_within_the_process() {
        let keys: Vec<String> = (0..10_000)
            .map(|_| append_key_now(AppendKeyFormat::DotNet, None))
            .collect();
        let ticks: Vec<&str> = keys.iter().map(|k| &k[..19]).collect();
        assert!(
            ticks.windows(2).all(|w| w[0] > w[1]),
            "later keys sort first and never share a tick"
        );
        assert!(keys.iter().all(|k| k.len() == 28 && parse_append_key(k).is_some()));
    }
}
