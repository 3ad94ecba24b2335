//! A query over every account of a pool, merged in (PartitionKey, RowKey)
//! order.
//!
//! Each page asks every account for up to a page of rows after the last key
//! returned so far (a filter, since an account's own continuation token means
//! nothing to the others), merges them, and returns the rows that are
//! certainly next: every row up to the smallest last key among the accounts
//! that have more, at most a page. Its token is the last key it returned, so
//! a resumed query neither repeats nor skips a row, whichever account held it.

use std::cmp::Ordering;
use std::sync::Arc;

use futures::future::try_join_all;

use crate::backend::{Backend, Page, PageToken, QueryRequest};
use crate::error::{Error, Result};
use crate::query::{CmpOp, Filter, MAX_COMPARISONS};
use crate::service;
use crate::value::{cmp_utf16, Row, Value};

/// The comparisons the resume filter adds.
const RESUME_COMPARISONS: usize = 3;

fn key_order(a: (&str, &str), b: (&str, &str)) -> Ordering {
    cmp_utf16(a.0, b.0).then_with(|| cmp_utf16(a.1, b.1))
}

fn keys(row: &Row) -> (&str, &str) {
    (&row.partition_key, &row.row_key)
}

/// `PartitionKey gt p or (PartitionKey eq p and RowKey gt r)`.
fn after(partition_key: &str, row_key: &str) -> Filter {
    let pk = |op| Filter::cmp("PartitionKey", op, Value::String(partition_key.to_owned()));
    pk(CmpOp::Gt).or(pk(CmpOp::Eq).and(Filter::cmp("RowKey", CmpOp::Gt, Value::String(row_key.to_owned()))))
}

/// One account's rows after the resume point: its first non-empty page
/// (following its own tokens past empty pages), and whether it has more.
async fn first_rows(account: &dyn Backend, table: &str, request: &QueryRequest) -> Result<(Vec<Row>, bool)> {
    let mut token: Option<PageToken> = None;
    loop {
        let page = account.query(table, request, token.as_ref()).await?;
        if !page.rows.is_empty() || page.next.is_none() {
            return Ok((page.rows, page.next.is_some()));
        }
        token = page.next;
    }
}

pub(super) async fn query_all(
    accounts: &[Arc<dyn Backend>],
    table: &str,
    request: &QueryRequest,
    token: Option<&PageToken>,
) -> Result<Page> {
    let own = request.filter.as_ref().map_or(0, Filter::comparisons);
    if own + RESUME_COMPARISONS > MAX_COMPARISONS {
        return Err(Error::LimitExceeded {
            limit: "FilterTooComplex",
            detail: format!(
                "the filter has {own} comparisons; a query over every account of a pool adds {RESUME_COMPARISONS} to \
                 resume its pages, and the service allows {MAX_COMPARISONS}: narrow it to one partition or simplify it"
            ),
        });
    }
    let mut sent = request.clone();
    if let Some(token) = token {
        let resume = after(&token.next_partition_key, token.next_row_key.as_deref().unwrap_or(""));
        sent.filter = Some(match sent.filter.take() {
            Some(own) => own.and(resume),
            None => resume,
        });
    }
    let top = request.top.unwrap_or(service::MAX_PAGE_SIZE) as usize;
    let answers = try_join_all(accounts.iter().map(|a| first_rows(a.as_ref(), table, &sent))).await?;

    // Rows up to `bound` are certainly next: every account that has more
    // has already returned all its rows up to its last one.
    let bound: Option<(String, String)> = answers
        .iter()
        .filter(|(rows, more)| *more && !rows.is_empty())
        .filter_map(|(rows, _)| rows.last())
        .map(keys)
        .min_by(|a, b| key_order(*a, *b))
        .map(|(pk, rk)| (pk.to_owned(), rk.to_owned()));
    let mut rows: Vec<Row> = answers.into_iter().flat_map(|(rows, _)| rows).collect();
    if let Some((pk, rk)) = &bound {
        rows.retain(|row| key_order(keys(row), (pk, rk)) != Ordering::Greater);
    }
    rows.sort_by(|a, b| key_order(keys(a), keys(b)));
    let capped = rows.len() > top;
    rows.truncate(top);
    let next = if capped || bound.is_some() {
        rows.last().map(|last| PageToken {
            next_partition_key: last.partition_key.clone(),
            next_row_key: Some(last.row_key.clone()),
        })
    } else {
        None
    };
    Ok(Page { rows, next })
}
