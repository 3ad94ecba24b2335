//! Reads of a union store: a row becomes an entry (an item or a marker),
//! its token matched against the tokens the union declares.

use std::collections::VecDeque;

use futures::stream;

use super::{UnionEntry, UnionPage, UnionQuery, UnionStore};
use crate::backend::{Page, PageToken, QueryRequest};
use crate::entity::Key;
use crate::error::{Error, Result};
use crate::layout::{is_system_column, TYPE_NAME, WRITE_TOKEN};
use crate::named_stream::named_stream;
use crate::store::read::is_not_an_entity;
use crate::union::TableUnion;
use crate::value::{ETag, Row, Value};

/// Refuses a cursor given to a reader that starts from the beginning.
fn refuse_cursor<E>(query: &UnionQuery<E>) -> Result<()> {
    match query.cursor {
        Some(_) => Err(Error::InvalidCursor(
            "only UnionStore::page continues after a cursor; query and stream read from the start: drop `.after(..)`, or call page".into(),
        )),
        None => Ok(()),
    }
}

named_stream!(
    /// The entries of a union query, fetched page by page, holding at most
    /// one page in memory. Returned by [`UnionStore::stream`].
    ///
    /// It is `Unpin`: poll it in place with its own [`next`](Self::next) or
    /// [`try_next`](Self::try_next) (no stream trait to import), or use it as
    /// a [`futures::Stream`] with any stream combinator. After an error the
    /// stream ends.
    UnionStream<E>,
    UnionEntry<E>,
    "entry"
);

impl<E: TableUnion> UnionStore<E> {
    /// Reads the row at `key`: `None` when there is none. An item whose
    /// token no variant accepts is [`Error::UnknownType`] unless the union
    /// has a `#[table(other)]` variant.
    pub async fn get(&self, key: impl Into<Key>) -> Result<Option<UnionEntry<E>>> {
        self.store
            .op("get")
            .run(async move {
                let key = key.into();
                key.validate()?;
                self.store.ensure_created().await?;
                let row = self
                    .store
                    .shared
                    .backend
                    .get(&self.store.table, &key.partition_key, &key.row_key)
                    .await?;
                match row {
                    Some(row) if !is_not_an_entity(&row) => self.entry(row).map(Some),
                    _ => Ok(None),
                }
            })
            .await
    }

    /// Reads every row the query selects (items and marker rows), following
    /// page tokens: `store.query("aggregate-7")` reads one partition.
    pub async fn query(&self, query: impl Into<UnionQuery<E>>) -> Result<Vec<UnionEntry<E>>> {
        self.store
            .op("query")
            .run(async move {
                let query = query.into();
                refuse_cursor(&query)?;
                let request = query.request()?;
                let limit = query.take.unwrap_or(usize::MAX);
                // In key order on every service (read whole and ordered where the service keeps no order).
                let mut pages = self.store.pages(request).await?;
                let mut out = Vec::new();
                while out.len() < limit {
                    let seen = out.len();
                    let Some(rows) = pages.next(|rows| seen.saturating_add(rows.len()) < limit).await? else {
                        break;
                    };
                    for row in rows {
                        if out.len() >= limit {
                            break;
                        }
                        if !is_not_an_entity(&row) {
                            out.push(self.entry(row)?);
                        }
                    }
                }
                Ok(out)
            })
            .await
    }

    /// Reads one page: at most `take` rows (default 100, at most 1000),
    /// after the query's cursor. The cursor returned is bound to this query
    /// (partition, prefix, page size, filter); another query refuses it with
    /// [`Error::InvalidCursor`].
    pub async fn page(&self, query: impl Into<UnionQuery<E>>) -> Result<UnionPage<E>> {
        self.store
            .op("page")
            .run(async move {
                let query = query.into();
                let bound = query.fingerprint();
                let token = match &query.cursor {
                    Some(c) => Some(c.decode(&bound, self.store.shared.cursor_key.as_ref())?),
                    None => None,
                };
                let mut request = query.request()?;
                request.top = Some(query.page_size() as u32);
                self.store.ensure_created().await?;
                let page = self.fetch(&request, token.as_ref()).await?;
                let mut entries = Vec::with_capacity(page.rows.len());
                for row in page.rows {
                    if !is_not_an_entity(&row) {
                        entries.push(self.entry(row)?);
                    }
                }
                Ok(UnionPage {
                    entries,
                    cursor: page
                        .next
                        .map(|next| crate::store::Cursor::encode(&bound, &next, self.store.shared.cursor_key.as_ref())),
                })
            })
            .await
    }

    /// Streams the rows the query selects, fetching page by page and holding
    /// at most one page in memory.
    ///
    /// ```
    /// # use unified_tables::{Error, TableRecord, TableUnion, Tables, UnionQuery};
    /// #[derive(TableRecord, Debug, Clone)]
    /// struct Placed { total: f64 }
    ///
    /// #[derive(TableUnion, Debug, Clone)]
    /// enum Event {
    ///     Placed(Placed),
    ///     Cancelled,
    /// }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let events = Tables::memory().union_store::<Event>("Events");
    /// events.insert(("order-1", "0001"), &Event::Placed(Placed { total: 9.5 })).await?;
    /// events.insert(("order-1", "0002"), &Event::Cancelled).await?;
    /// let mut entries = events.stream(UnionQuery::partition("order-1"));
    /// let mut seen = 0;
    /// while let Some(entry) = entries.try_next().await? {
    ///     if let Some(Event::Placed(p)) = entry.item {
    ///         assert_eq!(p.total, 9.5);
    ///     }
    ///     seen += 1;
    /// }
    /// assert_eq!(seen, 2);
    /// # Ok::<(), Error>(())
    /// # }).unwrap();
    /// ```
    pub fn stream(&self, query: impl Into<UnionQuery<E>>) -> UnionStream<E> {
        struct State<E> {
            store: UnionStore<E>,
            request: Option<QueryRequest>,
            pages: Option<crate::store::query::Pages>,
            buffer: VecDeque<Row>,
            left: Option<usize>,
        }
        let query = query.into();
        let prepared = refuse_cursor(&query).and_then(|()| query.request());
        let (request, failure) = match prepared {
            Ok(r) => (Some(r), None),
            Err(e) => (None, Some(e)),
        };
        let state = State {
            store: self.clone(),
            request,
            pages: None,
            buffer: VecDeque::new(),
            left: query.take,
        };
        let failed = stream::iter(failure.map(Err));
        let rows = stream::try_unfold(state, |mut st| async move {
            loop {
                if st.left == Some(0) {
                    return Ok(None);
                }
                if let Some(row) = st.buffer.pop_front() {
                    if is_not_an_entity(&row) {
                        continue;
                    }
                    st.left = st.left.map(|n| n - 1);
                    let entry = st.store.entry(row)?;
                    return Ok(Some((entry, st)));
                }
                if st.pages.is_none() {
                    let Some(request) = st.request.take() else {
                        return Ok(None);
                    };
                    // The first n in key order need every match where the service keeps no order.
                    st.pages = Some(match st.left {
                        Some(_) => st.store.store.pages(request).await?,
                        None => st.store.store.pages_in_any_order(request).await?,
                    });
                }
                let pages = st.pages.as_mut().expect("made above");
                let Some(rows) = pages.next(|_| false).await? else {
                    return Ok(None);
                };
                st.buffer.extend(rows);
            }
        });
        UnionStream::new(self.store.op("stream").stream(stream::StreamExt::chain(failed, rows)))
    }

    /// One page of a request.
    async fn fetch(&self, request: &QueryRequest, token: Option<&PageToken>) -> Result<Page> {
        self.store.shared.backend.query(&self.store.table, request, token).await
    }

    /// A stored row as an entry: its system columns, its token, its item.
    fn entry(&self, mut row: Row) -> Result<UnionEntry<E>> {
        let key = Key::new(row.partition_key.clone(), row.row_key.clone());
        // The store's own cell: neither a column of the entry nor of a catch-all's row.
        row.properties.remove(WRITE_TOKEN);
        let etag = row.etag.take().unwrap_or_else(|| ETag::new(""));
        let timestamp = row.timestamp;
        let columns = row
            .properties
            .iter()
            .filter(|(name, _)| is_system_column(name) && name.as_str() != TYPE_NAME)
            .map(|(name, value)| (name.to_string(), value.clone()))
            .collect();
        let token = match row.get(TYPE_NAME) {
            None => None,
            Some(Value::String(token)) => Some(token.clone()),
            Some(other) => {
                return Err(Error::Decode {
                    column: TYPE_NAME.into(),
                    expected: "a string naming the row's type".into(),
                    found: format!("{other:?}"),
                })
            }
        };
        let item = match &token {
            None => None,
            Some(token) => match E::read_row(token, row)? {
                Some(item) => Some(item),
                None => return Err(self.unknown(&key, token)),
            },
        };
        Ok(UnionEntry {
            key,
            item,
            token,
            etag,
            timestamp,
            columns,
        })
    }

    fn unknown(&self, key: &Key, token: &str) -> Error {
        let accepted: Vec<String> = E::VARIANTS
            .iter()
            .flat_map(|v| std::iter::once(v.token).chain(v.also.iter().copied()))
            .map(|t| format!("`{t}`"))
            .collect();
        Error::UnknownType {
            table: self.store.table.clone(),
            partition_key: key.partition_key.clone(),
            row_key: key.row_key.clone(),
            token: token.to_owned(),
            accepted: accepted.join(", "),
        }
    }
}
