//! Queries: this module (options and the pages of a query), `paging.rs`
//! (pages and cursors), `projection.rs` (`$select`), `read_ahead.rs` (the
//! next page fetched while one is decoded) and `stream.rs` (entity streams).
//!
//! Reading many rows: partition or table scans, optionally filtered.

pub(super) mod paging;
pub(crate) mod projection;
pub(super) mod read_ahead;
pub(super) mod sealed;
pub(super) mod stream;

use std::marker::PhantomData;

use self::projection::Selection;

use super::Store;
use crate::backend::{PageAnswer, QueryRequest};
use crate::entity::TableEntity;
use crate::error::{Error, Result};
use crate::query::{CmpOp, Filter, IntoFilter, Selected};
use crate::service::MAX_PAGE_SIZE;
use crate::value::{Row, Value};

/// What a query over entities of type `T` reads: a partition (optionally a
/// row-key prefix within it), a filter, a projection, a limit. Results come
/// in (PartitionKey, RowKey) order, on Cosmos DB for Table too for
/// [`Store::query`] and any read with a limit, which read every match there
/// and order it (see [`guide::cosmos`](crate::guide::cosmos)).
///
/// `T` is inferred from the store the options are given to, and a filter or
/// projection built from another type's columns does not compile. `S` says
/// whether the options name one partition ([`OnePartition`], from
/// [`QueryOptions::partition`]) or not ([`AnyPartition`], from
/// [`QueryOptions::all`]); only the first take a row-key prefix.
///
/// ```
/// use unified_tables::QueryOptions;
/// let q = QueryOptions::partition("eu").row_key_prefix("2024-").take(50);
/// # let _: QueryOptions<()> = q;
/// ```
///
/// To choose at run time between one partition and the whole table, convert
/// the partition's options with `.into()`:
///
/// ```
/// use unified_tables::{AnyPartition, QueryOptions};
/// fn scope(region: Option<&str>) -> QueryOptions<(), AnyPartition> {
///     match region {
///         Some(r) => QueryOptions::partition(r).into(),
///         None => QueryOptions::all(),
///     }
/// }
/// # let _ = scope(None);
/// ```
pub struct QueryOptions<T, S = OnePartition> {
    pub(crate) partition: Option<String>,
    pub(crate) prefix: Option<String>,
    pub(crate) take: Option<usize>,
    pub(crate) filter: Option<Filter>,
    pub(crate) select: Option<Vec<Selection>>,
    pub(crate) cursor: Option<crate::store::query::paging::Cursor>,
    pub(crate) filter_error: Option<String>,
    _types: PhantomData<fn() -> (T, S)>,
}

/// The scope of options made by [`QueryOptions::partition`]: one partition,
/// within which a row-key prefix can be added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OnePartition;

/// The scope of options made by [`QueryOptions::all`] (or converted from
/// [`OnePartition`] options): not known to name one partition, so a row-key
/// prefix cannot be added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnyPartition;

/// Implemented by the scope whose options may take a row-key prefix.
#[diagnostic::on_unimplemented(
    message = "a row-key prefix needs a partition",
    label = "these options may read every partition",
    note = "row keys are ordered within a partition only: start from `QueryOptions::partition(..)`, then add `.row_key_prefix(..)`"
)]
pub trait PrefixNeedsAPartition {}

#[diagnostic::do_not_recommend]
impl PrefixNeedsAPartition for OnePartition {}

impl<T, S> Clone for QueryOptions<T, S> {
    fn clone(&self) -> Self {
        QueryOptions {
            partition: self.partition.clone(),
            prefix: self.prefix.clone(),
            take: self.take,
            filter: self.filter.clone(),
            select: self.select.clone(),
            cursor: self.cursor.clone(),
            filter_error: self.filter_error.clone(),
            _types: PhantomData,
        }
    }
}

impl<T, S> PartialEq for QueryOptions<T, S> {
    fn eq(&self, other: &Self) -> bool {
        self.partition == other.partition
            && self.prefix == other.prefix
            && self.take == other.take
            && self.filter == other.filter
            && self.select == other.select
            && self.cursor == other.cursor
            && self.filter_error == other.filter_error
    }
}

impl<T, S> std::fmt::Debug for QueryOptions<T, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryOptions")
            .field("partition", &self.partition)
            .field("prefix", &self.prefix)
            .field("take", &self.take)
            .field("filter", &self.filter.as_ref().map(Filter::to_odata))
            .field("select", &self.select)
            .field("cursor", &self.cursor)
            .field("filter_error", &self.filter_error)
            .finish()
    }
}

impl<T> Default for QueryOptions<T, AnyPartition> {
    fn default() -> Self {
        QueryOptions::all()
    }
}

impl<T> From<QueryOptions<T, OnePartition>> for QueryOptions<T, AnyPartition> {
    /// The same options, still reading only their partition, in the type of
    /// options that may read any.
    fn from(o: QueryOptions<T, OnePartition>) -> Self {
        o.rescope()
    }
}

impl<T> QueryOptions<T, AnyPartition> {
    /// Every row of the table.
    pub fn all() -> Self {
        QueryOptions {
            partition: None,
            prefix: None,
            take: None,
            filter: None,
            select: None,
            cursor: None,
            filter_error: None,
            _types: PhantomData,
        }
    }
}

impl<T> QueryOptions<T, OnePartition> {
    /// The rows of one partition.
    pub fn partition(partition_key: impl Into<String>) -> Self {
        QueryOptions {
            partition: Some(partition_key.into()),
            ..QueryOptions::<T, AnyPartition>::all().rescope()
        }
    }
}

impl<T, S> QueryOptions<T, S> {
    fn rescope<S2>(self) -> QueryOptions<T, S2> {
        QueryOptions {
            partition: self.partition,
            prefix: self.prefix,
            take: self.take,
            filter: self.filter,
            select: self.select,
            cursor: self.cursor,
            filter_error: self.filter_error,
            _types: PhantomData,
        }
    }

    /// Only rows whose RowKey starts with `prefix` (sent as the range
    /// `RowKey ge prefix and RowKey lt next`). Only on options of one
    /// partition: elsewhere it does not compile.
    pub fn row_key_prefix(mut self, prefix: impl Into<String>) -> Self
    where
        S: PrefixNeedsAPartition,
    {
        self.prefix = Some(prefix.into());
        self
    }

    /// At most `n` rows in total.
    pub fn take(mut self, n: usize) -> Self {
        self.take = Some(n);
        self
    }

    /// Only rows the filter matches (combined with the partition and prefix):
    /// a typed filter built from `T`'s columns, such as
    /// `Customer::filter(|c| c.visits.ge(3u32))`, or an untyped [`Filter`]
    /// (including [`Filter::Raw`]). A filter built from another type's
    /// columns does not compile.
    pub fn filter(mut self, filter: impl IntoFilter<T>) -> Self {
        match filter.into_filter() {
            Ok(f) => self.filter = Some(f),
            Err(e) => self.filter_error = Some(e.to_string()),
        }
        self
    }

    /// Reads only these fields, chosen from `T`'s typed columns:
    /// `.select(Customer::projection(|c| [c.name.col(), c.address.col()]))`.
    /// The others come back at their defaults (a field whose type has none,
    /// such as a JSON-stored struct, must be selected: reading it otherwise
    /// is [`Error::Decode`] naming it). Keys, ETag and Timestamp always come
    /// back. Selecting a large value or file reads the rows whole.
    pub fn select(mut self, fields: impl IntoIterator<Item = Selected<T>>) -> Self {
        self.select = Some(
            fields
                .into_iter()
                .map(|f| Selection::Column(f.name().to_owned()))
                .collect(),
        );
        self
    }

    /// The string form of [`select`](Self::select), checked only at run
    /// time: fields by their Rust or column names, or a dotted path into a
    /// flattened record (`"address.city"`). A name that is not a stored
    /// field is [`Error::Config`] when the query runs. Prefer the typed form.
    pub fn select_raw(mut self, fields: &[&str]) -> Self {
        self.select = Some(fields.iter().map(|f| Selection::Name((*f).to_owned())).collect());
        self
    }

    /// For [`Store::page`]: continue after the page that returned `cursor`.
    /// The other readers (`query`, `stream`, `count`, `any`) read from the
    /// start and refuse options that carry a cursor with [`Error::InvalidCursor`].
    pub fn after(mut self, cursor: crate::store::query::paging::Cursor) -> Self {
        self.cursor = Some(cursor);
        self
    }

    /// These options with the partition and row-key prefix normalized as
    /// composite ids are (trimmed, spaces to `-`, lower-cased).
    pub(crate) fn with_normalized_keys(&self) -> Self {
        QueryOptions {
            partition: self.partition.as_deref().map(crate::entity::normalize_id),
            prefix: self.prefix.as_deref().map(crate::entity::normalize_id),
            ..self.clone()
        }
    }

    /// The backend request for these options.
    pub(crate) fn request(&self) -> Result<QueryRequest> {
        if let Some(reason) = &self.filter_error {
            return Err(Error::InvalidValue {
                column: "filter".into(),
                reason: reason.clone(),
            });
        }
        let mut parts = key_range(
            self.partition.as_deref(),
            self.prefix.as_deref(),
            "QueryOptions::partition(..)",
        )?;
        if let Some(f) = &self.filter {
            parts.push(f.clone());
        }
        let filter = parts.into_iter().reduce(Filter::and);
        if let Some(f) = &filter {
            f.check()?;
        }
        let top = self.take.map(|t| t.clamp(1, MAX_PAGE_SIZE as usize) as u32);
        Ok(QueryRequest {
            filter,
            select: None,
            top,
        })
    }
}

/// The conditions of a listing's partition and row-key prefix (the prefix
/// as the range `RowKey ge 'p' and RowKey lt 'q'`). `start` names the call
/// that sets a partition, for the refusal of a prefix without one.
pub(crate) fn key_range(partition: Option<&str>, prefix: Option<&str>, start: &str) -> Result<Vec<Filter>> {
    let mut parts: Vec<Filter> = Vec::new();
    if let Some(pk) = partition {
        crate::service::validate_key(crate::error::KeyKind::PartitionKey, pk)?;
        parts.push(Filter::eq("PartitionKey", Value::String(pk.to_owned())));
    }
    match (prefix, partition) {
        (Some(_), None) => {
            return Err(Error::config(format!(
                "a row-key prefix needs a partition: add {start}"
            )))
        }
        (Some(prefix), Some(_)) if !prefix.is_empty() => {
            parts.push(Filter::cmp("RowKey", CmpOp::Ge, Value::String(prefix.to_owned())));
            if let Some(next) = next_prefix(prefix) {
                parts.push(Filter::cmp("RowKey", CmpOp::Lt, Value::String(next)));
            }
        }
        _ => {}
    }
    Ok(parts)
}

use crate::service::next_prefix;

/// Walks the pages of one query, following page tokens (an empty page
/// with a token is not the end), with the next page fetched while the
/// current one is decoded when the reader says it will read it.
pub(crate) struct Pages {
    fetcher: crate::store::query::read_ahead::PageFetcher,
}

impl Pages {
    /// The next page's rows, or `None` after the last. `wants_next(rows)`:
    /// whether the reader will read the page after these rows (then it is
    /// fetched ahead).
    pub(crate) async fn next(
        &mut self,
        wants_next: impl FnOnce(&[crate::value::Row]) -> bool,
    ) -> Result<Option<Vec<crate::value::Row>>> {
        Ok(self
            .fetcher
            .next(|page| wants_next(&page.rows))
            .await?
            .map(|page| page.rows))
    }
}

// Reading pages does not depend on the entity type (the index applier reads through it).
impl<T> Store<T> {
    /// The pages of a request, their rows in key order on every service
    /// (the table is created first if needed). On a service that returns
    /// rows in no order (Cosmos DB for Table), every match is read and
    /// ordered before the first page is returned: readers that need no
    /// order use [`Store::pages_in_any_order`].
    pub(crate) async fn pages(&self, request: QueryRequest) -> Result<Pages> {
        let pages = self.pages_in_any_order(request).await?;
        Ok(Pages {
            fetcher: pages.fetcher.in_key_order(),
        })
    }

    /// The pages of a request in the order the service returns them, one
    /// page at a time: for readers that need no order (counts, sweeps,
    /// readers that look at every row on their own).
    pub(crate) async fn pages_in_any_order(&self, request: QueryRequest) -> Result<Pages> {
        self.ensure_created().await?;
        Ok(Pages {
            fetcher: crate::store::query::read_ahead::PageFetcher::new(
                self.shared.backend.clone(),
                &self.table,
                request,
            ),
        })
    }
}

impl<T: TableEntity> Store<T> {
    /// Decodes one listed row: `None` for a continuation row of a large value
    /// (or a main row deleted while its parts were read).
    pub(crate) async fn decode_listed(&self, row: Row) -> Result<Option<T>> {
        if super::read::is_not_an_entity(&row) {
            return Ok(None);
        }
        self.decode_row(row).await
    }

    /// Reads every entity the options select, following page tokens.
    ///
    /// The list of a whole partition (a partition and nothing else: no
    /// filter, prefix, limit or projection) is served from the read cache
    /// when it holds it, and cached when no write in the partition ran while
    /// it was read. Every other query reads the table.
    pub async fn query<S>(&self, options: QueryOptions<T, S>) -> Result<Vec<T>> {
        self.op("query")
            .run(async move {
                let whole = self.whole_partition(&options);
                if let Some(list) = whole.as_deref().and_then(|pk| self.cached_list(pk)) {
                    return Ok(list);
                }
                let keeping = whole.as_deref().and_then(|pk| self.list_ticket(pk));
                let limit = options.take.unwrap_or(usize::MAX);
                let ordered = self.profile().sorts_results();
                if T::DECODES_PAGES && keeping.is_none() && limit == usize::MAX && ordered {
                    return self.query_direct(self.request_for(&options)?).await;
                }
                let mut pages = self.pages(self.request_for(&options)?).await?;
                let mut out = Vec::new();
                let mut bytes = 0;
                while out.len() < limit {
                    // Each row gives at most one entity: fewer than the limit left means the next page is read.
                    let seen = out.len();
                    let Some(rows) = pages.next(|rows| seen.saturating_add(rows.len()) < limit).await? else {
                        break;
                    };
                    for row in rows {
                        if out.len() >= limit {
                            break;
                        }
                        if super::read::is_not_an_entity(&row) {
                            continue;
                        }
                        if let Some((entity, size)) = self.decode_weighed(row, keeping.is_some()).await? {
                            bytes += size;
                            out.push(entity);
                        }
                    }
                }
                if let (Some(keeping), Some(pk)) = (keeping, &whole) {
                    self.keep_list(keeping, pk, &out, bytes);
                }
                Ok(out)
            })
            .await
    }

    /// Every entity of the request, each page read straight into entities
    /// where the backend answers its body and the type can
    /// ([`TableEntity::decode_page`]), else through rows, with the same
    /// results and errors.
    async fn query_direct(&self, request: QueryRequest) -> Result<Vec<T>> {
        self.ensure_created().await?;
        let mut pages =
            crate::store::query::read_ahead::PageFetcher::new(self.shared.backend.clone(), &self.table, request)
                .of_bodies();
        let mut out = Vec::new();
        while let Some(answer) = pages.next_answer(|| true).await? {
            let rows = match answer {
                PageAnswer::Body(body) => match T::decode_page(body.body()) {
                    Some(entities) => {
                        if out.is_empty() {
                            out = entities;
                        } else {
                            out.extend(entities);
                        }
                        continue;
                    }
                    // What the direct read does not take (or refuses) is read as rows, which say why.
                    None => body.rows()?,
                },
                PageAnswer::Rows(page) => page.rows,
            };
            for row in rows {
                if let Some(entity) = self.decode_listed(row).await? {
                    out.push(entity);
                }
            }
        }
        Ok(out)
    }

    /// Counts the rows the options select, reading keys only.
    pub async fn count<S>(&self, options: QueryOptions<T, S>) -> Result<u64> {
        self.op("count")
            .run(async move {
                let mut request = self.request_for(&options)?;
                // Continuation rows of large values are not entities: read the marker to skip them.
                request.select = Some(vec![
                    "RowKey".to_owned(),
                    crate::layout::SPLIT_OF.to_owned(),
                    crate::layout::INDEX_OF.to_owned(),
                ]);
                request.top = Some(MAX_PAGE_SIZE);
                let limit = options.take.map_or(u64::MAX, |t| t as u64);
                let mut pages = self.pages_in_any_order(request).await?;
                let mut n = 0u64;
                while n < limit {
                    let Some(rows) = pages.next(|rows| n.saturating_add(rows.len() as u64) < limit).await? else {
                        break;
                    };
                    n += rows.iter().filter(|r| !super::read::is_not_an_entity(r)).count() as u64;
                }
                Ok(n.min(limit))
            })
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_prefix_increments_the_last_unit() {
        assert_eq!(next_prefix("abc").as_deref(), Some("abd"));
        assert_eq!(next_prefix("a\u{FFFF}").as_deref(), Some("b"));
        assert_eq!(next_prefix("\u{FFFF}"), None);
        assert_eq!(
            next_prefix(crate::layout::INDEX_PREFIX).as_deref(),
            Some(crate::layout::INDEX_PREFIX_END)
        );
    }
}
