//! `Store::stream` holds at most two pages (the one it decodes and the next,
//! fetched meanwhile): the peak heap growth while streaming `n` rows is the
//! same as while streaming a tenth of them, and far below a `Store::query`
//! that collects them all.
//!
//! Run on a single-threaded runtime, so that no other worker allocates beside
//! the measured code. In memory the rows live in the backend for the whole
//! run (they are not counted); what is measured is the client side plus the
//! page the backend builds for each request (at most 1000 rows).

use std::pin::pin;

use futures::StreamExt as _;
use unified_tables::{QueryOptions, Store, Tables};

use crate::alloc;
use crate::common::{fresh_table, Failure, Reading};
use crate::report::{thousands, Figure, Target};

/// The partition every row goes to.
const PARTITION: &str = "stream";
/// Rows per `create_batch` while seeding.
const SEED_CHUNK: usize = 10_000;

/// Writes `n` rows into the partition.
async fn seed(store: &Store<Reading>, n: usize) -> Result<(), Failure> {
    for start in (0..n).step_by(SEED_CHUNK) {
        let chunk: Vec<Reading> = (start..n.min(start + SEED_CHUNK))
            .map(|i| Reading::nth(PARTITION, "r", i))
            .collect();
        store.create_batch(&chunk).await?;
    }
    Ok(())
}

/// Streams the partition, counting the entities without keeping them.
/// Returns the count and the peak heap growth in bytes.
async fn stream_peak(store: &Store<Reading>) -> Result<(usize, usize), Failure> {
    let mut n = 0;
    alloc::start();
    {
        let mut stream = pin!(store.stream(QueryOptions::partition(PARTITION)));
        while let Some(entity) = stream.next().await {
            std::hint::black_box(&entity?);
            n += 1;
        }
    }
    Ok((n, alloc::stop()))
}

/// Collects the partition with `Store::query`. Returns the count and the
/// peak heap growth in bytes.
async fn query_peak(store: &Store<Reading>) -> Result<(usize, usize), Failure> {
    alloc::start();
    let all = store.query(QueryOptions::partition(PARTITION)).await;
    let peak = alloc::stop();
    Ok((all?.len(), peak))
}

fn kib(bytes: usize) -> (String, f64) {
    (format!("+{} KiB", thousands(bytes.div_ceil(1024))), bytes.max(1) as f64)
}

/// The streaming-memory figures on `db`, streaming `n` rows and `n / 10`.
pub async fn figures(db: &Tables, n: usize) -> Result<Vec<Figure>, Failure> {
    let big: Store<Reading> = db.store_in(fresh_table("StreamBig"));
    let small: Store<Reading> = db.store_in(fresh_table("StreamSmall"));
    seed(&big, n).await?;
    seed(&small, n / 10).await?;

    // A first pass, not measured: connections and lazily built state.
    stream_peak(&small).await?;
    let (n_big, stream_big) = stream_peak(&big).await?;
    let (n_small, stream_small) = stream_peak(&small).await?;
    let (n_query, query_big) = query_peak(&big).await?;
    if (n_big, n_small, n_query) != (n, n / 10, n) {
        return Err(format!("streamed {n_big} and {n_small}, collected {n_query}").into());
    }
    for store in [&big, &small] {
        db.backend().delete_table(store.table()).await?;
    }
    let (many, few) = (thousands(n), thousands(n / 10));
    Ok(vec![
        Figure::compared(
            format!("peak heap: stream {many} rows vs collect them"),
            kib(stream_big),
            kib(query_big),
        ),
        Figure::compared(
            format!("peak heap: stream {many} rows vs {few} rows"),
            kib(stream_big),
            kib(stream_small),
        )
        .target(Target::AtMost(1.5)),
    ])
}
