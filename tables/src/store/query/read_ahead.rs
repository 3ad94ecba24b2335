//! The pages of one query, with the next page fetched while the current
//! one is decoded.
//!
//! One page ahead at most: a reader holds the page it decodes and the one
//! being fetched, so a stream's memory is bounded by two pages. A page is
//! fetched ahead only when the reader says it will want it (a limit it has
//! not reached yet), so a bounded read sends no request it does not need.

use std::sync::Arc;

use tokio::task::JoinHandle;

use crate::backend::{Backend, Page, PageAnswer, PageToken, QueryRequest};
use crate::error::{Error, Result};
use crate::value::cmp_utf16;

/// The page fetched ahead, by a task of its own; dropped, it is abandoned.
struct Ahead(JoinHandle<Result<PageAnswer>>);

impl Drop for Ahead {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Walks the pages of one query, following page tokens (an empty page
/// with a token is not the end).
pub(crate) struct PageFetcher {
    backend: Arc<dyn Backend>,
    table: Arc<str>,
    request: Arc<QueryRequest>,
    token: Option<PageToken>,
    started: bool,
    ahead: Option<Ahead>,
    /// Whether pages come as the service's bodies (read by the caller,
    /// straight into entities) rather than as rows (read by the task that
    /// fetches them).
    bodies: bool,
    /// Whether the reader needs the rows in key order: on a service that
    /// returns them in no order, every page is read and the rows are
    /// ordered before the first is returned.
    in_key_order: bool,
    /// The rows of every page, ordered, not returned yet (a reader in key
    /// order on a service that keeps none).
    ordered: Option<std::collections::VecDeque<crate::value::Row>>,
}

impl PageFetcher {
    pub(crate) fn new(backend: Arc<dyn Backend>, table: &str, request: QueryRequest) -> PageFetcher {
        PageFetcher {
            backend,
            table: Arc::from(table),
            request: Arc::new(request),
            token: None,
            started: false,
            ahead: None,
            bodies: false,
            in_key_order: false,
            ordered: None,
        }
    }

    /// The same walk, its rows in (PartitionKey, RowKey) order on every
    /// service. Where the service keeps that order (Table Storage), nothing
    /// changes. Where it does not (Cosmos DB for Table), every match is read
    /// and ordered before the first page is returned, then returned in pages
    /// of the request's `$top`: the reader pays one request per page of
    /// matches and holds them all before it sees the first.
    pub(crate) fn in_key_order(mut self) -> PageFetcher {
        self.in_key_order = !self.backend.profile().sorts_results();
        self
    }

    /// The same walk, its pages answered as bodies where the backend has
    /// them ([`Backend::query_body`]).
    pub(crate) fn of_bodies(mut self) -> PageFetcher {
        self.bodies = true;
        self
    }

    /// Whether the last page has been returned.
    pub(crate) fn is_done(&self) -> bool {
        self.started
            && self.token.is_none()
            && self.ahead.is_none()
            && self.ordered.as_ref().is_none_or(|o| o.is_empty())
    }

    /// One page, as the fetcher's mode asks.
    async fn fetch(
        backend: &dyn Backend,
        table: &str,
        request: &QueryRequest,
        token: Option<&PageToken>,
        bodies: bool,
    ) -> Result<PageAnswer> {
        if bodies {
            backend.query_body(table, request, token).await
        } else {
            backend.query(table, request, token).await.map(PageAnswer::Rows)
        }
    }

    /// The next page, or `None` after the last. When the page has a
    /// successor and `wants_next(&page)` says the reader will read it, the
    /// successor is fetched while the caller decodes this one.
    pub(crate) async fn next(&mut self, wants_next: impl FnOnce(&Page) -> bool) -> Result<Option<Page>> {
        let Some(answer) = self.take_answer().await? else {
            return Ok(None);
        };
        let page = answer.into_page()?;
        self.after(page.next.clone(), || wants_next(&page));
        Ok(Some(page))
    }

    /// The next page as the backend answered it, or `None` after the last;
    /// its successor is fetched ahead when `wants_next()`.
    pub(crate) async fn next_answer(&mut self, wants_next: impl FnOnce() -> bool) -> Result<Option<PageAnswer>> {
        let Some(answer) = self.take_answer().await? else {
            return Ok(None);
        };
        self.after(answer.next().cloned(), wants_next);
        Ok(Some(answer))
    }

    /// The next page of the rows read in key order: every page of the
    /// query is read and ordered first.
    async fn ordered(&mut self) -> Result<Option<PageAnswer>> {
        if self.ordered.is_none() {
            self.ordered = Some(self.read_ordered().await?.into());
        }
        let rows = self.ordered.as_mut().expect("read above");
        if self.started && rows.is_empty() {
            return Ok(None);
        }
        self.started = true;
        let size = self.request.top.map_or(rows.len(), |t| t as usize).max(1);
        let page: Vec<_> = rows.drain(..size.min(rows.len())).collect();
        // Not a token of the service: only "more follows", for readers that ask.
        let next = (!rows.is_empty()).then(|| PageToken {
            next_partition_key: String::new(),
            next_row_key: None,
        });
        Ok(Some(PageAnswer::Rows(Page { rows: page, next })))
    }

    /// Every match of the query, in key order.
    async fn read_ordered(&self) -> Result<Vec<crate::value::Row>> {
        // Every match is read: in the largest pages the service gives.
        let request = QueryRequest {
            top: Some(crate::service::MAX_PAGE_SIZE),
            ..(*self.request).clone()
        };
        let mut rows = Vec::new();
        let mut token = None;
        loop {
            let page = Self::fetch(&*self.backend, &self.table, &request, token.as_ref(), false)
                .await?
                .into_page()?;
            rows.extend(page.rows);
            match page.next {
                Some(next) => token = Some(next),
                None => break,
            }
        }
        rows.sort_by(|a: &crate::value::Row, b| {
            cmp_utf16(&a.partition_key, &b.partition_key).then_with(|| cmp_utf16(&a.row_key, &b.row_key))
        });
        Ok(rows)
    }

    /// The page fetched ahead, or the next one fetched now.
    async fn take_answer(&mut self) -> Result<Option<PageAnswer>> {
        if self.in_key_order {
            return self.ordered().await;
        }
        Ok(Some(match self.ahead.take() {
            Some(mut ahead) => {
                let joined = (&mut ahead.0).await;
                match joined {
                    Ok(page) => page?,
                    Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                    Err(e) => return Err(Error::transport("a page read ahead was lost").with_source(e)),
                }
            }
            None if self.is_done() => return Ok(None),
            None => {
                Self::fetch(
                    &*self.backend,
                    &self.table,
                    &self.request,
                    self.token.as_ref(),
                    self.bodies,
                )
                .await?
            }
        }))
    }

    /// A page whose successor starts at `next` was returned: fetch that one
    /// ahead when the reader will read it.
    fn after(&mut self, next: Option<PageToken>, wants_next: impl FnOnce() -> bool) {
        self.started = true;
        if self.in_key_order {
            // Every page is read already.
            return;
        }
        self.token = next;
        if let Some(token) = self.token.clone() {
            if wants_next() {
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    let (backend, table, request) = (self.backend.clone(), self.table.clone(), self.request.clone());
                    let bodies = self.bodies;
                    let task = runtime.spawn(crate::telemetry::carried(async move {
                        Self::fetch(&*backend, &table, &request, Some(&token), bodies).await
                    }));
                    self.ahead = Some(Ahead(task));
                    // The successor's own token comes with it.
                    self.token = None;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::counting::CountingBackend;
    use crate::backend::memory::MemoryBackend;
    use crate::backend::WriteOp;
    use crate::value::Row;

    async fn seeded(rows: usize) -> Arc<CountingBackend<MemoryBackend>> {
        let backend = Arc::new(CountingBackend::new(MemoryBackend::new()));
        backend.create_table("T").await.unwrap();
        for i in 0..rows {
            backend
                .execute("T", WriteOp::Insert(Row::new("p", format!("{i:04}"))))
                .await
                .unwrap();
        }
        backend
    }

    fn request() -> QueryRequest {
        QueryRequest {
            top: Some(10),
            ..QueryRequest::default()
        }
    }

    #[tokio::test]
    async fn every_page_comes_once_in_order_with_the_next_fetched_ahead() {
        let backend = seeded(35).await;
        let mut pages = PageFetcher::new(backend.clone(), "T", request());
        let mut keys = Vec::new();
        let mut sizes = Vec::new();
        while let Some(page) = pages.next(|_| true).await.unwrap() {
            sizes.push(page.rows.len());
            // The successor is asked for before this page is decoded (its task runs at the first yield).
            tokio::task::yield_now().await;
            let asked = backend.counts().queries as usize;
            assert_eq!(asked, sizes.len() + usize::from(page.next.is_some()), "{sizes:?}");
            keys.extend(page.rows.into_iter().map(|r| r.row_key));
        }
        assert_eq!(sizes, [10, 10, 10, 5]);
        assert_eq!(keys, (0..35).map(|i| format!("{i:04}")).collect::<Vec<_>>());
        assert!(pages.next(|_| true).await.unwrap().is_none());
        assert_eq!(backend.counts().queries, 4);
    }

    #[tokio::test]
    async fn no_page_is_fetched_ahead_that_the_reader_will_not_read() {
        let backend = seeded(35).await;
        let mut pages = PageFetcher::new(backend.clone(), "T", request());
        let first = pages.next(|_| false).await.unwrap().unwrap();
        assert_eq!(first.rows.len(), 10);
        tokio::task::yield_now().await;
        assert_eq!(backend.counts().queries, 1);
        // Asked for again, the next page is read where the first one ended.
        let second = pages.next(|_| false).await.unwrap().unwrap();
        assert_eq!(second.rows[0].row_key, "0010");
    }
}
