//! The continuation rows of an entity being read, handed over as they
//! arrive. Up to [`MAX_POINT_READS`] rows are read by point reads sent all
//! at once and handed over in order, each as soon as it and the rows before
//! it are back: the reader checks and unpacks one row while the next is
//! still in flight. More rows are read by one range query.

use crate::telemetry;
use std::collections::VecDeque;
use std::future::Future;
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use futures::stream::{FuturesOrdered, StreamExt as _};

use crate::entity::TableEntity;
use crate::error::{Error, Result};
use crate::layout::continuation_key;
use crate::store::Store;
use crate::value::Row;

/// The most continuation rows read by point reads; more take one range
/// query. The rows of one transaction (4 MiB) hold at most eight rows of
/// text, which the service sizes at two bytes a character.
pub(crate) const MAX_POINT_READS: usize = 8;

/// The reads of an entity's continuation rows, under way.
pub(crate) struct ContinuationRead<'a> {
    /// Rows answered and not yet handed over, in order.
    ready: VecDeque<Row>,
    /// Point reads still under way, answered in the order they were sent.
    points: FuturesOrdered<BoxFuture<'a, Result<Option<Row>>>>,
    /// The range query, while it is under way.
    query: Option<BoxFuture<'a, Result<Vec<Row>>>>,
    /// The first failure, handed over after the rows answered before it.
    failed: Option<Error>,
}

impl<'a> ContinuationRead<'a> {
    /// Takes what the requests have answered so far (and sends those not
    /// sent yet), without waiting.
    fn poll_answers(&mut self, cx: &mut Context<'_>) {
        if let Some(query) = self.query.as_mut() {
            if let Poll::Ready(rows) = query.as_mut().poll(cx) {
                self.query = None;
                match rows {
                    Ok(rows) => self.ready.extend(rows),
                    Err(e) => self.failed = Some(e),
                }
            }
        }
        while self.failed.is_none() {
            match self.points.poll_next_unpin(cx) {
                Poll::Ready(Some(Ok(Some(row)))) => self.ready.push_back(row),
                Poll::Ready(Some(Ok(None))) => {}
                Poll::Ready(Some(Err(e))) => self.failed = Some(e),
                Poll::Ready(None) | Poll::Pending => break,
            }
        }
    }

    /// Sends every request not sent yet and keeps what is already answered.
    pub(crate) async fn send(&mut self) {
        std::future::poll_fn(|cx| {
            self.poll_answers(cx);
            Poll::Ready(())
        })
        .await;
    }

    /// Awaits `first` (polled before the reads, so that its request goes
    /// first) while the reads go on and their answers are kept.
    pub(crate) async fn alongside<F: Future>(&mut self, first: F) -> F::Output {
        let mut first = std::pin::pin!(first);
        std::future::poll_fn(|cx| {
            let done = first.as_mut().poll(cx);
            self.poll_answers(cx);
            done
        })
        .await
    }

    /// The next continuation row in order (a row that is not there is
    /// skipped: the reader's checks find it missing), a failure, or `None`
    /// once every read is answered.
    pub(crate) async fn next(&mut self) -> Option<Result<Row>> {
        let next = self.next_answer().await;
        if let Some(Ok(_)) = &next {
            tracing::debug!(name: telemetry::CONTINUATION_ROWS, target: telemetry::DECISION_TARGET, rows = 1, "continuation row fetched");
        }
        next
    }

    async fn next_answer(&mut self) -> Option<Result<Row>> {
        loop {
            if let Some(row) = self.ready.pop_front() {
                return Some(Ok(row));
            }
            if let Some(e) = self.failed.take() {
                return Some(Err(e));
            }
            if let Some(query) = self.query.take() {
                match query.await {
                    Ok(rows) => self.ready.extend(rows),
                    Err(e) => return Some(Err(e)),
                }
                continue;
            }
            match self.points.next().await? {
                Ok(Some(row)) => return Some(Ok(row)),
                Ok(None) => {}
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

impl<T: TableEntity> Store<T> {
    /// The reads of the continuation rows `indexes` of the main row at
    /// `row_key`: point reads when there are at most [`MAX_POINT_READS`],
    /// else one range query of the rows `1..=last`. Nothing is sent until
    /// the reads are first polled.
    pub(crate) fn read_continuations<'a>(
        &'a self,
        partition_key: &'a str,
        row_key: &'a str,
        indexes: impl ExactSizeIterator<Item = usize>,
        last: usize,
    ) -> ContinuationRead<'a> {
        let mut read = ContinuationRead {
            ready: VecDeque::new(),
            points: FuturesOrdered::new(),
            query: None,
            failed: None,
        };
        if indexes.len() <= MAX_POINT_READS {
            let (backend, table) = (&self.shared.backend, self.table.as_str());
            for index in indexes {
                let key = continuation_key(row_key, index);
                read.points
                    .push_back(Box::pin(async move { backend.get(table, partition_key, &key).await }));
            }
        } else {
            read.query = Some(Box::pin(self.continuation_rows(partition_key, row_key, last)));
        }
        read
    }
}
