//! Converge a table to the form its type writes today: rows written when
//! the column was called `Hits` are rewritten as `Count`, each conditional
//! on the version read, with a dry run first and a progress bar.
//!
//! ```text
//! cargo run -p unified-tables-examples --example converge                                 # in memory
//! cargo run -p unified-tables-examples --example converge -- "UseDevelopmentStorage=true" # Azurite
//! ```

use futures::TryStreamExt;
use indicatif::{ProgressBar, ProgressStyle};
use unified_tables::backend::{UpdateMode, WriteOp};
use unified_tables::{ConvergeOptions, Converged};
use unified_tables::{Error, Row, TableEntity, Value};
use unified_tables_examples::tables_from_env;

/// Today's type: the column is `Count`; rows that still say `Hits` are read through the alias.
#[derive(TableEntity, Debug)]
#[table(name = "ConvergeCounters")]
struct Counter {
    #[table(partition_key)]
    page: String,
    #[table(row_key)]
    day: String,
    #[alias("Hits")]
    count: i64,
}

const ROWS: usize = 2_000;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (db, backend) = tables_from_env()?;
    println!("converging {ROWS} rows on {backend}");
    let counters = db.store::<Counter>();
    counters.ensure_created().await?;
    // Rows as an older program wrote them.
    for i in 0..ROWS {
        let row = Row::new(format!("page{}", i % 4), format!("{i:05}")).with("Hits", Value::Int64(i as i64));
        let op = WriteOp::Upsert {
            row,
            mode: UpdateMode::Replace,
        };
        db.backend().execute("ConvergeCounters", op).await?;
    }

    // What would change, without writing.
    let dry = ConvergeOptions {
        dry_run: true,
        ..ConvergeOptions::default()
    };
    let plan: Vec<_> = counters.converge(dry).try_collect().await?;
    let would = plan.last().map_or(0, |s| s.rewritten);
    println!("dry run: {would} of {} rows would be rewritten", plan.len());

    // The rewrite, with a progress bar (rows, rate, ETA).
    let bar = ProgressBar::new(plan.len() as u64);
    if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} rows, {msg} ({per_sec}, ETA {eta})") {
        bar.set_style(style);
    }
    let options = ConvergeOptions {
        max_rewrites_per_second: Some(2_000),
        ..ConvergeOptions::default()
    };
    let mut steps = std::pin::pin!(counters.converge(options));
    let mut last = None;
    while let Some(step) = steps.try_next().await? {
        bar.inc(1);
        bar.set_message(format!("{} rewritten", step.rewritten));
        if let Converged::Skipped(why) = &step.outcome {
            bar.println(format!("skipped {:?}: {why}", step.position));
        }
        last = Some(step);
    }
    bar.finish();
    if let Some(step) = last {
        println!(
            "{} rewritten, {} skipped; resume after {:?} if stopped",
            step.rewritten, step.skipped, step.position
        );
    }
    let again: Vec<_> = counters
        .converge(ConvergeOptions {
            dry_run: true,
            ..Default::default()
        })
        .try_collect()
        .await?;
    println!(
        "afterwards: {} rows would be rewritten",
        again.last().map_or(0, |s| s.rewritten)
    );
    Ok(())
}
