//! The soak workload: N concurrent clients for a while against one table,
//! each running a seeded mix of `mutate` on shared counters, list appends
//! (each append adds its unique id to a shared history), creates, deletes
//! and queries of its own items, history reads and large values, recording
//! what every operation reported. [`check`] then compares the table with the
//! record: no lost and no doubled increment or append (an Elle-style
//! list-append check), every read a prefix of the final history, every
//! query the items the record allows, no `Integrity` error; and the
//! process's resident memory after warm-up does not grow.
//!
//! `tests/soak.rs` runs it short (8 clients, 10 s) through the fault proxy;
//! the figures command runs it long (64 clients, 60 s) and prints its rates.

mod check;
mod client;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::{Rng as _, SeedableRng as _};
use unified_tables::{ETag, TableEntity, Tables};

pub use check::{check, Verdict};

/// A counter every client increments.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct SoakCounter {
    /// `c`.
    #[table(partition_key)]
    pub pk: String,
    /// `c{n}`.
    #[table(row_key)]
    pub rk: String,
    /// Increments applied.
    pub value: i64,
    /// The version read.
    #[table(etag)]
    pub etag: Option<ETag>,
}

/// A history every client appends its operation ids to.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct SoakHistory {
    /// `h`.
    #[table(partition_key)]
    pub pk: String,
    /// `h{n}`.
    #[table(row_key)]
    pub rk: String,
    /// The ids appended, in order (a large gzip value once it grows).
    #[table(split = "gzip")]
    pub ids: Vec<String>,
    /// The version read.
    #[table(etag)]
    pub etag: Option<ETag>,
}

/// An item a client creates, queries and deletes in its own partition.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct SoakItem {
    /// `i{client}`.
    #[table(partition_key)]
    pub pk: String,
    /// `n{seq}`.
    #[table(row_key)]
    pub rk: String,
    /// Some text.
    pub payload: String,
    /// The version read.
    #[table(etag)]
    pub etag: Option<ETag>,
}

/// A client's large value: split over cells (and rows, at the larger sizes).
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct SoakLarge {
    /// `l`.
    #[table(partition_key)]
    pub pk: String,
    /// `l{client}`.
    #[table(row_key)]
    pub rk: String,
    /// The version of the body.
    pub version: i64,
    /// Text derived from the version.
    #[table(split = "text")]
    pub body: String,
    /// The version read.
    #[table(etag)]
    pub etag: Option<ETag>,
}

impl SoakLarge {
    /// Version `version` of client `client`'s large value, `chars` characters long.
    pub fn at(client: usize, version: i64, chars: usize) -> SoakLarge {
        SoakLarge {
            pk: "l".into(),
            rk: format!("l{client}"),
            version,
            body: crate::noise(chars, (client as u64) << 32 ^ version as u64),
            etag: None,
        }
    }
}

/// How a soak runs.
#[derive(Debug, Clone)]
pub struct SoakConfig {
    /// Concurrent clients.
    pub clients: usize,
    /// How long they run.
    pub duration: Duration,
    /// The seed of every client's mix.
    pub seed: u64,
    /// Shared counters.
    pub counters: usize,
    /// Shared histories.
    pub histories: usize,
    /// Characters of a large value, at most (each write picks a size up to it).
    pub large_chars: usize,
    /// Whether every lost answer must be settled (no `OutcomeUnknown`).
    /// Off by default: a conditional write whose answer is lost and whose
    /// row another writer changes before the read-back cannot be settled by
    /// its token and is `OutcomeUnknown`; the check then allows it to have
    /// landed once or not at all, and counters equal the increments reported
    /// exactly when there was none.
    pub expect_settled: bool,
}

impl SoakConfig {
    /// `clients` clients for `duration`, sharing one counter and one history
    /// per four clients (at least 8 of each): every key is contended.
    pub fn new(clients: usize, duration: Duration) -> SoakConfig {
        let keys = (clients / 4).max(8);
        SoakConfig {
            clients,
            duration,
            seed: 0x50A6,
            counters: keys,
            histories: keys,
            large_chars: 120_000,
            expect_settled: false,
        }
    }
}

/// The operations of the mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Op {
    /// `mutate` of a counter: +1.
    Increment,
    /// `mutate` of a history: push one id.
    Append,
    /// `create` of a new item.
    Create,
    /// `delete` of one of the client's items.
    Delete,
    /// A query of the client's partition.
    Query,
    /// A point read of a history.
    ReadHistory,
    /// `upsert` of the client's large value, read back.
    Large,
}

impl Op {
    /// The operation a roll of 0..100 picks: 30 % increments, 25 % appends,
    /// 15 % creates, 10 % deletes, 8 % queries, 7 % history reads, 5 % large values.
    pub fn pick(roll: u32) -> Op {
        match roll {
            0..30 => Op::Increment,
            30..55 => Op::Append,
            55..70 => Op::Create,
            70..80 => Op::Delete,
            80..88 => Op::Query,
            88..95 => Op::ReadHistory,
            _ => Op::Large,
        }
    }
}

/// What an operation reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reported {
    /// Success.
    Ok,
    /// `OutcomeUnknown`: applied or not.
    Unknown,
    /// Any other failure (taken as not applied; a violation of the soak).
    Failed,
}

/// One client's record.
#[derive(Debug, Default)]
pub struct ClientLog {
    /// Per counter: increments reported `(ok, unknown)`.
    pub increments: BTreeMap<usize, (u64, u64)>,
    /// Appended ids by history, in the client's order, with what each reported.
    pub appends: BTreeMap<usize, Vec<(String, Reported)>>,
    /// History reads: (history, length, [`list_hash`] of the ids read).
    pub reads: Vec<(usize, usize, u64)>,
    /// Items whose create or delete reported success, still present by the record.
    pub items: BTreeSet<String>,
    /// Items whose create or delete was unknown: present or not.
    pub maybe_items: BTreeSet<String>,
    /// Queries whose result the record did not allow.
    pub bad_queries: Vec<String>,
    /// The large value: the last version reported written, and later unknown ones.
    pub large: (Option<i64>, Vec<i64>),
    /// Operation latencies in microseconds, by operation.
    pub latencies: BTreeMap<Op, Vec<u32>>,
    /// Operations that finished before the run's deadline (those started
    /// before it and finished after count in the latencies only).
    pub in_window: usize,
    /// Errors other than `OutcomeUnknown`, as text.
    pub errors: Vec<String>,
    /// `Integrity` errors.
    pub integrity: usize,
    /// `OutcomeUnknown` errors.
    pub unknown: usize,
    /// `mutate` calls that gave up after their attempts under contention
    /// (a definite "not applied": checked as such).
    pub gave_up: usize,
    /// Other errors.
    pub failed: usize,
}

/// A hash of a list of ids (the same list, the same hash, in every process).
pub fn list_hash(ids: &[String]) -> u64 {
    use std::hash::{Hash as _, Hasher as _};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    ids.hash(&mut h);
    h.finish()
}

/// The resident set size of this process in bytes (Linux; 0 elsewhere).
pub fn resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|p| p.parse::<u64>().ok()))
        .map_or(0, |pages| pages * 4096)
}

/// What a soak did: every client's record and the memory samples.
#[derive(Debug)]
pub struct SoakRun {
    /// The configuration.
    pub config: SoakConfig,
    /// Every client's record.
    pub logs: Vec<ClientLog>,
    /// `(seconds since the start, resident bytes)`, every 200 ms.
    pub memory: Vec<(f64, u64)>,
    /// The most operations in flight at once.
    pub max_in_flight: usize,
    /// How long the clients ran.
    pub elapsed: Duration,
}

/// Creates the counters and histories `config` names in `table`.
pub async fn prepare(tables: &Tables, table: &str, config: &SoakConfig) -> unified_tables::Result<()> {
    let counters = tables.store_in::<SoakCounter>(table);
    counters.ensure_created().await?;
    for n in 0..config.counters {
        let mut c = SoakCounter {
            pk: "c".into(),
            rk: format!("c{n}"),
            value: 0,
            etag: None,
        };
        counters.upsert(&mut c).await?;
    }
    let histories = tables.store_in::<SoakHistory>(table);
    for n in 0..config.histories {
        let mut h = SoakHistory {
            pk: "h".into(),
            rk: format!("h{n}"),
            ids: Vec::new(),
            etag: None,
        };
        histories.upsert(&mut h).await?;
    }
    Ok(())
}

/// How many times a soak's `mutate` re-reads and re-applies under contention.
pub const MUTATE_ATTEMPTS: u32 = 100;

/// Runs the clients of `config` against `table` (after [`prepare`]); their
/// `mutate` calls try up to [`MUTATE_ATTEMPTS`] times.
pub async fn run(tables: &Tables, table: &str, config: &SoakConfig) -> SoakRun {
    let tables = &tables.clone().with_options(unified_tables::StoreOptions {
        mutate_attempts: unified_tables::MutateAttempts::new(MUTATE_ATTEMPTS).expect("a valid attempt count"),
        ..Default::default()
    });
    let started = Instant::now();
    let deadline = started + config.duration;
    let in_flight = Arc::new(AtomicUsize::new(0));
    let max_in_flight = Arc::new(AtomicUsize::new(0));
    let memory = Arc::new(Mutex::new(Vec::new()));
    let sampler = {
        let memory = memory.clone();
        tokio::spawn(async move {
            loop {
                memory
                    .lock()
                    .unwrap()
                    .push((started.elapsed().as_secs_f64(), resident_bytes()));
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
    };
    let clients: Vec<_> = (0..config.clients)
        .map(|client| {
            let (tables, table, config) = (tables.clone(), table.to_owned(), config.clone());
            let (in_flight, max_in_flight) = (in_flight.clone(), max_in_flight.clone());
            tokio::spawn(async move {
                let mut c = client::Client {
                    tables: &tables,
                    table: &table,
                    config: &config,
                    client,
                    rng: rand::rngs::StdRng::seed_from_u64(config.seed ^ (client as u64) << 20),
                    log: ClientLog::default(),
                };
                let mut seq = 0u64;
                while Instant::now() < deadline {
                    seq += 1;
                    let op = Op::pick(c.rng.gen_range(0..100));
                    let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                    max_in_flight.fetch_max(now, Ordering::SeqCst);
                    let t = Instant::now();
                    client::one_op(&mut c, seq, op).await;
                    let micros = t.elapsed().as_micros().min(u128::from(u32::MAX)) as u32;
                    in_flight.fetch_sub(1, Ordering::SeqCst);
                    c.log.latencies.entry(op).or_default().push(micros);
                    c.log.in_window += usize::from(Instant::now() <= deadline);
                }
                c.log
            })
        })
        .collect();
    let mut logs = Vec::new();
    for c in clients {
        logs.push(c.await.expect("a soak client panicked"));
    }
    let elapsed = started.elapsed();
    sampler.abort();
    let memory = memory.lock().unwrap().clone();
    SoakRun {
        config: config.clone(),
        logs,
        memory,
        max_in_flight: max_in_flight.load(Ordering::SeqCst),
        elapsed,
    }
}
