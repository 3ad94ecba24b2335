//! Blob conformance scenarios of leases and conditional reads, run with the
//! other blob scenarios on both backends (see [`crate::blob_scenarios`]).
//!
//! A lease that runs out by itself takes 15 seconds of the service's clock;
//! that case is in the lock scenarios (`scenarios::locks`), which move the
//! in-memory clock instead of sleeping. Here a break of one second is the
//! only wait.

use std::time::Duration;

use unified_tables::backend::blob::{
    BlobBackend, DeleteOptions, GetOptions, LeaseAction, LeaseDuration, PutOptions, ReadCondition,
};
use unified_tables::{Error, Guid};

fn code<T: std::fmt::Debug>(result: Result<T, Error>) -> (u16, String) {
    match result {
        Err(Error::Service { status, code, .. }) => (status, code),
        other => panic!("expected a service error, got {other:?}"),
    }
}

fn c(status: u16, code: &str) -> (u16, String) {
    (status, code.to_owned())
}

async fn acquire(
    backend: &dyn BlobBackend,
    container: &str,
    duration: LeaseDuration,
    proposed: Option<Guid>,
) -> Result<Guid, Error> {
    let answer = backend
        .lease(container, "k", LeaseAction::Acquire { duration, proposed })
        .await?;
    Ok(answer.lease.expect("an acquired lease has an id"))
}

async fn write(backend: &dyn BlobBackend, container: &str, lease: Option<Guid>) -> Result<(), Error> {
    let options = PutOptions {
        lease,
        ..PutOptions::default()
    };
    backend.put(container, "k", b"w".to_vec(), options).await.map(|_| ())
}

async fn setup(backend: &dyn BlobBackend, container: &str) {
    backend.create_container(container).await.unwrap();
    backend
        .put(container, "k", b"v".to_vec(), PutOptions::default())
        .await
        .unwrap();
}

/// Acquire takes a proposed id (or makes one up), again with the same id
/// succeeds, and another id is 409 `LeaseAlreadyPresent`; renew and change
/// need the active id (409 `LeaseIdMismatchWithLeaseOperation`); release ends
/// the lease; breaking a blob with no lease is 409
/// `LeaseNotPresentWithLeaseOperation`; a missing blob is 404. No lease
/// action changes the blob's ETag.
pub async fn a_lease_is_acquired_renewed_changed_and_released(backend: &dyn BlobBackend, container: &str) {
    setup(backend, container).await;
    let before = backend.properties(container, "k").await.unwrap().unwrap();
    let a = Guid::new_random();
    let fixed = LeaseDuration::Seconds(15);
    assert_eq!(acquire(backend, container, fixed, Some(a)).await.unwrap(), a);
    assert_eq!(
        acquire(backend, container, LeaseDuration::Seconds(60), Some(a))
            .await
            .unwrap(),
        a,
        "the holder may acquire again"
    );
    assert_eq!(
        code(acquire(backend, container, fixed, None).await),
        c(409, "LeaseAlreadyPresent")
    );
    assert_eq!(
        code(acquire(backend, container, fixed, Some(Guid::new_random())).await),
        c(409, "LeaseAlreadyPresent")
    );

    let renewed = backend
        .lease(container, "k", LeaseAction::Renew { lease: a })
        .await
        .unwrap();
    assert_eq!(renewed.lease, Some(a));
    let stranger = Guid::new_random();
    assert_eq!(
        code(
            backend
                .lease(container, "k", LeaseAction::Renew { lease: stranger })
                .await
        ),
        c(409, "LeaseIdMismatchWithLeaseOperation")
    );

    let b = Guid::new_random();
    let changed = backend
        .lease(container, "k", LeaseAction::Change { lease: a, proposed: b })
        .await
        .unwrap();
    assert_eq!(changed.lease, Some(b));
    assert_eq!(
        code(
            backend
                .lease(
                    container,
                    "k",
                    LeaseAction::Change {
                        lease: stranger,
                        proposed: Guid::new_random()
                    }
                )
                .await
        ),
        c(409, "LeaseIdMismatchWithLeaseOperation")
    );
    assert_eq!(
        code(backend.lease(container, "k", LeaseAction::Release { lease: a }).await),
        c(409, "LeaseIdMismatchWithLeaseOperation"),
        "the old id is gone"
    );
    backend
        .lease(container, "k", LeaseAction::Release { lease: b })
        .await
        .unwrap();

    // Released: anyone may acquire at once; the service makes up an id.
    let made_up = acquire(backend, container, LeaseDuration::Infinite, None)
        .await
        .unwrap();
    assert!(made_up != a && made_up != b);
    backend
        .lease(container, "k", LeaseAction::Release { lease: made_up })
        .await
        .unwrap();
    assert_eq!(
        code(backend.lease(container, "k", LeaseAction::Break { period: None }).await),
        c(409, "LeaseNotPresentWithLeaseOperation")
    );
    assert_eq!(
        code(
            backend
                .lease(container, "k", LeaseAction::Change { lease: b, proposed: a })
                .await
        ),
        c(409, "LeaseNotPresentWithLeaseOperation")
    );
    assert_eq!(
        backend.properties(container, "k").await.unwrap().unwrap().etag,
        before.etag,
        "lease actions leave the ETag"
    );

    let missing = backend
        .lease(
            container,
            "missing",
            LeaseAction::Acquire {
                duration: fixed,
                proposed: None,
            },
        )
        .await;
    assert_eq!(code(missing), c(404, "BlobNotFound"));
}

/// While a blob is leased, a put, a delete or a touch without the id is 412
/// `LeaseIdMissing` and with another id 412 `LeaseIdMismatchWithBlobOperation`;
/// a write with the id keeps the lease; reads need no id. Once the lease is
/// released, a write naming it is 412 `LeaseNotPresentWithBlobOperation`.
pub async fn writes_and_deletes_of_a_leased_blob_need_its_lease_id(backend: &dyn BlobBackend, container: &str) {
    setup(backend, container).await;
    let a = acquire(backend, container, LeaseDuration::Seconds(60), None)
        .await
        .unwrap();
    let stranger = Guid::new_random();
    assert_eq!(code(write(backend, container, None).await), c(412, "LeaseIdMissing"));
    assert_eq!(
        code(write(backend, container, Some(stranger)).await),
        c(412, "LeaseIdMismatchWithBlobOperation")
    );
    assert_eq!(
        code(backend.delete(container, "k", Default::default()).await),
        c(412, "LeaseIdMissing")
    );
    let wrong = DeleteOptions {
        lease: Some(stranger),
        ..DeleteOptions::default()
    };
    assert_eq!(
        code(backend.delete_with(container, "k", wrong).await),
        c(412, "LeaseIdMismatchWithBlobOperation")
    );
    assert_eq!(code(backend.touch(container, "k").await), c(412, "LeaseIdMissing"));
    let (_, bytes) = backend.get(container, "k", None).await.unwrap().unwrap();
    assert_eq!(bytes, b"v", "nothing was written; reads need no lease");

    write(backend, container, Some(a)).await.unwrap();
    assert_eq!(
        code(write(backend, container, None).await),
        c(412, "LeaseIdMissing"),
        "a write with the id keeps the lease"
    );
    backend
        .lease(container, "k", LeaseAction::Release { lease: a })
        .await
        .unwrap();
    assert_eq!(
        code(write(backend, container, Some(a)).await),
        c(412, "LeaseNotPresentWithBlobOperation")
    );
    write(backend, container, None).await.unwrap();

    let a = acquire(backend, container, LeaseDuration::Infinite, None)
        .await
        .unwrap();
    let with_lease = DeleteOptions {
        lease: Some(a),
        ..DeleteOptions::default()
    };
    assert!(backend.delete_with(container, "k", with_lease).await.unwrap());
    assert!(backend.properties(container, "k").await.unwrap().is_none());
}

/// A break needs no id. With period 0 an infinite lease is broken at once and
/// another holder acquires it; the old id no longer renews. With a period, the
/// lease is breaking until it ends: writes still need the id, nobody can
/// acquire, and renewal is 409 `LeaseIsBrokenAndCannotBeRenewed`.
pub async fn a_break_hands_the_lease_over(backend: &dyn BlobBackend, container: &str) {
    setup(backend, container).await;
    let a = acquire(backend, container, LeaseDuration::Infinite, None)
        .await
        .unwrap();
    let broken = backend
        .lease(container, "k", LeaseAction::Break { period: Some(0) })
        .await
        .unwrap();
    assert_eq!(broken.break_seconds, Some(0));
    assert_eq!(
        code(backend.lease(container, "k", LeaseAction::Renew { lease: a }).await),
        c(409, "LeaseIsBrokenAndCannotBeRenewed")
    );
    let b = acquire(backend, container, LeaseDuration::Seconds(60), None)
        .await
        .unwrap();
    assert_eq!(
        code(backend.lease(container, "k", LeaseAction::Renew { lease: a }).await),
        c(409, "LeaseIdMismatchWithLeaseOperation")
    );
    assert_eq!(
        code(write(backend, container, Some(a)).await),
        c(412, "LeaseIdMismatchWithBlobOperation")
    );

    let breaking = backend
        .lease(container, "k", LeaseAction::Break { period: Some(1) })
        .await
        .unwrap();
    assert_eq!(breaking.break_seconds, Some(1));
    assert_eq!(code(write(backend, container, None).await), c(412, "LeaseIdMissing"));
    write(backend, container, Some(b)).await.unwrap();
    assert_eq!(
        code(acquire(backend, container, LeaseDuration::Seconds(15), None).await),
        c(409, "LeaseAlreadyPresent")
    );
    assert_eq!(
        code(backend.lease(container, "k", LeaseAction::Renew { lease: b }).await),
        c(409, "LeaseIsBrokenAndCannotBeRenewed")
    );
    tokio::time::sleep(Duration::from_millis(1600)).await;
    // Broken: writes need no id, and a new holder acquires.
    write(backend, container, None).await.unwrap();
    let c2 = acquire(backend, container, LeaseDuration::Seconds(15), None)
        .await
        .unwrap();
    assert_ne!(c2, b);
}

/// Durations other than 15–60 s or infinite, and break periods over 60 s,
/// are 400 `InvalidHeaderValue`; nothing changes.
pub async fn lease_durations_and_break_periods_out_of_range_are_400(backend: &dyn BlobBackend, container: &str) {
    setup(backend, container).await;
    for seconds in [0, 14, 61] {
        assert_eq!(
            code(acquire(backend, container, LeaseDuration::Seconds(seconds), None).await),
            c(400, "InvalidHeaderValue"),
            "{seconds} s"
        );
    }
    write(backend, container, None).await.unwrap();
    let a = acquire(backend, container, LeaseDuration::Seconds(30), None)
        .await
        .unwrap();
    assert_eq!(
        code(
            backend
                .lease(container, "k", LeaseAction::Break { period: Some(61) })
                .await
        ),
        c(400, "InvalidHeaderValue")
    );
    backend
        .lease(container, "k", LeaseAction::Renew { lease: a })
        .await
        .expect("the refused break left the lease");
}

/// A read's `If-None-Match` with the current ETag is 304 (also for a range),
/// with an older one it reads; `If-Match` with an older ETag is 412
/// `ConditionNotMet`, also on a missing blob, which reads as `None` under
/// `If-None-Match`; `If-None-Match: *` is 400 `UnsatisfiableCondition`.
pub async fn conditional_reads_answer_304_and_412_as_the_service_does(backend: &dyn BlobBackend, container: &str) {
    setup(backend, container).await;
    let old = backend.properties(container, "k").await.unwrap().unwrap().etag;
    write(backend, container, None).await.unwrap();
    let current = backend.properties(container, "k").await.unwrap().unwrap().etag;
    let read = |condition: ReadCondition, range: Option<std::ops::Range<u64>>| {
        backend.get_with(container, "k", GetOptions { range, condition })
    };

    let not_modified = read(ReadCondition::IfNoneMatch(current.clone()), None).await;
    assert_eq!(code(not_modified).0, 304);
    assert_eq!(
        code(read(ReadCondition::IfNoneMatch(current.clone()), Some(0..1)).await).0,
        304
    );
    let (props, bytes) = read(ReadCondition::IfNoneMatch(old.clone()), None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((props.etag.as_str(), bytes.as_slice()), (current.as_str(), &b"w"[..]));

    assert_eq!(
        code(read(ReadCondition::IfMatch(old.clone()), None).await),
        c(412, "ConditionNotMet")
    );
    let (_, bytes) = read(ReadCondition::IfMatch(current.clone()), Some(0..1))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(bytes, b"w");

    let read_missing = |condition: ReadCondition| {
        let options = GetOptions {
            condition,
            ..GetOptions::default()
        };
        backend.get_with(container, "missing", options)
    };
    assert!(read_missing(ReadCondition::IfNoneMatch(current.clone()))
        .await
        .unwrap()
        .is_none());
    assert_eq!(
        code(read_missing(ReadCondition::IfMatch(current.clone())).await),
        c(412, "ConditionNotMet")
    );
    assert_eq!(
        code(read(ReadCondition::IfNoneMatch("*".into()), None).await),
        c(400, "UnsatisfiableCondition")
    );
}
