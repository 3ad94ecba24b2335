//! Point operations: `Store::get`, `Store::upsert` and `Store::create` of one
//! small row, with 1 and with 16 requests in flight, as operations per second
//! of wall time; on Azure beside the same requests sent with the raw
//! `azure_data_tables` crate on a pooled client (get entity, insert or
//! replace, insert), with the target of at least 0.95x the crate's rate.
//!
//! Library and crate take turns over interleaved rounds; each figure is the
//! median of the rounds.

use std::future::Future;
use std::time::{Duration, Instant};

use azure_data_tables::prelude::{TableClient, TableServiceClient};
use futures::stream::{self, StreamExt as _, TryStreamExt as _};
use unified_tables::{Store, Tables};

use crate::common::{fresh_table, Failure, RawReading, RawReadingOwned, Reading};
use crate::report::{median, thousands, Figure, Target};

/// The partition every row goes to.
const PARTITION: &str = "point";
/// Interleaved rounds.
const ROUNDS: usize = 3;
/// Requests in flight.
const IN_FLIGHT: [usize; 2] = [1, 16];

/// A point operation.
#[derive(Debug, Clone, Copy)]
enum Op {
    Get,
    Upsert,
    Create,
}

impl Op {
    const ALL: [Op; 3] = [Op::Get, Op::Upsert, Op::Create];

    fn name(self) -> &'static str {
        match self {
            Op::Get => "get",
            Op::Upsert => "upsert",
            Op::Create => "create",
        }
    }
}

/// Runs `n` operations, `in_flight` at a time, and returns the wall time.
async fn run<F, Fut>(n: usize, in_flight: usize, op: F) -> Result<Duration, Failure>
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<(), Failure>>,
{
    let started = Instant::now();
    stream::iter(0..n)
        .map(op)
        .buffer_unordered(in_flight)
        .try_for_each(|()| async { Ok(()) })
        .await?;
    Ok(started.elapsed())
}

/// `n` operations through the typed store. `round` keeps created keys apart.
async fn library(
    store: &Store<Reading>,
    op: Op,
    n: usize,
    in_flight: usize,
    round: usize,
) -> Result<Duration, Failure> {
    run(n, in_flight, |i| async move {
        match op {
            Op::Get => {
                let got = store.get((PARTITION, format!("s{i:07}").as_str())).await?;
                let got = got.ok_or("a seeded row is missing")?;
                if got.label != format!("item {}", i % 97) {
                    return Err(format!("row {i} reads back as {got:?}").into());
                }
            }
            Op::Upsert => {
                store.upsert(&mut Reading::nth(PARTITION, "s", i)).await?;
            }
            Op::Create => {
                store
                    .create(&mut Reading::nth(PARTITION, &format!("lib{round}-{in_flight}-"), i))
                    .await?;
            }
        }
        Ok(())
    })
    .await
}

/// The same `n` operations with the raw crate.
async fn raw(table: &TableClient, op: Op, n: usize, in_flight: usize, round: usize) -> Result<Duration, Failure> {
    run(n, in_flight, |i| async move {
        match op {
            Op::Get => {
                let got = table
                    .partition_key_client(PARTITION)
                    .entity_client(format!("s{i:07}"))
                    .get::<RawReadingOwned>()
                    .await?
                    .entity;
                let value: i64 = got.value.parse()?;
                if value != i as i64 * 7 || got.label != format!("item {}", i % 97) {
                    return Err(format!("row {i} reads back as {got:?} through the crate").into());
                }
            }
            Op::Upsert => {
                let row = Reading::nth(PARTITION, "s", i);
                table
                    .partition_key_client(PARTITION)
                    .entity_client(row.rk.as_str())
                    .insert_or_replace(RawReading::from(&row))?
                    .await?;
            }
            Op::Create => {
                let row = Reading::nth(PARTITION, &format!("raw{round}-{in_flight}-"), i);
                table.insert::<_, serde_json::Value>(RawReading::from(&row))?.await?;
            }
        }
        Ok(())
    })
    .await
}

/// The point-operation figures on `db`, `n` operations per measurement;
/// beside the raw crate when `service` is given.
pub async fn figures(db: &Tables, service: Option<&TableServiceClient>, n: usize) -> Result<Vec<Figure>, Failure> {
    let table = fresh_table("Point");
    let store: Store<Reading> = db.store_in(&table);
    store.create_batch(&Reading::many(PARTITION, "s", n)).await?;
    let client = service.map(|s| s.table_client(&table));
    // Warm-up (not measured): a few of each, through each path.
    for op in Op::ALL {
        library(&store, op, 16, 16, usize::MAX).await?;
        if let Some(client) = &client {
            raw(client, op, 16, 16, usize::MAX).await?;
        }
    }

    // times[op][in_flight] = (library rounds, raw rounds)
    let mut times = vec![vec![(Vec::new(), Vec::new()); IN_FLIGHT.len()]; Op::ALL.len()];
    for round in 0..ROUNDS {
        for (o, &op) in Op::ALL.iter().enumerate() {
            for (f, &in_flight) in IN_FLIGHT.iter().enumerate() {
                let (lib_times, raw_times) = &mut times[o][f];
                let Some(client) = &client else {
                    lib_times.push(library(&store, op, n, in_flight, round).await?);
                    continue;
                };
                if round % 2 == 0 {
                    lib_times.push(library(&store, op, n, in_flight, round).await?);
                    raw_times.push(raw(client, op, n, in_flight, round).await?);
                } else {
                    raw_times.push(raw(client, op, n, in_flight, round).await?);
                    lib_times.push(library(&store, op, n, in_flight, round).await?);
                }
            }
        }
    }
    db.backend().delete_table(&table).await?;

    let rate = |rounds: &Vec<Duration>| {
        let per_second = n as f64 / median(rounds.clone()).as_secs_f64();
        (format!("{} ops/s", thousands(per_second as usize)), per_second)
    };
    let mut figures = Vec::new();
    for (o, op) in Op::ALL.iter().enumerate() {
        for (f, in_flight) in IN_FLIGHT.iter().enumerate() {
            let (lib_times, raw_times) = &times[o][f];
            let name = format!("{}, {in_flight} in flight", op.name());
            let raw = (!raw_times.is_empty()).then(|| rate(raw_times));
            figures.push(Figure::beside_raw(name, rate(lib_times), raw, Target::AtLeast(0.95)));
        }
    }
    Ok(figures)
}
