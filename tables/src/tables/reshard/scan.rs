//! What the job reads and how it sends: a table or a blob listing read a
//! page at a time in key order, the rows and blobs that move picked from the
//! old accounts' reads in one merged order, and every request sent again
//! after a throttled answer.

use std::cmp::Ordering;
use std::collections::VecDeque;
use std::future::Future;
use std::sync::Arc;

use tokio::time::Instant;

use crate::backend::blob::{BlobBackend, BlobItem};
use crate::backend::pool::{account_of, PooledBlobBackend};
use crate::backend::retry::RetryPolicy;
use crate::backend::{Backend, PageToken, QueryRequest};
use crate::error::{ErrorKind, Result};
use crate::value::{cmp_utf16, Row};

/// Blob names asked for per listing page: a page of names is all the job
/// holds of a listing.
const LIST_PAGE: u32 = 1000;

/// Sends one request of the job, again after a throttled answer (one the
/// service did not process), and after an answer that leaves unknown
/// whether it was applied when `repeatable` (a read, or a write that does
/// the same when sent twice), within `policy`'s attempts and budget.
pub(super) async fn send<T, F, Fut>(policy: &RetryPolicy, repeatable: bool, mut call: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let started = Instant::now();
    let mut made = 0;
    loop {
        made += 1;
        match call().await {
            Err(e) if e.kind() == ErrorKind::Throttled || (repeatable && e.kind() == ErrorKind::Unavailable) => {
                match policy.pause_after(&e, made, started.elapsed()) {
                    Some(pause) => tokio::time::sleep(pause).await,
                    None => return Err(e),
                }
            }
            done => return done,
        }
    }
}

fn is_missing(e: &crate::Error) -> bool {
    e.kind() == ErrorKind::NotFound
}

pub(super) fn key_order(a: &Row, b: &Row) -> Ordering {
    cmp_utf16(&a.partition_key, &b.partition_key).then_with(|| cmp_utf16(&a.row_key, &b.row_key))
}

/// A listing read a page at a time: the items of the page in hand, the
/// cursor of the next page, and whether the last page has been read (a
/// missing table or container reads as empty).
struct Paged<T, C> {
    items: VecDeque<T>,
    cursor: Option<C>,
    ended: bool,
}

impl<T, C: Clone> Paged<T, C> {
    fn new() -> Paged<T, C> {
        Paged {
            items: VecDeque::new(),
            cursor: None,
            ended: false,
        }
    }

    /// Reads pages with `fetch` (given the cursor of the page to read)
    /// until one holds an item or the listing ends; a failed read keeps
    /// the cursor, so the next call reads the same page.
    async fn fill<Fut>(&mut self, fetch: impl Fn(Option<C>) -> Fut) -> Result<()>
    where
        Fut: Future<Output = Result<(Vec<T>, Option<C>)>>,
    {
        while self.items.is_empty() && !self.ended {
            let cursor = self.cursor.take();
            match fetch(cursor.clone()).await {
                Ok((items, next)) => {
                    self.items = items.into();
                    self.ended = next.is_none();
                    self.cursor = next;
                }
                Err(e) if is_missing(&e) => self.ended = true,
                Err(e) => {
                    self.cursor = cursor;
                    return Err(e);
                }
            }
        }
        Ok(())
    }
}

/// One table of one account, read a page at a time in key order (a missing
/// table reads as empty).
pub(super) struct RowScan<'a> {
    account: &'a dyn Backend,
    table: &'a str,
    policy: &'a RetryPolicy,
    pages: Paged<Row, PageToken>,
}

impl<'a> RowScan<'a> {
    pub(super) fn new(account: &'a dyn Backend, table: &'a str, policy: &'a RetryPolicy) -> RowScan<'a> {
        RowScan {
            account,
            table,
            policy,
            pages: Paged::new(),
        }
    }

    /// The next row, read in when the page in hand is spent.
    pub(super) async fn peek(&mut self) -> Result<Option<&Row>> {
        let (account, table, policy) = (self.account, self.table, self.policy);
        self.pages
            .fill(|token| async move {
                let request = QueryRequest::default();
                let page = send(policy, true, || account.query(table, &request, token.as_ref())).await?;
                Ok((page.rows, page.next))
            })
            .await?;
        Ok(self.pages.items.front())
    }

    /// Takes the next row.
    pub(super) async fn next(&mut self) -> Result<Option<Row>> {
        self.peek().await?;
        Ok(self.pages.items.pop_front())
    }
}

/// One container of one account, listed a page at a time in name order
/// (a missing container lists as empty).
pub(super) struct BlobScan<'a> {
    account: &'a dyn BlobBackend,
    container: &'a str,
    prefix: &'a str,
    policy: &'a RetryPolicy,
    pages: Paged<BlobItem, String>,
}

impl<'a> BlobScan<'a> {
    pub(super) fn new(
        account: &'a dyn BlobBackend,
        container: &'a str,
        prefix: &'a str,
        policy: &'a RetryPolicy,
    ) -> BlobScan<'a> {
        BlobScan {
            account,
            container,
            prefix,
            policy,
            pages: Paged::new(),
        }
    }

    /// The next blob, listed when the page in hand is spent.
    pub(super) async fn peek(&mut self) -> Result<Option<&BlobItem>> {
        let (account, container, prefix, policy) = (self.account, self.container, self.prefix, self.policy);
        self.pages
            .fill(|marker| async move {
                let page = send(policy, true, || {
                    account.list(container, prefix, None, marker.as_deref(), LIST_PAGE)
                })
                .await?;
                Ok((page.items, page.next_marker))
            })
            .await?;
        Ok(self.pages.items.front())
    }

    /// Takes the next blob.
    pub(super) async fn next(&mut self) -> Result<Option<BlobItem>> {
        self.peek().await?;
        Ok(self.pages.items.pop_front())
    }
}

/// The pool's sizes before and after it grows.
#[derive(Debug, Clone, Copy)]
pub(super) struct Growth {
    pub(super) old: usize,
    pub(super) new: usize,
}

impl Growth {
    /// The new home of a key at home in old account `at`, if it moves.
    pub(super) fn moves(&self, key: &str, at: usize) -> Option<usize> {
        if account_of(key, self.old) != at {
            return None; // not at home here: left alone
        }
        let to = account_of(key, self.new);
        (to != at).then_some(to)
    }

    /// The new home of the blob `name` at home in old account `at`, if it moves.
    pub(super) fn blob_moves(&self, name: &str, at: usize) -> Option<usize> {
        let key = PooledBlobBackend::routing_key(name).ok()?;
        self.moves(&key, at)
    }
}

/// A read of one old account that the job merges with the others'.
pub(super) trait Scan {
    /// A row or a blob.
    type Item;
    /// The next item, read in when the page in hand is spent.
    async fn peek(&mut self) -> Result<Option<&Self::Item>>;
    /// Takes the next item.
    async fn next(&mut self) -> Result<Option<Self::Item>>;
    /// The next item, if one is in hand.
    fn front(&self) -> Option<&Self::Item>;
    /// The new home of `item`, at home in old account `at`, if it moves.
    fn moves(growth: &Growth, item: &Self::Item, at: usize) -> Option<usize>;
    /// The order of the merge: key order for rows, name order for blobs.
    fn order(a: &Self::Item, b: &Self::Item) -> Ordering;
}

impl Scan for RowScan<'_> {
    type Item = Row;
    async fn peek(&mut self) -> Result<Option<&Row>> {
        RowScan::peek(self).await
    }
    async fn next(&mut self) -> Result<Option<Row>> {
        RowScan::next(self).await
    }
    fn front(&self) -> Option<&Row> {
        self.pages.items.front()
    }
    fn moves(growth: &Growth, row: &Row, at: usize) -> Option<usize> {
        growth.moves(&row.partition_key, at)
    }
    fn order(a: &Row, b: &Row) -> Ordering {
        key_order(a, b)
    }
}

impl Scan for BlobScan<'_> {
    type Item = BlobItem;
    async fn peek(&mut self) -> Result<Option<&BlobItem>> {
        BlobScan::peek(self).await
    }
    async fn next(&mut self) -> Result<Option<BlobItem>> {
        BlobScan::next(self).await
    }
    fn front(&self) -> Option<&BlobItem> {
        self.pages.items.front()
    }
    fn moves(growth: &Growth, item: &BlobItem, at: usize) -> Option<usize> {
        growth.blob_moves(&item.name, at)
    }
    fn order(a: &BlobItem, b: &BlobItem) -> Ordering {
        cmp_utf16(&a.name, &b.name)
    }
}

/// What moves of one table or container, from every old account, in one
/// merged order (key order for rows, name order for blobs), each item with
/// its old and its new account.
pub(super) struct Moving<S> {
    scans: Vec<S>,
    growth: Growth,
}

/// The rows of a table that move.
pub(super) type MovingRows<'a> = Moving<RowScan<'a>>;
/// The blobs of a container that move.
pub(super) type MovingBlobs<'a> = Moving<BlobScan<'a>>;

impl<'a> Moving<RowScan<'a>> {
    pub(super) fn new(
        accounts: &'a [Arc<dyn Backend>],
        table: &'a str,
        policy: &'a RetryPolicy,
        growth: Growth,
    ) -> MovingRows<'a> {
        let scans = accounts
            .iter()
            .map(|a| RowScan::new(a.as_ref(), table, policy))
            .collect();
        Moving { scans, growth }
    }
}

impl<'a> Moving<BlobScan<'a>> {
    pub(super) fn new(
        accounts: &'a [Arc<dyn BlobBackend>],
        container: &'a str,
        prefix: &'a str,
        policy: &'a RetryPolicy,
        growth: Growth,
    ) -> MovingBlobs<'a> {
        let scans = accounts
            .iter()
            .map(|a| BlobScan::new(a.as_ref(), container, prefix, policy))
            .collect();
        Moving { scans, growth }
    }
}

impl<S: Scan> Moving<S> {
    /// The next moving item, its old account and its new one.
    pub(super) async fn next(&mut self) -> Result<Option<(usize, usize, S::Item)>> {
        for (at, scan) in self.scans.iter_mut().enumerate() {
            while let Some(item) = scan.peek().await? {
                if S::moves(&self.growth, item, at).is_some() {
                    break;
                }
                scan.next().await?;
            }
        }
        let first = self
            .scans
            .iter()
            .enumerate()
            .filter_map(|(at, scan)| Some((at, scan.front()?)))
            .min_by(|a, b| S::order(a.1, b.1))
            .map(|(at, _)| at);
        let Some(at) = first else { return Ok(None) };
        let item = self.scans[at].next().await?.expect("peeked");
        let to = S::moves(&self.growth, &item, at).expect("a moving item");
        Ok(Some((at, to, item)))
    }
}
