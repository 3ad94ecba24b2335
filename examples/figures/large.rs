//! What large values cost: an 8 MiB string stored with `split = "text"`, an
//! 8 MiB string stored with `split = "gzip"` and an 8 MiB file
//! (`BlobContent`), each written with `Store::create` and read back with
//! `Store::get` (the file with `read_all`), in MB/s (10^6 bytes of the value
//! per second).
//!
//! The reference is the raw requests the stored layout needs, sent through
//! the backends directly (on Azure, and on the in-memory backends, where it
//! shows the library's own CPU): the library's first write is read back
//! (main row, continuation rows, blobs) and the same rows and blob bytes are
//! written again under other keys, then read back. Every read is checked;
//! every figure is the median of the rounds after one warm-up, the library
//! and the raw requests swapping order every round.
//!
//! On Azure each round also writes and reads the value on in-memory
//! backends: the library's own work (hashing, packing, encoding), which a
//! "ceiling" line prints beside the raw requests' time. Its ratio is
//! raw / (raw + own work): what the figure reaches when none of that work
//! overlaps a request, so a figure below it is the library's to improve and
//! a ceiling below the target is the machine's (its cores) against the
//! emulator's speed.

use std::fmt::Write as _;
use std::future::Future;
use std::time::{Duration, Instant};

use std::sync::Arc;

use unified_tables::backend::azure::AzureBlobBackend;
use unified_tables::backend::blob::{BlobBackend, BlobCondition, PutOptions};
use unified_tables::backend::memory::{MemoryBackend, MemoryBlobBackend};
use unified_tables::backend::Backend;
use unified_tables::backend::{QueryRequest, WriteOp};
use unified_tables::layout::{continuation_key, BlobRef, SPLIT_OF, SPLIT_PARTS};
use unified_tables::query::{CmpOp, Filter};
use unified_tables::{BlobContent, BlobOptions, Row, TableEntity, Tables, Value};

use crate::common::{fresh_table, Failure};
use crate::report::{duration, median, Figure, Target};

/// Bytes of each value.
const SIZE: usize = 8 * 1024 * 1024;
/// Measured rounds (after one warm-up): enough for a median that a few slow
/// requests of the emulator do not move.
const ROUNDS: usize = 9;
/// The partition every entity goes to.
const PARTITION: &str = "figures";

#[derive(TableEntity, Debug, Clone)]
struct TextDoc {
    #[table(partition_key)]
    pk: String,
    #[table(row_key)]
    rk: String,
    #[table(split = "text")]
    body: String,
}

#[derive(TableEntity, Debug, Clone)]
struct GzipDoc {
    #[table(partition_key)]
    pk: String,
    #[table(row_key)]
    rk: String,
    #[table(split = "gzip")]
    body: String,
}

#[derive(TableEntity, Debug, Clone)]
struct FileDoc {
    #[table(partition_key)]
    pk: String,
    #[table(row_key)]
    rk: String,
    #[blob_content]
    file: Option<BlobContent>,
}

/// The three kinds of large value.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Case {
    Text,
    Gzip,
    File,
}

impl Case {
    const ALL: [Case; 3] = [Case::Text, Case::Gzip, Case::File];

    fn tag(self) -> &'static str {
        match self {
            Case::Text => "text",
            Case::Gzip => "gzip",
            Case::File => "file",
        }
    }
}

/// Realistic, compressible text: log lines with counters, exactly `len` bytes.
fn log_text(len: usize) -> String {
    const LEVELS: [&str; 4] = ["INFO ", "INFO ", "DEBUG", "WARN "];
    const PATHS: [&str; 5] = [
        "/api/orders",
        "/api/customers",
        "/api/invoices",
        "/health",
        "/api/search",
    ];
    let mut text = String::with_capacity(len + 256);
    let mut i: u64 = 0;
    while text.len() < len {
        let ms = i * 37;
        let _ = writeln!(
            text,
            "2024-05-17T{:02}:{:02}:{:02}.{:03}Z {} [worker-{}] request id={:08} {} {}/{} status={} bytes={} duration_ms={}",
            (ms / 3_600_000) % 24,
            (ms / 60_000) % 60,
            (ms / 1000) % 60,
            ms % 1000,
            LEVELS[(i % 4) as usize],
            i % 8,
            i,
            if i % 3 == 0 { "POST" } else { "GET" },
            PATHS[(i % 5) as usize],
            i % 977,
            if i % 50 == 0 { 500 } else { 200 },
            (i * 7919) % 65_536,
            (i * 31) % 900 + 3,
        );
        i += 1;
    }
    text.truncate(len); // ASCII: any byte index is a char boundary
    text
}

/// Incompressible bytes (splitmix64), reproducible.
fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        out.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    out.truncate(len);
    out
}

async fn timed<T, F: Future<Output = Result<T, Failure>>>(work: F) -> Result<(Duration, T), Failure> {
    let started = Instant::now();
    let value = work.await?;
    Ok((started.elapsed(), value))
}

/// What the library stored for one value: the main row, its continuation
/// rows, and each blob it references with its bytes.
struct Layout {
    rows: Vec<Row>,
    blobs: Vec<(BlobRef, Vec<u8>, PutOptions)>,
}

impl Layout {
    /// `rows: 1 + n` or `blob, x MB`.
    fn describe(&self) -> String {
        match self.blobs.first() {
            Some((reference, ..)) => format!("blob {:.2} MB", reference.length as f64 / 1e6),
            None => format!("rows 1+{}", self.rows.len() - 1),
        }
    }

    /// The rows again under the main row key `rk`, unversioned.
    fn rows_as(&self, rk: &str) -> Vec<Row> {
        self.rows
            .iter()
            .enumerate()
            .map(|(i, row)| {
                let mut row = row.clone();
                row.etag = None;
                row.timestamp = None;
                if i == 0 {
                    row.row_key = rk.to_owned();
                } else {
                    row.row_key = continuation_key(rk, i);
                    row.insert(SPLIT_OF, Value::String(rk.to_owned()));
                }
                row
            })
            .collect()
    }
}

/// The library's figures of one round, and the raw requests'.
#[derive(Debug, Default, Clone, Copy)]
struct Round {
    lib_write: Duration,
    lib_read: Duration,
    raw_write: Duration,
    raw_read: Duration,
    /// The library's write and read on in-memory backends in the same round
    /// (on Azure only): its own work, which no request overlaps.
    own_write: Duration,
    own_read: Duration,
}

/// Everything the cases share.
struct Bench {
    db: Tables,
    /// The blob backend and container the library offloads to.
    raw: (Arc<dyn BlobBackend>, String),
    table: String,
    text: String,
    file: Vec<u8>,
}

impl Bench {
    /// Creates `doc` through the store and gets it back: both times and the entity read.
    async fn write_and_get<T: TableEntity>(
        &self,
        mut doc: T,
        rk: &str,
    ) -> Result<(Duration, Duration, Option<T>), Failure> {
        let store = self.db.store_in::<T>(&self.table);
        let (write, _) = timed(async { Ok(store.create(&mut doc).await?) }).await?;
        let (read, got) = timed(async { Ok(store.get((PARTITION, rk)).await?) }).await?;
        Ok((write, read, got))
    }

    /// Writes and reads one entity through the store; checks the value read.
    async fn library(&self, case: Case, rk: &str) -> Result<(Duration, Duration), Failure> {
        let (pk, key) = (PARTITION.to_owned(), (PARTITION, rk));
        let differs = || -> Failure { format!("{}: the value read back differs", case.tag()).into() };
        Ok(match case {
            Case::Text | Case::Gzip => {
                let (write, read, body) = if case == Case::Text {
                    let doc = TextDoc {
                        pk,
                        rk: rk.into(),
                        body: self.text.clone(),
                    };
                    let (write, read, got) = self.write_and_get(doc, rk).await?;
                    (write, read, got.map(|d| d.body))
                } else {
                    let doc = GzipDoc {
                        pk,
                        rk: rk.into(),
                        body: self.text.clone(),
                    };
                    let (write, read, got) = self.write_and_get(doc, rk).await?;
                    (write, read, got.map(|d| d.body))
                };
                if body.as_deref() != Some(self.text.as_str()) {
                    return Err(differs());
                }
                (write, read)
            }
            Case::File => {
                let store = self.db.store_in::<FileDoc>(&self.table);
                let content = BlobContent::from_bytes(self.file.clone(), "application/octet-stream");
                let mut doc = FileDoc {
                    pk,
                    rk: rk.into(),
                    file: Some(content),
                };
                let (write, _) = timed(async { Ok(store.create(&mut doc).await?) }).await?;
                let (read, bytes) = timed(async {
                    let content = store.get(key).await?.and_then(|d| d.file).ok_or_else(differs)?;
                    Ok(content.read_all().await?)
                })
                .await?;
                if bytes != self.file {
                    return Err(differs());
                }
                (write, read)
            }
        })
    }

    /// Reads back what the library stored under `rk`.
    async fn layout(&self, rk: &str) -> Result<Layout, Failure> {
        let backend = self.db.backend();
        let main = backend
            .get(&self.table, PARTITION, rk)
            .await?
            .ok_or("the main row is missing")?;
        let parts = match main.get(SPLIT_PARTS) {
            Some(Value::Int32(n)) => *n as usize,
            _ => 0,
        };
        let mut blobs = Vec::new();
        for (column, cell) in main.properties.iter().filter(|(c, _)| c.ends_with("__blob")) {
            let Value::String(json) = cell else {
                return Err(format!("{column} is not a string").into());
            };
            let reference: BlobRef = serde_json::from_str(json)?;
            let (blob_backend, container) = &self.raw;
            let got = blob_backend.get(container, &reference.path, None).await?;
            let bytes = got.ok_or("a blob is missing")?.1;
            let options = PutOptions {
                content_type: reference.content_type.clone(),
                content_encoding: reference.encoding.clone(),
                condition: BlobCondition::IfNoneMatchAny,
                ..PutOptions::default()
            };
            blobs.push((reference, bytes, options));
        }
        let mut rows = vec![main];
        for i in 1..=parts {
            let key = continuation_key(rk, i);
            rows.push(
                backend
                    .get(&self.table, PARTITION, &key)
                    .await?
                    .ok_or("a continuation row is missing")?,
            );
        }
        Ok(Layout { rows, blobs })
    }

    /// Writes the layout's rows and blob bytes again under `rk`, then reads
    /// them back (main row, then its blobs or continuation rows) and checks them.
    async fn raw(&self, layout: &Layout, rk: &str) -> Result<(Duration, Duration), Failure> {
        let (blob_backend, container) = &self.raw;
        let backend = self.db.backend();
        let rows = layout.rows_as(rk);
        let names: Vec<String> = (0..layout.blobs.len())
            .map(|i| format!("{}/raw/{rk}/{i}", self.table))
            .collect();
        let (write, _) = timed(async {
            for ((_, bytes, options), name) in layout.blobs.iter().zip(&names) {
                blob_backend
                    .put(container, name, bytes.clone(), options.clone())
                    .await?;
            }
            if rows.len() == 1 {
                backend.execute(&self.table, WriteOp::Insert(rows[0].clone())).await?;
            } else {
                backend
                    .transaction(&self.table, rows.iter().cloned().map(WriteOp::Insert).collect())
                    .await?;
            }
            Ok(())
        })
        .await?;
        let (read, (main, blobs, continuation)) = timed(async {
            let main = backend
                .get(&self.table, PARTITION, rk)
                .await?
                .ok_or("the raw main row is missing")?;
            let mut blobs = Vec::new();
            for name in &names {
                blobs.push(
                    blob_backend
                        .get(container, name, None)
                        .await?
                        .ok_or("a raw blob is missing")?
                        .1,
                );
            }
            let mut continuation = Vec::new();
            if rows.len() > 1 {
                let range = Filter::eq("PartitionKey", Value::String(PARTITION.into()))
                    .and(Filter::cmp("RowKey", CmpOp::Ge, Value::String(continuation_key(rk, 1))))
                    .and(Filter::cmp(
                        "RowKey",
                        CmpOp::Le,
                        Value::String(continuation_key(rk, rows.len() - 1)),
                    ));
                let request = QueryRequest {
                    filter: Some(range),
                    select: None,
                    top: None,
                };
                let mut next = None;
                loop {
                    let page = backend.query(&self.table, &request, next.as_ref()).await?;
                    continuation.extend(page.rows);
                    match page.next {
                        Some(c) => next = Some(c),
                        None => break,
                    }
                }
            }
            Ok((main, blobs, continuation))
        })
        .await?;
        let same_rows = main.properties == rows[0].properties
            && continuation.len() == rows.len() - 1
            && continuation
                .iter()
                .zip(&rows[1..])
                .all(|(a, b)| a.properties == b.properties);
        let same_blobs = blobs.iter().zip(&layout.blobs).all(|(a, (_, b, _))| a == b);
        if !same_rows || !same_blobs {
            return Err(format!("{rk}: the raw rows or blobs read back differ").into());
        }
        Ok((write, read))
    }

    /// Drops the table and every blob under its name.
    async fn clean_up(&self) -> Result<(), Failure> {
        self.db.backend().delete_table(&self.table).await?;
        let (blobs, container) = &self.raw;
        let prefix = format!("{}/", self.table);
        let mut marker: Option<String> = None;
        loop {
            let page = blobs.list(container, &prefix, None, marker.as_deref(), 1000).await?;
            for item in &page.items {
                blobs.delete(container, &item.name, BlobCondition::None).await?;
            }
            match page.next_marker {
                Some(m) => marker = Some(m),
                None => return Ok(()),
            }
        }
    }
}

fn mb_per_s(d: Duration) -> (String, f64) {
    let rate = SIZE as f64 / 1e6 / d.as_secs_f64();
    (format!("{rate:.1} MB/s"), rate)
}

/// The large-value figures on `db` (on Azure when `connection` is given,
/// else on in-memory backends of their own), beside the raw requests.
pub async fn figures(db: &Tables, connection: Option<&str>) -> Result<Vec<Figure>, Failure> {
    let container = BlobOptions::default().container().to_owned(); // the one Tables::connect offloads to
    let (db, blobs): (Tables, Arc<dyn BlobBackend>) = match connection {
        Some(c) => (db.clone(), Arc::new(AzureBlobBackend::from_connection_string(c)?)),
        None => {
            let blobs = Arc::new(MemoryBlobBackend::new());
            let db = Tables::with_backend(MemoryBackend::new())
                .with_blobs(blobs.clone(), BlobOptions::default())
                .without_cache();
            (db, blobs)
        }
    };
    blobs.create_container(&container).await?;
    let text = log_text(SIZE);
    let file = random_bytes(SIZE, 0x5EED);
    // On Azure, the same writes and reads on in-memory backends measure the library's own work.
    let own = match connection {
        Some(_) => {
            let blobs = Arc::new(MemoryBlobBackend::new());
            blobs.create_container(&container).await?;
            let db = Tables::with_backend(MemoryBackend::new())
                .with_blobs(blobs.clone(), BlobOptions::default())
                .without_cache();
            Some(Bench {
                db,
                raw: (blobs, container.clone()),
                table: fresh_table("Own"),
                text: text.clone(),
                file: file.clone(),
            })
        }
        None => None,
    };
    let bench = Bench {
        db,
        raw: (blobs, container),
        table: fresh_table("Large"),
        text,
        file,
    };
    let mut figures = Vec::new();
    for case in Case::ALL {
        // The warm-up round; its stored layout is the one the raw requests repeat.
        let warm = format!("{}-0", case.tag());
        bench.library(case, &warm).await?;
        let layout = bench.layout(&warm).await?;
        let (on, stored) = (&bench, &layout);
        let raw = |rk: String| async move { on.raw(stored, &format!("raw-{rk}")).await };
        raw(warm.clone()).await?;
        let mut rounds = Vec::new();
        let rounds_n: usize = std::env::var("LP_ROUNDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(ROUNDS);
        for run in 1..=rounds_n {
            let rk = format!("{}-{run}", case.tag());
            let mut round = Round::default();
            if run % 2 == 0 {
                (round.lib_write, round.lib_read) = bench.library(case, &rk).await?;
                (round.raw_write, round.raw_read) = raw(rk.clone()).await?;
            } else {
                (round.raw_write, round.raw_read) = raw(rk.clone()).await?;
                (round.lib_write, round.lib_read) = bench.library(case, &rk).await?;
            }
            if let Some(own) = &own {
                (round.own_write, round.own_read) = own.library(case, &rk).await?;
            }
            rounds.push(round);
        }
        let stored = layout.describe();
        let pick = |f: fn(&Round) -> Duration| mb_per_s(median(rounds.iter().map(f).collect()));
        for (what, lib, raw) in [
            ("write", pick(|r| r.lib_write), pick(|r| r.raw_write)),
            ("read", pick(|r| r.lib_read), pick(|r| r.raw_read)),
        ] {
            let name = format!("8 MiB {} {what} ({stored})", case.tag());
            let figure = Figure::compared(format!("{name} vs raw requests"), lib, raw);
            // In memory the raw requests are moves of the bytes: the figure shows the library's own work.
            figures.push(match connection {
                Some(_) => figure.target(Target::AtLeast(0.9)),
                None => figure,
            });
        }
        if own.is_some() {
            // What the ratio can reach on this machine if none of the library's own work
            // overlapped a request: raw / (raw + own work in memory).
            let write: [fn(&Round) -> Duration; 2] = [|r| r.own_write, |r| r.raw_write];
            let read: [fn(&Round) -> Duration; 2] = [|r| r.own_read, |r| r.raw_read];
            for (what, [own_time, raw_time]) in [("write", write), ("read", read)] {
                let own_time = median(rounds.iter().map(own_time).collect());
                let raw_time = median(rounds.iter().map(raw_time).collect());
                figures.push(Figure::compared(
                    format!("8 MiB {} {what} ceiling: own work vs raw requests", case.tag()),
                    (duration(own_time), raw_time.as_secs_f64()),
                    (duration(raw_time), (raw_time + own_time).as_secs_f64()),
                ));
            }
        }
    }
    if let Some(own) = &own {
        own.db.backend().delete_table(&own.table).await?;
    }
    bench.clean_up().await?;
    Ok(figures)
}
