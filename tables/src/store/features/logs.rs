//! Append logs and versioned streams: time-ordered and version-ordered rows
//! whose newest entries sort first, so every read is one bounded scan.

use crate::entity::{normalize_id, Key, KeyMode, TableEntity};
use crate::error::Result;
use crate::keys::{append_key_now, parse_append_key, version_key, AppendKeyFormat, SUB_STREAM_SEPARATOR};
use crate::query::{CmpOp, Filter};
use crate::store::{QueryOptions, Store};
use crate::value::{ETag, Row, Value};

/// A sub-stream name as the log uses it: trimmed, `None` when empty.
fn sub_stream_name(sub_stream: Option<&str>) -> Option<&str> {
    sub_stream.map(str::trim).filter(|s| !s.is_empty())
}

/// One row of a log scan, with the instant its key encodes.
struct Logged {
    unix_nanos: i128,
    row: Row,
}

impl<T: TableEntity> Store<T> {
    /// This store with append-log keys in `format` for [`Store::append`]
    /// (default [`AppendKeyFormat::ReverseTicked`]). [`Store::recent`] reads
    /// logs holding either format, or both, whatever this says.
    ///
    /// ```
    /// use unified_tables::{keys::AppendKeyFormat, TableEntity, Tables};
    /// #[derive(TableEntity, Debug)]
    /// struct ChatMessage {
    ///     #[table(partition_key)] room: String,
    ///     #[table(row_key)] key: String,
    ///     text: String,
    /// }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let db = Tables::memory();
    /// let chat = db.store::<ChatMessage>().with_append_keys(AppendKeyFormat::DotNet);
    /// let mut m = ChatMessage { room: String::new(), key: String::new(), text: "hi".into() };
    /// chat.append("vision-42", &mut m, Some("session-1")).await?;
    /// assert_eq!(m.key.len(), "session-1~".len() + 19 + 9);   // {sub}~{19 digits}-{8 hex}
    /// # Ok::<(), unified_tables::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn with_append_keys(&self, format: AppendKeyFormat) -> Store<T> {
        let mut store = self.clone();
        store.append_keys = format;
        store
    }

    /// The append-key format [`Store::append`] writes.
    pub fn append_keys(&self) -> AppendKeyFormat {
        self.append_keys
    }

    /// Appends an event to a partition's log: the entity gets the key
    /// (`partition`, `[{sub_stream}~]{time}`) in the store's
    /// [append-key format](Store::with_append_keys), so the newest event sorts
    /// first. Keys are unique and decreasing within the process. The
    /// sub-stream is trimmed (an empty one is none) and may contain `~`; for
    /// an id-keyed type the partition and sub-stream are normalized as ids are.
    pub async fn append(&self, partition: &str, entity: &mut T, sub_stream: Option<&str>) -> Result<ETag> {
        self.op("append")
            .run(async move {
                let key = match T::SCHEMA.keys {
                    // As ids are: the entity's id is the one stored.
                    KeyMode::CompositeId { normalize: true } => {
                        let sub = sub_stream_name(sub_stream).map(normalize_id);
                        Key::new(
                            normalize_id(partition),
                            append_key_now(self.append_keys, sub.as_deref()),
                        )
                    }
                    _ => Key::new(partition, append_key_now(self.append_keys, sub_stream_name(sub_stream))),
                };
                entity.set_key(key);
                self.create(entity).await
            })
            .await
    }

    /// The newest `n` events of a partition's log (of one sub-stream, or of
    /// the events appended without one), newest first.
    ///
    /// Keys of both [formats](AppendKeyFormat) are read and merged by the
    /// instant they encode, so a log that this crate and the .NET library
    /// both append to reads in time order. Rows whose key is not an append
    /// key of exactly this sub-stream (another sub-stream whose name starts
    /// with this one and `~`, a row written by other means) are skipped.
    ///
    /// One request (a page of up to `2n` rows, at most 1,000); a second one
    /// when the log holds `n` or more events in the .NET format (they sort
    /// before the others, so the newest of the others are read by a second
    /// scan that skips them), and more pages when rows that are not events of
    /// this sub-stream take places in a page.
    pub async fn recent(&self, partition: &str, n: usize, sub_stream: Option<&str>) -> Result<Vec<T>> {
        self.op("recent")
            .run(async move {
                let sub = sub_stream_name(sub_stream).map(|s| match T::SCHEMA.keys {
                    KeyMode::CompositeId { normalize: true } => normalize_id(s),
                    _ => s.to_owned(),
                });
                if n == 0 {
                    return Ok(Vec::new());
                }
                let prefix = match &sub {
                    Some(s) => format!("{s}{SUB_STREAM_SEPARATOR}"),
                    None => String::new(),
                };
                // Time-ordered parts start with a digit: .NET's inverted ticks with 0
                // to 3, reverse-ticked nanoseconds (of any instant after 1970) with 9.
                // Fewer than `n` .NET keys and `n` of ours fit one page of `2n`.
                let (mut rows, full) = self
                    .scan_log(partition, &prefix, '0', n, n.saturating_mul(2), sub.as_deref())
                    .await?;
                if full {
                    let (ours, _) = self.scan_log(partition, &prefix, '4', n, n, sub.as_deref()).await?;
                    rows.extend(ours);
                }
                // Newest first; a stable sort keeps the key order of equal instants.
                rows.sort_by_key(|logged| std::cmp::Reverse(logged.unix_nanos));
                let mut out = Vec::with_capacity(n.min(rows.len()));
                for logged in rows {
                    if out.len() == n {
                        break;
                    }
                    if let Some(entity) = self.decode_listed(logged.row).await? {
                        out.push(entity);
                    }
                }
                Ok(out)
            })
            .await
    }

    /// Reads the log's keys from `{prefix}{from}` to the end of the digits in
    /// pages of `page` rows, keeping rows of exactly `sub`, until `n` rows of
    /// one format are held.
    /// Also says whether it stopped at `n` rows of the .NET format (so newer
    /// rows of the other format may follow).
    async fn scan_log(
        &self,
        partition: &str,
        prefix: &str,
        from: char,
        n: usize,
        page: usize,
        sub: Option<&str>,
    ) -> Result<(Vec<Logged>, bool)> {
        let range = Filter::cmp("RowKey", CmpOp::Ge, Value::String(format!("{prefix}{from}"))).and(Filter::cmp(
            "RowKey",
            CmpOp::Lt,
            Value::String(format!("{prefix}:")),
        ));
        let options = QueryOptions::partition(partition).filter(range).take(page);
        let mut pages = self.pages(self.request_for(&options)?).await?;
        let (mut out, mut dotnet, mut ours) = (Vec::new(), 0, 0);
        // The scan may stop within a page: no page is read ahead.
        while let Some(page) = pages.next(|_| false).await? {
            for row in page {
                let Some(key) = parse_append_key(&row.row_key).filter(|k| k.sub_stream == sub) else {
                    continue;
                };
                let format = key.format;
                out.push(Logged {
                    unix_nanos: key.unix_nanos,
                    row,
                });
                match format {
                    AppendKeyFormat::DotNet => dotnet += 1,
                    _ => ours += 1,
                }
                if dotnet == n {
                    return Ok((out, true));
                }
                if ours == n {
                    return Ok((out, false));
                }
            }
        }
        Ok((out, false))
    }

    /// Appends version `version` of a stream (the partition): the entity gets
    /// the key (`stream`, inverted zero-padded version). Appending an existing
    /// version fails with [`Error::AlreadyExists`](crate::Error::AlreadyExists).
    pub async fn append_version(&self, stream: &str, version: u32, entity: &mut T) -> Result<ETag> {
        self.op("append_version")
            .run(async move {
                entity.set_key(Key::new(stream.trim(), version_key(version)?));
                self.create(entity).await
            })
            .await
    }

    /// The newest version of a stream, or `None`. One bounded read.
    pub async fn latest(&self, stream: &str) -> Result<Option<T>> {
        self.op("latest")
            .run(async move { Ok(self.history(stream, 1).await?.pop()) })
            .await
    }

    /// Exactly version `version` of a stream. One point read.
    pub async fn at_version(&self, stream: &str, version: u32) -> Result<Option<T>> {
        self.op("at_version")
            .run(async move { self.get((stream.trim(), version_key(version)?.as_str())).await })
            .await
    }

    /// The highest version at or below `version` ("state as of"). One bounded read.
    pub async fn at_or_before(&self, stream: &str, version: u32) -> Result<Option<T>> {
        self.op("at_or_before")
            .run(async move {
                // Versions at or below `version` have keys at or above its key.
                let from = version_key(version)?;
                let options = QueryOptions::partition(stream.trim())
                    .filter(Filter::cmp("RowKey", CmpOp::Ge, Value::String(from)))
                    .take(1);
                Ok(self.query(options).await?.pop())
            })
            .await
    }

    /// The newest `take` versions of a stream, newest first. One bounded read
    /// (pages of 1000).
    pub async fn history(&self, stream: &str, take: usize) -> Result<Vec<T>> {
        self.op("history")
            .run(async move {
                if take == 0 {
                    return Ok(Vec::new());
                }
                self.query(QueryOptions::partition(stream.trim()).take(take)).await
            })
            .await
    }
}
