//! Ordering tokens: the position of a change in its source's order (a blob
//! sequencer, an event's sequence number), stored beside the value it
//! ordered so that an older change delivered late is recognised and dropped.
//!
//! Tokens compare as Azure Storage's event sequencers are compared: both are
//! left-padded with `0` to the same length, then compared character by
//! character (UTF-16 code units). They are never parsed as numbers, so a
//! token wider than any integer type still orders exactly.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

use crate::codec::{EncodeOptions, TableValue, ValueKind};
use crate::entity::TableEntity;
use crate::error::Result;
use crate::value::{EdmType, Row};

/// The position of a change in its source's order.
///
/// ```
/// use unified_tables::OrderingToken;
///
/// // Left-padded to a common length, then compared as text: never parsed as a number.
/// assert!(OrderingToken::new("10") > OrderingToken::new("9"));
/// assert_eq!(OrderingToken::new("0042"), OrderingToken::new("42"));
/// let wide = OrderingToken::new("00000000000000000000000000000000000000000000000000000000000000001");
/// assert!(OrderingToken::new("2") > wide);
///
/// // The sequencer check: anything is newer than no token (or an empty one).
/// assert!(OrderingToken::new("1").is_newer_than(None));
/// assert!(OrderingToken::new("1").is_newer_than(Some(&OrderingToken::new(""))));
/// assert!(!OrderingToken::new("7").is_newer_than(Some(&OrderingToken::new("7"))));
/// ```
///
/// Tokens are opaque text: hexadecimal sequencers compare correctly as long
/// as one source always writes the same letter case, and decimal numbers
/// (`OrderingToken::from(42u64)`) compare as numbers.
#[derive(Clone, Default)]
pub struct OrderingToken(String);

impl OrderingToken {
    /// A token from its text, as the source gave it.
    pub fn new(text: impl Into<String>) -> OrderingToken {
        OrderingToken(text.into())
    }

    /// The token as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether the token is empty (an empty stored token is no token).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The sequencer check: whether a change at this position is newer than
    /// the one `stored` records. No stored token, or an empty one, means any
    /// change is newer; an equal token (a redelivery) is not newer.
    pub fn is_newer_than(&self, stored: Option<&OrderingToken>) -> bool {
        match stored {
            None => true,
            Some(s) if s.is_empty() => true,
            Some(s) => self > s,
        }
    }

    /// The text without leading `0`s: equal tokens have equal significant parts.
    fn significant(&self) -> &str {
        self.0.trim_start_matches('0')
    }
}

/// Compares `a` and `b` left-padded with `0` to the same length, by UTF-16 code unit.
fn padded_cmp(a: &str, b: &str) -> Ordering {
    let (la, lb) = (a.encode_utf16().count(), b.encode_utf16().count());
    let width = la.max(lb);
    let pad = |len: usize| std::iter::repeat_n(u16::from(b'0'), width - len);
    pad(la).chain(a.encode_utf16()).cmp(pad(lb).chain(b.encode_utf16()))
}

impl Ord for OrderingToken {
    fn cmp(&self, other: &Self) -> Ordering {
        padded_cmp(&self.0, &other.0)
    }
}

impl PartialOrd for OrderingToken {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for OrderingToken {
    fn eq(&self, other: &Self) -> bool {
        self.significant() == other.significant()
    }
}

impl Eq for OrderingToken {}

impl Hash for OrderingToken {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.significant().hash(state);
    }
}

impl fmt::Display for OrderingToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for OrderingToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OrderingToken({:?})", self.0)
    }
}

impl From<String> for OrderingToken {
    fn from(text: String) -> Self {
        OrderingToken(text)
    }
}

impl From<&str> for OrderingToken {
    fn from(text: &str) -> Self {
        OrderingToken(text.to_owned())
    }
}

impl From<u64> for OrderingToken {
    /// The decimal digits of `n`: numbers compare as numbers.
    fn from(n: u64) -> Self {
        OrderingToken(n.to_string())
    }
}

/// Stored as one `Edm.String` cell holding the token as given.
impl TableValue for OrderingToken {
    const KIND: ValueKind = ValueKind::Cell(EdmType::String);

    fn encode(&self, column: &str, row: &mut Row, options: &EncodeOptions) -> Result<()> {
        self.0.encode(column, row, options)
    }

    fn decode(row: &mut Row, column: &str) -> Result<Self> {
        String::decode(row, column).map(OrderingToken)
    }
}

/// A field type that can hold the ordering token of its entity
/// (`#[table(ordering)]`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot hold an ordering token",
    label = "#[table(ordering)] needs an OrderingToken field",
    note = "declare the field as `Option<unified_tables::OrderingToken>` (None until the first ordered change) or `OrderingToken` (empty until then)"
)]
pub trait TokenField {
    /// The stored token, if any (an empty token is none).
    fn token(&self) -> Option<&OrderingToken>;
    /// Records the token of the change being written.
    fn set_token(&mut self, token: OrderingToken);
}

impl TokenField for OrderingToken {
    fn token(&self) -> Option<&OrderingToken> {
        (!self.is_empty()).then_some(self)
    }
    fn set_token(&mut self, token: OrderingToken) {
        *self = token;
    }
}

impl TokenField for Option<OrderingToken> {
    fn token(&self) -> Option<&OrderingToken> {
        self.as_ref().filter(|t| !t.is_empty())
    }
    fn set_token(&mut self, token: OrderingToken) {
        *self = Some(token);
    }
}

/// An entity that stores the ordering token of the last change applied to
/// it, beside the value: generated by `#[derive(TableEntity)]` for a type
/// with a `#[table(ordering)]` field, and required by
/// [`Store::apply_if_newer`](crate::Store::apply_if_newer).
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no ordering token",
    label = "apply_if_newer compares the incoming token with the one stored beside the value",
    note = "add a field `#[table(ordering)] sequence: Option<unified_tables::OrderingToken>` to `{Self}`"
)]
pub trait OrderedEntity: TableEntity {
    /// The column holding the token.
    const ORDERING_COLUMN: &'static str;

    /// The token of the last change applied, if any.
    fn ordering_token(&self) -> Option<&OrderingToken>;

    /// Records the token of the change being written.
    fn set_ordering_token(&mut self, token: OrderingToken);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn t(s: &str) -> OrderingToken {
        OrderingToken::new(s)
    }

    #[test]
    fn shorter_tokens_are_padded_with_zeros() {
        assert!(t("10") > t("9"));
        assert!(t("0A") > t("9"), "hex letters sort above digits");
        assert_eq!(t("007").cmp(&t("7")), Ordering::Equal);
        assert_eq!(t("007"), t("7"));
        assert!(t("") < t("1"));
        assert_eq!(t("0"), t(""));
    }

    #[test]
    fn the_sequencer_check() {
        assert!(t("1").is_newer_than(None));
        assert!(t("1").is_newer_than(Some(&t(""))));
        assert!(t("2").is_newer_than(Some(&t("1"))));
        assert!(!t("1").is_newer_than(Some(&t("1"))));
        assert!(!t("01").is_newer_than(Some(&t("1"))), "padding makes them equal");
        assert!(!t("1").is_newer_than(Some(&t("2"))));
    }

    #[test]
    fn tokens_wider_than_any_integer_order_exactly() {
        let a = "1".repeat(40) + "0";
        let b = "1".repeat(40) + "1";
        assert!(t(&b) > t(&a));
        // As doubles both would be the same number.
        assert_eq!(a.parse::<f64>().unwrap(), b.parse::<f64>().unwrap());
    }

    proptest! {
        #![proptest_config(crate::fuzz::config())]

        /// Decimal tokens order as the numbers they spell.
        #[test]
        fn decimal_tokens_order_as_numbers(a in any::<u64>(), b in any::<u64>(), pad in 0usize..4) {
            let padded = format!("{}{a}", "0".repeat(pad));
            prop_assert_eq!(t(&padded).cmp(&OrderingToken::from(b)), a.cmp(&b));
        }

        /// The order is total and agrees with equality and hashing.
        #[test]
        fn order_equality_and_hash_agree(a in "[0-9A-F]{0,6}", b in "[0-9A-F]{0,6}", c in "[0-9A-F]{0,6}") {
            let (a, b, c) = (t(&a), t(&b), t(&c));
            prop_assert_eq!(a.cmp(&b) == Ordering::Equal, a == b);
            prop_assert_eq!(a.cmp(&b), b.cmp(&a).reverse());
            if a <= b && b <= c {
                prop_assert!(a <= c);
            }
            if a == b {
                use std::collections::hash_map::DefaultHasher;
                let hash = |x: &OrderingToken| { let mut h = DefaultHasher::new(); x.hash(&mut h); h.finish() };
                prop_assert_eq!(hash(&a), hash(&b));
            }
        }
    }
}
