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
//!   with 10 matches each;
//! - `Store::build_index` over rows the table already holds against a raw
//!   scan of the same rows plus raw transactions of their index rows (the
//!   same keys and cells), and the build's peak heap over 10x the rows
//!   against a tenth.
//!
//! Run on the single-threaded runtime of the memory figures; times are
//! medians of interleaved rounds.

use std::time::{Duration, Instant};

use futures::TryStreamExt;
use unified_tables::backend::{PageToken, QueryRequest, UpdateMode, WriteOp};
use unified_tables::layout::{
    index_key_prefix, INDEX_OF, INDEX_ON, INDEX_PREFIX, INDEX_PREFIX_END, INDEX_ROW, INDEX_VALUE_END,
};
use unified_tables::query::{CmpOp, Filter};
use unified_tables::BuildIndexOptions;
use unified_tables::{QueryOptions, Row, Store, TableEntity, Tables, Value};

use crate::alloc;
use crate::common::{fresh_table, Failure, Reading};
use crate::report::{duration, median, thousands, Figure, Target};

/// The partition the write and build figures use.
const PARTITION: &str = "ix";
/// Rows per seeding call.
const SEED_CHUNK: usize = 10_000;
/// Matches of a lookup, whatever the partition's size.
const MATCHES: usize = 10;
/// Partition sizes of the lookup figures.
const LOOKUP_SIZES: [usize; 3] = [100, 1_000, 10_000];
/// The value the lookups look for.
const WANTED: &str = "wanted";

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
    /// Rows the index is built over.
    pub build_rows: usize,
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

/// The floor under the indexed create: `n` raw two-row transactions (an
/// entity's row and a row shaped like its index row) against `n` raw
/// inserts of the entity's row alone, through the backend without the store.
async fn raw_writes(db: &Tables, n: usize) -> Result<(Duration, Duration), Failure> {
    let table = fresh_table("IndexFloor");
    db.backend().create_table(&table).await?;
    let row = |rk: String, label: &str| {
        let mut row = Row::new(PARTITION, rk);
        row.insert("Value", Value::Int64(7));
        row.insert("Label", Value::String(label.to_owned()));
        row
    };
    let started = Instant::now();
    for i in 0..n {
        db.backend()
            .execute(&table, WriteOp::Insert(row(format!("a{i:07}"), "x")))
            .await?;
    }
    let single = started.elapsed();
    let started = Instant::now();
    for i in 0..n {
        let ops = vec![
            WriteOp::Insert(row(format!("b{i:07}"), "x")),
            WriteOp::Insert(row(format!("{INDEX_PREFIX}x-b{i:07}"), "x")),
        ];
        db.backend().transaction(&table, ops).await?;
    }
    let pair = started.elapsed();
    db.backend().delete_table(&table).await?;
    Ok((pair, single))
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
    Ok(vec![
        Figure::compared(
            "index: create with one local index vs without (1 transaction vs 1 request)",
            per_op(median(with.0), n),
            per_op(median(without.0), n),
        )
        .target(Target::AtMost(1.15)),
        Figure::compared(
            "index: floor: raw 2-row transaction vs raw insert (the backend's own ratio)",
            per_op(median(pairs), n),
            per_op(median(singles), n),
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
        let (mut lookups, mut queries) = (Vec::new(), Vec::new());
        for round in 0..sizes.rounds {
            for lookup_first in [round % 2 == 0, round % 2 == 1] {
                let started = Instant::now();
                for _ in 0..sizes.lookups {
                    let found = match lookup_first {
                        true => Tagged::find_by_label(&store, &partition, WANTED).await?,
                        false => store.query(filtered()).await?,
                    };
                    std::hint::black_box(found);
                }
                match lookup_first {
                    true => lookups.push(started.elapsed()),
                    false => queries.push(started.elapsed()),
                }
            }
        }
        let figure = Figure::compared(
            format!(
                "index: lookup by local index vs filtered partition query, {} rows, {MATCHES} matches",
                thousands(size)
            ),
            per_op(median(lookups), sizes.lookups),
            per_op(median(queries), sizes.lookups),
        );
        // Faster from 1,000 rows in the partition on.
        figures.push(match size >= 1_000 {
            true => figure.target(Target::AtMost(1.0)),
            false => figure,
        });
    }
    db.backend().delete_table(store.table()).await?;
    Ok(figures)
}

async fn seed(db: &Tables, table: &str, n: usize) -> Result<(), Failure> {
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
async fn build(db: &Tables, table: &str) -> Result<(Duration, u64), Failure> {
    let store: Store<Tagged> = db.store_in(table);
    let started = Instant::now();
    let steps: Vec<_> = store
        .build_index(Tagged::BY_LABEL, BuildIndexOptions::default())
        .try_collect()
        .await?;
    let rows = steps.last().map_or(0, |s| s.rows);
    Ok((started.elapsed(), rows))
}

/// The index row of `entity` as the build writes it, built by hand.
fn raw_index_row(entity: &Row) -> Option<Row> {
    let label = entity.get("Label")?.as_str()?.to_owned();
    let key = format!(
        "{}{label}{INDEX_VALUE_END}{}",
        index_key_prefix("label"),
        entity.row_key
    );
    let mut row = Row::new(entity.partition_key.clone(), key);
    row.insert(INDEX_OF, Value::String("label".into()));
    row.insert(INDEX_ON, Value::String("Label".into()));
    row.insert(INDEX_ROW, Value::String(entity.row_key.clone()));
    row.insert("Label", Value::String(label));
    Some(row)
}

/// A raw scan of `source`, page by page, each page's index rows upserted
/// into `target` in raw transactions of 100: the time and the rows written.
async fn raw_build(db: &Tables, source: &str, target: &str) -> Result<(Duration, u64), Failure> {
    // Entities only, as a plain reader asks (the build's own rows may be there).
    let text = |s: &str| Value::String(s.to_owned());
    let entities = Filter::cmp("RowKey", CmpOp::Lt, text(INDEX_PREFIX)).or(Filter::cmp(
        "RowKey",
        CmpOp::Ge,
        text(INDEX_PREFIX_END),
    ));
    let request = QueryRequest {
        filter: Some(entities),
        select: None,
        top: Some(1000),
    };
    let started = Instant::now();
    let mut token: Option<PageToken> = None;
    let mut written = 0;
    loop {
        let page = db.backend().query(source, &request, token.as_ref()).await?;
        let rows: Vec<Row> = page.rows.iter().filter_map(raw_index_row).collect();
        for chunk in rows.chunks(100) {
            let ops = chunk
                .iter()
                .map(|row| WriteOp::Upsert {
                    row: row.clone(),
                    mode: UpdateMode::Replace,
                })
                .collect();
            db.backend().transaction(target, ops).await?;
            written += chunk.len() as u64;
        }
        match page.next {
            Some(t) => token = Some(t),
            None => return Ok((started.elapsed(), written)),
        }
    }
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
        let target = fresh_table("IndexRaw");
        db.backend().create_table(&target).await?;
        let raw_first = round % 2 == 1;
        if raw_first {
            raws.push(raw_build(db, &table, &target).await?);
        }
        alloc::start();
        let built = build(db, &table).await?;
        let peak = working_heap();
        if round == 0 {
            big_peak = peak;
        }
        if !raw_first {
            raws.push(raw_build(db, &table, &target).await?);
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
        db.backend().delete_table(&target).await?;
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
    Ok(figures)
}
