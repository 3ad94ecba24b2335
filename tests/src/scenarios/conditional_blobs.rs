//! `db.blobs(container)`: conditional blob reads and writes refuse exactly
//! what the service refuses, as the crate's semantic errors.

use std::time::Duration;

use unified_tables::layout::LOCK_CONTAINER;
use unified_tables::{DateTime, Error, ErrorKind, Revalidated};

use crate::{blob_options, Env};

/// A container of the user's no other scenario uses.
fn container(env: &Env) -> String {
    format!("docs-{}", env.table.to_lowercase())
}

fn earlier(at: DateTime, seconds: i64) -> DateTime {
    DateTime::from_ticks(at.ticks() - seconds * 10_000_000).unwrap()
}

/// Create-only, If-Match and If-Unmodified-Since puts and If-Match deletes
/// refuse stale and missing versions with `BlobAlreadyExists` (409) or
/// `BlobConditionNotMet` (412), and nothing changes on a refusal; the
/// matching version goes through.
pub async fn conditional_blob_writes_refuse_exactly_what_the_service_refuses(env: &Env) {
    let docs = env.tables.blobs(&container(env));
    let v1 = docs.create("a.txt", b"v1".to_vec()).await.unwrap();
    let exists = docs.create("a.txt", b"dup".to_vec()).await.unwrap_err();
    assert!(
        matches!(&exists, Error::BlobAlreadyExists { name, .. } if name == "a.txt"),
        "{exists}"
    );
    assert_eq!(exists.kind(), ErrorKind::AlreadyExists);

    let v2 = docs.replace("a.txt", b"v2".to_vec(), &v1.etag).await.unwrap();
    assert_ne!(v2.etag, v1.etag);
    let stale = docs.replace("a.txt", b"stale".to_vec(), &v1.etag).await.unwrap_err();
    assert!(matches!(stale, Error::BlobConditionNotMet { .. }), "{stale}");
    assert_eq!(stale.kind(), ErrorKind::PreconditionFailed);
    let missing = docs.replace("none.txt", b"x".to_vec(), &v1.etag).await.unwrap_err();
    assert!(matches!(missing, Error::BlobConditionNotMet { .. }), "{missing}");
    assert!(
        docs.get("none.txt").await.unwrap().is_none(),
        "a refused replace creates nothing"
    );

    // If-Unmodified-Since compares whole seconds with Last-Modified.
    let before = earlier(v2.last_modified, 1);
    let modified = docs.put_if_unmodified_since("a.txt", b"late".to_vec(), before).await;
    assert!(
        matches!(modified, Err(Error::BlobConditionNotMet { .. })),
        "{modified:?}"
    );
    let v3 = docs
        .put_if_unmodified_since("a.txt", b"v3".to_vec(), v2.last_modified)
        .await
        .unwrap();
    docs.put_if_unmodified_since("b.txt", b"new".to_vec(), before)
        .await
        .expect("a missing blob is created");

    let deleted = docs.delete_if_match("a.txt", &v2.etag).await;
    assert!(matches!(deleted, Err(Error::BlobConditionNotMet { .. })), "{deleted:?}");
    let read = docs.get("a.txt").await.unwrap().unwrap();
    assert_eq!((read.bytes.as_slice(), read.etag()), (&b"v3"[..], v3.etag.as_str()));
    let gone = docs.delete_if_match("none.txt", &v3.etag).await;
    assert!(matches!(gone, Err(Error::BlobConditionNotMet { .. })), "{gone:?}");
    assert!(docs.delete_if_match("a.txt", &v3.etag).await.unwrap());
    assert!(!docs.delete("a.txt").await.unwrap());
    assert!(docs.delete("b.txt").await.unwrap());
}

/// A read with the ETag of the stored version is `Unchanged` (the service's
/// 304); after a write it is `Changed` with the new bytes and ETag; a
/// missing blob is `Missing`.
pub async fn conditional_blob_reads_revalidate_a_cached_copy(env: &Env) {
    let docs = env.tables.blobs(&container(env));
    let stored = docs.put("c.json", b"{}".to_vec()).await.unwrap();
    let cached = docs.get("c.json").await.unwrap().unwrap();
    assert_eq!(cached.etag(), stored.etag);
    assert_eq!(
        docs.get_if_changed("c.json", cached.etag()).await.unwrap(),
        Revalidated::Unchanged
    );
    let newer = docs.put("c.json", b"{\"a\":1}".to_vec()).await.unwrap();
    match docs.get_if_changed("c.json", cached.etag()).await.unwrap() {
        Revalidated::Changed(blob) => {
            assert_eq!(
                (blob.bytes.as_slice(), blob.etag()),
                (&b"{\"a\":1}"[..], newer.etag.as_str())
            )
        }
        other => panic!("expected the new version, got {other:?}"),
    }
    assert!(docs.delete("c.json").await.unwrap());
    assert_eq!(
        docs.get_if_changed("c.json", &newer.etag).await.unwrap(),
        Revalidated::Missing
    );
}

/// A write to a blob held under a lease (a lock's blob) is `BlobLeased`,
/// and the library's own container of large values is refused.
pub async fn writes_to_a_leased_blob_and_to_the_values_container_are_refused(env: &Env) {
    let name = format!("{}/held", env.table);
    let guard = env.tables.lock(&name).acquire(Duration::from_secs(15)).await.unwrap();
    let locks = env.tables.blobs(LOCK_CONTAINER);
    let held = locks.get(&name).await.unwrap().expect("the lock's blob");
    let refused = locks.put(&name, b"0".to_vec()).await.unwrap_err();
    assert!(
        matches!(&refused, Error::BlobLeased { code, .. } if code == "LeaseIdMissing"),
        "{refused}"
    );
    assert_eq!(refused.kind(), ErrorKind::Busy);
    let refused = locks.delete(&name).await.unwrap_err();
    assert!(matches!(refused, Error::BlobLeased { .. }), "{refused}");
    assert_eq!(locks.get(&name).await.unwrap().unwrap(), held, "nothing changed");
    guard.release().await.unwrap();

    let values = env.tables.blobs(blob_options().container());
    env.reset_counts();
    let refused = values.put("x", b"x".to_vec()).await.unwrap_err();
    assert!(matches!(refused, Error::Config { .. }), "{refused}");
    assert_eq!(env.counts().blob_requests(), 0);
}
