//! What the generated setters and the typed filter columns take for a column.

use std::borrow::Cow;

/// A value given for a column holding a `T`: in a partial-update setter
/// (`Ticket::update().priority(5)`) or a typed filter
/// (`Ticket::filter(|c| c.priority.ge(3))`).
///
/// It is the column's own type, so a bare literal takes that type: `5` is a
/// `u32` for a `u32` column and an `i8` for an `i8` one, `2.5` an `f32` for an
/// `f32` column. Where a conversion is the point, other types are taken too:
/// `&str`, `&String`, `Box<str>` and `Cow<str>` for a `String` column, and
/// for a [`DateTime`](crate::DateTime) or [`Guid`](crate::Guid) column the
/// types they convert from (`SystemTime`, `chrono::DateTime<Utc>`,
/// `time::OffsetDateTime`, `uuid::Uuid`, with their features).
///
/// ```
/// use unified_tables::TableEntity;
///
/// #[derive(TableEntity)]
/// struct Ticket {
///     #[table(partition_key)] queue: String,
///     #[table(row_key)] number: String,
///     subject: String,
///     priority: i32,
///     reopen_count: u32,
/// }
///
/// let _ = Ticket::update().priority(5).reopen_count(2).subject("printer on fire");
/// let f = Ticket::filter(|c| c.reopen_count.ge(2) & c.subject.eq("printer on fire"));
/// assert_eq!(
///     f.into_filter().unwrap().to_odata(),
///     "(ReopenCount ge 2L) and (Subject eq 'printer on fire')"
/// );
/// ```
#[diagnostic::on_unimplemented(
    message = "the column holds `{T}` and takes a value of that type, not `{Self}`",
    label = "expected `{T}` here",
    note = "a bare literal takes the column's type (`5` for any integer column, `\"text\"` for a String column, which also takes a `&str`); convert another value first (`u32::try_from(n)?`, `n.to_string()`)"
)]
pub trait IntoColumnValue<T> {
    /// The column's value.
    fn into_column_value(self) -> T;
}

#[diagnostic::do_not_recommend]
impl<T> IntoColumnValue<T> for T {
    #[inline]
    fn into_column_value(self) -> T {
        self
    }
}

macro_rules! converted {
    ($target:ty: $($source:ty),*) => {$(
        #[diagnostic::do_not_recommend]
        impl IntoColumnValue<$target> for $source {
            #[inline]
            fn into_column_value(self) -> $target {
                <$target>::from(self)
            }
        }
    )*};
}

converted!(String: &str, &String, Box<str>, Cow<'_, str>);
converted!(crate::DateTime: std::time::SystemTime);
#[cfg(feature = "chrono")]
converted!(crate::DateTime: chrono::DateTime<chrono::Utc>);
#[cfg(feature = "time")]
converted!(crate::DateTime: time::OffsetDateTime);
#[cfg(feature = "uuid")]
converted!(crate::Guid: uuid::Uuid);
