//! Growing a pool of accounts: freeze the partitions that move, copy them
//! (rows, large values, locks and the user's blobs), switch the pool in one
//! request, then remove what moved. A record of the job, beside account 0's
//! descriptor, says which phase it is in, so a run stopped by any failure is
//! finished by running it again.

mod blobs;
mod job;
mod lists;
mod rows;
mod scan;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use self::blobs::Scope;
use self::job::{delete_record, finish, read_record, step, Phase, Record};
use self::scan::{send, Growth};
use super::pool::check_pool;
use super::Tables;
use crate::backend::blob::BlobBackend;
use crate::backend::pool::descriptor::{read_descriptor, write_descriptor, Descriptor};
use crate::backend::pool::recorded;
use crate::backend::retry::RetryPolicy;
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::layout::{escape_segment, POOL_CONTAINERS_PARTITION, POOL_TABLE, POOL_TABLES_PARTITION};
use crate::value::Guid;

/// What [`Tables::reshard_with`] moves, and how long it lets the pool's
/// handles take notice of the freeze.
///
/// ```
/// use std::time::Duration;
/// use unified_tables::ReshardOptions;
/// let options = ReshardOptions::new().tables(&["Orders", "Customers"]).fence_wait(Duration::from_secs(10));
/// # let _ = options;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReshardOptions {
    tables: Vec<String>,
    fence_wait: Duration,
}

impl Default for ReshardOptions {
    fn default() -> ReshardOptions {
        ReshardOptions {
            tables: Vec::new(),
            fence_wait: ReshardOptions::DEFAULT_FENCE_WAIT,
        }
    }
}

impl ReshardOptions {
    /// How long a reshard waits by default after freezing the moving
    /// partitions, before it copies them (see [`ReshardOptions::fence_wait`]):
    /// 70 s, the longest a write admitted before the freeze can take to land
    /// with the defaults: a handle's
    /// [check interval](crate::PoolOptions::check_interval) (2 s), then an
    /// attempt's [request timeout](crate::RetryPolicy::request_timeout) (35
    /// s, within which the request may reach the service), then the time the
    /// service may still take to apply it ([`SERVER_TIMEOUT`](crate::service::SERVER_TIMEOUT), 30 s), and a
    /// margin of 3 s.
    pub const DEFAULT_FENCE_WAIT: Duration = Duration::from_secs(70);

    /// The defaults: the tables and containers the pool lists, and a wait
    /// of [`ReshardOptions::DEFAULT_FENCE_WAIT`] (70 s).
    pub fn new() -> ReshardOptions {
        ReshardOptions::default()
    }

    /// Tables to move besides those the pool lists. A pooled handle lists
    /// every table it creates or writes (in account 0, before creating it
    /// and before its first write to it); name here the tables written only
    /// before the pool kept that list, or only by other means.
    pub fn tables(mut self, tables: &[&str]) -> ReshardOptions {
        self.tables.extend(tables.iter().map(|t| (*t).to_owned()));
        self
    }

    /// How long the job waits after freezing the moving partitions before
    /// it reads them: the longest a write admitted before the freeze can
    /// take to land. That is the longest
    /// [check interval](crate::PoolOptions::check_interval) of the pool's
    /// handles (until a handle has read the freeze it admits writes to the
    /// moving partitions), plus the longest
    /// [request timeout](crate::RetryPolicy::request_timeout) of their retry
    /// policies (an attempt sent then may reach the service that late; a
    /// resend is refused by the fence), plus [`SERVER_TIMEOUT`](crate::service::SERVER_TIMEOUT) (30 s, the
    /// time the service may still take to apply it): 67 s with the
    /// defaults, and [`ReshardOptions::DEFAULT_FENCE_WAIT`] is 70 s. Zero
    /// when no handle of the pool is open.
    ///
    /// A shorter wait is unsafe when writers run: a write admitted before
    /// the freeze may land in its old account after the job read it. A row
    /// it changes or creates before the job's removal reaches that row is
    /// copied again first (see [`ReshardReport::rows_recopied`]); a delete
    /// that lands after the copy, and a write that lands after the removal
    /// passed its row (re-creating it in its old account), are not carried
    /// to the grown pool, although their callers were told they succeeded.
    pub fn fence_wait(mut self, wait: Duration) -> ReshardOptions {
        self.fence_wait = wait;
        self
    }
}

/// What [`Tables::reshard`] did in this run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReshardReport {
    /// Partitions whose rows were copied (or found copied) to their new account.
    pub partitions_moved: usize,
    /// Rows written to the new accounts (main and continuation rows alike).
    pub rows_copied: usize,
    /// Blobs written to the new accounts (large values, locks, the user's blobs).
    pub blobs_copied: usize,
    /// Rows an earlier run had copied that their source no longer has, deleted.
    pub rows_repaired: usize,
    /// Blobs an earlier run had copied that their source no longer has, deleted.
    pub blobs_repaired: usize,
    /// Rows removed from accounts that no longer hold their partition.
    pub rows_removed: usize,
    /// Rows found changed in their old account after the job had copied
    /// them (by a write admitted before the freeze that landed after the
    /// copy), copied again before their removal, which deletes the version
    /// the copy holds.
    pub rows_recopied: usize,
    /// Blobs removed from accounts that no longer hold them.
    pub blobs_removed: usize,
    /// The tables the job moves.
    pub tables: Vec<String>,
    /// The blob containers the job moves.
    pub containers: Vec<String>,
    /// The pool's epoch once switched (0 when the job found it done).
    pub epoch: u64,
}

/// One account of a pool: its name, rows and blobs.
struct Account {
    name: String,
    rows: Arc<dyn Backend>,
    blobs: Option<Arc<dyn BlobBackend>>,
}

fn accounts<N: Into<String>>(pool: Vec<(N, Tables)>) -> Vec<Account> {
    pool.into_iter()
        .map(|(name, t)| Account {
            name: name.into(),
            rows: t.shared.raw.clone(),
            blobs: t.shared.blobs.as_ref().map(|b| b.raw.clone()),
        })
        .collect()
}

/// Everything a phase of the job needs.
pub(super) struct Job {
    growth: Growth,
    names: Vec<String>,
    /// Every account of the grown pool, old ones first.
    rows: Vec<Arc<dyn Backend>>,
    /// Their blob services (empty when the pool has none).
    blobs: Vec<Arc<dyn BlobBackend>>,
    policy: RetryPolicy,
    lease: Guid,
}

impl Job {
    fn authority(&self) -> &dyn Backend {
        self.rows[0].as_ref()
    }

    /// The containers' scopes: the values' container one table at a time,
    /// every other container whole, leased.
    fn scopes<'a>(&self, record: &'a Record, values: Option<&'a str>, prefixes: &'a [String]) -> Vec<Scope<'a>> {
        if self.blobs.is_empty() {
            return Vec::new();
        }
        let mut scopes: Vec<Scope> = record
            .containers
            .iter()
            .filter(|c| Some(c.as_str()) != values)
            .map(|container| Scope {
                container,
                prefix: "",
                leased: true,
            })
            .collect();
        if let Some(values) = values {
            scopes.extend(prefixes.iter().map(|prefix| Scope {
                container: values,
                prefix,
                leased: false,
            }));
        }
        scopes
    }

    async fn copy(&self, record: &Record, values: Option<&str>, report: &mut ReshardReport) -> Result<()> {
        let prefixes = table_prefixes(&record.tables);
        // Blobs first, so that a copied row never refers to a blob its account lacks.
        for scope in self.scopes(record, values, &prefixes) {
            blobs::copy(self, scope, true, report).await?;
        }
        for table in &record.tables {
            rows::copy(self, table, report).await?;
        }
        Ok(())
    }

    async fn remove(&self, record: &Record, values: Option<&str>, report: &mut ReshardReport) -> Result<()> {
        for table in &record.tables {
            rows::remove(self, table, report).await?;
        }
        let prefixes = table_prefixes(&record.tables);
        let scopes = self.scopes(record, values, &prefixes);
        // A row copied again may name a large value's blob written after
        // the copy: the values' blobs the copies lack are copied first.
        for scope in scopes.iter().filter(|s| !s.leased) {
            blobs::copy(self, *scope, false, report).await?;
        }
        for scope in scopes {
            blobs::remove(self, scope, report).await?;
        }
        Ok(())
    }

    /// Ends the job: account 0's descriptor no longer freezes the moved
    /// partitions, and the record is deleted, in one transaction.
    async fn finish(&self) -> Result<()> {
        let (switched, stored) = self.authority_descriptor().await?;
        if switched.grown_from.is_none() {
            return send(&self.policy, true, || delete_record(self.authority())).await;
        }
        let thawed = Descriptor {
            grown_from: None,
            ..switched
        };
        send(&self.policy, false, || finish(self.authority(), &thawed, &stored)).await
    }

    /// Account 0's descriptor and the condition that replaces it.
    async fn authority_descriptor(&self) -> Result<(Descriptor, crate::backend::IfMatch)> {
        let read = send(&self.policy, true, || read_descriptor(self.authority(), &self.names[0])).await?;
        read.ok_or_else(|| {
            Error::config(format!(
                "account {:?} holds no pool descriptor, though a reshard is recorded there: open the old pool \
                 once (Tables::pooled) and run the job again",
                self.names[0]
            ))
        })
    }

    /// Switches the pool: account 0's descriptor and the job's phase in one
    /// transaction, then every other account's descriptor.
    async fn switch(&self, record: &mut Record) -> Result<u64> {
        let (frozen, stored) = self.authority_descriptor().await?;
        record.phase = Phase::Remove;
        if frozen.accounts == record.to {
            // Switched already (the record is written with the switch, so only by hand).
            send(&self.policy, true, || {
                self.authority().execute(POOL_TABLE, record.write_op())
            })
            .await?;
            return Ok(frozen.epoch);
        }
        let switched = Descriptor {
            id: frozen.id,
            accounts: record.to.clone(),
            position: 0,
            epoch: frozen.epoch + 1,
            growing_to: None,
            // The moved partitions stay frozen until they are removed from
            // their old accounts, so that their copies change only by the job.
            grown_from: Some(record.from.clone()),
        };
        send(&self.policy, false, || {
            step(self.authority(), &switched, &stored, record)
        })
        .await?;
        Ok(switched.epoch)
    }

    /// Writes the switched descriptor to every account but account 0.
    async fn spread(&self, switched: &Descriptor) -> Result<()> {
        for (position, account) in self.rows.iter().enumerate().skip(1) {
            send(&self.policy, true, || account.create_table(POOL_TABLE)).await?;
            let mine = switched.at(position);
            send(&self.policy, true, || write_descriptor(account.as_ref(), &mine)).await?;
        }
        Ok(())
    }
}

/// The blob name prefixes of the tables' large values.
fn table_prefixes(tables: &[String]) -> Vec<String> {
    tables.iter().map(|t| format!("{}/", escape_segment(t))).collect()
}

fn union(mut into: Vec<String>, more: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut seen: BTreeSet<String> = into.iter().cloned().collect();
    for name in more {
        if name != POOL_TABLE && seen.insert(name.clone()) {
            into.push(name);
        }
    }
    into
}

impl Tables {
    /// Grows a pool of accounts (see [`Tables::pooled`]) from `old` to
    /// `new`: `new` must be `old` with accounts added at its end. With jump
    /// consistent hashing only partitions whose home becomes one of the
    /// added accounts move. The same as [`Tables::reshard_with`] with
    /// [`ReshardOptions::tables`] set to `tables` (the tables to move besides
    /// those the pool lists).
    ///
    /// ```
    /// # // A paused clock: the default fence wait passes at once.
    /// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
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
        Tables::reshard_with(old, new, ReshardOptions::new().tables(tables)).await
    }

    /// Grows a pool of accounts from `old` to `new` (`old` with accounts
    /// added at its end), moving every partition whose home changes with
    /// everything it owns: its rows (main and continuation rows) in every
    /// table the pool lists and every table of `options`, its large values'
    /// blobs, and the blobs of the pool's other containers routed to it
    /// (locks, with their fencing counters, and the blobs of
    /// [`Tables::blobs`]).
    #[doc = include_str!("../../../docs/reshard.md")]
    pub async fn reshard_with<N: Into<String>>(
        old: Vec<(N, Tables)>,
        new: Vec<(N, Tables)>,
        options: ReshardOptions,
    ) -> Result<ReshardReport> {
        let policy = old.first().map(|(_, t)| t.shared.retry).unwrap_or_default();
        let values = old
            .first()
            .and_then(|(_, t)| t.shared.blobs.as_ref())
            .map(|b| b.options.container.clone());
        let (old, new) = (accounts(old), accounts(new));
        let old_names: Vec<String> = old.iter().map(|a| a.name.clone()).collect();
        let new_names: Vec<String> = new.iter().map(|a| a.name.clone()).collect();
        if old.is_empty() || new_names.len() <= old_names.len() || new_names[..old_names.len()] != old_names[..] {
            return Err(Error::config(format!(
                "a pool grows by adding accounts at its end: the new pool {new_names:?} must start with the old \
                 one {old_names:?} and be longer"
            )));
        }
        let every: Vec<&Account> = old.iter().chain(&new[old.len()..]).collect();
        let blobs: Vec<Arc<dyn BlobBackend>> = every.iter().filter_map(|a| a.blobs.clone()).collect();
        if !blobs.is_empty() && blobs.len() != every.len() {
            return Err(Error::config(
                "some accounts of the pool have a blob store and some do not: give every account one \
                 (Tables::with_blobs) or none",
            ));
        }
        if let Some(unordered) = every.iter().find(|a| !a.rows.profile().sorts_results()) {
            // The job merges the accounts' rows in key order and resumes from keys.
            return Err(Error::config(format!(
                "account `{}` is {}, which returns rows in no order, and a reshard reads every account in key order: \
                 move the partitions with the operator command's `copy` instead",
                unordered.name,
                unordered.rows.profile()
            )));
        }
        let values = values.filter(|_| !blobs.is_empty());
        let mut job = Job {
            growth: Growth {
                old: old.len(),
                new: new.len(),
            },
            names: new_names.clone(),
            rows: every.iter().map(|a| a.rows.clone()).collect(),
            blobs,
            policy,
            lease: Guid::default(),
        };
        let mut report = ReshardReport::default();
        send(&job.policy, true, || job.authority().create_table(POOL_TABLE)).await?;
        let found = send(&job.policy, true, || read_record(job.authority(), &job.names[0])).await?;
        let mut record = match found {
            Some(record) if record.from != old_names || record.to != new_names => {
                return Err(Error::config(format!(
                    "a reshard of this pool from {:?} to {:?} is under way (phase {:?}): run it again with those \
                     accounts to finish it before growing the pool otherwise",
                    record.from, record.to, record.phase
                )))
            }
            Some(record) => record,
            None => {
                let current = send(&job.policy, true, || read_descriptor(job.authority(), &job.names[0])).await?;
                if current.is_some_and(|(d, _)| d.accounts == new_names) {
                    // Switched and finished by an earlier run: nothing is left to move.
                    send(&job.policy, true, || check_pool(&job.rows, &new_names)).await?;
                    return Ok(report);
                }
                // Checking (and recording) the descriptors again does the same.
                let frozen = send(&job.policy, true, || check_pool(&job.rows[..old.len()], &old_names)).await?;
                if frozen.growing_to.is_some() {
                    return Err(Error::config(format!(
                        "account {:?} records a reshard under way but holds no record of it: delete its \
                         descriptor's {} column only if no reshard runs, then run the job again",
                        job.names[0],
                        crate::layout::POOL_GROWING_TO
                    )));
                }
                let listed_tables =
                    send(&job.policy, true, || recorded(job.authority(), POOL_TABLES_PARTITION)).await?;
                let tables = union(union(Vec::new(), listed_tables), options.tables.iter().cloned());
                let containers = match &values {
                    Some(values) => {
                        let listed = send(&job.policy, true, || {
                            recorded(job.authority(), POOL_CONTAINERS_PARTITION)
                        })
                        .await?;
                        union(vec![values.clone()], listed)
                    }
                    None => Vec::new(),
                };
                job.check_empty(&tables, &containers, values.as_deref()).await?;
                let record = Record::new(old_names.clone(), new_names.clone(), tables, containers);
                freeze(&job, &record).await?;
                record
            }
        };
        job.lease = record.lease();
        report.tables = record.tables.clone();
        report.containers = record.containers.clone();
        if record.phase == Phase::Copy {
            tokio::time::sleep(options.fence_wait).await;
            // Every handle now refuses writes to the moving partitions: a
            // table or container it listed since the job read the lists is
            // listed now, and the record names it before it is copied.
            job.list_more(&mut record, &options.tables, values.as_deref()).await?;
            report.tables = record.tables.clone();
            report.containers = record.containers.clone();
            job.copy(&record, values.as_deref(), &mut report).await?;
            report.epoch = job.switch(&mut record).await?;
        }
        let (switched, _) = job.authority_descriptor().await?;
        report.epoch = switched.epoch;
        job.spread(&switched).await?;
        job.remove(&record, values.as_deref(), &mut report).await?;
        job.finish().await?;
        Ok(report)
    }
}

/// Records the job and freezes its moving partitions, in one transaction
/// in account 0.
async fn freeze(job: &Job, record: &Record) -> Result<()> {
    let (current, stored) = job.authority_descriptor().await?;
    let frozen = Descriptor {
        epoch: current.epoch + 1,
        growing_to: Some(record.to.clone()),
        ..current
    };
    send(&job.policy, false, || step(job.authority(), &frozen, &stored, record)).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::pool::DEFAULT_CHECK_INTERVAL;
    use crate::service::SERVER_TIMEOUT;

    #[test]
    fn the_default_fence_wait_outlasts_a_write_admitted_before_the_freeze() {
        let longest = DEFAULT_CHECK_INTERVAL + RetryPolicy::default().request_timeout() + SERVER_TIMEOUT;
        assert!(ReshardOptions::DEFAULT_FENCE_WAIT >= longest, "{longest:?}");
        assert_eq!(ReshardOptions::new().fence_wait, ReshardOptions::DEFAULT_FENCE_WAIT);
    }
}
