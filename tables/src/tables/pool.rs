//! `Tables` over a pool of accounts, and the check of the descriptor each
//! account holds, so that a handle opened with another pool is refused.

use std::sync::Arc;
use std::time::Duration;

use super::{traced_blobs, Tables};
use crate::backend::blob::BlobBackend;
use crate::backend::pool::descriptor::{read_descriptor, Descriptor};
use crate::backend::pool::{PoolControl, PooledBackend, PooledBlobBackend, DEFAULT_CHECK_INTERVAL};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::layout::POOL_TABLE;

/// How a pooled handle watches its pool (see [`Tables::pooled_with`]).
///
/// ```
/// use std::time::Duration;
/// use unified_tables::PoolOptions;
/// let options = PoolOptions::new().check_interval(Duration::from_secs(1));
/// assert_eq!(options.interval(), Duration::from_secs(1));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolOptions {
    check_interval: Duration,
}

impl Default for PoolOptions {
    fn default() -> PoolOptions {
        PoolOptions {
            check_interval: DEFAULT_CHECK_INTERVAL,
        }
    }
}

impl PoolOptions {
    /// The defaults: the descriptor re-checked every
    /// [`DEFAULT_CHECK_INTERVAL`] (2 s).
    pub fn new() -> PoolOptions {
        PoolOptions::default()
    }

    /// How long a write may go without re-reading account 0's descriptor:
    /// the first write after this interval reads it (one point read, shared
    /// by the writes that wait for it), and the writes within it trust the
    /// last read. Zero reads it before every write. A reshard's wait after
    /// freezing the moving partitions covers this interval and a write in
    /// flight (see
    /// [`ReshardOptions::fence_wait`](crate::ReshardOptions::fence_wait)):
    /// raise that wait with it.
    pub fn check_interval(mut self, interval: Duration) -> PoolOptions {
        self.check_interval = interval;
        self
    }

    /// The check interval.
    pub fn interval(&self) -> Duration {
        self.check_interval
    }
}

fn wrong_pool(name: &str, found: &Descriptor, names: &[String], position: usize, authority: &Descriptor) -> Error {
    let under_way = match &authority.growing_to {
        Some(to) if to == names => format!(
            " (a reshard growing the pool {:?} to these accounts is under way: run Tables::reshard again to finish it)",
            authority.accounts
        ),
        _ => String::new(),
    };
    Error::config(format!(
        "account {name:?} belongs to a pool of {} accounts {:?} at position {} (epoch {}), and this handle was \
         opened with {} accounts {names:?} (it at position {position}): open the pool with the accounts it \
         records, in their order, or grow it with Tables::reshard{under_way}",
        found.accounts.len(),
        found.accounts,
        found.position,
        found.epoch,
        names.len(),
    ))
}

/// Checks every account's descriptor against the pool `names`, records it
/// where it is missing and brings up to date the ones an interrupted switch
/// left behind. Returns the pool's descriptor as account 0 holds it (the
/// pool's authority: a reshard switches the pool there, in one request).
pub(crate) async fn check_pool(backends: &[Arc<dyn Backend>], names: &[String]) -> Result<Descriptor> {
    let mut found = Vec::with_capacity(backends.len());
    for (backend, name) in backends.iter().zip(names) {
        backend.create_table(POOL_TABLE).await?;
        found.push(read_descriptor(backend.as_ref(), name).await?);
    }
    // Account 0's descriptor; without one (lost, or a pool recorded before
    // it), the newest any account holds.
    let authority: Option<Descriptor> = match &found[0] {
        Some((d, _)) => Some(d.clone()),
        None => found
            .iter()
            .flatten()
            .map(|(d, _)| d)
            .max_by_key(|d| d.epoch)
            .map(|d| d.at(0)),
    };
    if let Some(authority) = &authority {
        for (position, (stored, name)) in found.iter().zip(names).enumerate() {
            let Some((d, _)) = stored else { continue };
            if d.id != authority.id {
                return Err(Error::config(format!(
                    "the accounts {names:?} record two different pools (ids {} and {}): they were set up as \
                     separate pools; open each pool with its own accounts",
                    authority.id, d.id
                )));
            }
            if d.epoch > authority.epoch {
                return Err(Error::config(format!(
                    "the pool changed while this handle opened it (account {name:?} records epoch {}, account \
                     {:?} epoch {}): open it again",
                    d.epoch, names[0], authority.epoch
                )));
            }
            // An older epoch: a switch to this pool stopped before it reached this account.
            if d.epoch == authority.epoch && (d.accounts != names || d.position != position) {
                return Err(wrong_pool(name, d, names, position, authority));
            }
        }
    }
    let authority = authority.unwrap_or_else(|| Descriptor {
        id: crate::value::hex(&rand::random::<[u8; 16]>()),
        accounts: names.to_vec(),
        position: 0,
        epoch: 1,
        growing_to: None,
        grown_from: None,
    });
    for (position, (stored, backend)) in found.iter().zip(backends).enumerate() {
        let mine = match position {
            0 => authority.clone(),
            _ => authority.at(position),
        };
        let condition = match stored {
            Some((d, _)) if d.epoch == authority.epoch => continue,
            Some((_, condition)) => Some(condition),
            None => None,
        };
        if let Err(e) = backend.execute(POOL_TABLE, mine.write_op(condition)).await {
            // Another handle (or the reshard) wrote it first: it must agree.
            if e.service_code()
                .is_none_or(|(status, _)| status != 409 && status != 412)
            {
                return Err(e);
            }
            let theirs = read_descriptor(backend.as_ref(), &names[position]).await?;
            if theirs.as_ref().map(|(d, _)| d) != Some(&mine) {
                return Err(Error::config(format!(
                    "account {:?} was given another descriptor while this handle opened the pool {names:?}; \
                     open it again",
                    names[position]
                )));
            }
        }
    }
    Ok(authority)
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
        Tables::pooled_with(accounts, PoolOptions::default()).await
    }

    /// [`Tables::pooled`] with the given [`PoolOptions`].
    ///
    /// The handle keeps the epoch of the pool it opened. Before a write (of
    /// a row, a blob or a lease) it re-reads account 0's descriptor when the
    /// last read is older than the [check interval](PoolOptions::check_interval),
    /// and refuses the write with [`Error::Config`], naming both epochs, once
    /// the pool has been grown by [`Tables::reshard`] (or, while a reshard
    /// copies, a write to a partition that moves). Reads are not checked.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::time::Duration;
    /// use unified_tables::{PoolOptions, Tables};
    /// let accounts = vec![("a", Tables::memory()), ("b", Tables::memory())];
    /// let db = Tables::pooled_with(accounts, PoolOptions::new().check_interval(Duration::from_millis(500))).await?;
    /// # let _ = db;
    /// # Ok::<(), unified_tables::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn pooled_with<N: Into<String>>(accounts: Vec<(N, Tables)>, options: PoolOptions) -> Result<Tables> {
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
        let blob_accounts = match handles.iter().filter(|t| t.shared.blobs.is_some()).count() {
            0 => None,
            n if n == handles.len() => Some(
                handles
                    .iter()
                    .map(|t| t.shared.blobs.as_ref().expect("counted").raw.clone())
                    .collect::<Vec<Arc<dyn BlobBackend>>>(),
            ),
            _ => {
                return Err(Error::config(
                    "some accounts of the pool have a blob store and some do not: give every account one \
                     (Tables::with_blobs) or none",
                ))
            }
        };
        let backends: Vec<Arc<dyn Backend>> = handles.iter().map(|t| t.shared.raw.clone()).collect();
        let authority = check_pool(&backends, &names).await?;
        let control = Arc::new(PoolControl::new(
            backends[0].clone(),
            names[0].clone(),
            authority,
            options.check_interval,
        ));
        let blobs = match blob_accounts {
            Some(accounts) => Some(Arc::new(traced_blobs(
                Arc::new(PooledBlobBackend::new(accounts)?.with_control(control.clone())),
                first.shared.blobs.as_ref().expect("counted").options.clone(),
            ))),
            None => None,
        };
        let id = control.id().to_owned();
        let mut pooled = Tables::from_arc(Arc::new(PooledBackend::new(backends)?.with_control(control)));
        pooled.shared.options = first.shared.options.clone();
        pooled.shared.retry = first.shared.retry;
        pooled.shared.blobs = blobs;
        pooled.shared.scope = format!("pool:{id}").into();
        Ok(pooled)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::backend::counting::CountingBackend;
    use crate::backend::memory::{MemoryBackend, MemoryBlobBackend};
    use crate::backend::pool::account_of;
    use crate::backend::{UpdateMode, WriteOp};
    use crate::error::ErrorKind;
    use crate::value::Row;
    use crate::{BlobOptions, ReshardOptions};

    /// A handle re-reads account 0's descriptor once per interval, with one
    /// point read however many writes wait for it: a write within the
    /// interval after the switch still passes (the window the interval
    /// leaves), the first one after it is refused, naming both epochs.
    #[tokio::test(start_paused = true)]
    async fn the_fence_reads_the_descriptor_once_per_interval() {
        let counters: Vec<CountingBackend<Arc<MemoryBackend>>> = (0..3)
            .map(|_| CountingBackend::new(Arc::new(MemoryBackend::new())))
            .collect();
        let handles: Vec<Tables> = counters
            .iter()
            .map(|c| Tables::with_backend(c.clone()).with_blobs(MemoryBlobBackend::new(), BlobOptions::default()))
            .collect();
        let pool =
            |n: usize| -> Vec<(String, Tables)> { (0..n).map(|i| (format!("a{i}"), handles[i].clone())).collect() };
        let interval = Duration::from_secs(10);
        let old = Tables::pooled_with(pool(2), PoolOptions::new().check_interval(interval))
            .await
            .unwrap();
        old.shared.backend.create_table("T").await.unwrap();
        let staying = (0..)
            .map(|i| format!("p{i}"))
            .find(|k| account_of(k, 2) == account_of(k, 3))
            .unwrap();
        let write = |row_key: String| {
            let backend = old.shared.backend.clone();
            let op = WriteOp::Upsert {
                row: Row::new(staying.clone(), row_key),
                mode: UpdateMode::Replace,
            };
            async move { backend.execute("T", op).await }
        };
        write("0".into()).await.unwrap();
        tokio::time::advance(interval).await;
        counters[0].reset();
        let writes: Vec<_> = (0..8).map(|i| write(format!("a{i}"))).collect();
        for done in futures::future::join_all(writes).await {
            done.unwrap();
        }
        assert_eq!(counters[0].counts().gets, 1, "one read for eight writes");
        counters[0].reset();
        write("b".into()).await.unwrap();
        assert_eq!(counters[0].counts().gets, 0, "within the interval: no read");

        let no_wait = ReshardOptions::new().fence_wait(Duration::ZERO);
        Tables::reshard_with(pool(2), pool(3), no_wait).await.unwrap();
        write("c".into())
            .await
            .expect("within the interval the stale handle is not told yet");
        tokio::time::advance(interval).await;
        let err = write("d".into()).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Invalid);
        let text = err.to_string();
        assert!(text.contains("epoch 1") && text.contains("epoch 3"), "{text}");
    }
}
