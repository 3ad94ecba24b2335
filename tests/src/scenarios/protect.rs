//! Protected fields: changes need a role the authorizer grants.

use unified_tables::{Concurrency, Error};

use crate::model::Account;
use crate::Env;

pub async fn protected_fields_refuse_unauthorised_changes(env: &Env) {
    let store = env.tables.store_in::<Account>(&env.table);
    store
        .create(&mut Account::new("a", "alice"))
        .await
        .expect("creating is not a change");

    // Saving as read, with other fields changed, is never refused.
    let mut read = store.get(("acct", "a")).await.unwrap().unwrap();
    read.note = "hello".into();
    store.update(&mut read).await.expect("unprotected change");

    // A protected change without an authorizer: refused, naming the field and both values.
    read.credit_limit = 1_000_000;
    let err = store.update(&mut read).await.unwrap_err();
    match &err {
        Error::Protected {
            column,
            roles,
            from,
            to,
        } => {
            assert_eq!(column, "CreditLimit");
            assert_eq!(roles, "admin, accountant");
            assert_eq!((from.as_str(), to.as_str()), ("100", "1000000"));
        }
        other => panic!("expected Protected, got {other}"),
    }
    // Upsert and LastWriterWins are checked too; nothing was stored.
    let mut blind = Account::new("a", "alice");
    blind.credit_limit = 5;
    assert!(matches!(store.upsert(&mut blind).await, Err(Error::Protected { .. })));
    assert!(matches!(
        store.update_with(&mut blind, Concurrency::LastWriterWins).await,
        Err(Error::Protected { .. })
    ));
    assert_eq!(store.get(("acct", "a")).await.unwrap().unwrap().credit_limit, 100);

    // A role that is not among the field's roles: still refused.
    let clerk = store.with_authorizer(|role: &str| role == "clerk");
    assert!(matches!(clerk.update(&mut read).await, Err(Error::Protected { .. })));
    // An accountant may change the limit but not the owner (admin only).
    let accountant = store.with_authorizer(|role: &str| role == "accountant");
    accountant
        .update(&mut read)
        .await
        .expect("accountant may change the limit");
    read.owner = Some("mallory".into());
    let err = accountant.update(&mut read).await.unwrap_err();
    assert!(
        matches!(&err, Error::Protected { column, .. } if column == "Owner"),
        "{err}"
    );
    // Clearing a protected value is a change too.
    read.owner = None;
    let err = accountant.update(&mut read).await.unwrap_err();
    assert!(matches!(&err, Error::Protected { to, .. } if to == "nothing"), "{err}");
    let admin = store.with_authorizer(|role: &str| role == "admin");
    admin.update(&mut read).await.expect("admin may clear the owner");
    let stored = store.get(("acct", "a")).await.unwrap().unwrap();
    assert_eq!((stored.credit_limit, stored.owner), (1_000_000, None));

    // mutate goes through the same check.
    let err = store.mutate(("acct", "a"), |a| a.credit_limit += 1).await.unwrap_err();
    assert!(matches!(err, Error::Protected { .. }), "{err}");
    admin.mutate(("acct", "a"), |a| a.credit_limit += 1).await.unwrap();

    // Batch writes bypass the check (documented).
    let mut imported = Account::new("a", "import");
    imported.credit_limit = 7;
    store.upsert_batch(&[imported]).await.unwrap();
    assert_eq!(store.get(("acct", "a")).await.unwrap().unwrap().credit_limit, 7);
}
