//! Process-kill chaos: a writer process (`chaos_writer`) writes versions of
//! large entities in every tier (split cells, continuation rows with a gzip
//! value, blob-backed values, files) and is killed with SIGKILL at seeded
//! moments, then restarted. After every kill each entity reads as one
//! complete version the writer could have left (the last it reported, or
//! the one it was writing), never a mix and never an error; the next write
//! of the key being written succeeds and leaves the table whole. At the end
//! every key is written once more, the orphan sweep runs after the (short)
//! cleanup grace, and an independent scan finds no damaged value, no
//! continuation row without its main row and no unreferenced blob.
//!
//! The documents carry a local, a global and a global unique index. After
//! every kill the local index answers exactly the entities read, and a
//! lookup through a global one returns only entities holding the value; at
//! the end the operator's job and a repair leave 0 index rows that differ
//! from those the entities need.
//!
//! Azure / Azurite only: the in-memory backend lives in the writer's
//! process and dies with it, so a kill has nothing to leave behind there.
//! `UNIFIED_TABLES_CHAOS_KILLS` sets the number of kills (default 50),
//! `UNIFIED_TABLES_CHAOS_SEED` the seed (default fixed; printed).

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rand::{Rng as _, SeedableRng as _};
use unified_tables::IndexCheckOptions;
use unified_tables::{Store, TableEntity};
use unified_tables_tests::chaos::{self, row_key, ChaosDoc, Step, KEYS, PARTITION, SHARDS, TIERS};
use unified_tables_tests::index_model::{all_rows, divergence};
use unified_tables_tests::integrity_scan::{scan, ScanReport};
use unified_tables_tests::{azure_env, Env, CONNECTION_VAR};

const KILLS_VAR: &str = "UNIFIED_TABLES_CHAOS_KILLS";
const SEED_VAR: &str = "UNIFIED_TABLES_CHAOS_SEED";
/// Versions the test itself writes start here (the writers' are `run * 1_000_000 + n`); a multiple of the tier count.
const OWN_VERSIONS: i64 = 1_000_000_000_000;

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// What the writers reported: each key's last written version (`None`: deleted or never written).
type Known = BTreeMap<String, Option<i64>>;

/// Folds a killed writer's output into `known`; returns the write it was in (key and version).
fn replay(output: &str, known: &mut Known) -> (usize, Option<(String, Option<i64>)>) {
    let mut in_flight = None;
    let mut done = 0;
    for step in output.lines().filter_map(Step::parse) {
        match step {
            Step::Begin(rk, v) => in_flight = Some((rk, v)),
            Step::Done(rk, v) => {
                known.insert(rk, v);
                in_flight = None;
                done += 1;
            }
        }
    }
    (done, in_flight)
}

fn spawn(env: &Env, container: &str, seed: u64, run: usize) -> Child {
    Command::new(env!("CARGO_BIN_EXE_chaos_writer"))
        .args([&env.table, container, &seed.to_string(), &run.to_string()])
        .env(
            CONNECTION_VAR,
            std::env::var(CONNECTION_VAR).expect("the connection string"),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the writer starts")
}

/// Reads every key: each must be one complete version among `allowed(key)`;
/// then the lookups must agree with the entities read.
async fn check_reads(store: &Store<ChaosDoc>, known: &Known, in_flight: &Option<(String, Option<i64>)>, kill: usize) {
    let mut read = BTreeMap::new();
    for (rk, last) in known {
        let got = store
            .get((PARTITION, rk.as_str()))
            .await
            .unwrap_or_else(|e| panic!("kill {kill}: reading {rk} failed: {e}"));
        let version = got.as_ref().map(|d| d.version);
        let writing = in_flight.as_ref().filter(|(k, _)| k == rk).map(|(_, v)| *v);
        assert!(
            version == *last || Some(version) == writing,
            "kill {kill}: {rk} reads as version {version:?}; the writer last reported {last:?} and was writing {writing:?}"
        );
        if let Some(doc) = got {
            doc.check().unwrap_or_else(|e| panic!("kill {kill}: {e}"));
            if let Some(file) = &doc.attachment {
                file.read_all()
                    .await
                    .unwrap_or_else(|e| panic!("kill {kill}: the file of {rk} does not read: {e}"));
            }
            read.insert(rk.clone(), doc);
        }
    }
    check_lookups(store, &read, kill).await;
}

/// The local indexes answer exactly the entities `read` (they are written
/// in their transactions): every tier's entities, each entity by its
/// unique tag; a global lookup returns only entities holding the value
/// (read repair).
async fn check_lookups(store: &Store<ChaosDoc>, read: &BTreeMap<String, ChaosDoc>, kill: usize) {
    for tier in TIERS {
        let found = ChaosDoc::find_by_tier(store, PARTITION, tier)
            .await
            .unwrap_or_else(|e| panic!("kill {kill}: find_by_tier({tier}) failed: {e}"));
        let found: Vec<&str> = found.iter().map(|d| d.rk.as_str()).collect();
        let want: Vec<&str> = read
            .values()
            .filter(|d| d.tier == tier)
            .map(|d| d.rk.as_str())
            .collect();
        assert_eq!(found, want, "kill {kill}: find_by_tier({tier})");
    }
    for shard in 0..SHARDS {
        let found = ChaosDoc::find_by_shard(store, shard)
            .await
            .unwrap_or_else(|e| panic!("kill {kill}: find_by_shard({shard}) failed: {e}"));
        for doc in found {
            assert_eq!(
                doc.shard, shard,
                "kill {kill}: find_by_shard({shard}) returned {}",
                doc.rk
            );
            let entity = read.get(&doc.rk).map(|d| d.version);
            assert_eq!(
                Some(doc.version),
                entity,
                "kill {kill}: find_by_shard({shard}) returned a version not stored"
            );
        }
    }
    for doc in read.values() {
        let found = ChaosDoc::get_by_tag(store, PARTITION, &doc.tag)
            .await
            .unwrap_or_else(|e| panic!("kill {kill}: get_by_tag({}) failed: {e}", doc.tag));
        assert_eq!(
            found.map(|d| d.rk),
            Some(doc.rk.clone()),
            "kill {kill}: get_by_tag({})",
            doc.tag
        );
    }
}

/// The table-side problems of a scan (orphan blobs are left to the sweep until the end).
async fn table_problems(env: &Env, container: &str) -> ScanReport {
    let blobs = env.blobs.clone().expect("a blob backend");
    scan(env.backend(), blobs.as_ref(), &env.table, container)
        .await
        .expect("the scan reads the table and the container")
}

/// Writes a new version of `rk` (of tier `tier`) and reads it back whole.
async fn write_own(store: &Store<ChaosDoc>, known: &mut Known, rk: &str, n: i64, tier: usize) {
    let version = OWN_VERSIONS + n * TIERS.len() as i64 + tier as i64;
    let mut doc = ChaosDoc::at(rk, version);
    store
        .upsert(&mut doc)
        .await
        .unwrap_or_else(|e| panic!("the next write of {rk} fails: {e}"));
    let back = store.get((PARTITION, rk)).await.unwrap().expect("written");
    assert_eq!(back.version, version);
    back.check().unwrap();
    known.insert(rk.to_owned(), Some(version));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_writers_leave_every_entity_whole_and_nothing_behind() {
    let Some(env) = azure_env("chaos").await else { return };
    let kills = env_number(KILLS_VAR, 50) as usize;
    let seed = env_number(SEED_VAR, 0xC4A05);
    eprintln!("chaos: {kills} kills, seed {seed} ({SEED_VAR} to repeat)");
    let container = format!("chaos-{}", env.table.to_ascii_lowercase());
    let blobs = env.blobs.clone().expect("a blob backend");
    let store = env
        .tables
        .clone()
        .with_blobs(blobs.clone(), chaos::blob_options(&container))
        .store_in::<ChaosDoc>(&env.table);
    store.ensure_created().await.unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut known: Known = (0..KEYS).map(|n| (row_key(n), None)).collect();
    let started = Instant::now();
    let (mut mid_write, mut writes, mut orphans_seen) = (0, 0, 0);
    for kill in 0..kills {
        let mut child = spawn(&env, &container, seed, kill + 1);
        tokio::time::sleep(Duration::from_millis(rng.gen_range(30..700))).await;
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
            panic!("kill {kill}: the writer stopped by itself ({status}): {err}");
        }
        child.kill().expect("SIGKILL");
        let output = child.wait_with_output().expect("the writer's output");
        let (done, in_flight) = replay(&String::from_utf8_lossy(&output.stdout), &mut known);
        writes += done;
        mid_write += usize::from(in_flight.is_some());
        // A request the service had whole before the kill is still applied: let it land.
        tokio::time::sleep(Duration::from_millis(50)).await;
        check_reads(&store, &known, &in_flight, kill).await;
        // The next write of the key being written takes back what the kill left.
        if let Some((rk, _)) = &in_flight {
            write_own(&store, &mut known, rk, kill as i64, rng.gen_range(0..TIERS.len())).await;
            check_reads(&store, &known, &None, kill).await;
            let report = table_problems(&env, &container).await;
            assert!(report.problems.is_empty(), "kill {kill}: {:#?}", report.problems);
            orphans_seen = orphans_seen.max(report.orphan_blobs.len());
        }
    }
    // Every key written once more, in the tiers with the most to leave behind.
    for (n, rk) in (0..KEYS).map(row_key).enumerate() {
        write_own(&store, &mut known, &rk, kills as i64 + 1, [2, 3, 4][n % 3]).await;
    }
    // Past the grace (the blob clock has one-second resolution), the sweep leaves no orphan.
    tokio::time::sleep(chaos::GRACE + Duration::from_millis(1_100)).await;
    let swept = store.sweep_all_orphan_blobs(chaos::GRACE).await.expect("the sweep");
    let report = table_problems(&env, &container).await;
    assert!(report.problems.is_empty(), "{:#?}", report.problems);
    assert!(
        report.orphan_blobs.is_empty(),
        "after the sweep: {:#?}",
        report.orphan_blobs
    );
    assert!(
        report.split_values > 0 && report.blob_refs > 0 && report.continuation_rows > 0,
        "{report:?}"
    );
    // The operator's job and a repair leave exactly the index rows the entities need.
    let applied = store.apply_index_intents(None).await.expect("the job");
    let repair = IndexCheckOptions {
        repair: true,
        ..IndexCheckOptions::default()
    };
    let repaired = store.check_indexes(repair).await.expect("the repair");
    let rows = all_rows(env.backend(), &env.table).await;
    let wrong = divergence(ChaosDoc::INDEXES, &rows);
    assert!(
        wrong.is_empty(),
        "{} divergent index rows:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    let after = store
        .check_indexes(IndexCheckOptions::default())
        .await
        .expect("the check");
    assert!(after.is_clean(), "after the repair: {:?}", after.findings);
    let read: BTreeMap<String, ChaosDoc> = store
        .query(unified_tables::QueryOptions::partition(PARTITION))
        .await
        .expect("the entities")
        .into_iter()
        .map(|d| (d.rk.clone(), d))
        .collect();
    check_lookups(&store, &read, kills).await;
    for shard in 0..SHARDS {
        let found = ChaosDoc::find_by_shard(&store, shard).await.expect("a lookup");
        assert_eq!(
            found.len(),
            read.values().filter(|d| d.shard == shard).count(),
            "find_by_shard({shard})"
        );
    }
    eprintln!(
        "chaos: {kills} kills ({mid_write} mid-write), {writes} writes reported, at most {orphans_seen} orphan blobs between kills, {} swept at the end, final scan {} rows + {} continuation rows + {} index rows, {} split values, {} blobs: clean; index job {applied:?}, repair found {} findings, 0 divergent index rows, in {:.1} s",
        swept.deleted,
        report.main_rows,
        report.continuation_rows,
        report.index_rows,
        report.split_values,
        report.blobs,
        repaired.findings.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        mid_write * 2 >= kills,
        "most kills fall mid-write: {mid_write} of {kills}"
    );
}
