//! Several accounts behind one [`Backend`]: each partition lives in one
//! account of a fixed, ordered pool, chosen by [`account_of`].
//!
//! Everything that names a partition (point reads and writes, transactions,
//! queries whose filter pins `PartitionKey`) goes to that partition's account
//! unchanged. A query over the whole table asks every account and merges
//! their rows in (PartitionKey, RowKey) order; its page token holds each
//! account's own continuation, signed, so the next page reads each account
//! on from where it stands (see [`PooledBackend`]).
//!
//! [`PooledBlobBackend`] routes large-value blobs the same way, by the
//! partition their name holds, so a partition's rows and blobs share an
//! account.

mod blob;
mod control;
mod cursor;
pub(crate) mod descriptor;
mod merge;

use std::sync::Arc;

use async_trait::async_trait;

pub use blob::PooledBlobBackend;
pub use control::DEFAULT_CHECK_INTERVAL;
pub(crate) use control::{recorded, PoolControl};

use super::{Backend, Page, PageAnswer, PageToken, QueryRequest, WriteOp, WriteOutcome};
use crate::error::{Error, Result};
use crate::layout::{POOL_TABLE, POOL_TABLES_PARTITION};
use crate::query::Filter;
use crate::value::Row;

/// The FNV-1a 64-bit offset basis: the seed of the key hash under
/// [`account_of`].
pub const KEY_HASH_SEED: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// The account (0-based) of `partition_key` in a pool of `accounts`: jump
/// consistent hash (Lamping and Veach, 2014) of the FNV-1a 64-bit hash of
/// the key's UTF-8 bytes, seeded with [`KEY_HASH_SEED`].
///
/// The result depends on nothing but the key and the pool's size, so every
/// process and every release agrees on it. Growing a pool from `n` to `n + 1`
/// accounts moves about one partition in `n + 1`, each to the new account.
///
/// ```
/// use unified_tables::backend::pool::account_of;
/// assert_eq!(account_of("any key", 1), 0);
/// let home = account_of("customer-42", 4);
/// assert!(home < 4);
/// assert_eq!(home, account_of("customer-42", 4)); // stable
/// // Growing the pool keeps a key where it was or moves it to the new account.
/// let grown = account_of("customer-42", 5);
/// assert!(grown == home || grown == 4);
/// ```
pub fn account_of(partition_key: &str, accounts: usize) -> usize {
    let mut key = partition_key
        .bytes()
        .fold(KEY_HASH_SEED, |hash, b| (hash ^ u64::from(b)).wrapping_mul(FNV_PRIME));
    let buckets = accounts.max(1) as i64;
    let (mut b, mut j) = (-1i64, 0i64);
    while j < buckets {
        b = j;
        key = key.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(1);
        j = ((b + 1) as f64 * ((1u64 << 31) as f64 / ((key >> 33) + 1) as f64)) as i64;
    }
    b as usize
}

/// A [`Backend`] over a fixed, ordered pool of accounts, one partition in
/// one account ([`account_of`]).
///
/// Build it through [`Tables::pooled`](crate::Tables::pooled), which also
/// checks the pool against the descriptor each account holds, fences the
/// handle's writes once the pool has grown, and lists the tables it creates
/// for [`Tables::reshard`](crate::Tables::reshard); a `PooledBackend` made
/// directly does none of that.
///
/// A table-wide query's page token holds, for each account, its own
/// continuation and the last of its rows returned, signed with a key of the
/// pool (of this backend, when made directly) and bound to the query: a
/// token altered, or sent back with another query, is
/// [`Error::InvalidCursor`]. An account whose matches are all returned is
/// not asked again.
#[derive(Debug, Clone)]
pub struct PooledBackend {
    accounts: Arc<[Arc<dyn Backend>]>,
    merger: Arc<merge::Merger>,
    control: Option<Arc<PoolControl>>,
}

impl PooledBackend {
    /// A pool of `accounts`, in their order (the order is part of the
    /// routing: the same accounts in another order route differently).
    /// An empty pool is [`Error::Config`].
    pub fn new(accounts: Vec<Arc<dyn Backend>>) -> Result<PooledBackend> {
        if accounts.is_empty() {
            return Err(Error::config(
                "a pool needs at least one account; give Tables::pooled one handle per account",
            ));
        }
        let profile = accounts[0].profile();
        if let Some((i, other)) = accounts.iter().enumerate().find(|(_, a)| a.profile() != profile) {
            return Err(Error::config(format!(
                "the accounts of a pool must be one service: account 0 is {profile} and account {i} is {}; pool them separately",
                other.profile()
            )));
        }
        Ok(PooledBackend {
            accounts: accounts.into(),
            merger: Arc::new(merge::Merger::new(cursor::CursorKey::random())),
            control: None,
        })
    }

    /// The pool as `control` (from the descriptors) knows it: merged query
    /// tokens signed with the pool's key, writes fenced, tables listed.
    pub(crate) fn with_control(mut self, control: Arc<PoolControl>) -> PooledBackend {
        self.merger = Arc::new(merge::Merger::new(cursor::CursorKey::of_pool(control.id())));
        self.control = Some(control);
        self
    }

    /// The accounts, in pool order.
    pub fn accounts(&self) -> &[Arc<dyn Backend>] {
        &self.accounts
    }

    /// The backend of the account that holds `partition_key`.
    pub fn account_for(&self, partition_key: &str) -> &Arc<dyn Backend> {
        &self.accounts[account_of(partition_key, self.accounts.len())]
    }

    /// The account of a write to `partition_key` of `table`, once the fence
    /// admits it and the pool lists the table.
    async fn writer(&self, table: &str, partition_key: &str) -> Result<Arc<dyn Backend>> {
        if let Some(control) = &self.control {
            control.admit(partition_key).await?;
            if table != POOL_TABLE {
                control.record(POOL_TABLES_PARTITION, table).await?;
            }
        }
        Ok(self.account_for(partition_key).clone())
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl Backend for PooledBackend {
    async fn create_table(&self, table: &str) -> Result<()> {
        if let Some(control) = self.control.as_ref().filter(|_| table != POOL_TABLE) {
            // Listed before it exists (and before a write, in `writer`): a reshard misses no table.
            control.record(POOL_TABLES_PARTITION, table).await?;
        }
        for account in self.accounts.iter() {
            account.create_table(table).await?;
        }
        Ok(())
    }

    async fn delete_table(&self, table: &str) -> Result<()> {
        // Absent from every account is the service's 404; absent from some
        // is a table half deleted before: finish the job.
        let mut missing = None;
        let mut deleted = false;
        for account in self.accounts.iter() {
            match account.delete_table(table).await {
                Ok(()) => deleted = true,
                Err(e) if e.service_code().is_some_and(|(status, _)| status == 404) => missing = Some(e),
                Err(e) => return Err(e),
            }
        }
        match missing {
            Some(e) if !deleted => Err(e),
            _ => Ok(()),
        }
    }

    async fn get(&self, table: &str, partition_key: &str, row_key: &str) -> Result<Option<Row>> {
        self.account_for(partition_key).get(table, partition_key, row_key).await
    }

    async fn execute(&self, table: &str, op: WriteOp) -> Result<WriteOutcome> {
        let account = self.writer(table, op.keys().0).await?;
        account.execute(table, op).await
    }

    async fn transaction(&self, table: &str, ops: Vec<WriteOp>) -> Result<Vec<WriteOutcome>> {
        // A transaction holds one partition (the account refuses one that
        // does not, as the service does), so its first operation routes it.
        let Some(first) = ops.first() else {
            return self.accounts[0].transaction(table, ops).await;
        };
        let account = self.writer(table, first.keys().0).await?;
        account.transaction(table, ops).await
    }

    async fn query(&self, table: &str, request: &QueryRequest, token: Option<&PageToken>) -> Result<Page> {
        if let Some(pk) = request.filter.as_ref().and_then(Filter::pinned_partition) {
            return self.account_for(pk).query(table, request, token).await;
        }
        if self.accounts.len() == 1 {
            return self.accounts[0].query(table, request, token).await;
        }
        self.merger.query(&self.accounts, table, request, token).await
    }

    fn profile(&self) -> crate::service::ServiceProfile {
        self.accounts[0].profile()
    }

    async fn query_body(&self, table: &str, request: &QueryRequest, token: Option<&PageToken>) -> Result<PageAnswer> {
        if let Some(pk) = request.filter.as_ref().and_then(Filter::pinned_partition) {
            return self.account_for(pk).query_body(table, request, token).await;
        }
        if self.accounts.len() == 1 {
            return self.accounts[0].query_body(table, request, token).await;
        }
        // A merged page is made of rows from several answers.
        self.merger
            .query(&self.accounts, table, request, token)
            .await
            .map(PageAnswer::Rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::CmpOp;
    use crate::value::Value;

    /// The jump hash of a raw 64-bit key (the routing hashes the key first).
    fn jump(mut key: u64, buckets: i64) -> i64 {
        let (mut b, mut j) = (-1i64, 0i64);
        while j < buckets {
            b = j;
            key = key.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(1);
            j = ((b + 1) as f64 * ((1u64 << 31) as f64 / ((key >> 33) + 1) as f64)) as i64;
        }
        b
    }

    #[test]
    fn routing_matches_the_published_algorithm() {
        // Values printed by the paper's C++ function (compiled with gcc) for
        // these keys and bucket counts: 1, 2, 3, 5, 100, 1000.
        let vectors: [(u64, [i64; 6]); 4] = [
            (1, [0, 0, 0, 0, 55, 549]),
            (0xDEAD_10CC, [0, 1, 1, 1, 94, 361]),
            (u64::MAX, [0, 1, 2, 2, 92, 313]),
            (123_456_789, [0, 0, 0, 0, 34, 294]),
        ];
        for (key, expected) in vectors {
            for (buckets, want) in [1, 2, 3, 5, 100, 1000].into_iter().zip(expected) {
                assert_eq!(jump(key, buckets), want, "key {key:#x}, {buckets} buckets");
            }
        }
        // FNV-1a of the key, then the jump hash (same C program).
        assert_eq!(account_of("customer-42", 3), 1);
        assert_eq!(account_of("customer-42", 4), 1);
        assert_eq!(account_of("partition-7", 4), 0);
        assert_eq!(account_of("", 4), 1);
    }

    #[test]
    fn keys_spread_evenly_and_move_only_to_the_new_account() {
        let keys: Vec<String> = (0..20_000).map(|i| format!("partition-{i}")).collect();
        let mut counts = [0usize; 4];
        for key in &keys {
            counts[account_of(key, 4)] += 1;
        }
        for count in counts {
            assert!((4_500..5_500).contains(&count), "{counts:?}");
        }
        let moved = keys
            .iter()
            .filter(|k| account_of(k, 4) != account_of(k, 5))
            .inspect(|k| assert_eq!(account_of(k, 5), 4, "{k} moved between old accounts"))
            .count();
        assert!((3_500..4_500).contains(&moved), "{moved} of 20000 moved growing 4 -> 5");
    }

    #[test]
    fn the_key_hash_is_fnv_1a() {
        // FNV-1a 64 of "a" is 0xaf63dc4c8601ec8c (the published test vector).
        let fnv = |s: &str| {
            s.bytes()
                .fold(KEY_HASH_SEED, |h, b| (h ^ u64::from(b)).wrapping_mul(FNV_PRIME))
        };
        assert_eq!(fnv("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv(""), KEY_HASH_SEED);
    }

    #[test]
    fn a_pinned_partition_is_found_under_and() {
        let f = Filter::eq("PartitionKey", Value::String("p".into())).and(Filter::cmp(
            "RowKey",
            CmpOp::Ge,
            Value::String("a".into()),
        ));
        assert_eq!(f.pinned_partition(), Some("p"));
        let or = Filter::eq("PartitionKey", Value::String("p".into()))
            .or(Filter::eq("PartitionKey", Value::String("q".into())));
        assert_eq!(or.pinned_partition(), None);
    }
}
