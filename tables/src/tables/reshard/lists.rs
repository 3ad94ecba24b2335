//! What a job moves: the tables and containers the pool lists (read when
//! the job starts, and again after its wait, when no handle writes a moving
//! partition any more), and the check that the accounts the pool grows into
//! hold none of them.

use super::job::Record;
use super::scan::send;
use super::{table_prefixes, union, Job};
use crate::backend::pool::recorded;
use crate::backend::QueryRequest;
use crate::error::{Error, ErrorKind, Result};
use crate::layout::{POOL_CONTAINERS_PARTITION, POOL_TABLE, POOL_TABLES_PARTITION};

impl Job {
    /// Refuses a job whose new accounts hold anything of the pool: a pool
    /// grows into accounts that hold none of its tables and containers
    /// (so that what the job finds there later is its own copy).
    pub(super) async fn check_empty(
        &self,
        tables: &[String],
        containers: &[String],
        values: Option<&str>,
    ) -> Result<()> {
        let top = QueryRequest {
            top: Some(1),
            ..QueryRequest::default()
        };
        for position in self.growth.old..self.growth.new {
            let name = &self.names[position];
            let refused = |what: String| {
                Error::config(format!(
                    "account {name:?} already holds {what}: a pool grows into accounts that hold none of its \
                     tables and blob containers; empty it, or grow the pool with another account"
                ))
            };
            let rows = self.rows[position].as_ref();
            for table in tables.iter().map(String::as_str).chain([POOL_TABLE]) {
                match send(&self.policy, true, || rows.query(table, &top, None)).await {
                    Ok(page) if !page.rows.is_empty() => return Err(refused(format!("rows of table {table:?}"))),
                    Err(e) if e.kind() != ErrorKind::NotFound => return Err(e),
                    _ => {}
                }
            }
            let Some(blobs) = self.blobs.get(position) else {
                continue;
            };
            let prefixes = table_prefixes(tables);
            let mut scopes: Vec<(&str, &str)> = containers
                .iter()
                .filter(|c| Some(c.as_str()) != values)
                .map(|c| (c.as_str(), ""))
                .collect();
            if let Some(values) = values {
                scopes.extend(prefixes.iter().map(|p| (values, p.as_str())));
            }
            for (container, prefix) in scopes {
                match send(&self.policy, true, || blobs.list(container, prefix, None, None, 1)).await {
                    Ok(page) if !page.items.is_empty() => {
                        return Err(refused(format!(
                            "blobs in container {container:?} ({:?})",
                            page.items[0].name
                        )))
                    }
                    Err(e) if e.kind() != ErrorKind::NotFound => return Err(e),
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// The pool's lists read again, with the tables named in this run:
    /// what the record misses is checked absent from the added accounts
    /// and recorded.
    pub(super) async fn list_more(&self, record: &mut Record, named: &[String], values: Option<&str>) -> Result<()> {
        let listed = send(&self.policy, true, || recorded(self.authority(), POOL_TABLES_PARTITION)).await?;
        let tables: Vec<String> = union(Vec::new(), listed.into_iter().chain(named.iter().cloned()))
            .into_iter()
            .filter(|t| !record.tables.contains(t))
            .collect();
        let containers: Vec<String> = match values {
            Some(_) => send(&self.policy, true, || {
                recorded(self.authority(), POOL_CONTAINERS_PARTITION)
            })
            .await?
            .into_iter()
            .filter(|c| !record.containers.contains(c))
            .collect(),
            None => Vec::new(),
        };
        if tables.is_empty() && containers.is_empty() {
            return Ok(());
        }
        self.check_empty(&tables, &containers, values).await?;
        record.tables = union(std::mem::take(&mut record.tables), tables);
        record.containers = union(std::mem::take(&mut record.containers), containers);
        send(&self.policy, true, || {
            self.authority().execute(POOL_TABLE, record.write_op())
        })
        .await?;
        Ok(())
    }
}
