//! `Store::stream` holds at most one page: the peak heap while streaming
//! 100,000 rows is the same as while streaming 10,000, and far below a
//! `Store::query` that collects them all.
//!
//! A counting global allocator tracks the bytes allocated now and at the
//! peak. Each measurement resets the peak to the current heap (the baseline)
//! and reports how far above it the heap went.
//!
//! ```text
//! cargo run --release --example stream_memory                                  # in memory
//! cargo run --release --example stream_memory -- "UseDevelopmentStorage=true"  # Azurite
//! ```
//!
//! On the in-memory backend the rows themselves live in the backend for the
//! whole run (they are part of the baseline); what is measured is the client
//! side plus the page the backend builds for each request (at most 1000 rows).

use std::alloc::{GlobalAlloc, Layout, System};
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use futures::StreamExt as _;
use unified_tables::{Backend, QueryOptions, Store, TableEntity};
use unified_tables_examples::tables_from_env;

// --- A counting allocator --------------------------------------------------

/// `System`, counting the bytes allocated now and at the peak.
struct CountingAllocator;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(bytes: usize) {
    let now = CURRENT.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

fn shrank(bytes: usize) {
    CURRENT.fetch_sub(bytes, Ordering::Relaxed);
}

// SAFETY: every call is forwarded to `System` unchanged; only counters are added.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            grew(layout.size());
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            grew(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                shrank(layout.size() - new_size);
            }
        }
        new
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// Bytes allocated now.
fn heap_now() -> usize {
    CURRENT.load(Ordering::Relaxed)
}

/// Sets the peak to the bytes allocated now and returns them: the baseline
/// of the next measurement.
fn reset_peak() -> usize {
    let now = heap_now();
    PEAK.store(now, Ordering::Relaxed);
    now
}

/// How far the heap went above `baseline` since [`reset_peak`].
fn peak_above(baseline: usize) -> usize {
    PEAK.load(Ordering::Relaxed).saturating_sub(baseline)
}

// --- The measurement ---------------------------------------------------------

type Failure = Box<dyn std::error::Error>;

const BIG: usize = 100_000;
const SMALL: usize = 10_000;
const PARTITION: &str = "stream";

#[derive(TableEntity, Debug, Clone)]
#[table(name = "StreamMemory")]
struct Reading {
    #[table(partition_key)]
    pk: String,
    #[table(row_key)]
    rk: String,
    value: i64,
    label: String,
}

/// Writes `n` rows into the partition, 10,000 entities at a time.
async fn seed(store: &Store<Reading>, n: usize) -> Result<(), Failure> {
    for start in (0..n).step_by(10_000) {
        let chunk: Vec<Reading> = (start..n.min(start + 10_000))
            .map(|i| Reading {
                pk: PARTITION.to_owned(),
                rk: format!("r{i:07}"),
                value: i as i64 * 7,
                label: format!("item {}", i % 97),
            })
            .collect();
        store.create_batch(&chunk).await?;
    }
    Ok(())
}

/// Streams the partition, counting the entities without keeping them.
/// Returns the count and the peak heap growth in bytes.
async fn stream_peak(store: &Store<Reading>) -> Result<(usize, usize), Failure> {
    let baseline = reset_peak();
    let mut n = 0;
    {
        let mut stream = pin!(store.stream(QueryOptions::partition(PARTITION)));
        while let Some(entity) = stream.next().await {
            let entity = entity?;
            std::hint::black_box(&entity);
            n += 1;
        }
    }
    Ok((n, peak_above(baseline)))
}

/// Collects the partition with `Store::query`. Returns the count and the
/// peak heap growth in bytes.
async fn query_peak(store: &Store<Reading>) -> Result<(usize, usize), Failure> {
    let baseline = reset_peak();
    let all = store.query(QueryOptions::partition(PARTITION)).await?;
    let peak = peak_above(baseline);
    Ok((all.len(), peak))
}

/// Reads one page of 1000 entities with `Store::page`, for reference.
async fn page_peak(store: &Store<Reading>) -> Result<(usize, usize), Failure> {
    let baseline = reset_peak();
    let page = store.page(QueryOptions::partition(PARTITION).take(1000)).await?;
    let peak = peak_above(baseline);
    Ok((page.items.len(), peak))
}

fn kib(bytes: usize) -> String {
    thousands((bytes + 512) / 1024)
}

fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Failure> {
    // One thread: no runtime worker allocates beside the measured code.
    let (db, backend) = tables_from_env()?;
    println!("stream_memory on {backend}");
    let stamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_micros()
        % 10_000_000_000;
    let big: Store<Reading> = db.store_in(format!("StreamBig{stamp}"));
    let small: Store<Reading> = db.store_in(format!("StreamSmall{stamp}"));

    let before_seed = heap_now();
    seed(&big, BIG).await?;
    seed(&small, SMALL).await?;
    println!(
        "seeded {} + {} rows with create_batch; heap held after seeding (the backend's tables): {} KiB",
        thousands(BIG),
        thousands(SMALL),
        kib(heap_now().saturating_sub(before_seed))
    );

    let (n_big, stream_big) = stream_peak(&big).await?;
    let (n_small, stream_small) = stream_peak(&small).await?;
    let (n_query, query_big) = query_peak(&big).await?;
    let (n_page, page) = page_peak(&big).await?;
    // Again, after everything else, to show the first figure was not a warm-up effect.
    let (n_again, stream_again) = stream_peak(&big).await?;
    assert_eq!((n_big, n_small, n_query, n_page, n_again), (BIG, SMALL, BIG, 1000, BIG));

    println!();
    println!("peak heap growth above the baseline:");
    println!(
        "  Store::stream,  {:>7} rows:          +{:>7} KiB",
        thousands(n_big),
        kib(stream_big)
    );
    println!(
        "  Store::stream,  {:>7} rows:          +{:>7} KiB",
        thousands(n_small),
        kib(stream_small)
    );
    println!(
        "  Store::query,   {:>7} rows (a Vec):  +{:>7} KiB",
        thousands(n_query),
        kib(query_big)
    );
    println!(
        "  Store::page,    {:>7} rows (1 page): +{:>7} KiB",
        thousands(n_page),
        kib(page)
    );
    println!(
        "  Store::stream,  {:>7} rows (again):  +{:>7} KiB",
        thousands(n_again),
        kib(stream_again)
    );
    println!();
    println!(
        "stream {} rows: peak +{} KiB; stream {} rows: peak +{} KiB; query (Vec of {}): peak +{} KiB",
        thousands(BIG),
        kib(stream_big),
        thousands(SMALL),
        kib(stream_small),
        thousands(BIG),
        kib(query_big)
    );
    let growth = stream_big as f64 / stream_small.max(1) as f64;
    println!(
        "stream peak, {}x the rows: {growth:.2}x the heap ({}); query / stream at {} rows: {:.0}x",
        BIG / SMALL,
        if growth < 1.5 {
            "does not grow with the row count"
        } else {
            "GROWS with the row count"
        },
        thousands(BIG),
        query_big as f64 / stream_big.max(1) as f64
    );

    for store in [&big, &small] {
        db.backend().delete_table(store.table()).await?;
    }
    Ok(())
}
