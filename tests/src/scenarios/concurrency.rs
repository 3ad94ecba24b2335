//! Read-modify-write under real overlap: no update is lost.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use unified_tables::backend::faulty::{FaultTarget, FaultTiming, FaultyBackend};
use unified_tables::{Error, MutateAttempts, Outcome, RetryPolicy, StoreOptions, Tables};

use crate::model::{Customer, Note};
use crate::Env;

/// Blocks this writer until `n` writers are all between their read and their write.
fn hold(barrier: &Barrier) {
    tokio::task::block_in_place(|| {
        barrier.wait();
    });
}

pub async fn concurrent_mutates_lose_no_update(env: &Env) {
    // Enough attempts and time that every increment lands however the races go.
    let tables = env.with_options(StoreOptions {
        mutate_attempts: MutateAttempts::new(200).unwrap(),
        mutate_budget: std::time::Duration::from_secs(120),
        ..StoreOptions::default()
    });
    let store = tables.store_in::<Customer>(&env.table);
    store.create(&mut Customer::new("p", "counter", "c")).await.unwrap();
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move {
                for _ in 0..50 {
                    store
                        .mutate(("p", "counter"), |c| c.visits += 1)
                        .await
                        .expect("every increment lands");
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(store.get(("p", "counter")).await.unwrap().unwrap().visits, 400);
}

pub async fn a_forced_race_re_applies_the_intent_to_the_fresh_version(env: &Env) {
    let store = env.tables.store_in::<Customer>(&env.table);
    store.create(&mut Customer::new("p", "c", "x")).await.unwrap();
    let barrier = Arc::new(Barrier::new(2));
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let writers: Vec<_> = (0..2)
        .map(|_| {
            let (store, barrier, calls, seen) = (store.clone(), barrier.clone(), calls.clone(), seen.clone());
            tokio::spawn(async move {
                let mut first = true;
                store
                    .mutate(("p", "c"), |c| {
                        calls.fetch_add(1, Ordering::SeqCst);
                        seen.lock().unwrap().push(c.visits);
                        if std::mem::take(&mut first) {
                            hold(&barrier); // both writers have read version 0 here
                        }
                        c.visits += 1;
                    })
                    .await
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap().expect("both writers succeed");
    }
    assert_eq!(
        store.get(("p", "c")).await.unwrap().unwrap().visits,
        2,
        "no update was lost"
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        3,
        "exactly one writer re-applied its intent"
    );
    let mut seen = seen.lock().unwrap().clone();
    seen.sort();
    assert_eq!(
        seen,
        vec![0, 0, 1],
        "the retry saw the winner's version, not its own stale body"
    );
}

pub async fn racing_transitions_have_one_winner(env: &Env) {
    let store = env.tables.store_in::<Customer>(&env.table);
    store.create(&mut Customer::new("p", "gate", "open")).await.unwrap();
    let barrier = Arc::new(Barrier::new(2));
    let racers: Vec<_> = ["alice", "bob"]
        .into_iter()
        .map(|who| {
            let (store, barrier) = (store.clone(), barrier.clone());
            tokio::spawn(async move {
                let mut first = true;
                store
                    .try_transition(
                        ("p", "gate"),
                        |g| g.name == "open",
                        |g| {
                            if std::mem::take(&mut first) {
                                hold(&barrier);
                            }
                            g.name = format!("resolved by {who}");
                        },
                    )
                    .await
                    .expect("no error for expected branches")
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    for r in racers {
        outcomes.push(r.await.unwrap());
    }
    let winners: Vec<&Customer> = outcomes
        .iter()
        .filter_map(|o| if let Outcome::Updated(c) = o { Some(c) } else { None })
        .collect();
    let losers: Vec<&Customer> = outcomes
        .iter()
        .filter_map(|o| {
            if let Outcome::PreconditionFailed(c) = o {
                Some(c)
            } else {
                None
            }
        })
        .collect();
    assert_eq!((winners.len(), losers.len()), (1, 1), "{outcomes:?}");
    assert_eq!(losers[0].name, winners[0].name, "the loser sees the winner's row");
    assert_eq!(store.get(("p", "gate")).await.unwrap().unwrap().name, winners[0].name);

    let again = store
        .try_transition(("p", "gate"), |g| g.name == "open", |g| g.name = "x".into())
        .await
        .unwrap();
    assert!(matches!(again, Outcome::PreconditionFailed(_)));
    let missing = store
        .try_transition(("p", "none"), |_| true, |g| g.name = "x".into())
        .await
        .unwrap();
    assert_eq!(missing, Outcome::NotFound);
}

pub async fn try_mutate_reports_expected_branches_as_values(env: &Env) {
    let store = env.tables.store_in::<Customer>(&env.table);
    assert_eq!(
        store.try_mutate(("p", "none"), |c| c.visits += 1).await.unwrap(),
        Outcome::NotFound
    );
    let err = store.mutate(("p", "none"), |c| c.visits += 1).await.unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    store.create(&mut Customer::new("p", "c", "x")).await.unwrap();
    let out = store.try_mutate(("p", "c"), |c| c.visits += 5).await.unwrap();
    assert_eq!(out.updated().map(|c| c.visits), Some(5));

    // A row that changes on every attempt: Conflicted, nothing thrown.
    let hot = env
        .with_options(StoreOptions {
            mutate_attempts: MutateAttempts::new(2).unwrap(),
            ..StoreOptions::default()
        })
        .store_in::<Customer>(&env.table);
    let meddler = store.clone();
    let out = hot
        .try_mutate(("p", "c"), |c| {
            c.visits += 1;
            // Another writer commits between this attempt's read and its write.
            let meddler = meddler.clone();
            tokio::task::block_in_place(|| {
                tokio::runtime::Handle::current().block_on(async {
                    meddler.mutate(("p", "c"), |m| m.balance += 1.0).await.unwrap();
                })
            });
        })
        .await
        .unwrap();
    assert_eq!(out, Outcome::Conflicted);
    let stored = store.get(("p", "c")).await.unwrap().unwrap();
    assert_eq!(
        (stored.visits, stored.balance),
        (5, 2.0),
        "the hot writer stored nothing; with 2 attempts its intent ran twice, so the meddler wrote twice"
    );
}

pub async fn a_mutate_that_always_loses_stops_at_its_time_budget(env: &Env) {
    let store = env.tables.store_in::<Customer>(&env.table);
    store.create(&mut Customer::new("p", "hot", "x")).await.unwrap();
    // A thousand attempts, but one second to spend: the pauses (up to 100 ms
    // each, growing from 4 ms) run past the budget long before the attempts run out.
    let hot = env
        .with_options(StoreOptions {
            mutate_attempts: MutateAttempts::new(1_000).unwrap(),
            mutate_budget: std::time::Duration::from_secs(1),
            ..StoreOptions::default()
        })
        .store_in::<Customer>(&env.table);
    let meddler = store.clone();
    let mut runs = 0;
    let err = hot
        .mutate(("p", "hot"), |c| {
            runs += 1;
            c.visits += 1;
            // Another writer commits between every attempt's read and its write.
            let meddler = meddler.clone();
            tokio::task::block_in_place(|| {
                tokio::runtime::Handle::current().block_on(async {
                    meddler.mutate(("p", "hot"), |m| m.balance += 1.0).await.unwrap();
                })
            });
        })
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Conflict { .. }), "{err}");
    assert!(
        (2..100).contains(&runs),
        "stopped by the budget, not the attempts: {runs} runs"
    );
    let stored = store.get(("p", "hot")).await.unwrap().unwrap();
    assert_eq!(stored.visits, 0, "no attempt of the hot writer landed");
    assert_eq!(stored.balance, f64::from(runs), "every meddling write landed");
}

pub async fn get_or_create_converges_on_the_winner(env: &Env) {
    let store = env.tables.store_in::<Customer>(&env.table);
    let barrier = Arc::new(Barrier::new(2));
    let racers: Vec<_> = ["first", "second"]
        .into_iter()
        .map(|name| {
            let (store, barrier) = (store.clone(), barrier.clone());
            tokio::spawn(async move {
                store
                    .get_or_create(("p", "member"), || {
                        hold(&barrier); // both saw "absent" and build their own entity
                        Customer::new("p", "member", name)
                    })
                    .await
                    .expect("both callers get the row")
            })
        })
        .collect();
    let mut got = Vec::new();
    for r in racers {
        got.push(r.await.unwrap());
    }
    assert_eq!(got[0].name, got[1].name, "both converge on the one stored row");
    assert_eq!(store.get(("p", "member")).await.unwrap().unwrap().name, got[0].name);
    let existing = store
        .get_or_create(("p", "member"), || panic!("not called for an existing row"))
        .await
        .unwrap();
    assert_eq!(existing.name, got[0].name);
    let err = store
        .get_or_create(("p", "other"), || Customer::new("p", "wrong", "x"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidValue { .. }), "{err}");
}

pub async fn mutate_or_create_applies_the_delta_on_insert_and_update(env: &Env) {
    let tables = env.with_options(StoreOptions {
        mutate_attempts: MutateAttempts::new(100).unwrap(),
        ..StoreOptions::default()
    });
    let store = tables.store_in::<Customer>(&env.table);
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move {
                for _ in 0..10 {
                    store
                        .mutate_or_create(
                            ("p", "feedback"),
                            || Customer::new("p", "feedback", "f"),
                            |c| c.visits += 1,
                        )
                        .await
                        .expect("insert-or-mutate");
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(
        store.get(("p", "feedback")).await.unwrap().unwrap().visits,
        40,
        "the first insert counted too"
    );
}

pub async fn a_rejected_write_is_classified_by_re_reading(env: &Env) {
    let faulty = FaultyBackend::new(env.backend().clone());
    // The faults are planned per request: every read goes to the table here,
    // and a write refused as not processed is not sent again.
    let tables = Tables::with_backend(faulty.clone())
        .without_cache()
        .with_retry(RetryPolicy::no_retries());
    let store = tables.store_in::<Customer>(&env.table);
    store.create(&mut Customer::new("p", "c", "x")).await.unwrap();

    // The version did not move: the write's own error comes back, no retry.
    faulty.fail_next(FaultTarget::Write, FaultTiming::Before, || {
        Error::service(400, "InvalidInput", "bad request")
    });
    let err = store.mutate(("p", "c"), |c| c.visits += 1).await.unwrap_err();
    assert_eq!(err.service_code(), Some((400, "InvalidInput")), "{err}");

    // The write was refused as not processed and the re-read failed: the write's own
    // answer, which says nothing was stored (the cause of the re-read is logged).
    faulty.fail_next(FaultTarget::Write, FaultTiming::Before, || {
        Error::service(503, "ServerBusy", "busy")
    });
    faulty.fail_after(FaultTarget::Get, 1, FaultTiming::Before, || {
        Error::transport("connection reset")
    });
    let err = store.mutate(("p", "c"), |c| c.visits += 1).await.unwrap_err();
    assert_eq!(err.kind(), unified_tables::ErrorKind::Throttled, "{err}");
    // A write refused on condition (412) whose re-read failed: Conflict.
    faulty.fail_next(FaultTarget::Write, FaultTiming::Before, || {
        Error::service(412, "UpdateConditionNotSatisfied", "stale")
    });
    faulty.fail_after(FaultTarget::Get, 1, FaultTiming::Before, || {
        Error::transport("connection reset")
    });
    let err = store.mutate(("p", "c"), |c| c.visits += 1).await.unwrap_err();
    assert!(matches!(err, Error::Conflict { .. }), "{err}");
    assert_eq!(faulty.pending(), 0);
    // A failed first read is reported as it is.
    faulty.fail_next(FaultTarget::Get, FaultTiming::Before, || {
        Error::transport("connection reset")
    });
    let err = store.mutate(("p", "c"), |c| c.visits += 1).await.unwrap_err();
    assert!(matches!(err, Error::Transport { .. }), "{err}");
    assert_eq!(
        store.get(("p", "c")).await.unwrap().unwrap().visits,
        0,
        "no failed attempt stored anything"
    );

    // A lost response applies the intent once: the write took effect, its answer was
    // lost, and the read-back finds the write's token on the row.
    faulty.fail_next(FaultTarget::Write, FaultTiming::After, || {
        Error::transport("response lost")
    });
    let before = store.get(("p", "c")).await.unwrap().unwrap().visits;
    let mut runs = 0;
    let c = store
        .mutate(("p", "c"), |c| {
            runs += 1;
            c.visits += 1
        })
        .await
        .unwrap();
    assert_eq!(runs, 1, "the intent ran once");
    assert_eq!(c.visits, before + 1);
    assert_eq!(store.get(("p", "c")).await.unwrap().unwrap().visits, before + 1);

    // The row deleted under the write: NotFound.
    let deleter = store.clone();
    let err = store
        .mutate(("p", "c"), |c| {
            c.visits += 1;
            tokio::task::block_in_place(|| {
                tokio::runtime::Handle::current().block_on(async { deleter.delete(("p", "c")).await.unwrap() })
            });
        })
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
}

pub async fn composite_ids_work_with_the_outcome_verbs(env: &Env) {
    let notes = env.tables.store_in::<Note>(&env.table);
    let n = notes
        .get_or_create("Team|Note 1", || Note {
            id: "team|note-1".into(),
            body: "b".into(),
            created_at: None,
            updated_at: None,
            etag: None,
        })
        .await
        .unwrap();
    assert_eq!(n.id, "team|note-1");
    let n = notes.mutate("TEAM|NOTE 1", |n| n.body.push('!')).await.unwrap();
    assert_eq!(n.body, "b!");
}

/// A write whose answer never came and whose row cannot be read back within
/// the retry policy is reported as an unknown outcome, never as a conflict
/// that invites applying the change again, nor as a batch that committed
/// nothing. (A read-back that can be made settles the write: see the
/// `exactly_once` scenarios.)
pub async fn lost_answers_are_reported_as_unknown_outcomes(env: &Env) {
    let faulty = FaultyBackend::new(env.backend().clone());
    // The faults are planned per request: every read goes to the table here.
    let tables = Tables::with_backend(faulty.clone())
        .without_cache()
        .with_retry(quick_retries());
    let store = tables.store_in::<Customer>(&env.table);
    let lost = || Error::transport("response lost");

    // A create applied whose answer was lost, and no read-back answers.
    faulty.fail_next(FaultTarget::Write, FaultTiming::After, lost);
    faulty.fail_every(FaultTarget::Get, FaultTiming::Before, lost);
    let err = store.create(&mut Customer::new("p", "c", "x")).await.unwrap_err();
    faulty.clear();
    assert!(
        matches!(&err, Error::OutcomeUnknown { row_key, .. } if row_key == "c"),
        "{err}"
    );
    assert_eq!(err.kind(), unified_tables::ErrorKind::OutcomeUnknown);
    assert!(store.get(("p", "c")).await.unwrap().is_some(), "it was applied");

    // A mutate whose write lost its answer and whose read-backs failed: the intent
    // is not applied again.
    faulty.fail_next(FaultTarget::Write, FaultTiming::After, lost);
    faulty.fail_after(FaultTarget::Get, 1, FaultTiming::Before, lost);
    faulty.fail_every(FaultTarget::Get, FaultTiming::Before, lost);
    let mut runs = 0;
    let err = store
        .mutate(("p", "c"), |c| {
            runs += 1;
            c.visits += 1
        })
        .await
        .unwrap_err();
    faulty.clear();
    assert!(matches!(err, Error::OutcomeUnknown { .. }), "{err}");
    assert!(err.to_string().contains("read the entity before"), "{err}");
    assert_eq!(runs, 1);
    assert_eq!(store.get(("p", "c")).await.unwrap().unwrap().visits, 1, "applied once");

    // A batch transaction applied whose answer was lost.
    let batch: Vec<Customer> = (0..5).map(|i| Customer::new("p", &format!("b{i}"), "y")).collect();
    faulty.fail_next(FaultTarget::Transaction, FaultTiming::After, lost);
    faulty.fail_every(FaultTarget::Get, FaultTiming::Before, lost);
    let err = store.create_batch(&batch).await.unwrap_err();
    faulty.clear();
    match &err {
        Error::BatchFailed {
            committed: 0, source, ..
        } => {
            assert!(matches!(**source, Error::OutcomeUnknown { .. }), "{err}")
        }
        other => panic!("expected BatchFailed with an unknown outcome, got {other}"),
    }
    for c in &batch {
        assert!(
            store.get(("p", c.email.as_str())).await.unwrap().is_some(),
            "{} stored",
            c.email
        );
    }
}

/// A policy of 3 attempts with short pauses.
fn quick_retries() -> RetryPolicy {
    RetryPolicy::builder()
        .attempts(3)
        .backoff(Duration::from_millis(5), Duration::from_millis(20))
        .build()
        .unwrap()
}
