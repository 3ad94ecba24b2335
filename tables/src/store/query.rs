//! Reading many rows: partition or table scans, optionally filtered.

use super::Store;
use crate::backend::{PageToken, QueryRequest};
use crate::entity::TableEntity;
use crate::error::{Error, Result};
use crate::query::{CmpOp, Filter, IntoFilter};
use crate::service::MAX_PAGE_SIZE;
use crate::value::{Row, Value};

/// What a query reads: a partition (optionally a row-key prefix within it),
/// a filter, a limit. Results come in (PartitionKey, RowKey) order.
///
/// ```
/// use unified_tables::store::QueryOptions;
/// let q = QueryOptions::partition("eu").row_key_prefix("2024-").take(50);
/// # let _ = q;
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueryOptions {
    pub(crate) partition: Option<String>,
    pub(crate) prefix: Option<String>,
    pub(crate) take: Option<usize>,
    pub(crate) filter: Option<Filter>,
    pub(crate) select: Option<Vec<String>>,
    pub(crate) cursor: Option<super::paging::Cursor>,
    pub(crate) filter_error: Option<String>,
}

impl QueryOptions {
    /// Every row of the table.
    pub fn all() -> QueryOptions {
        QueryOptions::default()
    }

    /// The rows of one partition.
    pub fn partition(partition_key: impl Into<String>) -> QueryOptions {
        QueryOptions {
            partition: Some(partition_key.into()),
            ..QueryOptions::default()
        }
    }

    /// Only rows whose RowKey starts with `prefix` (needs a partition).
    pub fn row_key_prefix(mut self, prefix: impl Into<String>) -> QueryOptions {
        self.prefix = Some(prefix.into());
        self
    }

    /// At most `n` rows in total.
    pub fn take(mut self, n: usize) -> QueryOptions {
        self.take = Some(n);
        self
    }

    /// Only rows the filter matches (combined with the partition and prefix):
    /// a typed filter such as `Customer::filter(|c| c.visits.ge(3u32))`, or an
    /// untyped [`Filter`] (including [`Filter::Raw`]).
    pub fn filter(mut self, filter: impl IntoFilter) -> QueryOptions {
        match filter.into_filter() {
            Ok(f) => self.filter = Some(f),
            Err(e) => self.filter_error = Some(e.to_string()),
        }
        self
    }

    /// Reads only these fields (by field or column name); the others come
    /// back at their defaults. Keys, ETag and Timestamp always come back.
    pub fn select(mut self, fields: &[&str]) -> QueryOptions {
        self.select = Some(fields.iter().map(|f| (*f).to_owned()).collect());
        self
    }

    /// For [`Store::page`]: continue after the page that returned `cursor`.
    /// The other readers (`query`, `stream`, `count`, `any`) read from the
    /// start and refuse options that carry a cursor with [`Error::InvalidCursor`].
    pub fn after(mut self, cursor: super::paging::Cursor) -> QueryOptions {
        self.cursor = Some(cursor);
        self
    }

    /// These options with the partition and row-key prefix normalized as
    /// composite ids are (trimmed, spaces to `-`, lower-cased).
    pub(crate) fn with_normalized_keys(&self) -> QueryOptions {
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
            return Err(Error::Config(format!(
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

/// The smallest string greater than every string starting with `prefix`:
/// drop trailing U+FFFF units and increment the last remaining UTF-16 unit.
/// `None` when the prefix is all U+FFFF.
pub fn next_prefix(prefix: &str) -> Option<String> {
    let mut units: Vec<u16> = prefix.encode_utf16().collect();
    while let Some(&last) = units.last() {
        if last == 0xFFFF {
            units.pop();
            continue;
        }
        *units.last_mut()? = last + 1;
        return Some(String::from_utf16_lossy(&units));
    }
    None
}

/// Walks the pages of one query, following page tokens (an empty page
/// with a token is not the end).
pub(crate) struct Pages<'s> {
    backend: &'s dyn crate::backend::Backend,
    table: &'s str,
    request: QueryRequest,
    token: Option<PageToken>,
    done: bool,
}

impl Pages<'_> {
    /// The next page's rows, or `None` after the last page.
    pub(crate) async fn next(&mut self) -> Result<Option<Vec<crate::value::Row>>> {
        if self.done {
            return Ok(None);
        }
        let page = self
            .backend
            .query(self.table, &self.request, self.token.as_ref())
            .await?;
        self.token = page.next;
        self.done = self.token.is_none();
        Ok(Some(page.rows))
    }
}

impl<T: TableEntity> Store<T> {
    /// Decodes one listed row: `None` for a continuation row of a large value
    /// (or a main row deleted while its parts were read).
    pub(crate) async fn decode_listed(&self, row: Row) -> Result<Option<T>> {
        if super::read::is_continuation_row(&row) {
            return Ok(None);
        }
        self.decode_row(row).await
    }

    /// The pages of a request (the table is created first if needed).
    pub(crate) async fn pages(&self, request: QueryRequest) -> Result<Pages<'_>> {
        self.ensure_created().await?;
        Ok(Pages {
            backend: &*self.tables.backend,
            table: &self.table,
            request,
            token: None,
            done: false,
        })
    }

    /// Reads every entity the options select, following page tokens.
    pub async fn query(&self, options: QueryOptions) -> Result<Vec<T>> {
        let limit = options.take.unwrap_or(usize::MAX);
        let mut pages = self.pages(self.request_for(&options)?).await?;
        let mut out = Vec::new();
        while out.len() < limit {
            let Some(rows) = pages.next().await? else { break };
            for row in rows {
                if out.len() >= limit {
                    break;
                }
                if let Some(entity) = self.decode_listed(row).await? {
                    out.push(entity);
                }
            }
        }
        Ok(out)
    }

    /// Counts the rows the options select, reading keys only.
    pub async fn count(&self, options: QueryOptions) -> Result<u64> {
        let mut request = self.request_for(&options)?;
        // Continuation rows of large values are not entities: read the marker to skip them.
        request.select = Some(vec!["RowKey".to_owned(), crate::layout::SPLIT_OF.to_owned()]);
        request.top = Some(MAX_PAGE_SIZE);
        let limit = options.take.map_or(u64::MAX, |t| t as u64);
        let mut pages = self.pages(request).await?;
        let mut n = 0u64;
        while n < limit {
            let Some(rows) = pages.next().await? else { break };
            n += rows.iter().filter(|r| r.get(crate::layout::SPLIT_OF).is_none()).count() as u64;
        }
        Ok(n.min(limit))
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
    }
}
