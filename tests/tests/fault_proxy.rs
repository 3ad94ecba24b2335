//! The fault proxy in front of Azurite: the library's requests pass through
//! it unchanged, and each kind of fault reaches the library as the network
//! failure it stands for. (The proxy's framing against a scripted upstream is
//! unit-tested in `tests/src/fault_proxy`.)

use std::time::{Duration, Instant};

use unified_tables::backend::Backend as _;
use unified_tables::{Error, ErrorKind};
use unified_tables_tests::fault_proxy::{proxied_env, Fault, Kinds, RequestKind};
use unified_tables_tests::model::{Customer, Document};
use unified_tables_tests::noise;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn requests_pass_unchanged_through_the_proxy() {
    let Some((env, proxy)) = proxied_env("proxypass", 1).await else {
        return;
    };
    let store = env.tables.store_in::<Document>(&env.table);
    // A value on continuation rows, one in a blob, and a transaction.
    let mut rows = Document::new("p", "rows");
    rows.body = noise(1_200_000, 1);
    store.create(&mut rows).await.unwrap();
    let mut blob = Document::new("p", "blob");
    blob.body = noise(3_200_000, 2);
    store.create(&mut blob).await.unwrap();
    assert!(store.get(("p", "rows")).await.unwrap().unwrap().same(&rows));
    assert!(store.get(("p", "blob")).await.unwrap().unwrap().same(&blob));
    let batch: Vec<Document> = (0..30).map(|i| Document::new("q", &format!("d{i}"))).collect();
    store.create_batch(&batch).await.unwrap();
    assert_eq!(
        store
            .query(unified_tables::QueryOptions::partition("q"))
            .await
            .unwrap()
            .len(),
        30
    );
    let counts = proxy.counts();
    for kind in [
        RequestKind::TableGet,
        RequestKind::TableQuery,
        RequestKind::TableBatch,
        RequestKind::TableAdmin,
        RequestKind::BlobRead,
        RequestKind::BlobWrite,
    ] {
        assert!(
            counts.by_kind.get(&kind).copied().unwrap_or(0) > 0,
            "{kind:?} seen: {counts:?}"
        );
    }
    assert_eq!(counts.faults(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_dropped_answer_of_a_write_is_applied_and_the_client_never_learns() {
    let Some((env, proxy)) = proxied_env("proxydrop", 2).await else {
        return;
    };
    let store = env.tables.store_in::<Customer>(&env.table);
    store.ensure_created().await.unwrap();
    proxy.fault_next(Kinds::of(RequestKind::TableWrite), Fault::DropAnswer, 1);
    let result = store.create(&mut Customer::new("p", "c", "x")).await;
    assert_eq!(proxy.counts().dropped_write_answers, 1);
    // Applied; the library either proves it was its own write or says it cannot tell.
    match &result {
        Ok(_) => {}
        Err(e) => assert_eq!(e.kind(), ErrorKind::OutcomeUnknown, "{e}"),
    }
    assert!(store.get(("p", "c")).await.unwrap().is_some(), "applied");
    // The proxy is the network: the raw request went through once.
    assert!(proxy.counts().by_kind[&RequestKind::TableWrite] >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn resets_and_cut_bodies_are_retried_and_delays_are_waited_out() {
    let Some((env, proxy)) = proxied_env("proxyfaults", 3).await else {
        return;
    };
    let store = env.tables.store_in::<Document>(&env.table);
    let mut d = Document::new("p", "d");
    d.body = noise(3_200_000, 3);
    store.create(&mut d).await.unwrap();

    // A reset before forwarding: nothing reached the service, the retry reads it.
    proxy.fault_next(Kinds::of(RequestKind::TableGet), Fault::ResetBeforeForward, 1);
    assert!(store.get(("p", "d")).await.unwrap().unwrap().same(&d));
    // A write reset before forwarding reached nothing, but the client cannot
    // know that: the connection was reset after the request left. The row is
    // not there, and a resend could bring back a row another writer deleted
    // in between, so the create is `OutcomeUnknown` and nothing more is sent.
    proxy.fault_next(Kinds::of(RequestKind::TableWrite), Fault::ResetBeforeForward, 1);
    let mut c = Document::new("p", "c");
    let err = store.create(&mut c).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::OutcomeUnknown, "{err}");
    assert!(store.get(("p", "c")).await.unwrap().is_none(), "nothing was stored");
    // Read, the caller creates it again, once.
    store.create(&mut c).await.unwrap();
    // A table answer cut halfway, then a blob download cut halfway: the
    // read fails as a transport failure (the body is read after the retry
    // policy has handed the answer over) or is retried, never other content
    // and never `Integrity`; the next read is whole.
    for kind in [RequestKind::TableGet, RequestKind::BlobRead] {
        proxy.fault_next(Kinds::of(kind), Fault::CutBody, 1);
        match store.get(("p", "d")).await {
            Ok(got) => assert!(
                got.unwrap().same(&d),
                "{kind:?}: a cut answer never reads as other content"
            ),
            Err(e) => assert!(
                !matches!(e, Error::Integrity { .. }) && e.kind() == ErrorKind::Unavailable,
                "{kind:?}: a cut answer is a transport failure: {e:?}"
            ),
        }
        assert!(store.get(("p", "d")).await.unwrap().unwrap().same(&d));
    }
    // A delay is waited out.
    proxy.fault_next(
        Kinds::of(RequestKind::TableGet),
        Fault::Delay(Duration::from_millis(400)),
        1,
    );
    let started = Instant::now();
    assert!(store.get(("p", "c")).await.unwrap().is_some());
    assert!(started.elapsed() >= Duration::from_millis(400));

    let counts = proxy.counts();
    assert_eq!(
        (counts.resets, counts.cut_bodies, counts.delayed),
        (2, 2, 1),
        "{counts:?}"
    );
    assert_eq!(proxy.pending(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rate_faults_about_that_share_of_requests() {
    let Some((env, proxy)) = proxied_env("proxyrate", 4).await else {
        return;
    };
    let store = env.tables.store_in::<Customer>(&env.table);
    store.ensure_created().await.unwrap();
    let mut c = Customer::new("p", "c", "x");
    store.create(&mut c).await.unwrap();
    proxy.set_rate(Kinds::of(RequestKind::TableGet), Fault::ResetBeforeForward, 100_000);
    for _ in 0..200 {
        assert!(store.get(("p", "c")).await.unwrap().is_some(), "resets are retried");
    }
    let counts = proxy.counts();
    assert!(
        (5..60).contains(&counts.resets),
        "about 10 % of about 220 gets: {counts:?}"
    );
}

/// A table whose name starts with `Tables` holds entities like any other:
/// a write there whose answer is lost goes back to the store, which settles
/// it, and is not sent again blindly as the creation of a table would be
/// (a blind resend of `mutate`'s conditional write fails on its own change,
/// and the intent would then run twice).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_mutate_on_a_table_named_tables_prefix_counts_once_when_answers_are_lost() {
    let Some((env, proxy)) = proxied_env("tablesprefix", 5).await else {
        return;
    };
    let table = format!("TablesAudit{}", &env.table[1..]);
    let store = env.tables.store_in::<Customer>(&table);
    store.ensure_created().await.unwrap();
    store.create(&mut Customer::new("p", "n", "counter")).await.unwrap();
    for i in 0..4u32 {
        proxy.fault_next(Kinds::of(RequestKind::TableWrite), Fault::DropAnswer, 1);
        let c = store.mutate(("p", "n"), |c| c.visits += 1).await.unwrap();
        assert_eq!(c.visits, i + 1, "counted once");
    }
    assert_eq!(proxy.counts().dropped_write_answers, 4, "every answer was lost");
    assert_eq!(store.get(("p", "n")).await.unwrap().unwrap().visits, 4);
    env.tables.backend().delete_table(&table).await.unwrap();
}
