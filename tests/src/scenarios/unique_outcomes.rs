//! A unique value held by another entity is its own answer: the error's
//! kind is `UniqueViolation` (never `AlreadyExists`, which says the keys
//! are taken), and the outcome verbs return it as a value.

use unified_tables::{Error, ErrorKind, Key, Outcome};

use crate::scenarios::index_global::Account;
use crate::scenarios::indexes::Member;
use crate::Env;

/// Every verb that can give an entity another's unique value reports the
/// kind `UniqueViolation`, for a local and for a global unique index; a
/// create on taken keys stays `AlreadyExists`.
pub async fn a_unique_violation_has_its_own_error_kind(env: &Env) {
    let members = env.tables.store_in::<Member>(&env.table);
    members
        .create(&mut Member::new("t", "a", "a@x.com", "Lviv"))
        .await
        .unwrap();
    members
        .create(&mut Member::new("t", "b", "b@x.com", "Kyiv"))
        .await
        .unwrap();

    let taken = members
        .create(&mut Member::new("t", "c", "a@x.com", "Lviv"))
        .await
        .unwrap_err();
    assert_eq!(taken.kind(), ErrorKind::UniqueViolation, "create: {taken}");
    let patched = members
        .patch(("t", "b"), Member::update().email("a@x.com"))
        .await
        .unwrap_err();
    assert_eq!(patched.kind(), ErrorKind::UniqueViolation, "patch: {patched}");
    let mutated = members
        .mutate(("t", "b"), |m| m.email = "a@x.com".into())
        .await
        .unwrap_err();
    assert_eq!(mutated.kind(), ErrorKind::UniqueViolation, "mutate: {mutated}");
    assert!(
        matches!(&mutated, Error::UniqueViolation { index, holder, .. } if index == "email" && **holder == Key::new("t", "a")),
        "{mutated}"
    );
    // A create that would insert with another's value: the value is named, not a conflict.
    let inserted = members
        .mutate_or_create(("t", "d"), || Member::new("t", "d", "a@x.com", "Lviv"), |_| {})
        .await
        .unwrap_err();
    assert_eq!(
        inserted.kind(),
        ErrorKind::UniqueViolation,
        "mutate_or_create: {inserted}"
    );
    assert!(members.get(("t", "d")).await.unwrap().is_none(), "nothing stored");

    // The keys taken: AlreadyExists, as before.
    let keys = members
        .create(&mut Member::new("t", "a", "new@x.com", "Lviv"))
        .await
        .unwrap_err();
    assert_eq!(keys.kind(), ErrorKind::AlreadyExists, "{keys}");

    let accounts = env.tables.store_in::<Account>(&env.table);
    accounts
        .create(&mut Account::new("t1", "a", "UA", "same"))
        .await
        .unwrap();
    let global = accounts
        .create(&mut Account::new("t2", "b", "UA", "same"))
        .await
        .unwrap_err();
    assert_eq!(global.kind(), ErrorKind::UniqueViolation, "global create: {global}");
}

/// `try_mutate` and `try_transition` return `Outcome::UniqueViolation`
/// naming the index and the holder, leave the row as it was, and still
/// return `Updated` for a change to a free value.
pub async fn outcome_verbs_return_a_unique_violation_as_a_value(env: &Env) {
    let members = env.tables.store_in::<Member>(&env.table);
    members
        .create(&mut Member::new("t", "a", "a@x.com", "Lviv"))
        .await
        .unwrap();
    members
        .create(&mut Member::new("t", "b", "b@x.com", "Kyiv"))
        .await
        .unwrap();

    let outcome = members
        .try_mutate(("t", "b"), |m| m.email = "a@x.com".into())
        .await
        .unwrap();
    match outcome {
        Outcome::UniqueViolation { index, value, holder } => {
            assert_eq!((index.as_str(), value.as_str()), ("email", "\"a@x.com\""));
            assert_eq!(holder, Key::new("t", "a"));
        }
        other => panic!("expected Outcome::UniqueViolation, got {other:?}"),
    }
    let outcome = members
        .try_transition(("t", "b"), |m| m.email == "b@x.com", |m| m.email = "a@x.com".into())
        .await
        .unwrap();
    assert!(
        matches!(&outcome, Outcome::UniqueViolation { holder, .. } if *holder == Key::new("t", "a")),
        "{outcome:?}"
    );
    let b = members.get(("t", "b")).await.unwrap().unwrap();
    assert_eq!(b.email, "b@x.com", "the refused changes stored nothing");
    assert!(Member::get_by_email(&members, "t", "a@x.com")
        .await
        .unwrap()
        .is_some_and(|m| m.id == "a"));

    let moved = members
        .try_mutate(("t", "b"), |m| m.email = "free@x.com".into())
        .await
        .unwrap();
    assert!(
        matches!(&moved, Outcome::Updated(m) if m.email == "free@x.com"),
        "{moved:?}"
    );

    let accounts = env.tables.store_in::<Account>(&env.table);
    accounts
        .create(&mut Account::new("t1", "a", "UA", "same"))
        .await
        .unwrap();
    accounts
        .create(&mut Account::new("t2", "b", "UA", "other"))
        .await
        .unwrap();
    let outcome = accounts
        .try_mutate(("t2", "b"), |a| a.handle = "same".into())
        .await
        .unwrap();
    assert!(
        matches!(&outcome, Outcome::UniqueViolation { index, holder, .. } if index == "handle" && *holder == Key::new("t1", "a")),
        "{outcome:?}"
    );
    assert_eq!(accounts.get(("t2", "b")).await.unwrap().unwrap().handle, "other");
}
