//! Identity under concurrency: racing registrations, email reservations
//! after a crash between steps, and concurrent failed logins. Every race is
//! forced: the racing requests are held at the racy point by a gating
//! backend until all of them have reached it.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use unified_tables::backend::counting::CountingBackend;
use unified_tables::backend::Backend;
use unified_tables::web::identity::{
    Credentials, Identity, IdentityError, IdentityResult, Lockout, NewUser, SignIn, User,
};
use unified_tables::Tables;

use super::identity::{identity_options, identity_over};
use crate::gate::{GateBackend, Hold, Point};
use crate::Env;

type Gate = GateBackend<CountingBackend<Arc<dyn Backend>>>;

fn gated(env: &Env) -> (Gate, Tables) {
    let gate = GateBackend::new(env.backend().clone());
    let tables = Tables::with_backend(gate.clone()).without_cache();
    (gate, tables)
}

fn register(identity: &Identity, new: NewUser) -> JoinHandle<IdentityResult<User>> {
    let identity = identity.clone();
    tokio::spawn(async move { identity.register(new).await })
}

async fn reached(holds: &mut [Hold]) {
    for h in holds.iter_mut() {
        (&mut h.reached).await.expect("the request reaches the gate");
    }
}

fn release(holds: Vec<Hold>) {
    for h in holds {
        let _ = h.release.send(());
    }
}

/// Of two results, the one that succeeded and the error of the other.
fn one_winner(a: IdentityResult<User>, b: IdentityResult<User>) -> (User, IdentityError) {
    match (a, b) {
        (Ok(u), Err(e)) | (Err(e), Ok(u)) => (u, e),
        other => panic!("expected exactly one winner, got {other:?}"),
    }
}

pub async fn identity_racing_registrations_of_one_name_make_one_user(env: &Env) {
    let (gate, tables) = gated(env);
    let identity = identity_over(&tables, identity_options());

    // Both have checked the name is free and hashed their password: both are about to create the row.
    let mut holds = vec![gate.arm(Point::BeforeWrite), gate.arm(Point::BeforeWrite)];
    let first = register(&identity, NewUser::new("racer").password("first"));
    let second = register(&identity, NewUser::new("RACER").password("second"));
    reached(&mut holds).await;
    release(holds);
    let (winner, loser) = one_winner(first.await.unwrap(), second.await.unwrap());
    assert!(matches!(loser, IdentityError::DuplicateUserName), "{loser}");
    assert_eq!(identity.find_by_name("racer").await.unwrap().unwrap().id(), winner.id());
    let (right, wrong) = match winner.user_name() {
        "racer" => ("first", "second"),
        _ => ("second", "first"),
    };
    assert!(matches!(
        identity.sign_in(&Credentials::new("racer", right)).await.unwrap(),
        SignIn::Succeeded(_)
    ));
    assert_eq!(
        identity.sign_in(&Credentials::new("racer", wrong)).await.unwrap(),
        SignIn::Failed
    );

    // With emails: the reservations (two partitions) are held, then the two creates of the user row.
    let mut holds: Vec<Hold> = (0..2).map(|_| gate.arm(Point::BeforeWrite)).collect();
    let mut creates: Vec<Hold> = (0..2).map(|_| gate.arm(Point::BeforeWrite)).collect();
    let first = register(&identity, NewUser::new("twin").email("one@example.com").password("pw"));
    let second = register(&identity, NewUser::new("Twin").email("two@example.com").password("pw"));
    reached(&mut holds).await;
    release(holds);
    reached(&mut creates).await;
    release(creates);
    let (winner, loser) = one_winner(first.await.unwrap(), second.await.unwrap());
    assert!(matches!(loser, IdentityError::DuplicateUserName), "{loser}");
    let lost_email = match winner.email() {
        Some("one@example.com") => "two@example.com",
        _ => "one@example.com",
    };
    assert_eq!(identity.find_by_name("twin").await.unwrap().unwrap().id(), winner.id());
    assert_eq!(identity.find_by_email(lost_email).await.unwrap(), None);
    // The loser released its reservation: the address is free at once.
    identity
        .register(NewUser::new("third").email(lost_email))
        .await
        .unwrap();

    // Two names, one email: both reservation creates are held; one wins the address.
    let mut holds: Vec<Hold> = (0..2).map(|_| gate.arm(Point::BeforeWrite)).collect();
    let first = register(&identity, NewUser::new("kim").email("shared@example.com"));
    let second = register(&identity, NewUser::new("lee").email("Shared@Example.com"));
    reached(&mut holds).await;
    release(holds);
    let (winner, loser) = one_winner(first.await.unwrap(), second.await.unwrap());
    assert!(matches!(loser, IdentityError::DuplicateEmail), "{loser}");
    assert_eq!(
        identity
            .find_by_email("shared@example.com")
            .await
            .unwrap()
            .unwrap()
            .id(),
        winner.id()
    );
    let other = if winner.user_name() == "kim" { "lee" } else { "kim" };
    assert_eq!(
        identity.find_by_name(other).await.unwrap(),
        None,
        "the loser made no user"
    );
}

const TIMEOUT: Duration = Duration::from_secs(3);

async fn past_the_timeout() {
    tokio::time::sleep(TIMEOUT + Duration::from_millis(300)).await;
}

pub async fn identity_a_registration_that_stops_between_steps_blocks_no_email_for_good(env: &Env) {
    let (gate, tables) = gated(env);
    let options = identity_options().reservation_timeout(TIMEOUT).unwrap();
    let identity = identity_over(&tables, options);

    // Stopped after reserving, before the user row: the address is blocked for the timeout only.
    let reserve = gate.arm(Point::BeforeWrite);
    let mut create = vec![gate.arm(Point::BeforeWrite)];
    let crashed = register(&identity, NewUser::new("ann").email("ann@example.com"));
    (reserve.reached).await.unwrap();
    let _ = reserve.release.send(());
    reached(&mut create).await;
    crashed.abort();
    assert!(crashed.await.unwrap_err().is_cancelled());
    drop(create);
    let blocked = identity.register(NewUser::new("bea").email("ann@example.com")).await;
    assert!(
        matches!(blocked, Err(IdentityError::DuplicateEmail)),
        "in progress: {blocked:?}"
    );
    assert_eq!(identity.find_by_email("ann@example.com").await.unwrap(), None);
    assert_eq!(identity.find_by_name("ann").await.unwrap(), None);
    past_the_timeout().await;
    let bea = identity
        .register(NewUser::new("bea").email("ann@example.com"))
        .await
        .unwrap();
    assert_eq!(
        identity.find_by_email("ann@example.com").await.unwrap().unwrap().id(),
        bea.id()
    );

    // Stopped after the user row, before confirming: the user holds the address for good.
    let mut steps: Vec<Hold> = (0..2).map(|_| gate.arm(Point::BeforeWrite)).collect();
    let mut confirm = vec![gate.arm(Point::BeforeWrite)];
    let crashed = register(&identity, NewUser::new("cy").email("cy@example.com"));
    for step in steps.drain(..) {
        (step.reached).await.expect("the step is reached");
        let _ = step.release.send(());
    }
    reached(&mut confirm).await;
    crashed.abort();
    assert!(crashed.await.unwrap_err().is_cancelled());
    drop(confirm);
    past_the_timeout().await;
    let cy = identity
        .find_by_name("cy")
        .await
        .unwrap()
        .expect("the user row was written");
    assert_eq!(
        identity.find_by_email("cy@example.com").await.unwrap().unwrap().id(),
        cy.id()
    );
    let refused = identity.register(NewUser::new("dee").email("cy@example.com")).await;
    assert!(matches!(refused, Err(IdentityError::DuplicateEmail)), "{refused:?}");
}

pub async fn identity_a_stalled_registration_overtaken_on_its_email_stores_no_user(env: &Env) {
    let (gate, tables) = gated(env);
    let options = identity_options().reservation_timeout(TIMEOUT).unwrap();
    let identity = identity_over(&tables, options);

    // Stalled after its reservation was stored, past the timeout: it must not write its user.
    let stalled = gate.arm(Point::AfterWrite);
    let slow = register(&identity, NewUser::new("slow").email("race@example.com"));
    (stalled.reached).await.unwrap();
    past_the_timeout().await;
    let fast = identity
        .register(NewUser::new("fast").email("race@example.com"))
        .await
        .unwrap();
    let _ = stalled.release.send(());
    let slow = slow.await.unwrap();
    assert!(matches!(slow, Err(IdentityError::Contended)), "{slow:?}");
    assert_eq!(identity.find_by_name("slow").await.unwrap(), None);
    assert_eq!(
        identity.find_by_email("race@example.com").await.unwrap().unwrap().id(),
        fast.id()
    );

    // Stalled just before writing its user (its reservation was fresh then): it writes the
    // user, finds its reservation taken over when it confirms, and removes its user again.
    let reserve = gate.arm(Point::BeforeWrite);
    let create = gate.arm(Point::BeforeWrite);
    let slow = register(&identity, NewUser::new("slower").email("race2@example.com"));
    (reserve.reached).await.unwrap();
    let _ = reserve.release.send(());
    (create.reached).await.unwrap();
    past_the_timeout().await;
    let faster = identity
        .register(NewUser::new("faster").email("race2@example.com"))
        .await
        .unwrap();
    let _ = create.release.send(());
    let slow = slow.await.unwrap();
    assert!(matches!(slow, Err(IdentityError::DuplicateEmail)), "{slow:?}");
    assert_eq!(
        identity.find_by_name("slower").await.unwrap(),
        None,
        "its user was removed"
    );
    assert_eq!(
        identity.find_by_email("race2@example.com").await.unwrap().unwrap().id(),
        faster.id()
    );
}

fn sign_in(identity: &Identity, password: &str) -> JoinHandle<IdentityResult<SignIn>> {
    let identity = identity.clone();
    let creds = Credentials::new("target", password);
    tokio::spawn(async move { identity.sign_in(&creds).await })
}

pub async fn identity_concurrent_failed_logins_count_every_attempt(env: &Env) {
    let (gate, tables) = gated(env);
    let lockout = Lockout::new(10, Duration::from_secs(60)).unwrap();
    let identity = identity_over(&tables, identity_options().lockout(lockout));
    let user = identity
        .register(NewUser::new("target").password("right"))
        .await
        .unwrap();

    // Three failures, each held after reading the count and before writing it.
    let mut holds: Vec<Hold> = (0..3).map(|_| gate.arm(Point::BeforeWrite)).collect();
    let tasks: Vec<_> = (0..3).map(|_| sign_in(&identity, "wrong")).collect();
    reached(&mut holds).await;
    release(holds);
    for t in tasks {
        assert_eq!(t.await.unwrap().unwrap(), SignIn::Failed);
    }
    let counted = identity.user(user.id()).await.unwrap().unwrap();
    assert_eq!(counted.access_failed_count(), 3, "every concurrent failure is counted");
    assert_eq!(counted.lockout_end(), None);

    // A success sets the count back to zero.
    assert!(matches!(
        sign_in(&identity, "right").await.unwrap().unwrap(),
        SignIn::Succeeded(_)
    ));
    assert_eq!(
        identity.user(user.id()).await.unwrap().unwrap().access_failed_count(),
        0
    );

    // Concurrent failures that reach the maximum together lock the user out.
    let lockout = Lockout::new(3, Duration::from_secs(60)).unwrap();
    let strict = identity_over(&tables, identity.options().clone().lockout(lockout));
    let mut holds: Vec<Hold> = (0..3).map(|_| gate.arm(Point::BeforeWrite)).collect();
    let tasks: Vec<_> = (0..3).map(|_| sign_in(&strict, "wrong")).collect();
    reached(&mut holds).await;
    release(holds);
    for t in tasks {
        assert_eq!(t.await.unwrap().unwrap(), SignIn::Failed);
    }
    let locked = strict.user(user.id()).await.unwrap().unwrap();
    assert!(
        locked.lockout_end().is_some(),
        "the third concurrent failure locked the user out"
    );
    assert_eq!(
        locked.access_failed_count(),
        0,
        "the count starts again after a lockout"
    );
    assert!(matches!(
        sign_in(&strict, "right").await.unwrap().unwrap(),
        SignIn::LockedOut { .. }
    ));
}
