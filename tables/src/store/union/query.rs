//! What a union store lists: a partition (or the table), a row-key prefix,
//! a limit, typed filters on keys and system columns, a cursor.

use std::marker::PhantomData;

use crate::backend::QueryRequest;
use crate::error::{Error, Result};
use crate::layout::{is_system_column, TYPE_NAME};
use crate::query::{Col, Filter, OptCol, Where, WherePartial};
use crate::service::MAX_PAGE_SIZE;
use crate::store::query::key_range;
use crate::store::{Cursor, DEFAULT_PAGE_SIZE};
use crate::value::DateTime;

use super::UnionEntry;

/// The columns a union query can filter on: the keys, the Timestamp, the
/// `_TypeName` token and other system columns. A union's payload columns
/// differ between variants and are not offered.
///
/// ```
/// use unified_tables::{TableUnion, UnionQuery};
/// # #[derive(TableUnion)] enum Event { Opened }
/// let q = UnionQuery::<Event>::partition("tx-1")
///     .filter(|c| c.row_key.ge("0001") & c.system::<bool>("_IsCommitted").eq(true));
/// # let _ = q;
/// ```
pub struct UnionColumns<E> {
    /// `PartitionKey`.
    pub partition_key: Col<E, String>,
    /// `RowKey`.
    pub row_key: Col<E, String>,
    /// The service's `Timestamp`.
    pub timestamp: Col<E, DateTime>,
    /// `_TypeName`, absent on marker rows (so only `eq` is offered).
    pub type_name: OptCol<E, String>,
}

impl<E> std::fmt::Debug for UnionColumns<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UnionColumns")
    }
}

impl<E> UnionColumns<E> {
    fn new() -> UnionColumns<E> {
        UnionColumns {
            partition_key: Col::new("PartitionKey".into()),
            row_key: Col::new("RowKey".into()),
            timestamp: Col::new("Timestamp".into()),
            type_name: OptCol::new(TYPE_NAME.into()),
        }
    }

    /// A `_`-prefixed system column holding a `T` (rows without it never
    /// match, so only `eq` is offered). Another name refuses the query with
    /// [`Error::InvalidValue`] before it is sent.
    pub fn system<T>(&self, name: &str) -> OptCol<E, T> {
        OptCol::new(name.to_owned())
    }
}

/// A typed filter over a union's columns.
pub trait UnionFilter<E>: sealed::Sealed {
    #[doc(hidden)]
    fn into_union_filter(self) -> Result<Filter>;
}

mod sealed {
    pub trait Sealed {}
    impl<E> Sealed for crate::query::Where<E> {}
    impl<E> Sealed for crate::query::WherePartial<E> {}
}

impl<E> UnionFilter<E> for Where<E> {
    fn into_union_filter(self) -> Result<Filter> {
        self.into_filter()
    }
}

impl<E> UnionFilter<E> for WherePartial<E> {
    fn into_union_filter(self) -> Result<Filter> {
        self.into_filter()
    }
}

/// What a union store lists. Rows come in (PartitionKey, RowKey) order.
/// A `&str` or `String` is the query of that partition.
#[must_use]
pub struct UnionQuery<E> {
    pub(crate) partition: Option<String>,
    pub(crate) prefix: Option<String>,
    pub(crate) take: Option<usize>,
    pub(crate) filter: Option<Filter>,
    /// Why the filter was refused: the column and the reason.
    filter_error: Option<(String, String)>,
    pub(crate) cursor: Option<Cursor>,
    _union: PhantomData<fn() -> E>,
}

impl<E> Clone for UnionQuery<E> {
    fn clone(&self) -> Self {
        UnionQuery {
            partition: self.partition.clone(),
            prefix: self.prefix.clone(),
            take: self.take,
            filter: self.filter.clone(),
            filter_error: self.filter_error.clone(),
            cursor: self.cursor.clone(),
            _union: PhantomData,
        }
    }
}

impl<E> std::fmt::Debug for UnionQuery<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UnionQuery")
            .field("partition", &self.partition)
            .field("prefix", &self.prefix)
            .field("take", &self.take)
            .field("filter", &self.filter)
            .field("filter_error", &self.filter_error)
            .field("cursor", &self.cursor)
            .finish()
    }
}

impl<E> From<&str> for UnionQuery<E> {
    fn from(partition_key: &str) -> Self {
        UnionQuery::partition(partition_key)
    }
}

impl<E> From<String> for UnionQuery<E> {
    fn from(partition_key: String) -> Self {
        UnionQuery::partition(partition_key)
    }
}

impl<E> UnionQuery<E> {
    /// Every row of the table.
    pub fn all() -> UnionQuery<E> {
        UnionQuery {
            partition: None,
            prefix: None,
            take: None,
            filter: None,
            filter_error: None,
            cursor: None,
            _union: PhantomData,
        }
    }

    /// The rows of one partition (the key as given: never normalized).
    pub fn partition(partition_key: impl Into<String>) -> UnionQuery<E> {
        UnionQuery {
            partition: Some(partition_key.into()),
            ..UnionQuery::all()
        }
    }

    /// Only rows whose RowKey starts with `prefix` (needs a partition).
    pub fn row_key_prefix(mut self, prefix: impl Into<String>) -> UnionQuery<E> {
        self.prefix = Some(prefix.into());
        self
    }

    /// At most `n` rows in total; for [`UnionStore::page`](super::UnionStore::page), the page size
    /// (default 100, at most 1000).
    pub fn take(mut self, n: usize) -> UnionQuery<E> {
        self.take = Some(n);
        self
    }

    /// Only rows the filter matches, built from the keys and system columns:
    /// `.filter(|c| c.system::<bool>("_IsCommitted").eq(true))`.
    pub fn filter<W: UnionFilter<E>>(mut self, build: impl FnOnce(&UnionColumns<E>) -> W) -> UnionQuery<E> {
        let built = build(&UnionColumns::new()).into_union_filter().and_then(|f| {
            refuse_payload_columns(&f)?;
            Ok(f)
        });
        match built {
            Ok(f) => self.filter = Some(f),
            Err(Error::InvalidValue { column, reason }) => self.filter_error = Some((column, reason)),
            Err(other) => self.filter_error = Some(("filter".into(), other.to_string())),
        }
        self
    }

    /// For [`UnionStore::page`](super::UnionStore::page): continue after the page that returned
    /// `cursor`. The other readers refuse a cursor with [`Error::InvalidCursor`].
    pub fn after(mut self, cursor: Cursor) -> UnionQuery<E> {
        self.cursor = Some(cursor);
        self
    }

    /// The page size of [`UnionStore::page`](super::UnionStore::page).
    pub(crate) fn page_size(&self) -> usize {
        self.take.unwrap_or(DEFAULT_PAGE_SIZE).clamp(1, MAX_PAGE_SIZE as usize)
    }

    /// What a cursor of this query is bound to: partition, prefix, page size, filter.
    pub(crate) fn fingerprint(&self) -> String {
        let part = |s: Option<&str>| s.map_or_else(|| "~".to_owned(), |s| format!("{}:{s}", s.chars().count()));
        let filter = self.filter.as_ref().map(Filter::to_odata);
        format!(
            "union|{}|{}|{}|{}",
            part(self.partition.as_deref()),
            part(self.prefix.as_deref()),
            self.page_size(),
            part(filter.as_deref())
        )
    }

    /// The backend request: the partition, the prefix as a range, the filter.
    pub(crate) fn request(&self) -> Result<QueryRequest> {
        let mut parts = key_range(
            self.partition.as_deref(),
            self.prefix.as_deref(),
            "UnionQuery::partition(..)",
        )?;
        if let Some((column, reason)) = &self.filter_error {
            return Err(Error::InvalidValue {
                column: column.clone(),
                reason: reason.clone(),
            });
        }
        if let Some(f) = &self.filter {
            parts.push(f.clone());
        }
        let filter = parts.into_iter().reduce(Filter::and);
        if let Some(f) = &filter {
            f.check()?;
        }
        Ok(QueryRequest {
            filter,
            select: None,
            top: self.take.map(|t| t.clamp(1, MAX_PAGE_SIZE as usize) as u32),
        })
    }
}

/// Refuses a filter naming a column that is neither a key, the Timestamp,
/// nor a `_`-prefixed system column.
fn refuse_payload_columns(filter: &Filter) -> Result<()> {
    let column = match filter {
        Filter::Compare { column, .. } | Filter::Column(column) => column,
        Filter::And(a, b) | Filter::Or(a, b) => {
            refuse_payload_columns(a)?;
            return refuse_payload_columns(b);
        }
        Filter::Not(inner) => return refuse_payload_columns(inner),
        Filter::Raw(_) => {
            return Err(Error::InvalidValue {
                column: "filter".into(),
                reason: "a union query takes typed filters only".into(),
            })
        }
    };
    if matches!(column.as_str(), "PartitionKey" | "RowKey" | "Timestamp") || is_system_column(column) {
        return Ok(());
    }
    Err(Error::InvalidValue {
        column: column.clone(),
        reason: "a union query filters on the keys, the Timestamp and `_`-prefixed system columns only: payload columns differ between variants; filter the items in Rust after reading".into(),
    })
}

/// One page of a union query and the cursor of the next.
#[derive(Debug, Clone)]
pub struct UnionPage<E> {
    /// The entries, in key order. A page can be empty and still not be the last.
    pub entries: Vec<UnionEntry<E>>,
    /// Where the next page starts; `None` only at the end.
    pub cursor: Option<Cursor>,
}

impl<E> UnionPage<E> {
    /// Whether another page may follow.
    pub fn has_more(&self) -> bool {
        self.cursor.is_some()
    }
}
