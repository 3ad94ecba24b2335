//! What large values cost: an 8 MiB string stored with `split = "text"`, an
//! 8 MiB string stored with `split = "gzip"` and an 8 MiB file
//! (`BlobContent`), each written with `Store::create` and read back with
//! `Store::get` (the file with `read_all`), next to a raw blob upload and
//! download of the same bytes through `AzureBlobBackend` in the same
//! container. Every figure is the median of a few runs after one warm-up;
//! every read is checked to return exactly the bytes written.
//!
//! Needs Azure Storage or Azurite (tables and blobs); the in-memory backend
//! has no network cost to measure.
//!
//! ```text
//! cargo run --release --example large_figures -- "UseDevelopmentStorage=true"
//! UNIFIED_TABLES_CONNECTION="DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=..;TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;" \
//!     cargo run --release --example large_figures
//! ```

use std::fmt::Write as _;
use std::future::Future;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use unified_tables::backend::azure::AzureBlobBackend;
use unified_tables::backend::blob::{BlobBackend, BlobCondition, PutOptions};
use unified_tables::{BlobContent, BlobOptions, Row, TableEntity, Tables, Value};
use unified_tables_examples::CONNECTION_VAR;

type Failure = Box<dyn std::error::Error>;

/// Bytes of each value.
const SIZE: usize = 8 * 1024 * 1024;
/// Measured runs of each figure (after one warm-up).
const REPEATS: usize = 5;
/// The partition every entity goes to.
const PARTITION: &str = "figures";
/// The ratio library/raw the library should reach.
const TARGET: f64 = 0.8;

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

#[derive(Debug, Clone, Copy, PartialEq)]
enum Case {
    Text,
    Gzip,
    File,
}

impl Case {
    fn label(self) -> &'static str {
        match self {
            Case::Text => "split = \"text\"  (8 MiB log text)",
            Case::Gzip => "split = \"gzip\"  (8 MiB log text)",
            Case::File => "BlobContent file (8 MiB random)",
        }
    }

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

/// A name no earlier run used: letters and digits only.
fn stamp() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_micros()
        % 10_000_000_000
}

async fn timed<T, F: Future<Output = Result<T, Failure>>>(work: F) -> Result<(Duration, T), Failure> {
    let started = Instant::now();
    let value = work.await?;
    Ok((started.elapsed(), value))
}

/// The four timings of one round.
#[derive(Debug, Default, Clone, Copy)]
struct Round {
    lib_write: Duration,
    lib_read: Duration,
    raw_write: Duration,
    raw_read: Duration,
}

struct Bench {
    db: Tables,
    blobs: AzureBlobBackend,
    container: String,
    table: String,
    text: String,
    file: Vec<u8>,
    raw_names: u32,
}

impl Bench {
    /// Writes and reads one entity through the store; checks the value read.
    async fn library(&self, case: Case, rk: &str) -> Result<(Duration, Duration), Failure> {
        let pk = PARTITION.to_owned();
        let rk = rk.to_owned();
        let mismatch = |what: &str| -> Failure {
            format!("{}: the {what} read back differs from the one written", case.tag()).into()
        };
        match case {
            Case::Text => {
                let store = self.db.store_in::<TextDoc>(&self.table);
                let mut doc = TextDoc {
                    pk,
                    rk: rk.clone(),
                    body: self.text.clone(),
                };
                let (write, _) = timed(async { Ok(store.create(&mut doc).await?) }).await?;
                let (read, got) = timed(async { Ok(store.get((PARTITION, rk.as_str())).await?) }).await?;
                let got = got.ok_or_else(|| mismatch("entity (missing)"))?;
                if got.body != self.text {
                    return Err(mismatch("string"));
                }
                Ok((write, read))
            }
            Case::Gzip => {
                let store = self.db.store_in::<GzipDoc>(&self.table);
                let mut doc = GzipDoc {
                    pk,
                    rk: rk.clone(),
                    body: self.text.clone(),
                };
                let (write, _) = timed(async { Ok(store.create(&mut doc).await?) }).await?;
                let (read, got) = timed(async { Ok(store.get((PARTITION, rk.as_str())).await?) }).await?;
                let got = got.ok_or_else(|| mismatch("entity (missing)"))?;
                if got.body != self.text {
                    return Err(mismatch("string"));
                }
                Ok((write, read))
            }
            Case::File => {
                let store = self.db.store_in::<FileDoc>(&self.table);
                let mut doc = FileDoc {
                    pk,
                    rk: rk.clone(),
                    file: Some(BlobContent::from_bytes(self.file.clone(), "application/octet-stream")),
                };
                let (write, _) = timed(async { Ok(store.create(&mut doc).await?) }).await?;
                let (read, bytes) = timed(async {
                    let got = store.get((PARTITION, rk.as_str())).await?;
                    let content = got
                        .and_then(|d| d.file)
                        .ok_or_else(|| mismatch("file reference (missing)"))?;
                    Ok(content.read_all().await?)
                })
                .await?;
                if bytes != self.file {
                    return Err(mismatch("file"));
                }
                Ok((write, read))
            }
        }
    }

    /// Uploads and downloads the same bytes as one blob, directly; checks them, then deletes the blob.
    async fn raw(&mut self, case: Case) -> Result<(Duration, Duration), Failure> {
        let bytes = match case {
            Case::Text | Case::Gzip => self.text.as_bytes().to_vec(),
            Case::File => self.file.clone(),
        };
        self.raw_names += 1;
        let name = format!("large-figures-raw/{}/{}-{}", self.table, case.tag(), self.raw_names);
        let (c, n) = (self.container.as_str(), name.as_str());
        let (write, _) = timed(async { Ok(self.blobs.put(c, n, bytes, PutOptions::default()).await?) }).await?;
        let (read, got) = timed(async { Ok(self.blobs.get(c, n, None).await?) }).await?;
        let (_, got) = got.ok_or("the raw blob is missing")?;
        let expected: &[u8] = match case {
            Case::Text | Case::Gzip => self.text.as_bytes(),
            Case::File => &self.file,
        };
        if got != expected {
            return Err(format!("{}: the raw blob read back differs", case.tag()).into());
        }
        self.blobs.delete(c, n, BlobCondition::None).await?;
        Ok((write, read))
    }

    /// What the library stored for an entity (from its main row).
    async fn stored_as(&self, case: Case, rk: &str) -> Result<String, Failure> {
        let row: Row = self
            .db
            .backend()
            .get(&self.table, PARTITION, rk)
            .await?
            .ok_or("the main row is missing")?;
        let blob = row.properties.keys().find(|k| k.ends_with("__blob")).cloned();
        if let Some(cell) = blob {
            let json = row.get(&cell).and_then(Value::as_str).unwrap_or_default();
            let length = blob_length(json).unwrap_or(0);
            let what = if case == Case::File { "file blob" } else { "blob" };
            return Ok(format!("{what}, {:.2} MB", length as f64 / 1e6));
        }
        let len = match row.get("Body__len") {
            Some(Value::Int64(n)) => *n as f64 / 1e6,
            _ => 0.0,
        };
        let encoding = row.get("Body__enc").and_then(Value::as_str).unwrap_or("?").to_owned();
        let parts = match row.get("_SplitParts") {
            Some(Value::Int32(n)) => *n,
            _ => 0,
        };
        Ok(format!("rows: 1 + {parts}, {len:.2} MB {encoding}"))
    }
}

/// The `length` of a blob reference cell, without a JSON dependency.
fn blob_length(json: &str) -> Option<u64> {
    let start = json.find("\"length\":")? + "\"length\":".len();
    let digits: String = json[start..].chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn mb_per_s(d: Duration) -> f64 {
    SIZE as f64 / 1e6 / d.as_secs_f64()
}

struct Line {
    case: Case,
    stored: String,
    median: Round,
}

#[tokio::main]
async fn main() -> Result<(), Failure> {
    let connection = std::env::args().nth(1).or_else(|| std::env::var(CONNECTION_VAR).ok());
    let Some(connection) = connection.filter(|c| !c.trim().is_empty()) else {
        eprintln!(
            "large_figures needs Azure Storage or Azurite (tables and blobs): give a connection string as the first \
             argument or in {CONNECTION_VAR}, e.g.\n  cargo run --release -p unified-tables-examples --example large_figures -- \"UseDevelopmentStorage=true\""
        );
        std::process::exit(2);
    };
    let db = Tables::connect(&connection)?;
    let blobs = AzureBlobBackend::from_connection_string(&connection)?;
    let container = BlobOptions::default().container; // the container Tables::connect offloads to
    blobs.create_container(&container).await?;
    let mut bench = Bench {
        db,
        blobs,
        container,
        table: format!("LargeFig{}", stamp()),
        text: log_text(SIZE),
        file: random_bytes(SIZE, 0x5EED),
        raw_names: 0,
    };

    println!(
        "Large values through unified-tables vs raw blobs, {} at {}",
        bench.table,
        bench.blobs.blob_endpoint()
    );
    println!(
        "each value {SIZE} bytes; 1 warm-up round, then the median of {REPEATS} rounds; MB/s = 10^6 bytes of the value per second"
    );
    println!();

    // One warm-up round of every case, then REPEATS measured rounds; the
    // cases take turns, and library and raw swap order every round, so that
    // the emulator's drift (garbage collection, growing data) hits both alike.
    let cases = [Case::Text, Case::Gzip, Case::File];
    let mut rounds: Vec<Vec<Round>> = vec![Vec::new(); cases.len()];
    for run in 0..=REPEATS {
        for (i, &case) in cases.iter().enumerate() {
            let rk = format!("{}-{run}", case.tag());
            let ((lib_write, lib_read), (raw_write, raw_read)) = if run % 2 == 0 {
                let lib = bench.library(case, &rk).await?;
                (lib, bench.raw(case).await?)
            } else {
                let raw = bench.raw(case).await?;
                (bench.library(case, &rk).await?, raw)
            };
            if run > 0 {
                rounds[i].push(Round {
                    lib_write,
                    lib_read,
                    raw_write,
                    raw_read,
                });
            }
        }
    }
    let mut lines = Vec::new();
    for (&case, rounds) in cases.iter().zip(&rounds) {
        let pick = |f: fn(&Round) -> Duration| median(rounds.iter().map(f).collect());
        lines.push(Line {
            case,
            stored: bench.stored_as(case, &format!("{}-0", case.tag())).await?,
            median: Round {
                lib_write: pick(|r| r.lib_write),
                lib_read: pick(|r| r.lib_read),
                raw_write: pick(|r| r.raw_write),
                raw_read: pick(|r| r.raw_read),
            },
        });
    }

    println!(
        "{:<34} {:<26} | {:>17} {:>9} | {:>17} {:>9} | {:>7} {:>7}",
        "value", "stored by the library", "library write", "raw put", "library read", "raw get", "write", "read"
    );
    println!(
        "{:<34} {:<26} | {:>17} {:>9} | {:>17} {:>9} | {:>7} {:>7}",
        "", "", "MB/s (ms)", "MB/s", "MB/s (ms)", "MB/s", "lib/raw", "lib/raw"
    );
    println!("{}", "-".repeat(144));
    let mut verdicts = Vec::new();
    for line in &lines {
        let m = line.median;
        let write_ratio = m.raw_write.as_secs_f64() / m.lib_write.as_secs_f64();
        let read_ratio = m.raw_read.as_secs_f64() / m.lib_read.as_secs_f64();
        println!(
            "{:<34} {:<26} | {:>8.1} ({:>5.0} ms) {:>9.1} | {:>8.1} ({:>5.0} ms) {:>9.1} | {:>6.2}x {:>6.2}x",
            line.case.label(),
            line.stored,
            mb_per_s(m.lib_write),
            m.lib_write.as_secs_f64() * 1e3,
            mb_per_s(m.raw_write),
            mb_per_s(m.lib_read),
            m.lib_read.as_secs_f64() * 1e3,
            mb_per_s(m.raw_read),
            write_ratio,
            read_ratio,
        );
        let mark = |r: f64| if r >= TARGET { "met" } else { "NOT met" };
        verdicts.push(format!(
            "{:<34} write {} ({write_ratio:.2}x), read {} ({read_ratio:.2}x)",
            line.case.label(),
            mark(write_ratio),
            mark(read_ratio)
        ));
    }
    println!();
    println!("target: library at least {TARGET:.1}x of raw (ratio = raw time / library time)");
    for v in verdicts {
        println!("  {v}");
    }
    println!("every read returned exactly the bytes written");

    // Clean up: the table, then the library's blobs of this table.
    bench.db.backend().delete_table(&bench.table).await?;
    let prefix = format!("{}/", bench.table);
    let mut marker: Option<String> = None;
    loop {
        let page = bench
            .blobs
            .list(&bench.container, &prefix, None, marker.as_deref(), 1000)
            .await?;
        for item in &page.items {
            bench
                .blobs
                .delete(&bench.container, &item.name, BlobCondition::None)
                .await?;
        }
        match page.next_marker {
            Some(m) => marker = Some(m),
            None => break,
        }
    }
    Ok(())
}
