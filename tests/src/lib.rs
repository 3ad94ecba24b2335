//! The storage conformance suite: every scenario is one `async fn` taking an
//! [`Env`], run on the in-memory backend and on Azure (Azurite in CI) by
//! `tests/conformance.rs`.
//!
//! Azure scenarios run when `UNIFIED_TABLES_TEST_CONNECTION` holds a
//! connection string (`scripts/test.sh` starts Azurite and sets it). When it
//! is missing or the service is unreachable they are skipped with one line,
//! unless `CI=true` or `UNIFIED_TABLES_REQUIRE_AZURE=1`, in which case they fail.

pub mod blob_lease_scenarios;
pub mod blob_scenarios;
pub mod blob_stream_scenarios;
pub mod chaos;
pub mod connect;
pub mod differential;
pub mod fault_proxy;
pub mod gate;
pub mod index_model;
pub mod integrity_scan;
pub mod model;
pub mod pool;
pub mod rows;
pub mod scenarios;
pub mod soak;
pub mod steps;
pub mod telemetry;
pub mod text;
pub mod wide;
pub use text::{cyrillic_text, emoji_text, mixed_text};

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use unified_tables::backend::azure::{AzureBackend, AzureBlobBackend};
use unified_tables::backend::blob::BlobBackend;
use unified_tables::backend::counting::{CountingBackend, Counts};
use unified_tables::backend::memory::{MemoryBackend, MemoryBlobBackend};
use unified_tables::backend::pool::{PooledBackend, PooledBlobBackend};
use unified_tables::backend::Backend;
use unified_tables::{BlobOptions, StoreOptions, Tables};

/// The environment variable holding the Azure / Azurite connection string.
pub const CONNECTION_VAR: &str = "UNIFIED_TABLES_TEST_CONNECTION";
/// Set to `1` to make a missing or unreachable Azure endpoint a failure.
pub const REQUIRE_VAR: &str = "UNIFIED_TABLES_REQUIRE_AZURE";

/// Which backend a scenario runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The embedded in-memory backend.
    Memory,
    /// Azure Table Storage or Azurite.
    Azure,
    /// The embedded in-memory backend under the Cosmos DB for Table profile
    /// (rows in no order, random page cuts, the service's limits), with a
    /// separate in-memory blob account.
    Cosmos,
}

/// One scenario's world: a table backend and a blob backend wrapped in
/// request counters sharing one set of counts, and a table name no other
/// test uses.
#[derive(Debug, Clone)]
pub struct Env {
    /// Which backend.
    pub kind: Kind,
    /// Tables over the counting backend.
    pub tables: Tables,
    /// The counting decorator (shares its counts with `tables`).
    pub counter: CountingBackend<Arc<dyn Backend>>,
    /// A fresh table name for this scenario.
    pub table: String,
    /// The blob backend large values and files go to (counted into the same counts as `counter`).
    pub blobs: Option<Arc<dyn BlobBackend>>,
    /// The in-memory blob backends under `blobs` (one per account of a
    /// pool), whose clocks a scenario moves; empty on Azure.
    pub blob_clock: Vec<Arc<MemoryBlobBackend>>,
}

impl Env {
    /// Request counts (table and blob) since the last [`Env::reset_counts`].
    ///
    /// On the Cosmos profile, `queries` counts the queries started, as
    /// `query_starts` does: that service cuts a query's pages where it likes
    /// (at random sizes, empty ones included), so how many pages one query
    /// takes there says nothing of the crate. The scenarios that assert
    /// paging itself read `counter.counts()`.
    pub fn counts(&self) -> Counts {
        let mut counts = self.counter.counts();
        if !self.sorts_results() {
            counts.queries = counts.query_starts;
        }
        counts
    }

    /// Sets the counts back to zero.
    pub fn reset_counts(&self) {
        self.counter.reset();
    }

    /// Writes `row` as it is (insert or replace), past every check of the store:
    /// how other programs' rows reach a scenario.
    pub async fn put_raw(&self, row: unified_tables::Row) {
        use unified_tables::backend::{UpdateMode, WriteOp};
        self.counter
            .execute(
                &self.table,
                WriteOp::Upsert {
                    row,
                    mode: UpdateMode::Replace,
                },
            )
            .await
            .expect("a raw write");
    }

    /// The raw backend (counted).
    pub fn backend(&self) -> &CountingBackend<Arc<dyn Backend>> {
        &self.counter
    }

    /// Tables over the same backend and blobs, reading through `cache`
    /// (entries keyed as this environment's other handles key them).
    pub fn cached(&self, cache: unified_tables::ReadCache) -> Tables {
        self.tables.clone().with_cache(cache)
    }

    /// Tables with other options over the same backend.
    pub fn with_options(&self, options: StoreOptions) -> Tables {
        self.tables.clone().with_options(options)
    }

    /// Whether this is the emulator (whose known differences some scenarios assert).
    pub fn is_azure(&self) -> bool {
        self.kind == Kind::Azure
    }

    /// The service profile the scenario's backend answers with.
    pub fn profile(&self) -> unified_tables::service::ServiceProfile {
        self.counter.profile()
    }

    /// The `db.system.name` of the scenario's table operations:
    /// `azure.cosmosdb` on the Cosmos profile, `azure_table_storage` elsewhere.
    pub fn db_system(&self) -> &'static str {
        match self.profile() {
            unified_tables::service::ServiceProfile::CosmosTable => unified_tables::telemetry::DB_SYSTEM_COSMOS,
            _ => unified_tables::telemetry::DB_SYSTEM,
        }
    }

    /// Whether query results come back in key order (every backend but the
    /// Cosmos profile).
    pub fn sorts_results(&self) -> bool {
        self.profile().sorts_results()
    }

    /// Whether the Azure backend is the local emulator (Azurite), whose documented
    /// differences from the service some scenarios assert.
    pub fn is_emulator(&self) -> bool {
        let local = |var: &str| {
            std::env::var(var).is_ok_and(|c| {
                c.contains("devstoreaccount1") || c.contains("UseDevelopmentStorage") || c.contains("127.0.0.1")
            })
        };
        self.kind == Kind::Azure && (local(CONNECTION_VAR) || local(POOL_VAR))
    }

    /// Another fresh table name.
    pub fn another_table(&self) -> String {
        unique_table("x")
    }

    /// Lets `time` pass on the blob service's clock: the in-memory clock
    /// moves at once; on Azure the scenario sleeps.
    pub async fn pass_blob_service_time(&self, time: std::time::Duration) {
        if self.blob_clock.is_empty() {
            tokio::time::sleep(time).await;
        }
        for clock in &self.blob_clock {
            clock.advance_clock(time);
        }
    }
}

/// A table name unique to this process and run: letters and digits only.
pub fn unique_table(hint: &str) -> String {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    static RUN: OnceLock<u32> = OnceLock::new();
    let run = *RUN.get_or_init(rand::random::<u32>);
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    let clean: String = hint.chars().filter(|c| c.is_ascii_alphanumeric()).take(30).collect();
    format!("t{clean}{run:08x}{n}")
}

fn env_over(kind: Kind, backend: Arc<dyn Backend>, blobs: Option<Arc<dyn BlobBackend>>, hint: &str) -> Env {
    let counter = CountingBackend::new(backend);
    let blobs = blobs.map(|b| Arc::new(counter.share_counts(b)) as Arc<dyn BlobBackend>);
    // The suite asserts the requests each verb makes: its stores read the table
    // every time. The cache scenarios build caching handles with `Env::cached`.
    let mut tables = Tables::with_backend(counter.clone()).without_cache();
    if let Some(b) = &blobs {
        tables = tables.with_blobs(b.clone(), blob_options());
    }
    Env {
        kind,
        tables,
        counter,
        table: unique_table(hint),
        blobs,
        blob_clock: Vec::new(),
    }
}

/// [`blob_options`] with no cleanup grace: a replaced blob is released as
/// soon as it is older than the blob service's one-second clock.
pub fn eager_blob_options() -> BlobOptions {
    blob_options().with_cleanup_grace(std::time::Duration::ZERO)
}

/// Tables of `env` whose blob store releases replaced blobs without a grace.
pub fn eager_tables(env: &Env) -> Tables {
    let blobs = env.blobs.clone().expect("a blob backend");
    env.tables.clone().with_blobs(blobs, eager_blob_options())
}

/// Blob options for tests: a container of this run, the default threshold and grace.
pub fn blob_options() -> BlobOptions {
    static RUN: OnceLock<u32> = OnceLock::new();
    let run = *RUN.get_or_init(rand::random::<u32>);
    BlobOptions::new()
        .with_container(format!("values-{run:08x}"))
        .expect("a valid container name")
}

/// An environment on Azure / Azurite over the given backends (connected
/// some other way than [`CONNECTION_VAR`]).
pub fn azure_env_over(backend: Arc<dyn Backend>, blobs: Option<Arc<dyn BlobBackend>>, hint: &str) -> Env {
    env_over(Kind::Azure, backend, blobs, hint)
}

/// An environment on a fresh in-memory backend.
pub fn memory_env(hint: &str) -> Env {
    let blobs = Arc::new(MemoryBlobBackend::new());
    Env {
        blob_clock: vec![blobs.clone()],
        ..env_over(Kind::Memory, Arc::new(MemoryBackend::new()), Some(blobs), hint)
    }
}

/// The environment variable that fixes the seed of the Cosmos profile's
/// random order and page cuts (a failing run prints its seed).
pub const COSMOS_SEED_VAR: &str = "UNIFIED_TABLES_COSMOS_SEED";

/// The seed of a Cosmos-profile backend: [`COSMOS_SEED_VAR`] when set, else
/// drawn, and printed either way so a failure can be run again.
pub fn cosmos_seed(hint: &str) -> u64 {
    let seed = std::env::var(COSMOS_SEED_VAR)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random::<u64>);
    eprintln!("{hint}: Cosmos profile seed {seed} (set {COSMOS_SEED_VAR}={seed} to repeat)");
    seed
}

/// An environment on a fresh in-memory backend under the Cosmos DB for
/// Table profile, with a separate in-memory blob account.
pub fn cosmos_env(hint: &str) -> Env {
    let blobs = Arc::new(MemoryBlobBackend::new());
    let backend = MemoryBackend::cosmos(cosmos_seed(hint));
    Env {
        blob_clock: vec![blobs.clone()],
        ..env_over(Kind::Cosmos, Arc::new(backend), Some(blobs), hint)
    }
}

/// How many accounts the pooled environments have.
pub const POOL_ACCOUNTS: usize = 3;

/// An environment on a pool of [`POOL_ACCOUNTS`] fresh in-memory accounts
/// (rows and blobs), routed by partition as `Tables::pooled` routes them.
pub fn pooled_memory_env(hint: &str) -> Env {
    let rows: Vec<Arc<dyn Backend>> = (0..POOL_ACCOUNTS)
        .map(|_| Arc::new(MemoryBackend::new()) as Arc<dyn Backend>)
        .collect();
    let clocks: Vec<Arc<MemoryBlobBackend>> = (0..POOL_ACCOUNTS).map(|_| Arc::new(MemoryBlobBackend::new())).collect();
    let blobs: Vec<Arc<dyn BlobBackend>> = clocks.iter().map(|b| b.clone() as Arc<dyn BlobBackend>).collect();
    let backend = PooledBackend::new(rows).expect("a pool of three");
    let blobs = PooledBlobBackend::new(blobs).expect("a pool of three");
    Env {
        blob_clock: clocks,
        ..env_over(Kind::Memory, Arc::new(backend), Some(Arc::new(blobs)), hint)
    }
}

/// The environment variable with the connection strings of a pool of
/// Azure / Azurite accounts for the pooled scenarios, separated by `|`.
pub const POOL_VAR: &str = "UNIFIED_TABLES_TEST_POOL";

/// An environment on the pool of accounts [`POOL_VAR`] names, or `None`
/// (with one line on stderr) when none is configured and none is required.
pub async fn pooled_azure_env(hint: &str) -> Option<Env> {
    let Ok(connections) = std::env::var(POOL_VAR) else {
        return skip(&format!("{POOL_VAR} is not set"));
    };
    let mut rows: Vec<Arc<dyn Backend>> = Vec::new();
    let mut blobs: Vec<Arc<dyn BlobBackend>> = Vec::new();
    for connection in connections.split('|').filter(|c| !c.trim().is_empty()) {
        match (
            AzureBackend::from_connection_string(connection),
            AzureBlobBackend::from_connection_string(connection),
        ) {
            (Ok(r), Ok(b)) => {
                rows.push(Arc::new(r));
                blobs.push(Arc::new(b));
            }
            (Err(e), _) | (_, Err(e)) => return skip(&format!("a connection string of {POOL_VAR} is not usable: {e}")),
        }
    }
    if rows.len() < 2 {
        return skip(&format!("{POOL_VAR} names fewer than two accounts"));
    }
    let backend = PooledBackend::new(rows).expect("accounts");
    let blobs = PooledBlobBackend::new(blobs).expect("accounts");
    Some(env_over(Kind::Azure, Arc::new(backend), Some(Arc::new(blobs)), hint))
}

fn required() -> bool {
    std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
        || std::env::var(REQUIRE_VAR).is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}

fn skip(reason: &str) -> Option<Env> {
    if required() {
        panic!("the Azure scenarios are required here (CI=true or {REQUIRE_VAR}=1) but {reason}; run scripts/test.sh, which starts Azurite");
    }
    static SAID: OnceLock<()> = OnceLock::new();
    SAID.get_or_init(|| {
        eprintln!("skipping Azure scenarios: {reason} (scripts/test.sh starts Azurite and sets {CONNECTION_VAR})")
    });
    None
}

/// An environment on Azure / Azurite, or `None` (with one line on stderr)
/// when none is configured and none is required.
pub async fn azure_env(hint: &str) -> Option<Env> {
    let Ok(connection) = std::env::var(CONNECTION_VAR) else {
        return skip(&format!("{CONNECTION_VAR} is not set"));
    };
    let backend = match AzureBackend::from_connection_string(&connection) {
        Ok(b) => b,
        Err(e) => return skip(&format!("the connection string is not usable: {e}")),
    };
    let blobs: Option<Arc<dyn BlobBackend>> = match AzureBlobBackend::from_connection_string(&connection) {
        Ok(b) => Some(Arc::new(b)),
        Err(e) => return skip(&format!("the connection string has no usable blob endpoint: {e}")),
    };
    let env = env_over(Kind::Azure, Arc::new(backend), blobs, hint);
    // Probe once per process so an unreachable emulator is reported clearly.
    static PROBE: tokio::sync::OnceCell<Result<(), String>> = tokio::sync::OnceCell::const_new();
    let probe = PROBE
        .get_or_init(|| async {
            let probe_table = unique_table("probe");
            env.counter
                .create_table(&probe_table)
                .await
                .map_err(|e| e.to_string())?;
            env.counter.delete_table(&probe_table).await.map_err(|e| e.to_string())
        })
        .await;
    if let Err(e) = probe {
        return skip(&format!("the service at {CONNECTION_VAR} is unreachable: {e}"));
    }
    env.reset_counts();
    Some(env)
}

/// `len` characters of incompressible printable text, the same for the same seed.
pub fn noise(len: usize, seed: u64) -> String {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..len).map(|_| char::from(rng.gen_range(b'!'..=b'~'))).collect()
}
