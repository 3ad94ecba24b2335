//! What batching buys: 10,000 small rows in one partition, written each time
//! into a fresh table, with the wall time and the number of requests:
//!
//! - `Store::create_batch`: entity-group transactions planned by the store;
//! - a loop of `Store::create`, one request per row, one at a time;
//! - on Azure or Azurite, raw transactions of 100 rows sent with the
//!   `azure_data_tables` crate (the same rows as plain serde structs), the
//!   floor `create_batch` should come close to.
//!
//! `create_batch` and the raw transactions are close, so they are measured
//! over interleaved rounds and compared by their medians; the loop is far
//! slower and measured once on Azure (over rounds in memory).

use std::time::{Duration, Instant};

use azure_data_tables::prelude::TableServiceClient;
use unified_tables::backend::counting::CountingBackend;
use unified_tables::backend::{Backend, WriteOp};
use unified_tables::{QueryOptions, Row, Store, Tables, Value};

use crate::common::{Failure, RawReading, Reading};
use crate::report::{duration, median, thousands, Figure, Target};

/// Rows written by each variant.
const ROWS: usize = 10_000;
/// Rows per raw transaction (the service's limit).
const PER_TRANSACTION: usize = 100;
/// The one partition every row goes to.
const PARTITION: &str = "figures";
/// Interleaved rounds of the measured variants.
const ROUNDS: usize = 3;

/// The backend the figures run on: the tables behind a request counter.
type Counted = CountingBackend<std::sync::Arc<dyn Backend>>;

/// One measured run: its time and its requests.
struct Run {
    time: Duration,
    requests: u64,
}

/// Checks that the table holds exactly the rows written, then drops it.
async fn verify_and_drop(db: &Tables, table: &str) -> Result<(), Failure> {
    let store: Store<Reading> = db.store_in(table);
    let count = store.count(QueryOptions::partition(PARTITION)).await?;
    if count != ROWS as u64 {
        return Err(format!("table {table} holds {count} rows, expected {ROWS}").into());
    }
    // One row read back through the typed store: the cells decode as written.
    let probe = store
        .get((PARTITION, "r0001234"))
        .await?
        .ok_or("row r0001234 is missing")?;
    if probe.value != 1234 * 7 || probe.label != "item 70" {
        return Err(format!("row r0001234 reads back as {probe:?}").into());
    }
    db.backend().delete_table(table).await?;
    Ok(())
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

/// The same transactions of 100 through `Backend::transaction`, bypassing
/// `Store` (no encoding of entities, no packing, no key checks): the
/// reference when the crate's own transaction is refused.
async fn raw_backend_transactions(
    backend: &Counted,
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

/// Everything the variants share.
struct Bench {
    counting: Counted,
    db: Tables,
    service: Option<TableServiceClient>,
    rows: Vec<Reading>,
    /// Why the crate's own transactions could not be used, once they failed.
    crate_refused: Option<String>,
}

impl Bench {
    /// `Store::create_batch` into a fresh table.
    async fn create_batch(&self) -> Result<Run, Failure> {
        let table = crate::common::fresh_table("Batch");
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

    /// A loop of `Store::create`, one row per request, one at a time.
    async fn create_loop(&self) -> Result<Run, Failure> {
        let table = crate::common::fresh_table("Loop");
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

    /// The reference measured in rounds: the raw transactions on Azure, the
    /// loop of `create` in memory.
    async fn reference(&mut self) -> Result<Run, Failure> {
        match self.service.clone() {
            Some(service) => self.raw(&service).await,
            None => self.create_loop().await,
        }
    }

    /// Raw transactions of 100 with the crate, or, once the crate's
    /// transaction has been refused, through `Backend::transaction`.
    async fn raw(&mut self, service: &TableServiceClient) -> Result<Run, Failure> {
        if self.crate_refused.is_none() {
            let table = crate::common::fresh_table("Raw");
            let outcome = match service.table_client(&table).create().await {
                Ok(_) => raw_crate_transactions(service, &table, &self.rows).await,
                Err(e) => Err(format!("creating the table with the crate: {e}")),
            };
            match outcome {
                Ok((time, requests)) => {
                    verify_and_drop(&self.db, &table).await?;
                    return Ok(Run { time, requests });
                }
                Err(reason) => {
                    self.crate_refused = Some(reason);
                    let _ = self.db.backend().delete_table(&table).await;
                }
            }
        }
        let table = crate::common::fresh_table("RawBackend");
        self.db.backend().create_table(&table).await?;
        let (time, requests) = raw_backend_transactions(&self.counting, &table, &self.rows).await?;
        verify_and_drop(&self.db, &table).await?;
        Ok(Run { time, requests })
    }
}

fn cell(runs: &[Run], unit: &str) -> (String, f64) {
    let m = median(runs.iter().map(|r| r.time).collect());
    (
        format!("{} ({} {unit})", duration(m), thousands(runs[0].requests as usize)),
        m.as_secs_f64(),
    )
}

/// The batch figures on `db` (`service`: the raw crate's client, on Azure).
/// Returns the figures and, when the crate's transaction was refused, why.
pub async fn figures(
    db: &Tables,
    service: Option<TableServiceClient>,
) -> Result<(Vec<Figure>, Option<String>), Failure> {
    let counting = CountingBackend::new(db.backend().clone());
    let counted = Tables::with_backend(counting.clone());
    let rows = Reading::many(PARTITION, "r", ROWS);

    // Warm-up (not measured): one transaction through each path, so that no
    // measured variant pays for first connections or a cold server.
    let table = crate::common::fresh_table("Warm");
    let store: Store<Reading> = counted.store_in(&table);
    store
        .create_batch(&Reading::many(PARTITION, "w", PER_TRANSACTION))
        .await?;
    if let Some(service) = &service {
        let _ = raw_crate_transactions(service, &table, &Reading::many(PARTITION, "x", PER_TRANSACTION)).await;
    }
    db.backend().delete_table(&table).await?;

    let mut bench = Bench {
        counting,
        db: counted,
        service,
        rows,
        crate_refused: None,
    };
    // Interleaved (a b, b a, a b, ..) so that neither always runs first.
    let (mut batch, mut other) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        if round % 2 == 0 {
            batch.push(bench.create_batch().await?);
            other.push(bench.reference().await?);
        } else {
            other.push(bench.reference().await?);
            batch.push(bench.create_batch().await?);
        }
    }
    let on_azure = bench.service.is_some();
    let (reference, looped) = if on_azure {
        (other, vec![bench.create_loop().await?])
    } else {
        (Vec::new(), other)
    };

    let rows = thousands(ROWS);
    let mut figures = Vec::new();
    if !reference.is_empty() {
        let raw = if bench.crate_refused.is_some() {
            "raw Backend::transaction"
        } else {
            "raw crate transactions"
        };
        figures.push(
            Figure::compared(
                format!("{rows} rows: create_batch vs {raw}"),
                cell(&batch, "tx"),
                cell(&reference, "tx"),
            )
            .target(Target::AtMost(1.1)),
        );
    }
    let against_loop = Figure::compared(
        format!("{rows} rows: create_batch vs loop of create"),
        cell(&batch, "tx"),
        cell(&looped, "req"),
    );
    // The loop pays one round trip per row: the target is set for a network.
    // The raw transactions against the same loop are the best this run allows.
    figures.push(if on_azure {
        let best = cell(&reference, "tx").1 / cell(&looped, "req").1;
        against_loop.target(Target::AtMost(0.05)).ceiling(best)
    } else {
        against_loop
    });
    Ok((figures, bench.crate_refused))
}
