//! Convergence: rewriting every row whose stored form differs from what
//! `T` writes today, each conditional on the version it read.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::backend::race::{race_backoff, RACE_ATTEMPTS};
use crate::backend::{IfMatch, QueryRequest};
use crate::entity::{Key, TableEntity};
use crate::error::{ErrorKind, Result};
use crate::large::plan::{large_columns, plan, Limits};
use crate::layout::{is_cell_of, is_system_column, SPLIT_PARTS};
use crate::named_stream::named_stream;
use crate::query::{CmpOp, Filter};
use crate::service::MAX_PAGE_SIZE;
use crate::store::read::is_not_an_entity;
use crate::store::Store;
use crate::value::{Row, Value};

/// What [`Store::converge`] reads and may do.
#[derive(Debug, Clone, Default)]
pub struct ConvergeOptions {
    /// One partition, or the whole table.
    pub partition: Option<String>,
    /// Report what would be rewritten; write nothing.
    pub dry_run: bool,
    /// At most this many rewrites a second (none: as fast as the table answers).
    pub max_rewrites_per_second: Option<u32>,
    /// Continue after this entity: the [`ConvergeStep::position`] of the
    /// last step a stopped run reported.
    pub after: Option<Key>,
}

/// What convergence did with one entity.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Converged {
    /// Stored as `T` writes it today.
    Unchanged,
    /// Rewritten (conditional on the version read) for this reason.
    Rewritten(String),
    /// Would be rewritten for this reason (a dry run).
    WouldRewrite(String),
    /// Left as it is for this reason: it holds columns `T` does not declare
    /// (a rewrite would drop them), it cannot be read as `T`, or another
    /// writer changed it on every attempt.
    Skipped(String),
    /// Deleted while it was looked at.
    Gone,
}

named_stream!(
    /// The entities a [`Store::converge`] looked at, one [`ConvergeStep`]
    /// each.
    ///
    /// It is `Unpin`: poll it in place with its own [`next`](Self::next) or
    /// [`try_next`](Self::try_next), or use it as a [`futures::Stream`] with any
    /// stream combinator. After an error the stream ends.
    ConvergeSteps,
    ConvergeStep,
    "entity looked at"
);

/// One entity looked at, with the totals so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConvergeStep {
    /// The entity; continue after it with [`ConvergeOptions::after`].
    pub position: Key,
    /// What was done.
    pub outcome: Converged,
    /// Entities looked at so far.
    pub checked: u64,
    /// Entities rewritten (or, in a dry run, that would be) so far.
    pub rewritten: u64,
    /// Entities skipped so far.
    pub skipped: u64,
}

/// Whether two cells hold the same value (NaN equal to itself).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Double(x), Value::Double(y)) => x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
        _ => a == b,
    }
}

struct State<T> {
    store: Store<T>,
    options: ConvergeOptions,
    pages: Option<crate::store::Pages>,
    rows: VecDeque<Row>,
    done: bool,
    last_write: Option<Instant>,
    step: ConvergeStep,
}

impl<T: TableEntity> Store<T> {
    /// Rewrites every entity whose stored form differs from what `T` writes
    /// today: alias columns, legacy cell forms (`__Json` for `__GZip` and
    /// back), a missing soft-delete stamp, a large value in a tier it no
    /// longer needs. Each rewrite is an ordinary replace through the write
    /// pipeline (it stamps `updated_at`, and a throttled or lost answer is
    /// retried and settled as the store's [`RetryPolicy`](crate::RetryPolicy)
    /// allows, so a long run rides them out), conditional on the ETag read; an
    /// entity another writer changed meanwhile is read again and judged
    /// again, never overwritten. Rows holding columns `T` does not declare
    /// are left alone (a rewrite would drop them) and reported as skipped.
    ///
    /// The stream yields one [`ConvergeStep`] per entity, in key order;
    /// stop reading it to stop, and continue later with
    /// [`ConvergeOptions::after`] set to the last step's position.
    ///
    /// ```
    /// # use unified_tables::{TableEntity, Tables};
    /// use unified_tables::{ConvergeOptions, Converged};
    /// #[derive(TableEntity)]
    /// struct User { #[table(partition_key)] pk: String, #[table(row_key)] rk: String, #[alias("FullName")] name: String }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let users = Tables::memory().store::<User>();
    /// let dry = ConvergeOptions { dry_run: true, ..Default::default() };
    /// let mut steps = users.converge(dry);
    /// while let Some(step) = steps.try_next().await? {
    ///     assert_eq!(step.outcome, Converged::Unchanged);
    /// }
    /// # Ok::<(), unified_tables::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn converge(&self, options: ConvergeOptions) -> ConvergeSteps {
        let state = State {
            store: self.clone(),
            options,
            pages: None,
            rows: VecDeque::new(),
            done: false,
            last_write: None,
            step: ConvergeStep {
                position: Key::new("", ""),
                outcome: Converged::Unchanged,
                checked: 0,
                rewritten: 0,
                skipped: 0,
            },
        };
        let steps = futures::stream::try_unfold(state, |mut state| async move {
            match state.next().await? {
                Some(step) => Ok(Some((step, state))),
                None => Ok(None),
            }
        });
        ConvergeSteps::new(self.op("converge").stream(steps))
    }

    /// Why the stored main row differs from what `T` writes for `entity`,
    /// or `Err(reason)` when it holds cells `T` does not declare.
    fn difference(&self, stored: &Row, entity: &T) -> Result<std::result::Result<Option<String>, String>> {
        let row = entity.to_row(&self.encode_options())?;
        let limits = Limits {
            threshold: self.blobs().map_or(usize::MAX, |b| b.options.threshold_bytes),
            blobs: self.blobs().is_some(),
            extra_ops: crate::layout::split_parts(stored),
            budget: self.profile().transaction_body_budget(),
        };
        let planned = plan(
            &self.table,
            std::borrow::Cow::Owned(row),
            &large_columns(T::SCHEMA.columns),
            limits,
        )?;
        let known = T::SCHEMA.column_names();
        let declares = |cell: &str| {
            known.iter().any(|n| {
                is_cell_of(cell, n)
                    || n.strip_suffix(crate::layout::JSON_SUFFIX)
                        .is_some_and(|n| is_cell_of(cell, n))
            }) || T::SCHEMA
                .columns
                .iter()
                .any(|c| c.aliases.iter().any(|a| is_cell_of(cell, a)))
        };
        for cell in stored.properties.keys() {
            if !planned.main.properties.contains_key(cell) && !is_system_column(cell) && !declares(cell) {
                return Ok(Err(format!("it holds `{cell}`, a column the type does not declare")));
            }
        }
        for (cell, value) in planned.main.properties.iter() {
            if !stored.get(cell).is_some_and(|v| same(v, value)) {
                return Ok(Ok(Some(format!("`{cell}` is missing or stored differently"))));
            }
        }
        for cell in stored.properties.keys() {
            let system = is_system_column(cell) && cell.as_str() != SPLIT_PARTS;
            if !planned.main.properties.contains_key(cell) && !system {
                return Ok(Ok(Some(format!("`{cell}` is a form the type no longer writes"))));
            }
        }
        Ok(Ok(None))
    }
}

impl<T: TableEntity> State<T> {
    async fn next(&mut self) -> Result<Option<ConvergeStep>> {
        loop {
            if let Some(row) = self.rows.pop_front() {
                if is_not_an_entity(&row) {
                    continue;
                }
                return self.judge(row).await.map(Some);
            }
            if self.done {
                return Ok(None);
            }
            if self.pages.is_none() {
                let request = QueryRequest {
                    filter: self.filter(),
                    select: None,
                    top: Some(MAX_PAGE_SIZE),
                };
                self.pages = Some(self.store.pages(request).await?);
            }
            let pages = self.pages.as_mut().expect("the pages were started");
            match pages.next(|_| true).await? {
                Some(rows) => self.rows.extend(rows),
                None => self.done = true,
            }
        }
    }

    fn filter(&self) -> Option<Filter> {
        let text = |s: &str| Value::String(s.to_owned());
        let partition = self
            .options
            .partition
            .as_deref()
            .map(|p| Filter::eq("PartitionKey", text(p)));
        let after = self.options.after.as_ref().map(|k| {
            let later = Filter::eq("PartitionKey", text(&k.partition_key)).and(Filter::cmp(
                "RowKey",
                CmpOp::Gt,
                text(&k.row_key),
            ));
            Filter::cmp("PartitionKey", CmpOp::Gt, text(&k.partition_key)).or(later)
        });
        match (partition, after) {
            (Some(a), Some(b)) => Some(a.and(b)),
            (a, b) => a.or(b),
        }
    }

    /// Judges one entity (reading it again after each lost race) and rewrites it when it differs.
    async fn judge(&mut self, mut row: Row) -> Result<ConvergeStep> {
        let key = Key::new(row.partition_key.clone(), row.row_key.clone());
        let mut attempt = 0;
        let outcome = loop {
            attempt += 1;
            let etag = row.etag.clone();
            let stored = row.clone();
            let mut entity = match self.store.decode_row(row).await {
                Ok(Some(e)) => e,
                Ok(None) => break Converged::Gone,
                Err(e) => break Converged::Skipped(format!("it cannot be read as the type: {e}")),
            };
            let reason = match self.store.difference(&stored, &entity)? {
                Err(foreign) => break Converged::Skipped(foreign),
                Ok(None) => break Converged::Unchanged,
                Ok(Some(reason)) => reason,
            };
            if self.options.dry_run {
                break Converged::WouldRewrite(reason);
            }
            let Some(etag) = etag else {
                break Converged::Skipped("the row was read without a version".into());
            };
            self.pace().await;
            match self.store.replace_if(&mut entity, IfMatch::ETag(etag)).await {
                Ok(_) => break Converged::Rewritten(reason),
                Err(e) if matches!(e.kind(), ErrorKind::PreconditionFailed | ErrorKind::NotFound) => {
                    if attempt >= RACE_ATTEMPTS {
                        break Converged::Skipped("another writer changed it on every attempt".into());
                    }
                    tokio::time::sleep(race_backoff(attempt)).await;
                    match self
                        .store
                        .shared
                        .backend
                        .get(&self.store.table, &key.partition_key, &key.row_key)
                        .await?
                    {
                        Some(fresh) => row = fresh,
                        None => break Converged::Gone,
                    }
                }
                Err(e) => return Err(e),
            }
        };
        let step = &mut self.step;
        step.checked += 1;
        match &outcome {
            Converged::Rewritten(_) | Converged::WouldRewrite(_) => step.rewritten += 1,
            Converged::Skipped(_) => step.skipped += 1,
            _ => {}
        }
        step.position = key;
        step.outcome = outcome;
        Ok(step.clone())
    }

    /// Waits until the next rewrite keeps to the rate limit.
    async fn pace(&mut self) {
        if let (Some(rate), Some(last)) = (self.options.max_rewrites_per_second, self.last_write) {
            let gap = Duration::from_secs_f64(1.0 / f64::from(rate.max(1)));
            let elapsed = last.elapsed();
            if elapsed < gap {
                tokio::time::sleep(gap - elapsed).await;
            }
        }
        self.last_write = Some(Instant::now());
    }
}
