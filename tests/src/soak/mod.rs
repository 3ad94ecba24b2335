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

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::{Rng as _, SeedableRng as _};
use unified_tables::{ETag, Error, ErrorKind, QueryOptions, TableEntity, Tables};

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
    /// Whether every lost answer must be settled (no `OutcomeUnknown`):
    /// counters then equal the increments reported.
    pub expect_settled: bool,
}

impl SoakConfig {
    /// The short form: `clients` clients for `duration`, 8 counters and histories.
    pub fn new(clients: usize, duration: Duration) -> SoakConfig {
        SoakConfig {
            clients,
            duration,
            seed: 0x50A6,
            counters: 8,
            histories: 8,
            large_chars: 120_000,
            expect_settled: true,
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

fn record(log: &mut ClientLog, err: &Error) -> Reported {
    match err.kind() {
        ErrorKind::OutcomeUnknown => {
            log.unknown += 1;
            Reported::Unknown
        }
        ErrorKind::PreconditionFailed => {
            log.gave_up += 1;
            Reported::Failed
        }
        kind => {
            log.failed += 1;
            if matches!(err, Error::Integrity { .. }) || kind == ErrorKind::Damaged {
                log.integrity += 1;
            }
            if log.errors.len() < 20 {
                log.errors.push(err.to_string());
            }
            Reported::Failed
        }
    }
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
                let mut c = Client {
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
                    one_op(&mut c, seq, op).await;
                    let micros = t.elapsed().as_micros().min(u128::from(u32::MAX)) as u32;
                    in_flight.fetch_sub(1, Ordering::SeqCst);
                    c.log.latencies.entry(op).or_default().push(micros);
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

/// One client: where it writes, the mix and its record.
struct Client<'a> {
    tables: &'a Tables,
    table: &'a str,
    config: &'a SoakConfig,
    client: usize,
    rng: rand::rngs::StdRng,
    log: ClientLog,
}

async fn one_op(c: &mut Client<'_>, seq: u64, op: Op) {
    let Client {
        tables,
        table,
        config,
        client,
        rng,
        log,
    } = c;
    let (tables, table, config, client) = (*tables, *table, *config, *client);
    match op {
        Op::Increment => {
            let n = rng.gen_range(0..config.counters);
            let result = tables
                .store_in::<SoakCounter>(table)
                .mutate(("c", format!("c{n}").as_str()), |c| c.value += 1)
                .await;
            let entry = log.increments.entry(n).or_default();
            match result.as_ref().map_err(|e| e.kind()) {
                Ok(_) => entry.0 += 1,
                Err(ErrorKind::OutcomeUnknown) => entry.1 += 1,
                Err(_) => {}
            }
            if let Err(e) = result {
                record(log, &e);
            }
        }
        Op::Append => {
            let n = rng.gen_range(0..config.histories);
            let id = format!("{client}.{seq}");
            let result = tables
                .store_in::<SoakHistory>(table)
                .mutate(("h", format!("h{n}").as_str()), |h| h.ids.push(id.clone()))
                .await;
            let reported = match result {
                Ok(_) => Reported::Ok,
                Err(e) => record(log, &e),
            };
            log.appends.entry(n).or_default().push((id, reported));
        }
        Op::Create => {
            let rk = format!("n{seq}");
            let mut item = SoakItem {
                pk: format!("i{client}"),
                rk: rk.clone(),
                payload: format!("item {client} {seq}"),
                etag: None,
            };
            match tables.store_in::<SoakItem>(table).create(&mut item).await {
                Ok(_) => {
                    log.items.insert(rk);
                }
                Err(e) => {
                    if record(log, &e) == Reported::Unknown {
                        log.maybe_items.insert(rk);
                    }
                }
            }
        }
        Op::Delete => {
            let Some(rk) = log.items.iter().next().cloned() else {
                return;
            };
            let pk = format!("i{client}");
            match tables
                .store_in::<SoakItem>(table)
                .delete((pk.as_str(), rk.as_str()))
                .await
            {
                Ok(_) => {
                    log.items.remove(&rk);
                }
                Err(e) => {
                    if record(log, &e) == Reported::Unknown {
                        log.items.remove(&rk);
                        log.maybe_items.insert(rk);
                    }
                }
            }
        }
        Op::Query => {
            let pk = format!("i{client}");
            match tables
                .store_in::<SoakItem>(table)
                .query(QueryOptions::partition(pk))
                .await
            {
                Ok(found) => {
                    let found: BTreeSet<String> = found.into_iter().map(|i| i.rk).collect();
                    let missing = log.items.difference(&found).next();
                    let extra = found
                        .iter()
                        .find(|rk| !log.items.contains(*rk) && !log.maybe_items.contains(*rk));
                    if missing.is_some() || extra.is_some() {
                        log.bad_queries.push(format!(
                            "client {client}: a query misses {missing:?} or returns {extra:?}"
                        ));
                    }
                }
                Err(e) => {
                    record(log, &e);
                }
            }
        }
        Op::ReadHistory => {
            let n = rng.gen_range(0..config.histories);
            match tables
                .store_in::<SoakHistory>(table)
                .get(("h", format!("h{n}").as_str()))
                .await
            {
                Ok(Some(h)) => log.reads.push((n, h.ids.len(), list_hash(&h.ids))),
                Ok(None) => log.errors.push(format!("history h{n} is gone")),
                Err(e) => {
                    record(log, &e);
                }
            }
        }
        Op::Large => {
            let version = seq as i64;
            let chars = rng.gen_range(1_000..=config.large_chars.max(1_000));
            let store = tables.store_in::<SoakLarge>(table);
            let mut doc = SoakLarge::at(client, version, chars);
            let written = match store.upsert(&mut doc).await {
                Ok(_) => {
                    log.large = (Some(version), Vec::new());
                    true
                }
                Err(e) => {
                    if record(log, &e) == Reported::Unknown {
                        log.large.1.push(version);
                    }
                    false
                }
            };
            match store.get(("l", format!("l{client}").as_str())).await {
                Ok(Some(back))
                    if (!written || back.version == version)
                        && back.body == SoakLarge::at(client, back.version, back.body.len()).body => {}
                Ok(other) => log.errors.push(format!(
                    "client {client}: the large value reads as {:?}, not a version written",
                    other.map(|d| d.version)
                )),
                Err(e) => {
                    record(log, &e);
                }
            }
        }
    }
}
