//! The trait `#[derive(TableUnion)]` implements: many entity types in one
//! table, told apart by a discriminator token resolved at compile time.

use crate::codec::EncodeOptions;
use crate::error::Result;
use crate::value::Row;

/// An enum whose variants are the entity types one table holds (an event
/// store, a command log, an outbox). Implement it with
/// `#[derive(TableUnion)]`; store it with a
/// [`UnionStore`](crate::UnionStore).
///
/// Every row a union store writes carries the variant's token in the
/// `_TypeName` column ([`layout::TYPE_NAME`](crate::layout::TYPE_NAME)).
/// Reading matches the stored token against the tokens the variants declare
/// at compile time; nothing is ever constructed from a name found in storage.
///
/// ```
/// use unified_tables::{TableRecord, TableUnion, Row, UnionVariant};
///
/// #[derive(TableRecord, Debug, Clone, PartialEq)]
/// struct OrderPlaced { amount: f64 }
///
/// #[derive(TableUnion, Debug, Clone, PartialEq)]
/// enum OrderEvent {
///     Placed(OrderPlaced),                                  // token "Placed"
///     #[table(tag = "OrderShipped", also = ["Shipped"])]    // written "OrderShipped", "Shipped" read too
///     Shipped { carrier: String },
///     Closed,                                               // no payload columns
///     #[table(other)]
///     Unknown(Row),                                         // any other token, as stored
/// }
///
/// assert_eq!(OrderEvent::VARIANTS[1], UnionVariant { name: "Shipped", token: "OrderShipped", also: &["Shipped"] });
/// assert_eq!(OrderEvent::Closed.token(), Some("Closed"));
/// let mut row = Row::new("order-1", "0001");
/// OrderEvent::Shipped { carrier: "DHL".into() }.write_row(&mut row, &Default::default()).unwrap();
/// assert_eq!(row.get("Carrier").and_then(|v| v.as_str()), Some("DHL"));
/// assert_eq!(
///     OrderEvent::read_row("Shipped", row).unwrap(),
///     Some(OrderEvent::Shipped { carrier: "DHL".into() })
/// );
/// ```
pub trait TableUnion: Sized + Send + Sync + 'static {
    /// The variants that hold an item, in declaration order (the catch-all
    /// is not listed).
    const VARIANTS: &'static [UnionVariant];

    /// Whether a `#[table(other)]` variant reads rows whose token no variant
    /// accepts; without one such a row is [`Error::UnknownType`](crate::Error::UnknownType).
    const CATCH_ALL: bool;

    /// The token the item is written with, or `None` for the catch-all,
    /// whose row is written back as it was read (its `_TypeName` included).
    fn token(&self) -> Option<&'static str>;

    /// Writes the item's columns into `row` (not the token: the store writes
    /// `_TypeName`).
    fn write_row(&self, row: &mut Row, options: &EncodeOptions) -> Result<()>;

    /// Reads the variant that accepts `token` from `row`; `Ok(None)` when no
    /// variant accepts it and there is no catch-all.
    fn read_row(token: &str, row: Row) -> Result<Option<Self>>;

    /// The canonical token of the variant that accepts `token`, if any
    /// (`None` also for a token only the catch-all reads).
    fn canonical_token(token: &str) -> Option<&'static str> {
        Self::VARIANTS
            .iter()
            .find(|v| v.token == token || v.also.contains(&token))
            .map(|v| v.token)
    }
}

/// One variant of a [`TableUnion`], as generated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnionVariant {
    /// The Rust variant's name.
    pub name: &'static str,
    /// The token written to `_TypeName` (`#[table(tag = "..")]`, default the variant's name).
    pub token: &'static str,
    /// Other tokens read as this variant (`#[table(also = [..])]`): legacy
    /// names, or the assembly-qualified names a .NET service wrote.
    pub also: &'static [&'static str],
}
