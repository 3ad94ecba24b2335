//! The embedded in-memory backend.
//!
//! [`MemoryBackend`] keeps every table in memory and answers as the service
//! does: the same status codes and error codes, the same limits, ETags in the
//! service's format, (PartitionKey, RowKey) order in UTF-16 code units, pages
//! of at most 1000 rows with page tokens, and all-or-nothing transactions.

mod blob;
mod blob_answers;
mod cosmos;
mod lease;
mod span;
mod validate;

pub use blob::MemoryBlobBackend;

#[cfg(test)]
mod tests;

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;

use super::{Backend, IfMatch, Page, PageToken, QueryRequest, UpdateMode, WriteOp, WriteOutcome};
use crate::error::{Error, Result};
use crate::query::Filter;
use crate::service::{ServiceProfile, MAX_PAGE_SIZE};
use crate::value::{cmp_utf16, DateTime, ETag, Row};
use span::Span;
use validate::{check_op, check_transaction, failed_at};

/// An embedded backend that answers as the service does.
///
/// Rows are kept in key order. A query whose filter names one partition
/// (`PartitionKey eq` at its top, with or without `RowKey` bounds) reads only
/// that range, as the service's range scan does; any other filter reads the
/// table from the start (or from the page token) and checks every row.
///
/// ```
/// use unified_tables::backend::{memory::MemoryBackend, Backend, WriteOp};
/// use unified_tables::{Row, Value};
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let backend = MemoryBackend::new();
/// backend.create_table("Customers").await?;
/// let row = Row::new("eu", "alice").with("Visits", Value::Int32(1));
/// let outcome = backend.execute("customers", WriteOp::Insert(row)).await?;
/// let stored = backend.get("Customers", "eu", "alice").await?.expect("stored");
/// assert_eq!(stored.etag, outcome.etag);
/// # Ok::<(), unified_tables::Error>(())
/// # }).unwrap();
/// ```
pub struct MemoryBackend {
    state: Mutex<State>,
    /// Every `quirk_every`-th query page comes back empty (0: never).
    quirk_every: usize,
    /// The Cosmos DB for Table profile, when the backend answers as that service.
    cosmos: Option<cosmos::Cosmos>,
}

impl Default for MemoryBackend {
    fn default() -> Self {
        MemoryBackend {
            state: Mutex::new(State::default()),
            quirk_every: 0,
            cosmos: None,
        }
    }
}

impl MemoryBackend {
    /// An empty backend.
    pub fn new() -> MemoryBackend {
        MemoryBackend::default()
    }

    /// An empty backend whose every `every`-th query page (counted over all
    /// queries of the backend) comes back empty, with a token pointing
    /// where that page would have started, as the service may answer.
    /// Use it to test that clients follow page tokens rather than stopping
    /// at an empty page.
    ///
    /// `0` turns the quirk off; `1` is taken as `2`, so queries still progress.
    pub fn with_page_quirks(every: usize) -> MemoryBackend {
        MemoryBackend::new().page_quirks(every)
    }

    /// An empty backend that answers as Azure Cosmos DB for Table does
    /// where that service differs from Table Storage
    /// ([`ServiceProfile::CosmosTable`]), its random choices drawn from
    /// `seed`:
    ///
    /// - query results come in an order drawn per query, not in key order,
    ///   and a `$top` query returns *some* matches;
    /// - pages are cut at drawn sizes up to the `$top` asked (not capped at
    ///   1,000), one in eight comes back empty with a token, and tokens are
    ///   opaque (a key position sent as a token is refused 400);
    /// - a RowKey over 255 bytes, a transaction body over 2 MB and the
    ///   property names `id`, `rid`, `etag` and `ResourceId` are refused
    ///   (400, 413), a property named `ETag` fails with 500;
    /// - table names are case-sensitive.
    ///
    /// Add 429 throttling with [`MemoryBackend::throttle_every`].
    ///
    /// ```
    /// use unified_tables::backend::{memory::MemoryBackend, Backend, QueryRequest, WriteOp};
    /// use unified_tables::service::ServiceProfile;
    /// use unified_tables::Row;
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let cosmos = MemoryBackend::cosmos(7);
    /// assert_eq!(cosmos.profile(), ServiceProfile::CosmosTable);
    /// cosmos.create_table("Orders").await?;
    /// for rk in ["a", "b", "c", "d", "e"] {
    ///     cosmos.execute("Orders", WriteOp::Insert(Row::new("p", rk))).await?;
    /// }
    /// // Every row comes back once, in no promised order, over pages of any size.
    /// let (mut keys, mut token) = (Vec::new(), None);
    /// loop {
    ///     let page = cosmos.query("Orders", &QueryRequest::default(), token.as_ref()).await?;
    ///     keys.extend(page.rows.into_iter().map(|r| r.row_key));
    ///     match page.next {
    ///         Some(next) => token = Some(next),
    ///         None => break,
    ///     }
    /// }
    /// keys.sort();
    /// assert_eq!(keys, ["a", "b", "c", "d", "e"]);
    /// // Table names are case-sensitive there.
    /// assert!(cosmos.get("orders", "p", "a").await.is_err());
    /// # Ok::<(), unified_tables::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn cosmos(seed: u64) -> MemoryBackend {
        MemoryBackend {
            cosmos: Some(cosmos::Cosmos {
                seed,
                throttle_every: 0,
            }),
            ..MemoryBackend::default()
        }
    }

    /// Builder: on the Cosmos profile, every `every`-th request of the
    /// backend (of any kind) is answered 429 `TooManyRequests` with a
    /// retry-after of 5 ms, and not applied, as Cosmos DB answers a request
    /// over the provisioned throughput. `0` turns it off. No effect on the
    /// Table Storage profile.
    pub fn throttle_every(mut self, every: u64) -> MemoryBackend {
        if let Some(cosmos) = &mut self.cosmos {
            cosmos.throttle_every = every;
        }
        self
    }

    /// Builder form of [`MemoryBackend::with_page_quirks`].
    pub fn page_quirks(mut self, every: usize) -> MemoryBackend {
        self.quirk_every = if every == 1 { 2 } else { every };
        self
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // No code panics while holding the lock, but never let one poison the backend.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The lock, once the request has passed the throttle of the Cosmos profile.
    fn admit(&self) -> Result<MutexGuard<'_, State>> {
        let mut state = self.lock();
        state.requests += 1;
        if let Some(cosmos) = &self.cosmos {
            cosmos.throttle(state.requests)?;
        }
        Ok(state)
    }

    /// The lookup key of a table name: lower-cased, as Table Storage
    /// compares names, or as given on the Cosmos profile.
    fn table_id(&self, name: &str) -> String {
        match self.cosmos {
            Some(_) => name.to_owned(),
            None => name.to_lowercase(),
        }
    }

    /// The checks of the profile on a written row, besides those of Table Storage.
    fn check_profile(&self, op: &WriteOp) -> Result<()> {
        match self.cosmos {
            Some(_) => cosmos::check_op(op),
            None => Ok(()),
        }
    }
}

impl fmt::Debug for MemoryBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        let mut tables: Vec<(&str, usize)> = state.tables.values().map(|t| (t.name.as_str(), t.rows.len())).collect();
        tables.sort_unstable();
        f.debug_struct("MemoryBackend")
            .field("tables", &tables)
            .field("page_quirk_every", &self.quirk_every)
            .field("profile", &self.profile())
            .finish()
    }
}

/// Everything the backend stores.
#[derive(Default)]
struct State {
    /// Tables by lower-cased name.
    tables: HashMap<String, Table>,
    /// The backend-wide clock of write timestamps.
    clock: Clock,
    /// Query pages served so far (for the page quirk).
    pages: u64,
    /// Requests received so far (for the throttle of the Cosmos profile).
    requests: u64,
}

/// One table: its name as first created and its rows in key order.
struct Table {
    name: String,
    rows: BTreeMap<RowId, Row>,
}

/// The keys of a row, ordered as the service orders them: PartitionKey then
/// RowKey, each in UTF-16 code-unit order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct RowId {
    partition_key: String,
    row_key: String,
}

impl RowId {
    fn new(partition_key: &str, row_key: &str) -> RowId {
        RowId {
            partition_key: partition_key.to_owned(),
            row_key: row_key.to_owned(),
        }
    }

    fn of(row: &Row) -> RowId {
        RowId::new(&row.partition_key, &row.row_key)
    }

    fn token(&self) -> PageToken {
        PageToken {
            next_partition_key: self.partition_key.clone(),
            next_row_key: Some(self.row_key.clone()),
        }
    }
}

impl Ord for RowId {
    fn cmp(&self, other: &Self) -> Ordering {
        cmp_utf16(&self.partition_key, &other.partition_key).then_with(|| cmp_utf16(&self.row_key, &other.row_key))
    }
}

impl PartialOrd for RowId {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A strictly rising source of write timestamps.
#[derive(Debug, Clone, Copy, Default)]
struct Clock {
    last_ticks: i64,
}

impl Clock {
    /// `max(now, last + 1 tick)`.
    fn next(&mut self) -> DateTime {
        let ticks = DateTime::now().ticks().max(self.last_ticks + 1);
        let at = DateTime::from_ticks(ticks).unwrap_or(DateTime::MAX);
        self.last_ticks = at.ticks();
        at
    }
}

/// What a planned write does to its row.
enum Change {
    Put(Row),
    Remove,
}

fn table_not_found(name: &str) -> Error {
    Error::service(
        404,
        "TableNotFound",
        format!("The table specified does not exist: `{name}`."),
    )
}

fn resource_not_found(id: &RowId) -> Error {
    Error::service(
        404,
        crate::service::ENTITY_NOT_FOUND,
        format!(
            "The specified resource does not exist: PartitionKey `{}`, RowKey `{}`.",
            id.partition_key, id.row_key
        ),
    )
}

fn condition_failed(id: &RowId) -> Error {
    Error::service(
        412,
        "UpdateConditionNotSatisfied",
        format!(
            "The update condition specified in the request was not satisfied: PartitionKey `{}`, RowKey `{}`.",
            id.partition_key, id.row_key
        ),
    )
}

fn invalid_input(message: impl Into<String>) -> Error {
    Error::service(400, "InvalidInput", message)
}

/// The service reads `If-Match: *` as any version, also when it is sent as
/// an ETag ([`IfMatch::ETag`] holding `*`): the row must exist, nothing more.
fn check_condition(id: &RowId, existing: &Row, condition: &IfMatch) -> Result<()> {
    match condition {
        IfMatch::Any => Ok(()),
        IfMatch::ETag(etag) if etag.as_str().trim() == "*" => Ok(()),
        IfMatch::ETag(etag) if existing.etag.as_ref() == Some(etag) => Ok(()),
        IfMatch::ETag(_) => Err(condition_failed(id)),
    }
}

/// The row as stored: its keys and properties, stamped with a new version.
fn stamped(mut row: Row, clock: &mut Clock) -> Row {
    let at = clock.next();
    row.timestamp = Some(at);
    row.etag = Some(ETag::from_timestamp(at));
    row
}

fn combine(existing: &Row, mut row: Row, mode: UpdateMode) -> Result<Row> {
    if mode == UpdateMode::Merge {
        let mut properties = existing.properties.clone();
        properties.append(&mut row.properties);
        row.properties = properties;
        // Merging can push the stored entity over the count or size limit.
        validate::check_limits(&row)?;
    }
    Ok(row)
}

/// Works out what `op` does to `rows` without changing them. The operation's
/// row must already have passed validation.
fn plan(rows: &BTreeMap<RowId, Row>, op: WriteOp, clock: &mut Clock) -> Result<(RowId, Change)> {
    match op {
        WriteOp::Insert(row) => {
            let id = RowId::of(&row);
            if rows.contains_key(&id) {
                return Err(Error::service(
                    409,
                    "EntityAlreadyExists",
                    format!(
                        "The specified entity already exists: PartitionKey `{}`, RowKey `{}`.",
                        id.partition_key, id.row_key
                    ),
                ));
            }
            Ok((id, Change::Put(stamped(row, clock))))
        }
        WriteOp::Update { row, mode, condition } => {
            let id = RowId::of(&row);
            let existing = rows.get(&id).ok_or_else(|| resource_not_found(&id))?;
            check_condition(&id, existing, &condition)?;
            let row = combine(existing, row, mode)?;
            Ok((id, Change::Put(stamped(row, clock))))
        }
        WriteOp::Upsert { row, mode } => {
            let id = RowId::of(&row);
            let row = match rows.get(&id) {
                Some(existing) => combine(existing, row, mode)?,
                None => row,
            };
            Ok((id, Change::Put(stamped(row, clock))))
        }
        WriteOp::Delete {
            partition_key,
            row_key,
            condition,
        } => {
            let id = RowId { partition_key, row_key };
            let existing = rows.get(&id).ok_or_else(|| resource_not_found(&id))?;
            check_condition(&id, existing, &condition)?;
            Ok((id, Change::Remove))
        }
    }
}

/// Applies a planned change and reports it.
fn apply(rows: &mut BTreeMap<RowId, Row>, id: RowId, change: Change) -> WriteOutcome {
    match change {
        Change::Put(row) => {
            let outcome = WriteOutcome {
                etag: row.etag.clone(),
                timestamp: row.timestamp,
            };
            rows.insert(id, row);
            outcome
        }
        Change::Remove => {
            rows.remove(&id);
            WriteOutcome {
                etag: None,
                timestamp: None,
            }
        }
    }
}

/// The first raw (unevaluable) part of a filter.
fn find_raw(filter: &Filter) -> Option<&Filter> {
    match filter {
        Filter::Raw(_) => Some(filter),
        Filter::And(a, b) | Filter::Or(a, b) => find_raw(a).or_else(|| find_raw(b)),
        Filter::Not(a) => find_raw(a),
        Filter::Compare { .. } | Filter::Column(_) => None,
    }
}

/// The row as a query returns it: only the selected properties (keys, ETag
/// and Timestamp always). An empty selection selects everything.
fn project(row: &Row, select: Option<&[String]>) -> Row {
    match select {
        Some(names) if !names.is_empty() => Row {
            partition_key: row.partition_key.clone(),
            row_key: row.row_key.clone(),
            properties: row
                .properties
                .iter()
                .filter(|(name, _)| names.iter().any(|n| n == *name))
                .map(|(name, value)| (name.clone(), value.clone()))
                .collect(),
            etag: row.etag.clone(),
            timestamp: row.timestamp,
        },
        _ => row.clone(),
    }
}

#[async_trait]
impl Backend for MemoryBackend {
    async fn create_table(&self, table: &str) -> Result<()> {
        let mut state = self.admit()?;
        cosmos::charge(self.cosmos.as_ref(), cosmos::Charged::Table);
        state.tables.entry(self.table_id(table)).or_insert_with(|| Table {
            name: table.to_owned(),
            rows: BTreeMap::new(),
        });
        Ok(())
    }

    async fn delete_table(&self, table: &str) -> Result<()> {
        let mut state = self.admit()?;
        cosmos::charge(self.cosmos.as_ref(), cosmos::Charged::Table);
        match state.tables.remove(&self.table_id(table)) {
            Some(_) => Ok(()),
            None => Err(table_not_found(table)),
        }
    }

    async fn get(&self, table: &str, partition_key: &str, row_key: &str) -> Result<Option<Row>> {
        let state = self.admit()?;
        cosmos::charge(self.cosmos.as_ref(), cosmos::Charged::PointRead);
        let rows = &state
            .tables
            .get(&self.table_id(table))
            .ok_or_else(|| table_not_found(table))?
            .rows;
        Ok(rows.get(&RowId::new(partition_key, row_key)).cloned())
    }

    async fn execute(&self, table: &str, op: WriteOp) -> Result<WriteOutcome> {
        let mut guard = self.admit()?;
        cosmos::charge(self.cosmos.as_ref(), cosmos::Charged::Writes(1));
        let state = &mut *guard;
        let rows = &mut state
            .tables
            .get_mut(&self.table_id(table))
            .ok_or_else(|| table_not_found(table))?
            .rows;
        check_op(&op)?;
        self.check_profile(&op)?;
        let (id, change) = plan(rows, op, &mut state.clock)?;
        Ok(apply(rows, id, change))
    }

    async fn transaction(&self, table: &str, ops: Vec<WriteOp>) -> Result<Vec<WriteOutcome>> {
        let mut guard = self.admit()?;
        cosmos::charge(self.cosmos.as_ref(), cosmos::Charged::Writes(ops.len()));
        check_transaction(&ops)?;
        if self.cosmos.is_some() {
            cosmos::check_transaction_size(ops.iter().map(validate::request_bytes).sum())?;
            for (index, op) in ops.iter().enumerate() {
                self.check_profile(op).map_err(|e| failed_at(index, e))?;
            }
        }
        let state = &mut *guard;
        let rows = &mut state
            .tables
            .get_mut(&self.table_id(table))
            .ok_or_else(|| failed_at(0, table_not_found(table)))?
            .rows;
        // Each row appears once, so every operation can be planned against the
        // rows as they are; nothing changes until all of them have succeeded.
        let mut clock = state.clock;
        let mut changes = Vec::with_capacity(ops.len());
        for (index, op) in ops.into_iter().enumerate() {
            changes.push(plan(rows, op, &mut clock).map_err(|e| failed_at(index, e))?);
        }
        state.clock = clock;
        Ok(changes
            .into_iter()
            .map(|(id, change)| apply(rows, id, change))
            .collect())
    }

    async fn query(&self, table: &str, request: &QueryRequest, token: Option<&PageToken>) -> Result<Page> {
        let mut guard = self.admit()?;
        let state = &mut *guard;
        let rows = &state
            .tables
            .get(&self.table_id(table))
            .ok_or_else(|| table_not_found(table))?
            .rows;
        if request.top == Some(0) {
            return Err(invalid_input("The value of $top must be between 1 and 1000."));
        }
        if let Some(raw) = request.filter.as_ref().and_then(find_raw) {
            // Evaluating a raw filter always fails; return the error it gives.
            raw.matches(&Row::default())?;
        }
        if let Some(cosmos) = &self.cosmos {
            state.pages += 1;
            return cosmos.page(rows, request, token, state.pages);
        }
        let page_size = request
            .top
            .map_or(MAX_PAGE_SIZE as usize, |top| (top as usize).min(MAX_PAGE_SIZE as usize));
        state.pages += 1;
        let quirk = self.quirk_every > 0 && state.pages.is_multiple_of(self.quirk_every as u64);

        let span = Span::of(request.filter.as_ref());
        let token_start = token.map(|c| RowId {
            partition_key: c.next_partition_key.clone(),
            row_key: c.next_row_key.clone().unwrap_or_default(),
        });
        // A query of one partition starts where its keys start, as the service's range scan does.
        let span_start = span.partition.map(|p| RowId::new(p, span.from.unwrap_or_default()));
        let start = match (token_start, span_start) {
            (Some(t), Some(s)) => Some(t.max(s)),
            (t, s) => t.or(s),
        };
        let mut remaining = match &start {
            Some(start) => rows.range(start.clone()..),
            None => rows.range(..),
        };

        if quirk {
            if let Some((first, _)) = remaining.next() {
                let token = token.cloned().unwrap_or_else(|| first.token());
                return Ok(Page {
                    rows: Vec::new(),
                    next: Some(token),
                });
            }
            return Ok(Page::default());
        }

        let select = request.select.as_deref();
        let mut page = Page::default();
        for (id, row) in remaining {
            if span.passed(&id.partition_key, &id.row_key) {
                break;
            }
            let matched = match &request.filter {
                Some(filter) => filter.matches(row)?,
                None => true,
            };
            if !matched {
                continue;
            }
            if page.rows.len() == page_size {
                page.next = Some(id.token());
                break;
            }
            page.rows.push(project(row, select));
        }
        Ok(page)
    }

    fn profile(&self) -> ServiceProfile {
        match self.cosmos {
            Some(_) => ServiceProfile::CosmosTable,
            None => ServiceProfile::TableStorage,
        }
    }
}
