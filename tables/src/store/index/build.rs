//! Building an index over the rows a table holds ([`Store::build_index`]),
//! and removing the rows of an index no longer declared
//! ([`Store::drop_index`]).

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use tokio::time::Instant;

use futures::{StreamExt, TryStreamExt};

use super::applier::Applied;
use crate::backend::pack::{op_weight, pack};
use crate::backend::{IfMatch, QueryRequest, UpdateMode, WriteOp};
use crate::entity::{Key, TableEntity};
use crate::error::{Error, Result};
use crate::index::rows::{index_row, RowKeys};
use crate::index::{Index, IndexDef};
use crate::layout::{index_key_prefix, is_index_key, is_index_row, SPLIT_OF};
use crate::named_stream::named_stream;
use crate::query::{CmpOp, Filter};
use crate::service::{next_prefix, MAX_PAGE_SIZE};
use crate::store::write::batch::group_by_partition;
use crate::store::write::Write;
use crate::store::Pages;
use crate::store::Store;
use crate::value::{ETag, Row, Value};

/// Index rows a build keeps in flight when they cannot share a transaction.
const WRITES_IN_FLIGHT: usize = 16;
/// Transactions of many-per-value index rows a build keeps in flight.
const TRANSACTIONS_IN_FLIGHT: usize = 4;

/// What [`Store::build_index`] reads and how fast it goes.
#[derive(Debug, Clone, Default)]
pub struct BuildIndexOptions {
    /// One partition, or the whole table.
    pub partition: Option<String>,
    /// Continue after this entity: the [`BuildStep::position`] of the last
    /// step a stopped build reported.
    pub after: Option<Key>,
    /// At most this many index rows written a second, on average since the
    /// build started (none: as fast as the table answers). Each page's rows
    /// wait until writing them keeps to the rate, then go out together.
    pub max_rows_per_second: Option<u32>,
}

named_stream!(
    /// The pages of an index build, one [`BuildStep`] each: returned by
    /// [`Store::build_index`].
    ///
    /// It is `Unpin`: poll it in place with its own [`next`](Self::next) or
    /// [`try_next`](Self::try_next), or use it as a [`futures::Stream`] with any
    /// stream combinator. After an error the stream ends.
    BuildSteps,
    BuildStep,
    "page built"
);

/// One page of a build: up to 1,000 entities, their index rows written and
/// checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildStep {
    /// The last entity of the page; continue after it with [`BuildIndexOptions::after`].
    pub position: Key,
    /// Entities looked at so far.
    pub entities: u64,
    /// Index rows written so far.
    pub rows: u64,
    /// Entities a writer changed while their rows were written, brought into line again, so far.
    pub rechecked: u64,
}

struct Build<T> {
    store: Store<T>,
    def: &'static IndexDef,
    options: BuildIndexOptions,
    after: Option<Key>,
    done: bool,
    started: Instant,
    step: BuildStep,
    /// The entities' pages, read once from the start position and followed
    /// by their tokens (fetched one ahead).
    pages: Option<Pages>,
}

/// `key > after` in (PartitionKey, RowKey) order, within one partition or not.
fn after_filter(after: &Key, one_partition: bool) -> Filter {
    let text = |s: &str| Value::String(s.to_owned());
    let later = Filter::eq("PartitionKey", text(&after.partition_key)).and(Filter::cmp(
        "RowKey",
        CmpOp::Gt,
        text(&after.row_key),
    ));
    match one_partition {
        true => later,
        false => Filter::cmp("PartitionKey", CmpOp::Gt, text(&after.partition_key)).or(later),
    }
}

/// The rows of `partition` from `first` to `last` (row keys, both included).
fn within(partition: &str, first: &str, last: &str) -> Filter {
    let text = |s: &str| Value::String(s.to_owned());
    Filter::eq("PartitionKey", text(partition))
        .and(Filter::cmp("RowKey", CmpOp::Ge, text(first)))
        .and(Filter::cmp("RowKey", CmpOp::Le, text(last)))
}

impl<T: TableEntity> Build<T> {
    /// The entities after the start position, page by page.
    fn request(&self) -> Result<QueryRequest> {
        let mut parts = Vec::new();
        if let Some(p) = &self.options.partition {
            parts.push(Filter::eq("PartitionKey", Value::String(p.clone())));
        }
        if let Some(a) = &self.after {
            parts.push(after_filter(a, self.options.partition.is_some()));
        }
        let mut request = QueryRequest {
            filter: parts.into_iter().reduce(Filter::and),
            select: None,
            top: Some(MAX_PAGE_SIZE),
        };
        self.store.exclude_index_rows(&mut request)?;
        Ok(request)
    }

    /// The versions now stored of the entities `written` (keys only): one
    /// range query per partition the page spans, from its first written
    /// entity to its last.
    async fn versions(&self, written: &[(Key, Option<ETag>, RowKeys)]) -> Result<HashMap<Key, Option<ETag>>> {
        let mut spans: Vec<(&str, &str, &str)> = Vec::new();
        for (key, _, _) in written {
            match spans.last_mut() {
                Some((p, _, last)) if *p == key.partition_key => *last = &key.row_key,
                _ => spans.push((&key.partition_key, &key.row_key, &key.row_key)),
            }
        }
        let mut versions = HashMap::new();
        for (partition, first, last) in spans {
            let request = QueryRequest {
                filter: Some(within(partition, first, last)),
                select: Some(vec!["RowKey".to_owned(), SPLIT_OF.to_owned()]),
                top: Some(MAX_PAGE_SIZE),
            };
            let mut check = self.store.pages(request).await?;
            while let Some(rows) = check.next(|_| true).await? {
                for r in rows {
                    versions.insert(Key::new(r.partition_key, r.row_key), r.etag);
                }
            }
        }
        Ok(versions)
    }

    async fn next(&mut self) -> Result<Option<BuildStep>> {
        if self.done {
            return Ok(None);
        }
        // One page of entities.
        if self.pages.is_none() {
            self.pages = Some(self.store.pages(self.request()?).await?);
        }
        let pages = self.pages.as_mut().expect("set above");
        let rows = loop {
            match pages.next(|_| false).await? {
                // An empty page with a token is not the end.
                Some(rows) if rows.is_empty() => continue,
                Some(rows) => break rows,
                None => {
                    self.done = true;
                    return Ok(None);
                }
            }
        };
        let last = rows
            .last()
            .map(|r| Key::new(r.partition_key.clone(), r.row_key.clone()));
        let last = last.unwrap_or_else(|| Key::new("", ""));
        let entities: Vec<Row> = rows
            .into_iter()
            .filter(|r| r.get(SPLIT_OF).is_none() && !is_index_row(r) && !is_index_key(&r.row_key))
            .collect();
        let mut written: Vec<(Key, Option<ETag>, RowKeys)> = Vec::new();
        let mut local = Vec::new();
        let mut single = Vec::new();
        for e in &entities {
            let Some(ix) = index_row(self.def, e)? else { continue };
            let key = Key::new(e.partition_key.clone(), e.row_key.clone());
            written.push((
                key.clone(),
                e.etag.clone(),
                (ix.partition_key.clone(), ix.row_key.clone()),
            ));
            match (self.def.global, self.def.unique) {
                (false, false) => local.push((ix.partition_key.clone(), ix)),
                _ => single.push((key, ix)),
            }
        }
        // The page's rows wait for their turn under the rate limit, then go
        // out together.
        self.pace(written.len()).await;
        // Many entities per value in the entity's partition: transactions of
        // up to 100 rows, a few in flight (each row is the one its entity
        // asks for whatever the order they land in).
        let mut transactions: Vec<Vec<WriteOp>> = Vec::new();
        for group in group_by_partition(local) {
            let ops: Vec<WriteOp> = group
                .into_iter()
                .map(|row| WriteOp::Upsert {
                    row,
                    mode: UpdateMode::Replace,
                })
                .collect();
            let ranges = pack(
                ops.iter().map(|op| (1, op_weight(op))),
                self.store.profile().transaction_body_budget(),
            );
            let mut rest = ops.into_iter();
            for range in ranges {
                transactions.push(rest.by_ref().take(range.len()).collect());
            }
        }
        let store = &self.store;
        let def = self.def;
        futures::stream::iter(transactions)
            .map(|tx| async move { store.commit(Write::new(tx).droppable_from(0)).await.map(|_| ()) })
            .buffer_unordered(TRANSACTIONS_IN_FLIGHT)
            .try_collect::<Vec<()>>()
            .await?;
        // Unique and global rows: one request each (a unique row another entity holds is left).
        futures::stream::iter(single)
            .map(|(key, row)| async move {
                match def.unique {
                    true => store.ensure_index_row(def, &row, &key).await.map(|_| ()),
                    false => store
                        .commit(Write::one(WriteOp::Upsert {
                            row,
                            mode: UpdateMode::Replace,
                        }))
                        .await
                        .map(|_| ()),
                }
            })
            .buffer_unordered(WRITES_IN_FLIGHT)
            .try_collect::<Vec<()>>()
            .await?;
        // Entities a writer changed meanwhile: their rows brought into line again.
        let versions = self.versions(&written).await?;
        let defs = std::slice::from_ref(self.def);
        for (key, etag, keys) in &written {
            if versions.get(key) != Some(etag) {
                let named: BTreeSet<RowKeys> = std::iter::once(keys.clone()).collect();
                if self.store.reconcile(defs, false, key, &named).await? != Applied::Done {
                    tracing::debug!(table = %self.store.table, index = self.def.name, "an entity kept changing while its index row was built; check_indexes reports it");
                }
                self.step.rechecked += 1;
            }
        }
        self.step.entities += entities.len() as u64;
        self.step.rows += written.len() as u64;
        self.step.position = last.clone();
        self.after = Some(last);
        Ok(Some(self.step.clone()))
    }

    /// Waits until writing `rows` more keeps to the rate limit.
    async fn pace(&self, rows: usize) {
        let Some(rate) = self.options.max_rows_per_second else {
            return;
        };
        let due = Duration::from_secs_f64((self.step.rows as f64 + rows as f64) / f64::from(rate.max(1)));
        let elapsed = self.started.elapsed();
        if elapsed < due {
            tokio::time::sleep(due - elapsed).await;
        }
    }
}

impl<T: TableEntity> Store<T> {
    /// Builds an index over the entities the table holds: one that was just
    /// declared, or one whose rows drifted. Writes each entity's index row
    /// (many-per-value rows of one partition in transactions of up to 100,
    /// four in flight; unique and global rows one request each, 16 in
    /// flight), then reads the
    /// page's entities' versions again: an entity a writer changed meanwhile
    /// has its rows brought into line again, so a concurrent write is never
    /// undone. Writers that run during the build keep the index themselves.
    ///
    /// The stream yields one [`BuildStep`] per page of up to 1,000 entities,
    /// in key order; stop reading it to stop, and continue later with
    /// [`BuildIndexOptions::after`]. Memory stays at one page.
    ///
    /// ```
    /// # use unified_tables::{TableEntity, Tables};
    /// use unified_tables::BuildIndexOptions;
    /// #[derive(TableEntity)]
    /// struct Order { #[table(partition_key)] customer: String, #[table(row_key)] id: String, #[index] status: String }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let orders = Tables::memory().store::<Order>();
    /// let mut steps = orders.build_index(Order::BY_STATUS, BuildIndexOptions::default());
    /// let mut pages = 0;
    /// while let Some(step) = steps.try_next().await? {
    ///     pages += 1;
    ///     println!("{} entities, {} index rows written", step.entities, step.rows);
    /// }
    /// assert_eq!(pages, 0, "nothing to build in an empty table");
    /// # Ok::<(), unified_tables::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn build_index<K, V>(&self, index: Index<T, K, V>, options: BuildIndexOptions) -> BuildSteps {
        let build = Build {
            store: self.clone(),
            def: index.def(),
            after: options.after.clone(),
            options,
            done: false,
            pages: None,
            started: Instant::now(),
            step: BuildStep {
                position: Key::new("", ""),
                entities: 0,
                rows: 0,
                rechecked: 0,
            },
        };
        let steps = futures::stream::try_unfold(build, |mut build| async move {
            Ok(build.next().await?.map(|step| (step, build)))
        });
        BuildSteps::new(self.op("build_index").stream(steps))
    }

    /// Deletes every row of the index `name` (local rows in every
    /// partition, global rows in theirs): for an index no longer declared on
    /// `T`. Refused with [`Error::InvalidValue`] for an index `T` still
    /// declares. Returns how many rows were deleted. Reads the rows under
    /// the index's keys (a scan of each partition's index range,
    /// server-side) and deletes them in transactions of up to 100 per
    /// partition, each on condition of the version read.
    pub async fn drop_index(&self, name: &str) -> Result<u64> {
        self.op("drop_index").run(self.drop_index_rows(name)).await
    }

    /// [`Store::drop_index`]'s work, inside its operation.
    async fn drop_index_rows(&self, name: &str) -> Result<u64> {
        if T::INDEXES.iter().any(|d| d.name == name) {
            return Err(Error::InvalidValue {
                column: name.to_owned(),
                reason: format!(
                    "`{name}` is an index the type declares: remove it from the type before dropping its rows"
                ),
            });
        }
        let start = index_key_prefix(name);
        let end = next_prefix(&start).unwrap_or_default();
        let text = |s: &str| Value::String(s.to_owned());
        let range = |key: &str| Filter::cmp(key, CmpOp::Ge, text(&start)).and(Filter::cmp(key, CmpOp::Lt, text(&end)));
        let mut deleted = 0;
        for filter in [range("RowKey"), range("PartitionKey")] {
            let request = QueryRequest {
                filter: Some(filter),
                select: Some(vec!["RowKey".to_owned()]),
                top: Some(MAX_PAGE_SIZE),
            };
            let mut pages = self.pages(request).await?;
            while let Some(rows) = pages.next(|_| true).await? {
                let ops = rows.into_iter().map(|r| {
                    let op = WriteOp::Delete {
                        partition_key: r.partition_key.clone(),
                        row_key: r.row_key,
                        condition: r.etag.map_or(IfMatch::Any, IfMatch::ETag),
                    };
                    (r.partition_key, op)
                });
                for group in group_by_partition(ops.collect()) {
                    for tx in group.chunks(crate::service::MAX_TRANSACTION_OPS) {
                        let kept = self.commit(Write::new(tx.to_vec()).droppable_from(0)).await?.kept;
                        deleted += kept.len() as u64;
                    }
                }
            }
        }
        Ok(deleted)
    }
}

#[cfg(test)]
mod tests {
    use futures::TryStreamExt;

    use super::BuildIndexOptions;
    use crate::tables::Tables;
    use crate::TableEntity; // the trait and its derive, re-exported together only at the root

    /// The columns of [`Ticket`] without its index: rows written before it was declared.
    #[derive(TableEntity, Clone)]
    struct Plain {
        #[table(partition_key)]
        pk: String,
        #[table(row_key)]
        rk: String,
        status: String,
    }

    #[derive(TableEntity, Clone)]
    struct Ticket {
        #[table(partition_key)]
        pk: String,
        #[table(row_key)]
        rk: String,
        #[index]
        status: String,
    }

    /// A build over 2,500 entities, limited or not: the index rows it wrote
    /// and how long the (paused) clock ran.
    async fn build(rate: Option<u32>) -> (u64, std::time::Duration) {
        let db = Tables::memory();
        let plain = db.store_in::<Plain>("Tickets");
        let rows: Vec<Plain> = (0..2_500)
            .map(|i| Plain {
                pk: "p".into(),
                rk: format!("{i:05}"),
                status: ["open", "closed"][i % 2].into(),
            })
            .collect();
        for chunk in rows.chunks(100) {
            plain.upsert_batch(chunk).await.unwrap();
        }
        let tickets = db.store_in::<Ticket>("Tickets");
        let started = tokio::time::Instant::now();
        let options = BuildIndexOptions {
            max_rows_per_second: rate,
            ..BuildIndexOptions::default()
        };
        let steps: Vec<_> = tickets
            .build_index(Ticket::BY_STATUS, options)
            .try_collect()
            .await
            .unwrap();
        (steps.last().unwrap().rows, started.elapsed())
    }

    #[tokio::test(start_paused = true)]
    async fn a_rate_limited_build_writes_no_faster_than_its_rate() {
        let (rows, unlimited) = build(None).await;
        assert_eq!(rows, 2_500);
        assert!(unlimited.as_secs_f64() < 0.5, "an unlimited build waited {unlimited:?}");
        // 1,000 rows a second: the third page's rows are due at 2.5 s.
        let (rows, limited) = build(Some(1_000)).await;
        assert_eq!(rows, 2_500);
        assert!(
            (2.5..3.5).contains(&limited.as_secs_f64()),
            "2,500 rows at 1,000 a second took {limited:?}"
        );
    }
}
