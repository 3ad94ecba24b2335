//! Large values and files take the blob paths production takes: a value in
//! a blob is downloaded as a stream ([`get_into`](unified_tables::backend::blob::BlobBackend::get_into)) and every
//! upload sends the writer's bytes as they are ([`put_shared`](unified_tables::backend::blob::BlobBackend::put_shared)),
//! asserted through the counts by method; and a download cut midway fails
//! the read, with nothing kept or written from the bytes that did arrive.

use unified_tables::backend::counting::Counts;
use unified_tables::backend::faulty::{FaultTarget, FaultTiming, FaultyBackend};
use unified_tables::backend::Backend;
use unified_tables::{BlobContent, Error, ErrorKind, QueryOptions, ReadCache, Store};

use crate::model::Document;
use crate::{blob_options, noise, Env};

/// Over the default offload threshold (3,145,728): stored as a blob.
const OFFLOADED: usize = 3_200_000;

/// Asserts the counts since the last reset are exactly `expected`, then resets them.
fn measure(env: &Env, what: &str, expected: Counts) {
    let got = env.counts();
    assert_eq!(got, expected, "{what}: got {got:#?}");
    env.reset_counts();
}

/// What a connection dropped in the middle of a download reports.
fn cut() -> Error {
    Error::transport("the connection was reset while the blob was downloading")
}

/// A document with two values in blobs (text and binary) and a file.
fn document(rk: &str, seed: u64) -> Document {
    let mut d = Document::new("p", rk);
    d.body = noise(OFFLOADED, seed);
    d.data = noise(OFFLOADED, seed + 1).into_bytes();
    d.attachment = Some(BlobContent::from_bytes(
        noise(5_000_000, seed + 2).into_bytes(),
        "application/pdf",
    ));
    d
}

/// The main row's ETag as stored (read past the store).
async fn stored_etag(env: &Env, rk: &str) -> String {
    let row = env.backend().get(&env.table, "p", rk).await.unwrap().expect("main row");
    format!("{:?}", row.etag)
}

pub async fn large_values_download_as_streams_and_upload_without_a_copy(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    store.ensure_created().await.unwrap();
    env.reset_counts();
    // Every upload of a write, the values' and the file's, sends the bytes the entity holds.
    let mut d = document("doc", 90);
    store.create(&mut d).await.unwrap();
    measure(
        env,
        "create with two values in blobs and a file",
        Counts {
            writes: 1,
            blob_containers: 1,
            blob_shared_puts: 3,
            ..Counts::default()
        },
    );
    // A read streams each value in a blob: no buffered download.
    let got = store.get(("p", "doc")).await.unwrap().unwrap();
    assert!(got.same(&d));
    measure(
        env,
        "read of two values in blobs",
        Counts {
            gets: 1,
            blob_streamed_gets: 2,
            ..Counts::default()
        },
    );
    // So does a query, one stream per value of each entity.
    let mut e = Document::new("p", "other");
    e.body = noise(OFFLOADED, 95);
    store.create(&mut e).await.unwrap();
    env.reset_counts();
    let all = store.query(QueryOptions::partition("p")).await.unwrap();
    assert_eq!(all.len(), 2);
    assert!(all[0].same(&d) && all[1].same(&e));
    measure(
        env,
        "query of two entities with three values in blobs",
        Counts {
            queries: 1,
            query_starts: 1,
            blob_streamed_gets: 3,
            ..Counts::default()
        },
    );
    // A file read whole is streamed and hashed as it downloads.
    let content = got.attachment.clone().unwrap();
    assert_eq!(content.read_all().await.unwrap(), noise(5_000_000, 92).into_bytes());
    measure(
        env,
        "a file read whole",
        Counts {
            blob_streamed_gets: 1,
            ..Counts::default()
        },
    );
    // A replace uploads its values the same way (the unchanged one finds its blob and touches it);
    // the file written back is touched, not uploaded.
    let mut next = got;
    next.body = noise(OFFLOADED, 96);
    store.update(&mut next).await.unwrap();
    measure(
        env,
        "update of one of two values in blobs",
        Counts {
            gets: 1,
            writes: 1,
            blob_shared_puts: 2,
            blob_touches: 2,
            blob_clock_reads: 1,
            blob_properties: 1,
            ..Counts::default()
        },
    );
    assert!(store.get(("p", "doc")).await.unwrap().unwrap().same(&next));
}

pub async fn a_download_cut_midway_fails_the_read_and_leaves_nothing_behind(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    let mut d = document("doc", 100);
    store.create(&mut d).await.unwrap();
    let etag = stored_etag(env, "doc").await;

    // Reads through a cache, with blob downloads that can be cut.
    let faulty = FaultyBackend::new(env.blobs.clone().expect("a blob backend"));
    let cached: Store<Document> = env
        .cached(ReadCache::default())
        .with_blobs(faulty.clone(), blob_options())
        .store_in::<Document>(&env.table);
    env.reset_counts();
    faulty.fail_next(FaultTarget::BlobGet, FaultTiming::Midway, cut);
    let err = cached.get(("p", "doc")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert!(!matches!(err, Error::Integrity { .. }), "a cut, not damage: {err}");
    assert!(err.to_string().contains("reset"), "the cause is kept: {err}");
    assert_eq!(faulty.pending(), 0, "the download was cut");
    let c = env.counts();
    assert_eq!((c.writes, c.transactions, c.blob_uploads()), (0, 0, 0), "{c:?}");
    // The failed read cached nothing: the next one reads storage, whole.
    env.reset_counts();
    assert!(cached.get(("p", "doc")).await.unwrap().unwrap().same(&d));
    measure(
        env,
        "the read after the cut one",
        Counts {
            gets: 1,
            blob_streamed_gets: 2,
            ..Counts::default()
        },
    );

    // A read-modify-write whose download is cut writes nothing: the row keeps its version.
    let store = env
        .tables
        .clone()
        .with_blobs(faulty.clone(), blob_options())
        .store_in::<Document>(&env.table);
    // The second value's download is cut: the first arrived whole.
    faulty.fail_after(FaultTarget::BlobGet, 1, FaultTiming::Midway, cut);
    env.reset_counts();
    let err = store
        .mutate(("p", "doc"), |doc| doc.title = "changed".into())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert_eq!(faulty.pending(), 0);
    let c = env.counts();
    assert_eq!((c.writes, c.transactions, c.blob_uploads()), (0, 0, 0), "{c:?}");
    assert_eq!(stored_etag(env, "doc").await, etag, "the row is untouched");
    let now = store.get(("p", "doc")).await.unwrap().unwrap();
    assert!(now.same(&d) && now.title == "doc");
    // With the download whole again, the same change goes through.
    let changed = store
        .mutate(("p", "doc"), |doc| doc.title = "changed".into())
        .await
        .unwrap();
    assert_eq!(changed.title, "changed");
    assert!(store.get(("p", "doc")).await.unwrap().unwrap().same(&changed));
}
