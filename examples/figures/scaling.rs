//! Throttling and pools of accounts: one partition offered four times its
//! rate through the throttling decorator (what the store's backoff achieves,
//! and what surfaces when its budget runs out), and the throughput of a pool
//! of 2, 4, 8 and 16 throttled accounts against one; with `FIGURES_POOL`
//! (connection strings separated by `|`), the same writes on one Azure
//! account against all of them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use unified_tables::backend::memory::MemoryBackend;
use unified_tables::backend::pool::PooledBackend;
use unified_tables::backend::throttle::{ThrottleLimits, ThrottledBackend};
use unified_tables::{ErrorKind, RetryPolicy, Store, Tables};

use crate::common::{fresh_table, Failure, Reading};
use crate::report::{Figure, Target};

/// The partition rate of the overload figure (entities per second).
const PARTITION_RATE: f64 = 400.0;
/// The account rate of the pool figures.
const ACCOUNT_RATE: f64 = 1_000.0;
/// How long each measurement offers its load.
const WINDOW: Duration = Duration::from_secs(4);
/// The first part of the window, left out of the rate (the buckets start full).
const WARM_UP: Duration = Duration::from_secs(1);

fn throttled(limits: ThrottleLimits) -> Tables {
    Tables::with_backend(ThrottledBackend::new(MemoryBackend::new(), limits)).without_blobs()
}

/// A policy that outlasts the figure's backlog.
fn patient() -> Result<RetryPolicy, Failure> {
    Ok(RetryPolicy::builder()
        .attempts(100)
        .backoff(Duration::from_millis(20), Duration::from_millis(400))
        .retry_budget(Duration::from_secs(60))
        .build()?)
}

#[derive(Default)]
struct Tally {
    ok_in_window: AtomicU64,
    throttled: AtomicU64,
    other: AtomicU64,
}

/// Offers `rate` upserts a second to `partition_of(i)` for [`WINDOW`]
/// (open loop: each write starts on time, whatever the others do), and
/// waits for every write to end.
async fn offer(store: &Store<Reading>, rate: f64, partition_of: impl Fn(usize) -> String) -> Arc<Tally> {
    let tally = Arc::new(Tally::default());
    let started = Instant::now();
    let mut tasks = Vec::new();
    let mut i = 0usize;
    while started.elapsed() < WINDOW {
        let due = started + Duration::from_secs_f64(i as f64 / rate);
        tokio::time::sleep_until(due.into()).await;
        let (store, tally) = (store.clone(), tally.clone());
        let mut row = Reading::nth(&partition_of(i), "w", i);
        tasks.push(tokio::spawn(async move {
            match store.upsert(&mut row).await {
                Ok(_) => {
                    let at = started.elapsed();
                    if at >= WARM_UP && at <= WINDOW {
                        tally.ok_in_window.fetch_add(1, Ordering::Relaxed);
                    }
                }
                Err(e) if e.kind() == ErrorKind::Throttled => {
                    tally.throttled.fetch_add(1, Ordering::Relaxed);
                }
                Err(_) => {
                    tally.other.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
        i += 1;
    }
    for task in tasks {
        let _ = task.await;
    }
    tally
}

fn rate_of(tally: &Tally) -> f64 {
    tally.ok_in_window.load(Ordering::Relaxed) as f64 / (WINDOW - WARM_UP).as_secs_f64()
}

fn per_second(v: f64) -> (String, f64) {
    (format!("{v:.0}/s"), v)
}

/// The overload figures: one partition at 4x its rate.
async fn overload() -> Result<Vec<Figure>, Failure> {
    let limits = ThrottleLimits {
        partition_per_second: PARTITION_RATE,
        account_per_second: 20_000.0,
        burst: Duration::from_millis(100),
        timeout_every: 0,
    };
    let table = fresh_table("Throttle");
    let patient_store: Store<Reading> = throttled(limits).with_retry(patient()?).store_in(&table);
    let tally = offer(&patient_store, 4.0 * PARTITION_RATE, |_| "hot".into()).await;
    let surfaced = tally.throttled.load(Ordering::Relaxed) + tally.other.load(Ordering::Relaxed);
    let mut figures = vec![Figure::compared(
        format!("one partition offered 4x its rate: writes done vs its rate ({surfaced} errors surfaced)"),
        per_second(rate_of(&tally)),
        per_second(PARTITION_RATE),
    )
    .target(Target::AtLeast(0.9))];
    // The default policy gives up after its budget: what surfaces is Throttled.
    let table = fresh_table("Throttle");
    let default_store: Store<Reading> = throttled(limits).store_in(&table);
    let tally = offer(&default_store, 4.0 * PARTITION_RATE, |_| "hot".into()).await;
    figures.push(Figure::alone(
        "the same with the default RetryPolicy: errors surfaced once its budget ran out",
        format!(
            "{} Throttled, {} other",
            tally.throttled.load(Ordering::Relaxed),
            tally.other.load(Ordering::Relaxed)
        ),
    ));
    Ok(figures)
}

/// Writes over 256 partitions at 4x a pool's capacity, on a pool of
/// `accounts` throttled accounts of `account_rate` entities a second each:
/// the rate done.
async fn pool_rate(accounts: usize, account_rate: f64) -> Result<f64, Failure> {
    let limits = ThrottleLimits {
        partition_per_second: 2_000.0,
        account_per_second: account_rate,
        burst: Duration::from_millis(100),
        timeout_every: 0,
    };
    let handles: Vec<(String, Tables)> = (0..accounts).map(|i| (format!("a{i}"), throttled(limits))).collect();
    let db = Tables::pooled(handles).await?.with_retry(patient()?);
    let store: Store<Reading> = db.store_in(fresh_table("Pool"));
    let offered = 4.0 * account_rate * accounts as f64;
    let tally = offer(&store, offered, |i| format!("p{:03}", i % 256)).await;
    Ok(rate_of(&tally))
}

/// Upserts over 64 partitions, 32 in flight, for [`WINDOW`]: the rate done.
async fn unthrottled_rate(db: &Tables) -> Result<f64, Failure> {
    use futures::stream::{self, StreamExt as _};
    let store: Store<Reading> = db.store_in(fresh_table("PoolAzure"));
    let started = Instant::now();
    let done = AtomicU64::new(0);
    stream::iter(0..usize::MAX)
        .take_while(|_| std::future::ready(started.elapsed() < WINDOW))
        .for_each_concurrent(32, |i| {
            let (store, done) = (&store, &done);
            async move {
                let mut row = Reading::nth(&format!("p{:02}", i % 64), "w", i);
                if store.upsert(&mut row).await.is_ok() {
                    done.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
        .await;
    Ok(done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64())
}

/// Every scaling figure.
pub async fn figures() -> Result<(Vec<Figure>, Vec<String>), Failure> {
    let mut figures = overload().await?;
    // The larger pools at a quarter of the rate, so that 16 accounts offered
    // 4x their capacity stay within what two cores can offer.
    for (rate, pools) in [
        (ACCOUNT_RATE, [(2, 1.8), (4, 3.5)]),
        (ACCOUNT_RATE / 4.0, [(8, 7.0), (16, 14.0)]),
    ] {
        let one = pool_rate(1, rate).await?;
        for (accounts, target) in pools {
            figures.push(
                Figure::compared(
                    format!(
                        "pool of {accounts} throttled accounts vs 1 ({rate:.0} entities/s each; writes over 256 partitions, 4x offered)"
                    ),
                    per_second(pool_rate(accounts, rate).await?),
                    per_second(one),
                )
                .target(Target::AtLeast(target)),
            );
        }
    }

    let mut notes = Vec::new();
    if let Ok(pool) = std::env::var("FIGURES_POOL") {
        let connections: Vec<&str> = pool.split('|').filter(|c| !c.trim().is_empty()).collect();
        let accounts: Vec<Tables> = connections
            .iter()
            .map(|c| Tables::connect(c))
            .collect::<Result<_, unified_tables::Error>>()?;
        let single = unthrottled_rate(&accounts[0]).await?;
        let n = accounts.len();
        // Routed as a pool, without recording a descriptor in the accounts.
        let pooled = PooledBackend::new(accounts.iter().map(|t| t.backend().clone()).collect())?;
        let db = Tables::with_backend(pooled).without_blobs();
        figures.push(Figure::compared(
            format!("Azure pool of {n} accounts vs 1 (upserts over 64 partitions, 32 in flight)"),
            per_second(unthrottled_rate(&db).await?),
            per_second(single),
        ));
        notes.push(format!(
            "the Azure pool figure is bound by this machine's {} cores, shared by every emulator process and the client",
            std::thread::available_parallelism().map_or(1, |n| n.get())
        ));
    }
    Ok((figures, notes))
}
