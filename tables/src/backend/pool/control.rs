//! What a handle opened with [`Tables::pooled`](crate::Tables::pooled) keeps
//! of its pool: the descriptor it opened, the fence that re-checks account
//! 0's descriptor at a bounded interval and refuses the writes of a stale
//! handle, and the list of the pool's tables and containers that a reshard
//! moves.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tokio::time::Instant;

use super::account_of;
use super::descriptor::{read_descriptor, Descriptor};
use crate::backend::{Backend, UpdateMode, WriteOp};
use crate::error::{Error, Result};
use crate::layout::POOL_TABLE;
use crate::value::Row;

/// How often a pooled handle re-reads account 0's descriptor by default
/// (see [`PoolOptions::check_interval`](crate::PoolOptions::check_interval)).
pub const DEFAULT_CHECK_INTERVAL: Duration = Duration::from_secs(2);

/// The pool a handle opened, and what it last read of account 0's descriptor.
pub(crate) struct PoolControl {
    /// Account 0's rows.
    authority: Arc<dyn Backend>,
    /// Account 0's name, for messages.
    authority_name: String,
    /// Account 0's descriptor when the handle opened the pool.
    opened: Descriptor,
    interval: Duration,
    /// When account 0's descriptor was last read (the instant before the
    /// read was sent), and what it held.
    view: Mutex<(Instant, Arc<Descriptor>)>,
    /// The instant the clock of `clear_until` counts from.
    base: Instant,
    /// Until when (nanoseconds after `base`) the last read holds, when it
    /// found the pool as the handle opened it and no reshard under way: a
    /// write before then is admitted without taking a lock (0: not clear).
    clear_until: AtomicU64,
    /// One read of the descriptor at a time: writers that find the view
    /// stale together wait for the same read.
    refresh: tokio::sync::Mutex<()>,
    /// The tables and containers recorded in the pool's lists by this
    /// handle, with their list (read on every write, written once a name;
    /// a handle writes few tables, so a scan beats hashing the name).
    recorded: RwLock<Vec<(&'static str, Box<str>)>>,
}

impl fmt::Debug for PoolControl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolControl")
            .field("accounts", &self.opened.accounts)
            .field("epoch", &self.opened.epoch)
            .field("interval", &self.interval)
            .finish()
    }
}

impl PoolControl {
    pub(crate) fn new(
        authority: Arc<dyn Backend>,
        authority_name: String,
        opened: Descriptor,
        interval: Duration,
    ) -> PoolControl {
        let base = Instant::now();
        let control = PoolControl {
            authority,
            authority_name,
            view: Mutex::new((base, Arc::new(opened.clone()))),
            opened,
            interval,
            base,
            clear_until: AtomicU64::new(0),
            refresh: tokio::sync::Mutex::new(()),
            recorded: RwLock::new(Vec::new()),
        };
        control.note(base, &control.opened);
        control
    }

    /// Notes what a read sent at `sent` found: whether writes may go
    /// without a lock until the interval has passed.
    fn note(&self, sent: Instant, view: &Descriptor) {
        let clear = view.id == self.opened.id
            && view.accounts == self.opened.accounts
            && view.growing_to.is_none()
            && view.grown_from.is_none();
        let until = match clear {
            true => (sent + self.interval).saturating_duration_since(self.base).as_nanos() as u64,
            false => 0,
        };
        self.clear_until.store(until, Ordering::Release);
    }

    /// The pool's id.
    pub(crate) fn id(&self) -> &str {
        &self.opened.id
    }

    /// Refuses a write to the partition (or blob routing key) `key` when the
    /// handle's pool is stale, or when `key`'s partition is moving while the
    /// pool grows (from the freeze until the reshard has removed it from its
    /// old account); reads account 0's descriptor first when the last read is
    /// older than the interval.
    pub(crate) async fn admit(&self, key: &str) -> Result<()> {
        let now = self.base.elapsed().as_nanos() as u64;
        if now < self.clear_until.load(Ordering::Acquire) {
            return Ok(());
        }
        let view = self.current().await?;
        self.judge(&view, key)
    }

    /// What account 0's descriptor held when last read, read again when that
    /// is older than the interval.
    async fn current(&self) -> Result<Arc<Descriptor>> {
        if let Some(view) = self.fresh() {
            return Ok(view);
        }
        let _turn = self.refresh.lock().await;
        if let Some(view) = self.fresh() {
            return Ok(view); // another writer read it meanwhile
        }
        let sent = Instant::now();
        let Some((descriptor, _)) = read_descriptor(self.authority.as_ref(), &self.authority_name).await? else {
            return Err(Error::config(format!(
                "account {:?} no longer holds the descriptor of the pool this handle opened (epoch {}): \
                 writes are refused until the pool is opened again",
                self.authority_name, self.opened.epoch
            )));
        };
        self.note(sent, &descriptor);
        let view = Arc::new(descriptor);
        if let Ok(mut last) = self.view.lock() {
            *last = (sent, view.clone());
        }
        Ok(view)
    }

    fn fresh(&self) -> Option<Arc<Descriptor>> {
        let last = self.view.lock().ok()?;
        (last.0.elapsed() < self.interval).then(|| last.1.clone())
    }

    fn judge(&self, view: &Descriptor, key: &str) -> Result<()> {
        let opened = &self.opened;
        if view.id != opened.id || view.accounts != opened.accounts {
            return Err(Error::config(format!(
                "this handle opened the pool at epoch {} with {} accounts {:?}, and account {:?} now records \
                 epoch {} with {} accounts {:?} (the pool was grown by Tables::reshard): the write is refused; \
                 open the pool again with its accounts",
                opened.epoch,
                opened.accounts.len(),
                opened.accounts,
                self.authority_name,
                view.epoch,
                view.accounts.len(),
                view.accounts,
            )));
        }
        if let Some(to) = &view.growing_to {
            let home = account_of(key, opened.accounts.len());
            let new_home = account_of(key, to.len());
            if home != new_home {
                return Err(Error::config(format!(
                    "partition {key:?} is moving from account {:?} to account {:?}: the pool (opened by this \
                     handle at epoch {}) is at epoch {}, growing to {} accounts {to:?}, and writes to a moving \
                     partition are refused until the reshard switches the pool; then open it with its new accounts",
                    opened.accounts[home],
                    to[new_home],
                    opened.epoch,
                    view.epoch,
                    to.len(),
                )));
            }
        }
        if let Some(from) = &view.grown_from {
            let old_home = account_of(key, from.len());
            let home = account_of(key, view.accounts.len());
            if old_home != home {
                return Err(Error::config(format!(
                    "partition {key:?} has moved from account {:?} to account {:?}, and the reshard that moved it \
                     (epoch {}) is still removing it from its old account: writes to it are refused until the job \
                     has finished (if it stopped, run Tables::reshard again with the same accounts)",
                    from[old_home], view.accounts[home], view.epoch,
                )));
            }
        }
        Ok(())
    }

    /// Records `name` in the pool's list `partition` (tables or containers)
    /// in account 0, once per handle, so that a reshard finds it: before a
    /// handle creates a table or container, and before its first write to
    /// one (which may have been created otherwise).
    pub(crate) async fn record(&self, partition: &'static str, name: &str) -> Result<()> {
        let known = |recorded: &[(&'static str, Box<str>)]| {
            recorded
                .iter()
                .any(|(list, known)| **known == *name && *list == partition)
        };
        if self.recorded.read().map(|r| known(&r)).unwrap_or(false) {
            return Ok(());
        }
        let op = WriteOp::Upsert {
            row: Row::new(partition, name),
            mode: UpdateMode::Replace,
        };
        self.authority.execute(POOL_TABLE, op).await?;
        if let Ok(mut recorded) = self.recorded.write() {
            if !known(&recorded) {
                recorded.push((partition, name.into()));
            }
        }
        Ok(())
    }
}

/// The names a pool lists in `partition` of account 0's [`POOL_TABLE`].
pub(crate) async fn recorded(authority: &dyn Backend, partition: &str) -> Result<Vec<String>> {
    use crate::backend::QueryRequest;
    use crate::query::Filter;
    use crate::value::Value;
    let request = QueryRequest {
        filter: Some(Filter::eq("PartitionKey", Value::String(partition.to_owned()))),
        select: None,
        top: None,
    };
    let mut names = Vec::new();
    let mut token = None;
    loop {
        let page = authority.query(POOL_TABLE, &request, token.as_ref()).await?;
        names.extend(page.rows.into_iter().map(|row| row.row_key));
        match page.next {
            Some(next) => token = Some(next),
            None => return Ok(names),
        }
    }
}
