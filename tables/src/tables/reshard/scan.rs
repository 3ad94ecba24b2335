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
                match policy.next_delay(made, started.elapsed()) {
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

/// The rows of a table that move, from every old account, in key order,
/// each with its old and its new account.
pub(super) struct MovingRows<'a> {
    scans: Vec<RowScan<'a>>,
    growth: Growth,
}

impl<'a> MovingRows<'a> {
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
        MovingRows { scans, growth }
    }

    /// The next moving row, its old account and its new one.
    pub(super) async fn next(&mut self) -> Result<Option<(usize, usize, Row)>> {
        for (at, scan) in self.scans.iter_mut().enumerate() {
            while let Some(row) = scan.peek().await? {
                if self.growth.moves(&row.partition_key, at).is_some() {
                    break;
                }
                scan.next().await?;
            }
        }
        let first = self
            .scans
            .iter()
            .enumerate()
            .filter_map(|(at, scan)| Some((at, scan.pages.items.front()?)))
            .min_by(|a, b| key_order(a.1, b.1))
            .map(|(at, _)| at);
        let Some(at) = first else { return Ok(None) };
        let row = self.scans[at].pages.items.pop_front().expect("peeked");
        let to = self.growth.moves(&row.partition_key, at).expect("a moving row");
        Ok(Some((at, to, row)))
    }
}

/// The blobs of a container that move, from every old account, in name
/// order, each with its old and its new account.
pub(super) struct MovingBlobs<'a> {
    scans: Vec<BlobScan<'a>>,
    growth: Growth,
}

impl<'a> MovingBlobs<'a> {
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
        MovingBlobs { scans, growth }
    }

    /// The next moving blob, its old account and its new one.
    pub(super) async fn next(&mut self) -> Result<Option<(usize, usize, BlobItem)>> {
        for (at, scan) in self.scans.iter_mut().enumerate() {
            while let Some(item) = scan.peek().await? {
                if self.growth.blob_moves(&item.name, at).is_some() {
                    break;
                }
                scan.next().await?;
            }
        }
        let first = self
            .scans
            .iter()
            .enumerate()
            .filter_map(|(at, scan)| Some((at, scan.pages.items.front()?)))
            .min_by(|a, b| cmp_utf16(&a.1.name, &b.1.name))
            .map(|(at, _)| at);
        let Some(at) = first else { return Ok(None) };
        let item = self.scans[at].pages.items.pop_front().expect("peeked");
        let to = self.growth.blob_moves(&item.name, at).expect("a moving blob");
        Ok(Some((at, to, item)))
    }
}
