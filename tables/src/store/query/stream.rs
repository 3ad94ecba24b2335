//! Streams of entities that hold one page at a time.

use std::collections::VecDeque;

use futures::stream;

use crate::backend::QueryRequest;
use crate::entity::TableEntity;
use crate::error::{Error, Result};
use crate::named_stream::named_stream;
use crate::store::query::read_ahead::PageFetcher;
use crate::store::{QueryOptions, Store};
use crate::value::Row;

named_stream!(
    /// The entities of a query, fetched page by page: the next page is fetched
    /// while the current one is decoded, so at most two pages are held in
    /// memory. Returned by [`Store::stream`].
    ///
    /// It is `Unpin`: poll it in place with its own [`next`](Self::next) or
    /// [`try_next`](Self::try_next), or use it as a [`futures::Stream`] with any
    /// stream combinator. After an error the stream ends.
    EntityStream<T>,
    T,
    "entity"
);

/// Where a stream is: its pages (the next one possibly on its way), the
/// rows of the current page not yet decoded.
struct State<T> {
    store: Store<T>,
    pages: Option<PageFetcher>,
    request: Option<QueryRequest>,
    buffer: VecDeque<Row>,
    left: Option<usize>,
}

impl<T: TableEntity> State<T> {
    /// The next entity, or `None` at the end.
    async fn next(&mut self) -> Result<Option<T>> {
        loop {
            if self.left == Some(0) {
                return Ok(None);
            }
            if let Some(row) = self.buffer.pop_front() {
                if let Some(entity) = self.store.decode_listed(row).await? {
                    self.left = self.left.map(|n| n - 1);
                    return Ok(Some(entity));
                }
                continue;
            }
            if self.pages.is_none() {
                self.store.ensure_created().await?;
            }
            let (store, request) = (&self.store, &mut self.request);
            let left = self.left;
            let pages = self.pages.get_or_insert_with(|| {
                let pages = PageFetcher::new(
                    store.shared.backend.clone(),
                    &store.table,
                    request.take().unwrap_or_default(),
                );
                // The first n in key order need every match where the service keeps no order.
                match left {
                    Some(_) => pages.in_key_order(),
                    None => pages,
                }
            });
            // The next page is wanted unless this one holds every entity still to come.
            let Some(page) = pages.next(|page| left.is_none_or(|n| page.rows.len() < n)).await? else {
                return Ok(None);
            };
            self.buffer.extend(page.rows);
        }
    }
}

impl<T: TableEntity> Store<T> {
    /// Streams the entities the options select, page by page: while one page
    /// is decoded the next is fetched, so at most two pages are held in memory.
    ///
    /// On a service that returns rows in no order (Cosmos DB for Table, see
    /// [`guide::cosmos`](crate::guide::cosmos)), a stream without a limit
    /// yields the entities in the service's order; with `take(n)` it reads
    /// every match and yields the first `n` in key order.
    ///
    /// ```
    /// # use unified_tables::{TableEntity, Tables, QueryOptions};
    /// # #[derive(TableEntity)] struct Msg { #[table(partition_key)] room: String, #[table(row_key)] id: String, text: String }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// # let store = Tables::memory().store::<Msg>();
    /// # store.create(&mut Msg { room: "room-1".into(), id: "1".into(), text: "hi".into() }).await?;
    /// let mut messages = store.stream(QueryOptions::partition("room-1"));
    /// while let Some(msg) = messages.next().await {
    ///     let msg = msg?;
    ///     println!("{}", msg.text);
    /// }
    /// # Ok::<(), unified_tables::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn stream<S>(&self, options: QueryOptions<T, S>) -> EntityStream<T> {
        let op = self.op("stream");
        let request = match self.request_for(&options) {
            Ok(request) => request,
            Err(e) => {
                return EntityStream::new(op.stream(stream::once(async move { Err::<T, Error>(e) })));
            }
        };
        let state = State {
            store: self.clone(),
            pages: None,
            request: Some(request),
            buffer: VecDeque::new(),
            left: options.take,
        };
        let inner = stream::try_unfold(state, |mut state| async move {
            Ok(state.next().await?.map(|entity| (entity, state)))
        });
        EntityStream::new(op.stream(inner))
    }
}
