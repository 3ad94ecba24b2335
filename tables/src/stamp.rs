//! Created / updated stamps and key fields: the small traits the derive's
//! system fields go through.

use crate::value::DateTime;

/// A field type usable as `#[table(created_at)]` or `#[table(updated_at)]`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot hold a created/updated stamp",
    label = "stamp fields need a date type",
    note = "use unified_tables::DateTime, chrono::DateTime<Utc>, time::OffsetDateTime, std::time::SystemTime, or an Option of one (see https://docs.rs/unified-tables/latest/unified_tables/derive.TableEntity.html#tablecreated_at-and-tableupdated_at)"
)]
pub trait Stamp {
    /// The stamp, or `None` when unset (the type's default).
    fn stamp(&self) -> Option<DateTime>;
    /// Sets the stamp.
    fn set_stamp(&mut self, at: DateTime);
}

impl Stamp for DateTime {
    fn stamp(&self) -> Option<DateTime> {
        (*self != DateTime::default()).then_some(*self)
    }
    fn set_stamp(&mut self, at: DateTime) {
        *self = at;
    }
}

impl Stamp for std::time::SystemTime {
    fn stamp(&self) -> Option<DateTime> {
        (*self != std::time::UNIX_EPOCH).then(|| DateTime::from(*self))
    }
    fn set_stamp(&mut self, at: DateTime) {
        *self = at.into();
    }
}

#[cfg(feature = "chrono")]
#[cfg_attr(docsrs, doc(cfg(feature = "chrono")))]
impl Stamp for chrono::DateTime<chrono::Utc> {
    fn stamp(&self) -> Option<DateTime> {
        (*self != chrono::DateTime::<chrono::Utc>::default()).then(|| DateTime::from(*self))
    }
    fn set_stamp(&mut self, at: DateTime) {
        *self = at.into();
    }
}

#[cfg(feature = "time")]
#[cfg_attr(docsrs, doc(cfg(feature = "time")))]
impl Stamp for time::OffsetDateTime {
    fn stamp(&self) -> Option<DateTime> {
        (*self != time::OffsetDateTime::UNIX_EPOCH).then(|| DateTime::from(*self))
    }
    fn set_stamp(&mut self, at: DateTime) {
        *self = at.into();
    }
}

impl<T: Stamp + From<DateTime>> Stamp for Option<T> {
    fn stamp(&self) -> Option<DateTime> {
        self.as_ref().and_then(Stamp::stamp)
    }
    fn set_stamp(&mut self, at: DateTime) {
        *self = Some(T::from(at));
    }
}

/// A field type usable as a key (`#[table(partition_key)]`, `#[table(row_key)]`, `#[table(id)]`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a table key",
    label = "keys are strings",
    note = "make the key field a `String` (format numbers with fixed width so they sort as text; see https://docs.rs/unified-tables/latest/unified_tables/derive.TableEntity.html#keys)"
)]
pub trait KeyPart: Sized {
    /// The key text.
    fn key_text(&self) -> String;
    /// The field value from the stored key.
    fn from_key_text(text: String) -> Self;
}

impl KeyPart for String {
    fn key_text(&self) -> String {
        self.clone()
    }
    fn from_key_text(text: String) -> Self {
        text
    }
}
