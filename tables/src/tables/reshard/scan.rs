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

/// One table of one account, read a page at a time in key order (a missing
/// table reads as empty).
pub(super) struct RowScan<'a> {
    account: &'a dyn Backend,
    table: &'a str,
    policy: &'a RetryPolicy,
    token: Option<PageToken>,
    rows: VecDeque<Row>,
    ended: bool,
}

impl<'a> RowScan<'a> {
    pub(super) fn new(account: &'a dyn Backend, table: &'a str, policy: &'a RetryPolicy) -> RowScan<'a> {
        RowScan {
            account,
            table,
            policy,
            token: None,
            rows: VecDeque::new(),
            ended: false,
        }
    }

    /// The next row, read in when the page in hand is spent.
    pub(super) async fn peek(&mut self) -> Result<Option<&Row>> {
        while self.rows.is_empty() && !self.ended {
            let request = QueryRequest::default();
            let token = self.token.take();
            let read = send(self.policy, true, || {
                self.account.query(self.table, &request, token.as_ref())
            })
            .await;
            match read {
                Ok(page) => {
                    self.rows = page.rows.into();
                    self.ended = page.next.is_none();
                    self.token = page.next;
                }
                Err(e) if is_missing(&e) => self.ended = true,
                Err(e) => {
                    self.token = token;
                    return Err(e);
                }
            }
        }
        Ok(self.rows.front())
    }

    /// Takes the next row.
    pub(super) async fn next(&mut self) -> Result<Option<Row>> {
        self.peek().await?;
        Ok(self.rows.pop_front())
    }
}

/// One container of one account, listed a page at a time in name order
/// (a missing container lists as empty).
pub(super) struct BlobScan<'a> {
    account: &'a dyn BlobBackend,
    container: &'a str,
    prefix: &'a str,
    policy: &'a RetryPolicy,
    marker: Option<String>,
    items: VecDeque<BlobItem>,
    ended: bool,
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
            marker: None,
            items: VecDeque::new(),
            ended: false,
        }
    }

    /// The next blob, listed when the page in hand is spent.
    pub(super) async fn peek(&mut self) -> Result<Option<&BlobItem>> {
        while self.items.is_empty() && !self.ended {
            let marker = self.marker.take();
            let listed = send(self.policy, true, || {
                self.account
                    .list(self.container, self.prefix, None, marker.as_deref(), LIST_PAGE)
            })
            .await;
            match listed {
                Ok(page) => {
                    self.items = page.items.into();
                    self.ended = page.next_marker.is_none();
                    self.marker = page.next_marker;
                }
                Err(e) if is_missing(&e) => self.ended = true,
                Err(e) => {
                    self.marker = marker;
                    return Err(e);
                }
            }
        }
        Ok(self.items.front())
    }

    /// Takes the next blob.
    pub(super) async fn next(&mut self) -> Result<Option<BlobItem>> {
        self.peek().await?;
        Ok(self.items.pop_front())
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
            .filter_map(|(at, scan)| Some((at, scan.rows.front()?)))
            .min_by(|a, b| key_order(a.1, b.1))
            .map(|(at, _)| at);
        let Some(at) = first else { return Ok(None) };
        let row = self.scans[at].rows.pop_front().expect("peeked");
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
            .filter_map(|(at, scan)| Some((at, scan.items.front()?)))
            .min_by(|a, b| cmp_utf16(&a.1.name, &b.1.name))
            .map(|(at, _)| at);
        let Some(at) = first else { return Ok(None) };
        let item = self.scans[at].items.pop_front().expect("peeked");
        let to = self.growth.blob_moves(&item.name, at).expect("a moving blob");
        Ok(Some((at, to, item)))
    }
}
