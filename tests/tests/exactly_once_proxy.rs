//! Exactly once under ambiguous answers, on Azure / Azurite through the fault
//! proxy: the answer of a write is really lost on the network (the proxy
//! forwards the request, the service applies it, the client's connection is
//! reset before the answer arrives) and the store settles it by reading its
//! write token back.
//!
//! Two groups:
//! - `scenarios::*`: the suite's exactly-once scenarios
//!   (`tests/src/scenarios/exactly_once.rs`, whose faults a `FaultyBackend`
//!   injects) run over an environment whose requests go through the proxy;
//! - the tests below inject the lost answers with the proxy itself, for
//!   every verb family, and count what reached the service.

use unified_tables::{Error, ErrorKind, Outcome, Value};
use unified_tables_tests::fault_proxy::{proxied_env, Fault, FaultProxy, Kinds, RequestKind};
use unified_tables_tests::model::{Customer, Document};
use unified_tables_tests::noise;
use unified_tables_tests::scenarios::exactly_once;
use unified_tables_tests::Env;

macro_rules! through_the_proxy {
    ($($name:ident),* $(,)?) => {
        mod scenarios {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let Some((env, proxy)) = proxied_env(stringify!($name), 7).await else { return };
                    exactly_once::$name(&env).await;
                    assert!(proxy.counts().requests > 0, "the requests went through the proxy");
                }
            )*
        }
    };
}

through_the_proxy!(
    a_create_whose_answer_is_lost_is_applied_once,
    upserts_and_replaces_whose_answers_are_lost_are_applied_once,
    a_conditional_update_whose_answer_is_lost_succeeds_with_the_stored_etag,
    a_delete_whose_answer_is_lost_is_done,
    mutate_increments_a_counter_exactly_once_under_lost_answers,
    the_outcome_verbs_apply_once_under_lost_answers,
    a_batch_whose_answer_is_lost_is_settled_by_one_row,
    large_values_whose_answers_are_lost_are_applied_once,
    a_write_that_did_not_land_is_sent_again_only_when_that_is_proven,
    a_late_write_is_never_applied_twice_and_never_reported_as_not_applied,
    a_read_back_that_fails_is_tried_again_never_the_write,
    a_write_that_cannot_be_read_back_is_an_unknown_outcome,
    the_write_token_is_a_system_cell_no_reader_sees,
    a_conditional_write_whose_row_moved_on_is_never_applied_again,
);

/// Drops the answer of the next table write or transaction.
fn lose_next_answer(proxy: &FaultProxy) {
    proxy.fault_next(
        Kinds::of(RequestKind::TableWrite).and(RequestKind::TableBatch),
        Fault::DropAnswer,
        1,
    );
}

/// The ETag of the row as stored.
async fn stored_etag(env: &Env, pk: &str, rk: &str) -> unified_tables::ETag {
    use unified_tables::backend::Backend as _;
    let row = env.backend().get(&env.table, pk, rk).await.unwrap().expect("the row");
    row.etag.expect("an ETag")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn single_writes_whose_answers_are_lost_on_the_network_apply_once() {
    let Some((env, proxy)) = proxied_env("xoncewrites", 11).await else {
        return;
    };
    let store = env.tables.store_in::<Customer>(&env.table);
    store.ensure_created().await.unwrap();

    // Create: sent once, read back once, the stored row's ETag.
    lose_next_answer(&proxy);
    env.reset_counts();
    let mut c = Customer::new("p", "c", "v1");
    let etag = store.create(&mut c).await.unwrap();
    let counts = env.counts();
    assert_eq!((counts.writes, counts.gets), (1, 1), "{counts:?}");
    assert_eq!(etag, stored_etag(&env, "p", "c").await);

    // Conditional update, upsert, replace.
    c.name = "v2".into();
    lose_next_answer(&proxy);
    let etag = store.update(&mut c).await.unwrap();
    assert_eq!(etag, stored_etag(&env, "p", "c").await);
    c.name = "v3".into();
    lose_next_answer(&proxy);
    store.upsert(&mut c).await.unwrap();
    c.name = "v4".into();
    lose_next_answer(&proxy);
    store.replace(&mut c).await.unwrap();
    assert_eq!(store.get(("p", "c")).await.unwrap().unwrap().name, "v4");

    // A create of a key that really is taken is still refused.
    let err = store.create(&mut Customer::new("p", "c", "other")).await.unwrap_err();
    assert!(matches!(err, Error::AlreadyExists { .. }), "{err}");

    // Deletes: by key and conditional on the version.
    store.create(&mut Customer::new("p", "d", "x")).await.unwrap();
    lose_next_answer(&proxy);
    assert!(store.delete(("p", "d")).await.unwrap());
    let e = store.get(("p", "c")).await.unwrap().unwrap();
    lose_next_answer(&proxy);
    store.delete_entity(&e).await.unwrap();
    assert!(store.get(("p", "c")).await.unwrap().is_none());

    // A read whose answer is cut halfway is sent again by the HTTP layer
    // (a read is safe to repeat): the caller gets the row.
    store.create(&mut Customer::new("p", "d2", "cut")).await.unwrap();
    proxy.fault_next(Kinds::of(RequestKind::TableGet), Fault::CutBody, 1);
    env.reset_counts();
    assert_eq!(
        store.get(("p", "d2")).await.unwrap().map(|c| c.name).as_deref(),
        Some("cut")
    );
    assert_eq!(env.counts().gets, 1, "one read for the caller, sent twice below it");

    // Every answer of the first read-back cut halfway too (each attempt the
    // retry policy makes below the store): the store reads back again, never
    // sends the create again, and the second read-back settles it.
    let attempts = unified_tables::RetryPolicy::default().attempts() as usize;
    lose_next_answer(&proxy);
    proxy.fault_next(Kinds::of(RequestKind::TableGet), Fault::CutBody, attempts);
    env.reset_counts();
    let mut r = Customer::new("p", "r", "x");
    let etag = store.create(&mut r).await.unwrap();
    let counts = env.counts();
    assert_eq!((counts.writes, counts.gets), (1, 2), "{counts:?}");
    assert_eq!(etag, stored_etag(&env, "p", "r").await);

    let faults = proxy.counts();
    assert_eq!(
        (faults.dropped_write_answers, faults.cut_bodies),
        (7, 1 + attempts as u64),
        "{faults:?}"
    );
    assert_eq!(proxy.pending(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mutate_and_the_outcome_verbs_count_once_when_answers_are_lost_on_the_network() {
    let Some((env, proxy)) = proxied_env("xoncemutate", 12).await else {
        return;
    };
    let store = env.tables.store_in::<Customer>(&env.table);
    store.create(&mut Customer::new("p", "n", "counter")).await.unwrap();
    let mut runs = 0;
    for i in 0..10u32 {
        if i % 2 == 0 {
            lose_next_answer(&proxy);
        }
        let c = store
            .mutate(("p", "n"), |c| {
                runs += 1;
                c.visits += 1
            })
            .await
            .unwrap();
        assert_eq!(c.visits, i + 1, "counted once");
    }
    assert_eq!(runs, 10, "the intent never ran on a version holding its own change");

    lose_next_answer(&proxy);
    let got = store.try_mutate(("p", "n"), |c| c.visits += 1).await.unwrap();
    assert!(matches!(&got, Outcome::Updated(c) if c.visits == 11), "{got:?}");
    lose_next_answer(&proxy);
    let got = store
        .try_transition(("p", "n"), |c| c.visits == 11, |c| c.visits = 20)
        .await
        .unwrap();
    assert!(matches!(&got, Outcome::Updated(c) if c.visits == 20), "{got:?}");
    for expected in [1, 2] {
        lose_next_answer(&proxy);
        let c = store
            .mutate_or_create(("p", "m"), || Customer::new("p", "m", "m"), |c| c.visits += 1)
            .await
            .unwrap();
        assert_eq!(c.visits, expected);
    }
    lose_next_answer(&proxy);
    let c = store
        .get_or_create(("p", "g"), || Customer::new("p", "g", "fresh"))
        .await
        .unwrap();
    assert_eq!(c.etag, Some(stored_etag(&env, "p", "g").await));
    assert_eq!(proxy.counts().dropped_write_answers, 10, "{:?}", proxy.counts());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn batches_and_large_values_whose_answers_are_lost_on_the_network_apply_once() {
    let Some((env, proxy)) = proxied_env("xoncebatch", 13).await else {
        return;
    };
    let customers = env.tables.store_in::<Customer>(&env.table);
    let batch: Vec<Customer> = (0..5).map(|i| Customer::new("b", &format!("b{i}"), "one")).collect();
    customers.ensure_created().await.unwrap();
    lose_next_answer(&proxy);
    env.reset_counts();
    assert_eq!(customers.create_batch(&batch).await.unwrap(), 5);
    assert_eq!(env.counts().transactions, 1, "{:?}", env.counts());
    let err = customers.create_batch(&batch).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AlreadyExists, "{err}");

    // Continuation rows (one transaction), then replaced smaller.
    let docs = env.tables.store_in::<Document>(&env.table);
    let mut d = Document::new("p", "split");
    d.body = noise(1_500_000, 7);
    lose_next_answer(&proxy);
    docs.create(&mut d).await.unwrap();
    assert!(docs.get(("p", "split")).await.unwrap().unwrap().same(&d));
    d.body = noise(200_000, 8);
    lose_next_answer(&proxy);
    docs.update(&mut d).await.unwrap();
    assert!(docs.get(("p", "split")).await.unwrap().unwrap().same(&d));

    // A blob-backed value: the row's answer lost, then the blob upload's.
    let mut b = Document::new("p", "blob");
    b.body = noise(3_200_000, 9);
    lose_next_answer(&proxy);
    docs.create(&mut b).await.unwrap();
    assert!(docs.get(("p", "blob")).await.unwrap().unwrap().same(&b));
    b.body = noise(3_200_000, 10);
    proxy.fault_next(Kinds::of(RequestKind::BlobWrite), Fault::DropAnswer, 1);
    match docs.update(&mut b).await {
        Ok(_) => assert!(docs.get(("p", "blob")).await.unwrap().unwrap().same(&b)),
        Err(e) => panic!("a blob upload whose answer was lost fails the write: {e}"),
    }
    assert_eq!(proxy.counts().dropped_write_answers, 5, "{:?}", proxy.counts());
    let row = {
        use unified_tables::backend::Backend as _;
        env.backend().get(&env.table, "p", "blob").await.unwrap().unwrap()
    };
    assert!(matches!(row.get("_WriteToken"), Some(Value::String(t)) if t.len() == 22));
}

/// A write applied whose answer is lost while another writer changes the
/// row before the read-back: the read-back finds the other writer's token,
/// not its own. The write was applied, so it must not be applied again:
/// the counter ends at 2 (the first call succeeding or reporting an unknown
/// outcome), never 3.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_lost_answer_overtaken_by_another_writer_is_not_applied_twice() {
    let Some((env, proxy)) = proxied_env("xonceovertaken", 14).await else {
        return;
    };
    let store = env.tables.store_in::<Customer>(&env.table);
    store.create(&mut Customer::new("p", "n", "counter")).await.unwrap();
    proxy.fault_next(
        Kinds::of(RequestKind::TableWrite),
        Fault::DropAnswerLate(std::time::Duration::from_millis(800)),
        1,
    );
    let first = {
        let store = store.clone();
        tokio::spawn(async move { store.mutate(("p", "n"), |c| c.visits += 1).await })
    };
    // The first write is applied and its answer held; another writer overtakes it.
    while proxy.pending() > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let second = store.mutate(("p", "n"), |c| c.visits += 1).await.unwrap();
    assert_eq!(second.visits, 2, "the second writer saw the first write applied");
    let first = first.await.unwrap();
    let visits = store.get(("p", "n")).await.unwrap().unwrap().visits;
    match &first {
        Ok(_) => {}
        Err(e) => assert_eq!(e.kind(), ErrorKind::OutcomeUnknown, "{e}"),
    }
    assert_eq!(proxy.counts().dropped_write_answers, 1);
    assert_eq!(
        visits, 2,
        "each increment applied once (the first call answered {first:?})"
    );
}
