//! A registration's e-mail address under failure: a user insert whose
//! answer times out and that lands after the store read it back, a double
//! submit of one address change, and the operator's repair during a
//! registration. Each ends with one holder of the address, found by
//! `find_by_email`. (A move back racing the applier of the earlier move is
//! in the reservations matrix, `reservations`.)

use std::sync::Arc;

use unified_tables::admin::{Admin, FsckOptions};
use unified_tables::backend::Backend;
use unified_tables::web::identity::{IdentityError, NewUser};
use unified_tables::Tables;

use super::identity::{identity_options, identity_over};
use super::reservations::{Fault, Script};
use crate::gate::{GateBackend, Point};
use crate::Env;

pub async fn identity_a_registration_keeps_its_email_through_a_timeout_a_double_submit_and_a_repair(env: &Env) {
    let raw: Arc<dyn Backend> = Arc::new(env.backend().clone());
    let script = Script::new(raw.clone());
    let tables = Tables::with_backend(script.clone()).without_cache();
    let options = identity_options();
    let identity = identity_over(&tables, options.clone());
    let clean = identity_over(&env.tables.clone().without_cache(), options.clone());

    // The user insert (the second write: the reservation is the first) is answered
    // 500 `OperationTimedOut` and lands only after the store's read-back: whatever the
    // call says, the address stays reserved for the user that holds it.
    script.arm(Some((1, Fault::Late)), usize::MAX, Box::pin(async {}));
    let said = script
        .run(identity.register(NewUser::new("tim").email("tim@example.com")))
        .await;
    let seen = script.finish().await;
    assert!(seen.fired, "the user insert was faulted");
    let tim = clean
        .find_by_name("tim")
        .await
        .unwrap()
        .expect("the late insert landed");
    if let Ok(user) = &said {
        assert_eq!(user.id(), tim.id());
    }
    let second = clean.register(NewUser::new("tom").email("tim@example.com")).await;
    assert!(
        matches!(second, Err(IdentityError::DuplicateEmail)),
        "the address of a user whose insert landed late is still reserved: {second:?}"
    );
    assert_eq!(
        clean
            .find_by_email("tim@example.com")
            .await
            .unwrap()
            .map(|u| u.id().clone()),
        Some(tim.id().clone())
    );

    // A double submit: two changes of one user to one new address, both held after
    // reserving it, then let go one after the other.
    let gate = GateBackend::new(env.backend().clone());
    let gated = identity_over(&Tables::with_backend(gate.clone()).without_cache(), options.clone());
    let ann = clean
        .register(NewUser::new("ann").email("ann@example.com"))
        .await
        .unwrap();
    let holds: Vec<_> = (0..2).map(|_| gate.arm(Point::AfterWrite)).collect();
    let calls: Vec<_> = (0..2)
        .map(|_| {
            let (gated, id) = (gated.clone(), ann.id().clone());
            tokio::spawn(async move { gated.set_email(&id, Some("new@example.com")).await })
        })
        .collect();
    let mut holds = holds.into_iter();
    let (first, second) = (holds.next().unwrap(), holds.next().unwrap());
    first.reached.await.expect("a reservation");
    second.reached.await.expect("the other reservation");
    let _ = first.release.send(());
    let _ = second.release.send(());
    let mut told_ok = 0;
    for call in calls {
        match call.await.unwrap() {
            Ok(user) => {
                told_ok += 1;
                assert_eq!(user.email(), Some("new@example.com"));
            }
            Err(e) => assert!(
                matches!(e, IdentityError::Contended),
                "a double submit loses only to itself: {e:?}"
            ),
        }
    }
    assert!(told_ok >= 1, "one of the two changes is applied");
    assert_eq!(
        clean
            .find_by_email("new@example.com")
            .await
            .unwrap()
            .map(|u| u.id().clone()),
        Some(ann.id().clone()),
        "the user that holds the new address is found by it"
    );
    assert_eq!(clean.find_by_email("ann@example.com").await.unwrap(), None);
    let taken = clean.register(NewUser::new("bob").email("new@example.com")).await;
    assert!(matches!(taken, Err(IdentityError::DuplicateEmail)), "{taken:?}");

    // The operator's repair runs while a registration holds its reservation and has not
    // written its user yet: the reservation is in flight, not drift, and stays.
    let hold = gate.arm(Point::AfterWrite);
    let registering = {
        let gated = gated.clone();
        tokio::spawn(async move { gated.register(NewUser::new("cat").email("cat@example.com")).await })
    };
    hold.reached.await.expect("the reservation is written");
    let repair = FsckOptions {
        repair: true,
        ..FsckOptions::default()
    };
    Admin::new(&env.tables, &options.tables().users)
        .unwrap()
        .fsck(repair)
        .await
        .unwrap();
    drop(hold.release);
    let cat = registering.await.unwrap().expect("the registration goes on");
    assert_eq!(
        clean
            .find_by_email("cat@example.com")
            .await
            .unwrap()
            .map(|u| u.id().clone()),
        Some(cat.id().clone())
    );
    let again = clean.register(NewUser::new("cal").email("cat@example.com")).await;
    assert!(matches!(again, Err(IdentityError::DuplicateEmail)), "{again:?}");
}
