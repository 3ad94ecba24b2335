//! The writer the process-kill chaos test (`tests/chaos.rs`) kills: it
//! writes versions of the chaos documents in a loop until killed, printing
//! `begin KEY VERSION` before each write and `done KEY VERSION` after it
//! reports success (`delete` in place of a version for a delete).
//!
//! Usage: `chaos_writer TABLE CONTAINER SEED GENERATION`, with the
//! connection string in `UNIFIED_TABLES_TEST_CONNECTION`. Versions are
//! `GENERATION * 1_000_000 + n`, so each run writes versions no other run
//! wrote. A write that fails ends the process with status 2 and the error
//! on stderr.

use std::io::Write as _;
use std::sync::Arc;

use rand::{Rng as _, SeedableRng as _};
use unified_tables::backend::azure::{AzureBackend, AzureBlobBackend};
use unified_tables::Tables;
use unified_tables_tests::chaos::{blob_options, row_key, ChaosDoc, Step, KEYS, PARTITION};

fn say(step: Step) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", step.line());
    let _ = out.flush();
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, table, container, seed, generation] = &args[..] else {
        eprintln!("usage: chaos_writer TABLE CONTAINER SEED GENERATION");
        std::process::exit(64);
    };
    let seed: u64 = seed.parse().expect("a numeric seed");
    let generation: i64 = generation.parse().expect("a numeric generation");
    let connection = std::env::var(unified_tables_tests::CONNECTION_VAR).expect("the connection string");
    let backend = AzureBackend::from_connection_string(&connection).expect("the table endpoint");
    let blobs = AzureBlobBackend::from_connection_string(&connection).expect("the blob endpoint");
    let tables = Tables::from_arc(Arc::new(backend))
        .without_cache()
        .with_blobs(blobs, blob_options(container));
    let store = tables.store_in::<ChaosDoc>(table.as_str());
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ (generation as u64) << 32);
    for n in 0.. {
        let rk = row_key(rng.gen_range(0..KEYS));
        let result = if rng.gen_ratio(1, 10) {
            say(Step::Begin(rk.clone(), None));
            store.delete((PARTITION, rk.as_str())).await.map(|_| None)
        } else {
            let version = generation * 1_000_000 + n;
            say(Step::Begin(rk.clone(), Some(version)));
            let mut doc = ChaosDoc::at(&rk, version);
            store.upsert(&mut doc).await.map(|_| Some(version))
        };
        match result {
            Ok(v) => say(Step::Done(rk, v)),
            Err(e) => {
                eprintln!("the write of {rk} failed: {e}");
                std::process::exit(2);
            }
        }
    }
}
