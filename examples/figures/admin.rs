//! The operator's toolbox (`unified_tables::admin`) against raw requests of
//! the same rows: export against a raw partition query, import against
//! `create_batch`, fsck against a raw full scan, and the peak heap of an
//! export of 10x the rows against that of a tenth.
//!
//! Run on the single-threaded runtime of the memory figures; times are
//! medians of three runs, memory is the peak heap growth during one export.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use unified_tables::admin::{Admin, ExportOptions, FsckOptions, ImportOptions};
use unified_tables::backend::{PageToken, QueryRequest};
use unified_tables::query::Filter;
use unified_tables::{Store, Tables, Value};

use crate::alloc;
use crate::common::{fresh_table, Failure, Reading};
use crate::report::{duration, median, thousands, Figure, Target};

const PARTITION: &str = "admin";
const SEED_CHUNK: usize = 10_000;

async fn seed(store: &Store<Reading>, n: usize) -> Result<(), Failure> {
    for start in (0..n).step_by(SEED_CHUNK) {
        let chunk: Vec<Reading> = (start..n.min(start + SEED_CHUNK))
            .map(|i| Reading::nth(PARTITION, "r", i))
            .collect();
        store.create_batch(&chunk).await?;
    }
    Ok(())
}

/// Reads every row of a query page by page, raw; the rows read.
async fn raw_scan(db: &Tables, table: &str, filter: Option<Filter>) -> Result<usize, Failure> {
    let request = QueryRequest {
        filter,
        select: None,
        top: Some(1000),
    };
    let mut token: Option<PageToken> = None;
    let mut n = 0;
    loop {
        let page = db.backend().query(table, &request, token.as_ref()).await?;
        n += page.rows.len();
        std::hint::black_box(&page.rows);
        match page.next {
            Some(t) => token = Some(t),
            None => return Ok(n),
        }
    }
}

fn scratch() -> PathBuf {
    std::env::temp_dir().join(fresh_table("AdminExport"))
}

async fn export(admin: &Admin) -> Result<(Duration, PathBuf), Failure> {
    let dir = scratch();
    let started = Instant::now();
    admin.export(&dir, ExportOptions::default()).await?;
    Ok((started.elapsed(), dir))
}

fn time(d: Duration) -> (String, f64) {
    (duration(d), d.as_secs_f64())
}

fn kib(bytes: usize) -> (String, f64) {
    (format!("+{} KiB", thousands(bytes.div_ceil(1024))), bytes.max(1) as f64)
}

/// The toolbox's figures on `db`, over `n` rows (and `n / 10` for memory).
pub async fn figures(db: &Tables, n: usize) -> Result<Vec<Figure>, Failure> {
    let table = fresh_table("AdminSource");
    let store: Store<Reading> = db.store_in(&table);
    seed(&store, n).await?;
    let admin = Admin::new(db, &table)?;
    let partition = Some(Filter::eq("PartitionKey", Value::String(PARTITION.into())));

    // Export against a raw query of the same partition.
    let (mut exports, mut queries, mut dirs) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..3 {
        let (took, dir) = export(&admin).await?;
        exports.push(took);
        dirs.push(dir);
        let started = Instant::now();
        let rows = raw_scan(db, &table, partition.clone()).await?;
        queries.push(started.elapsed());
        if rows != n {
            return Err(format!("the raw query read {rows} rows of {n}").into());
        }
    }

    // Import against create_batch of the same rows.
    let (mut imports, mut batches) = (Vec::new(), Vec::new());
    for dir in &dirs {
        let target = Admin::new(db, fresh_table("AdminImport"))?;
        let started = Instant::now();
        target.import(dir, ImportOptions::default()).await?;
        imports.push(started.elapsed());
        db.backend().delete_table(target.table()).await?;
        let raw: Store<Reading> = db.store_in(fresh_table("AdminBatch"));
        raw.ensure_created().await?;
        let rows = Reading::many(PARTITION, "r", n);
        let started = Instant::now();
        raw.create_batch(&rows).await?;
        batches.push(started.elapsed());
        db.backend().delete_table(raw.table()).await?;
    }

    // Fsck against a raw full scan.
    let (mut checks, mut scans) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        let started = Instant::now();
        let report = admin.fsck(FsckOptions::default()).await?;
        checks.push(started.elapsed());
        if !report.is_clean() {
            return Err("fsck found damage in freshly written rows".into());
        }
        let started = Instant::now();
        raw_scan(db, &table, None).await?;
        scans.push(started.elapsed());
    }

    // Peak heap of an export of n rows against one of n / 10.
    let small_table = fresh_table("AdminSmall");
    let small_store: Store<Reading> = db.store_in(&small_table);
    seed(&small_store, n / 10).await?;
    let small = Admin::new(db, &small_table)?;
    export(&small).await?; // not measured: lazily built state
    alloc::start();
    let (_, small_dir) = export(&small).await?;
    let small_peak = alloc::stop();
    alloc::start();
    let (_, big_dir) = export(&admin).await?;
    let big_peak = alloc::stop();

    for dir in dirs.iter().chain([&small_dir, &big_dir]) {
        let _ = std::fs::remove_dir_all(dir);
    }
    for t in [&table, &small_table] {
        db.backend().delete_table(t).await?;
    }
    let rows = thousands(n);
    Ok(vec![
        Figure::compared(
            format!("admin: export {rows} rows vs raw partition query"),
            time(median(exports)),
            time(median(queries)),
        )
        .target(Target::AtMost(1.0 / 0.9)),
        Figure::compared(
            format!("admin: import {rows} rows vs create_batch"),
            time(median(imports)),
            time(median(batches)),
        )
        .target(Target::AtMost(1.0 / 0.9)),
        Figure::compared(
            format!("admin: fsck {rows} rows vs raw full scan"),
            time(median(checks)),
            time(median(scans)),
        )
        .target(Target::AtMost(1.2)),
        Figure::compared(
            format!("admin: export peak heap, {rows} rows vs {}", thousands(n / 10)),
            kib(big_peak),
            kib(small_peak),
        )
        .target(Target::AtMost(1.5)),
    ])
}
