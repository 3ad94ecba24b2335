//! Pools of in-memory accounts: what the fence of a pooled handle costs a
//! point write; a merged query's requests per page and its rate against one
//! account's; what a reshard costs in requests and time per million moving
//! rows, and its peak heap at 10,000 and 100,000 moving rows.

use std::sync::Arc;
use std::time::{Duration, Instant};

use unified_tables::backend::counting::{CountingBackend, Counts};
use unified_tables::backend::faulty::{FaultTarget, FaultTiming, FaultyBackend};
use unified_tables::backend::memory::{MemoryBackend, MemoryBlobBackend};
use unified_tables::backend::pool::{account_of, PooledBackend};
use unified_tables::backend::Backend;
use unified_tables::query::{CmpOp, Filter};
use unified_tables::{BlobOptions, QueryOptions, ReshardOptions, Store, Tables, Value};

use crate::alloc;
use crate::common::{fresh_table, process_cpu, thread_cpu, Failure, Reading};
use crate::report::{thousands, Figure, Target};

/// The service's scalability target for one account (entities per second).
const ACCOUNT_LIMIT: f64 = 20_000.0;

/// `n` in-memory accounts, each counted.
fn accounts(n: usize) -> Vec<CountingBackend<Arc<dyn Backend>>> {
    (0..n)
        .map(|_| CountingBackend::new(Arc::new(MemoryBackend::new()) as Arc<dyn Backend>))
        .collect()
}

fn named(handles: &[Tables]) -> Vec<(String, Tables)> {
    handles
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("a{i}"), t.clone()))
        .collect()
}

fn handles(accounts: &[CountingBackend<Arc<dyn Backend>>]) -> Vec<Tables> {
    accounts
        .iter()
        .map(|a| Tables::with_backend(a.clone()).with_blobs(MemoryBlobBackend::new(), BlobOptions::default()))
        .collect()
}

fn sum(counts: impl IntoIterator<Item = Counts>) -> Counts {
    counts.into_iter().fold(Counts::default(), |a, c| Counts {
        gets: a.gets + c.gets,
        writes: a.writes + c.writes,
        transactions: a.transactions + c.transactions,
        queries: a.queries + c.queries,
        ..Counts::default()
    })
}

/// Upserts through a handle with the fence (a pooled handle, re-reading the
/// descriptor every 2 s) against the same writes through one without (the
/// pool's routing alone), in alternating slices: the median of the slices'
/// CPU time per upsert on the writing thread (wall time where the platform
/// has no thread clock), so that other processes on the machine weigh little.
async fn fence() -> Result<Figure, Failure> {
    const SLICE: usize = 1_000;
    const ROUNDS: usize = 41;
    let accounts = accounts(3);
    let handles = handles(&accounts);
    let fenced: Store<Reading> = Tables::pooled(named(&handles))
        .await?
        .without_blobs()
        .store_in(fresh_table("Fenced"));
    let backends: Vec<Arc<dyn Backend>> = accounts
        .iter()
        .map(|a| Arc::new(a.clone()) as Arc<dyn Backend>)
        .collect();
    let plain: Store<Reading> = Tables::with_backend(PooledBackend::new(backends)?)
        .without_blobs()
        .store_in(fresh_table("Plain"));
    fenced.ensure_created().await?;
    plain.ensure_created().await?;
    // The writes never wait (in memory), so the slice runs on this thread from start to end.
    let run = |store: Store<Reading>, round: usize| async move {
        let (cpu, wall) = (thread_cpu(), Instant::now());
        for i in 0..SLICE {
            let mut row = Reading::nth(&format!("p{}", i % 64), "w", round * SLICE + i);
            store.upsert(&mut row).await?;
        }
        let spent = match (cpu, thread_cpu()) {
            (Some(a), Some(b)) => b - a,
            _ => wall.elapsed(),
        };
        Ok::<_, unified_tables::Error>(spent.as_secs_f64() * 1e6 / SLICE as f64)
    };
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        if round % 2 == 0 {
            with.push(run(fenced.clone(), round).await?);
            without.push(run(plain.clone(), round).await?);
        } else {
            without.push(run(plain.clone(), round).await?);
            with.push(run(fenced.clone(), round).await?);
        }
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let m = v[v.len() / 2];
        (format!("{m:.3} us"), m)
    };
    Ok(Figure::compared(
        "pool: upsert with the fence (descriptor re-read every 2 s) vs without, CPU per write",
        median(with),
        median(without),
    )
    .target(Target::AtMost(1.02)))
}

/// A filtered query over 3 accounts, one of which holds no match, read in
/// 10 pages: the requests of the last five pages against the first five;
/// and the rows per second of an unfiltered query of the pool against the
/// same rows in one account.
async fn merged_query() -> Result<Vec<Figure>, Failure> {
    let accounts = accounts(3);
    let db = Tables::pooled(named(&handles(&accounts))).await?.without_blobs();
    let store: Store<Reading> = db.store_in(fresh_table("Merged"));
    let mut matching = 0;
    for p in 0..120 {
        let partition = format!("p{p:04}");
        let mut rows = Reading::many(&partition, "r", 100);
        if account_of(&partition, 3) == 2 {
            rows.iter_mut().for_each(|r| r.value = -1);
        } else {
            matching += rows.len();
        }
        store.create_batch(&rows).await?;
    }
    let wanted = || QueryOptions::all().filter(Filter::cmp("Value", CmpOp::Ge, Value::Int64(0)));
    accounts.iter().for_each(CountingBackend::reset);
    let mut options = wanted().take(matching.div_ceil(10));
    let mut per_page = Vec::new();
    let mut before = 0;
    loop {
        let page = store.page(options.clone()).await?;
        let now: u64 = accounts.iter().map(|a| a.counts().queries).sum();
        per_page.push(now - before);
        before = now;
        match page.cursor {
            Some(next) => options = options.after(next),
            None => break,
        }
    }
    let half = |pages: &[u64]| -> (String, f64) {
        let mean = pages.iter().sum::<u64>() as f64 / pages.len() as f64;
        (format!("{mean:.1} req/page"), mean)
    };
    let (first, last) = per_page.split_at(per_page.len() / 2);
    let mut figures = vec![Figure::compared(
        format!(
            "pool: requests per page of a {}-page query over 3 accounts, one without a match: last half vs first ({per_page:?})",
            per_page.len()
        ),
        half(last),
        half(first),
    )
    .target(Target::AtMost(1.0))];

    // The same 30,000 rows in the pool and in one account.
    let table = fresh_table("Rate");
    let store: Store<Reading> = db.store_in(&table);
    let single: Store<Reading> = Tables::memory().without_blobs().store_in(&table);
    for p in 0..300 {
        let rows = Reading::many(&format!("p{p:04}"), "r", 100);
        store.create_batch(&rows).await?;
        single.create_batch(&rows).await?;
    }
    // The process's CPU time (pages are read ahead on other threads), so
    // that other processes on the machine weigh little.
    let rate = |store: Store<Reading>| async move {
        let (cpu, wall) = (process_cpu(), Instant::now());
        let rows = store.query(QueryOptions::all()).await?.len();
        let spent = match (cpu, process_cpu()) {
            (Some(a), Some(b)) => b - a,
            _ => wall.elapsed(),
        };
        Ok::<_, unified_tables::Error>(rows as f64 / spent.as_secs_f64())
    };
    let (mut pooled, mut alone) = (Vec::new(), Vec::new());
    for round in 0..11 {
        if round % 2 == 0 {
            pooled.push(rate(store.clone()).await?);
            alone.push(rate(single.clone()).await?);
        } else {
            alone.push(rate(single.clone()).await?);
            pooled.push(rate(store.clone()).await?);
        }
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let m = v[v.len() / 2];
        (format!("{:.0} rows/s", m), m)
    };
    figures.push(
        Figure::compared(
            "pool: a query of 30,000 rows over 3 accounts vs the same rows in one account, per CPU second",
            median(pooled),
            median(alone),
        )
        .target(Target::AtLeast(0.9)),
    );
    Ok(figures)
}

/// Three in-memory accounts: counted, with faults on call, and handles on them.
struct Grown {
    counted: Vec<CountingBackend<Arc<dyn Backend>>>,
    faulty: Vec<FaultyBackend<CountingBackend<Arc<dyn Backend>>>>,
    handles: Vec<Tables>,
}

/// A pool of 2 in-memory accounts holding about `moving * 3` rows (10 rows
/// a partition), `moving` of which move when it grows to 3.
async fn grown_pool(moving: usize) -> Result<Grown, Failure> {
    let counted = accounts(3);
    let faulty: Vec<_> = counted.iter().map(|c| FaultyBackend::new(c.clone())).collect();
    let handles: Vec<Tables> = faulty
        .iter()
        .map(|f| Tables::with_backend(f.clone()).with_blobs(MemoryBlobBackend::new(), BlobOptions::default()))
        .collect();
    let db = Tables::pooled(named(&handles[..2])).await?;
    let store: Store<Reading> = db.store_in("Moving");
    let mut moved = 0;
    let mut p = 0;
    while moved < moving {
        let partition = format!("p{p:07}");
        p += 1;
        let rows = Reading::many(&partition, "r", 10);
        if account_of(&partition, 2) != account_of(&partition, 3) {
            moved += rows.len();
        }
        store.create_batch(&rows).await?;
    }
    Ok(Grown {
        counted,
        faulty,
        handles,
    })
}

/// What a reshard of `moving` rows costs: requests by kind and the time, in memory.
async fn reshard_cost(moving: usize) -> Result<Figure, Failure> {
    let grown = grown_pool(moving).await?;
    grown.counted.iter().for_each(CountingBackend::reset);
    let started = Instant::now();
    let options = ReshardOptions::new().fence_wait(Duration::ZERO);
    let report = Tables::reshard_with(named(&grown.handles[..2]), named(&grown.handles), options).await?;
    let elapsed = started.elapsed();
    let counts = sum(grown.counted.iter().map(CountingBackend::counts));
    let per_million = |n: u64| n as f64 * 1e6 / report.rows_copied as f64;
    let requests = counts.gets + counts.writes + counts.transactions + counts.queries;
    let read = 2.0 * (3 * report.rows_copied) as f64; // every old row, read by the copy and by the removal
    let written = 2.0 * report.rows_copied as f64; // each moving row copied, then removed
    let floor = (read + written) / report.rows_copied as f64 * 1e6 / ACCOUNT_LIMIT;
    Ok(Figure::alone(
        format!(
            "pool: reshard 2 -> 3 accounts, {} rows moving: per million moving rows",
            thousands(report.rows_copied)
        ),
        format!(
            "{:.0} requests ({:.0} queries, {:.0} transactions, {:.0} other); {:.1} s in memory; on Azure at least {:.0} s \
             ({:.0} entities read and written per moving row at {} entities/s per account)",
            per_million(requests),
            per_million(counts.queries),
            per_million(counts.transactions),
            per_million(counts.gets + counts.writes),
            elapsed.as_secs_f64() * 1e6 / report.rows_copied as f64,
            floor,
            (read + written) / report.rows_copied as f64,
            thousands(ACCOUNT_LIMIT as usize),
        ),
    ))
}

/// The peak heap a reshard of `moving` rows adds, above the storage of the
/// copies it makes: the copy phase (stopped before the switch by a failed
/// request) measured above the heap it leaves, the switch and removal above
/// the heap they start from.
async fn reshard_peak(moving: usize) -> Result<usize, Failure> {
    let Grown { faulty, handles, .. } = grown_pool(moving).await?;
    let options = || ReshardOptions::new().fence_wait(Duration::ZERO);
    // Account 0's transactions: the freeze, then the switch.
    faulty[0].fail_after(FaultTarget::Transaction, 1, FaultTiming::Before, || {
        unified_tables::Error::service(500, "InternalError", "stopped before the switch")
    });
    alloc::start();
    let stopped = Tables::reshard_with(named(&handles[..2]), named(&handles), options()).await;
    let copy_peak = alloc::stop();
    let left = alloc::current();
    if stopped.is_ok() {
        return Err("the reshard was to stop before its switch".into());
    }
    alloc::start();
    Tables::reshard_with(named(&handles[..2]), named(&handles), options()).await?;
    let remove_peak = alloc::stop();
    Ok(copy_peak.saturating_sub(left).max(remove_peak))
}

/// Every pool figure.
pub async fn figures() -> Result<Vec<Figure>, Failure> {
    let mut figures = vec![fence().await?];
    figures.extend(merged_query().await?);
    figures.push(reshard_cost(100_000).await?);
    Ok(figures)
}

/// The reshard's peak heap at 100,000 moving rows against 10,000 (on a
/// runtime of one thread, so that nothing else allocates meanwhile).
pub async fn memory_figures() -> Result<Vec<Figure>, Failure> {
    reshard_peak(1_000).await?; // not measured: lazily built state
    let small = reshard_peak(10_000).await?;
    let big = reshard_peak(100_000).await?;
    let mb = |b: usize| (format!("{:.2} MB", b as f64 / 1e6), b as f64);
    Ok(vec![Figure::compared(
        "pool: reshard peak heap above its copies, 100,000 moving rows vs 10,000",
        mb(big),
        mb(small),
    )
    .target(Target::AtMost(1.5))])
}
