//! Typed partial updates: a Merge of only the named columns.

use std::sync::{Arc, Barrier};

use unified_tables::{Error, Value};

use crate::model::{Account, Ticket};
use crate::Env;

pub async fn patch_writes_only_the_named_columns(env: &Env) {
    let store = env.tables.store_in::<Ticket>(&env.table);
    let mut t = Ticket::new("q", 1);
    let created = store.create(&mut t).await.unwrap();
    env.reset_counts();
    let etag = store
        .patch(
            ("q", "0001"),
            Ticket::update()
                .priority(9)
                .address(|a| a.city("Lviv").zip("79000"))
                .owner("zoe"),
        )
        .await
        .unwrap();
    assert_eq!(env.counts().entity_requests(), 1, "a patch is one Merge, no read");
    assert_ne!(etag, created);
    let got = store.get(("q", "0001")).await.unwrap().unwrap();
    assert_eq!(got.etag.as_ref(), Some(&etag), "the patch returns the new ETag");
    assert_eq!(
        (got.priority, got.address.city.as_str(), got.address.zip.as_deref()),
        (9, "Lviv", Some("79000"))
    );
    assert_eq!(got.owner.as_deref(), Some("zoe"));
    assert_eq!(
        (got.title.as_str(), got.score, &got.labels),
        (t.title.as_str(), t.score, &t.labels),
        "other columns kept"
    );
    assert!(got.updated_at > t.updated_at, "the updated stamp is set");

    // With an ETag: a column-level compare-and-swap.
    let stale = created;
    let err = store
        .patch(("q", "0001"), Ticket::update().priority(1).with_etag(stale))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Conflict { .. }), "{err}");
    store
        .patch(("q", "0001"), Ticket::update().priority(2).with_etag(etag))
        .await
        .expect("current ETag");
    assert_eq!(store.get(("q", "0001")).await.unwrap().unwrap().priority, 2);

    // A missing row is not created.
    let err = store
        .patch(("q", "nope"), Ticket::update().priority(1))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    // An empty update and a value too large for one plain cell are refused before sending.
    env.reset_counts();
    assert!(matches!(
        store.patch(("q", "0001"), Ticket::update()).await,
        Err(Error::Config { .. })
    ));
    let err = store
        .patch(("q", "0001"), Ticket::update().title("x".repeat(40_000)))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("replace the entity"), "{err}");
    assert_eq!(env.counts().entity_requests(), 0);
    // JSON fields are written as one JSON cell.
    store
        .patch(("q", "0001"), Ticket::update().labels(vec!["a".into(), "b".into()]))
        .await
        .unwrap();
    assert_eq!(store.get(("q", "0001")).await.unwrap().unwrap().labels, vec!["a", "b"]);
    let raw = unified_tables::backend::Backend::get(env.backend(), &env.table, "q", "0001")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(raw.get("Labels__Json"), Some(&Value::String("[\"a\",\"b\"]".into())));
}

pub async fn concurrent_patches_of_different_columns_both_land(env: &Env) {
    let store = env.tables.store_in::<Ticket>(&env.table);
    store.create(&mut Ticket::new("q", 1)).await.unwrap();
    let barrier = Arc::new(Barrier::new(2));
    let a = {
        let (store, barrier) = (store.clone(), barrier.clone());
        tokio::spawn(async move {
            let seen = store.get(("q", "0001")).await.unwrap().unwrap();
            tokio::task::block_in_place(|| barrier.wait()); // both have read the same version
            store
                .patch(("q", "0001"), Ticket::update().priority(seen.priority + 10))
                .await
        })
    };
    let b = {
        let (store, barrier) = (store.clone(), barrier.clone());
        tokio::spawn(async move {
            let _seen = store.get(("q", "0001")).await.unwrap().unwrap();
            tokio::task::block_in_place(|| barrier.wait());
            store.patch(("q", "0001"), Ticket::update().title("renamed")).await
        })
    };
    a.await.unwrap().unwrap();
    b.await.unwrap().unwrap();
    let got = store.get(("q", "0001")).await.unwrap().unwrap();
    assert_eq!(
        (got.priority, got.title.as_str()),
        (11, "renamed"),
        "both patches landed"
    );
}

pub async fn protected_fields_need_an_authorised_builder(env: &Env) {
    let store = env.tables.store_in::<Account>(&env.table);
    store.create(&mut Account::new("a", "alice")).await.unwrap();
    let clerk = Account::update()
        .authorize(|role: &str| role == "clerk")
        .credit_limit(5);
    let err = store.patch(("acct", "a"), clerk).await.unwrap_err();
    assert!(
        matches!(&err, Error::Protected { column, .. } if column == "CreditLimit"),
        "{err}"
    );
    let accountant = Account::update()
        .authorize(|role: &str| role == "accountant")
        .credit_limit(5)
        .note("raised");
    store
        .patch(("acct", "a"), accountant)
        .await
        .expect("an accountant may set the limit");
    let got = store.get(("acct", "a")).await.unwrap().unwrap();
    assert_eq!((got.credit_limit, got.note.as_str()), (5, "raised"));
    // Unprotected fields need no authorisation.
    store
        .patch(("acct", "a"), Account::update().note("plain"))
        .await
        .unwrap();
}

/// A caller's ETag is a version: `*` or an empty one is refused before
/// sending, identically on every backend, and nothing is written.
pub async fn a_wildcard_or_empty_etag_is_refused(env: &Env) {
    let store = env.tables.store_in::<Ticket>(&env.table);
    let mut t = Ticket::new("q", 7);
    let before = store.create(&mut t).await.unwrap();
    for bad in ["*", ""] {
        env.reset_counts();
        let err = store
            .patch(
                ("q", "0007"),
                Ticket::update().priority(5).with_etag(unified_tables::ETag::new(bad)),
            )
            .await
            .unwrap_err();
        assert!(
            matches!(&err, Error::InvalidValue { column, .. } if column == "ETag"),
            "{bad:?}: {err}"
        );
        assert_eq!(env.counts().entity_requests(), 0, "{bad:?}: nothing is sent");
    }
    let got = store.get(("q", "0007")).await.unwrap().unwrap();
    assert_eq!(got.etag.as_ref(), Some(&before), "the row is unchanged");
}
