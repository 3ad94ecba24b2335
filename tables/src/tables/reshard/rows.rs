//! A table's moving partitions: copied into their new accounts, repairing
//! whatever an earlier run left there, and removed from their old accounts
//! once the pool is switched. Rows stream through a page at a time, and go
//! out a transaction at a time.

use std::cmp::Ordering;
use std::mem;

use super::scan::{key_order, send, MovingRows, RowScan};
use super::{Job, ReshardReport};
use crate::backend::pack::op_weight;
use crate::backend::retry::RetryPolicy;
use crate::backend::{Backend, IfMatch, UpdateMode, WriteOp};
use crate::error::{ErrorKind, Result};
use crate::service::MAX_TRANSACTION_OPS;
use crate::value::Row;

/// The writes to one table of one account, one partition's transaction at a time.
struct Writer<'a> {
    account: &'a dyn Backend,
    table: &'a str,
    policy: &'a RetryPolicy,
    ops: Vec<WriteOp>,
    weight: usize,
}

impl<'a> Writer<'a> {
    fn new(account: &'a dyn Backend, table: &'a str, policy: &'a RetryPolicy) -> Writer<'a> {
        Writer {
            account,
            table,
            policy,
            ops: Vec::new(),
            weight: 0,
        }
    }

    async fn push(&mut self, op: WriteOp) -> Result<()> {
        let weight = op_weight(&op);
        let other_partition = self.ops.first().is_some_and(|first| first.keys().0 != op.keys().0);
        if other_partition
            || self.ops.len() == MAX_TRANSACTION_OPS
            || self.weight + weight > self.account.profile().transaction_body_budget()
        {
            self.flush().await?;
        }
        self.ops.push(op);
        self.weight += weight;
        Ok(())
    }

    async fn flush(&mut self) -> Result<()> {
        if self.ops.is_empty() {
            return Ok(());
        }
        let ops = mem::take(&mut self.ops);
        self.weight = 0;
        // Upserts do the same when sent twice; a delete on an ETag does not.
        let repeatable = ops.iter().all(|op| matches!(op, WriteOp::Upsert { .. }));
        send(self.policy, repeatable, || {
            self.account.transaction(self.table, ops.clone())
        })
        .await
        .map(drop)
    }
}

fn copy_of(row: Row) -> WriteOp {
    WriteOp::Upsert {
        row: Row {
            etag: None,
            timestamp: None,
            ..row
        },
        mode: UpdateMode::Replace,
    }
}

fn delete_of(row: &Row) -> WriteOp {
    WriteOp::Delete {
        partition_key: row.partition_key.clone(),
        row_key: row.row_key.clone(),
        condition: row.etag.clone().map_or(IfMatch::Any, IfMatch::ETag),
    }
}

/// Makes each new account's copy of `table` hold exactly the moving rows
/// the old accounts hold: rows missing or different are written, rows the
/// sources no longer have are deleted on their ETag.
pub(super) async fn copy(job: &Job, table: &str, report: &mut ReshardReport) -> Result<()> {
    let old = job.growth.old;
    let added = &job.rows[old..];
    for account in added {
        send(&job.policy, true, || account.create_table(table)).await?;
    }
    let mut moving = MovingRows::new(&job.rows[..old], table, &job.policy, job.growth);
    let mut targets: Vec<RowScan> = added
        .iter()
        .map(|a| RowScan::new(a.as_ref(), table, &job.policy))
        .collect();
    let mut writers: Vec<Writer> = added
        .iter()
        .map(|a| Writer::new(a.as_ref(), table, &job.policy))
        .collect();
    let mut partition: Option<String> = None;
    while let Some((_, to, row)) = moving.next().await? {
        let t = to - old;
        if partition.as_deref() != Some(row.partition_key.as_str()) {
            report.partitions_moved += 1;
            partition = Some(row.partition_key.clone());
        }
        // The copy's rows before this one are rows the sources no longer have.
        while let Some(there) = targets[t].peek().await? {
            if key_order(there, &row) != Ordering::Less {
                break;
            }
            let extra = targets[t].next().await?.expect("peeked");
            writers[t].push(delete_of(&extra)).await?;
            report.rows_repaired += 1;
        }
        let copied = match targets[t].peek().await? {
            Some(there) if key_order(there, &row) == Ordering::Equal => {
                let there = targets[t].next().await?.expect("peeked");
                there.properties == row.properties
            }
            _ => false,
        };
        if !copied {
            writers[t].push(copy_of(row)).await?;
            report.rows_copied += 1;
        }
    }
    for (target, writer) in targets.iter_mut().zip(writers.iter_mut()) {
        while let Some(extra) = target.next().await? {
            writer.push(delete_of(&extra)).await?;
            report.rows_repaired += 1;
        }
        writer.flush().await?;
    }
    Ok(())
}

/// The deletes of moved rows from one old account, one partition's
/// transaction at a time, each row with the account its copy is in.
struct Removal<'a> {
    at: usize,
    rows: Vec<(Row, usize)>,
    weight: usize,
    table: &'a str,
    /// The request-body budget of one transaction of the old accounts.
    budget: usize,
}

impl Removal<'_> {
    /// Whether `row` must wait for a flush: it is of another partition, or
    /// the transaction is full.
    fn full_before(&self, row: &Row) -> bool {
        let other_partition = self
            .rows
            .first()
            .is_some_and(|(first, _)| first.partition_key != row.partition_key);
        other_partition
            || self.rows.len() == MAX_TRANSACTION_OPS
            || self.weight + op_weight(&delete_of(row)) > self.budget
    }

    fn add(&mut self, row: Row, to: usize) {
        self.weight += op_weight(&delete_of(&row));
        self.rows.push((row, to));
    }

    /// Deletes the rows in one transaction, each on the ETag of the version
    /// its copy holds; when one of them changed since it was read (412) or
    /// is gone (404), nothing was deleted, and each is removed alone.
    async fn flush(&mut self, job: &Job, report: &mut ReshardReport) -> Result<()> {
        if self.rows.is_empty() {
            return Ok(());
        }
        let rows = mem::take(&mut self.rows);
        self.weight = 0;
        let account = job.rows[self.at].as_ref();
        let ops: Vec<WriteOp> = rows.iter().map(|(row, _)| delete_of(row)).collect();
        match send(&job.policy, false, || account.transaction(self.table, ops.clone())).await {
            Ok(_) => {
                report.rows_removed += rows.len();
                Ok(())
            }
            Err(e) if matches!(e.kind(), ErrorKind::PreconditionFailed | ErrorKind::NotFound) => {
                for (row, to) in rows {
                    remove_one(job, self.table, self.at, to, row, report).await?;
                }
                Ok(())
            }
            Err(e) => Err(e),
        }
    }
}

/// Deletes one moved row from its old account `at` on the ETag of the
/// version its copy in account `to` holds: a row that changed since it was
/// read is read again and copied again first.
async fn remove_one(
    job: &Job,
    table: &str,
    at: usize,
    to: usize,
    mut row: Row,
    report: &mut ReshardReport,
) -> Result<()> {
    let (source, target) = (job.rows[at].as_ref(), job.rows[to].as_ref());
    loop {
        match send(&job.policy, false, || source.execute(table, delete_of(&row))).await {
            Ok(_) => {
                report.rows_removed += 1;
                return Ok(());
            }
            // Deleted since it was read: nothing is left to remove.
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e) if e.kind() == ErrorKind::PreconditionFailed => {
                let now = send(&job.policy, true, || {
                    source.get(table, &row.partition_key, &row.row_key)
                })
                .await?;
                let Some(now) = now else { return Ok(()) };
                send(&job.policy, true, || target.execute(table, copy_of(now.clone()))).await?;
                report.rows_recopied += 1;
                row = now;
            }
            Err(e) => return Err(e),
        }
    }
}

async fn flush_all(writers: &mut [Writer<'_>]) -> Result<()> {
    for writer in writers {
        writer.flush().await?;
    }
    Ok(())
}

/// Deletes the moved rows of `table` from their old accounts, each on the
/// ETag of the version its copy holds. The moved partitions are frozen
/// until the job ends, so only the job writes their copies; a row that
/// differs from its copy changed after the copy was made (a write admitted
/// before the freeze that landed late) and is copied again before it is
/// deleted, and one that changes while it is deleted is read and copied
/// again. No version the copy lacks is ever deleted.
pub(super) async fn remove(job: &Job, table: &str, report: &mut ReshardReport) -> Result<()> {
    let old = job.growth.old;
    let added = &job.rows[old..];
    let mut moving = MovingRows::new(&job.rows[..old], table, &job.policy, job.growth);
    let mut copies: Vec<RowScan> = added
        .iter()
        .map(|a| RowScan::new(a.as_ref(), table, &job.policy))
        .collect();
    let mut removals: Vec<Removal> = (0..old)
        .map(|at| Removal {
            at,
            rows: Vec::new(),
            weight: 0,
            table,
            budget: job.rows[at].profile().transaction_body_budget(),
        })
        .collect();
    let mut copier: Vec<Writer> = added
        .iter()
        .map(|a| Writer::new(a.as_ref(), table, &job.policy))
        .collect();
    while let Some((at, to, row)) = moving.next().await? {
        let t = to - old;
        while let Some(there) = copies[t].peek().await? {
            if key_order(there, &row) != Ordering::Less {
                break;
            }
            copies[t].next().await?;
        }
        let copied = match copies[t].peek().await? {
            Some(there) if key_order(there, &row) == Ordering::Equal => {
                let there = copies[t].next().await?.expect("peeked");
                there.properties == row.properties
            }
            _ => false,
        };
        if removals[at].full_before(&row) {
            flush_all(&mut copier).await?;
            removals[at].flush(job, report).await?;
        }
        if !copied {
            // Changed after its copy: copied again (the copies go out
            // before the deletes that rely on them).
            copier[t].push(copy_of(row.clone())).await?;
            report.rows_recopied += 1;
        }
        removals[at].add(row, to);
    }
    flush_all(&mut copier).await?;
    for removal in &mut removals {
        removal.flush(job, report).await?;
    }
    Ok(())
}
