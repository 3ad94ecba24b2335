//! The text forms of indexed values: each cell becomes key text that sorts,
//! under the service's ordinal UTF-16 comparison of keys, as the value sorts
//! in Rust, and that holds no character the service refuses in a key.
//!
//! | cell | text |
//! |---|---|
//! | `Edm.String` | the text, with a few characters escaped (below) |
//! | `Edm.Int32`, `Edm.Int64` | `P` and 19 digits for `v ≥ 0`, `N` and 19 digits of `v + 2⁶³` for `v < 0` |
//! | `Edm.Double` | 16 upper-case hex digits of the bits, sign flipped (all bits of a negative); `-0` as `0`, every NaN as one, above `+∞` |
//! | `Edm.DateTime` | `YYYY-MM-DDTHH:MM:SS.fffffffZ` |
//! | `Edm.Guid` | 32 lower-case hex digits with hyphens, as written |
//! | `Edm.Boolean` | `0` or `1` |
//! | `Edm.Binary` | upper-case hex, two digits per byte |
//!
//! Every value of a key is followed by [`INDEX_VALUE_END`] (`!`), which sorts
//! below the first character of every text form, so a value that is a
//! prefix of another sorts first and a composite sorts by its first value.
//!
//! **Strings.** A character is kept as it is unless the service refuses it
//! in keys or it sorts at or below `"`; such a character is written as a
//! lead and a code that sort where the character would. The mark `\u{FFFD}`
//! sorts above the first character of every text form (the characters
//! U+E000 – U+FFFF are never kept as they are), so a lead followed by it
//! sorts after the lead kept as itself and whatever follows it:
//!
//! | characters | written as |
//! |---|---|
//! | U+0000 – U+0023 (controls, space, `!`, `"`, `#`) | `"` and two hex digits of the code point |
//! | `/` | `.\u{FFFD}` |
//! | `?` | `>\u{FFFD}` |
//! | `\` | `[\u{FFFD}` |
//! | U+007F – U+009F (controls) | `~\u{FFFD}` and two hex digits of the code point less 0x7F |
//! | U+E000 – U+FFFF | U+D7FF, `\u{FFFD}` and four hex digits of the code point less 0xE000 |
//!
//! The last row makes the characters U+E000 – U+FFFF sort below the
//! characters past U+FFFF (written as surrogate pairs, which sort from
//! U+D800), as they do in Rust, where the service's UTF-16 comparison
//! alone would sort them above. Everything else (letters, digits, `.`,
//! `@`, `-`, `_`, `:`, non-ASCII text) is kept, so keys stay readable.

use std::fmt::Write as _;

use crate::layout::INDEX_VALUE_END;
use crate::value::Value;

/// Appends the text form of `value` and the value end (`!`).
pub fn encode_cell(value: &Value, out: &mut String) {
    match value {
        Value::String(s) => encode_text(s, out),
        Value::Bool(b) => out.push(if *b { '1' } else { '0' }),
        Value::Int32(n) => encode_integer(i64::from(*n), out),
        Value::Int64(n) => encode_integer(*n, out),
        Value::Double(d) => {
            let _ = write!(out, "{:016X}", ordered_bits(*d));
        }
        Value::DateTime(t) => {
            let _ = write!(out, "{t}");
        }
        Value::Guid(g) => {
            let _ = write!(out, "{g}");
        }
        Value::Binary(bytes) => {
            for b in bytes {
                let _ = write!(out, "{b:02X}");
            }
        }
    }
    out.push(INDEX_VALUE_END);
}

/// The text form of `value` followed by the value end.
pub fn cell_text(value: &Value) -> String {
    let mut out = String::new();
    encode_cell(value, &mut out);
    out
}

/// Appends the text form of a string (no value end): the start of the key
/// text of every string that starts with `s`.
pub fn encode_text(s: &str, out: &mut String) {
    for c in s.chars() {
        let u = u32::from(c);
        match u {
            0x00..=0x23 => {
                let _ = write!(out, "\"{u:02X}");
            }
            0x2F => out.push_str(".\u{FFFD}"),
            0x3F => out.push_str(">\u{FFFD}"),
            0x5C => out.push_str("[\u{FFFD}"),
            0x7F..=0x9F => {
                let _ = write!(out, "~\u{FFFD}{:02X}", u - 0x7F);
            }
            0xE000..=0xFFFF => {
                let _ = write!(out, "\u{D7FF}\u{FFFD}{:04X}", u - 0xE000);
            }
            _ => out.push(c),
        }
    }
}

/// The text form of a string, without the value end.
pub fn text_form(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    encode_text(s, &mut out);
    out
}

fn encode_integer(n: i64, out: &mut String) {
    if n >= 0 {
        let _ = write!(out, "P{n:019}");
    } else {
        // n + 2^63 is in 0 ..= 2^63 - 1: 19 digits at most.
        let shifted = (n as i128 + (1i128 << 63)) as u64;
        let _ = write!(out, "N{shifted:019}");
    }
}

/// The bits of `d` as an unsigned number that orders as the value does.
fn ordered_bits(d: f64) -> u64 {
    let d = if d == 0.0 {
        0.0 // -0 and +0 are one value
    } else if d.is_nan() {
        f64::NAN
    } else {
        d
    };
    let bits = d.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}

#[cfg(test)]
mod tests {
    use std::cmp::Ordering;

    use proptest::prelude::*;

    use super::*;
    use crate::value::{DateTime, Guid};

    /// The service's comparison of keys: ordinal over UTF-16 code units.
    fn service_cmp(a: &str, b: &str) -> Ordering {
        a.encode_utf16().cmp(b.encode_utf16())
    }

    fn key(v: &Value) -> String {
        cell_text(v)
    }

    fn assert_orders<T: Ord + std::fmt::Debug>(a: &T, b: &T, ka: &str, kb: &str) {
        assert_eq!(a.cmp(b), service_cmp(ka, kb), "{a:?} vs {b:?}: {ka:?} vs {kb:?}");
    }

    fn keyable(s: &str) -> bool {
        s.chars().all(|c| !crate::service::is_refused_key_char(c))
    }

    #[test]
    fn strings_keep_ordinary_text_readable() {
        assert_eq!(key(&Value::String("alice@example.com".into())), "alice@example.com!");
        assert_eq!(key(&Value::String("a b/c?d".into())), "a\"20b.\u{FFFD}c>\u{FFFD}d!");
        assert_eq!(key(&Value::String("~".into())), "~!");
        assert_eq!(key(&Value::String(String::new())), "!");
        assert!(keyable(&key(&Value::String("\u{0}\u{1f}#/\\?\u{7f}\u{9f}".into()))));
    }

    #[test]
    fn integers_sort_across_the_sign() {
        let values = [i64::MIN, -1_000_000, -1, 0, 1, 42, i64::MAX];
        for a in values {
            for b in values {
                assert_orders(&a, &b, &key(&Value::Int64(a)), &key(&Value::Int64(b)));
            }
        }
        assert_eq!(
            key(&Value::Int32(42)),
            key(&Value::Int64(42)),
            "one form for both widths"
        );
        assert_eq!(key(&Value::Int64(42)), "P0000000000000000042!");
    }

    #[test]
    fn doubles_sort_with_their_edges() {
        let values = [
            f64::NEG_INFINITY,
            -1e300,
            -1.5,
            -f64::MIN_POSITIVE,
            0.0,
            f64::MIN_POSITIVE,
            2.5,
            f64::INFINITY,
        ];
        for a in values {
            for b in values {
                let ord = a.partial_cmp(&b).unwrap();
                assert_eq!(
                    ord,
                    service_cmp(&key(&Value::Double(a)), &key(&Value::Double(b))),
                    "{a} vs {b}"
                );
            }
        }
        assert_eq!(key(&Value::Double(-0.0)), key(&Value::Double(0.0)));
        assert_eq!(key(&Value::Double(f64::NAN)), key(&Value::Double(-f64::NAN)));
        assert_eq!(
            service_cmp(&key(&Value::Double(f64::INFINITY)), &key(&Value::Double(f64::NAN))),
            Ordering::Less
        );
    }

    #[test]
    fn dates_guids_booleans_and_bytes_sort() {
        let t = |s: &str| DateTime::parse(s).unwrap();
        let dates = [
            t("1601-01-01T00:00:00Z"),
            t("2024-02-29T23:59:59.9999999Z"),
            t("2024-03-01T00:00:00Z"),
            t("9999-12-31T00:00:00Z"),
        ];
        for a in dates {
            for b in dates {
                assert_orders(&a, &b, &key(&Value::DateTime(a)), &key(&Value::DateTime(b)));
            }
        }
        let g = [Guid([0; 16]), Guid([0x0f; 16]), Guid([0xa0; 16]), Guid([0xff; 16])];
        for a in g {
            for b in g {
                assert_orders(&a, &b, &key(&Value::Guid(a)), &key(&Value::Guid(b)));
            }
        }
        assert_orders(&false, &true, &key(&Value::Bool(false)), &key(&Value::Bool(true)));
        let bytes: [Vec<u8>; 4] = [vec![], vec![0], vec![0, 0], vec![0xff]];
        for a in &bytes {
            for b in &bytes {
                assert_orders(a, b, &key(&Value::Binary(a.clone())), &key(&Value::Binary(b.clone())));
            }
        }
    }

    fn any_text() -> impl Strategy<Value = String> {
        // Every region whose escaping matters, and ordinary text.
        let c = prop_oneof![
            0x00u32..0x30,
            0x30u32..0x80,
            0x7Eu32..0xA1,
            0xD7F0u32..0xD800,
            0xE000u32..0x1_0000,
            0x1_0000u32..0x1_0010,
            0x10_FFF0u32..0x11_0000,
        ]
        .prop_filter_map("a char", char::from_u32);
        proptest::collection::vec(c, 0..6).prop_map(|cs| cs.into_iter().collect())
    }

    proptest! {
        #![proptest_config(crate::fuzz::config())]

        #[test]
        fn strings_sort_as_rust_sorts_them(a in any_text(), b in any_text()) {
            let (ka, kb) = (key(&Value::String(a.clone())), key(&Value::String(b.clone())));
            prop_assert_eq!(a.cmp(&b), service_cmp(&ka, &kb), "{:?} vs {:?}: {:?} vs {:?}", a, b, ka, kb);
            prop_assert!(keyable(&ka));
            // A string's text form starts the text form of every string it starts.
            if b.starts_with(&a) {
                prop_assert!(kb.starts_with(&text_form(&a)));
            }
        }

        #[test]
        fn composites_sort_by_their_first_value(a in any_text(), b in any_text(), x in any::<i64>(), y in any::<i64>()) {
            let ka = key(&Value::String(a.clone())) + &key(&Value::Int64(x));
            let kb = key(&Value::String(b.clone())) + &key(&Value::Int64(y));
            prop_assert_eq!((a, x).cmp(&(b, y)), service_cmp(&ka, &kb));
        }

        #[test]
        fn integers_and_doubles_sort(a in any::<i64>(), b in any::<i64>(), x in any::<f64>(), y in any::<f64>()) {
            prop_assert_eq!(a.cmp(&b), service_cmp(&key(&Value::Int64(a)), &key(&Value::Int64(b))));
            if let Some(ord) = x.partial_cmp(&y) {
                prop_assert_eq!(ord, service_cmp(&key(&Value::Double(x)), &key(&Value::Double(y))));
            }
        }
    }
}
