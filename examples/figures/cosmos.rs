//! Reads that need key order on Cosmos DB for Table (in memory): `take(10)`
//! of a 10,000-row partition and an append log's `recent(10)` over 10,000
//! events, on the in-memory backend's Cosmos profile (rows in no order,
//! pages cut at random sizes) against the same reads on its Table Storage
//! profile. That service returns a query's rows in no order, so the store
//! reads every match and orders it: the figures are the query pages and
//! the time one call takes there, against the one page the storage
//! profile answers with.

use std::sync::Arc;
use std::time::{Duration, Instant};

use unified_tables::backend::counting::CountingBackend;
use unified_tables::backend::memory::MemoryBackend;
use unified_tables::backend::Backend;
use unified_tables::{QueryOptions, Store, Tables};

use crate::common::{fresh_table, Failure, Reading};
use crate::report::{duration, median, thousands, Figure};

/// The section's sizes: rows of the partition and events of the log, and
/// the calls measured of each read (the figure is their median).
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    /// Rows in the queried partition, and events in the log.
    pub rows: usize,
    /// Calls measured per read and profile.
    pub rounds: usize,
}

/// The sizes of record.
pub const SIZES: Sizes = Sizes {
    rows: 10_000,
    rounds: 15,
};

/// The rows each read asks for.
const TAKE: usize = 10;

/// The seed of the Cosmos profile's order and page cuts.
const SEED: u64 = 1;

/// One read measured on one profile: the median query pages, queries
/// started and time of a call.
#[derive(Debug, Clone, Copy)]
pub struct Measured {
    /// Query pages (requests) per call.
    pub pages: u64,
    /// Queries started per call.
    pub queries: u64,
    /// Time per call.
    pub time: Duration,
}

/// Both reads on one profile.
#[derive(Debug, Clone, Copy)]
pub struct Profile {
    /// `store.query(QueryOptions::partition(p).take(10))`.
    pub take: Measured,
    /// `store.recent(p, 10, None)` of an append log.
    pub recent: Measured,
}

/// A counted handle on `backend` (no cache: every call reads the table).
fn counted(backend: MemoryBackend) -> (CountingBackend<Arc<dyn Backend>>, Tables) {
    let counter = CountingBackend::new(Arc::new(backend) as Arc<dyn Backend>);
    let tables = Tables::with_backend(counter.clone()).without_cache();
    (counter, tables)
}

/// `rounds` calls of `read`, each counted alone: the medians.
async fn measure<F, Fut>(
    counter: &CountingBackend<Arc<dyn Backend>>,
    rounds: usize,
    mut read: F,
) -> Result<Measured, Failure>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), Failure>>,
{
    let (mut pages, mut queries, mut times) = (Vec::new(), Vec::new(), Vec::new());
    // One call first, unmeasured: the allocator and the caches are warm for all.
    read().await?;
    for _ in 0..rounds {
        counter.reset();
        let started = Instant::now();
        read().await?;
        times.push(started.elapsed());
        let counts = counter.counts();
        pages.push(counts.queries);
        queries.push(counts.query_starts);
    }
    let mid = |mut v: Vec<u64>| {
        v.sort_unstable();
        v.get(v.len().saturating_sub(1) / 2).copied().unwrap_or_default()
    };
    Ok(Measured {
        pages: mid(pages),
        queries: mid(queries),
        time: median(times),
    })
}

/// Fills a partition and a log on `backend`, then measures both reads,
/// checking each call's answer: the first `TAKE` keys in order, and the
/// newest `TAKE` events newest first.
pub async fn profile(backend: MemoryBackend, sizes: Sizes) -> Result<Profile, Failure> {
    let (counter, tables) = counted(backend);
    let rows: Store<Reading> = tables.store_in(fresh_table("CosmosTake"));
    rows.ensure_created().await?;
    rows.create_batch(&Reading::many("p", "r", sizes.rows)).await?;
    let first: Vec<String> = (0..TAKE).map(|i| Reading::nth("p", "r", i).rk).collect();
    let (rows, first) = (&rows, &first);
    let take = measure(&counter, sizes.rounds, || async move {
        let got = rows.query(QueryOptions::partition("p").take(TAKE)).await?;
        let keys: Vec<&String> = got.iter().map(|r| &r.rk).collect();
        if keys != first.iter().collect::<Vec<_>>() {
            return Err(format!("take({TAKE}) answered {keys:?}, not the first {TAKE} keys").into());
        }
        Ok(())
    })
    .await?;

    let log: Store<Reading> = tables.store_in(fresh_table("CosmosLog"));
    log.ensure_created().await?;
    for i in 0..sizes.rows {
        let mut event = Reading::nth("", "", i);
        log.append("log", &mut event, None).await?;
    }
    // The newest events carry the highest values (`value` is 7 × the append's index).
    let newest: Vec<i64> = (0..TAKE).map(|i| (sizes.rows - 1 - i) as i64 * 7).collect();
    let (log, newest) = (&log, &newest);
    let recent = measure(&counter, sizes.rounds, || async move {
        let got = log.recent("log", TAKE, None).await?;
        let values: Vec<i64> = got.iter().map(|r| r.value).collect();
        if &values != newest {
            return Err(format!("recent({TAKE}) answered {values:?}, not the newest {TAKE} events").into());
        }
        Ok(())
    })
    .await?;
    Ok(Profile { take, recent })
}

/// The figures: each read's pages and time per call on the Cosmos profile
/// against the Table Storage profile's.
pub async fn figures(sizes: Sizes) -> Result<Vec<Figure>, Failure> {
    let storage = profile(MemoryBackend::new(), sizes).await?;
    let cosmos = profile(MemoryBackend::cosmos(SEED), sizes).await?;
    let n = thousands(sizes.rows);
    let reads = [
        (
            format!("take({TAKE}) of a {n}-row partition"),
            cosmos.take,
            storage.take,
        ),
        (
            format!("recent({TAKE}) of a {n}-event log"),
            cosmos.recent,
            storage.recent,
        ),
    ];
    let mut figures = Vec::new();
    for (read, on_cosmos, on_storage) in reads {
        let pages = |m: Measured| {
            (
                format!(
                    "{} page{} ({} quer{})",
                    m.pages,
                    if m.pages == 1 { "" } else { "s" },
                    m.queries,
                    if m.queries == 1 { "y" } else { "ies" }
                ),
                m.pages as f64,
            )
        };
        let time = |m: Measured| (duration(m.time), m.time.as_secs_f64());
        figures.push(Figure::compared(
            format!("cosmos: {read}, requests per call, Cosmos vs Table Storage"),
            pages(on_cosmos),
            pages(on_storage),
        ));
        figures.push(Figure::compared(
            format!("cosmos: {read}, time per call, Cosmos vs Table Storage"),
            time(on_cosmos),
            time(on_storage),
        ));
    }
    Ok(figures)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The section on a small partition: the answers are checked on both
    /// profiles, Table Storage reads one page, and the Cosmos profile reads
    /// every row (several pages of one query).
    #[test]
    fn the_cosmos_profile_reads_every_row_where_storage_reads_one_page() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let sizes = Sizes { rows: 3_000, rounds: 3 };
        let (storage, cosmos) = runtime.block_on(async {
            (
                profile(MemoryBackend::new(), sizes).await.unwrap(),
                profile(MemoryBackend::cosmos(SEED), sizes).await.unwrap(),
            )
        });
        assert_eq!((storage.take.pages, storage.take.queries), (1, 1), "{storage:?}");
        assert_eq!((storage.recent.pages, storage.recent.queries), (1, 1), "{storage:?}");
        assert!(cosmos.take.pages > 1 && cosmos.recent.pages > 1, "{cosmos:?}");
        let figures = runtime.block_on(figures(sizes)).unwrap();
        assert_eq!(figures.len(), 4);
        assert!(figures.iter().all(|f| f.name.starts_with("cosmos: ")));
    }
}
