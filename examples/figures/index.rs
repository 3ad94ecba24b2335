//! Secondary indexes against the same work without them:
//!
//! - a `create` of an entity with one local index (one transaction: the
//!   entity and its index row) against a `create` of the same entity without
//!   (one request), one at a time, beside its floor: a raw two-row
//!   transaction against a raw insert (what the backend itself charges for
//!   the second row); and an `upsert` that changes the indexed
//!   value (the stored row is read first: a read and a transaction) against
//!   an `upsert` without the index;
//! - a lookup by the local index (a range query of the index rows, then the
//!   entities they point at, 16 at a time) against a partition query
//!   filtered on the column, in partitions of 100, 1,000 and 10,000 rows
//!   with 10 matches each, beside its floor: the same requests made raw (a
//!   range query and 10 point reads against one filtered query);
//! - `Store::build_index` over rows the table already holds against a raw
//!   scan of the same rows plus raw transactions of their index rows (the
//!   same keys and cells, written into the same table), and the build's peak
//!   heap over 10x the rows against a tenth;
//! - the operator's tools (`index_tools.rs`): `check_indexes`' peak heap
//!   over 10x the entities against a tenth, and `apply_index_intents` over
//!   intents one of which is poisoned.
//!
//! Run on the single-threaded runtime of the memory figures; times are
//! medians of interleaved rounds.

use std::time::{Duration, Instant};

use futures::TryStreamExt;
use unified_tables::query::Filter;
use unified_tables::BuildIndexOptions;
use unified_tables::{QueryOptions, Store, TableEntity, Tables, Value};

use crate::alloc;
use crate::common::{fresh_table, Failure, Reading};
use crate::index_floor::{raw_build, raw_filtered, raw_lookup, raw_writes};
use crate::report::{duration, median, thousands, Figure, Target};

/// The partition the write and build figures use.
pub(crate) const PARTITION: &str = "ix";
/// Rows per seeding call.
const SEED_CHUNK: usize = 10_000;
/// Matches of a lookup, whatever the partition's size.
const MATCHES: usize = 10;
/// Partition sizes of the lookup figures.
const LOOKUP_SIZES: [usize; 3] = [100, 1_000, 10_000];
/// The value the lookups look for.
pub(crate) const WANTED: &str = "wanted";

/// [`Reading`] with a local index on its label: the same columns.
#[derive(TableEntity, Debug, Clone)]
pub struct Tagged {
    /// The partition.
    #[table(partition_key)]
    pub pk: String,
    /// The row.
    #[table(row_key)]
    pub rk: String,
    /// Column `Value`, Edm.Int64.
    pub value: i64,
    /// Column `Label`, indexed in the partition.
    #[index]
    pub label: String,
}

impl From<&Reading> for Tagged {
    fn from(r: &Reading) -> Tagged {
        Tagged {
            pk: r.pk.clone(),
            rk: r.rk.clone(),
            value: r.value,
            label: r.label.clone(),
        }
    }
}

/// How many operations and rows each figure takes: in memory, and on Azure.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    /// Writes per measurement of the write figures.
    pub writes: usize,
    /// Lookups (and filtered queries) per measurement.
    pub lookups: usize,
    /// Rows the index is built over, and entities `check_indexes` checks.
    pub build_rows: usize,
    /// Intents `apply_index_intents` applies.
    pub intents: usize,
    /// Interleaved rounds.
    pub rounds: usize,
}

fn time(d: Duration) -> (String, f64) {
    (duration(d), d.as_secs_f64())
}

fn per_op(d: Duration, n: usize) -> (String, f64) {
    let each = d / n as u32;
    (format!("{} /op", duration(each)), each.as_secs_f64())
}

fn kib(bytes: usize) -> (String, f64) {
    (format!("+{} KiB", thousands(bytes.div_ceil(1024))), bytes.max(1) as f64)
}

/// A loop of `create`, then of `upsert` changing the label, one at a time:
/// the two times.
async fn writes<T: TableEntity + Clone>(
    db: &Tables,
    rows: &[T],
    changed: &[T],
) -> Result<(Duration, Duration), Failure> {
    let store: Store<T> = db.store_in(fresh_table("IndexWrite"));
    store.ensure_created().await?;
    let mut entities = rows.to_vec();
    let started = Instant::now();
    for e in &mut entities {
        store.create(e).await?;
    }
    let created = started.elapsed();
    let mut entities = changed.to_vec();
    let started = Instant::now();
    for e in &mut entities {
        store.upsert(e).await?;
    }
    let upserted = started.elapsed();
    db.backend().delete_table(store.table()).await?;
    Ok((created, upserted))
}

async fn write_figures(db: &Tables, sizes: Sizes) -> Result<Vec<Figure>, Failure> {
    let plain = Reading::many(PARTITION, "w", sizes.writes);
    let moved: Vec<Reading> = plain
        .iter()
        .map(|r| Reading {
            label: format!("moved {}", r.value % 13),
            ..r.clone()
        })
        .collect();
    let tagged: Vec<Tagged> = plain.iter().map(Tagged::from).collect();
    let tagged_moved: Vec<Tagged> = moved.iter().map(Tagged::from).collect();
    writes(db, &plain[..sizes.writes.min(50)], &moved[..sizes.writes.min(50)]).await?; // warm-up
    let (mut with, mut without) = ((Vec::new(), Vec::new()), (Vec::new(), Vec::new()));
    let (mut pairs, mut singles) = (Vec::new(), Vec::new());
    for round in 0..sizes.rounds {
        let (pair, single) = raw_writes(db, sizes.writes).await?;
        pairs.push(pair);
        singles.push(single);
        let mut runs = [false, true];
        if round % 2 == 1 {
            runs.reverse();
        }
        for indexed in runs {
            let (created, upserted) = match indexed {
                true => writes(db, &tagged, &tagged_moved).await?,
                false => writes(db, &plain, &moved).await?,
            };
            let into = if indexed { &mut with } else { &mut without };
            into.0.push(created);
            into.1.push(upserted);
        }
    }
    let n = sizes.writes;
    let (pair, single) = (median(pairs), median(singles));
    Ok(vec![
        // The backend's own ratio is the best this one can be.
        Figure::compared(
            "index: create with one local index vs without (1 transaction vs 1 request)",
            per_op(median(with.0), n),
            per_op(median(without.0), n),
        )
        .target(Target::AtMost(1.15))
        .ceiling(pair.as_secs_f64() / single.as_secs_f64()),
        Figure::compared(
            "index: floor: raw 2-row transaction vs raw insert (the backend's own ratio)",
            per_op(pair, n),
            per_op(single, n),
        ),
        Figure::compared(
            "index: upsert changing the indexed value vs without (a read + 1 transaction vs 1 request)",
            per_op(median(with.1), n),
            per_op(median(without.1), n),
        ),
    ])
}

/// A partition of `size` rows, `MATCHES` of them holding [`WANTED`].
fn lookup_rows(partition: &str, size: usize) -> Vec<Tagged> {
    let every = size / MATCHES;
    (0..size)
        .map(|i| Tagged {
            pk: partition.to_owned(),
            rk: format!("r{i:07}"),
            value: i as i64,
            label: match i % every {
                0 => WANTED.to_owned(),
                _ => format!("other {i}"),
            },
        })
        .collect()
}

/// Which of the four lookups a measurement makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Way {
    Lookup,
    Query,
    RawLookup,
    RawQuery,
}

async fn lookup_figures(db: &Tables, sizes: Sizes) -> Result<Vec<Figure>, Failure> {
    let store: Store<Tagged> = db.store_in(fresh_table("IndexLookup"));
    store.ensure_created().await?;
    for size in LOOKUP_SIZES {
        let rows = lookup_rows(&format!("p{size}"), size);
        for chunk in rows.chunks(SEED_CHUNK) {
            store.create_batch(chunk).await?;
        }
    }
    let mut figures = Vec::new();
    for size in LOOKUP_SIZES {
        let partition = format!("p{size}");
        let filtered =
            || QueryOptions::partition(partition.clone()).filter(Filter::eq("Label", Value::String(WANTED.into())));
        // Both answer the same entities (warm-up, not measured).
        let by_index = Tagged::find_by_label(&store, &partition, WANTED).await?;
        let by_query = store.query(filtered()).await?;
        if by_index.len() != MATCHES || by_query.len() != MATCHES {
            return Err(format!(
                "{size} rows: the lookup found {}, the query {}, of {MATCHES}",
                by_index.len(),
                by_query.len()
            )
            .into());
        }
        let table = store.table();
        if raw_lookup(db, table, &partition).await?.len() != MATCHES
            || raw_filtered(db, table, &partition).await?.len() != MATCHES
        {
            return Err(format!("{size} rows: the raw requests did not find the {MATCHES} entities").into());
        }
        let mut times: [Vec<Duration>; 4] = Default::default();
        let ways = [Way::Lookup, Way::Query, Way::RawLookup, Way::RawQuery];
        for round in 0..sizes.rounds {
            // A different one first each round.
            for i in 0..ways.len() {
                let way = ways[(i + round) % ways.len()];
                let started = Instant::now();
                for _ in 0..sizes.lookups {
                    let found = match way {
                        Way::Lookup => Tagged::find_by_label(&store, &partition, WANTED).await?.len(),
                        Way::Query => store.query(filtered()).await?.len(),
                        Way::RawLookup => raw_lookup(db, table, &partition).await?.len(),
                        Way::RawQuery => raw_filtered(db, table, &partition).await?.len(),
                    };
                    std::hint::black_box(found);
                }
                times[way as usize].push(started.elapsed());
            }
        }
        let [lookups, queries, raw_lookups, raw_queries] = times;
        let (raw_lookup, raw_query) = (median(raw_lookups), median(raw_queries));
        let figure = Figure::compared(
            format!(
                "index: lookup by local index vs filtered partition query, {} rows, {MATCHES} matches",
                thousands(size)
            ),
            per_op(median(lookups), sizes.lookups),
            per_op(median(queries), sizes.lookups),
        );
        // Faster from 1,000 rows in the partition on, unless the backend's
        // own requests are not (its floor is the best this one can be).
        figures.push(match size >= 1_000 {
            true => figure
                .target(Target::AtMost(1.0))
                .ceiling(raw_lookup.as_secs_f64() / raw_query.as_secs_f64()),
            false => figure,
        });
        figures.push(Figure::compared(
            format!(
                "index: floor: raw range query + {MATCHES} raw point reads vs raw filtered query, {} rows",
                thousands(size)
            ),
            per_op(raw_lookup, sizes.lookups),
            per_op(raw_query, sizes.lookups),
        ));
    }
    db.backend().delete_table(store.table()).await?;
    Ok(figures)
}

pub(crate) async fn seed(db: &Tables, table: &str, n: usize) -> Result<(), Failure> {
    let store: Store<Reading> = db.store_in(table);
    for start in (0..n).step_by(SEED_CHUNK) {
        let chunk: Vec<Reading> = (start..n.min(start + SEED_CHUNK))
            .map(|i| Reading::nth(PARTITION, "r", i))
            .collect();
        store.create_batch(&chunk).await?;
    }
    Ok(())
}

/// `Store::build_index` of the label index over `table`: the time and the
/// index rows written.
pub(crate) async fn build(db: &Tables, table: &str) -> Result<(Duration, u64), Failure> {
    let store: Store<Tagged> = db.store_in(table);
    let started = Instant::now();
    let steps: Vec<_> = store
        .build_index(Tagged::BY_LABEL, BuildIndexOptions::default())
        .try_collect()
        .await?;
    let rows = steps.last().map_or(0, |s| s.rows);
    Ok((started.elapsed(), rows))
}

/// Ends a heap measurement: the peak growth above what stays allocated (in
/// memory the backend holds the index rows written: those are the table's,
/// not the build's).
fn working_heap() -> usize {
    let peak = alloc::stop();
    peak.saturating_sub(alloc::retained())
}

async fn build_figures(db: &Tables, sizes: Sizes) -> Result<Vec<Figure>, Failure> {
    let n = sizes.build_rows;
    let table = fresh_table("IndexBuild");
    seed(db, &table, n).await?;
    let plain: Store<Reading> = db.store_in(&table);
    let (mut builds, mut raws) = (Vec::new(), Vec::new());
    let mut big_peak = 0;
    for round in 0..sizes.rounds {
        // Each starts from a table without index rows, and writes them into it.
        let raw_first = round % 2 == 1;
        if raw_first {
            raws.push(raw_build(db, &table).await?);
            plain.drop_index("label").await?;
        }
        alloc::start();
        let built = build(db, &table).await?;
        let peak = working_heap();
        if round == 0 {
            big_peak = peak;
        }
        if !raw_first {
            plain.drop_index("label").await?;
            raws.push(raw_build(db, &table).await?);
        }
        if built.1 != n as u64 || raws.last().map(|r| r.1) != Some(n as u64) {
            return Err(format!(
                "{n} rows: the build wrote {} index rows, the raw transactions {:?}",
                built.1,
                raws.last().map(|r| r.1)
            )
            .into());
        }
        builds.push(built);
        // The next round builds the index from nothing again.
        plain.drop_index("label").await?;
    }
    let small_table = fresh_table("IndexBuildSmall");
    seed(db, &small_table, n / 10).await?;
    build(db, &small_table).await?; // not measured: lazily built state
    db.store_in::<Reading>(&small_table).drop_index("label").await?;
    alloc::start();
    build(db, &small_table).await?;
    let small_peak = working_heap();
    for t in [&table, &small_table] {
        db.backend().delete_table(t).await?;
    }
    let rows = thousands(n);
    Ok(vec![
        Figure::compared(
            format!("index: build_index over {rows} rows vs raw scan + raw transactions"),
            time(median(builds.iter().map(|b| b.0).collect())),
            time(median(raws.iter().map(|r| r.0).collect())),
        )
        .target(Target::AtMost(1.0 / 0.8)),
        Figure::compared(
            format!(
                "index: build_index working heap (peak above the rows stored), {rows} rows vs {}",
                thousands(n / 10)
            ),
            kib(big_peak),
            kib(small_peak),
        )
        .target(Target::AtMost(1.5)),
    ])
}

/// The index figures on `db`.
pub async fn figures(db: &Tables, sizes: Sizes) -> Result<Vec<Figure>, Failure> {
    let mut figures = write_figures(db, sizes).await?;
    figures.extend(lookup_figures(db, sizes).await?);
    figures.extend(build_figures(db, sizes).await?);
    figures.extend(crate::index_tools::figures(db, sizes.build_rows, sizes.intents).await?);
    Ok(figures)
}
