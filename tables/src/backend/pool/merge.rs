//! A query over every account of a pool, merged in (PartitionKey, RowKey)
//! order.
//!
//! Each account is read with its own continuation, never from a key
//! filter: the page token (see [`cursor`](super::cursor)) holds, for each
//! account, the continuation of the page it is in and the last of its rows
//! already returned (or that it is done). A page merges the accounts' rows
//! as a k-way merge does: an account is asked for its next page only once
//! the rows it gave are all returned (every account that has more always
//! holds its next row, so the smallest of them is certainly next). So a
//! resumed query neither repeats nor skips a row, an account with no more
//! matches is asked nothing more, and each account's rows are read once when
//! the pages are read in turn by one handle: the rows an account gave that a
//! page did not return wait, bound to that page's token, for the next page
//! (a token sent back to another handle, or a second time, reads them again
//! from their page's continuation).
//!
//! A row outside its home account (left behind by an interrupted reshard)
//! is never returned.
//!
//! Accounts that return rows in no order (Cosmos DB for Table) have no order
//! to merge: they are read one after another (`in_turn`), and a reader that
//! needs key order orders what it read.

use std::cmp::Ordering;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use futures::future::try_join_all;

use super::account_of;
use super::cursor::{CursorKey, Place};
use crate::backend::{Backend, Page, PageToken, QueryRequest};
use crate::error::Result;
use crate::service;
use crate::value::{cmp_utf16, Row};

/// The most rows kept for pages not read yet, over every token.
const KEPT_ROWS: usize = 16_384;

fn key_order(a: (&str, &str), b: (&str, &str)) -> Ordering {
    cmp_utf16(a.0, b.0).then_with(|| cmp_utf16(a.1, b.1))
}

fn keys(row: &Row) -> (&str, &str) {
    (&row.partition_key, &row.row_key)
}

/// One account's rows read and not returned yet, by the page they came in.
#[derive(Debug, Default)]
struct Fetched {
    /// Each page's continuation (the one it was read from) and rows, in order.
    pages: VecDeque<(Option<PageToken>, VecDeque<Row>)>,
    /// Where the account's rows after the last page are read from, if it has more.
    next: Option<Resume>,
}

/// Where an account's next page is read from.
#[derive(Debug)]
enum Resume {
    /// Its start.
    Start,
    /// Its own continuation.
    At(PageToken),
}

impl Fetched {
    fn len(&self) -> usize {
        self.pages.iter().map(|(_, rows)| rows.len()).sum()
    }

    fn front(&self) -> Option<&Row> {
        self.pages.front().and_then(|(_, rows)| rows.front())
    }

    /// Reads pages from its continuation until it holds a row or ends.
    async fn fill(
        &mut self,
        account: &dyn Backend,
        table: &str,
        request: &QueryRequest,
        after: Option<&(String, String)>,
    ) -> Result<()> {
        while self.pages.is_empty() {
            let token = match self.next.take() {
                None => return Ok(()),
                Some(Resume::Start) => None,
                Some(Resume::At(token)) => Some(token),
            };
            let page = account.query(table, request, token.as_ref()).await?;
            // The rows are in key order: those up to `after` (returned
            // already) lead the page. Taken over whole, not copied.
            let mut rows = VecDeque::from(page.rows);
            if let Some((pk, rk)) = after {
                let returned = rows.partition_point(|row| key_order(keys(row), (pk, rk)) != Ordering::Greater);
                rows.drain(..returned);
            }
            if !rows.is_empty() {
                self.pages.push_back((token, rows));
            }
            self.next = page.next.map(Resume::At);
        }
        Ok(())
    }
}

/// The signing key of a pool's merged queries, and the rows read for the
/// pages not returned yet.
#[derive(Debug)]
pub(super) struct Merger {
    key: CursorKey,
    /// Per page token (by signature): each account's rows read and not returned.
    kept: Mutex<VecDeque<(String, Vec<Option<Fetched>>)>>,
}

impl Merger {
    pub(super) fn new(key: CursorKey) -> Merger {
        Merger {
            key,
            kept: Mutex::new(VecDeque::new()),
        }
    }

    fn take_kept(&self, signature: &str) -> Option<Vec<Option<Fetched>>> {
        let mut kept = self.kept.lock().ok()?;
        let at = kept.iter().position(|(s, _)| s == signature)?;
        kept.remove(at).map(|(_, fetched)| fetched)
    }

    fn keep(&self, signature: String, fetched: Vec<Option<Fetched>>) {
        let Ok(mut kept) = self.kept.lock() else { return };
        kept.push_back((signature, fetched));
        let rows =
            |entry: &(String, Vec<Option<Fetched>>)| -> usize { entry.1.iter().flatten().map(Fetched::len).sum() };
        let mut total: usize = kept.iter().map(rows).sum();
        while total > KEPT_ROWS {
            match kept.pop_front() {
                Some(oldest) => total -= rows(&oldest),
                None => break,
            }
        }
    }

    pub(super) async fn query(
        &self,
        accounts: &[Arc<dyn Backend>],
        table: &str,
        request: &QueryRequest,
        token: Option<&PageToken>,
    ) -> Result<Page> {
        if !accounts[0].profile().sorts_results() {
            return self.in_turn(accounts, table, request, token).await;
        }
        let n = accounts.len();
        let (places, mut kept) = match token {
            Some(token) => {
                let (places, signature) = self.key.decode(table, request, token, n)?;
                let kept = self.take_kept(&signature);
                (places, kept.unwrap_or_else(|| (0..n).map(|_| None).collect()))
            }
            None => (vec![Place::START; n], (0..n).map(|_| None).collect()),
        };
        let top = request.top.unwrap_or(service::MAX_PAGE_SIZE) as usize;
        let reads = accounts
            .iter()
            .zip(&places)
            .zip(kept.iter_mut())
            .map(|((account, place), kept)| {
                let kept = kept.take();
                async move {
                    let Place::At { token, after } = place else {
                        return Ok::<_, crate::Error>(None);
                    };
                    let mut fetched = kept.unwrap_or_else(|| Fetched {
                        pages: VecDeque::new(),
                        next: Some(match token {
                            Some((pk, rk)) => Resume::At(PageToken {
                                next_partition_key: pk.clone(),
                                next_row_key: rk.clone(),
                            }),
                            None => Resume::Start,
                        }),
                    });
                    fetched.fill(account.as_ref(), table, request, after.as_ref()).await?;
                    Ok(Some(fetched))
                }
            });
        let mut fetched: Vec<Option<Fetched>> = try_join_all(reads).await?;

        let mut rows = Vec::with_capacity(top.min(fetched.iter().flatten().map(Fetched::len).sum()));
        let mut last_taken: Vec<Option<(String, String)>> = vec![None; n];
        while rows.len() < top {
            // Every account that has more holds its next row, so the smallest is certainly next.
            for ((account, place), f) in accounts.iter().zip(&places).zip(fetched.iter_mut()) {
                if let (Some(f), Place::At { after, .. }) = (f, place) {
                    if f.pages.is_empty() {
                        f.fill(account.as_ref(), table, request, after.as_ref()).await?;
                    }
                }
            }
            // The account with the smallest next row, and the next row of any other.
            let mut fronts = fetched
                .iter()
                .enumerate()
                .filter_map(|(i, f)| Some((i, f.as_ref()?.front()?)));
            let Some(mut first) = fronts.next() else { break };
            let mut second: Option<(&str, &str)> = None;
            for other in fronts {
                if key_order(keys(other.1), keys(first.1)) == Ordering::Less {
                    second = Some(keys(first.1));
                    first = other;
                } else if second.is_none_or(|s| key_order(keys(other.1), s) == Ordering::Less) {
                    second = Some(keys(other.1));
                }
            }
            let i = first.0;
            let second = second.map(|(p, r)| (p.to_owned(), r.to_owned()));
            // Its rows before the others' next one come next, as a run.
            let page = &mut fetched[i].as_mut().expect("a row was found").pages[0].1;
            let run = page
                .partition_point(|row| {
                    second
                        .as_ref()
                        .is_none_or(|(pk, rk)| key_order(keys(row), (pk, rk)) == Ordering::Less)
                })
                .clamp(1, top - rows.len());
            let end = &page[run - 1];
            last_taken[i] = Some((end.partition_key.clone(), end.row_key.clone()));
            // Whether each partition is at home here, asked once a partition.
            let mut home: Option<(String, bool)> = None;
            for row in page.drain(..run) {
                if home.as_ref().is_none_or(|(pk, _)| *pk != row.partition_key) {
                    let here = account_of(&row.partition_key, n) == i;
                    home = Some((row.partition_key.clone(), here));
                }
                if home.as_ref().is_some_and(|(_, here)| *here) {
                    rows.push(row);
                }
            }
            let f = fetched[i].as_mut().expect("a row was found");
            if f.pages[0].1.is_empty() {
                f.pages.pop_front();
            }
        }

        let mut next_places = Vec::with_capacity(n);
        let mut left = false;
        for (i, (place, fetched)) in places.into_iter().zip(fetched.iter_mut()).enumerate() {
            let Some(f) = fetched else {
                next_places.push(Place::Done);
                continue;
            };
            let Some((start, _)) = f.pages.front() else {
                next_places.push(match f.next.take() {
                    Some(Resume::At(next)) => Place::At {
                        token: Some((next.next_partition_key, next.next_row_key)),
                        after: None,
                    },
                    Some(Resume::Start) => Place::START,
                    None => Place::Done,
                });
                *fetched = None;
                continue;
            };
            let after = match (last_taken[i].take(), place) {
                (Some(taken), _) => Some(taken),
                (None, Place::At { after, .. }) => after,
                (None, Place::Done) => None,
            };
            next_places.push(Place::At {
                token: start
                    .as_ref()
                    .map(|t| (t.next_partition_key.clone(), t.next_row_key.clone())),
                after,
            });
            left = true;
        }
        if next_places.iter().all(|p| *p == Place::Done) {
            return Ok(Page { rows, next: None });
        }
        let next = self.key.encode(table, request, &next_places);
        if left {
            let signature = next.next_row_key.clone().expect("a merged token is signed");
            self.keep(signature, fetched);
        }
        Ok(Page { rows, next: Some(next) })
    }

    /// A query over accounts that return rows in no order (Cosmos DB for
    /// Table): there is no order to merge into, so the accounts are read one
    /// after another, a page of the pool being one page of one account, and
    /// the token holding where each account stands. No row is held back
    /// between pages, so a page is never read twice.
    async fn in_turn(
        &self,
        accounts: &[Arc<dyn Backend>],
        table: &str,
        request: &QueryRequest,
        token: Option<&PageToken>,
    ) -> Result<Page> {
        let n = accounts.len();
        let mut places = match token {
            Some(token) => self.key.decode(table, request, token, n)?.0,
            None => vec![Place::START; n],
        };
        let Some(i) = places.iter().position(|p| *p != Place::Done) else {
            return Ok(Page::default());
        };
        let Place::At { token: at, .. } = &places[i] else {
            unreachable!("the first account not done stands somewhere");
        };
        let at = at.as_ref().map(|(pk, rk)| PageToken {
            next_partition_key: pk.clone(),
            next_row_key: rk.clone(),
        });
        let page = accounts[i].query(table, request, at.as_ref()).await?;
        places[i] = match page.next {
            Some(next) => Place::At {
                token: Some((next.next_partition_key, next.next_row_key)),
                after: None,
            },
            None => Place::Done,
        };
        let rows = page
            .rows
            .into_iter()
            .filter(|row| account_of(&row.partition_key, n) == i)
            .collect();
        let next = match places.iter().all(|p| *p == Place::Done) {
            true => None,
            false => Some(self.key.encode(table, request, &places)),
        };
        Ok(Page { rows, next })
    }
}
