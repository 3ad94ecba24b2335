//! Readers racing a writer that keeps replacing a large value: every read
//! returns one whole version (or `Conflict` after its attempts), never a mix
//! of two and never `Integrity`, for every shape a large value can take.

use std::sync::Arc;

use unified_tables::{Error, Store, Tables};

use crate::model::Document;
use crate::{blob_options, noise, Env};

/// Replaces the writer makes; each reader reads until the writer is done.
const WRITES: usize = 8;
/// Concurrent readers.
const READERS: usize = 3;

/// How a version of the racing document is built.
type Version = fn(usize) -> Document;

fn doc() -> Document {
    Document::new("p", "race")
}

/// Text on continuation rows (about 1.4–1.6 MB).
fn text_rows(i: usize) -> Document {
    let mut d = doc();
    d.body = noise(1_400_000 + (i % 2) * 200_000, 100 + i as u64);
    d
}

/// Incompressible gzip text on continuation rows.
fn gzip_rows(i: usize) -> Document {
    let mut d = doc();
    d.notes = Some(noise(1_500_000 + (i % 2) * 100_000, 200 + i as u64));
    d
}

/// Binary on continuation rows.
fn binary_rows(i: usize) -> Document {
    let mut d = doc();
    d.data = noise(1_600_000 - (i % 2) * 150_000, 300 + i as u64).into_bytes();
    d
}

/// A value offloaded to a blob.
fn blob_backed(i: usize) -> Document {
    let mut d = doc();
    d.body = noise(3_300_000, 400 + i as u64);
    d
}

/// A value that grows onto more rows and shrinks back onto the main row.
fn grows_and_shrinks(i: usize) -> Document {
    let mut d = doc();
    d.body = match i % 3 {
        0 => noise(40_000, 500 + i as u64),
        1 => noise(2_400_000, 500 + i as u64),
        _ => noise(700_000, 500 + i as u64),
    };
    d
}

/// A handle without cache over the environment's backends (production paths: the Azure
/// backend's point reads, range queries and streamed blob downloads).
fn handle(env: &Env) -> Store<Document> {
    Tables::with_backend(env.backend().clone())
        .without_cache()
        .with_blobs(env.blobs.clone().expect("a blob backend"), blob_options())
        .store_in::<Document>(&env.table)
}

async fn race(env: &Env, shape: &str, version: Version) {
    let writer_store = handle(env);
    let versions: Arc<Vec<Document>> = Arc::new((0..WRITES + 1).map(version).collect());
    let mut first = versions[0].clone();
    writer_store
        .upsert(&mut first)
        .await
        .unwrap_or_else(|e| panic!("{shape}: {e}"));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..READERS)
        .map(|_| {
            // Each reader has its own handle, so its hints of the layout go stale as the writer changes it.
            let (store, versions, done) = (handle(env), versions.clone(), done.clone());
            let shape = shape.to_owned();
            tokio::spawn(async move {
                let (mut whole, mut conflicts) = (0usize, 0usize);
                // Bounded: the writer ends, and a reader makes at most 60 reads.
                for _ in 0..60 {
                    if done.load(std::sync::atomic::Ordering::Acquire) && whole > 0 {
                        break;
                    }
                    match store.get(("p", "race")).await {
                        Ok(Some(d)) => {
                            assert!(
                                versions.iter().any(|v| v.same(&d)),
                                "{shape}: a read returned a value that is no version"
                            );
                            whole += 1;
                        }
                        Ok(None) => panic!("{shape}: the row never disappears"),
                        Err(Error::Conflict { .. }) => conflicts += 1,
                        Err(e) => panic!("{shape}: a read racing a replace failed: {e}"),
                    }
                }
                (whole, conflicts)
            })
        })
        .collect();
    for v in versions.iter().skip(1) {
        let mut v = v.clone();
        writer_store
            .upsert(&mut v)
            .await
            .unwrap_or_else(|e| panic!("{shape}: {e}"));
    }
    done.store(true, std::sync::atomic::Ordering::Release);
    let mut whole = 0;
    for r in readers {
        whole += r.await.unwrap().0;
    }
    assert!(whole >= READERS, "{shape}: every reader read a whole version");
    let last = writer_store.get(("p", "race")).await.unwrap().unwrap();
    assert!(last.same(&versions[WRITES]), "{shape}: the last write is what stays");
}

pub async fn readers_racing_a_replace_of_text_rows_see_one_version(env: &Env) {
    race(env, "text on continuation rows", text_rows).await;
}

pub async fn readers_racing_a_replace_of_gzip_rows_see_one_version(env: &Env) {
    race(env, "gzip on continuation rows", gzip_rows).await;
}

pub async fn readers_racing_a_replace_of_binary_rows_see_one_version(env: &Env) {
    race(env, "binary on continuation rows", binary_rows).await;
}

pub async fn readers_racing_a_replace_of_a_blob_see_one_version(env: &Env) {
    race(env, "a blob-backed value", blob_backed).await;
}

pub async fn readers_racing_a_value_that_grows_and_shrinks_see_one_version(env: &Env) {
    race(env, "a value that grows and shrinks", grows_and_shrinks).await;
}

/// A type with a large value and no ETag field: the store keeps the version itself.
#[derive(unified_tables::TableEntity, Debug, Clone, PartialEq)]
pub struct Tally {
    #[table(partition_key)]
    pub pk: String,
    #[table(row_key)]
    pub rk: String,
    #[table(split = "text")]
    pub body: String,
    pub count: i64,
}

/// A read that raced a replace ends on the fresher row: what it returns
/// carries that row's version, so a `mutate` of a type without an ETag field
/// writes once, on the version its value came from.
pub async fn a_read_retried_onto_a_fresher_row_keeps_that_rows_version(env: &Env) {
    use crate::gate::{GateBackend, Point};
    use std::time::Duration;
    let gate = GateBackend::new(env.backend().clone());
    let store = Tables::with_backend(gate.clone())
        .without_cache()
        .with_blobs(env.blobs.clone().expect("a blob backend"), blob_options())
        .store_in::<Tally>(&env.table);
    let tally = |seed: u64, count: i64| Tally {
        pk: "p".into(),
        rk: "tally".into(),
        body: noise(1_500_000, seed),
        count,
    };
    store.create(&mut tally(61, 0)).await.unwrap();
    use unified_tables::backend::Backend;
    let main = env.backend().get(&env.table, "p", "tally").await.unwrap().unwrap();
    let parts = match main.get("_SplitParts") {
        Some(unified_tables::Value::Int32(n)) => *n as usize,
        other => panic!("continuation rows expected: {other:?}"),
    };
    // The mutate's read has the first version's main row; its continuation rows' reads are held.
    let get = gate.arm(Point::AfterGet);
    let rows: Vec<_> = (0..parts).map(|_| gate.arm(Point::BeforeContinuationGet)).collect();
    let mutate = {
        let store = store.clone();
        tokio::spawn(async move { store.mutate(("p", "tally"), |t| t.count += 1).await })
    };
    let (mut releases, mut reached) = (vec![get.release], vec![get.reached]);
    for row in rows {
        reached.push(row.reached);
        releases.push(row.release);
    }
    let all = tokio::time::timeout(Duration::from_secs(30), futures::future::join_all(reached))
        .await
        .expect("the reads reach their points");
    assert!(all.iter().all(Result::is_ok));
    // A replace lands in between: the continuation rows read are the second version's.
    let second = tally(62, 10);
    let other = Tables::with_backend(env.backend().clone())
        .without_cache()
        .with_blobs(env.blobs.clone().expect("a blob backend"), blob_options())
        .store_in::<Tally>(&env.table);
    other.upsert(&mut second.clone()).await.unwrap();
    env.reset_counts();
    for release in releases.into_iter().rev() {
        let _ = release.send(());
    }
    let mutated = mutate.await.unwrap().unwrap();
    assert_eq!(mutated.count, 11, "the intent ran on the second version");
    assert_eq!(mutated.body, second.body);
    let counts = env.counts();
    assert_eq!(
        counts.writes + counts.transactions,
        1,
        "one write, on the version the value came from: {counts:#?}"
    );
}
