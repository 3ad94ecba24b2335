//! Append logs and versioned streams: time-ordered and version-ordered rows
//! whose newest entries sort first, so every read is one bounded scan.

use super::{QueryOptions, Store};
use crate::entity::{Key, TableEntity};
use crate::error::{Error, KeyKind, Result};
use crate::keys::{reverse_ticked_now, version_key};
use crate::query::{CmpOp, Filter};
use crate::value::{ETag, Value};

fn check_sub_stream(sub_stream: Option<&str>) -> Result<Option<&str>> {
    match sub_stream.map(str::trim) {
        None | Some("") => Ok(None),
        Some(s) if s.contains('~') => Err(Error::InvalidKey {
            which: KeyKind::RowKey,
            key: s.to_owned(),
            reason: "a sub-stream name may not contain `~`, which separates it from the time-ordered key".into(),
        }),
        Some(s) => Ok(Some(s)),
    }
}

impl<T: TableEntity> Store<T> {
    /// Appends an event to a partition's log: the entity gets the key
    /// (`partition`, `[{sub_stream}~]{reverse-ticked now}`), so the newest
    /// event sorts first. Keys are unique within the process.
    pub async fn append(&self, partition: &str, entity: &mut T, sub_stream: Option<&str>) -> Result<ETag> {
        let sub = check_sub_stream(sub_stream)?;
        let row_key = match sub {
            Some(s) => format!("{s}~{}", reverse_ticked_now()),
            None => reverse_ticked_now(),
        };
        entity.set_key(Key::new(partition, row_key));
        self.create(entity).await
    }

    /// The newest `n` events of a partition's log (of one sub-stream, or of
    /// the events appended without one), newest first, in one bounded scan.
    pub async fn recent(&self, partition: &str, n: usize, sub_stream: Option<&str>) -> Result<Vec<T>> {
        let sub = check_sub_stream(sub_stream)?;
        let options = match sub {
            Some(s) => QueryOptions::partition(partition).row_key_prefix(format!("{s}~")),
            // Keys appended without a sub-stream are all digits.
            None => QueryOptions::partition(partition).filter(
                Filter::cmp("RowKey", CmpOp::Ge, Value::String("0".into())).and(Filter::cmp(
                    "RowKey",
                    CmpOp::Lt,
                    Value::String(":".into()),
                )),
            ),
        };
        if n == 0 {
            return Ok(Vec::new());
        }
        self.query(options.take(n)).await
    }

    /// Appends version `version` of a stream (the partition): the entity gets
    /// the key (`stream`, inverted zero-padded version). Appending an existing
    /// version fails with [`Error::AlreadyExists`].
    pub async fn append_version(&self, stream: &str, version: u32, entity: &mut T) -> Result<ETag> {
        entity.set_key(Key::new(stream.trim(), version_key(version)?));
        self.create(entity).await
    }

    /// The newest version of a stream, or `None`. One bounded read.
    pub async fn latest(&self, stream: &str) -> Result<Option<T>> {
        Ok(self.history(stream, 1).await?.pop())
    }

    /// Exactly version `version` of a stream. One point read.
    pub async fn at_version(&self, stream: &str, version: u32) -> Result<Option<T>> {
        self.get((stream.trim(), version_key(version)?.as_str())).await
    }

    /// The highest version at or below `version` ("state as of"). One bounded read.
    pub async fn at_or_before(&self, stream: &str, version: u32) -> Result<Option<T>> {
        // Versions at or below `version` have keys at or above its key.
        let from = version_key(version)?;
        let options = QueryOptions::partition(stream.trim())
            .filter(Filter::cmp("RowKey", CmpOp::Ge, Value::String(from)))
            .take(1);
        Ok(self.query(options).await?.pop())
    }

    /// The newest `take` versions of a stream, newest first. One bounded read
    /// (pages of 1000).
    pub async fn history(&self, stream: &str, take: usize) -> Result<Vec<T>> {
        if take == 0 {
            return Ok(Vec::new());
        }
        self.query(QueryOptions::partition(stream.trim()).take(take)).await
    }
}
