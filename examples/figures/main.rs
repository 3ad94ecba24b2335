//! Every performance figure of unified-tables in one run, each beside its
//! reference, printed as one table:
//!
//! 1. codec: `to_row` + `from_row` of one 14-column entity, derive against
//!    hand-written code and against the generic serde route (the routes of
//!    the `codec` bench), and what building and draining a row's cells
//!    costs in the layouts `Row` could use, against its `BTreeMap`;
//! 2. batches: 10,000 rows with `create_batch` against raw
//!    `azure_data_tables` transactions (on Azure) and a loop of `create`;
//! 3. point operations (get, upsert, create) with 1 and 16 requests in
//!    flight, against the raw crate on a pooled client on Azure, with the
//!    client CPU per operation beside the crate's and beside the HTTP floor
//!    (the same requests with `reqwest` alone); queries
//!    and bodies: a 2,000-row partition query against the raw crate on a
//!    pooled client (on Azure), the client CPU per row of a page and the
//!    request body encoding per row against the crate's serde;
//! 4. 8 MiB large values (text, gzip, file) written and read, against the
//!    raw requests of the same stored layout on Azure;
//! 5. streaming memory: peak heap growth streaming rows against collecting them;
//! 6. the read cache: a cached `get` against one that reads the table, and
//!    the allocations of a hit against those of the clone it returns;
//! 7. the write token: request body bytes and client CPU per write with it
//!    against without, and ambiguous answers injected through a
//!    `FaultyBackend` against operations applied twice;
//! 8. scaling: one partition offered 4x its rate through the throttling
//!    decorator (the rate the store's backoff achieves against the
//!    partition's, and what surfaces once the default policy's budget runs
//!    out), a pool of 2, 4, 8 and 16 throttled accounts against one, and with
//!    `FIGURES_POOL` (connection strings separated by `|`) upserts on a pool
//!    of those Azure accounts against the first alone;
//! 9. the soak under faults (Azure only): 64 clients for 60 s through a
//!    proxy dropping 1 % of the write answers, against the raw crate running
//!    the same mix by hand: rates, p50/p99 latency, lost and doubled
//!    increments (`FIGURES_SOAK_CLIENTS`, `FIGURES_SOAK_SECS` for a shorter run);
//! 10. the operator's toolbox: export against a raw partition query, import
//!     against `create_batch`, fsck against a raw full scan, export memory
//!     at 100,000 rows against 10,000;
//! 11. pools (in memory): a point write through a pooled handle with its
//!     fence against one without, a merged query's requests per page over
//!     ten pages and its rows per second against one account's, what a
//!     reshard costs per million moving rows, and its peak heap at 100,000
//!     moving rows against 10,000;
//! 12. secondary indexes: a write with one local index against the same
//!     write without, a lookup by the index against a filtered partition
//!     query, and `build_index` over 100,000 rows against a raw scan plus
//!     raw transactions of the same index rows, with its peak heap;
//!     `check_indexes`' peak heap over 100,000 entities against 10,000; and
//!     `apply_index_intents` over 10,000 intents, one of them poisoned,
//!     applying the others and naming that one;
//! 13. Cosmos DB for Table (in memory): `take(10)` of a 10,000-row partition
//!     and an append log's `recent(10)` over 10,000 events on the in-memory
//!     backend's Cosmos profile (rows in no order, so the store reads every
//!     match and orders it), in query pages and time per call, against the
//!     same reads on its Table Storage profile.
//!
//! The ratio is library / reference of the figures as printed (times: lower
//! is better; MB/s: higher is better); the target, where one is set, says
//! which way.
//!
//! ```text
//! cargo run --release -p unified-tables-examples --example figures                                  # in memory
//! cargo run --release -p unified-tables-examples --example figures -- "<connection string>"         # Azure or Azurite
//! ```
//!
//! `FIGURES=codec,query` runs only the named sections (`codec`, `layouts`,
//! `cpu`, `batch`, `point`, `query`, `large`, `cache`, `tokens`, `scaling`, `pool`, `soak`, `admin`, `stream`, `index`, `cosmos`), for work
//! on one of them; the figures of record are those of a full run.
//! `FIGURES_RUNS=5` runs them five times and prints, for each figure, the
//! run whose ratio is the median, with the lowest and highest ratio of the
//! runs (the run-to-run noise); the verdict is the median's.
//!
//! What telemetry costs with no subscriber: the `point` section built with
//! `--features no-telemetry` (every span and event compiled out) against
//! the default build, and with `--features metrics` (compiled in, no
//! recorder); in memory it prints each operation's CPU per op.

#[path = "../../tables/benches/support/codec_routes.rs"]
mod codec_routes;
#[path = "../../tables/benches/support/row_layouts.rs"]
mod row_layouts;

mod admin;
mod alloc;
mod batch;
mod cache;
mod common;
mod cosmos;
mod http_floor;
mod index;
mod index_floor;
mod index_tools;
mod large;
mod point;
mod point_token;
mod pool;
mod query;
mod report;
mod scaling;
mod soak;
mod stream;
mod tokens;

use std::time::Instant;

use unified_tables::backend::azure::ConnectionString;
use unified_tables::Tables;
use unified_tables_examples::connection_from_env;

use crate::codec_routes::ROUTES;
use crate::common::Failure;
use crate::report::{Figure, Target};

/// Whether the section `name` runs: every section unless `FIGURES` names some.
fn runs(name: &str) -> bool {
    match std::env::var("FIGURES") {
        Ok(list) if !list.trim().is_empty() => list.split(',').any(|s| s.trim() == name),
        _ => true,
    }
}

#[global_allocator]
static ALLOCATOR: alloc::CountingAllocator = alloc::CountingAllocator;

/// Point operations per measurement: in memory, and on Azure (enough that
/// the client CPU per operation at 16 in flight moves little between runs).
const POINT_OPS: (usize, usize) = (20_000, 600);
/// Upserts per measurement of the write token's CPU: in memory, and on Azure
/// (more than the point operations': one cell's cost is small beside a request's).
const TOKEN_OPS: (usize, usize) = (20_000, 1_200);
/// Cached gets per measurement: in memory, and on Azure.
const CACHE_OPS: (usize, usize) = (100_000, 2_000);
/// Rows streamed: in memory, and on Azure (seeding them takes a while).
const STREAM_ROWS: (usize, usize) = (100_000, 50_000);
/// Rows of the toolbox's figures: in memory, and on Azure.
const ADMIN_ROWS: (usize, usize) = (100_000, 100_000);
/// The index figures' sizes: in memory, and on Azure.
const INDEX_SIZES: (index::Sizes, index::Sizes) = (
    index::Sizes {
        writes: 20_000,
        lookups: 200,
        build_rows: 100_000,
        intents: 10_000,
        rounds: 3,
    },
    index::Sizes {
        writes: 600,
        lookups: 100,
        build_rows: 100_000,
        intents: 10_000,
        rounds: 2,
    },
);

/// The codec figures: derive against hand-written and against generic serde.
fn codec_figures() -> Vec<Figure> {
    let order = codec_routes::sample();
    codec_routes::check_routes_agree(&order);
    let t = codec_routes::time_round_trips(&order);
    let ns = |v: f64| (format!("{v:.0} ns"), v);
    vec![
        Figure::compared(
            format!("codec round trip: {} vs {}", ROUTES[0], ROUTES[1]),
            ns(t.derive()),
            ns(t.hand_written()),
        )
        .target(Target::AtMost(1.05)),
        Figure::compared(
            format!("codec round trip: {} vs {}", ROUTES[0], ROUTES[2]),
            ns(t.derive()),
            ns(t.generic()),
        )
        .target(Target::AtMost(1.0)),
    ]
}

/// The row layouts `Row` could use, each against the `BTreeMap` it uses, on
/// the derive's pattern (build 14 cells in field order, take each back).
fn layout_figures() -> Vec<Figure> {
    let ns = row_layouts::time_layouts();
    let cell = |v: f64| (format!("{v:.0} ns"), v);
    row_layouts::LAYOUTS
        .iter()
        .zip(ns)
        .skip(1)
        .map(|(name, t)| Figure::compared(format!("row layout: {name} vs BTreeMap"), cell(t), cell(ns[0])))
        .collect()
}

/// Batches, point operations and large values, on a multi-threaded runtime.
async fn network_figures(connection: Option<&str>) -> Result<(Vec<Figure>, Vec<String>), Failure> {
    let mut notes = Vec::new();
    let parsed = connection.map(ConnectionString::parse).transpose()?;
    // Every figure but the cache's reads the table each time, as the raw crate does.
    let (db, service, pooled, point_ops, cache_ops) = match connection {
        Some(c) => {
            let parsed = ConnectionString::parse(c)?;
            let db = Tables::connect(c)?.without_cache();
            let pooled = common::pooled_crate_client(&parsed)?;
            (
                db,
                Some(common::crate_client(&parsed)?),
                Some(pooled),
                POINT_OPS.1,
                CACHE_OPS.1,
            )
        }
        None => (Tables::memory().without_cache(), None, None, POINT_OPS.0, CACHE_OPS.0),
    };
    let mut figures = Vec::new();
    if runs("batch") {
        let (batch, refused) = batch::figures(&db, service.clone()).await?;
        figures.extend(batch);
        if let Some(reason) = refused {
            notes.push(format!(
                "the azure_data_tables transaction was refused ({reason}); the batch reference went through Backend::transaction"
            ));
        }
    }
    if runs("point") {
        // The default build against `--features no-telemetry` (spans compiled
        // out) and `--features metrics`: what telemetry costs with no subscriber.
        notes.push(format!(
            "point: operation and request spans {}; metrics {}",
            if cfg!(feature = "no-telemetry") {
                "compiled out (feature `no-telemetry`)"
            } else {
                "compiled in, no subscriber"
            },
            if cfg!(feature = "metrics") {
                "compiled in (feature `metrics`), no recorder"
            } else {
                "not compiled (feature `metrics` off)"
            }
        ));
        figures.extend(point::figures(&db, pooled.as_ref(), parsed.as_ref(), point_ops).await?);
        if connection.is_some() {
            figures.extend(point_token::figures(POINT_OPS.1).await?);
        }
    }
    if runs("query") {
        figures.extend(query::figures(&db, pooled.as_ref()).await?);
    }
    if runs("large") {
        figures.extend(large::figures(&db, connection).await?);
    }
    if runs("cache") {
        figures.extend(cache::figures(&db, cache_ops, 1_000).await?);
    }
    if runs("tokens") {
        figures.extend(
            tokens::figures(
                &db,
                service.is_none(),
                if service.is_none() { TOKEN_OPS.0 } else { TOKEN_OPS.1 },
            )
            .await?,
        );
    }
    if runs("scaling") {
        let (scaling, scaling_notes) = scaling::figures().await?;
        figures.extend(scaling);
        notes.extend(scaling_notes);
    }
    if runs("pool") {
        figures.extend(pool::figures().await?);
    }
    if runs("soak") {
        figures.extend(soak::figures(connection).await?);
    }
    Ok((figures, notes))
}

/// Every selected section once: the figures and the notes.
fn one_run(connection: Option<&str>) -> Result<(Vec<Figure>, Vec<String>), Failure> {
    let mut figures = Vec::new();
    if runs("codec") {
        figures.extend(codec_figures());
    }
    if runs("layouts") {
        figures.extend(layout_figures());
    }
    if runs("cpu") {
        figures.extend(query::cpu_figures()?);
    }

    eprintln!("figures: batches, point operations, large values ..");
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let (network, notes) = runtime.block_on(network_figures(connection))?;
    drop(runtime);
    figures.extend(network);

    eprintln!("figures: streaming memory ..");
    // One thread: no runtime worker allocates beside the measured code.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    if runs("stream") {
        figures.extend(runtime.block_on(async {
            let (db, rows) = match connection {
                Some(c) => (Tables::connect(c)?.without_cache(), STREAM_ROWS.1),
                None => (Tables::memory().without_cache(), STREAM_ROWS.0),
            };
            stream::figures(&db, rows).await
        })?);
    }
    if runs("pool") {
        eprintln!("figures: a reshard's memory ..");
        figures.extend(runtime.block_on(pool::memory_figures())?);
    }
    if runs("admin") {
        eprintln!("figures: the operator's toolbox ..");
        figures.extend(runtime.block_on(async {
            let (db, rows) = match connection {
                Some(c) => (Tables::connect(c)?.without_cache(), ADMIN_ROWS.1),
                None => (Tables::memory().without_cache(), ADMIN_ROWS.0),
            };
            admin::figures(&db, rows).await
        })?);
    }
    if runs("index") {
        eprintln!("figures: secondary indexes ..");
        figures.extend(runtime.block_on(async {
            let (db, sizes) = match connection {
                Some(c) => (Tables::connect(c)?.without_cache(), INDEX_SIZES.1),
                None => (Tables::memory().without_cache(), INDEX_SIZES.0),
            };
            index::figures(&db, sizes).await
        })?);
    }
    if runs("cosmos") {
        // In memory whatever the connection: the two profiles side by side.
        eprintln!("figures: reads in key order on Cosmos DB for Table (in memory) ..");
        figures.extend(runtime.block_on(cosmos::figures(cosmos::SIZES))?);
    }
    Ok((figures, notes))
}

/// The warning a build without optimisations prints before its figures:
/// they measure the compiler's debug code, not the library.
fn unoptimised_warning(optimised: bool) -> Option<&'static str> {
    (!optimised).then_some(
        "warning: a debug build: these figures measure unoptimised code, several times slower than the library; \
         run with `cargo run --release -p unified-tables-examples --example figures`",
    )
}

fn main() -> Result<(), Failure> {
    let warning = unoptimised_warning(!cfg!(debug_assertions));
    if let Some(warning) = warning {
        eprintln!("{warning}");
    }
    let connection = connection_from_env();
    let started = Instant::now();
    let on = match &connection {
        Some(c) => format!("Azure at {}", ConnectionString::parse(c)?.table_endpoint),
        None => "the in-memory backend".to_owned(),
    };
    // `FIGURES_RUNS=5`: every figure is the run with the median ratio of five whole runs.
    let count: usize = std::env::var("FIGURES_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        .max(1);
    let (mut all, mut notes) = (Vec::new(), Vec::new());
    for run in 1..=count {
        eprintln!("figures on {on}, run {run} of {count}: codec ..");
        let (figures, run_notes) = one_run(connection.as_deref())?;
        all.push(figures);
        notes.extend(run_notes);
    }
    notes.dedup();
    let figures = report::median_of_runs(all);

    println!(
        "unified-tables figures on {on} ({:.0} s, {}); ratio = library / reference",
        started.elapsed().as_secs_f64(),
        match count {
            1 => "one run".to_owned(),
            n => format!("each figure the median of {n} runs, its ratios over the runs beside it"),
        }
    );
    if let Some(warning) = warning {
        println!("{warning}");
    }
    println!();
    report::print_table(&figures);
    for note in notes {
        println!("note: {note}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_debug_build_warns_that_its_figures_are_not_the_librarys() {
        let warning = super::unoptimised_warning(false).expect("a warning");
        assert!(
            warning.contains("debug build") && warning.contains("--release"),
            "{warning}"
        );
        assert_eq!(super::unoptimised_warning(true), None);
    }
}
