//! Queries through an index: [`IndexQuery`] (the index rows of a span of
//! values, page by page, and the entities behind them) and the read of the
//! entity one index row points at.

use std::future::{Future, IntoFuture};
use std::marker::PhantomData;
use std::ops::Bound;
use std::pin::Pin;

use futures::{StreamExt, TryStreamExt};

use crate::backend::QueryRequest;
use crate::entity::{Key, TableEntity};
use crate::error::{Error, Result};
use crate::index::rows::{entity_of, index_row};
use crate::index::IndexDef;
use crate::layout::{index_key_prefix, INDEX_PARTITION, INDEX_ROW, INDEX_UNIQUE_ROW};
use crate::named_stream::named_stream;
use crate::query::{CmpOp, Filter};
use crate::service::{next_prefix, MAX_PAGE_SIZE};
use crate::store::query::paging::DEFAULT_PAGE_SIZE;
use crate::store::Store;
use crate::value::{Row, Value};

/// Entity reads a query keeps in flight.
const READS_IN_FLIGHT: usize = 16;

/// Which index keys a query reads: those starting with `prefix`, or those
/// between `low` and `high` (value parts).
#[derive(Debug, Clone, Default)]
pub(super) struct Span {
    pub(super) prefix: Option<String>,
    pub(super) low: Option<Bound<String>>,
    pub(super) high: Option<Bound<String>>,
    /// A prefix lookup's column and text: the text forms of `/` and `.`
    /// share a lead, so the rows found are checked against the value.
    pub(super) must_start: Option<(String, String)>,
}

impl Span {
    pub(super) fn starting(value: String) -> Span {
        Span {
            prefix: Some(value),
            ..Span::default()
        }
    }

    pub(super) fn between(low: Bound<String>, high: Bound<String>) -> Span {
        Span {
            low: Some(low),
            high: Some(high),
            ..Span::default()
        }
    }
}

/// A position in an index: a page's cursor, given back to [`IndexQuery::page`].
///
/// It has no text form and is not sealed by a handle's
/// [`CursorKey`](crate::CursorKey): it holds, in the clear, the partition
/// and row keys of the last index row read (an index row's key holds the
/// indexed value), and its `Debug` output shows them. Keep it in the process
/// that reads the pages; to hand a position to a client, page the store
/// itself ([`Store::page`](crate::Store::page)) on a handle with a cursor key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexCursor {
    after: (String, String),
}

/// One page of an index query.
#[derive(Debug, Clone)]
pub struct IndexPage<T> {
    /// The entities of the page, in index order.
    pub items: Vec<T>,
    /// Where the next page starts; `None` after the last.
    pub cursor: Option<IndexCursor>,
}

/// A query through an index: `take` bounds it; `.await` reads every match,
/// [`stream`](IndexQuery::stream) reads them page by page, and
/// [`page`](IndexQuery::page) one page at a time. An argument the index
/// cannot hold (a key too long) fails when the query runs.
#[must_use = "a query does nothing until it is awaited, streamed or paged"]
pub struct IndexQuery<'s, T> {
    pub(super) store: Store<T>,
    pub(super) def: &'static IndexDef,
    pub(super) partition: Option<String>,
    pub(super) span: Span,
    pub(super) take: Option<usize>,
    pub(super) error: Option<Error>,
    /// The lookup it came from, whose store it holds a handle of.
    pub(super) lookup: PhantomData<&'s ()>,
}

named_stream!(
    /// The matches of an index query, page by page: returned by
    /// [`IndexQuery::stream`].
    ///
    /// It is `Unpin`: poll it in place with its own [`next`](Self::next) or
    /// [`try_next`](Self::try_next), or use it as a [`futures::Stream`] with any
    /// stream combinator. After an error the stream ends.
    IndexStream<T>,
    T,
    "match"
);

impl<T> std::fmt::Debug for IndexQuery<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexQuery")
            .field("index", &self.def.name)
            .field("partition", &self.partition)
            .field("take", &self.take)
            .finish()
    }
}

impl<'s, T: TableEntity> IndexQuery<'s, T> {
    /// At most `n` entities in total.
    pub fn take(mut self, n: usize) -> Self {
        self.take = Some(n);
        self
    }

    /// The matches, page by page (each page's entities read 16 at a time),
    /// polled in place without importing a stream trait.
    ///
    /// ```
    /// # use unified_tables::{TableEntity, Tables};
    /// #[derive(TableEntity, Debug)]
    /// struct Ticket {
    ///     #[table(partition_key)] project: String,
    ///     #[table(row_key)] id: String,
    ///     #[index] assignee: String,
    /// }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let tickets = Tables::memory().store::<Ticket>();
    /// for id in ["1", "2"] {
    ///     tickets.create(&mut Ticket { project: "p".into(), id: id.into(), assignee: "ann".into() }).await?;
    /// }
    /// let mut ann = tickets.index(Ticket::BY_ASSIGNEE).find("p", "ann").stream();
    /// let mut ids = Vec::new();
    /// while let Some(ticket) = ann.try_next().await? {
    ///     ids.push(ticket.id);
    /// }
    /// assert_eq!(ids, ["1", "2"]);
    /// # Ok::<(), unified_tables::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn stream(self) -> IndexStream<T> {
        let limit = self.take.unwrap_or(usize::MAX);
        let op = self.store.op("index_find");
        // The same query, owning its handle, so the stream outlives the lookup.
        let query: IndexQuery<'static, T> = IndexQuery {
            store: self.store.clone(),
            def: self.def,
            partition: self.partition,
            span: self.span,
            take: self.take,
            error: self.error,
            lookup: PhantomData,
        };
        let matches = futures::stream::try_unfold(
            (query, None::<IndexCursor>, false),
            |(mut query, cursor, done)| async move {
                if done {
                    return Ok::<_, Error>(None);
                }
                let page = query.read_page(cursor, MAX_PAGE_SIZE as usize).await?;
                let done = page.cursor.is_none();
                Ok(Some((
                    futures::stream::iter(page.items.into_iter().map(Ok)),
                    (query, page.cursor, done),
                )))
            },
        )
        .try_flatten()
        .take(limit);
        IndexStream::new(op.stream(matches))
    }

    /// One page of at most `take` entities (default 100, at most 1000),
    /// after `cursor` (from the start when `None`). A page may hold fewer
    /// than asked and still have a cursor.
    pub async fn page(mut self, cursor: Option<IndexCursor>) -> Result<IndexPage<T>> {
        let size = self.take.unwrap_or(DEFAULT_PAGE_SIZE).clamp(1, MAX_PAGE_SIZE as usize);
        let store = self.store.clone();
        store.op("index_page").run(self.read_page(cursor, size)).await
    }

    /// Every match (up to `take`).
    async fn all(self) -> Result<Vec<T>> {
        self.stream().try_collect().await
    }

    fn request(&self, cursor: Option<&IndexCursor>, top: usize) -> Result<QueryRequest> {
        let key = if self.def.global { "PartitionKey" } else { "RowKey" };
        let start = index_key_prefix(self.def.name);
        let text = |s: String| Value::String(s);
        let mut parts = Vec::new();
        if let Some(p) = &self.partition {
            parts.push(Filter::eq("PartitionKey", text(p.clone())));
        }
        if let Some(prefix) = &self.span.prefix {
            let low = format!("{start}{prefix}");
            if let Some(high) = next_prefix(&low) {
                parts.push(Filter::cmp(key, CmpOp::Lt, text(high)));
            }
            parts.push(Filter::cmp(key, CmpOp::Ge, text(low)));
        } else {
            match self.span.low.clone().unwrap_or(Bound::Unbounded) {
                Bound::Included(v) => parts.push(Filter::cmp(key, CmpOp::Ge, text(format!("{start}{v}")))),
                // After every key of the value: the next value part.
                Bound::Excluded(v) => {
                    let after = next_prefix(&format!("{start}{v}")).unwrap_or_default();
                    parts.push(Filter::cmp(key, CmpOp::Ge, text(after)));
                }
                Bound::Unbounded => parts.push(Filter::cmp(key, CmpOp::Ge, text(start.clone()))),
            }
            match self.span.high.clone().unwrap_or(Bound::Unbounded) {
                Bound::Included(v) => {
                    let high = next_prefix(&format!("{start}{v}")).unwrap_or_default();
                    parts.push(Filter::cmp(key, CmpOp::Lt, text(high)));
                }
                Bound::Excluded(v) => parts.push(Filter::cmp(key, CmpOp::Lt, text(format!("{start}{v}")))),
                Bound::Unbounded => {
                    let end = next_prefix(&start).unwrap_or_default();
                    parts.push(Filter::cmp(key, CmpOp::Lt, text(end)));
                }
            }
        }
        if let Some(c) = cursor {
            let (pk, rk) = c.after.clone();
            parts.push(if self.def.global {
                Filter::cmp("PartitionKey", CmpOp::Gt, text(pk.clone()))
                    .or(Filter::eq("PartitionKey", text(pk)).and(Filter::cmp("RowKey", CmpOp::Gt, text(rk))))
            } else {
                Filter::cmp("RowKey", CmpOp::Gt, text(rk))
            });
        }
        let mut select: Vec<String> = vec!["RowKey".into(), INDEX_ROW.into(), INDEX_PARTITION.into()];
        select.extend(self.def.columns.iter().map(|c| (*c).to_owned()));
        Ok(QueryRequest {
            filter: parts.into_iter().reduce(Filter::and),
            select: Some(select),
            top: Some(top.clamp(1, MAX_PAGE_SIZE as usize) as u32),
        })
    }

    /// Reads index rows after `cursor` until `size` of them are read (or
    /// the index ends), then their entities.
    async fn read_page(&mut self, cursor: Option<IndexCursor>, size: usize) -> Result<IndexPage<T>> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let mut pages = self.store.pages(self.request(cursor.as_ref(), size)?).await?;
        let mut rows: Vec<Row> = Vec::new();
        let mut more = false;
        while let Some(page) = pages.next(|_| false).await? {
            rows.extend(page);
            if rows.len() >= size {
                more = true;
                break;
            }
        }
        rows.truncate(size);
        let last = rows.last().map(|r| (r.partition_key.clone(), r.row_key.clone()));
        let rows: Vec<Row> = rows.into_iter().filter(|r| self.matches(r)).collect();
        let items: Vec<Option<T>> = futures::stream::iter(rows)
            .map(|r| self.store.entity_behind(self.def, r))
            .buffered(READS_IN_FLIGHT)
            .try_collect()
            .await?;
        Ok(IndexPage {
            items: items.into_iter().flatten().collect(),
            cursor: match (more, last) {
                (true, Some(after)) => Some(IndexCursor { after }),
                _ => None,
            },
        })
    }

    /// Whether an index row holds a value the query asked for (a prefix
    /// lookup's rows are checked against their value).
    fn matches(&self, row: &Row) -> bool {
        match &self.span.must_start {
            Some((column, prefix)) => row
                .get(column)
                .and_then(Value::as_str)
                .is_some_and(|v| v.starts_with(prefix.as_str())),
            None => true,
        }
    }
}

impl<'s, T: TableEntity> IntoFuture for IndexQuery<'s, T> {
    type Output = Result<Vec<T>>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<Vec<T>>> + Send + 's>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.all())
    }
}

impl<T: TableEntity> Store<T> {
    /// The entity an index row points at, if it still needs that row (read
    /// repair: a stale row answers nothing) and this store reads it.
    pub(crate) async fn entity_behind(&self, def: &IndexDef, index: Row) -> Result<Option<T>> {
        let Some((pk, rk)) = entity_of(&index) else {
            return Ok(None);
        };
        let Some(row) = self.shared.backend.get(&self.table, &pk, &rk).await? else {
            return Ok(None);
        };
        if crate::store::read::is_continuation_row(&row) || !self.admits(&row) {
            return Ok(None);
        }
        let needed = index_row(def, &row).ok().flatten();
        if !needed.is_some_and(|n| n.partition_key == index.partition_key && n.row_key == index.row_key) {
            return Ok(None);
        }
        self.decode_row(row).await
    }

    /// The entity holding `value` in unique index `def`.
    pub(super) async fn get_unique(&self, def: &IndexDef, partition: Option<&str>, value: &str) -> Result<Option<T>> {
        let start = index_key_prefix(def.name);
        let (pk, rk) = match partition {
            Some(p) => (p.to_owned(), format!("{start}{value}")),
            None => (format!("{start}{value}"), INDEX_UNIQUE_ROW.to_owned()),
        };
        Key::new(pk.clone(), rk.clone()).validate()?;
        self.ensure_created().await?;
        let Some(row) = self.shared.backend.get(&self.table, &pk, &rk).await? else {
            return Ok(None);
        };
        self.entity_behind(def, row).await
    }
}
