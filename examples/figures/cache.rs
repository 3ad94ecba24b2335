//! The read cache: `Store::get` of a cached entity against the same read
//! from the table (an uncached store over the same backend), one at a time
//! and 16 in flight, and the allocations of a cache hit against those of
//! the clone it returns.

use std::time::{Duration, Instant};

use futures::stream::{self, StreamExt as _};
use unified_tables::{ReadCache, Store, Tables};

use crate::common::{fresh_table, Failure, Reading};
use crate::report::{duration, median, Figure, Target};

const PARTITION: &str = "cache";
/// Interleaved rounds.
const ROUNDS: usize = 3;

/// `n` gets of the seeded rows, `in_flight` at a time.
async fn gets(store: &Store<Reading>, n: usize, rows: usize, in_flight: usize) -> Result<Duration, Failure> {
    let keys: Vec<String> = (0..n).map(|i| format!("s{:07}", i % rows)).collect();
    let started = Instant::now();
    let mut results = stream::iter(keys.iter())
        .map(|rk| store.get((PARTITION, rk.as_str())))
        .buffer_unordered(in_flight);
    while let Some(got) = results.next().await {
        got?.ok_or("a seeded row is missing")?;
    }
    Ok(started.elapsed())
}

/// The cache figures on `db` (whose cache is replaced by a fresh default one):
/// `n` gets per measurement over `rows` rows.
pub async fn figures(db: &Tables, n: usize, rows: usize) -> Result<Vec<Figure>, Failure> {
    let table = fresh_table("Cache");
    let cached: Store<Reading> = db.clone().with_cache(ReadCache::default()).store_in(&table);
    let uncached: Store<Reading> = db.clone().without_cache().store_in(&table);
    uncached.create_batch(&Reading::many(PARTITION, "s", rows)).await?;
    // Fill the cache, and warm both paths.
    gets(&cached, rows, rows, 16).await?;
    gets(&uncached, rows.min(200), rows, 16).await?;

    let mut times = [(Vec::new(), Vec::new()), (Vec::new(), Vec::new())];
    for round in 0..ROUNDS {
        for (slot, in_flight) in [1, 16].into_iter().enumerate() {
            let (hits, misses) = &mut times[slot];
            if round % 2 == 0 {
                hits.push(gets(&cached, n, rows, in_flight).await?);
                misses.push(gets(&uncached, n, rows, in_flight).await?);
            } else {
                misses.push(gets(&uncached, n, rows, in_flight).await?);
                hits.push(gets(&cached, n, rows, in_flight).await?);
            }
        }
    }

    // Allocations of one hit, against those of cloning the entity it returns.
    let key = format!("s{:07}", 0);
    let sample = uncached.get((PARTITION, key.as_str())).await?.ok_or("seeded")?;
    let probes = 1_000;
    crate::alloc::start();
    for _ in 0..probes {
        std::hint::black_box(cached.get((PARTITION, key.as_str())).await?);
    }
    crate::alloc::stop();
    let hit_allocs = crate::alloc::allocations() as f64 / probes as f64;
    crate::alloc::start();
    for _ in 0..probes {
        std::hint::black_box(sample.clone());
    }
    crate::alloc::stop();
    let clone_allocs = crate::alloc::allocations() as f64 / probes as f64;
    db.backend().delete_table(&table).await?;

    let per_op = |rounds: &Vec<Duration>| {
        let each = median(rounds.clone()) / n as u32;
        (format!("{}/op", duration(each)), each.as_secs_f64())
    };
    let per_sec = |rounds: &Vec<Duration>| {
        let rate = n as f64 / median(rounds.clone()).as_secs_f64();
        (format!("{:.0} k/s", rate / 1e3), rate)
    };
    let (hits1, misses1) = &times[0];
    let (hits16, misses16) = &times[1];
    Ok(vec![
        Figure::compared(
            "cached get (hit) vs uncached get, 1 in flight",
            per_op(hits1),
            per_op(misses1),
        ),
        Figure::compared(
            "cached get (hit), 1 in flight vs 2 us",
            per_op(hits1),
            ("2.0 us/op".into(), 2e-6),
        )
        .target(Target::AtMost(1.0)),
        Figure::compared(
            "cached get throughput vs uncached, 16 in flight",
            per_sec(hits16),
            per_sec(misses16),
        ),
        Figure::compared(
            "allocations of a cached get vs of the clone it returns",
            (format!("{hit_allocs:.1}"), hit_allocs),
            (format!("{clone_allocs:.1}"), clone_allocs),
        ),
    ])
}
