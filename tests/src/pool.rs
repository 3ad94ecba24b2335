//! The accounts of a pool for the pool tests: each account's rows and blobs
//! counted and wrapped in a [`FaultyBackend`], on fresh in-memory accounts
//! or on the Azurite accounts of [`POOL_VAR`]; and a world to grow: tables
//! with large values, locks and the user's blobs written through a pool, and
//! the check that after a reshard everything is in its home account.

use std::sync::Arc;
use std::time::Duration;

use unified_tables::backend::azure::{AzureBackend, AzureBlobBackend};
use unified_tables::backend::blob::BlobBackend;
use unified_tables::backend::counting::{CountingBackend, Counts};
use unified_tables::backend::faulty::{FaultTarget, FaultyBackend};
use unified_tables::backend::memory::{MemoryBackend, MemoryBlobBackend};
use unified_tables::backend::pool::{account_of, PooledBlobBackend};
use unified_tables::backend::{Backend, IfMatch, QueryRequest, WriteOp};
use unified_tables::layout::{escape_segment, POOL_TABLE};
use unified_tables::{BlobContent, BlobOptions, QueryOptions, RetryPolicy, TableEntity, Tables};

use crate::model::Document;
use crate::{blob_options, noise, unique_table, POOL_VAR};

/// One account's rows, counted, with faults on call.
pub type Rows = FaultyBackend<CountingBackend<Arc<dyn Backend>>>;
/// One account's blobs, counted with its rows, with faults on call.
pub type Blobs = FaultyBackend<CountingBackend<Arc<dyn BlobBackend>>>;

/// The accounts of a pool, each reachable raw.
pub struct Accounts {
    /// Each account's rows.
    pub rows: Vec<Rows>,
    /// Each account's blobs.
    pub blobs: Vec<Blobs>,
    /// Each account's request counts (rows and blobs).
    pub counters: Vec<CountingBackend<Arc<dyn Backend>>>,
    /// The accounts' names in a pool.
    pub names: Vec<String>,
    /// The retry policy of the handles.
    pub retry: RetryPolicy,
    /// The large values' options of the handles.
    pub values: BlobOptions,
    /// Whether the accounts are Azure's (Azurite's).
    pub on_azure: bool,
}

impl Accounts {
    fn over(rows: Vec<Arc<dyn Backend>>, blobs: Vec<Arc<dyn BlobBackend>>) -> Accounts {
        let counters: Vec<CountingBackend<Arc<dyn Backend>>> = rows.into_iter().map(CountingBackend::new).collect();
        let blobs = counters
            .iter()
            .zip(blobs)
            .map(|(c, b)| FaultyBackend::new(c.share_counts(b)))
            .collect();
        Accounts {
            rows: counters.iter().map(|c| FaultyBackend::new(c.clone())).collect(),
            blobs,
            names: (0..counters.len()).map(|i| format!("account-{i}")).collect(),
            counters,
            retry: RetryPolicy::default(),
            values: blob_options(),
            on_azure: false,
        }
    }

    /// Three fresh in-memory accounts.
    pub fn memory() -> Accounts {
        Accounts::over(
            (0..3)
                .map(|_| Arc::new(MemoryBackend::new()) as Arc<dyn Backend>)
                .collect(),
            (0..3)
                .map(|_| Arc::new(MemoryBlobBackend::new()) as Arc<dyn BlobBackend>)
                .collect(),
        )
    }

    /// Three fresh in-memory accounts under the Cosmos DB for Table profile
    /// (rows in no order, pages cut at random), each with a separate
    /// in-memory blob account.
    pub fn cosmos() -> Accounts {
        Accounts::over(
            (0..3)
                .map(|i| {
                    Arc::new(MemoryBackend::cosmos(crate::cosmos_seed(&format!("pool account {i}"))))
                        as Arc<dyn Backend>
                })
                .collect(),
            (0..3)
                .map(|_| Arc::new(MemoryBlobBackend::new()) as Arc<dyn BlobBackend>)
                .collect(),
        )
    }

    /// The first three accounts of [`POOL_VAR`], or `None` when it is not
    /// set and not required.
    pub fn azure() -> Option<Accounts> {
        let Ok(connections) = std::env::var(POOL_VAR) else {
            let required = std::env::var("UNIFIED_TABLES_REQUIRE_AZURE").is_ok_and(|v| v == "1")
                || std::env::var("CI").is_ok_and(|v| v == "true");
            assert!(
                !required,
                "the pooled Azure tests are required here but {POOL_VAR} is not set"
            );
            return None;
        };
        let connections: Vec<&str> = connections.split('|').filter(|c| !c.is_empty()).take(3).collect();
        assert!(connections.len() == 3, "{POOL_VAR} must name three accounts");
        let accounts = Accounts::over(
            connections
                .iter()
                .map(|c| Arc::new(AzureBackend::from_connection_string(c).unwrap()) as Arc<dyn Backend>)
                .collect(),
            connections
                .iter()
                .map(|c| Arc::new(AzureBlobBackend::from_connection_string(c).unwrap()) as Arc<dyn BlobBackend>)
                .collect(),
        );
        Some(Accounts {
            on_azure: true,
            ..accounts
        })
    }

    /// The same accounts, their handles retrying writes with `policy`.
    pub fn with_retry(mut self, policy: RetryPolicy) -> Accounts {
        self.retry = policy;
        self
    }

    /// The same accounts, their handles offloading large values with `values`.
    pub fn with_values(mut self, values: BlobOptions) -> Accounts {
        self.values = values;
        self
    }

    /// A handle on account `i`.
    pub fn handle(&self, i: usize) -> Tables {
        Tables::with_backend(self.rows[i].clone())
            .with_blobs(self.blobs[i].clone(), self.values.clone())
            .with_retry(self.retry)
    }

    /// The first `n` accounts as a pool: names and handles.
    pub fn pool(&self, n: usize) -> Vec<(String, Tables)> {
        (0..n).map(|i| (self.names[i].clone(), self.handle(i))).collect()
    }

    /// Drops every planned fault.
    pub fn clear_faults(&self) {
        self.rows.iter().for_each(FaultyBackend::clear);
        self.blobs.iter().for_each(FaultyBackend::clear);
    }

    /// Faults planned and not fired, over every account.
    pub fn pending_faults(&self) -> usize {
        self.rows.iter().map(FaultyBackend::pending).sum::<usize>()
            + self.blobs.iter().map(FaultyBackend::pending).sum::<usize>()
    }

    /// Sets every account's counts back to zero.
    pub fn reset_counts(&self) {
        self.counters.iter().for_each(CountingBackend::reset);
    }

    /// Forgets any pool these accounts were part of: every row of their
    /// pool table (descriptor, the record of a reshard, the lists of tables
    /// and containers). The Azure accounts are shared by the tests of a
    /// file, which take turns.
    pub async fn forget_pool(&self) {
        for rows in &self.rows {
            rows.create_table(POOL_TABLE).await.unwrap();
            for row in scan(rows, POOL_TABLE).await {
                let op = WriteOp::Delete {
                    partition_key: row.partition_key,
                    row_key: row.row_key,
                    condition: IfMatch::Any,
                };
                match rows.execute(POOL_TABLE, op).await {
                    Ok(_) => {}
                    Err(e) if e.service_code().is_some_and(|(s, _)| s == 404) => {}
                    Err(e) => panic!("{e}"),
                }
            }
        }
    }

    /// The partition keys of `table` stored in account `i`.
    pub async fn partitions_in(&self, i: usize, table: &str) -> Vec<String> {
        let mut keys: Vec<String> = scan(&self.rows[i], table)
            .await
            .into_iter()
            .map(|r| r.partition_key)
            .collect();
        keys.dedup();
        keys
    }

    /// The names of the blobs under `prefix` in `container` of account `i`.
    pub async fn blobs_in(&self, i: usize, container: &str, prefix: &str) -> Vec<String> {
        let mut names = Vec::new();
        let mut marker: Option<String> = None;
        loop {
            let page = match self.blobs[i]
                .list(container, prefix, None, marker.as_deref(), 5000)
                .await
            {
                Err(e) if e.service_code().is_some_and(|(s, _)| s == 404) => return names,
                page => page.unwrap(),
            };
            names.extend(page.items.into_iter().map(|i| i.name));
            match page.next_marker {
                Some(m) => marker = Some(m),
                None => return names,
            }
        }
    }
}

/// Every row of `table` in one account (none when the table is missing).
pub async fn scan(rows: &Rows, table: &str) -> Vec<unified_tables::Row> {
    let mut all = Vec::new();
    let mut token = None;
    loop {
        let page = match rows.query(table, &QueryRequest::default(), token.as_ref()).await {
            Err(e) if e.service_code().is_some_and(|(s, _)| s == 404) => return all,
            page => page.unwrap(),
        };
        all.extend(page.rows);
        match page.next {
            Some(next) => token = Some(next),
            None => return all,
        }
    }
}

/// Each kind of request [`FaultyBackend`] can fail, with how many of them `counts` holds.
pub fn requests_by_target(counts: &Counts) -> Vec<(FaultTarget, u64)> {
    vec![
        (FaultTarget::Get, counts.gets),
        (FaultTarget::Write, counts.writes),
        (FaultTarget::Transaction, counts.transactions),
        (FaultTarget::Query, counts.queries),
        (FaultTarget::BlobPut, counts.blob_puts + counts.blob_shared_puts),
        (
            FaultTarget::BlobGet,
            counts.blob_gets + counts.blob_range_gets + counts.blob_streamed_gets + counts.blob_hashed_gets,
        ),
        (FaultTarget::BlobProperties, counts.blob_properties),
        (FaultTarget::BlobTouch, counts.blob_touches),
        (FaultTarget::BlobDelete, counts.blob_deletes),
        (FaultTarget::BlobList, counts.blob_lists),
        (FaultTarget::BlobClock, counts.blob_clock_reads),
        (FaultTarget::BlobLease, counts.blob_leases),
    ]
}

/// A plain entity of the grown world.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct Reading {
    /// The sensor.
    #[table(partition_key)]
    pub sensor: String,
    /// When.
    #[table(row_key)]
    pub at: String,
    /// The value.
    pub value: i64,
}

/// The first `n` keys `{stem}-{i}` whose home moves when a pool grows from
/// 2 to 3 accounts (`moving`), or stays (`!moving`).
pub fn keys(stem: &str, n: usize, moving: bool) -> Vec<String> {
    (0..)
        .map(|i| format!("{stem}-{i}"))
        .filter(|k| (account_of(k, 2) != account_of(k, 3)) == moving)
        .take(n)
        .collect()
}

/// What a world wrote through a pool of two accounts, to find again after
/// it grows to three.
pub struct World {
    /// The table of documents (large values, files).
    pub documents: String,
    /// The table of readings.
    pub readings: String,
    /// A container of the user's.
    pub files: String,
    /// The container of the locks.
    pub locks: String,
    /// Each document, with its file's bytes.
    docs: Vec<(Document, Option<Vec<u8>>)>,
    rows: Vec<Reading>,
    blobs: Vec<(String, Vec<u8>)>,
    tokens: Vec<(String, u64)>,
}

impl World {
    /// Writes the world through the pool of the first two accounts: moving
    /// and staying partitions of two tables (one with continuation rows and
    /// files), blobs of a container of the user's, and locks taken once.
    pub async fn write(accounts: &Accounts) -> World {
        let run = unique_table("w").to_lowercase();
        let world = World {
            documents: unique_table("docs"),
            readings: unique_table("reads"),
            files: format!("f{}", &run[1..]),
            locks: format!("l{}", &run[1..]),
            docs: Vec::new(),
            rows: Vec::new(),
            blobs: Vec::new(),
            tokens: Vec::new(),
        };
        let db = Tables::pooled(accounts.pool(2)).await.unwrap();
        let mut world = world;
        let documents = db.store_in::<Document>(&world.documents);
        for (i, pk) in keys("customer", 2, true)
            .into_iter()
            .chain(keys("customer", 1, false))
            .enumerate()
        {
            let mut doc = Document::new(&pk, "doc");
            doc.body = noise(if i == 0 { 100_000 } else { 300 }, i as u64); // continuation rows
            let file = (i != 1).then(|| noise(700, i as u64 + 50).into_bytes());
            doc.attachment = file.clone().map(|bytes| BlobContent::from_bytes(bytes, "text/plain"));
            documents.upsert(&mut doc).await.unwrap();
            world.docs.push((doc, file));
        }
        let readings = db.store_in::<Reading>(&world.readings);
        for sensor in keys("sensor", 2, true).into_iter().chain(keys("sensor", 2, false)) {
            let rows: Vec<Reading> = (0..2)
                .map(|r| Reading {
                    sensor: sensor.clone(),
                    at: format!("{r:03}"),
                    value: r,
                })
                .collect();
            readings.create_batch(&rows).await.unwrap();
            world.rows.extend(rows);
        }
        let files = db.blobs(&world.files);
        for name in keys("file", 2, true).into_iter().chain(keys("file", 1, false)) {
            let bytes = noise(200, 9).into_bytes();
            files.create(&name, bytes.clone()).await.unwrap();
            world.blobs.push((name, bytes));
        }
        world.rows.sort_by(|a, b| (&a.sensor, &a.at).cmp(&(&b.sensor, &b.at)));
        for name in keys("job", 1, true).into_iter().chain(keys("job", 1, false)) {
            let lock = db.lock(&name).in_container(world.locks.clone());
            let guard = lock.acquire(Duration::from_secs(15)).await.unwrap();
            world.tokens.push((name, guard.fencing_token()));
            guard.release().await.unwrap();
        }
        world
    }

    /// Deletes a moving reading through its account's raw rows (as if its
    /// writer had deleted it): the copy an earlier run made is then extra.
    pub async fn forget_a_moving_reading(&mut self, accounts: &Accounts) {
        let at = self
            .rows
            .iter()
            .position(|r| account_of(&r.sensor, 2) != account_of(&r.sensor, 3))
            .expect("a moving reading");
        let gone = self.rows.remove(at);
        let home = account_of(&gone.sensor, 2);
        let op = WriteOp::Delete {
            partition_key: gone.sensor.clone(),
            row_key: gone.at.clone(),
            condition: IfMatch::Any,
        };
        accounts.rows[home].execute(&self.readings, op).await.unwrap();
    }

    /// Checks the world on the grown pool: the old pool refused, every row,
    /// blob and lock found through the new one, and every row and blob in
    /// its home account only.
    pub async fn check(&self, accounts: &Accounts) {
        assert!(
            Tables::pooled(accounts.pool(2)).await.is_err(),
            "the old pool is refused"
        );
        let db = Tables::pooled(accounts.pool(3)).await.expect("the grown pool opens");
        let documents = db.store_in::<Document>(&self.documents);
        let found = documents.query(QueryOptions::all()).await.unwrap();
        assert_eq!(found.len(), self.docs.len());
        for (doc, file) in &self.docs {
            let read = found.iter().find(|d| d.pk == doc.pk).expect("every document survives");
            assert_eq!(read.body, doc.body, "{}", doc.pk);
            match &read.attachment {
                Some(a) => assert_eq!(Some(a.read_all().await.unwrap()), *file, "{}", doc.pk),
                None => assert!(file.is_none(), "{}", doc.pk),
            }
        }
        let readings = db.store_in::<Reading>(&self.readings);
        assert_eq!(readings.query(QueryOptions::all()).await.unwrap(), self.rows);
        let files = db.blobs(&self.files);
        for (name, bytes) in &self.blobs {
            assert_eq!(
                &files.get(name).await.unwrap().expect("every blob survives").bytes,
                bytes,
                "{name}"
            );
        }
        for (name, token) in &self.tokens {
            let lock = db.lock(name).in_container(self.locks.clone());
            assert_eq!(
                lock.last_token().await.unwrap(),
                *token,
                "lock {name} keeps its counter"
            );
            let guard = lock
                .try_acquire(Duration::from_secs(15))
                .await
                .unwrap()
                .expect("no lease left behind");
            assert!(guard.fencing_token() > *token, "lock {name}: tokens go on rising");
            guard.release().await.unwrap();
        }
        for i in 0..3 {
            for table in [&self.documents, &self.readings] {
                for pk in accounts.partitions_in(i, table).await {
                    assert_eq!(account_of(&pk, 3), i, "{pk} of {table} in account {i}");
                }
            }
            let prefix = format!("{}/", escape_segment(&self.documents));
            for (container, prefix) in [
                (self.files.as_str(), ""),
                (self.locks.as_str(), ""),
                (accounts.values.container(), prefix.as_str()),
            ] {
                for name in accounts.blobs_in(i, container, prefix).await {
                    let key = PooledBlobBackend::routing_key(&name).unwrap();
                    assert_eq!(account_of(&key, 3), i, "blob {name} of {container} in account {i}");
                }
            }
        }
        let record = accounts.rows[0].get(POOL_TABLE, "pool", "reshard").await.unwrap();
        assert!(record.is_none(), "the job's record is gone");
    }
}
