//! The index tools an operator runs:
//!
//! - `Store::check_indexes` over a clean index: its peak heap over 10x the
//!   entities against a tenth (it keeps at most 16,384 index row keys at
//!   once, in as many passes as that takes);
//! - `Store::apply_index_intents` over intents that crashed writers left,
//!   one of them poisoned (its entity's value is too long for the index):
//!   the job applies the others and names that one, by its keys and index.

use std::time::Instant;

use unified_tables::backend::WriteOp;
use unified_tables::index::rows::intent_row;
use unified_tables::{IndexCheckOptions, Store, TableEntity, Tables};

use crate::alloc;
use crate::common::{fresh_table, Failure};
use crate::index::{build, seed, Tagged};
use crate::report::{duration, thousands, Figure, Target};

/// Partitions the intents of the applier's figure spread over.
const INTENT_PARTITIONS: usize = 100;

/// An address book entry with a global index on its address.
#[derive(TableEntity, Debug, Clone)]
pub struct Contact {
    /// The book.
    #[table(partition_key)]
    pub book: String,
    /// The entry.
    #[table(row_key)]
    pub id: String,
    /// Column `Address`, indexed across partitions.
    #[index(global)]
    pub address: String,
}

fn kib(bytes: usize) -> (String, f64) {
    (format!("+{} KiB", thousands(bytes.div_ceil(1024))), bytes.max(1) as f64)
}

/// `check_indexes` of a table of `n` entities with their label index: its
/// peak heap above what stays allocated.
async fn check_peak(db: &Tables, n: usize) -> Result<usize, Failure> {
    let table = fresh_table("IndexCheck");
    seed(db, &table, n).await?;
    build(db, &table).await?;
    let store: Store<Tagged> = db.store_in(&table);
    store.check_indexes(IndexCheckOptions::default()).await?; // not measured: lazily built state
    alloc::start();
    let report = store.check_indexes(IndexCheckOptions::default()).await?;
    let peak = alloc::stop().saturating_sub(alloc::retained());
    db.backend().delete_table(&table).await?;
    if !report.is_clean() || report.entities != n as u64 || report.index_rows != n as u64 {
        return Err(format!(
            "check_indexes over {n} entities: {} entities, {} index rows, {} findings",
            report.entities,
            report.index_rows,
            report.findings.len()
        )
        .into());
    }
    Ok(peak)
}

async fn check_figures(db: &Tables, n: usize) -> Result<Vec<Figure>, Failure> {
    let big = check_peak(db, n).await?;
    let small = check_peak(db, n / 10).await?;
    Ok(vec![Figure::compared(
        format!(
            "index: check_indexes peak heap (above the rows stored), {} entities vs {}",
            thousands(n),
            thousands(n / 10)
        ),
        kib(big),
        kib(small),
    )
    .target(Target::AtMost(1.5))])
}

/// `n` entities of [`Contact`] with their intents and no index rows, as
/// writers that crashed after their transactions leave them; entity
/// `poisoned` holds a value too long for the index's key.
async fn crashed_writes(db: &Tables, table: &str, n: usize, poisoned: usize) -> Result<(), Failure> {
    db.backend().create_table(table).await?;
    let per = n.div_ceil(INTENT_PARTITIONS);
    for p in 0..INTENT_PARTITIONS {
        let ids: Vec<usize> = (p * per..n.min((p + 1) * per)).collect();
        for chunk in ids.chunks(50) {
            let mut ops = Vec::new();
            for &i in chunk {
                let address = match i == poisoned {
                    true => format!("{}@example.com", "x".repeat(1_100)),
                    false => format!("a{}@example.com", i % 1_000),
                };
                let (book, id) = (format!("book{p:03}"), format!("c{i:06}"));
                let contact = Contact {
                    book: book.clone(),
                    id: id.clone(),
                    address,
                };
                ops.push(WriteOp::Insert(contact.to_row(&Default::default())?));
                ops.push(WriteOp::Insert(intent_row(&book, &id, "crashed", &[])?));
            }
            db.backend().transaction(table, ops).await?;
        }
    }
    Ok(())
}

async fn apply_figures(db: &Tables, n: usize) -> Result<Vec<Figure>, Failure> {
    let table = fresh_table("IndexIntents");
    let poisoned = n / 3;
    crashed_writes(db, &table, n, poisoned).await?;
    let store: Store<Contact> = db.store_in(&table);
    let started = Instant::now();
    let report = store.apply_index_intents(None).await?;
    let took = started.elapsed();
    db.backend().delete_table(&table).await?;
    let [failed] = report.failed.as_slice() else {
        return Err(format!(
            "apply_index_intents named {} failed intents: {report:?}",
            report.failed.len()
        )
        .into());
    };
    let named = format!("c{poisoned:06}");
    if report.found != n as u64 || report.applied != n as u64 - 1 || failed.row_key != named {
        return Err(format!("apply_index_intents over {n} intents with one poisoned: {report:?}").into());
    }
    Ok(vec![Figure::alone(
        format!("index: apply_index_intents over {} intents, one poisoned", thousands(n)),
        format!(
            "{} applied in {}; failed: ({}, {}) on index `{}` ({:?})",
            thousands(report.applied as usize),
            duration(took),
            failed.partition_key,
            failed.row_key,
            failed.index.as_deref().unwrap_or("-"),
            failed.kind
        ),
    )])
}

/// The index tools' figures on `db`: `check_indexes` over `rows` entities
/// against a tenth, `apply_index_intents` over `intents` intents.
pub async fn figures(db: &Tables, rows: usize, intents: usize) -> Result<Vec<Figure>, Failure> {
    let mut figures = check_figures(db, rows).await?;
    figures.extend(apply_figures(db, intents).await?);
    Ok(figures)
}
