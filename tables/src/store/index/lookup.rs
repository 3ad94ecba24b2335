//! Lookups through an index: [`Store::index`] gives an [`IndexLookup`] of
//! the handle's kind, whose methods build an [`IndexQuery`] (or, for a
//! unique index, read one entity).

use std::future::{Future, IntoFuture};
use std::ops::{Bound, RangeBounds};
use std::pin::Pin;

use futures::future::BoxFuture;
use futures::{Stream, StreamExt, TryStreamExt};

use crate::backend::QueryRequest;
use crate::entity::{Key, TableEntity};
use crate::error::{Error, KeyKind, Result};
use crate::index::encode::text_form;
use crate::index::rows::{entity_of, index_row, value_key};
use crate::index::{
    Global, Index, IndexDef, IndexKey, Local, OrderedIndexKey, PrefixIndexValue, UniqueGlobal, UniqueLocal,
};
use crate::layout::{index_key_prefix, INDEX_PARTITION, INDEX_ROW, INDEX_UNIQUE_ROW};
use crate::query::{CmpOp, Filter};
use crate::service::{next_prefix, MAX_PAGE_SIZE};
use crate::store::query::paging::DEFAULT_PAGE_SIZE;
use crate::store::Store;
use crate::value::{Row, Value};

/// Entity reads a lookup keeps in flight.
const READS_IN_FLIGHT: usize = 16;

impl<T: TableEntity> Store<T> {
    /// The lookups of one index of `T`, from its handle (`Customer::BY_EMAIL`):
    /// `find`, `range` and `prefix` (a query), and `get` on a unique index.
    /// A local index's lookups name the partition; a global one's do not.
    ///
    /// ```
    /// # use unified_tables::{TableEntity, Tables};
    /// #[derive(TableEntity, Debug)]
    /// struct Customer {
    ///     #[table(partition_key)] region: String,
    ///     #[table(row_key)] id: String,
    ///     #[unique] email: String,
    ///     #[index] city: String,
    /// }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let customers = Tables::memory().store::<Customer>();
    /// customers.create(&mut Customer { region: "eu".into(), id: "1".into(), email: "a@x.com".into(), city: "Lviv".into() }).await?;
    ///
    /// let found = customers.index(Customer::BY_EMAIL).get("eu", "a@x.com").await?;
    /// assert_eq!(found.map(|c| c.id).as_deref(), Some("1"));
    /// let in_lviv = customers.index(Customer::BY_CITY).find("eu", "Lviv").take(10).await?;
    /// assert_eq!(in_lviv.len(), 1);
    /// // The same lookups, as the derive spells them on the type:
    /// assert!(Customer::get_by_email(&customers, "eu", "a@x.com").await?.is_some());
    /// assert_eq!(Customer::find_by_city(&customers, "eu", "Kyiv").await?.len(), 0);
    /// # Ok::<(), unified_tables::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn index<K, V>(&self, index: Index<T, K, V>) -> IndexLookup<'_, T, K, V> {
        IndexLookup { store: self, index }
    }
}

/// The lookups of one index, from [`Store::index`]. Which methods it has
/// depends on the index's kind: `get` on a unique index, a partition
/// argument on a local one.
pub struct IndexLookup<'s, T, K, V> {
    store: &'s Store<T>,
    index: Index<T, K, V>,
}

impl<T, K, V> std::fmt::Debug for IndexLookup<'_, T, K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexLookup")
            .field("table", &self.store.table)
            .field("index", &self.index.name())
            .finish()
    }
}

/// The value part of the keys of a lookup argument.
fn value_part<V: IndexKey>(arg: V::Arg<'_>) -> Result<String> {
    let cells = V::arg_cells(arg)?;
    Ok(value_key(&cells.iter().collect::<Vec<_>>()))
}

/// The key range of values in `range`.
fn value_range<'a, V: IndexKey>(range: &impl RangeBounds<V::Arg<'a>>) -> Result<(Bound<String>, Bound<String>)>
where
    V::Arg<'a>: Clone,
{
    let bound = |b: Bound<&V::Arg<'a>>| -> Result<Bound<String>> {
        Ok(match b {
            Bound::Included(v) => Bound::Included(value_part::<V>(v.clone())?),
            Bound::Excluded(v) => Bound::Excluded(value_part::<V>(v.clone())?),
            Bound::Unbounded => Bound::Unbounded,
        })
    };
    Ok((bound(range.start_bound())?, bound(range.end_bound())?))
}

impl<'s, T: TableEntity, K, V: IndexKey> IndexLookup<'s, T, K, V> {
    fn query(&self, partition: Option<&str>, span: Result<Span>) -> IndexQuery<'s, T> {
        let (span, error) = match span {
            Ok(s) => (s, None),
            Err(e) => (Span::default(), Some(e)),
        };
        let error = error.or_else(|| match partition {
            Some(p) => crate::service::validate_key(KeyKind::PartitionKey, p).err(),
            None => None,
        });
        IndexQuery {
            store: self.store,
            def: self.index.def(),
            partition: partition.map(str::to_owned),
            span,
            take: None,
            error,
        }
    }

    fn exact(&self, partition: Option<&str>, value: V::Arg<'_>) -> IndexQuery<'s, T> {
        self.query(partition, value_part::<V>(value).map(Span::starting))
    }

    fn ranged<'a>(&self, partition: Option<&str>, range: impl RangeBounds<V::Arg<'a>>) -> IndexQuery<'s, T>
    where
        V::Arg<'a>: Clone,
    {
        self.query(
            partition,
            value_range::<V>(&range).map(|(low, high)| Span::between(low, high)),
        )
    }

    fn prefixed(&self, partition: Option<&str>, prefix: &str) -> IndexQuery<'s, T> {
        let column = self.index.def().columns.first().copied().unwrap_or_default();
        let span = Span {
            prefix: Some(text_form(prefix)),
            must_start: Some((column.to_owned(), prefix.to_owned())),
            ..Span::default()
        };
        self.query(partition, Ok(span))
    }

    fn get_one(&self, partition: Option<&str>, value: V::Arg<'_>) -> BoxFuture<'s, Result<Option<T>>> {
        let value = value_part::<V>(value);
        let partition = partition.map(str::to_owned);
        let (store, def) = (self.store, self.index.def());
        Box::pin(async move { store.get_unique(def, partition.as_deref(), &value?).await })
    }
}

macro_rules! queries {
    (local: $kind:ty) => {
        impl<'s, T: TableEntity, V: IndexKey> IndexLookup<'s, T, $kind, V> {
            /// The entities of `partition` whose indexed value is `value`, in index order.
            pub fn find(&self, partition: &str, value: V::Arg<'_>) -> IndexQuery<'s, T> {
                self.exact(Some(partition), value)
            }

            /// The entities of `partition` whose indexed value is in `range`,
            /// in value order: `"a".."m"`, `18..=65`, `(Status::Open, t0)..`.
            pub fn range<'a>(&self, partition: &str, range: impl RangeBounds<V::Arg<'a>>) -> IndexQuery<'s, T>
            where
                V: OrderedIndexKey,
                V::Arg<'a>: Clone,
            {
                self.ranged(Some(partition), range)
            }

            /// The entities of `partition` whose indexed string starts with `prefix`, in value order.
            pub fn prefix(&self, partition: &str, prefix: &str) -> IndexQuery<'s, T>
            where
                V: PrefixIndexValue,
            {
                self.prefixed(Some(partition), prefix)
            }
        }
    };
    (global: $kind:ty) => {
        impl<'s, T: TableEntity, V: IndexKey> IndexLookup<'s, T, $kind, V> {
            /// The entities whose indexed value is `value`, in any partition,
            /// in index order; each is read and kept only if it still holds the value.
            pub fn find(&self, value: V::Arg<'_>) -> IndexQuery<'s, T> {
                self.exact(None, value)
            }

            /// The entities whose indexed value is in `range`, in any partition, in value order.
            pub fn range<'a>(&self, range: impl RangeBounds<V::Arg<'a>>) -> IndexQuery<'s, T>
            where
                V: OrderedIndexKey,
                V::Arg<'a>: Clone,
            {
                self.ranged(None, range)
            }

            /// The entities whose indexed string starts with `prefix`, in any partition, in value order.
            pub fn prefix(&self, prefix: &str) -> IndexQuery<'s, T>
            where
                V: PrefixIndexValue,
            {
                self.prefixed(None, prefix)
            }
        }
    };
}

queries!(local: Local);
queries!(local: UniqueLocal);
queries!(global: Global);
queries!(global: UniqueGlobal);

impl<'s, T: TableEntity, V: IndexKey> IndexLookup<'s, T, UniqueLocal, V> {
    /// The entity of `partition` holding `value`, or `None`: two point reads
    /// (the index row, then the entity).
    pub fn get(&self, partition: &str, value: V::Arg<'_>) -> BoxFuture<'s, Result<Option<T>>> {
        self.get_one(Some(partition), value)
    }
}

impl<'s, T: TableEntity, V: IndexKey> IndexLookup<'s, T, UniqueGlobal, V> {
    /// The entity holding `value` in any partition, or `None`: two point
    /// reads; an index row whose entity no longer holds the value answers `None`.
    pub fn get(&self, value: V::Arg<'_>) -> BoxFuture<'s, Result<Option<T>>> {
        self.get_one(None, value)
    }
}

/// Which index keys a query reads: those starting with `prefix`, or those
/// between `low` and `high` (value parts).
#[derive(Debug, Clone, Default)]
struct Span {
    prefix: Option<String>,
    low: Option<Bound<String>>,
    high: Option<Bound<String>>,
    /// A prefix lookup's column and text: the text forms of `/` and `.`
    /// share a lead, so the rows found are checked against the value.
    must_start: Option<(String, String)>,
}

impl Span {
    fn starting(value: String) -> Span {
        Span {
            prefix: Some(value),
            ..Span::default()
        }
    }

    fn between(low: Bound<String>, high: Bound<String>) -> Span {
        Span {
            low: Some(low),
            high: Some(high),
            ..Span::default()
        }
    }
}

/// A position in an index: a page's cursor, given back to [`IndexQuery::page`].
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
    store: &'s Store<T>,
    def: &'static IndexDef,
    partition: Option<String>,
    span: Span,
    take: Option<usize>,
    error: Option<Error>,
}

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

    /// The matches, page by page (each page's entities read 16 at a time).
    pub fn stream(self) -> impl Stream<Item = Result<T>> + Send + 's {
        let limit = self.take.unwrap_or(usize::MAX);
        futures::stream::try_unfold(
            (self, None::<IndexCursor>, false),
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
        .take(limit)
    }

    /// One page of at most `take` entities (default 100, at most 1000),
    /// after `cursor` (from the start when `None`). A page may hold fewer
    /// than asked and still have a cursor.
    pub async fn page(mut self, cursor: Option<IndexCursor>) -> Result<IndexPage<T>> {
        let size = self.take.unwrap_or(DEFAULT_PAGE_SIZE).clamp(1, MAX_PAGE_SIZE as usize);
        self.read_page(cursor, size).await
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
    async fn get_unique(&self, def: &IndexDef, partition: Option<&str>, value: &str) -> Result<Option<T>> {
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

// What the derive's lookups call: one function per kind, so that a field
// type that cannot be indexed is one error, at the field.

#[doc(hidden)]
pub fn find_local<'s, T: TableEntity, V: IndexKey>(
    store: &'s Store<T>,
    index: Index<T, Local, V>,
    partition: &str,
    value: V::Arg<'_>,
) -> IndexQuery<'s, T> {
    store.index(index).find(partition, value)
}

#[doc(hidden)]
pub fn get_local<'s, T: TableEntity, V: IndexKey>(
    store: &'s Store<T>,
    index: Index<T, UniqueLocal, V>,
    partition: &str,
    value: V::Arg<'_>,
) -> BoxFuture<'s, Result<Option<T>>> {
    store.index(index).get(partition, value)
}

#[doc(hidden)]
pub fn find_global<'s, T: TableEntity, V: IndexKey>(
    store: &'s Store<T>,
    index: Index<T, Global, V>,
    value: V::Arg<'_>,
) -> IndexQuery<'s, T> {
    store.index(index).find(value)
}

#[doc(hidden)]
pub fn get_global<'s, T: TableEntity, V: IndexKey>(
    store: &'s Store<T>,
    index: Index<T, UniqueGlobal, V>,
    value: V::Arg<'_>,
) -> BoxFuture<'s, Result<Option<T>>> {
    store.index(index).get(value)
}
