//! The soak under faults: 64 clients for 60 s (`FIGURES_SOAK_CLIENTS`,
//! `FIGURES_SOAK_SECS`) through the fault proxy of the test suite, which
//! drops the answer of 1 % of the writes after the service applied them.
//! The library runs the mix of `unified_tables_tests::soak` (shared
//! counters by `mutate`, list appends, creates, deletes, queries, large
//! values) and its check; the raw `azure_data_tables` crate (pooled client)
//! runs the same mix by hand, each read-modify-write a get and an `If-Match`
//! update retried on 412 as a hand-written client would, large values as
//! two 30,000-character properties (the crate has no split values). The
//! rate of each is the operations finished within the duration, over it;
//! beside the rates: p50 and p99 latency, the longest operation (those
//! started before the deadline finish after it), and lost and doubled
//! increments of each.
//! Kills: the process-kill chaos test (`tests/chaos.rs`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use azure_core::error::ErrorKind;
use azure_core::StatusCode;
use azure_data_tables::prelude::{IfMatchCondition, TableClient};
use futures::StreamExt as _;
use rand::{Rng as _, SeedableRng as _};
use serde::{Deserialize, Serialize};
use unified_tables::backend::azure::ConnectionString;
use unified_tables::Tables;
use unified_tables_tests::fault_proxy::{Fault, FaultProxy, Kinds};
use unified_tables_tests::soak::{self, Op, SoakConfig};

use crate::common::{fresh_table, pooled_crate_client, Failure};
use crate::report::{Figure, Target};

/// Dropped write answers per million writes (1 %).
const DROP_PER_MILLION: u32 = 10_000;

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct RawRow {
    #[serde(rename = "PartitionKey")]
    pk: String,
    #[serde(rename = "RowKey")]
    rk: String,
    #[serde(rename = "Value", default)]
    value: i32,
    #[serde(rename = "Text", default)]
    text: String,
    #[serde(rename = "More", default)]
    more: String,
}

impl RawRow {
    fn new(pk: &str, rk: &str) -> RawRow {
        RawRow {
            pk: pk.into(),
            rk: rk.into(),
            value: 0,
            text: String::new(),
            more: String::new(),
        }
    }
}

/// What one raw client saw.
#[derive(Debug, Default)]
struct RawLog {
    /// Per counter: (increments reported, increments that failed without an answer).
    increments: BTreeMap<usize, (u64, u64)>,
    latencies: Vec<u32>,
    /// Operations finished before the deadline.
    in_window: usize,
    errors: usize,
}

fn precondition_failed(e: &azure_core::Error) -> bool {
    matches!(e.kind(), ErrorKind::HttpResponse { status, .. } if *status == StatusCode::PreconditionFailed)
}

/// A get and an `If-Match` update of `f` applied, retried on 412.
async fn read_modify_write(table: &TableClient, pk: &str, rk: &str, f: impl Fn(&mut RawRow)) -> azure_core::Result<()> {
    let entity = table.partition_key_client(pk).entity_client(rk);
    loop {
        let got = entity.get::<RawRow>().await?;
        let mut row = got.entity;
        f(&mut row);
        match entity.update(&row, IfMatchCondition::Etag(got.etag))?.await {
            Ok(_) => return Ok(()),
            Err(e) if precondition_failed(&e) => continue,
            Err(e) => return Err(e),
        }
    }
}

/// One raw client: its table, the mix and what it saw.
struct RawClient<'a> {
    table: &'a TableClient,
    config: &'a SoakConfig,
    client: usize,
    rng: rand::rngs::StdRng,
    log: RawLog,
    items: Vec<String>,
}

async fn raw_op(c: &mut RawClient<'_>, seq: u64, op: Op) -> azure_core::Result<()> {
    let RawClient {
        table,
        config,
        client,
        rng,
        log,
        items,
    } = c;
    let (table, client) = (*table, *client);
    let own = format!("i{client}");
    match op {
        Op::Increment => {
            let n = rng.gen_range(0..config.counters);
            let result = read_modify_write(table, "c", &format!("c{n}"), |r| r.value += 1).await;
            let entry = log.increments.entry(n).or_default();
            match &result {
                Ok(()) => entry.0 += 1,
                Err(_) => entry.1 += 1,
            }
            result
        }
        Op::Append => {
            let n = rng.gen_range(0..config.histories);
            let id = format!("{client}.{seq}");
            read_modify_write(table, "h", &format!("h{n}"), |r| {
                if r.text.len() > 16_000 {
                    r.text.clear();
                }
                r.text.push(' ');
                r.text.push_str(&id);
            })
            .await
        }
        Op::Create => {
            let rk = format!("n{seq}");
            let mut row = RawRow::new(&own, &rk);
            row.text = format!("item {client} {seq}");
            table.insert::<_, serde_json::Value>(&row)?.await?;
            items.push(rk);
            Ok(())
        }
        Op::Delete => match items.pop() {
            Some(rk) => table
                .partition_key_client(&own)
                .entity_client(rk)
                .delete()
                .await
                .map(drop),
            None => Ok(()),
        },
        Op::Query => {
            let mut pages = table
                .query()
                .filter(format!("PartitionKey eq '{own}'"))
                .into_stream::<RawRow>();
            while let Some(page) = pages.next().await {
                page?;
            }
            Ok(())
        }
        Op::ReadHistory => {
            let n = rng.gen_range(0..config.histories);
            table
                .partition_key_client("h")
                .entity_client(format!("h{n}"))
                .get::<RawRow>()
                .await
                .map(drop)
        }
        Op::Large => {
            let mut row = RawRow::new("l", &format!("l{client}"));
            row.text = unified_tables_tests::noise(30_000, seq);
            row.more = unified_tables_tests::noise(30_000, seq + 1);
            let entity = table.partition_key_client("l").entity_client(format!("l{client}"));
            entity.insert_or_replace(&row)?.await?;
            entity.get::<RawRow>().await.map(drop)
        }
    }
}

/// The same mix through the raw crate; returns the logs and the wall time.
async fn raw_soak(table: TableClient, config: &SoakConfig) -> Result<Vec<RawLog>, Failure> {
    table.create().await?;
    for n in 0..config.counters {
        table
            .insert::<_, serde_json::Value>(RawRow::new("c", &format!("c{n}")))?
            .await?;
    }
    for n in 0..config.histories {
        table
            .insert::<_, serde_json::Value>(RawRow::new("h", &format!("h{n}")))?
            .await?;
    }
    let table = Arc::new(table);
    let started = Instant::now();
    let deadline = started + config.duration;
    let clients: Vec<_> = (0..config.clients)
        .map(|client| {
            let (table, config) = (table.clone(), config.clone());
            tokio::spawn(async move {
                let mut c = RawClient {
                    table: &table,
                    config: &config,
                    client,
                    rng: rand::rngs::StdRng::seed_from_u64(config.seed ^ (client as u64) << 20),
                    log: RawLog::default(),
                    items: Vec::new(),
                };
                let mut seq = 0u64;
                while Instant::now() < deadline {
                    seq += 1;
                    let op = Op::pick(c.rng.gen_range(0..100));
                    let t = Instant::now();
                    if raw_op(&mut c, seq, op).await.is_err() {
                        c.log.errors += 1;
                    }
                    c.log
                        .latencies
                        .push(t.elapsed().as_micros().min(u128::from(u32::MAX)) as u32);
                    c.log.in_window += usize::from(Instant::now() <= deadline);
                }
                c.log
            })
        })
        .collect();
    let mut logs = Vec::new();
    for c in clients {
        logs.push(c.await?);
    }
    Ok(logs)
}

fn percentiles(mut all: Vec<u32>) -> (f64, f64) {
    all.sort_unstable();
    let at = |p: f64| {
        all.get(((all.len().max(1) - 1) as f64 * p).round() as usize)
            .map_or(0.0, |v| f64::from(*v) / 1000.0)
    };
    (at(0.5), at(0.99))
}

/// The soak figures (Azure only: the in-memory backend has no answers to lose).
pub async fn figures(connection: Option<&str>) -> Result<Vec<Figure>, Failure> {
    let Some(connection) = connection else {
        return Ok(vec![Figure::alone(
            "soak under faults",
            "needs Azure or Azurite".into(),
        )]);
    };
    let clients = env_number("FIGURES_SOAK_CLIENTS", 64) as usize;
    let secs = env_number("FIGURES_SOAK_SECS", 60);
    let config = SoakConfig::new(clients, Duration::from_secs(secs));
    let shape = format!("{clients} clients × {secs} s, 1 % of write answers dropped");

    let proxy = FaultProxy::start(connection, 0x50A6).await?;
    let db = Tables::connect(&proxy.connection_string())?.without_cache();
    let table = fresh_table("Soak");
    soak::prepare(&db, &table, &config).await?;
    proxy.set_rate(Kinds::WRITES, Fault::DropAnswer, DROP_PER_MILLION);
    let run = soak::run(&db, &table, &config).await;
    proxy.clear();
    let verdict = soak::check(&db, &table, &run).await?;
    let lib_faults = proxy.counts().dropped_write_answers;

    let raw_proxy = FaultProxy::start(connection, 0x50A6).await?;
    let service = pooled_crate_client(&ConnectionString::parse(&raw_proxy.connection_string())?)?;
    let raw_table = fresh_table("SoakRaw");
    raw_proxy.set_rate(Kinds::WRITES, Fault::DropAnswer, DROP_PER_MILLION);
    let logs = raw_soak(service.table_client(&raw_table), &config).await?;
    raw_proxy.clear();
    let raw_faults = raw_proxy.counts().dropped_write_answers;
    let (mut raw_lost, mut raw_doubled) = (0u64, 0u64);
    let counters = service.table_client(&raw_table);
    for n in 0..config.counters {
        let (ok, failed) = logs.iter().fold((0, 0), |(a, b), l| {
            let (x, y) = l.increments.get(&n).copied().unwrap_or_default();
            (a + x, b + y)
        });
        let value = counters
            .partition_key_client("c")
            .entity_client(format!("c{n}"))
            .get::<RawRow>()
            .await?
            .entity
            .value as u64;
        raw_lost += ok.saturating_sub(value);
        raw_doubled += value.saturating_sub(ok + failed);
    }
    let raw_ops: usize = logs.iter().map(|l| l.latencies.len()).sum();
    let raw_errors: usize = logs.iter().map(|l| l.errors).sum();
    // As the library's: operations finished within the duration, over it.
    let raw_rate = logs.iter().map(|l| l.in_window).sum::<usize>() as f64 / config.duration.as_secs_f64();
    let raw_longest = logs
        .iter()
        .flat_map(|l| l.latencies.iter())
        .max()
        .map_or(0.0, |v| f64::from(*v) / 1000.0);
    let (raw_p50, raw_p99) = percentiles(logs.into_iter().flat_map(|l| l.latencies).collect());
    let longest = run
        .logs
        .iter()
        .flat_map(|l| l.latencies.values().flatten())
        .max()
        .map_or(0.0, |v| f64::from(*v) / 1000.0);

    let rate = |v: f64| (format!("{v:.0} ops/s"), v);
    let ms = |v: f64| (format!("{v:.1} ms"), v);
    let figures = vec![
        Figure::compared(format!("soak: {shape}: throughput vs raw crate (pooled)"), rate(verdict.rate(&run)), rate(raw_rate)).target(Target::AtLeast(0.9)),
        Figure::compared("soak: p50 latency vs raw crate".to_owned(), ms(verdict.latency_ms.0), ms(raw_p50)),
        Figure::compared("soak: p99 latency vs raw crate".to_owned(), ms(verdict.latency_ms.1), ms(raw_p99)),
        Figure::compared("soak: longest operation vs raw crate".to_owned(), ms(longest), ms(raw_longest)),
        Figure::alone(
            "soak: lost / doubled increments and appends, library".to_owned(),
            format!("lost {} / doubled {} ({} ops, {} answers dropped, {} unknown, {} violations)", verdict.lost, verdict.doubled, verdict.ops, lib_faults, verdict.unknown, verdict.violations.len()),
        ),
        Figure::alone(
            "soak: lost / doubled increments, raw crate (get + If-Match update, re-read on 412)".to_owned(),
            format!("lost {raw_lost} / doubled {raw_doubled} ({raw_ops} ops, {raw_faults} answers dropped, {raw_errors} errors)"),
        ),
        Figure::alone(
            "soak: resident memory after warm-up → end".to_owned(),
            format!("{:.0} → {:.0} MiB", verdict.memory.0 as f64 / 1048576.0, verdict.memory.1 as f64 / 1048576.0),
        ),
        Figure::alone(
            "soak: kills survived".to_owned(),
            "tests/chaos.rs: 50 SIGKILLs of a writer of large values per test run (UNIFIED_TABLES_CHAOS_KILLS=500 for more)".to_owned(),
        ),
    ];
    let mut by_op: BTreeMap<Op, Vec<u32>> = BTreeMap::new();
    for log in &run.logs {
        for (op, l) in &log.latencies {
            by_op.entry(*op).or_default().extend(l);
        }
    }
    for (op, l) in by_op {
        let n = l.len();
        let (p50, p99) = percentiles(l);
        eprintln!("soak, library: {op:?}: {n} ops, p50 {p50:.1} ms, p99 {p99:.1} ms");
    }
    for v in verdict.violations.iter().take(5) {
        eprintln!("soak violation: {v}");
    }
    Ok(figures)
}
