//! The read and write paths of the wire codec, against the raw
//! `azure_data_tables` crate:
//!
//! - a partition query of 2,000 rows (two pages) through `Store::query`,
//!   against the crate's own paged query into plain serde structs on a
//!   pooled client (on Azure or Azurite), as rows per second of wall time
//!   over interleaved rounds (medians);
//! - client CPU per row: one 1,000-row page body, as the service sends it
//!   with full metadata, decoded into entities by `Store::query` (served by
//!   a backend that answers that body, as the Azure backend does) against
//!   the crate's direct serde deserialization of the same body into plain
//!   structs of the same fields (keys, value, label);
//! - request body encoding per row: `to_row` and `wire::write_row` against
//!   the crate's serialization of a plain serde struct (`serde_json::to_vec`);
//! - what escaping non-ASCII costs: `wire::write_row` of a row whose text
//!   cell holds 1,000 characters of mixed 1- to 4-byte text (every non-ASCII
//!   character written `\uXXXX`, as the Azure SDKs write it) against the
//!   same row holding 1,000 ASCII characters, with both bodies' sizes.
//!
//! The CPU figures run on one thread in a tight loop; the best of the rounds
//! (in the thread's CPU time, where the platform reports it) is each route's figure.

use std::hint::black_box;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use azure_data_tables::prelude::TableServiceClient;
use futures::StreamExt as _;
use serde::Deserialize;
use unified_tables::backend::{Backend, Page, PageAnswer, PageBody, PageToken, QueryRequest, WriteOp, WriteOutcome};
use unified_tables::{wire, EncodeOptions, Error, QueryOptions, Row, Store, Tables, Value};

use crate::common::{fresh_table, thread_cpu, Failure, RawReading, Reading};
use crate::report::{median, thousands, Figure, Target};

/// The partition the query reads.
const PARTITION: &str = "query";
/// Rows in it: two full pages.
const ROWS: usize = 2_000;
/// Interleaved rounds of the network figure: a query takes tens of
/// milliseconds, and the median of 15 moves little when the emulator stalls.
const ROUNDS: usize = 15;
/// Rows in the page body the CPU figure decodes.
const PAGE_ROWS: usize = 1_000;
/// Decodes of that page per round, and rounds.
const PAGE_LOOPS: (usize, usize) = (20, 5);
/// Rows encoded per round of the body figure, and rounds.
const ENCODE_LOOPS: (usize, usize) = (200_000, 5);
/// Characters of the text cell of the escaping figure.
const ESCAPE_CHARS: usize = 1_000;
/// Rows encoded per round of the escaping figure, and rounds.
const ESCAPE_LOOPS: (usize, usize) = (50_000, 5);

/// A row as the raw crate reads it in a query: the same fields as the
/// entity (keys, the Int64 as text, the label).
#[derive(Deserialize)]
struct RawListed {
    #[serde(rename = "PartitionKey")]
    pk: String,
    #[serde(rename = "RowKey")]
    rk: String,
    #[serde(rename = "Value")]
    value: String,
    #[serde(rename = "Label")]
    label: String,
}

/// The crate's query answer: the rows as plain serde structs.
#[derive(Deserialize)]
struct RawPage {
    #[serde(rename = "value")]
    value: Vec<RawListed>,
}

/// A page body as the service writes it with full metadata.
fn page_body(n: usize) -> Vec<u8> {
    let mut rows = Vec::with_capacity(n);
    for i in 0..n {
        let r = Reading::nth(PARTITION, "r", i);
        let rk = &r.rk;
        rows.push(format!(
            concat!(
                r#"{{"odata.type":"acct.Figures","odata.id":"http://127.0.0.1/acct/Figures(PartitionKey='query',RowKey='{rk}')","#,
                r#""odata.etag":"W/\"datetime'2024-05-01T10%3A00%3A00.1234567Z'\"","odata.editLink":"Figures(PartitionKey='query',RowKey='{rk}')","#,
                r#""PartitionKey":"{pk}","RowKey":"{rk}","Timestamp@odata.type":"Edm.DateTime","Timestamp":"2024-05-01T10:00:00.1234567Z","#,
                r#""Label":"{label}","Value@odata.type":"Edm.Int64","Value":"{value}"}}"#
            ),
            pk = r.pk,
            rk = rk,
            label = r.label,
            value = r.value,
        ));
    }
    format!(
        r#"{{"odata.metadata":"http://127.0.0.1/acct/$metadata#Figures","value":[{}]}}"#,
        rows.join(",")
    )
    .into_bytes()
}

/// A backend whose every query answers with one recorded page body, parsed
/// as the Azure backend parses an answer: the client's side of a query alone.
#[derive(Debug)]
struct RecordedPage(&'static [u8]);

#[async_trait]
impl Backend for RecordedPage {
    async fn create_table(&self, _: &str) -> unified_tables::Result<()> {
        Ok(())
    }
    async fn delete_table(&self, _: &str) -> unified_tables::Result<()> {
        Ok(())
    }
    async fn get(&self, _: &str, _: &str, _: &str) -> unified_tables::Result<Option<Row>> {
        Err(Error::config("the recorded page answers queries only"))
    }
    async fn execute(&self, _: &str, _: WriteOp) -> unified_tables::Result<WriteOutcome> {
        Err(Error::config("the recorded page answers queries only"))
    }
    async fn transaction(&self, _: &str, _: Vec<WriteOp>) -> unified_tables::Result<Vec<WriteOutcome>> {
        Err(Error::config("the recorded page answers queries only"))
    }
    async fn query(&self, _: &str, _: &QueryRequest, _: Option<&PageToken>) -> unified_tables::Result<Page> {
        PageBody::new(self.0, None).into_page()
    }
    async fn query_body(&self, _: &str, _: &QueryRequest, _: Option<&PageToken>) -> unified_tables::Result<PageAnswer> {
        // As the Azure backend answers: the body, read by the store.
        Ok(PageAnswer::Body(PageBody::new(self.0, None)))
    }
}

/// The best of `rounds` timings of `f`, divided by `per`: the thread's CPU
/// time where the platform reports it (other work on the machine does not
/// count against either route), else wall time.
fn best_of(rounds: usize, per: usize, mut f: impl FnMut() -> Result<(), Failure>) -> Result<f64, Failure> {
    let mut best = Duration::MAX;
    for _ in 0..rounds {
        let (cpu, started) = (thread_cpu(), Instant::now());
        f()?;
        let spent = match (cpu, thread_cpu()) {
            (Some(before), Some(after)) => after.saturating_sub(before),
            _ => started.elapsed(),
        };
        best = best.min(spent);
    }
    Ok(best.as_secs_f64() * 1e9 / per as f64)
}

fn ns(v: f64) -> (String, f64) {
    (format!("{v:.0} ns/row"), v)
}

/// Client CPU per row of a query page: the store against the crate's serde.
fn decode_figure() -> Result<Figure, Failure> {
    let body = page_body(PAGE_ROWS);
    let store: Store<Reading> = Tables::with_backend(RecordedPage(Vec::leak(body.clone())))
        .without_cache()
        .store_in("Figures");
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    let library = |loops: usize| -> Result<(), Failure> {
        for _ in 0..loops {
            let rows = runtime.block_on(store.query(QueryOptions::partition(PARTITION)))?;
            if rows.len() != PAGE_ROWS || rows[7].value != 49 {
                return Err("the recorded page decodes wrongly".into());
            }
            black_box(rows);
        }
        Ok(())
    };
    let raw = |loops: usize| -> Result<(), Failure> {
        for _ in 0..loops {
            let page: RawPage = serde_json::from_slice(black_box(&body))?;
            let mut sum = 0i64;
            for r in &page.value {
                sum += r.value.parse::<i64>()?;
                black_box((&r.pk, &r.rk, &r.label));
            }
            if page.value.len() != PAGE_ROWS || sum == 0 {
                return Err("the recorded page deserializes wrongly".into());
            }
            black_box(page);
        }
        Ok(())
    };
    // Warm-up, then interleaved rounds.
    library(2)?;
    raw(2)?;
    let (mut lib_best, mut raw_best) = (f64::MAX, f64::MAX);
    let (loops, rounds) = PAGE_LOOPS;
    for _ in 0..rounds {
        lib_best = lib_best.min(best_of(1, loops * PAGE_ROWS, || library(loops))?);
        raw_best = raw_best.min(best_of(1, loops * PAGE_ROWS, || raw(loops))?);
    }
    Ok(Figure::compared(
        "query: client CPU per row vs raw crate serde",
        ns(lib_best),
        ns(raw_best),
    )
    .target(Target::AtMost(1.0)))
}

/// Request body encoding per row: `to_row` + `write_row` against the crate's serde.
fn encode_figure() -> Result<Figure, Failure> {
    let rows: Vec<Reading> = Reading::many(PARTITION, "r", 1_000);
    let opts = EncodeOptions::default();
    let (loops, rounds) = ENCODE_LOOPS;
    let mut body = Vec::with_capacity(256);
    let mut library = || -> Result<(), Failure> {
        for i in 0..loops {
            let row = black_box(&rows[i % rows.len()]).to_row(&opts)?;
            body.clear();
            black_box(wire::write_row(&row, &mut body));
        }
        Ok(())
    };
    let raw = || -> Result<(), Failure> {
        for i in 0..loops {
            // As the crate's insert: the entity serialized by serde_json into a new buffer.
            black_box(serde_json::to_vec(&RawReading::from(black_box(&rows[i % rows.len()])))?);
        }
        Ok(())
    };
    let (mut lib_best, mut raw_best) = (f64::MAX, f64::MAX);
    for _ in 0..rounds {
        lib_best = lib_best.min(best_of(1, loops, &mut library)?);
        raw_best = raw_best.min(best_of(1, loops, raw)?);
    }
    Ok(Figure::compared(
        "write: request body encoding per row vs raw crate serde",
        ns(lib_best),
        ns(raw_best),
    )
    .target(Target::AtMost(2.0)))
}

/// What escaping costs: the body of a row with 1,000 characters of mixed
/// text (ASCII, `ä`, `Ж`, `€`, CJK, emoji) against the same row with 1,000
/// ASCII characters.
fn escape_figure() -> Result<Figure, Failure> {
    let row_with = |text: String| Row::new(PARTITION, "r0000001").with("Text", Value::String(text));
    let ascii = row_with(unified_tables_tests::noise(ESCAPE_CHARS, 1));
    let mixed = row_with(unified_tables_tests::mixed_text(ESCAPE_CHARS, 1));
    let utf8 = |row: &Row| match row.get("Text") {
        Some(Value::String(s)) => s.len(),
        _ => 0,
    };
    let (loops, rounds) = ESCAPE_LOOPS;
    let mut body = Vec::with_capacity(16 * 1024);
    let mut encode = |row: &Row| -> Result<(), Failure> {
        for _ in 0..loops {
            body.clear();
            black_box(wire::write_row(black_box(row), &mut body));
        }
        Ok(())
    };
    let (mut mixed_best, mut ascii_best) = (f64::MAX, f64::MAX);
    for _ in 0..rounds {
        mixed_best = mixed_best.min(best_of(1, loops, || encode(&mixed))?);
        ascii_best = ascii_best.min(best_of(1, loops, || encode(&ascii))?);
    }
    Ok(Figure::compared(
        format!(
            "write: body of a row with {} chars of mixed text ({} B escaped, {} B of UTF-8) vs ASCII ({} B)",
            thousands(ESCAPE_CHARS),
            thousands(wire::wire_size(&mixed)),
            thousands(utf8(&mixed)),
            thousands(wire::wire_size(&ascii)),
        ),
        ns(mixed_best),
        ns(ascii_best),
    ))
}

/// The partition through the crate, page after page, into plain structs.
async fn raw_query(service: &TableServiceClient, table: &str) -> Result<usize, Failure> {
    let mut pages = service
        .table_client(table)
        .query()
        .filter(format!("PartitionKey eq '{PARTITION}'"))
        .into_stream::<RawListed>();
    let mut n = 0;
    while let Some(page) = pages.next().await {
        for r in page?.entities {
            black_box((r.value.parse::<i64>()?, r.pk, r.rk, r.label));
            n += 1;
        }
    }
    Ok(n)
}

/// The client CPU figures (run outside any runtime: the decode figure has its own).
pub fn cpu_figures() -> Result<Vec<Figure>, Failure> {
    Ok(vec![decode_figure()?, encode_figure()?, escape_figure()?])
}

/// The wall-time figure of the partition query, beside the raw crate on
/// Azure (`service`, a pooled client).
pub async fn figures(db: &Tables, service: Option<&TableServiceClient>) -> Result<Vec<Figure>, Failure> {
    let mut figures = Vec::new();
    let name = format!("query: partition of {} rows", thousands(ROWS));
    let table = fresh_table("Query");
    let store: Store<Reading> = db.store_in(&table);
    store.create_batch(&Reading::many(PARTITION, "r", ROWS)).await?;
    let library = || async {
        let started = Instant::now();
        let rows = store.query(QueryOptions::partition(PARTITION)).await?;
        if rows.len() != ROWS {
            return Err::<Duration, Failure>(format!("the query read {} rows", rows.len()).into());
        }
        Ok(started.elapsed())
    };
    let raw = |service: &TableServiceClient| {
        let (service, table) = (service.clone(), table.clone());
        async move {
            let started = Instant::now();
            let n = raw_query(&service, &table).await?;
            if n != ROWS {
                return Err::<Duration, Failure>(format!("the crate read {n} rows").into());
            }
            Ok(started.elapsed())
        }
    };
    // Warm-up (not measured), then interleaved rounds.
    library().await?;
    if let Some(s) = service {
        raw(s).await?;
    }
    let (mut lib_times, mut raw_times) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        match service {
            None => lib_times.push(library().await?),
            Some(s) if round % 2 == 0 => {
                lib_times.push(library().await?);
                raw_times.push(raw(s).await?);
            }
            Some(s) => {
                raw_times.push(raw(s).await?);
                lib_times.push(library().await?);
            }
        }
    }
    db.backend().delete_table(&table).await?;
    let rate = |times: Vec<Duration>| {
        let per_second = ROWS as f64 / median(times).as_secs_f64();
        (format!("{} rows/s", thousands(per_second as usize)), per_second)
    };
    let raw = (!raw_times.is_empty()).then(|| rate(raw_times));
    figures.push(Figure::beside_raw(name, rate(lib_times), raw, Target::AtLeast(0.95)));
    Ok(figures)
}
