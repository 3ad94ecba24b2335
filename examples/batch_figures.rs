//! What batching buys: 10,000 small rows in one partition, written three ways,
//! each into a fresh table, with the wall time and the number of requests.
//!
//! - (a) `Store::create_batch`: entity-group transactions planned by the store;
//! - (b) a loop of `Store::create`, one request per row, one at a time;
//! - (c) raw transactions of 100 rows sent with the `azure_data_tables` crate
//!   (the same rows as plain serde structs), the floor `create_batch` should
//!   come close to.
//!
//! Needs Azure Table Storage or Azurite; the in-memory backend has no network
//! cost to measure.
//!
//! ```text
//! cargo run --release --example batch_figures -- "UseDevelopmentStorage=true"
//! UNIFIED_TABLES_CONNECTION="DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=..;TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;" \
//!     cargo run --release --example batch_figures
//! ```

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use azure_data_tables::clients::TableServiceClientBuilder;
use azure_data_tables::prelude::TableServiceClient;
use azure_storage::{CloudLocation, StorageCredentials};
use serde::Serialize;
use unified_tables::backend::azure::{AzureBackend, ConnectionString, Credentials};
use unified_tables::backend::counting::CountingBackend;
use unified_tables::{Backend, QueryOptions, Row, Store, TableEntity, Tables, Value, WriteOp};
use unified_tables_examples::CONNECTION_VAR;

type Failure = Box<dyn std::error::Error>;

/// Rows written by each variant.
const ROWS: usize = 10_000;
/// Rows per raw transaction (the service's limit).
const PER_TRANSACTION: usize = 100;
/// The one partition every row goes to.
const PARTITION: &str = "figures";
/// Runs of (a) and (c) each.
const ROUNDS: usize = 3;

#[derive(TableEntity, Debug, Clone)]
#[table(name = "BatchFigures")]
struct Reading {
    #[table(partition_key)]
    pk: String,
    #[table(row_key)]
    rk: String,
    value: i64, // column "Value", Edm.Int64
    label: String,
}

/// The same row for the raw crate: the cells our store writes, Int64 annotated.
#[derive(Serialize)]
struct RawReading<'a> {
    #[serde(rename = "PartitionKey")]
    pk: &'a str,
    #[serde(rename = "RowKey")]
    rk: &'a str,
    #[serde(rename = "Value")]
    value: String,
    #[serde(rename = "Value@odata.type")]
    value_type: &'static str,
    #[serde(rename = "Label")]
    label: &'a str,
}

impl<'a> From<&'a Reading> for RawReading<'a> {
    fn from(r: &'a Reading) -> RawReading<'a> {
        RawReading {
            pk: &r.pk,
            rk: &r.rk,
            value: r.value.to_string(),
            value_type: "Edm.Int64",
            label: &r.label,
        }
    }
}

fn readings(n: usize) -> Vec<Reading> {
    (0..n)
        .map(|i| Reading {
            pk: PARTITION.to_owned(),
            rk: format!("r{i:06}"),
            value: i as i64 * 7,
            label: format!("item {}", i % 97),
        })
        .collect()
}

/// A table name no earlier run used: letters and digits only.
fn fresh_table(tag: &str) -> String {
    let stamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_micros()
        % 10_000_000_000;
    format!("BatchFig{tag}{stamp}")
}

/// Checks that the table holds exactly the rows written, then drops it.
async fn verify_and_drop(db: &Tables, table: &str) -> Result<u64, Failure> {
    let store: Store<Reading> = db.store_in(table);
    let count = store.count(QueryOptions::partition(PARTITION)).await?;
    if count != ROWS as u64 {
        return Err(format!("table {table} holds {count} rows, expected {ROWS}").into());
    }
    // One row read back through the typed store: the cells decode as written.
    let probe = store
        .get((PARTITION, "r001234"))
        .await?
        .ok_or("row r001234 is missing")?;
    if probe.value != 1234 * 7 || probe.label != "item 70" {
        return Err(format!("row r001234 reads back as {probe:?}").into());
    }
    db.backend().delete_table(table).await?;
    Ok(count)
}

/// The `azure_data_tables` service client for the same account and endpoint.
fn crate_client(connection: &ConnectionString) -> Result<TableServiceClient, Failure> {
    let credentials = match &connection.credentials {
        Credentials::AccountKey(key) => StorageCredentials::access_key(connection.account_name.clone(), key.clone()),
        Credentials::SharedAccessSignature(sas) => StorageCredentials::sas_token(sas.as_str())?,
    };
    let location = CloudLocation::Custom {
        account: connection.account_name.clone(),
        uri: connection.table_endpoint.clone(),
    };
    Ok(TableServiceClientBuilder::with_location(location, credentials).build())
}

/// Sends `rows` as transactions of 100 with the crate. `Err` carries why the
/// service (or the crate) refused one; the crate reports a failed
/// transaction as `Ok`, so every operation's status is checked.
async fn raw_crate_transactions(
    service: &TableServiceClient,
    table: &str,
    rows: &[Reading],
) -> Result<(Duration, u64), String> {
    let client = service.table_client(table);
    let partition = client.partition_key_client(PARTITION);
    let started = Instant::now();
    let mut sent = 0u64;
    for chunk in rows.chunks(PER_TRANSACTION) {
        let mut transaction = partition.transaction();
        for row in chunk {
            transaction = transaction
                .insert(RawReading::from(row))
                .map_err(|e| format!("building the transaction: {e}"))?;
        }
        let response = transaction
            .await
            .map_err(|e| format!("transaction {sent} was refused: {e}"))?;
        sent += 1;
        let statuses = &response.operation_responses;
        if statuses.len() != chunk.len() || statuses.iter().any(|op| !op.status_code.is_success()) {
            let shown: Vec<u16> = statuses.iter().map(|op| u16::from(op.status_code)).collect();
            return Err(format!(
                "transaction {} answered {} operation statuses for {} inserts: {:?}",
                sent - 1,
                statuses.len(),
                chunk.len(),
                &shown[..shown.len().min(5)]
            ));
        }
    }
    Ok((started.elapsed(), sent))
}

/// The fallback for (c): the same transactions of 100, sent through our
/// backend's `Backend::transaction`, bypassing `Store` (no encoding of
/// entities, no packing, no key checks).
async fn raw_backend_transactions(
    backend: &CountingBackend<AzureBackend>,
    table: &str,
    rows: &[Reading],
) -> Result<(Duration, u64), Failure> {
    let before = backend.counts().transactions;
    let started = Instant::now();
    for chunk in rows.chunks(PER_TRANSACTION) {
        let ops = chunk
            .iter()
            .map(|r| {
                let mut row = Row::new(r.pk.clone(), r.rk.clone());
                row.insert("Value", Value::Int64(r.value));
                row.insert("Label", Value::String(r.label.clone()));
                WriteOp::Insert(row)
            })
            .collect();
        backend.transaction(table, ops).await?;
    }
    Ok((started.elapsed(), backend.counts().transactions - before))
}

/// What one measured run reports.
struct Run {
    time: Duration,
    requests: u64,
}

/// Everything the variants share.
struct Bench {
    counting: CountingBackend<AzureBackend>,
    db: Tables,
    service: TableServiceClient,
    rows: Vec<Reading>,
    /// Why the crate's own transactions could not be used, once they failed.
    crate_refused: Option<String>,
}

impl Bench {
    /// (a) `Store::create_batch` into a fresh table.
    async fn create_batch(&self) -> Result<Run, Failure> {
        let table = fresh_table("Batch");
        let store: Store<Reading> = self.db.store_in(&table);
        store.ensure_created().await?;
        self.counting.reset();
        let started = Instant::now();
        let written = store.create_batch(&self.rows).await?;
        let time = started.elapsed();
        let counts = self.counting.counts();
        assert_eq!(written, ROWS);
        assert_eq!(
            counts.entity_requests(),
            counts.transactions,
            "create_batch sent only transactions"
        );
        verify_and_drop(&self.db, &table).await?;
        Ok(Run {
            time,
            requests: counts.transactions,
        })
    }

    /// (b) A loop of `Store::create`, one row per request, one at a time.
    async fn create_loop(&self) -> Result<Run, Failure> {
        let table = fresh_table("Loop");
        let store: Store<Reading> = self.db.store_in(&table);
        store.ensure_created().await?;
        let mut entities = self.rows.clone();
        self.counting.reset();
        let started = Instant::now();
        for entity in &mut entities {
            store.create(entity).await?;
        }
        let time = started.elapsed();
        let counts = self.counting.counts();
        assert_eq!(
            counts.entity_requests(),
            counts.writes,
            "the loop sent only single writes"
        );
        verify_and_drop(&self.db, &table).await?;
        Ok(Run {
            time,
            requests: counts.writes,
        })
    }

    /// (c) Raw transactions of 100 with the crate, or, once the crate's
    /// transaction has been refused, through `Backend::transaction`.
    async fn raw(&mut self) -> Result<Run, Failure> {
        if self.crate_refused.is_none() {
            let table = fresh_table("Raw");
            let outcome = match self.service.table_client(&table).create().await {
                Ok(_) => raw_crate_transactions(&self.service, &table, &self.rows).await,
                Err(e) => Err(format!("creating the table with the crate: {e}")),
            };
            match outcome {
                Ok((time, requests)) => {
                    verify_and_drop(&self.db, &table).await?;
                    return Ok(Run { time, requests });
                }
                Err(reason) => {
                    println!(
                        "the azure_data_tables transaction was refused: {reason}; falling back to Backend::transaction"
                    );
                    self.crate_refused = Some(reason);
                    let _ = self.db.backend().delete_table(&table).await;
                }
            }
        }
        let table = fresh_table("RawBackend");
        self.db.backend().create_table(&table).await?;
        let (time, requests) = raw_backend_transactions(&self.counting, &table, &self.rows).await?;
        verify_and_drop(&self.db, &table).await?;
        Ok(Run { time, requests })
    }
}

/// The median of the runs' times (the lower middle one for an even count).
fn median(runs: &[Run]) -> Duration {
    let mut times: Vec<Duration> = runs.iter().map(|r| r.time).collect();
    times.sort();
    times[(times.len() - 1) / 2]
}

fn seconds(runs: &[Run]) -> String {
    runs.iter()
        .map(|r| format!("{:.3}", r.time.as_secs_f64()))
        .collect::<Vec<_>>()
        .join(" / ")
}

fn connection_string() -> Option<String> {
    std::env::args()
        .nth(1)
        .or_else(|| std::env::var(CONNECTION_VAR).ok())
        .filter(|c| !c.trim().is_empty())
}

#[tokio::main]
async fn main() -> Result<(), Failure> {
    let Some(connection) = connection_string() else {
        eprintln!(
            "batch_figures measures requests and round trips against Azure Table Storage or Azurite, \
             so it does not run on the in-memory backend (which has no network to measure).\n\
             Give a connection string as the first argument or in {CONNECTION_VAR}, e.g.\n  \
             cargo run --release --example batch_figures -- \"UseDevelopmentStorage=true\""
        );
        std::process::exit(2);
    };
    let parsed = ConnectionString::parse(&connection)?;
    let counting = CountingBackend::new(AzureBackend::from_parsed(parsed.clone())?);
    let db = Tables::with_backend(counting.clone());
    let service = crate_client(&parsed)?;
    let rows = readings(ROWS);
    println!(
        "batch_figures: {ROWS} rows (PartitionKey, RowKey, an Int64, a short string) in one partition, \
         on {}",
        parsed.table_endpoint
    );

    // Warm-up (not measured): one transaction through each path, so that
    // neither measured variant pays for first connections or a cold server.
    {
        let table = fresh_table("Warm");
        let store: Store<Reading> = db.store_in(&table);
        store.create_batch(&readings(PER_TRANSACTION)).await?;
        let warm: Vec<Reading> = readings(2 * PER_TRANSACTION).split_off(PER_TRANSACTION);
        let crate_warm = raw_crate_transactions(&service, &table, &warm).await;
        if let Err(e) = &crate_warm {
            println!("warm-up: the azure_data_tables transaction was refused: {e}");
        }
        db.backend().delete_table(&table).await?;
    }

    let mut bench = Bench {
        counting,
        db,
        service,
        rows,
        crate_refused: None,
    };

    // (a) and (c) are close, so they are measured ROUNDS times each,
    // interleaved (a c, c a, a c, ..) so that neither always runs first, and
    // compared by their medians. (b) is far slower and measured once.
    let (mut batch, mut raw) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        if round % 2 == 0 {
            batch.push(bench.create_batch().await?);
            raw.push(bench.raw().await?);
        } else {
            raw.push(bench.raw().await?);
            batch.push(bench.create_batch().await?);
        }
    }
    let looped = vec![bench.create_loop().await?];

    let raw_name = if bench.crate_refused.is_some() {
        "(c) raw Backend::transaction (fallback)"
    } else {
        "(c) raw azure_data_tables transactions"
    };
    println!();
    println!(
        "{:<41} {:>9} {:>8} {:<15} {:>7}   every run (s)",
        "variant", "median", "requests", "", "rows/s"
    );
    for (name, runs, unit) in [
        ("(a) Store::create_batch", &batch, "transactions"),
        ("(b) loop of Store::create", &looped, "single inserts"),
        (raw_name, &raw, "transactions"),
    ] {
        let m = median(runs);
        println!(
            "{:<41} {:>7.3} s {:>8} {:<15} {:>7.0}   {}",
            name,
            m.as_secs_f64(),
            runs[0].requests,
            unit,
            ROWS as f64 / m.as_secs_f64(),
            seconds(runs)
        );
    }
    println!(
        "(each run in a fresh table, all {ROWS} rows counted and one read back after it; \
         (a) and (c) interleaved over {ROUNDS} rounds, then (b))"
    );
    if let Some(reason) = &bench.crate_refused {
        println!(
            "note: the azure_data_tables crate's own transaction was refused ({reason}); \
             (c) sent the same transactions of {PER_TRANSACTION} through our Backend::transaction instead, bypassing Store"
        );
    }
    let batch_vs_raw = median(&batch).as_secs_f64() / median(&raw).as_secs_f64();
    let loop_vs_batch = median(&looped).as_secs_f64() / median(&batch).as_secs_f64();
    println!();
    println!(
        "create_batch / raw = {batch_vs_raw:.2} (target <= 1.1){}",
        if batch_vs_raw <= 1.1 { "" } else { "  MISSED" }
    );
    println!(
        "loop / create_batch = {loop_vs_batch:.1} (target >= 20){}",
        if loop_vs_batch >= 20.0 { "" } else { "  MISSED" }
    );
    Ok(())
}
