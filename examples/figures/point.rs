//! Point operations: `Store::get`, `Store::upsert`, `Store::create` and
//! `Store::mutate` of one small row, with 1 and with 16 requests in flight, as operations per second
//! of wall time; on Azure beside the same requests sent with the raw
//! `azure_data_tables` crate on a pooled client (get entity, insert or
//! replace, insert, get entity then update with its ETag), with the target of at least 0.95x the crate's rate.
//!
//! Library and crate take turns over interleaved rounds, and within a round
//! over slices of its operations (so a slow spell of the emulator falls on
//! both); each figure is the median of the rounds. Beside the rates, the client's CPU time per
//! operation at 16 in flight (Linux), against the crate's: where the
//! emulator shares the client's cores, that is what the client takes from it.
//! With an account key, the HTTP floor of get, upsert and create is printed
//! beside it: the same requests sent with `reqwest` alone, signed and
//! decoded and nothing else ([`crate::http_floor`]), against the crate's.

use std::future::Future;
use std::ops::Range;
use std::time::{Duration, Instant};

use azure_data_tables::prelude::{IfMatchCondition, TableClient, TableServiceClient};
use futures::stream::{self, StreamExt as _, TryStreamExt as _};
use unified_tables::{Store, Tables};

use unified_tables::backend::azure::ConnectionString;

use crate::common::{fresh_table, process_cpu, Failure, RawReading, RawReadingOwned, Reading};
use crate::http_floor::Floor;
use crate::report::{median, thousands, Figure, Target};

/// The partition every row goes to.
pub(crate) const PARTITION: &str = "point";
/// Interleaved rounds (the median of 7 moves little when the emulator stalls once).
pub(crate) const ROUNDS: usize = 7;
/// Requests in flight.
const IN_FLIGHT: [usize; 2] = [1, 16];
/// The most slices a round's operations are cut into on Azure.
const MAX_SLICES: usize = 10;

/// A point operation.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Op {
    Get,
    Upsert,
    Create,
    /// Read, change, write on condition of the version read.
    Mutate,
}

impl Op {
    pub(crate) const ALL: [Op; 4] = [Op::Get, Op::Upsert, Op::Create, Op::Mutate];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Op::Get => "get",
            Op::Upsert => "upsert",
            Op::Create => "create",
            Op::Mutate => "mutate",
        }
    }
}

/// The wall time of a run and the CPU time the client spent in it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timing {
    pub(crate) wall: Duration,
    pub(crate) cpu: Option<Duration>,
}

/// The sum of two timings (the CPU time where both have one).
impl std::ops::Add for Timing {
    type Output = Timing;

    fn add(self, other: Timing) -> Timing {
        Timing {
            wall: self.wall + other.wall,
            cpu: self.cpu.zip(other.cpu).map(|(a, b)| a + b),
        }
    }
}

/// Runs the operations `ops`, `in_flight` at a time, and returns the wall
/// time and the client's CPU time.
async fn run<F, Fut>(ops: Range<usize>, in_flight: usize, op: F) -> Result<Timing, Failure>
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<(), Failure>>,
{
    let cpu_before = process_cpu();
    let started = Instant::now();
    stream::iter(ops)
        .map(op)
        .buffer_unordered(in_flight)
        .try_for_each(|()| async { Ok(()) })
        .await?;
    let wall = started.elapsed();
    let cpu = process_cpu()
        .zip(cpu_before)
        .map(|(after, before)| after.saturating_sub(before));
    Ok(Timing { wall, cpu })
}

/// Runs the slice's operations, its `in_flight` at a time:
/// `op(operation, index, round, in_flight)` for each index of the slice.
async fn run_slice<F, Fut>(slice: Slice, op: F) -> Result<Timing, Failure>
where
    F: Fn(Op, usize, usize, usize) -> Fut,
    Fut: Future<Output = Result<(), Failure>>,
{
    let Slice {
        op: kind,
        ops,
        in_flight,
        round,
    } = slice;
    run(ops, in_flight, |i| op(kind, i, round, in_flight)).await
}

/// One measured run of operations.
#[derive(Debug, Clone)]
pub(crate) struct Slice {
    pub(crate) op: Op,
    /// The indexes of the rows operated on.
    pub(crate) ops: Range<usize>,
    pub(crate) in_flight: usize,
    /// Keeps the keys created in different rounds apart.
    pub(crate) round: usize,
}

/// The client's CPU per operation over rounds of `n` operations (their
/// median), where the platform reports it: with the emulator on the same
/// cores, what the client spends is taken from the emulator's share.
pub(crate) fn cpu_per_op(rounds: &[Timing], n: usize) -> Option<(String, f64)> {
    let cpu: Option<Vec<Duration>> = rounds.iter().map(|t| t.cpu).collect();
    let micros = median(cpu?).as_secs_f64() * 1e6 / n as f64;
    Some((format!("{micros:.0} µs"), micros))
}

/// The slice's operations through the typed store.
pub(crate) async fn library(store: &Store<Reading>, slice: Slice) -> Result<Timing, Failure> {
    run_slice(slice, |op, i, round, in_flight| async move {
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
            Op::Mutate => {
                // The same content written back: the gets of later rounds still check it.
                store
                    .mutate((PARTITION, format!("s{i:07}").as_str()), |r| {
                        r.label = format!("item {}", i % 97)
                    })
                    .await?;
            }
        }
        Ok(())
    })
    .await
}

/// The slice's operations with the raw crate.
pub(crate) async fn raw(table: &TableClient, slice: Slice) -> Result<Timing, Failure> {
    run_slice(slice, |op, i, round, in_flight| async move {
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
            Op::Mutate => {
                // As `Store::mutate`: read, change, replace on condition of the ETag read.
                let entity = table.partition_key_client(PARTITION).entity_client(format!("s{i:07}"));
                let got = entity.get::<RawReadingOwned>().await?;
                let mut row = Reading::nth(PARTITION, "s", i);
                row.value = got.entity.value.parse()?;
                row.label = format!("item {}", i % 97);
                entity
                    .update(RawReading::from(&row), IfMatchCondition::Etag(got.etag))?
                    .await?;
            }
        }
        Ok(())
    })
    .await
}

/// The slice's operations as bare signed HTTP requests (get, upsert,
/// create; a mutate has no floor of its own).
async fn floor(floor: &Floor, slice: Slice) -> Result<Timing, Failure> {
    run_slice(slice, |op, i, round, in_flight| async move {
        match op {
            Op::Get => {
                let got = floor.get(PARTITION, &format!("s{i:07}")).await?;
                if got.label != format!("item {}", i % 97) {
                    return Err(format!("row {i} reads back as {got:?} through the floor").into());
                }
            }
            Op::Upsert => {
                let row = Reading::nth(PARTITION, "s", i);
                floor.upsert(&RawReading::from(&row), PARTITION, &row.rk).await?;
            }
            Op::Create => {
                let row = Reading::nth(PARTITION, &format!("floor{round}-{in_flight}-"), i);
                floor.create(&RawReading::from(&row)).await?;
            }
            Op::Mutate => {}
        }
        Ok(())
    })
    .await
}

/// The point-operation figures on `db`, `n` operations per measurement;
/// beside the raw crate when `service` is given.
pub async fn figures(
    db: &Tables,
    service: Option<&TableServiceClient>,
    connection: Option<&ConnectionString>,
    n: usize,
) -> Result<Vec<Figure>, Failure> {
    let table = fresh_table("Point");
    let bare = match connection {
        Some(c) => Floor::new(c, &table)?,
        None => None,
    };
    let store: Store<Reading> = db.store_in(&table);
    store.create_batch(&Reading::many(PARTITION, "s", n)).await?;
    let client = service.map(|s| s.table_client(&table));
    // Warm-up (not measured): a few of each, through each path.
    for op in Op::ALL {
        let warm = Slice {
            op,
            ops: 0..16,
            in_flight: 16,
            round: usize::MAX,
        };
        library(&store, warm.clone()).await?;
        if let Some(client) = &client {
            raw(client, warm).await?;
        }
    }

    // times[op][in_flight] = (library rounds, raw rounds)
    let mut times = vec![vec![(Vec::new(), Vec::new()); IN_FLIGHT.len()]; Op::ALL.len()];
    // The floor's rounds at the most in flight, by operation.
    let mut floor_times = vec![Vec::new(); Op::ALL.len()];
    for round in 0..ROUNDS {
        for (o, &op) in Op::ALL.iter().enumerate() {
            for (f, &in_flight) in IN_FLIGHT.iter().enumerate() {
                let (lib_times, raw_times) = &mut times[o][f];
                let Some(client) = &client else {
                    let slice = Slice {
                        op,
                        ops: 0..n,
                        in_flight,
                        round,
                    };
                    lib_times.push(library(&store, slice).await?);
                    continue;
                };
                // Slices of at least 4 x in_flight operations, library and crate taking turns.
                let slices = (n / (4 * in_flight)).clamp(1, MAX_SLICES);
                let zero = Timing {
                    wall: Duration::ZERO,
                    cpu: Some(Duration::ZERO),
                };
                let (mut lib_round, mut raw_round, mut floor_round) = (zero, zero, zero);
                let floored = bare
                    .as_ref()
                    .filter(|_| in_flight == IN_FLIGHT[IN_FLIGHT.len() - 1] && !matches!(op, Op::Mutate));
                for slice in 0..slices {
                    let part = Slice {
                        op,
                        ops: slice * n / slices..(slice + 1) * n / slices,
                        in_flight,
                        round,
                    };
                    if let Some(bare) = floored.filter(|_| (round + slice) % 2 == 0) {
                        floor_round = floor_round + floor(bare, part.clone()).await?;
                    }
                    if (round + slice) % 2 == 0 {
                        lib_round = lib_round + library(&store, part.clone()).await?;
                        raw_round = raw_round + raw(client, part.clone()).await?;
                    } else {
                        raw_round = raw_round + raw(client, part.clone()).await?;
                        lib_round = lib_round + library(&store, part.clone()).await?;
                    }
                    if let Some(bare) = floored.filter(|_| (round + slice) % 2 == 1) {
                        floor_round = floor_round + floor(bare, part).await?;
                    }
                }
                lib_times.push(lib_round);
                raw_times.push(raw_round);
                if floored.is_some() {
                    floor_times[o].push(floor_round);
                }
            }
        }
    }
    db.backend().delete_table(&table).await?;

    let rate = |rounds: &Vec<Timing>| {
        let per_second = n as f64 / median(rounds.iter().map(|t| t.wall).collect()).as_secs_f64();
        (format!("{} ops/s", thousands(per_second as usize)), per_second)
    };
    let cpu_per_op = |rounds: &Vec<Timing>| cpu_per_op(rounds, n);
    let mut figures = Vec::new();
    for (o, op) in Op::ALL.iter().enumerate() {
        for (f, in_flight) in IN_FLIGHT.iter().enumerate() {
            let (lib_times, raw_times) = &times[o][f];
            let name = format!("{}, {in_flight} in flight", op.name());
            let raw = (!raw_times.is_empty()).then(|| rate(raw_times));
            figures.push(Figure::beside_raw(name, rate(lib_times), raw, Target::AtLeast(0.95)));
        }
    }
    // Client CPU per operation at 16 in flight, beside the raw crate's
    // (in memory, where there is no crate, the library's alone: the figure
    // to compare between builds, e.g. with telemetry compiled out).
    for (o, op) in Op::ALL.iter().enumerate() {
        let (lib_times, raw_times) = &times[o][IN_FLIGHT.len() - 1];
        if client.is_none() {
            if let Some((_, micros)) = cpu_per_op(lib_times) {
                let name = format!(
                    "{}, {} in flight: CPU per op",
                    op.name(),
                    IN_FLIGHT[IN_FLIGHT.len() - 1]
                );
                figures.push(Figure::alone(name, format!("{micros:.2} µs")));
            }
            continue;
        }
        if let (Some(lib), Some(raw)) = (cpu_per_op(lib_times), cpu_per_op(raw_times)) {
            let name = format!(
                "{}, {} in flight: client CPU per op vs raw crate",
                op.name(),
                IN_FLIGHT[IN_FLIGHT.len() - 1]
            );
            figures.push(Figure::compared(name, lib, raw.clone()).target(Target::AtMost(0.9)));
            if let Some(floor) = cpu_per_op(&floor_times[o]).filter(|_| !floor_times[o].is_empty()) {
                let name = format!(
                    "{}, {} in flight: CPU per op, HTTP floor vs raw crate",
                    op.name(),
                    IN_FLIGHT[IN_FLIGHT.len() - 1]
                );
                figures.push(Figure::compared(name, floor, raw));
            }
        }
    }
    Ok(figures)
}
