//! Named locks on blob leases: mutual exclusion under contention, expiry of
//! a holder that stops renewing, breaks, fencing tokens.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use unified_tables::backend::faulty::{FaultTarget, FaultTiming, FaultyBackend};
use unified_tables::{ETag, Error, Outcome, TableEntity, Tables};

use crate::{blob_options, Env};

const TTL: Duration = Duration::from_secs(15);

/// A value protected by a lock, with the fencing token of its last writer.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct Fenced {
    #[table(partition_key)]
    pub scope: String,
    #[table(row_key)]
    pub id: String,
    pub value: String,
    pub fence: u64,
    #[table(etag)]
    pub etag: Option<ETag>,
}

/// A lock name no other scenario or run uses.
fn lock_name(env: &Env, what: &str) -> String {
    format!("{}/{what}", env.table)
}

/// Tables over the same storage whose blob requests all fail while
/// `partition` says so: a holder cut off from the service.
fn cut_off(
    env: &Env,
) -> (
    Tables,
    FaultyBackend<Arc<dyn unified_tables::backend::blob::BlobBackend>>,
) {
    let faulty = FaultyBackend::new(env.blobs.clone().expect("a blob backend"));
    let tables = env.tables.clone().with_blobs(faulty.clone(), blob_options());
    (tables, faulty)
}

fn unreachable() -> Error {
    Error::transport("connection refused (a planned partition)")
}

/// Waits at most `limit` for the guard to report its loss.
async fn lost_within(guard: &unified_tables::lock::LockGuard, limit: Duration) -> Error {
    tokio::time::timeout(limit, guard.lost())
        .await
        .unwrap_or_else(|_| panic!("the guard did not report the lost lease within {limit:?}"))
}

/// Stores the protected value, written by no holder yet.
async fn create_item(env: &Env) -> unified_tables::Store<Fenced> {
    let store = env.tables.store_in::<Fenced>(&env.table);
    let mut item = Fenced {
        scope: "scope".into(),
        id: "item".into(),
        value: "start".into(),
        fence: 0,
        etag: None,
    };
    store.create(&mut item).await.unwrap();
    store
}

/// Writes `value` as the holder of `token`, refused once a newer token wrote.
async fn fenced_write(tables: &Tables, env: &Env, token: u64, value: &str) -> Outcome<Fenced> {
    let store = tables.store_in::<Fenced>(&env.table);
    store
        .try_transition(
            ("scope", "item"),
            |f| f.fence <= token,
            |f| {
                f.fence = token;
                f.value = value.to_owned();
            },
        )
        .await
        .unwrap()
}

/// Six tasks race for one lock from a barrier: exactly one wins the first
/// round, and then every task gets the lock in turn, with critical sections
/// that never overlap (an in-section counter that never exceeds one, with
/// each section long enough for the others to try) and fencing tokens that
/// rise with every holder.
pub async fn contending_holders_never_overlap(env: &Env) {
    const TASKS: usize = 6;
    let lock = env.tables.lock(&lock_name(env, "contended"));
    let start = Arc::new(tokio::sync::Barrier::new(TASKS));
    let in_section = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let first_round_winners = Arc::new(AtomicUsize::new(0));
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let tasks: Vec<_> = (0..TASKS)
        .map(|_| {
            let (lock, start, in_section, most, winners, tokens) = (
                lock.clone(),
                start.clone(),
                in_section.clone(),
                most.clone(),
                first_round_winners.clone(),
                tokens.clone(),
            );
            tokio::spawn(async move {
                start.wait().await;
                let guard = match lock.try_acquire(TTL).await.unwrap() {
                    Some(guard) => {
                        winners.fetch_add(1, Ordering::SeqCst);
                        guard
                    }
                    None => lock.acquire(TTL).await.unwrap(),
                };
                let inside = in_section.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(inside, Ordering::SeqCst);
                tokens.lock().unwrap().push(guard.fencing_token());
                // Long enough for every other task to try meanwhile.
                tokio::time::sleep(Duration::from_millis(150)).await;
                in_section.fetch_sub(1, Ordering::SeqCst);
                guard.release().await.unwrap();
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(first_round_winners.load(Ordering::SeqCst), 1, "one winner of the race");
    assert_eq!(most.load(Ordering::SeqCst), 1, "critical sections never overlapped");
    let tokens = tokens.lock().unwrap().clone();
    assert_eq!(tokens.len(), TASKS);
    assert!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "tokens rise with every holder: {tokens:?}"
    );
    assert_eq!(lock.last_token().await.unwrap(), *tokens.last().unwrap());
}

/// The guard renews the lease in the background: a lock held longer than
/// its time to live stays held (here 18 s of the service's clock, with a
/// renewal after 5 s).
pub async fn a_held_lock_is_renewed_past_its_ttl(env: &Env) {
    let name = lock_name(env, "renewed");
    let guard = env.tables.lock(&name).acquire(TTL).await.unwrap();
    tokio::time::sleep(Duration::from_secs(6)).await;
    env.pass_blob_service_time(Duration::from_secs(12)).await;
    let other = env.tables.lock(&name);
    assert!(other.try_acquire(TTL).await.unwrap().is_none(), "still held");
    assert!(!guard.is_lost());
    guard.release().await.unwrap();
    assert!(other.try_acquire(TTL).await.unwrap().is_some());
}

/// A holder cut off from the service cannot renew: the lock stays taken
/// until its time to live runs out on the service's clock, then another
/// holder takes it with a newer token, the cut-off holder learns it lost the
/// lock, and its fenced write is refused.
pub async fn a_holder_that_stops_renewing_loses_the_lock_after_the_ttl(env: &Env) {
    let name = lock_name(env, "stalled");
    let (cut_tables, partition) = cut_off(env);
    create_item(env).await;

    let stalled = cut_tables.lock(&name).acquire(TTL).await.unwrap();
    partition.fail_every(FaultTarget::BlobLease, FaultTiming::Before, unreachable);
    let other = env.tables.lock(&name);
    assert!(
        other.try_acquire(TTL).await.unwrap().is_none(),
        "held while the lease lasts"
    );

    env.pass_blob_service_time(TTL + Duration::from_secs(1)).await;
    let next = other
        .try_acquire(TTL)
        .await
        .unwrap()
        .expect("free once the lease ran out");
    assert!(next.fencing_token() > stalled.fencing_token());

    // The service answers again: the stalled holder's next renewal is refused
    // (on Azure its deadline has passed already).
    partition.clear();
    let why = lost_within(&stalled, Duration::from_secs(10)).await;
    assert!(matches!(why, Error::LockLost { .. }), "{why}");
    assert!(stalled.is_lost());

    assert!(matches!(
        fenced_write(&env.tables, env, next.fencing_token(), "new holder").await,
        Outcome::Updated(_)
    ));
    let stale = fenced_write(&cut_tables, env, stalled.fencing_token(), "stale holder").await;
    assert!(
        matches!(&stale, Outcome::PreconditionFailed(f) if f.value == "new holder"),
        "{stale:?}"
    );
    assert!(matches!(stalled.release().await, Err(Error::LockLost { .. })));
    next.release().await.unwrap();
}

/// A lost lock's error holds the service's refusal as its source, once:
/// the message says what happened to the lock, the source why.
fn assert_refusal_is_the_source(lost: &Error) {
    let refusal = std::error::Error::source(lost).unwrap_or_else(|| panic!("no source: {lost}"));
    let (said, cause) = (lost.to_string(), refusal.to_string());
    assert!(!cause.is_empty() && !said.contains(&cause), "{said} / {cause}");
    assert!(said.contains("refused to renew"), "{said}");
}

/// Breaking a held lock with no break period hands it over at once: the
/// breaker acquires with the next token, the old holder's renewal is refused
/// (its guard reports the loss), its release says it no longer held the
/// lock, and the next holder can acquire again after release.
pub async fn a_break_hands_the_lock_over(env: &Env) {
    let name = lock_name(env, "broken");
    let old = env.tables.lock(&name).acquire(TTL).await.unwrap();
    let breaker = env.tables.lock(&name);
    assert!(breaker.try_acquire(TTL).await.unwrap().is_none());
    breaker.break_lock(Duration::ZERO).await.unwrap();
    let new = breaker.try_acquire(TTL).await.unwrap().expect("broken: free at once");
    assert_eq!(new.fencing_token(), old.fencing_token() + 1);

    // The old holder renews every 5 s and is refused then; the refusal is
    // the loss's source, not repeated in its message.
    let why = lost_within(&old, Duration::from_secs(10)).await;
    assert!(matches!(why, Error::LockLost { .. }), "{why}");
    assert_refusal_is_the_source(&why);
    let released = old.release().await.unwrap_err();
    assert!(matches!(released, Error::LockLost { .. }), "{released}");
    assert_refusal_is_the_source(&released);
    assert!(!new.is_lost());
    new.release().await.unwrap();
    // Breaking a lock nobody holds does nothing.
    breaker.break_lock(Duration::ZERO).await.unwrap();
    env.tables.lock(&name).try_acquire(TTL).await.unwrap().expect("free");
}

/// The fencing pattern: each holder stores its token beside the value and a
/// write with an older token is refused, so a holder that lost the lock
/// cannot overwrite its successor. Tokens survive a restart (a fresh
/// `Tables` over the same storage continues the sequence).
pub async fn the_fencing_token_rejects_a_stale_holders_write(env: &Env) {
    let name = lock_name(env, "fenced");
    let store = create_item(env).await;

    let first = env.tables.lock(&name).acquire(TTL).await.unwrap();
    assert!(matches!(
        fenced_write(&env.tables, env, first.fencing_token(), "first").await,
        Outcome::Updated(_)
    ));
    assert!(
        matches!(
            fenced_write(&env.tables, env, first.fencing_token(), "first again").await,
            Outcome::Updated(_)
        ),
        "the holder writes as often as it likes"
    );
    env.tables.lock(&name).break_lock(Duration::ZERO).await.unwrap();
    let second = env.tables.lock(&name).acquire(TTL).await.unwrap();
    assert!(second.fencing_token() > first.fencing_token());
    assert!(matches!(
        fenced_write(&env.tables, env, second.fencing_token(), "second").await,
        Outcome::Updated(_)
    ));
    // The first holder does not know yet that it lost the lock; its write is refused anyway.
    let stale = fenced_write(&env.tables, env, first.fencing_token(), "stale").await;
    assert!(
        matches!(&stale, Outcome::PreconditionFailed(f) if f.value == "second" && f.fence == second.fencing_token()),
        "{stale:?}"
    );
    assert_eq!(store.get(("scope", "item")).await.unwrap().unwrap().value, "second");
    let second_token = second.fencing_token();
    second.release().await.unwrap();
    drop(first);

    let restarted = Tables::with_backend(env.counter.clone()).with_blobs(env.blobs.clone().unwrap(), blob_options());
    let third = restarted.lock(&name).acquire(TTL).await.unwrap();
    assert_eq!(third.fencing_token(), second_token + 1);
    assert_eq!(
        env.tables.lock(&name).last_token().await.unwrap(),
        third.fencing_token()
    );
    third.release().await.unwrap();
}

/// Dropping a guard releases the lock best-effort: another holder gets it
/// well before the time to live would have run out.
pub async fn dropping_a_guard_releases_the_lock(env: &Env) {
    let lock = env.tables.lock(&lock_name(env, "dropped"));
    let guard = lock.acquire(TTL).await.unwrap();
    let token = guard.fencing_token();
    drop(guard);
    let again = lock
        .acquire_timeout(TTL, Duration::from_secs(5))
        .await
        .unwrap()
        .expect("released on drop");
    assert_eq!(again.fencing_token(), token + 1);
    // acquire_timeout gives up on a held lock.
    let waited = lock.acquire_timeout(TTL, Duration::from_millis(300)).await.unwrap();
    assert!(waited.is_none());
    // The same name in another container is another lock.
    let elsewhere = lock
        .clone()
        .in_container(format!("locks-{}", env.table.to_lowercase()))
        .try_acquire(TTL)
        .await
        .unwrap()
        .expect("a separate lock");
    assert_eq!(elsewhere.fencing_token(), 1);
    elsewhere.release().await.unwrap();
    again.release().await.unwrap();
}

/// Times to live outside 15–60 whole seconds, break periods over 60 s and
/// tables without a blob store are refused before anything is sent.
pub async fn lock_arguments_are_refused_before_sending(env: &Env) {
    let lock = env.tables.lock(&lock_name(env, "refused"));
    env.reset_counts();
    for ttl in [
        Duration::from_secs(14),
        Duration::from_secs(61),
        Duration::from_millis(15_500),
        Duration::ZERO,
    ] {
        let refused = lock.try_acquire(ttl).await.unwrap_err();
        assert!(matches!(refused, Error::Config { .. }), "{ttl:?}: {refused}");
        assert!(lock.acquire(ttl).await.is_err());
        assert!(lock.acquire_timeout(ttl, Duration::from_secs(1)).await.is_err());
    }
    assert!(matches!(
        lock.break_lock(Duration::from_secs(61)).await,
        Err(Error::Config { .. })
    ));
    let no_blobs = env.tables.clone().without_blobs();
    let refused = no_blobs.lock("x").try_acquire(TTL).await.unwrap_err();
    assert!(refused.to_string().contains("no blob store"), "{refused}");
    assert_eq!(env.counts().blob_requests(), 0, "{:?}", env.counts());
}
