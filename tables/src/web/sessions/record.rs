//! The row a session record is stored as, and the conversions between the
//! two. The names on storage are spelled in `layout/` (the derive's column
//! names are checked against them below).

use std::collections::HashMap;

use time::OffsetDateTime;
use tower_sessions_core::session::{Id, Record};

use crate::layout::SESSION_ROW_KEY;
use crate::value::{DateTime, ETag};
use crate::TableEntity;

/// One session: PartitionKey the id, RowKey [`SESSION_ROW_KEY`], the expiry
/// as an `Edm.DateTime` the sweep can filter on, and the data as one JSON
/// value stored at any size (inline, split cells, continuation rows or a
/// blob).
#[derive(TableEntity, Debug, Clone)]
#[table(name = "Sessions")]
pub(crate) struct SessionRow {
    #[table(partition_key)]
    pub(crate) id: String,
    #[table(row_key)]
    pub(crate) slot: String,
    pub(crate) expires_at: DateTime,
    #[table(split = "gzip")]
    pub(crate) data: HashMap<String, serde_json::Value>,
    #[table(etag)]
    pub(crate) etag: Option<ETag>,
}

/// The key text of a session id: tower-sessions' own printing of it, 22
/// characters of URL-safe base64 (`A-Z a-z 0-9 - _`), none of which the
/// service refuses in a key.
pub(crate) fn id_text(id: &Id) -> String {
    id.to_string()
}

/// The stored form of an expiry: at the service's precision (100 ns,
/// truncated) and clamped to the range it stores, so that any expiry a
/// caller can build is storable (an expiry before 1601 is long past either way).
pub(crate) fn stored_expiry(expiry: OffsetDateTime) -> DateTime {
    DateTime::from_unix_nanos(expiry.unix_timestamp_nanos()).clamp(DateTime::MIN_STORABLE, DateTime::MAX)
}

/// Whether a record stored with this expiry is past it at `now`.
pub(crate) fn is_expired(expires_at: DateTime, now: DateTime) -> bool {
    expires_at <= now
}

impl SessionRow {
    pub(crate) fn of(record: &Record) -> SessionRow {
        SessionRow {
            id: id_text(&record.id),
            slot: SESSION_ROW_KEY.to_owned(),
            expires_at: stored_expiry(record.expiry_date),
            data: record.data.clone(),
            etag: None,
        }
    }

    pub(crate) fn into_record(self, id: Id) -> Record {
        Record {
            id,
            data: self.data,
            expiry_date: self.expires_at.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::{SESSION_DATA_COLUMN, SESSION_EXPIRY_COLUMN};

    #[test]
    fn the_columns_are_the_ones_layout_names() {
        let names: Vec<&str> = SessionRow::SCHEMA.columns.iter().map(|c| c.name).collect();
        assert_eq!(names, [SESSION_EXPIRY_COLUMN, SESSION_DATA_COLUMN]);
    }

    #[test]
    fn expiries_keep_100_ns_and_clamp_to_the_storable_range() {
        let t = OffsetDateTime::from_unix_timestamp_nanos(1_700_000_000_123_456_789).unwrap();
        let stored = stored_expiry(t);
        assert_eq!(
            OffsetDateTime::from(stored).unix_timestamp_nanos(),
            1_700_000_000_123_456_700
        );
        assert_eq!(
            stored_expiry(OffsetDateTime::UNIX_EPOCH - time::Duration::days(200_000)),
            DateTime::MIN_STORABLE
        );
        let last = OffsetDateTime::new_utc(
            time::Date::from_calendar_date(9999, time::Month::December, 31).unwrap(),
            time::Time::from_hms_nano(23, 59, 59, 999_999_999).unwrap(),
        );
        assert_eq!(stored_expiry(last), DateTime::MAX);
    }

    #[test]
    fn every_id_is_a_key_the_service_accepts() {
        use crate::error::KeyKind;
        use crate::service::validate_key;
        let edges = [0, 1, -1, i128::MIN, i128::MAX, 0x3e3e_3e3e, -0x3f3f_3f3f];
        let random = (0..10_000).map(|_| rand::random::<i128>());
        for n in edges.into_iter().chain(random) {
            let text = id_text(&Id(n));
            assert_eq!(text.len(), 22, "{text}");
            validate_key(KeyKind::PartitionKey, &text).unwrap();
            assert_eq!(text.parse::<Id>().unwrap(), Id(n), "the key reads back as the id");
        }
    }
}
