//! A table's moving partitions: copied into their new accounts, repairing
//! whatever an earlier run left there, and removed from their old accounts
//! once the pool is switched. Rows stream through a page at a time, and go
//! out a transaction at a time.

use std::cmp::Ordering;
use std::mem;

use super::scan::{key_order, send, MovingRows, RowScan};
use super::{Job, ReshardReport};
use crate::backend::pack::{op_weight, TRANSACTION_BODY_BUDGET};
use crate::backend::retry::RetryPolicy;
use crate::backend::{Backend, IfMatch, UpdateMode, WriteOp};
use crate::error::Result;
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
        if other_partition || self.ops.len() == MAX_TRANSACTION_OPS || self.weight + weight > TRANSACTION_BODY_BUDGET {
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

/// Deletes the moved rows of `table` from their old accounts, each on the
/// ETag it was read with.
pub(super) async fn remove(job: &Job, table: &str, report: &mut ReshardReport) -> Result<()> {
    let old = &job.rows[..job.growth.old];
    let mut moving = MovingRows::new(old, table, &job.policy, job.growth);
    let mut writers: Vec<Writer> = old
        .iter()
        .map(|a| Writer::new(a.as_ref(), table, &job.policy))
        .collect();
    while let Some((at, _, row)) = moving.next().await? {
        writers[at].push(delete_of(&row)).await?;
        report.rows_removed += 1;
    }
    for writer in &mut writers {
        writer.flush().await?;
    }
    Ok(())
}
