//! One pass over a table (or a partition) in key order, giving each entity
//! with the continuation rows the same pass brought, and each continuation
//! row no main row of the pass claims (a leftover).
//!
//! A continuation row `{rk}~0001` sorts after its main row `{rk}`, but not
//! always right after it (`{rk}x` sorts between them), so an entity waits
//! until its last declared row has passed; entities come out in key order.
//! Rows of one entity read by one pass need not be of one version: the
//! caller checks what it gets and reads a failing entity again by its keys.

use std::collections::{HashMap, VecDeque};

use super::Admin;
use crate::backend::QueryRequest;
use crate::error::Result;
use crate::large::entity_rows::continuation_index;
use crate::layout::{continuation_key, is_index_row, split_parts, SPLIT_OF};
use crate::query::{CmpOp, Filter};
use crate::service::MAX_PAGE_SIZE;
use crate::store::Pages;
use crate::value::{cmp_utf16, Row, Value};

/// What a pass gives.
#[derive(Debug)]
pub(crate) enum Scanned {
    /// A main row and the continuation rows of it the pass brought.
    Entity { main: Row, continuations: Vec<Row> },
    /// A continuation row no main row of the pass declares.
    Leftover(Row),
    /// An index row or intent of a secondary index (never an entity).
    Index(Row),
}

/// Where a pass reads.
#[derive(Debug, Clone, Default)]
pub(crate) struct Range {
    /// One partition, or the whole table.
    pub(crate) partition: Option<String>,
    /// Start after this entity (PartitionKey, RowKey).
    pub(crate) after: Option<(String, String)>,
}

impl Range {
    fn filter(&self) -> Option<Filter> {
        let pk = |p: &str| Value::String(p.to_owned());
        let partition = self.partition.as_deref().map(|p| Filter::eq("PartitionKey", pk(p)));
        let after = self.after.as_ref().map(|(p, r)| {
            let later_row = Filter::eq("PartitionKey", pk(p)).and(Filter::cmp("RowKey", CmpOp::Gt, pk(r)));
            match self.partition {
                Some(_) => later_row,
                None => Filter::cmp("PartitionKey", CmpOp::Gt, pk(p)).or(later_row),
            }
        });
        match (partition, after) {
            (Some(a), Some(b)) => Some(a.and(b)),
            (a, b) => a.or(b),
        }
    }
}

struct Waiting {
    main: Row,
    continuations: Vec<Row>,
    /// Declared continuation rows not seen yet.
    missing: usize,
    /// The RowKey of its last declared continuation row.
    last_key: String,
}

/// A pass (see the module docs).
pub(crate) struct Scanner {
    pages: Pages,
    queue: VecDeque<Waiting>,
    /// Sequence number of `queue[0]`.
    base: u64,
    /// Main RowKeys still waiting for rows, by sequence number.
    waiting: HashMap<String, u64>,
    ready: VecDeque<Scanned>,
    partition: Option<String>,
    done: bool,
    /// Rows read so far.
    pub(crate) rows: u64,
    /// Bytes of the rows read so far (stored sizes).
    pub(crate) bytes: u64,
}

impl Admin {
    /// A pass over `range`.
    pub(crate) async fn scan(&self, range: &Range) -> Result<Scanner> {
        let request = QueryRequest {
            filter: range.filter(),
            select: None,
            top: Some(MAX_PAGE_SIZE),
        };
        Ok(Scanner {
            pages: self.store.pages(request).await?,
            queue: VecDeque::new(),
            base: 0,
            waiting: HashMap::new(),
            ready: VecDeque::new(),
            partition: None,
            done: false,
            rows: 0,
            bytes: 0,
        })
    }
}

impl Scanner {
    /// The next entity or leftover row, in key order; `None` at the end.
    pub(crate) async fn next(&mut self) -> Result<Option<Scanned>> {
        loop {
            if let Some(item) = self.ready.pop_front() {
                return Ok(Some(item));
            }
            if self.done {
                return Ok(None);
            }
            match self.pages.next(|_| true).await? {
                Some(rows) => {
                    for row in rows {
                        self.take(row);
                    }
                }
                None => {
                    self.done = true;
                    self.release_all();
                }
            }
        }
    }

    fn take(&mut self, row: Row) {
        self.rows += 1;
        self.bytes += row.properties.values().map(|v| v.stored_size() as u64).sum::<u64>();
        if self.partition.as_deref() != Some(row.partition_key.as_str()) {
            self.release_all();
            self.partition = Some(row.partition_key.clone());
        }
        // Entities whose last row would have come before this one have all they will get.
        while let Some(front) = self.queue.front() {
            if front.missing > 0 && cmp_utf16(&front.last_key, &row.row_key).is_ge() {
                break;
            }
            self.release_front();
        }
        if is_index_row(&row) {
            if self.queue.is_empty() {
                self.ready.push_back(Scanned::Index(row));
            } else {
                // Kept in key order behind the entities still waiting.
                self.queue.push_back(Waiting {
                    main: row,
                    continuations: Vec::new(),
                    missing: 0,
                    last_key: String::new(),
                });
            }
        } else if let Some(owner) = row.get(SPLIT_OF).and_then(Value::as_str).map(str::to_owned) {
            let claimed = self.waiting.get(&owner).copied().and_then(|seq| {
                let at = usize::try_from(seq.checked_sub(self.base)?).ok()?;
                let w = self.queue.get_mut(at)?;
                let index = continuation_index(&owner, &row.row_key)?;
                (index <= split_parts(&w.main)).then_some(at)
            });
            match claimed {
                Some(at) => {
                    let w = &mut self.queue[at];
                    w.continuations.push(row);
                    w.missing = w.missing.saturating_sub(1);
                }
                None => {
                    if self.queue.is_empty() {
                        self.ready.push_back(Scanned::Leftover(row));
                    } else {
                        // Kept in key order behind the entities still waiting.
                        self.queue.push_back(Waiting {
                            main: row,
                            continuations: Vec::new(),
                            missing: 0,
                            last_key: String::new(),
                        });
                    }
                }
            }
        } else {
            let parts = split_parts(&row);
            let seq = self.base + self.queue.len() as u64;
            if parts > 0 {
                self.waiting.insert(row.row_key.clone(), seq);
            }
            self.queue.push_back(Waiting {
                last_key: if parts > 0 {
                    continuation_key(&row.row_key, parts)
                } else {
                    String::new()
                },
                main: row,
                continuations: Vec::new(),
                missing: parts,
            });
        }
        while self.queue.front().is_some_and(|w| w.missing == 0) {
            self.release_front();
        }
    }

    fn release_front(&mut self) {
        let Some(w) = self.queue.pop_front() else { return };
        self.base += 1;
        if is_index_row(&w.main) {
            self.ready.push_back(Scanned::Index(w.main));
            return;
        }
        if w.main.get(SPLIT_OF).is_some() {
            self.ready.push_back(Scanned::Leftover(w.main));
            return;
        }
        self.waiting.remove(&w.main.row_key);
        self.ready.push_back(Scanned::Entity {
            main: w.main,
            continuations: w.continuations,
        });
    }

    fn release_all(&mut self) {
        while !self.queue.is_empty() {
            self.release_front();
        }
        self.waiting.clear();
    }
}
