//! The descriptor each account of a pool holds: the pool's id, its accounts
//! in order, the account's position and the pool's epoch. Account 0's
//! descriptor is the pool's authority: a reshard switches the pool by
//! rewriting it, in one request, and a handle re-checks it to find out
//! that its pool is stale.

use crate::backend::{Backend, IfMatch, UpdateMode, WriteOp};
use crate::error::{Error, Result};
use crate::layout::{
    POOL_ACCOUNTS, POOL_EPOCH, POOL_GROWING_TO, POOL_GROWN_FROM, POOL_ID, POOL_PARTITION, POOL_POSITION, POOL_ROW,
    POOL_SIZE, POOL_TABLE,
};
use crate::value::{Row, Value};

/// What one account records of the pool it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Descriptor {
    /// The pool's id, shared by its accounts.
    pub(crate) id: String,
    /// The names of the pool's accounts, in pool order.
    pub(crate) accounts: Vec<String>,
    /// This account's position among them.
    pub(crate) position: usize,
    /// The pool's epoch when this descriptor was written.
    pub(crate) epoch: u64,
    /// The accounts the pool is growing to while a reshard copies (account 0 only).
    pub(crate) growing_to: Option<Vec<String>>,
    /// The accounts the pool grew from, from a reshard's switch until the
    /// moved partitions are removed from them (account 0 only).
    pub(crate) grown_from: Option<Vec<String>>,
}

fn names_json(names: &[String]) -> Value {
    Value::String(serde_json::to_string(names).expect("a list of names is JSON"))
}

impl Descriptor {
    pub(crate) fn to_row(&self) -> Row {
        let row = Row::new(POOL_PARTITION, POOL_ROW)
            .with(POOL_ID, Value::String(self.id.clone()))
            .with(POOL_SIZE, Value::Int32(self.accounts.len() as i32))
            .with(POOL_ACCOUNTS, names_json(&self.accounts))
            .with(POOL_POSITION, Value::Int32(self.position as i32))
            .with(POOL_EPOCH, Value::Int64(self.epoch as i64));
        let row = match &self.growing_to {
            Some(to) => row.with(POOL_GROWING_TO, names_json(to)),
            None => row,
        };
        match &self.grown_from {
            Some(from) => row.with(POOL_GROWN_FROM, names_json(from)),
            None => row,
        }
    }

    pub(crate) fn from_row(row: &Row, account: &str) -> Result<Descriptor> {
        let malformed = |what: &str| {
            Error::config(format!(
                "account {account:?} holds a malformed pool descriptor ({POOL_TABLE}, {what}); \
                 repair or delete that row before opening the pool"
            ))
        };
        let names = |column: &str| -> Result<Option<Vec<String>>> {
            match row.get(column) {
                None => Ok(None),
                Some(Value::String(json)) => serde_json::from_str(json).map(Some).map_err(|_| malformed(column)),
                Some(_) => Err(malformed(column)),
            }
        };
        let id = match row.get(POOL_ID) {
            Some(Value::String(id)) => id.clone(),
            _ => return Err(malformed(POOL_ID)),
        };
        let accounts = names(POOL_ACCOUNTS)?.ok_or_else(|| malformed(POOL_ACCOUNTS))?;
        let size = match row.get(POOL_SIZE) {
            Some(Value::Int32(n)) if *n >= 0 => *n as usize,
            _ => return Err(malformed(POOL_SIZE)),
        };
        let position = match row.get(POOL_POSITION) {
            Some(Value::Int32(n)) if *n >= 0 => *n as usize,
            _ => return Err(malformed(POOL_POSITION)),
        };
        let epoch = match row.get(POOL_EPOCH) {
            None => 0,
            Some(Value::Int64(n)) if *n >= 0 => *n as u64,
            Some(_) => return Err(malformed(POOL_EPOCH)),
        };
        if size != accounts.len() || position >= size {
            return Err(malformed(POOL_SIZE));
        }
        let growing_to = names(POOL_GROWING_TO)?;
        if growing_to
            .as_ref()
            .is_some_and(|to| to.len() <= accounts.len() || to[..accounts.len()] != accounts[..])
        {
            return Err(malformed(POOL_GROWING_TO));
        }
        let grown_from = names(POOL_GROWN_FROM)?;
        if grown_from
            .as_ref()
            .is_some_and(|from| from.is_empty() || from.len() >= accounts.len() || accounts[..from.len()] != from[..])
        {
            return Err(malformed(POOL_GROWN_FROM));
        }
        Ok(Descriptor {
            id,
            accounts,
            position,
            epoch,
            growing_to,
            grown_from,
        })
    }

    /// This pool's descriptor for the account at `position`.
    pub(crate) fn at(&self, position: usize) -> Descriptor {
        Descriptor {
            position,
            growing_to: None,
            grown_from: None,
            ..self.clone()
        }
    }

    /// A write of this descriptor over the version `stored` names (its
    /// condition as [`read_descriptor`] gives it), or an insert where there is none.
    pub(crate) fn write_op(&self, stored: Option<&IfMatch>) -> WriteOp {
        match stored {
            Some(condition) => WriteOp::Update {
                row: self.to_row(),
                mode: UpdateMode::Replace,
                condition: condition.clone(),
            },
            None => WriteOp::Insert(self.to_row()),
        }
    }
}

/// One account's descriptor, if it has one, with the condition that
/// replaces this version of it only. The table must exist.
pub(crate) async fn read_descriptor(backend: &dyn Backend, account: &str) -> Result<Option<(Descriptor, IfMatch)>> {
    match backend.get(POOL_TABLE, POOL_PARTITION, POOL_ROW).await? {
        Some(row) => {
            let condition = row.etag.clone().map_or(IfMatch::Any, IfMatch::ETag);
            Descriptor::from_row(&row, account).map(|d| Some((d, condition)))
        }
        None => Ok(None),
    }
}

/// Writes one account's descriptor over whatever it held.
pub(crate) async fn write_descriptor(backend: &dyn Backend, descriptor: &Descriptor) -> Result<()> {
    let op = WriteOp::Upsert {
        row: descriptor.to_row(),
        mode: UpdateMode::Replace,
    };
    backend.execute(POOL_TABLE, op).await.map(drop)
}
