//! Large values and files on the blob path: blob requests at their minimum,
//! and failures injected into blob requests.

use std::time::Duration;

use futures::TryStreamExt;
use unified_tables::backend::blob::BlobBackend;
use unified_tables::backend::counting::Counts;
use unified_tables::backend::faulty::{FaultTarget, FaultTiming, FaultyBackend};
use unified_tables::backend::Backend;
use unified_tables::{BlobContent, BlobOptions, Error, ErrorKind, RetryPolicy, Store, Tables, Value};

use crate::model::Document;
use crate::{blob_options, mixed_text, noise, Env};

/// Over the default offload threshold (3,145,728): stored as a blob.
const OFFLOADED: usize = 3_200_000;

/// Asserts the counts since the last reset are exactly `expected`, then resets them.
fn measure(env: &Env, what: &str, expected: Counts) {
    let got = env.counts();
    assert_eq!(got, expected, "{what}: got {got:#?}");
    env.reset_counts();
}

fn busy() -> Error {
    Error::service(503, "ServerBusy", "The server is busy.")
}

/// The blob paths stored under one row's prefix (the table's name and the
/// keys used here need no escaping).
async fn row_blobs(env: &Env, pk: &str, rk: &str) -> Vec<String> {
    let blobs = env.blobs.as_ref().expect("a blob backend");
    let prefix = format!("{}/{pk}/{rk}/", env.table);
    let listing = blobs
        .list(blob_options().container(), &prefix, None, None, 5000)
        .await
        .unwrap();
    assert!(listing.next_marker.is_none());
    listing.items.into_iter().map(|i| i.name).collect()
}

fn body_blob(row: &unified_tables::Row) -> String {
    let json = row
        .get("Body__blob")
        .and_then(Value::as_str)
        .expect("Body is offloaded");
    serde_json::from_str::<serde_json::Value>(json).unwrap()["path"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn raw_body_blob(env: &Env, rk: &str) -> String {
    let row = env.backend().get(&env.table, "p", rk).await.unwrap().expect("main row");
    body_blob(&row)
}

/// A store whose blob requests go through `faulty` (and are still counted).
fn store_over(
    env: &Env,
    faulty: &FaultyBackend<std::sync::Arc<dyn BlobBackend>>,
    options: BlobOptions,
) -> Store<Document> {
    env.tables
        .clone()
        .with_blobs(faulty.clone(), options)
        .store_in::<Document>(&env.table)
}

fn faulty_blobs(env: &Env) -> FaultyBackend<std::sync::Arc<dyn BlobBackend>> {
    FaultyBackend::new(env.blobs.clone().expect("a blob backend"))
}

pub async fn blob_requests_of_offloaded_values_are_at_their_minimum(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    store.ensure_created().await.unwrap();
    env.reset_counts();
    // `create` reads nothing first; a blob adds one upload per value (the container is created on first use).
    let mut d = Document::new("p", "big");
    d.body = noise(OFFLOADED, 60);
    store.create(&mut d).await.unwrap();
    measure(
        env,
        "create with an offloaded value",
        Counts {
            writes: 1,
            blob_containers: 1,
            blob_shared_puts: 1,
            ..Counts::default()
        },
    );
    let mut two = Document::new("p", "two");
    two.body = mixed_text(OFFLOADED / 2 + 100_000, 61); // 3.4 MB of mixed 1- to 4-byte UTF-8
    two.data = noise(OFFLOADED, 62).into_bytes();
    store.create(&mut two).await.unwrap();
    measure(
        env,
        "create with two offloaded values",
        Counts {
            writes: 1,
            blob_shared_puts: 2,
            ..Counts::default()
        },
    );
    // A read adds one download per offloaded value.
    let got = store.get(("p", "big")).await.unwrap().unwrap();
    assert!(got.same(&d));
    measure(
        env,
        "read of one offloaded value",
        Counts {
            gets: 1,
            blob_streamed_gets: 1,
            ..Counts::default()
        },
    );
    assert!(store.get(("p", "two")).await.unwrap().unwrap().same(&two));
    measure(
        env,
        "read of two offloaded values",
        Counts {
            gets: 1,
            blob_streamed_gets: 2,
            ..Counts::default()
        },
    );
    // `update` reads the main row first; the replaced blob is younger than the grace: looked at, kept.
    let old = raw_body_blob(env, "big").await;
    env.reset_counts();
    d.body = noise(OFFLOADED, 63);
    store.update(&mut d).await.unwrap();
    measure(
        env,
        "update of an offloaded value",
        Counts {
            gets: 1,
            writes: 1,
            blob_shared_puts: 1,
            blob_clock_reads: 1,
            blob_properties: 1,
            ..Counts::default()
        },
    );
    assert!(
        env.blobs
            .as_ref()
            .unwrap()
            .properties(blob_options().container(), &old)
            .await
            .unwrap()
            .is_some(),
        "younger than the grace: kept"
    );
    env.reset_counts();
    // The same bytes again: the create-only upload finds the blob and touches it; nothing is released.
    store.upsert(&mut d).await.unwrap();
    measure(
        env,
        "upsert of an unchanged offloaded value",
        Counts {
            gets: 1,
            writes: 1,
            blob_shared_puts: 1,
            blob_touches: 1,
            ..Counts::default()
        },
    );
    // `delete` reads the main row first, then releases its blob (kept: younger than the grace).
    assert!(store.delete(("p", "big")).await.unwrap());
    measure(
        env,
        "delete of an entity with an offloaded value",
        Counts {
            gets: 1,
            writes: 1,
            blob_clock_reads: 1,
            blob_properties: 1,
            ..Counts::default()
        },
    );
}

pub async fn blob_requests_of_files_are_at_their_minimum(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    store.ensure_created().await.unwrap();
    env.reset_counts();
    // Writing a file: one upload and one table write.
    let bytes = noise(5_000_000, 64).into_bytes();
    let mut d = Document::new("p", "file");
    d.attachment = Some(BlobContent::from_bytes(bytes.clone(), "application/pdf"));
    store.create(&mut d).await.unwrap();
    measure(
        env,
        "create with a file",
        Counts {
            writes: 1,
            blob_containers: 1,
            blob_shared_puts: 1,
            ..Counts::default()
        },
    );
    // Reading an entity never downloads a file.
    let mut got = store.get(("p", "file")).await.unwrap().unwrap();
    measure(
        env,
        "read of an entity with a file",
        Counts {
            gets: 1,
            ..Counts::default()
        },
    );
    // `open()` streams it in 4 MiB ranges: 5,000,000 bytes are two.
    let content = got.attachment.clone().unwrap();
    let chunks: Vec<Vec<u8>> = content.open().try_collect().await.unwrap();
    assert_eq!(chunks.concat(), bytes);
    measure(
        env,
        "streaming a 5 MB file",
        Counts {
            blob_range_gets: 2,
            ..Counts::default()
        },
    );
    // `read_all()` reads it in one streamed request, checked on its length before any byte is kept.
    assert_eq!(content.read_all().await.unwrap(), bytes);
    measure(
        env,
        "reading a file whole",
        Counts {
            blob_streamed_gets: 1,
            ..Counts::default()
        },
    );
    // Writing back the entity read keeps the row's own blob: touched, not uploaded again.
    got.title = "renamed".into();
    store.update(&mut got).await.unwrap();
    measure(
        env,
        "update keeping a file",
        Counts {
            gets: 1,
            writes: 1,
            blob_touches: 1,
            ..Counts::default()
        },
    );
    assert_eq!(row_blobs(env, "p", "file").await.len(), 1, "one blob for the row");
}

pub async fn a_blob_upload_that_fails_writes_nothing_to_the_table(env: &Env) {
    let faulty = faulty_blobs(env);
    let store = store_over(env, &faulty, blob_options());
    store.ensure_created().await.unwrap();
    // A create whose upload fails before sending: the table is not written.
    env.reset_counts();
    faulty.fail_next(FaultTarget::BlobPut, FaultTiming::Before, busy);
    let mut d = Document::new("p", "doc");
    d.body = noise(OFFLOADED, 70);
    let err = store.create(&mut d).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Throttled, "{err}");
    let c = env.counts();
    assert_eq!((c.writes, c.transactions), (0, 0), "nothing sent to the table: {c:?}");
    assert!(d.etag.is_none(), "the entity is not stamped with a version");
    assert!(store.get(("p", "doc")).await.unwrap().is_none());
    assert!(env.backend().get(&env.table, "p", "doc").await.unwrap().is_none());
    assert!(row_blobs(env, "p", "doc").await.is_empty(), "nothing uploaded");

    // A replace whose upload fails: the previous version stays, whole.
    store.create(&mut d).await.unwrap();
    let first = raw_body_blob(env, "doc").await;
    let mut next = d.clone();
    next.body = noise(OFFLOADED, 71);
    faulty.fail_next(FaultTarget::BlobPut, FaultTiming::Before, busy);
    assert_eq!(store.update(&mut next).await.unwrap_err().kind(), ErrorKind::Throttled);
    assert!(
        store.get(("p", "doc")).await.unwrap().unwrap().same(&d),
        "the previous version"
    );
    assert_eq!(raw_body_blob(env, "doc").await, first);

    // An upload whose response is lost: the blob is stored, the write fails,
    // the row keeps its version, and the blob is left to the sweep (a failed write never deletes a blob).
    env.reset_counts();
    faulty.fail_next(FaultTarget::BlobPut, FaultTiming::After, busy);
    let mut lost = d.clone();
    lost.body = noise(OFFLOADED, 72);
    assert_eq!(store.update(&mut lost).await.unwrap_err().kind(), ErrorKind::Throttled);
    let c = env.counts();
    assert_eq!((c.writes, c.transactions, c.blob_deletes), (0, 0, 0), "{c:?}");
    assert!(
        store.get(("p", "doc")).await.unwrap().unwrap().same(&d),
        "the previous version"
    );
    assert_eq!(
        row_blobs(env, "p", "doc").await.len(),
        2,
        "the stored and the orphaned blob"
    );

    // A table write failing after the upload leaves the uploaded blob too, and deletes none.
    let table_faults = FaultyBackend::new(env.backend().clone());
    // No retry: the write fails as the service refused it.
    let failing_table = Tables::with_backend(table_faults.clone())
        .with_retry(RetryPolicy::no_retries())
        .with_blobs(env.blobs.clone().unwrap(), blob_options())
        .store_in::<Document>(&env.table);
    table_faults.fail_next(FaultTarget::Write, FaultTiming::Before, busy);
    let mut rejected = d.clone();
    rejected.body = noise(OFFLOADED, 73);
    env.reset_counts();
    assert_eq!(
        failing_table.update(&mut rejected).await.unwrap_err().kind(),
        ErrorKind::Throttled
    );
    assert_eq!(table_faults.pending(), 0);
    let c = env.counts();
    assert_eq!((c.blob_shared_puts, c.blob_deletes), (1, 0), "{c:?}");
    assert!(
        store.get(("p", "doc")).await.unwrap().unwrap().same(&d),
        "the previous version"
    );
    assert_eq!(row_blobs(env, "p", "doc").await.len(), 3);

    // The sweep reclaims both orphans and keeps the referenced blob.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let report = store.sweep_orphan_blobs("p", Duration::ZERO).await.unwrap();
    assert_eq!(report.deleted, 2, "{report:?}");
    assert_eq!(row_blobs(env, "p", "doc").await, vec![first]);
    assert!(store.get(("p", "doc")).await.unwrap().unwrap().same(&d));

    // A failed download fails the read: never partial data.
    faulty.fail_next(FaultTarget::BlobGet, FaultTiming::Before, busy);
    assert_eq!(store.get(("p", "doc")).await.unwrap_err().kind(), ErrorKind::Throttled);
    assert!(store.get(("p", "doc")).await.unwrap().unwrap().same(&d));
    assert_eq!(faulty.pending(), 0);
}

pub async fn a_failed_blob_release_does_not_fail_the_write(env: &Env) {
    let faulty = faulty_blobs(env);
    // No grace: a replaced blob is deleted once it is a second old (Last-Modified has 1 s resolution).
    let store = store_over(env, &faulty, crate::eager_blob_options());
    let mut d = Document::new("p", "doc");
    d.body = noise(OFFLOADED, 80);
    store.create(&mut d).await.unwrap();
    let v1 = raw_body_blob(env, "doc").await;
    tokio::time::sleep(Duration::from_millis(2_100)).await;

    // The delete of the released blob fails before sending: the write succeeds, the blob stays.
    faulty.fail_next(FaultTarget::BlobDelete, FaultTiming::Before, busy);
    d.body = noise(OFFLOADED, 81);
    env.reset_counts();
    store.update(&mut d).await.expect("the release is best-effort");
    assert_eq!(faulty.pending(), 0, "the release tried a delete");
    assert_eq!(env.counts().blob_deletes, 0, "the failed delete was never sent");
    let v2 = raw_body_blob(env, "doc").await;
    assert_ne!(v1, v2);
    assert!(store.get(("p", "doc")).await.unwrap().unwrap().same(&d));
    let mut left = row_blobs(env, "p", "doc").await;
    left.sort();
    let mut both = vec![v1.clone(), v2.clone()];
    both.sort();
    assert_eq!(left, both, "the released blob is left");

    // The clock or the properties unavailable: the write succeeds, nothing is deleted.
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    faulty.fail_next(FaultTarget::BlobClock, FaultTiming::Before, busy);
    let mut v3_doc = d.clone();
    v3_doc.body = noise(OFFLOADED, 82);
    env.reset_counts();
    store.update(&mut v3_doc).await.expect("the release is best-effort");
    assert_eq!(env.counts().blob_deletes, 0);
    let v3 = raw_body_blob(env, "doc").await;
    faulty.fail_next(FaultTarget::BlobProperties, FaultTiming::Before, busy);
    let mut v4_doc = v3_doc.clone();
    v4_doc.body = noise(OFFLOADED, 83);
    env.reset_counts();
    store.update(&mut v4_doc).await.expect("the release is best-effort");
    assert_eq!(env.counts().blob_deletes, 0);
    assert_eq!(faulty.pending(), 0);
    assert_eq!(
        row_blobs(env, "p", "doc").await.len(),
        4,
        "v1..v4: three released, none deleted"
    );

    // The delete applied but its response lost: the write succeeds and the blob is gone.
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    faulty.fail_next(FaultTarget::BlobDelete, FaultTiming::After, busy);
    let mut v5_doc = v4_doc.clone();
    v5_doc.body = noise(OFFLOADED, 84);
    store.update(&mut v5_doc).await.expect("the release is best-effort");
    assert_eq!(faulty.pending(), 0);
    let v5 = raw_body_blob(env, "doc").await;
    assert_eq!(row_blobs(env, "p", "doc").await.len(), 4, "v4's blob deleted");
    assert!(store.get(("p", "doc")).await.unwrap().unwrap().same(&v5_doc));

    // A sweep that cannot delete one orphan still tries the others, and
    // names the one that failed with its error kept whole.
    faulty.fail_next(FaultTarget::BlobDelete, FaultTiming::Before, busy);
    match store.sweep_orphan_blobs("p", Duration::ZERO).await {
        Err(Error::SweepFailed { deleted, failures }) => {
            assert_eq!((deleted, failures.len()), (2, 1), "{failures:?}");
            let prefix = format!("{}/p/doc/", env.table);
            assert!(failures[0].what.starts_with(&prefix), "{}", failures[0].what);
            assert_eq!(failures[0].error.kind(), ErrorKind::Throttled, "{}", failures[0].error);
        }
        other => panic!("expected SweepFailed, got {other:?}"),
    }

    // The next sweep reclaims what is left; the referenced blob stays.
    let report = store.sweep_orphan_blobs("p", Duration::ZERO).await.unwrap();
    assert_eq!(report.deleted, 1, "{report:?}");
    assert_eq!(row_blobs(env, "p", "doc").await, vec![v5]);
    assert!(!row_blobs(env, "p", "doc").await.contains(&v3));
    assert!(store.get(("p", "doc")).await.unwrap().unwrap().same(&v5_doc));
}
