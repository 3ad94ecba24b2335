//! The record of a reshard under way, kept beside account 0's descriptor
//! (one partition, so that the job's phase and the descriptor change in one
//! transaction).

use crate::backend::pool::descriptor::Descriptor;
use crate::backend::{Backend, IfMatch, UpdateMode, WriteOp};
use crate::error::{Error, ErrorKind, Result};
use crate::layout::{
    POOL_JOB_CONTAINERS, POOL_JOB_FROM, POOL_JOB_ID, POOL_JOB_PHASE, POOL_JOB_ROW, POOL_JOB_TABLES, POOL_JOB_TO,
    POOL_PARTITION, POOL_PHASE_COPY, POOL_PHASE_REMOVE, POOL_TABLE,
};
use crate::value::{Guid, Row, Value};

/// Where a job stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// The moving partitions are frozen and being copied; the old pool opens.
    Copy,
    /// The pool is switched; the moved partitions are being removed from
    /// their old accounts.
    Remove,
}

/// What a job records of itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Record {
    pub(super) id: String,
    pub(super) phase: Phase,
    pub(super) from: Vec<String>,
    pub(super) to: Vec<String>,
    pub(super) tables: Vec<String>,
    pub(super) containers: Vec<String>,
}

fn json(names: &[String]) -> Value {
    Value::String(serde_json::to_string(names).expect("a list of names is JSON"))
}

impl Record {
    /// A new job, in its copy phase.
    pub(super) fn new(from: Vec<String>, to: Vec<String>, tables: Vec<String>, containers: Vec<String>) -> Record {
        Record {
            id: crate::value::hex(&rand::random::<[u8; 16]>()),
            phase: Phase::Copy,
            from,
            to,
            tables,
            containers,
        }
    }

    /// The lease the job holds on the blobs it moves: the same in every run
    /// of the job, so a run takes over the leases of the one before.
    pub(super) fn lease(&self) -> Guid {
        let mut bytes = [0u8; 16];
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = self
                .id
                .get(2 * i..2 * i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .unwrap_or(0);
        }
        bytes[6] = (bytes[6] & 0x0f) | 0x40;
        bytes[8] = (bytes[8] & 0x3f) | 0x80;
        Guid(bytes)
    }

    fn to_row(&self) -> Row {
        let phase = match self.phase {
            Phase::Copy => POOL_PHASE_COPY,
            Phase::Remove => POOL_PHASE_REMOVE,
        };
        Row::new(POOL_PARTITION, POOL_JOB_ROW)
            .with(POOL_JOB_ID, Value::String(self.id.clone()))
            .with(POOL_JOB_PHASE, Value::String(phase.into()))
            .with(POOL_JOB_FROM, json(&self.from))
            .with(POOL_JOB_TO, json(&self.to))
            .with(POOL_JOB_TABLES, json(&self.tables))
            .with(POOL_JOB_CONTAINERS, json(&self.containers))
    }

    fn from_row(row: &Row, account: &str) -> Result<Record> {
        let malformed = |column: &str| {
            Error::config(format!(
                "account {account:?} holds a malformed reshard record ({POOL_TABLE}, row {POOL_JOB_ROW}, column \
                 {column}); it was not written by Tables::reshard"
            ))
        };
        let text = |column: &str| match row.get(column) {
            Some(Value::String(s)) => Ok(s.clone()),
            _ => Err(malformed(column)),
        };
        let names = |column: &str| -> Result<Vec<String>> {
            serde_json::from_str(&text(column)?).map_err(|_| malformed(column))
        };
        let phase = match text(POOL_JOB_PHASE)?.as_str() {
            POOL_PHASE_COPY => Phase::Copy,
            POOL_PHASE_REMOVE => Phase::Remove,
            _ => return Err(malformed(POOL_JOB_PHASE)),
        };
        Ok(Record {
            id: text(POOL_JOB_ID)?,
            phase,
            from: names(POOL_JOB_FROM)?,
            to: names(POOL_JOB_TO)?,
            tables: names(POOL_JOB_TABLES)?,
            containers: names(POOL_JOB_CONTAINERS)?,
        })
    }

    /// Writes the record over whatever was there.
    pub(super) fn write_op(&self) -> WriteOp {
        WriteOp::Upsert {
            row: self.to_row(),
            mode: UpdateMode::Replace,
        }
    }
}

/// The record of the job under way in `account` (account 0), if any.
pub(super) async fn read_record(account: &dyn Backend, name: &str) -> Result<Option<Record>> {
    match account.get(POOL_TABLE, POOL_PARTITION, POOL_JOB_ROW).await? {
        Some(row) => Record::from_row(&row, name).map(Some),
        None => Ok(None),
    }
}

/// Deletes the record: the job is done (a record already gone is fine).
pub(super) async fn delete_record(account: &dyn Backend) -> Result<()> {
    let op = WriteOp::Delete {
        partition_key: POOL_PARTITION.into(),
        row_key: POOL_JOB_ROW.into(),
        condition: IfMatch::Any,
    };
    match account.execute(POOL_TABLE, op).await {
        Err(e) if e.kind() != ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// One transaction in account 0: the descriptor `descriptor` over the
/// version `stored`, and the record `record` (the freeze and the switch).
pub(super) async fn step(
    account: &dyn Backend,
    descriptor: &Descriptor,
    stored: &IfMatch,
    record: &Record,
) -> Result<()> {
    let ops = vec![descriptor.write_op(Some(stored)), record.write_op()];
    account.transaction(POOL_TABLE, ops).await.map(drop)
}

/// One transaction in account 0: the descriptor `descriptor` over the
/// version `stored`, and the record deleted (the end of the job).
pub(super) async fn finish(account: &dyn Backend, descriptor: &Descriptor, stored: &IfMatch) -> Result<()> {
    let ops = vec![
        descriptor.write_op(Some(stored)),
        WriteOp::Delete {
            partition_key: POOL_PARTITION.into(),
            row_key: POOL_JOB_ROW.into(),
            condition: IfMatch::Any,
        },
    ];
    account.transaction(POOL_TABLE, ops).await.map(drop)
}
