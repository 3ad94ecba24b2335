//! `Tables` over a pool of accounts, and the descriptor each account holds
//! so that a handle opened with another pool is refused.

use std::sync::Arc;

use super::{Blobs, Tables};
use crate::backend::blob::BlobBackend;
use crate::backend::pool::{PooledBackend, PooledBlobBackend};
use crate::backend::{Backend, WriteOp};
use crate::error::{Error, Result};
use crate::layout::{POOL_ACCOUNTS, POOL_ID, POOL_PARTITION, POOL_POSITION, POOL_ROW, POOL_SIZE, POOL_TABLE};
use crate::value::{Row, Value};

/// What one account records of the pool it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Descriptor {
    pub(crate) id: String,
    pub(crate) accounts: Vec<String>,
    pub(crate) position: usize,
}

impl Descriptor {
    fn to_row(&self) -> Row {
        Row::new(POOL_PARTITION, POOL_ROW)
            .with(POOL_ID, Value::String(self.id.clone()))
            .with(POOL_SIZE, Value::Int32(self.accounts.len() as i32))
            .with(
                POOL_ACCOUNTS,
                Value::String(serde_json::to_string(&self.accounts).expect("a list of names is JSON")),
            )
            .with(POOL_POSITION, Value::Int32(self.position as i32))
    }

    fn from_row(row: &Row, account: &str) -> Result<Descriptor> {
        let malformed = |what: &str| {
            Error::config(format!(
                "account {account:?} holds a malformed pool descriptor ({POOL_TABLE}, {what}); \
                 repair or delete that row before opening the pool"
            ))
        };
        let id = match row.get(POOL_ID) {
            Some(Value::String(id)) => id.clone(),
            _ => return Err(malformed(POOL_ID)),
        };
        let accounts: Vec<String> = match row.get(POOL_ACCOUNTS) {
            Some(Value::String(json)) => serde_json::from_str(json).map_err(|_| malformed(POOL_ACCOUNTS))?,
            _ => return Err(malformed(POOL_ACCOUNTS)),
        };
        let size = match row.get(POOL_SIZE) {
            Some(Value::Int32(n)) if *n >= 0 => *n as usize,
            _ => return Err(malformed(POOL_SIZE)),
        };
        let position = match row.get(POOL_POSITION) {
            Some(Value::Int32(n)) if *n >= 0 => *n as usize,
            _ => return Err(malformed(POOL_POSITION)),
        };
        if size != accounts.len() || position >= size {
            return Err(malformed(POOL_SIZE));
        }
        Ok(Descriptor { id, accounts, position })
    }
}

/// Reads one account's descriptor, if it has one.
pub(crate) async fn read_descriptor(backend: &dyn Backend, account: &str) -> Result<Option<Descriptor>> {
    backend.create_table(POOL_TABLE).await?;
    match backend.get(POOL_TABLE, POOL_PARTITION, POOL_ROW).await? {
        Some(row) => Descriptor::from_row(&row, account).map(Some),
        None => Ok(None),
    }
}

/// Writes one account's descriptor over whatever it held (resharding's switch).
pub(crate) async fn write_descriptor(backend: &dyn Backend, descriptor: &Descriptor) -> Result<()> {
    backend.create_table(POOL_TABLE).await?;
    let op = WriteOp::Upsert {
        row: descriptor.to_row(),
        mode: crate::backend::UpdateMode::Replace,
    };
    backend.execute(POOL_TABLE, op).await.map(drop)
}

/// Checks every account's descriptor against the pool `names` and records
/// it where it is missing. Returns the pool's id.
pub(crate) async fn check_pool(backends: &[Arc<dyn Backend>], names: &[String]) -> Result<String> {
    let mut found = Vec::with_capacity(backends.len());
    for (backend, name) in backends.iter().zip(names) {
        found.push(read_descriptor(backend.as_ref(), name).await?);
    }
    let mut id: Option<&str> = None;
    for (position, (descriptor, name)) in found.iter().zip(names).enumerate() {
        let Some(descriptor) = descriptor else { continue };
        if descriptor.accounts != names || descriptor.position != position {
            return Err(Error::config(format!(
                "account {name:?} belongs to a pool of {} accounts {:?} at position {}, and this handle was opened \
                 with {} accounts {names:?} (it at position {position}): open the pool with the accounts it \
                 records, in their order, or grow it with Tables::reshard",
                descriptor.accounts.len(),
                descriptor.accounts,
                descriptor.position,
                names.len(),
            )));
        }
        match id {
            Some(id) if id != descriptor.id => {
                return Err(Error::config(format!(
                    "the accounts {names:?} record two different pools (ids {id} and {}): they were set up as \
                     separate pools; open each pool with its own accounts",
                    descriptor.id
                )))
            }
            _ => id = Some(&descriptor.id),
        }
    }
    let id = id.map_or_else(|| crate::value::hex(&rand::random::<[u8; 16]>()), str::to_owned);
    for (position, (descriptor, backend)) in found.iter().zip(backends).enumerate() {
        if descriptor.is_none() {
            let mine = Descriptor {
                id: id.clone(),
                accounts: names.to_vec(),
                position,
            };
            let op = WriteOp::Insert(mine.to_row());
            if let Err(e) = backend.execute(POOL_TABLE, op).await {
                // Another handle recorded it first: it must agree.
                if e.service_code().is_none_or(|(status, _)| status != 409) {
                    return Err(e);
                }
                let theirs = read_descriptor(backend.as_ref(), &names[position]).await?;
                if theirs.as_ref() != Some(&mine) {
                    return Err(Error::config(format!(
                        "account {:?} was given another pool's descriptor while this handle opened the pool {names:?}; \
                         open it again",
                        names[position]
                    )));
                }
            }
        }
    }
    Ok(id)
}

impl Tables {
    /// One handle over a fixed, ordered pool of accounts: each partition
    /// lives in one account, chosen by
    /// [`account_of`](crate::backend::pool::account_of) (jump consistent hash
    /// of the partition key), with its rows and its large values' blobs.
    ///
    /// Each account is given as a name and a handle to it (from
    /// [`Tables::connect`], [`Tables::memory`], …). The first open records
    /// the pool in every account (a row of the table
    /// [`POOL_TABLE`](crate::layout::POOL_TABLE): the pool's id, its size, the
    /// names in order and the account's position); a later open with other
    /// names, another order or another size is [`Error::Config`] naming the
    /// difference, so a handle cannot read or write a partition in the wrong
    /// account. Grow a pool with [`Tables::reshard`].
    ///
    /// The pooled handle takes its store options, retry policy and blob
    /// options from the first account's handle, and has no read cache (add one with
    /// [`Tables::with_cache`]). Large values need a blob store in every
    /// account or in none.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use unified_tables::Tables;
    /// let (a, b, c) = (Tables::memory(), Tables::memory(), Tables::memory());
    /// let db = Tables::pooled(vec![("a", a.clone()), ("b", b.clone()), ("c", c.clone())]).await?;
    /// # let _ = db;
    /// // The same accounts in another order are refused.
    /// let err = Tables::pooled(vec![("b", b), ("a", a), ("c", c)]).await.unwrap_err();
    /// assert!(err.to_string().contains("position"), "{err}");
    /// # Ok::<(), unified_tables::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn pooled<N: Into<String>>(accounts: Vec<(N, Tables)>) -> Result<Tables> {
        let (names, handles): (Vec<String>, Vec<Tables>) = accounts.into_iter().map(|(n, t)| (n.into(), t)).unzip();
        let Some(first) = handles.first() else {
            return Err(Error::config(
                "Tables::pooled needs at least one account (a name and a handle each)",
            ));
        };
        let mut distinct = names.clone();
        distinct.sort();
        distinct.dedup();
        if distinct.len() != names.len() || names.iter().any(String::is_empty) {
            return Err(Error::config(format!(
                "the accounts of a pool need distinct, non-empty names; got {names:?}"
            )));
        }
        let backends: Vec<Arc<dyn Backend>> = handles.iter().map(|t| t.raw.clone()).collect();
        let id = check_pool(&backends, &names).await?;
        let blobs = match handles.iter().filter(|t| t.blobs.is_some()).count() {
            0 => None,
            n if n == handles.len() => {
                let accounts: Vec<Arc<dyn BlobBackend>> = handles
                    .iter()
                    .map(|t| t.blobs.as_ref().expect("counted").raw.clone())
                    .collect();
                Some(Arc::new(Blobs::new(
                    Arc::new(PooledBlobBackend::new(accounts)?),
                    first.blobs.as_ref().expect("counted").options.clone(),
                )))
            }
            _ => {
                return Err(Error::config(
                    "some accounts of the pool have a blob store and some do not: give every account one \
                     (Tables::with_blobs) or none",
                ))
            }
        };
        let mut pooled = Tables::from_arc(Arc::new(PooledBackend::new(backends)?));
        pooled.options = first.options.clone();
        pooled.retry = first.retry;
        pooled.blobs = blobs;
        pooled.scope = format!("pool:{id}").into();
        Ok(pooled)
    }
}
