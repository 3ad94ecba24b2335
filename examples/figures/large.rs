//! What large values cost: an 8 MiB string stored with `split = "text"`
//! (ASCII log lines, and mixed 1- to 4-byte text: ASCII, `ä`, `Ж`, `€`, CJK,
//! emoji), an 8 MiB string stored with `split = "gzip"` and an 8 MiB file
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
//! and the raw requests taking turns (a write each, then three reads each)
//! and swapping who goes first.
//!
//! On Azure each round also writes and reads the value on in-memory
//! backends, through the library and as raw requests: the difference is the
//! library's own work (hashing, packing, encoding), which a "ceiling" line
//! prints beside the raw requests' time. Its ratio is raw / (raw + own
//! work): what the figure reaches when none of that work overlaps a
//! request. A write cannot overlap it (the blob's name and the manifest
//! carry the hash of the whole value), so a write whose ceiling is below
//! the target prints as `capped`: the machine's cores against the
//! emulator's speed. Streaming a gzip value's transaction body as its
//! pieces are packed would not lift that cap here: the client hands the
//! whole body (about 2.5 MB) to the kernel in one write, and the emulator
//! reads a transaction's body whole before it applies any of it, so the
//! emulator's time comes after the packing however the body is sent. A read of continuation rows unpacks each row as it
//! arrives, but a row only once all of it is in (the emulator answers a
//! row in one burst): its ceiling counts the own work on the last row's
//! share of the stored bytes, and it is capped the same way. A blob read
//! hashes and unpacks as the bytes arrive and can beat its ceiling.

mod raw;

use std::fmt::Write as _;
use std::future::Future;
use std::time::{Duration, Instant};

use std::sync::Arc;

use unified_tables::backend::azure::AzureBlobBackend;
use unified_tables::backend::blob::BlobBackend;
use unified_tables::backend::memory::{MemoryBackend, MemoryBlobBackend};
use unified_tables::backend::Backend;
use unified_tables::{BlobContent, BlobOptions, TableEntity, Tables};

use crate::common::{fresh_table, Failure};
use crate::report::{duration, median, Figure, Target};
use raw::Layout;

/// Bytes of each value.
const SIZE: usize = 8 * 1024 * 1024;
/// Measured rounds (after one warm-up): enough for a median that a few slow
/// requests of the emulator do not move.
const ROUNDS: usize = 9;
/// Reads of each kind per round: reads are short, and the emulator's speed
/// swings between them, so each round takes turns several times.
const READS_PER_ROUND: usize = 3;
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
    /// `split = "text"` of mixed 1- to 4-byte text.
    Mixed,
    Gzip,
    File,
}

impl Case {
    const ALL: [Case; 4] = [Case::Text, Case::Mixed, Case::Gzip, Case::File];

    fn tag(self) -> &'static str {
        match self {
            Case::Text => "text",
            Case::Mixed => "mixed-text",
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
            if i.is_multiple_of(3) { "POST" } else { "GET" },
            PATHS[(i % 5) as usize],
            i % 977,
            if i.is_multiple_of(50) { 500 } else { 200 },
            (i * 7919) % 65_536,
            (i * 31) % 900 + 3,
        );
        i += 1;
    }
    text.truncate(len); // ASCII: any byte index is a char boundary
    text
}

/// Mixed 1- to 4-byte text ([`unified_tables_tests::mixed_text`]), exactly
/// `len` bytes of UTF-8.
fn mixed_text(len: usize) -> String {
    let mut text = unified_tables_tests::mixed_text(len * 6 / 10, 0x5EED);
    let mut end = len.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.extend(std::iter::repeat_n('a', len - text.len()));
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

/// The samples of one case: the library's and the raw requests' writes
/// and reads, and (on Azure only) the library's own work in the same rounds:
/// its write and read on in-memory backends less the raw requests' there.
#[derive(Debug, Default)]
struct Samples {
    lib_write: Vec<Duration>,
    lib_read: Vec<Duration>,
    raw_write: Vec<Duration>,
    raw_read: Vec<Duration>,
    own_write: Vec<Duration>,
    own_read: Vec<Duration>,
}

/// Everything the cases share.
struct Bench {
    db: Tables,
    /// The blob backend and container the library offloads to.
    raw: (Arc<dyn BlobBackend>, String),
    table: String,
    text: String,
    mixed: String,
    file: Vec<u8>,
}

impl Bench {
    /// Creates the case's entity under `rk` through the store.
    async fn library_write(&self, case: Case, rk: &str) -> Result<Duration, Failure> {
        let (pk, rk) = (PARTITION.to_owned(), rk.to_owned());
        let (text, table) = (self.text.clone(), &self.table);
        Ok(match case {
            Case::Text | Case::Mixed => {
                let body = if case == Case::Mixed { self.mixed.clone() } else { text };
                let mut doc = TextDoc { pk, rk, body };
                let store = self.db.store_in::<TextDoc>(table);
                timed(async { Ok(store.create(&mut doc).await?) }).await?.0
            }
            Case::Gzip => {
                let mut doc = GzipDoc { pk, rk, body: text };
                let store = self.db.store_in::<GzipDoc>(table);
                timed(async { Ok(store.create(&mut doc).await?) }).await?.0
            }
            Case::File => {
                let content = BlobContent::from_bytes(self.file.clone(), "application/octet-stream");
                let mut doc = FileDoc {
                    pk,
                    rk,
                    file: Some(content),
                };
                let store = self.db.store_in::<FileDoc>(table);
                timed(async { Ok(store.create(&mut doc).await?) }).await?.0
            }
        })
    }

    /// Gets the case's entity under `rk` through the store (the file with
    /// `read_all`); checks the value read.
    async fn library_read(&self, case: Case, rk: &str) -> Result<Duration, Failure> {
        let (key, table) = ((PARTITION, rk), &self.table);
        let differs = || -> Failure { format!("{}: the value read back differs", case.tag()).into() };
        let same = match case {
            Case::Text | Case::Mixed => {
                let want = if case == Case::Mixed { &self.mixed } else { &self.text };
                let store = self.db.store_in::<TextDoc>(table);
                let (read, got) = timed(async { Ok(store.get(key).await?) }).await?;
                (read, got.is_some_and(|d| &d.body == want))
            }
            Case::Gzip => {
                let store = self.db.store_in::<GzipDoc>(table);
                let (read, got) = timed(async { Ok(store.get(key).await?) }).await?;
                (read, got.is_some_and(|d| d.body == self.text))
            }
            Case::File => {
                let store = self.db.store_in::<FileDoc>(table);
                let (read, bytes) = timed(async {
                    let content = store.get(key).await?.and_then(|d| d.file).ok_or_else(differs)?;
                    Ok(content.read_all().await?)
                })
                .await?;
                (read, bytes == self.file)
            }
        };
        match same {
            (read, true) => Ok(read),
            (_, false) => Err(differs()),
        }
    }

    /// The warm-up round of `case` under `rk`, not measured: the library's
    /// write and read, then the raw requests' of the layout it stored, which
    /// it returns.
    async fn warm_up(&self, case: Case, rk: &str) -> Result<Layout, Failure> {
        self.library_write(case, rk).await?;
        self.library_read(case, rk).await?;
        let layout = self.layout(rk).await?;
        let raw_rk = format!("raw-{rk}");
        self.raw_write(&layout, &raw_rk).await?;
        self.raw_read(&layout, &raw_rk).await?;
        Ok(layout)
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
    let mixed = mixed_text(SIZE);
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
                mixed: mixed.clone(),
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
        mixed,
        file,
    };
    let mut figures = Vec::new();
    let rounds: usize = std::env::var("LP_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(ROUNDS);
    for case in Case::ALL {
        // The warm-up round; its stored layout is the one the raw requests repeat.
        let warm = format!("{}-0", case.tag());
        let layout = bench.warm_up(case, &warm).await?;
        let own_layout = match &own {
            Some(own) => Some((own, own.warm_up(case, &warm).await?)),
            None => None,
        };
        let mut samples = Samples::default();
        for run in 1..=rounds {
            let rk = format!("{}-{run}", case.tag());
            let raw_rk = format!("raw-{rk}");
            // Library and raw requests take turns, swapping who goes first: the writes, then each pair of reads.
            if run % 2 == 0 {
                samples.lib_write.push(bench.library_write(case, &rk).await?);
                samples.raw_write.push(bench.raw_write(&layout, &raw_rk).await?);
            } else {
                samples.raw_write.push(bench.raw_write(&layout, &raw_rk).await?);
                samples.lib_write.push(bench.library_write(case, &rk).await?);
            }
            for pair in 0..READS_PER_ROUND {
                if (run + pair) % 2 == 0 {
                    samples.lib_read.push(bench.library_read(case, &rk).await?);
                    samples.raw_read.push(bench.raw_read(&layout, &raw_rk).await?);
                } else {
                    samples.raw_read.push(bench.raw_read(&layout, &raw_rk).await?);
                    samples.lib_read.push(bench.library_read(case, &rk).await?);
                }
            }
            if let Some((own, own_layout)) = &own_layout {
                let lib_write = own.library_write(case, &rk).await?;
                let lib_read = own.library_read(case, &rk).await?;
                let raw_write = own.raw_write(own_layout, &raw_rk).await?;
                let raw_read = own.raw_read(own_layout, &raw_rk).await?;
                samples.own_write.push(lib_write.saturating_sub(raw_write));
                samples.own_read.push(lib_read.saturating_sub(raw_read));
            }
        }
        let stored = layout.describe();
        let pick = |v: &Vec<Duration>| median(v.clone());
        let write = [&samples.lib_write, &samples.raw_write, &samples.own_write];
        let read = [&samples.lib_read, &samples.raw_read, &samples.own_read];
        let mut ceilings = Vec::new();
        for (what, [lib, raw, own_work]) in [("write", write), ("read", read)] {
            let (raw_time, mut own_time) = (pick(raw), pick(own_work));
            // A read of continuation rows: only the work on the last row must follow the last byte.
            let last_row = layout.last_row_share().filter(|_| what == "read");
            if let Some(share) = last_row {
                own_time = own_time.mul_f64(share);
            }
            let ceiling = raw_time.as_secs_f64() / (raw_time + own_time).as_secs_f64();
            let name = format!("8 MiB {} {what} ({stored})", case.tag());
            let figure = Figure::compared(
                format!("{name} vs raw requests"),
                mb_per_s(pick(lib)),
                mb_per_s(raw_time),
            );
            // The gzip write packs the value before its first request: its target is 0.85x.
            let target = Target::AtLeast(if what == "write" && matches!(case, Case::Gzip) {
                0.85
            } else {
                0.9
            });
            // In memory the raw requests are moves of the bytes: the figure shows the library's own work.
            figures.push(match connection {
                // A write hashes (and packs) before its first request, and a read of continuation
                // rows unpacks the last one after its last byte: raw / (raw + that work) bounds
                // them. A blob read hashes and unpacks as the bytes arrive, so it has no such bound.
                Some(_) if what == "write" || last_row.is_some() => figure.target(target).ceiling(ceiling),
                Some(_) => figure.target(target),
                None => figure,
            });
            if own_layout.is_some() {
                // What the ratio reaches if none of that work overlaps a request.
                let work = match last_row {
                    Some(share) => format!("own work on the last row ({:.0}%)", share * 100.0),
                    None => "own work".to_owned(),
                };
                ceilings.push(Figure::compared(
                    format!("8 MiB {} {what} ceiling: {work} vs raw requests", case.tag()),
                    (duration(own_time), raw_time.as_secs_f64()),
                    (duration(raw_time), (raw_time + own_time).as_secs_f64()),
                ));
            }
        }
        figures.extend(ceilings);
    }
    if let Some(own) = &own {
        own.db.backend().delete_table(&own.table).await?;
    }
    bench.clean_up().await?;
    Ok(figures)
}
