//! Ordering tokens: a change lands only when its token is newer than the one
//! stored beside the value, whatever order and however often it arrives.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier};

use unified_tables::backend::Backend;
use unified_tables::{Delivery, ETag, Error, OrderingToken, StoreOptions, TableEntity, Value};

use crate::Env;

/// What a storage ledger records per blob: the bytes an event reported and
/// the sequencer of that event.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct Ledger {
    #[table(partition_key)]
    pub account: String,
    #[table(row_key)]
    pub blob: String,
    pub bytes: u64,
    pub note: String,
    #[table(ordering)]
    pub sequencer: Option<OrderingToken>,
    #[table(etag)]
    pub etag: Option<ETag>,
}

impl Ledger {
    pub fn new(account: &str, blob: &str) -> Ledger {
        Ledger {
            account: account.into(),
            blob: blob.into(),
            bytes: 0,
            note: String::new(),
            sequencer: None,
            etag: None,
        }
    }
}

/// The bytes each event reports, derived from its token so that the stored
/// value says which event it came from.
fn bytes_of(token: &str) -> u64 {
    u64::from_str_radix(token, 16).unwrap() * 10
}

pub async fn out_of_order_and_repeated_deliveries_keep_the_newest(env: &Env) {
    let ledger = env.tables.store_in::<Ledger>(&env.table);
    ledger.create(&mut Ledger::new("acct", "blob")).await.unwrap();
    // Hex sequencers of different widths: "ff" < "100" only once padded.
    let deliveries = [
        "0a",
        "3",
        "ff",
        "ff",
        "100",
        "0ff",
        "7",
        "100",
        "00000000000000000000101",
        "42",
    ];
    let mut newest: Option<&str> = None;
    for token in deliveries {
        let outcome = ledger
            .apply_if_newer(("acct", "blob"), token, |l| l.bytes = bytes_of(token))
            .await
            .unwrap();
        let expect_applied = newest.is_none_or(|n| OrderingToken::new(token) > OrderingToken::new(n));
        assert_eq!(
            outcome.applied(),
            expect_applied,
            "delivery {token} after {newest:?}: {outcome:?}"
        );
        if expect_applied {
            newest = Some(token);
        }
        match outcome {
            Delivery::Applied(l) | Delivery::Stale(l) => {
                assert_eq!(l.bytes, bytes_of(newest.unwrap()), "the entity as stored comes back");
                assert_eq!(l.sequencer, Some(OrderingToken::new(newest.unwrap())));
            }
            Delivery::NotFound => panic!("the row exists"),
        }
    }
    let stored = ledger.get(("acct", "blob")).await.unwrap().unwrap();
    assert_eq!(newest, Some("00000000000000000000101"));
    assert_eq!(stored.bytes, bytes_of("101"));
    // Stored as the token was given, in its own column.
    let row = env.backend().get(&env.table, "acct", "blob").await.unwrap().unwrap();
    assert_eq!(
        row.get("Sequencer"),
        Some(&Value::String("00000000000000000000101".into()))
    );

    // A write without a position keeps the token, so an old event stays old.
    ledger
        .mutate(("acct", "blob"), |l| l.note = "checked".into())
        .await
        .unwrap();
    let late = ledger
        .apply_if_newer(("acct", "blob"), "100", |l| l.bytes = 1)
        .await
        .unwrap();
    assert!(matches!(late, Delivery::Stale(ref l) if l.note == "checked" && l.bytes == bytes_of("101")));
}

pub async fn missing_entities_and_empty_tokens(env: &Env) {
    let ledger = env.tables.store_in::<Ledger>(&env.table);
    let missing = ledger
        .apply_if_newer(("acct", "none"), "1", |l| l.bytes = 1)
        .await
        .unwrap();
    assert_eq!(missing, Delivery::NotFound);
    assert!(!missing.applied());

    // The first event creates the row; a repeat of it is stale.
    let first = ledger
        .apply_if_newer_or_create(("acct", "new"), "5", || Ledger::new("acct", "new"), |l| l.bytes = 50)
        .await
        .unwrap();
    assert!(first.applied());
    let again = ledger
        .apply_if_newer_or_create(("acct", "new"), "5", || Ledger::new("acct", "new"), |l| l.bytes = 99)
        .await
        .unwrap();
    assert!(matches!(again, Delivery::Stale(ref l) if l.bytes == 50));
    env.reset_counts();
    let newer = ledger
        .apply_if_newer_or_create(("acct", "new"), "6", || Ledger::new("acct", "new"), |l| l.bytes += 1)
        .await
        .unwrap();
    assert_eq!(env.counts().entity_requests(), 2, "one read, one conditional write");
    assert_eq!(
        newer.entity().map(|l| l.bytes),
        Some(51),
        "the intent applies to the stored row"
    );

    // Refused before anything is sent.
    env.reset_counts();
    let err = ledger
        .apply_if_newer(("acct", "new"), "", |l| l.bytes = 0)
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::InvalidValue { ref column, .. } if column == "Sequencer"),
        "{err}"
    );
    assert_eq!(env.counts().entity_requests(), 0, "refused before reading");
    let err = ledger
        .apply_if_newer_or_create(("acct", "other"), "1", || Ledger::new("acct", "wrong"), |_| {})
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidValue { .. }), "{err}");
    assert!(ledger.get(("acct", "wrong")).await.unwrap().is_none());
    assert!(ledger.get(("acct", "other")).await.unwrap().is_none());
    let stored = ledger.get(("acct", "new")).await.unwrap().unwrap();
    assert_eq!(stored.sequencer, Some(OrderingToken::new("6")));
}

/// Two deliveries that both read the same version; `first` writes first,
/// then `second` writes on its stale version and must re-read.
async fn forced_race(
    env: &Env,
    options: StoreOptions,
    first: &'static str,
    second: &'static str,
) -> (Ledger, Result<Delivery<Ledger>, Error>, usize) {
    let ledger = env.with_options(options).store_in::<Ledger>(&env.table);
    let blob = format!("race-{first}-{second}");
    let mut start = Ledger::new("acct", &blob);
    start.sequencer = Some(OrderingToken::new("1"));
    ledger.create(&mut start).await.unwrap();
    let read = Arc::new(Barrier::new(2));
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let second_calls = Arc::new(AtomicUsize::new(0));

    let winner = {
        let (ledger, read, blob) = (ledger.clone(), read.clone(), blob.clone());
        tokio::spawn(async move {
            let mut held = false;
            let out = ledger
                .apply_if_newer(("acct", blob.as_str()), first, |l| {
                    if !std::mem::replace(&mut held, true) {
                        tokio::task::block_in_place(|| {
                            read.wait();
                        });
                    }
                    l.bytes = bytes_of(first);
                })
                .await
                .unwrap();
            done_tx.send(()).unwrap();
            out
        })
    };
    let loser = {
        let (ledger, read, blob, calls) = (ledger.clone(), read.clone(), blob.clone(), second_calls.clone());
        tokio::spawn(async move {
            ledger
                .apply_if_newer(("acct", blob.as_str()), second, move |l| {
                    if calls.fetch_add(1, Ordering::SeqCst) == 0 {
                        // Both have read the version with token 1; let the other write first.
                        tokio::task::block_in_place(|| {
                            read.wait();
                            done_rx.recv().unwrap();
                        });
                    }
                    l.bytes = bytes_of(second);
                })
                .await
        })
    };
    assert!(
        winner.await.unwrap().applied(),
        "the first writer's token is newer than 1"
    );
    let out = loser.await.unwrap();
    let stored = ledger.get(("acct", blob.as_str())).await.unwrap().unwrap();
    (stored, out, second_calls.load(Ordering::SeqCst))
}

pub async fn an_older_change_that_loses_the_race_is_dropped_on_the_re_read(env: &Env) {
    let (stored, out, calls) = forced_race(env, StoreOptions::default(), "9", "5").await;
    let out = out.unwrap();
    assert!(
        matches!(out, Delivery::Stale(ref l) if l.bytes == bytes_of("9")),
        "{out:?}"
    );
    assert_eq!(
        calls, 1,
        "the re-read found a newer token: the intent did not run again"
    );
    assert_eq!(stored.bytes, bytes_of("9"));
    assert_eq!(stored.sequencer, Some(OrderingToken::new("9")));
}

pub async fn a_newer_change_that_loses_the_race_is_applied_on_the_re_read(env: &Env) {
    let (stored, out, calls) = forced_race(env, StoreOptions::default(), "5", "9").await;
    let out = out.unwrap();
    assert!(out.applied(), "{out:?}");
    assert_eq!(
        calls, 2,
        "the intent was applied again, to the version the older change wrote"
    );
    assert_eq!(stored.bytes, bytes_of("9"));
    assert_eq!(stored.sequencer, Some(OrderingToken::new("9")));
}

pub async fn a_newer_change_that_loses_every_attempt_is_a_conflict(env: &Env) {
    let one = StoreOptions {
        mutate_attempts: unified_tables::MutateAttempts::new(1).unwrap(),
        ..StoreOptions::default()
    };
    let (stored, out, calls) = forced_race(env, one, "5", "9").await;
    let err = out.unwrap_err();
    assert!(matches!(err, Error::Conflict { .. }), "{err}");
    assert_eq!(calls, 1);
    assert_eq!(
        stored.sequencer,
        Some(OrderingToken::new("5")),
        "nothing of the lost attempt was written"
    );
}

pub async fn concurrent_deliveries_keep_the_highest_token(env: &Env) {
    let tables = env.with_options(StoreOptions {
        mutate_attempts: unified_tables::MutateAttempts::new(20).unwrap(),
        ..StoreOptions::default()
    });
    let ledger = tables.store_in::<Ledger>(&env.table);
    ledger.create(&mut Ledger::new("acct", "hot")).await.unwrap();
    // Every token twice (redeliveries), in a scrambled order.
    let tokens: Vec<String> = [6, 2, 8, 1, 7, 3, 5, 4, 8, 2, 6, 1]
        .iter()
        .map(|n: &u32| format!("{n:x}"))
        .collect();
    let barrier = Arc::new(Barrier::new(tokens.len()));
    let tasks: Vec<_> = tokens
        .iter()
        .cloned()
        .map(|token| {
            let (ledger, barrier) = (ledger.clone(), barrier.clone());
            tokio::spawn(async move {
                let mut held = false;
                let out = ledger
                    .apply_if_newer(("acct", "hot"), token.as_str(), |l| {
                        if !std::mem::replace(&mut held, true) {
                            // Every delivery has read the same version before any writes.
                            tokio::task::block_in_place(|| {
                                barrier.wait();
                            });
                        }
                        l.bytes = bytes_of(&token);
                    })
                    .await
                    .unwrap();
                (token, out.applied())
            })
        })
        .collect();
    let mut applied = Vec::new();
    for t in tasks {
        let (token, was_applied) = t.await.unwrap();
        if was_applied {
            applied.push(token);
        }
    }
    let stored = ledger.get(("acct", "hot")).await.unwrap().unwrap();
    assert_eq!(stored.sequencer, Some(OrderingToken::new("8")));
    assert_eq!(stored.bytes, bytes_of("8"), "the value belongs to the highest token");
    assert_eq!(
        applied.iter().filter(|t| t.as_str() == "8").count(),
        1,
        "a redelivery of the newest token is stale: {applied:?}"
    );
}
