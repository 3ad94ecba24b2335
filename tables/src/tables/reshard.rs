//! Growing a pool of accounts: copy every partition whose home moves,
//! verify the copies, switch the descriptor, then remove what moved.

use std::sync::Arc;

use super::pool::{check_pool, read_descriptor, write_descriptor, Descriptor};
use super::Tables;
use crate::backend::blob::{BlobBackend, PutOptions};
use crate::backend::pack::{pack, row_weight};
use crate::backend::pool::account_of;
use crate::backend::{Backend, IfMatch, QueryRequest, UpdateMode, WriteOp};
use crate::error::{Error, Result};
use crate::layout::partition_prefix;
use crate::query::Filter;
use crate::service::MAX_LIST_RESULTS;
use crate::value::{Row, Value};

/// What [`Tables::reshard`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReshardReport {
    /// Partitions copied to their new account.
    pub partitions_moved: usize,
    /// Rows copied (main and continuation rows alike).
    pub rows_copied: usize,
    /// Blobs copied.
    pub blobs_copied: usize,
    /// Rows removed from accounts that no longer hold their partition.
    pub rows_removed: usize,
    /// Blobs removed from accounts that no longer hold their partition.
    pub blobs_removed: usize,
}

/// One account of a pool: its name, rows and blobs.
struct Account {
    name: String,
    rows: Arc<dyn Backend>,
    blobs: Option<(Arc<dyn BlobBackend>, String)>,
}

fn accounts<N: Into<String>>(pool: Vec<(N, Tables)>) -> Vec<Account> {
    pool.into_iter()
        .map(|(name, t)| Account {
            name: name.into(),
            rows: t.raw.clone(),
            blobs: t.blobs.as_ref().map(|b| (b.raw.clone(), b.options.container.clone())),
        })
        .collect()
}

/// Every row of a table in one account, a page at a time, in key order.
async fn scan(account: &dyn Backend, table: &str, filter: Option<Filter>, mut each: impl FnMut(Row)) -> Result<()> {
    let request = QueryRequest {
        filter,
        ..QueryRequest::default()
    };
    let mut token = None;
    loop {
        let page = match account.query(table, &request, token.as_ref()).await {
            Err(e) if e.service_code().is_some_and(|(status, _)| status == 404) => return Ok(()),
            page => page?,
        };
        page.rows.into_iter().for_each(&mut each);
        match page.next {
            Some(next) => token = Some(next),
            None => return Ok(()),
        }
    }
}

/// Writes `ops` (one partition's) as packed transactions.
async fn commit(account: &dyn Backend, table: &str, ops: Vec<WriteOp>) -> Result<()> {
    let weights: Vec<(usize, usize)> = ops.iter().map(|op| (1, op.row().map_or(400, row_weight))).collect();
    let mut ops = ops.into_iter();
    for range in pack(weights) {
        let chunk: Vec<WriteOp> = ops.by_ref().take(range.len()).collect();
        account.transaction(table, chunk).await?;
    }
    Ok(())
}

fn same_content(a: &Row, b: &Row) -> bool {
    a.partition_key == b.partition_key && a.row_key == b.row_key && a.properties == b.properties
}

/// The blob names of one partition of `table`.
async fn partition_blobs(blobs: &dyn BlobBackend, container: &str, table: &str, pk: &str) -> Result<Vec<String>> {
    let prefix = partition_prefix(table, pk);
    let mut names = Vec::new();
    let mut marker: Option<String> = None;
    loop {
        let page = match blobs
            .list(container, &prefix, None, marker.as_deref(), MAX_LIST_RESULTS)
            .await
        {
            Err(e) if e.service_code().is_some_and(|(status, _)| status == 404) => return Ok(names),
            page => page?,
        };
        names.extend(page.items.into_iter().map(|item| item.name));
        match page.next_marker {
            Some(next) => marker = Some(next),
            None => return Ok(names),
        }
    }
}

/// Copies one partition's rows and blobs from `from` to `to`, then checks
/// the copy against what was read.
async fn copy_partition(from: &Account, to: &Account, table: &str, rows: Vec<Row>) -> Result<(usize, usize)> {
    let pk = rows[0].partition_key.clone();
    let mut blobs_copied = 0;
    if let (Some((source, source_container)), Some((target, target_container))) = (&from.blobs, &to.blobs) {
        target.create_container(target_container).await?;
        for name in partition_blobs(source.as_ref(), source_container, table, &pk).await? {
            let Some((_, bytes, sha)) = source.get_hashed(source_container, &name).await? else {
                continue; // deleted meanwhile: nothing refers to it any more
            };
            target
                .put(target_container, &name, bytes, PutOptions::default())
                .await?;
            let copied = target.get_hashed(target_container, &name).await?.map(|(_, _, s)| s);
            if copied.as_deref() != Some(sha.as_str()) {
                return Err(Error::Integrity {
                    column: name,
                    reason: format!(
                        "the copy of this blob in account {:?} does not match its source; run the job again",
                        to.name
                    ),
                });
            }
            blobs_copied += 1;
        }
    }
    to.rows.create_table(table).await?;
    let ops: Vec<WriteOp> = rows
        .iter()
        .map(|row| WriteOp::Upsert {
            row: Row {
                etag: None,
                timestamp: None,
                ..row.clone()
            },
            mode: UpdateMode::Replace,
        })
        .collect();
    commit(to.rows.as_ref(), table, ops).await?;
    let mut copied = Vec::with_capacity(rows.len());
    let pinned = Filter::eq("PartitionKey", Value::String(pk.clone()));
    scan(to.rows.as_ref(), table, Some(pinned), |row| copied.push(row)).await?;
    let whole = copied.len() == rows.len() && copied.iter().zip(&rows).all(|(a, b)| same_content(a, b));
    if !whole {
        return Err(Error::Integrity {
            column: "PartitionKey".into(),
            reason: format!(
                "the copy of partition {pk:?} of table {table:?} in account {:?} does not match its source \
                 (did a writer run during the job?); stop every writer and run the job again",
                to.name
            ),
        });
    }
    Ok((rows.len(), blobs_copied))
}

/// The rows of `table` in the account at `position` whose partition's home
/// in a pool of `size` is another account, one group per partition.
async fn strays(account: &Account, position: usize, size: usize, table: &str) -> Result<Vec<Vec<Row>>> {
    let mut groups: Vec<Vec<Row>> = Vec::new();
    scan(account.rows.as_ref(), table, None, |row| {
        if account_of(&row.partition_key, size) == position {
            return;
        }
        match groups.last_mut() {
            Some(group) if group[0].partition_key == row.partition_key => group.push(row),
            _ => groups.push(vec![row]),
        }
    })
    .await?;
    Ok(groups)
}

/// Removes from `account` (position `position`) every partition of `table`
/// whose home in a pool of `size` is another account.
async fn remove_moved(
    account: &Account,
    position: usize,
    size: usize,
    table: &str,
    report: &mut ReshardReport,
) -> Result<()> {
    for group in strays(account, position, size, table).await? {
        let pk = group[0].partition_key.clone();
        let ops = group
            .iter()
            .map(|row| WriteOp::Delete {
                partition_key: row.partition_key.clone(),
                row_key: row.row_key.clone(),
                condition: IfMatch::Any,
            })
            .collect();
        commit(account.rows.as_ref(), table, ops).await?;
        report.rows_removed += group.len();
        if let Some((blobs, container)) = &account.blobs {
            for name in partition_blobs(blobs.as_ref(), container, table, &pk).await? {
                blobs.delete(container, &name, Default::default()).await?;
                report.blobs_removed += 1;
            }
        }
    }
    Ok(())
}

impl Tables {
    /// Grows a pool of accounts (see [`Tables::pooled`]) from `old` to
    /// `new`, for the named `tables`: `new` must be `old` with accounts
    /// added at its end. With jump consistent hashing only partitions whose
    /// home becomes one of the added accounts move.
    ///
    /// The job copies each moving partition (every row, main and
    /// continuation rows alike, and its large values' blobs, which keep
    /// their names, so the copy owns its blobs in its new account), reads the
    /// copy back and compares it with its source, and only when every
    /// partition of every table is copied and checked switches the
    /// descriptor of every account to the new pool. It then removes the moved
    /// partitions from their old accounts.
    ///
    /// Cut-over steps:
    /// 1. stop every writer of the pool (a write during the job may be lost:
    ///    the check refuses a partition that changed while it was copied,
    ///    but not one that changes after);
    /// 2. run `reshard` with the old and the new pool;
    /// 3. restart every process with the new pool (a handle opened with the
    ///    old one is now refused).
    ///
    /// Until the switch, the old pool is untouched and still opens; a job
    /// stopped after the switch is finished by running it again with the
    /// same arguments (it only removes what moved).
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use unified_tables::Tables;
    /// let accounts: Vec<Tables> = (0..3).map(|_| Tables::memory()).collect();
    /// let two = || vec![("a", accounts[0].clone()), ("b", accounts[1].clone())];
    /// let three = || vec![("a", accounts[0].clone()), ("b", accounts[1].clone()), ("c", accounts[2].clone())];
    /// let db = Tables::pooled(two()).await?;
    /// # let _ = db;
    /// let report = Tables::reshard(two(), three(), &["Customers"]).await?;
    /// # let _ = report;
    /// let db = Tables::pooled(three()).await?; // the new pool opens
    /// assert!(Tables::pooled(two()).await.is_err()); // the old one no longer does
    /// # let _ = db;
    /// # Ok::<(), unified_tables::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn reshard<N: Into<String>>(
        old: Vec<(N, Tables)>,
        new: Vec<(N, Tables)>,
        tables: &[&str],
    ) -> Result<ReshardReport> {
        let (old, new) = (accounts(old), accounts(new));
        let old_names: Vec<String> = old.iter().map(|a| a.name.clone()).collect();
        let new_names: Vec<String> = new.iter().map(|a| a.name.clone()).collect();
        if new_names.len() <= old_names.len() || new_names[..old_names.len()] != old_names[..] {
            return Err(Error::config(format!(
                "a pool grows by adding accounts at its end: the new pool {new_names:?} must start with the old \
                 one {old_names:?} and be longer"
            )));
        }
        let mut report = ReshardReport::default();
        let recorded = read_descriptor(new[0].rows.as_ref(), &new_names[0]).await?;
        let switched = recorded.as_ref().is_some_and(|d| d.accounts == new_names);
        let new_rows: Vec<Arc<dyn Backend>> = new.iter().map(|a| a.rows.clone()).collect();
        if !switched {
            let old_rows: Vec<Arc<dyn Backend>> = old.iter().map(|a| a.rows.clone()).collect();
            let id = check_pool(&old_rows, &old_names).await?;
            for (position, account) in old.iter().enumerate() {
                for table in tables {
                    for group in strays(account, position, new.len(), table).await? {
                        let to = &new[account_of(&group[0].partition_key, new.len())];
                        let (rows, blobs) = copy_partition(account, to, table, group).await?;
                        report.partitions_moved += 1;
                        report.rows_copied += rows;
                        report.blobs_copied += blobs;
                    }
                }
            }
            for (position, account) in new_rows.iter().enumerate() {
                let descriptor = Descriptor {
                    id: id.clone(),
                    accounts: new_names.clone(),
                    position,
                };
                write_descriptor(account.as_ref(), &descriptor).await?;
            }
        } else {
            check_pool(&new_rows, &new_names).await?;
        }
        for (position, account) in old.iter().enumerate() {
            for table in tables {
                remove_moved(account, position, new.len(), table, &mut report).await?;
            }
        }
        Ok(report)
    }
}
