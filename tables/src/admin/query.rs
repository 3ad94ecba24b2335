//! [`Admin::query`]: pages of logical entities, with a cursor to resume.

use super::read::Read;
use super::Admin;
use crate::backend::QueryRequest;
use crate::error::{Error, Result};
use crate::large::logical::{assemble, LogicalEntity};
use crate::layout::{is_index_row, split_parts, INDEX_OF, SPLIT_OF};
use crate::query::{CmpOp, Filter};
use crate::service::next_prefix;
use crate::service::MAX_PAGE_SIZE;
use crate::store::Cursor;
use crate::value::Value;

/// What [`Admin::query`] reads.
#[derive(Debug, Clone, Default)]
pub struct AdminQuery {
    /// One partition.
    pub partition: Option<String>,
    /// RowKeys starting with this (needs a partition).
    pub prefix: Option<String>,
    /// An OData `$filter`, sent as it is (`Age gt 30`).
    pub filter: Option<String>,
    /// Only these columns (then large values are not reassembled: their
    /// cells are shown as stored).
    pub select: Option<Vec<String>>,
    /// Rows per page (at most 1,000; default 100). Continuation rows count
    /// toward it, so a page may hold fewer entities.
    pub top: Option<u32>,
    /// Where to continue: the cursor of the page before.
    pub after: Option<Cursor>,
}

/// One page of [`Admin::query`].
#[derive(Debug, Clone)]
pub struct AdminPage {
    /// The entities, in key order; damaged ones are whole as far as they go
    /// (see [`Admin::get`] and [`Admin::fsck`] for what is wrong with them).
    pub entities: Vec<LogicalEntity>,
    /// Entities of this page that failed their check.
    pub damaged: Vec<(String, String)>,
    /// Where the next page starts; `None` at the end.
    pub cursor: Option<Cursor>,
}

impl AdminQuery {
    fn request(&self) -> Result<QueryRequest> {
        let text = |s: &str| Value::String(s.to_owned());
        let mut filter = self.partition.as_deref().map(|p| Filter::eq("PartitionKey", text(p)));
        if let Some(prefix) = &self.prefix {
            let Some(f) = filter.take() else {
                return Err(Error::config("a RowKey prefix needs a partition"));
            };
            let mut f = f.and(Filter::cmp("RowKey", CmpOp::Ge, text(prefix)));
            if let Some(next) = next_prefix(prefix) {
                f = f.and(Filter::cmp("RowKey", CmpOp::Lt, text(&next)));
            }
            filter = Some(f);
        }
        if let Some(raw) = &self.filter {
            let raw = Filter::raw(raw.clone());
            filter = Some(match filter {
                Some(f) => f.and(raw),
                None => raw,
            });
        }
        let select = self.select.clone().map(|mut s| {
            s.push(SPLIT_OF.to_owned());
            s.push(INDEX_OF.to_owned());
            s
        });
        Ok(QueryRequest {
            filter,
            select,
            top: Some(self.top.unwrap_or(100).clamp(1, MAX_PAGE_SIZE)),
        })
    }

    /// What the cursor is bound to.
    fn fingerprint(&self) -> String {
        format!(
            "admin|{:?}|{:?}|{:?}|{:?}|{:?}",
            self.partition, self.prefix, self.filter, self.select, self.top
        )
    }
}

impl Admin {
    /// Reads one page of logical entities. Large values are reassembled
    /// and checked (unless the query selects columns); continuation rows and
    /// the rows of secondary indexes are never listed as entities. Send the page's cursor back in
    /// [`AdminQuery::after`] (with the same query) for the next page.
    pub async fn query(&self, query: &AdminQuery) -> Result<AdminPage> {
        self.store
            .op("query")
            .run(async move {
                let request = query.request()?;
                let fingerprint = query.fingerprint();
                let key = self.tables.shared.cursor_key.as_ref();
                let token = query.after.as_ref().map(|c| c.decode(&fingerprint, key)).transpose()?;
                self.store.ensure_created().await?;
                let page = self
                    .tables
                    .shared
                    .backend
                    .query(&self.table, &request, token.as_ref())
                    .await?;
                let mut out = AdminPage {
                    entities: Vec::new(),
                    damaged: Vec::new(),
                    cursor: page.next.as_ref().map(|next| Cursor::encode(&fingerprint, next, key)),
                };
                for row in page.rows {
                    // Continuation rows and index rows are never entities.
                    if row.get(SPLIT_OF).is_some() || is_index_row(&row) {
                        continue;
                    }
                    if query.select.is_some() {
                        out.entities.push(LogicalEntity {
                            raw: vec![row.clone()],
                            row,
                            large: Vec::new(),
                            blobs: Vec::new(),
                        });
                        continue;
                    }
                    let (pk, rk) = (row.partition_key.clone(), row.row_key.clone());
                    let rows = self.continuation_rows(&pk, &rk, split_parts(&row)).await?;
                    match self.settle(assemble(row, rows), false).await? {
                        Some(Read::Whole(e)) => out.entities.push(e),
                        Some(Read::Damaged(e, _)) => {
                            out.damaged.push((pk, rk));
                            out.entities.push(e);
                        }
                        None => {}
                    }
                }
                Ok(out)
            })
            .await
    }
}
