//! Exactly once under ambiguous answers: a write the service applied whose
//! answer was lost (a [`FaultyBackend`] with [`FaultTiming::After`] around
//! the env's backend) succeeds once, with the stored row's ETag; a write
//! that did not land is sent again; a retried attempt refused by its own
//! first attempt (409, 412, 404) succeeds; a write that cannot be read back
//! is [`Error::OutcomeUnknown`]. Every verb family: create, upsert, replace,
//! conditional update, merge, delete, `mutate` and the outcome verbs,
//! batches, large values.

use std::sync::Arc;
use std::time::Duration;

use unified_tables::backend::counting::CountingBackend;
use unified_tables::backend::faulty::{FaultTarget, FaultTiming, FaultyBackend};
use unified_tables::backend::Backend;
use unified_tables::layout::{WRITE_TOKEN, WRITE_TOKEN_CHARS};
use unified_tables::{Error, ErrorKind, Outcome, RetryPolicy, Row, Tables, UnionWrite, Value};

use crate::model::{Customer, Document};
use crate::scenarios::union::OrderEvent;
use crate::wide::Wide;
use crate::{blob_options, noise, Env};

/// The faulty decorator [`faulty_tables`] puts around the env's backend.
pub type Faulty = FaultyBackend<CountingBackend<Arc<dyn Backend>>>;

/// An error a planned fault answers with.
pub type Fault = fn() -> Error;

/// How another writer rewrites a row (see [`OverwrittenAfter`]).
pub type Rewrite = fn(Row) -> Row;

/// Tables over the env's table backend wrapped in a [`FaultyBackend`] (and
/// the env's blobs), without a read cache, retrying with [`quick_retries`].
pub fn faulty_tables(env: &Env) -> (Faulty, Tables) {
    let faulty = FaultyBackend::new(env.backend().clone());
    let mut tables = Tables::with_backend(faulty.clone())
        .without_cache()
        .with_retry(quick_retries());
    if let Some(blobs) = env.blobs.clone() {
        tables = tables.with_blobs(blobs, blob_options());
    }
    (faulty, tables)
}

/// Four attempts with pauses of 5 to 20 ms.
pub fn quick_retries() -> RetryPolicy {
    RetryPolicy::builder()
        .attempts(4)
        .backoff(Duration::from_millis(5), Duration::from_millis(20))
        .build()
        .expect("a valid policy")
}

/// A connection reset after the request left: no answer.
pub fn lost() -> Error {
    Error::transport("the connection was reset before the answer arrived")
}

/// The service gave up after it may have applied the write.
pub fn timed_out() -> Error {
    Error::service(
        500,
        "OperationTimedOut",
        "Operation could not be completed within the specified time.",
    )
}

/// The connection could not be made: the request never left.
pub fn never_sent() -> Error {
    Error::unreachable("the connection was refused")
}

/// The service did not process the request.
pub fn busy() -> Error {
    Error::service(503, "ServerBusy", "The server is busy.")
}

/// The row as stored.
async fn stored(env: &Env, pk: &str, rk: &str) -> Option<Row> {
    env.backend().get(&env.table, pk, rk).await.unwrap()
}

/// The ETag of the row as stored.
async fn stored_etag(env: &Env, pk: &str, rk: &str) -> unified_tables::ETag {
    stored(env, pk, rk).await.expect("the row").etag.expect("an ETag")
}

pub async fn a_create_whose_answer_is_lost_is_applied_once(env: &Env) {
    let (faulty, tables) = faulty_tables(env);
    let store = tables.store_in::<Customer>(&env.table);
    store.ensure_created().await.unwrap();
    let faults: [(&str, Fault); 2] = [("lost", lost), ("timed-out", timed_out)];
    for (rk, fault) in faults {
        faulty.fail_next(FaultTarget::Write, FaultTiming::After, fault);
        env.reset_counts();
        let mut c = Customer::new("p", rk, "x");
        let etag = store.create(&mut c).await.unwrap();
        assert_eq!(faulty.pending(), 0);
        let counts = env.counts();
        assert_eq!(
            (counts.writes, counts.gets),
            (1, 1),
            "sent once, read back once: {counts:?}"
        );
        assert_eq!(etag, stored_etag(env, "p", rk).await, "the stored row's ETag");
        assert_eq!(c.etag.as_ref(), Some(&etag));
        assert!(c.created_at.is_some() && c.timestamp.is_some());
        assert_eq!(store.get(("p", rk)).await.unwrap().unwrap(), c, "the entity as stored");
    }
    // A create of a key that really is taken is still refused.
    let err = store.create(&mut Customer::new("p", "lost", "y")).await.unwrap_err();
    assert!(matches!(err, Error::AlreadyExists { .. }), "{err}");
}

pub async fn upserts_and_replaces_whose_answers_are_lost_are_applied_once(env: &Env) {
    let (faulty, tables) = faulty_tables(env);
    let store = tables.store_in::<Customer>(&env.table);
    // An upsert that inserts, and one that replaces.
    for name in ["first", "second"] {
        faulty.fail_next(FaultTarget::Write, FaultTiming::After, timed_out);
        let mut c = Customer::new("p", "u", name);
        let etag = store.upsert(&mut c).await.unwrap();
        assert_eq!(etag, stored_etag(env, "p", "u").await);
        assert_eq!(store.get(("p", "u")).await.unwrap().unwrap().name, name);
    }
    // A replace whatever the version (`If-Match: *`).
    let mut c = store.get(("p", "u")).await.unwrap().unwrap();
    c.name = "replaced".into();
    faulty.fail_next(FaultTarget::Write, FaultTiming::After, lost);
    let etag = store.replace(&mut c).await.unwrap();
    assert_eq!(etag, stored_etag(env, "p", "u").await);
    assert_eq!(c.etag.as_ref(), Some(&etag));
    assert_eq!(store.get(("p", "u")).await.unwrap().unwrap().name, "replaced");
    assert_eq!(faulty.pending(), 0);
}

pub async fn a_conditional_update_whose_answer_is_lost_succeeds_with_the_stored_etag(env: &Env) {
    let (faulty, tables) = faulty_tables(env);
    let store = tables.store_in::<Customer>(&env.table);
    let mut c = Customer::new("p", "c", "v1");
    store.create(&mut c).await.unwrap();
    let before = c.etag.clone().unwrap();

    c.name = "v2".into();
    faulty.fail_next(FaultTarget::Write, FaultTiming::After, lost);
    let etag = store.update(&mut c).await.unwrap();
    assert_ne!(etag, before);
    assert_eq!(etag, stored_etag(env, "p", "c").await, "the stored row's ETag");
    assert_eq!(c.etag.as_ref(), Some(&etag));

    // The entity carries the new version: the next update goes through.
    c.name = "v3".into();
    store.update(&mut c).await.unwrap();
    // A copy holding the version before the lost answer is refused, as it should be.
    let mut stale = c.clone();
    stale.etag = Some(before);
    stale.name = "stale".into();
    let err = store.update(&mut stale).await.unwrap_err();
    assert!(matches!(err, Error::Conflict { .. }), "{err}");
    assert_eq!(store.get(("p", "c")).await.unwrap().unwrap().name, "v3");

    // A merge of a union store's columns, conditional on the version.
    let events = tables.union_store::<OrderEvent>(&env.table);
    let etag = events.insert(("o", "1"), &OrderEvent::Cancelled).await.unwrap();
    faulty.fail_next(FaultTarget::Write, FaultTiming::After, timed_out);
    let merged = events
        .merge_columns_if(("o", "1"), [("_Audited", Value::Bool(true))], &etag)
        .await
        .unwrap();
    // Settled by its token, but a merge's row also holds cells it did not
    // send, which another writer may have merged since: no version is reported.
    assert_eq!(merged.as_str(), "", "a merge settled by a read-back reports no version");
    let entry = events.get(("o", "1")).await.unwrap().unwrap();
    assert_eq!(entry.column("_Audited"), Some(&Value::Bool(true)));
    assert!(
        entry.column(WRITE_TOKEN).is_none(),
        "the token is no column of the entry"
    );
}

pub async fn a_delete_whose_answer_is_lost_is_done(env: &Env) {
    let (faulty, tables) = faulty_tables(env);
    let store = tables.store_in::<Customer>(&env.table);
    for rk in ["a", "b"] {
        store.create(&mut Customer::new("p", rk, "x")).await.unwrap();
    }
    faulty.fail_next(FaultTarget::Write, FaultTiming::After, lost);
    assert!(store.delete(("p", "a")).await.unwrap(), "it existed and is gone");
    assert!(stored(env, "p", "a").await.is_none());

    // Conditional on the version read.
    let b = store.get(("p", "b")).await.unwrap().unwrap();
    faulty.fail_next(FaultTarget::Write, FaultTiming::After, timed_out);
    store.delete_entity(&b).await.unwrap();
    assert!(stored(env, "p", "b").await.is_none());
    assert_eq!(faulty.pending(), 0);
}

pub async fn mutate_increments_a_counter_exactly_once_under_lost_answers(env: &Env) {
    let (faulty, tables) = faulty_tables(env);
    let store = tables.store_in::<Customer>(&env.table);
    store.create(&mut Customer::new("p", "counter", "n")).await.unwrap();
    let faults: [Fault; 2] = [lost, timed_out];
    let mut runs = 0;
    for i in 0..10u32 {
        if i % 2 == 0 {
            faulty.fail_next(FaultTarget::Write, FaultTiming::After, faults[(i / 2) as usize % 2]);
        }
        let c = store
            .mutate(("p", "counter"), |c| {
                runs += 1;
                c.visits += 1;
            })
            .await
            .unwrap();
        assert_eq!(c.visits, i + 1, "counted once");
        assert_eq!(c.etag, Some(stored_etag(env, "p", "counter").await));
    }
    assert_eq!(faulty.pending(), 0);
    assert_eq!(runs, 10, "the intent never ran on a version that held its own change");
    assert_eq!(store.get(("p", "counter")).await.unwrap().unwrap().visits, 10);
}

pub async fn the_outcome_verbs_apply_once_under_lost_answers(env: &Env) {
    let (faulty, tables) = faulty_tables(env);
    let store = tables.store_in::<Customer>(&env.table);
    store.create(&mut Customer::new("p", "c", "n")).await.unwrap();

    faulty.fail_next(FaultTarget::Write, FaultTiming::After, lost);
    let got = store.try_mutate(("p", "c"), |c| c.visits += 1).await.unwrap();
    assert!(matches!(&got, Outcome::Updated(c) if c.visits == 1), "{got:?}");

    // The transition's own lost answer does not make it lose to itself.
    faulty.fail_next(FaultTarget::Write, FaultTiming::After, timed_out);
    let got = store
        .try_transition(("p", "c"), |c| c.visits == 1, |c| c.visits = 2)
        .await
        .unwrap();
    assert!(matches!(&got, Outcome::Updated(c) if c.visits == 2), "{got:?}");

    // Insert-or-mutate: the insert, then the update, each lost once; the delta applies once each.
    for expected in [1, 2] {
        faulty.fail_next(FaultTarget::Write, FaultTiming::After, lost);
        let c = store
            .mutate_or_create(("p", "m"), || Customer::new("p", "m", "m"), |c| c.visits += 1)
            .await
            .unwrap();
        assert_eq!(c.visits, expected);
        assert_eq!(c.etag, Some(stored_etag(env, "p", "m").await));
    }

    // Read-or-create: the create's answer lost.
    faulty.fail_next(FaultTarget::Write, FaultTiming::After, lost);
    let c = store
        .get_or_create(("p", "g"), || Customer::new("p", "g", "fresh"))
        .await
        .unwrap();
    assert_eq!(c.name, "fresh");
    assert_eq!(c.etag, Some(stored_etag(env, "p", "g").await));
    assert_eq!(faulty.pending(), 0);
    let c = store.get(("p", "c")).await.unwrap().unwrap();
    assert_eq!(c.visits, 2);
}

pub async fn a_batch_whose_answer_is_lost_is_settled_by_one_row(env: &Env) {
    let (faulty, tables) = faulty_tables(env);
    let store = tables.store_in::<Customer>(&env.table);
    let batch: Vec<Customer> = (0..5).map(|i| Customer::new("p", &format!("b{i}"), "one")).collect();
    faulty.fail_next(FaultTarget::Transaction, FaultTiming::After, lost);
    env.reset_counts();
    assert_eq!(store.create_batch(&batch).await.unwrap(), 5);
    let counts = env.counts();
    assert_eq!(counts.transactions, 1, "sent once: {counts:?}");
    for c in &batch {
        assert_eq!(store.get(("p", c.email.as_str())).await.unwrap().unwrap().name, "one");
    }

    let again: Vec<Customer> = (0..5).map(|i| Customer::new("p", &format!("b{i}"), "two")).collect();
    faulty.fail_next(FaultTarget::Transaction, FaultTiming::After, timed_out);
    assert_eq!(store.upsert_batch(&again).await.unwrap(), 5);
    for c in &again {
        assert_eq!(store.get(("p", c.email.as_str())).await.unwrap().unwrap().name, "two");
    }
    // Creating them again is refused for real.
    let err = store.create_batch(&batch).await.unwrap_err();
    assert!(matches!(err, Error::BatchFailed { committed: 0, .. }), "{err}");
    assert_eq!(err.kind(), ErrorKind::AlreadyExists, "{err}");

    // A union store's batch, markers with columns.
    let events = tables.union_store::<OrderEvent>(&env.table);
    faulty.fail_next(FaultTarget::Transaction, FaultTiming::After, lost);
    let writes = (0..3).map(|i| UnionWrite::marker(("u", format!("{i}"))).column("_N", Value::Int32(i)));
    assert_eq!(events.insert_batch(writes).await.unwrap(), 3);
    assert_eq!(events.query("u").await.unwrap().len(), 3);
    assert_eq!(faulty.pending(), 0);
}

pub async fn large_values_whose_answers_are_lost_are_applied_once(env: &Env) {
    let (faulty, tables) = faulty_tables(env);
    let store = tables.store_in::<Document>(&env.table);
    // Split across continuation rows: the main row and its continuations in one transaction.
    let mut d = Document::new("p", "split");
    d.body = noise(1_500_000, 7);
    faulty.fail_next(FaultTarget::Transaction, FaultTiming::After, lost);
    let etag = store.create(&mut d).await.unwrap();
    assert_eq!(etag, stored_etag(env, "p", "split").await);
    assert!(store.get(("p", "split")).await.unwrap().unwrap().same(&d));

    // Replaced by a smaller version, its answer lost too.
    d.body = noise(200_000, 8);
    faulty.fail_next(FaultTarget::Transaction, FaultTiming::After, timed_out);
    faulty.fail_next(FaultTarget::Write, FaultTiming::After, timed_out);
    let etag = store.update(&mut d).await.unwrap();
    assert_eq!(etag, stored_etag(env, "p", "split").await);
    assert!(store.get(("p", "split")).await.unwrap().unwrap().same(&d));
    faulty.clear();

    // A value held in a blob: the row that references it is settled the same way.
    let mut b = Document::new("p", "blob");
    b.body = noise(3_200_000, 9);
    faulty.fail_next(FaultTarget::Write, FaultTiming::After, lost);
    let etag = store.create(&mut b).await.unwrap();
    assert_eq!(faulty.pending(), 0);
    assert_eq!(etag, stored_etag(env, "p", "blob").await);
    assert!(store.get(("p", "blob")).await.unwrap().unwrap().same(&b));
}

pub async fn a_write_that_did_not_land_is_sent_again_only_when_that_is_proven(env: &Env) {
    let (faulty, tables) = faulty_tables(env);
    let store = tables.store_in::<Customer>(&env.table);
    store.ensure_created().await.unwrap();

    // The connection could not be made: the request never left, so it is sent again.
    faulty.fail_next(FaultTarget::Write, FaultTiming::Before, never_sent);
    env.reset_counts();
    let mut c = Customer::new("p", "c", "x");
    let etag = store.create(&mut c).await.unwrap();
    let counts = env.counts();
    assert_eq!((counts.writes, counts.gets), (1, 0), "no read-back needed: {counts:?}");
    assert_eq!(etag, stored_etag(env, "p", "c").await);

    // Not processed (503 ServerBusy): sent again after a pause, no read-back.
    faulty.fail_next(FaultTarget::Write, FaultTiming::Before, busy);
    faulty.fail_next(FaultTarget::Write, FaultTiming::Before, busy);
    env.reset_counts();
    c.name = "y".into();
    let etag = store.update(&mut c).await.unwrap();
    let counts = env.counts();
    assert_eq!((counts.writes, counts.gets), (1, 0), "{counts:?}");
    assert_eq!(etag, stored_etag(env, "p", "c").await);

    // A mutate whose write did not land: the row still has the version it was
    // written on condition of, so at most one attempt can land: sent again, the intent ran once.
    faulty.fail_next(FaultTarget::Write, FaultTiming::Before, timed_out);
    let mut runs = 0;
    let got = store
        .mutate(("p", "c"), |c| {
            runs += 1;
            c.visits += 1
        })
        .await
        .unwrap();
    assert_eq!((runs, got.visits), (1, 1));

    // An insert, an unconditional write or a delete that may have reached the
    // service and is not found landed proves nothing: it may have landed and
    // been undone by another writer since. Sending it again could undo that
    // writer's acknowledged write, so the outcome is unknown, and nothing more is sent.
    faulty.fail_next(FaultTarget::Write, FaultTiming::Before, lost);
    env.reset_counts();
    let err = store.create(&mut Customer::new("p", "n", "x")).await.unwrap_err();
    assert!(
        matches!(&err, Error::OutcomeUnknown { row_key, .. } if row_key == "n"),
        "{err}"
    );
    assert_eq!(
        (env.counts().writes, env.counts().gets),
        (0, 1),
        "read back once, not sent again"
    );
    let batch: Vec<Customer> = (0..3).map(|i| Customer::new("p", &format!("b{i}"), "b")).collect();
    faulty.fail_next(FaultTarget::Transaction, FaultTiming::Before, lost);
    let err = store.create_batch(&batch).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::OutcomeUnknown, "{err}");
    faulty.fail_next(FaultTarget::Transaction, FaultTiming::Before, never_sent);
    assert_eq!(store.create_batch(&batch).await.unwrap(), 3);
    faulty.fail_next(FaultTarget::Write, FaultTiming::Before, lost);
    let err = store.delete(("p", "b0")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::OutcomeUnknown, "{err}");
    assert!(stored(env, "p", "b0").await.is_some(), "nothing was sent again");
    assert_eq!(faulty.pending(), 0);

    // Busy for longer than the policy waits: the refusal, and nothing stored.
    faulty.fail_every(FaultTarget::Write, FaultTiming::Before, busy);
    let err = store.create(&mut Customer::new("p", "never", "x")).await.unwrap_err();
    faulty.clear();
    assert_eq!(err.kind(), ErrorKind::Throttled, "{err}");
    assert!(stored(env, "p", "never").await.is_none());
    // Unreachable for longer than the policy waits: unavailable, and nothing stored.
    faulty.fail_every(FaultTarget::Write, FaultTiming::Before, never_sent);
    let err = store.create(&mut Customer::new("p", "never", "x")).await.unwrap_err();
    faulty.clear();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert!(!err.was_sent(), "{err}");
}

pub async fn a_late_write_is_never_applied_twice_and_never_reported_as_not_applied(env: &Env) {
    let (faulty, tables) = faulty_tables(env);
    let store = tables.store_in::<Customer>(&env.table);
    let mut c = Customer::new("p", "c", "v1");
    store.create(&mut c).await.unwrap();

    // 500 now, applied after the read-back: the read-back finds the version the
    // update was written on condition of, so the update is sent again; the late
    // attempt lands first, and the resend's 412 is its echo: settled by the token.
    c.name = "v2".into();
    faulty.fail_next(FaultTarget::Write, FaultTiming::Late, timed_out);
    env.reset_counts();
    let etag = store.update(&mut c).await.unwrap();
    let counts = env.counts();
    assert_eq!(
        (counts.writes, counts.gets),
        (2, 2),
        "sent twice, read back twice: {counts:?}"
    );
    assert_eq!(etag, stored_etag(env, "p", "c").await, "the late attempt's version");
    assert_eq!(faulty.swallowed().last().map(|s| s.late), Some(true));

    // With no attempt left, the same is unknown (the write may still land), and
    // `mutate` does not run its intent again: it landed once.
    let once = Tables::with_backend(faulty.clone())
        .without_cache()
        .with_retry(RetryPolicy::builder().attempts(1).build().unwrap());
    let store1 = once.store_in::<Customer>(&env.table);
    faulty.fail_next(FaultTarget::Write, FaultTiming::Late, timed_out);
    let mut runs = 0;
    let err = store1
        .mutate(("p", "c"), |c| {
            runs += 1;
            c.visits += 1
        })
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::OutcomeUnknown, "{err}");
    assert!(faulty.holds_a_write() || stored(env, "p", "c").await.is_some());
    faulty.land_held().await;
    assert_eq!(runs, 1);
    assert_eq!(store.get(("p", "c")).await.unwrap().unwrap().visits, 1, "landed once");
}

pub async fn a_read_back_that_fails_is_tried_again_never_the_write(env: &Env) {
    let (faulty, tables) = faulty_tables(env);
    let store = tables.store_in::<Customer>(&env.table);
    store.ensure_created().await.unwrap();
    // Each write: applied, its answer lost, the first read-back fails; the
    // second read-back settles it, and the write is sent once.
    let lose_and_fail_the_read_back = |reads_before: usize| {
        faulty.fail_next(FaultTarget::Write, FaultTiming::After, lost);
        faulty.fail_after(FaultTarget::Get, reads_before, FaultTiming::Before, lost);
    };

    lose_and_fail_the_read_back(0);
    env.reset_counts();
    let mut c = Customer::new("p", "c", "x");
    let etag = store.create(&mut c).await.unwrap();
    let counts = env.counts();
    assert_eq!(
        (counts.writes, counts.gets),
        (1, 1),
        "sent once; the failed read never reached the table: {counts:?}"
    );
    assert_eq!(etag, stored_etag(env, "p", "c").await);

    c.name = "y".into();
    lose_and_fail_the_read_back(0);
    let etag = store.update(&mut c).await.unwrap();
    assert_eq!(etag, stored_etag(env, "p", "c").await);
    assert_eq!(store.get(("p", "c")).await.unwrap().unwrap().name, "y");

    // Mutate (its first read passes).
    lose_and_fail_the_read_back(1);
    let mut runs = 0;
    let got = store
        .mutate(("p", "c"), |c| {
            runs += 1;
            c.visits += 1
        })
        .await
        .unwrap();
    assert_eq!((runs, got.visits), (1, 1), "counted once");
    assert_eq!(got.etag, Some(stored_etag(env, "p", "c").await));

    let batch: Vec<Customer> = (0..3).map(|i| Customer::new("p", &format!("b{i}"), "b")).collect();
    faulty.fail_next(FaultTarget::Transaction, FaultTiming::After, timed_out);
    faulty.fail_next(FaultTarget::Get, FaultTiming::Before, lost);
    assert_eq!(store.create_batch(&batch).await.unwrap(), 3);

    lose_and_fail_the_read_back(0);
    assert!(store.delete(("p", "c")).await.unwrap());
    assert!(stored(env, "p", "c").await.is_none());
    assert_eq!(faulty.pending(), 0);
}

pub async fn a_write_that_cannot_be_read_back_is_an_unknown_outcome(env: &Env) {
    let (faulty, tables) = faulty_tables(env);
    let store = tables.store_in::<Customer>(&env.table);
    store.create(&mut Customer::new("p", "c", "x")).await.unwrap();

    // Applied, and no read-back answers within the policy.
    faulty.fail_next(FaultTarget::Write, FaultTiming::After, lost);
    faulty.fail_every(FaultTarget::Get, FaultTiming::Before, lost);
    let err = store.create(&mut Customer::new("p", "u", "x")).await.unwrap_err();
    faulty.clear();
    assert!(
        matches!(&err, Error::OutcomeUnknown { row_key, .. } if row_key == "u"),
        "{err}"
    );
    assert!(stored(env, "p", "u").await.is_some(), "it was applied");

    // Not applied, and no read-back answers: unknown too (nobody can tell).
    faulty.fail_every(FaultTarget::Write, FaultTiming::Before, lost);
    faulty.fail_every(FaultTarget::Get, FaultTiming::Before, lost);
    let err = store.upsert(&mut Customer::new("p", "n", "x")).await.unwrap_err();
    faulty.clear();
    assert_eq!(err.kind(), ErrorKind::OutcomeUnknown, "{err}");
    assert!(stored(env, "p", "n").await.is_none());
}

pub async fn the_write_token_is_a_system_cell_no_reader_sees(env: &Env) {
    let store = env.tables.store_in::<Customer>(&env.table);
    let mut c = Customer::new("p", "c", "x");
    store.create(&mut c).await.unwrap();
    let token = |row: Row| match row.get(WRITE_TOKEN) {
        Some(Value::String(t)) => t.clone(),
        other => panic!("a write token, got {other:?}"),
    };
    let first = token(stored(env, "p", "c").await.unwrap());
    assert_eq!(first.len(), WRITE_TOKEN_CHARS);
    store.update(&mut c).await.unwrap();
    let second = token(stored(env, "p", "c").await.unwrap());
    assert_ne!(first, second, "every write has its own token");
    assert_eq!(store.get(("p", "c")).await.unwrap().unwrap(), c);

    // The token takes one of the service's 252 properties when there is room:
    // a union marker row with 251 columns carries it, one with 252 is written
    // without it (a lost answer to it cannot be settled by its token), and one
    // with 253 is refused before sending.
    let events = env.tables.union_store::<OrderEvent>(&env.table);
    let marker = |rk: &str, n: i32| {
        (0..n).fold(UnionWrite::marker(("m", rk)), |w, i| {
            w.column(format!("_C{i}"), Value::Int32(i))
        })
    };
    events.insert_batch([marker("fits", 251)]).await.unwrap();
    let row = stored(env, "m", "fits").await.unwrap();
    assert_eq!(row.properties.len(), 252, "251 columns and the token");
    events.insert_batch([marker("full", 252)]).await.unwrap();
    let row = stored(env, "m", "full").await.unwrap();
    assert_eq!(row.properties.len(), 252, "252 columns, no room for the token");
    assert!(row.get(WRITE_TOKEN).is_none());
    let err = events.insert_batch([marker("over", 253)]).await.unwrap_err();
    assert!(matches!(err, Error::LimitExceeded { .. }), "{err}");
    assert!(stored(env, "m", "over").await.is_none(), "nothing stored");
    // A column of that name is the store's own.
    let err = events
        .insert_batch([UnionWrite::marker(("m", "x")).column(WRITE_TOKEN, Value::Int32(1))])
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidValue { .. }), "{err}");
}

pub async fn a_row_at_the_property_limit_stays_writable_without_a_token(env: &Env) {
    let (faulty, tables) = faulty_tables(env);
    let store = tables.store_in::<Wide>(&env.table);
    // 252 properties: written without a token.
    let mut w = Wide::new("p", "full", true);
    store.create(&mut w).await.unwrap();
    let row = stored(env, "p", "full").await.unwrap();
    assert_eq!(row.properties.len(), 252);
    assert!(row.get(WRITE_TOKEN).is_none(), "no room for the token");
    // A patch of it: the merge's token would make 253 properties, which the
    // service refuses (400 TooManyProperties); the patch is sent again without it.
    store.patch(("p", "full"), Wide::update().c0(7)).await.unwrap();
    let got = store.get(("p", "full")).await.unwrap().unwrap();
    assert_eq!((got.c0, got.last), (7, Some(0)));
    // A conditional update of it whose answer is lost has no token to be found
    // by: the row's version moved, and whether this write moved it cannot be told.
    let mut w = got;
    w.c1 = 9;
    faulty.fail_next(FaultTarget::Write, FaultTiming::After, lost);
    let err = store.update(&mut w).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::OutcomeUnknown, "{err}");
    assert_eq!(store.get(("p", "full")).await.unwrap().unwrap().c1, 9, "it landed");
    // ... and one that did not land is found at its version and sent again.
    let mut w = store.get(("p", "full")).await.unwrap().unwrap();
    w.c2 = 3;
    faulty.fail_next(FaultTarget::Write, FaultTiming::Before, timed_out);
    store.update(&mut w).await.unwrap();
    assert_eq!(store.get(("p", "full")).await.unwrap().unwrap().c2, 3);
    // A row with room carries the token.
    store.create(&mut Wide::new("p", "room", false)).await.unwrap();
    assert!(stored(env, "p", "room").await.unwrap().get(WRITE_TOKEN).is_some());
}

/// A backend that, when armed, applies the next single write, then lets
/// `other` write the same row (another writer, between the lost answer and
/// the read-back), then answers with a lost connection.
#[derive(Debug, Clone)]
pub struct OverwrittenAfter<B> {
    inner: B,
    other: Arc<std::sync::Mutex<Option<Rewrite>>>,
}

impl<B> OverwrittenAfter<B> {
    /// Wraps `inner`, not armed.
    pub fn new(inner: B) -> OverwrittenAfter<B> {
        OverwrittenAfter {
            inner,
            other: Arc::default(),
        }
    }

    /// The next single write is applied, then its row is replaced by
    /// `other(stored row)`, then its answer is lost.
    pub fn arm(&self, other: Rewrite) {
        *self.other.lock().unwrap() = Some(other);
    }
}

#[async_trait::async_trait]
#[deny(clippy::missing_trait_methods)]
impl<B: Backend> Backend for OverwrittenAfter<B> {
    async fn create_table(&self, table: &str) -> unified_tables::Result<()> {
        self.inner.create_table(table).await
    }
    async fn delete_table(&self, table: &str) -> unified_tables::Result<()> {
        self.inner.delete_table(table).await
    }
    async fn get(&self, table: &str, pk: &str, rk: &str) -> unified_tables::Result<Option<Row>> {
        self.inner.get(table, pk, rk).await
    }
    async fn execute(
        &self,
        table: &str,
        op: unified_tables::backend::WriteOp,
    ) -> unified_tables::Result<unified_tables::backend::WriteOutcome> {
        let other = self.other.lock().unwrap().take();
        let Some(other) = other else {
            return self.inner.execute(table, op).await;
        };
        let (pk, rk) = {
            let (pk, rk) = op.keys();
            (pk.to_owned(), rk.to_owned())
        };
        self.inner.execute(table, op).await?;
        let stored = self.inner.get(table, &pk, &rk).await?.expect("the row just written");
        let row = other(stored);
        self.inner
            .execute(
                table,
                unified_tables::backend::WriteOp::Upsert {
                    row,
                    mode: unified_tables::backend::UpdateMode::Replace,
                },
            )
            .await?;
        Err(lost())
    }
    async fn transaction(
        &self,
        table: &str,
        ops: Vec<unified_tables::backend::WriteOp>,
    ) -> unified_tables::Result<Vec<unified_tables::backend::WriteOutcome>> {
        self.inner.transaction(table, ops).await
    }
    async fn query(
        &self,
        table: &str,
        request: &unified_tables::backend::QueryRequest,
        token: Option<&unified_tables::backend::PageToken>,
    ) -> unified_tables::Result<unified_tables::backend::Page> {
        self.inner.query(table, request, token).await
    }
    async fn query_body(
        &self,
        table: &str,
        request: &unified_tables::backend::QueryRequest,
        token: Option<&unified_tables::backend::PageToken>,
    ) -> unified_tables::Result<unified_tables::backend::PageAnswer> {
        self.inner.query_body(table, request, token).await
    }
    fn profile(&self) -> unified_tables::service::ServiceProfile {
        self.inner.profile()
    }
}

/// Another writer's increment of `Visits`, with its own write token.
fn another_increment(mut row: Row) -> Row {
    let visits = match row.get("Visits") {
        Some(Value::Int64(n)) => *n,
        other => panic!("a visit count, got {other:?}"),
    };
    row.insert("Visits", Value::Int64(visits + 1));
    row.insert(WRITE_TOKEN, Value::String("another-writers-token0".into()));
    row.etag = None;
    row
}

pub async fn a_conditional_write_whose_row_moved_on_is_never_applied_again(env: &Env) {
    let backend = OverwrittenAfter::new(env.backend().clone());
    let tables = Tables::with_backend(backend.clone())
        .without_cache()
        .with_retry(quick_retries());
    let store = tables.store_in::<Customer>(&env.table);
    store.create(&mut Customer::new("p", "c", "x")).await.unwrap();

    // Our increment lands, another writer increments on top of it before the
    // read-back: the row holds neither our token nor the version we read. Whether
    // ours landed first cannot be told, so the intent is not run again.
    backend.arm(another_increment);
    let mut runs = 0;
    let err = store
        .mutate(("p", "c"), |c| {
            runs += 1;
            c.visits += 1
        })
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::OutcomeUnknown, "{err}");
    assert_eq!(runs, 1);
    assert_eq!(
        store.get(("p", "c")).await.unwrap().unwrap().visits,
        2,
        "ours and the other writer's, each once"
    );

    // An unconditional write that landed and was replaced finds the other
    // writer's row: sending it again would undo that writer's acknowledged
    // write, so it is unknown too, and the other writer's row stays.
    backend.arm(another_increment);
    let mut c = Customer::new("p", "c", "mine");
    c.visits = 10;
    let err = store.upsert(&mut c).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::OutcomeUnknown, "{err}");
    let got = store.get(("p", "c")).await.unwrap().unwrap();
    assert_eq!(
        (got.name.as_str(), got.visits),
        ("mine", 11),
        "ours, then theirs on top"
    );
}
