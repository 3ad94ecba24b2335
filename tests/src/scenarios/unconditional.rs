//! Types without an `#[table(etag)]` field: the ETag-conditional verbs do
//! not compile for them (see `ui-tests/tests/ui/etag/`), and every
//! unconditional verb and compare-and-swap verb works.

use unified_tables::{Error, Outcome, TableEntity};

use crate::Env;

/// A setting stored without an ETag field.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct Setting {
    #[table(partition_key)]
    pub scope: String,
    #[table(row_key)]
    pub name: String,
    pub value: String,
    pub revision: u32,
}

fn setting(name: &str, value: &str) -> Setting {
    Setting {
        scope: "app".into(),
        name: name.into(),
        value: value.into(),
        revision: 0,
    }
}

pub async fn replace_overwrites_an_entity_without_an_etag_field(env: &Env) {
    let store = env.tables.store_in::<Setting>(&env.table);
    store.create(&mut setting("theme", "dark")).await.unwrap();

    env.reset_counts();
    let mut light = setting("theme", "light");
    store.replace(&mut light).await.expect("replace needs no ETag");
    assert_eq!(env.counts().entity_requests(), 1, "a replace is one round trip");
    assert_eq!(store.get(("app", "theme")).await.unwrap().unwrap().value, "light");

    // The row must exist: replace never creates.
    let err = store.replace(&mut setting("ghost", "x")).await.unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    assert!(!store.exists(("app", "ghost")).await.unwrap(), "replace never creates");

    // upsert and delete by key need no ETag either.
    store.upsert(&mut setting("lang", "uk")).await.unwrap();
    assert!(store.delete(("app", "lang")).await.unwrap());
    assert!(!store.exists(("app", "lang")).await.unwrap());
}

pub async fn compare_and_swap_verbs_work_without_an_etag_field(env: &Env) {
    let store = env.tables.store_in::<Setting>(&env.table);
    store.create(&mut setting("theme", "dark")).await.unwrap();

    // The store carries the version it read, so the write is still conditional.
    let got = store.mutate(("app", "theme"), |s| s.revision += 1).await.unwrap();
    assert_eq!(got.revision, 1);
    let outcome = store
        .try_transition(("app", "theme"), |s| s.value == "dark", |s| s.value = "light".into())
        .await
        .unwrap();
    assert!(
        matches!(outcome, Outcome::Updated(ref s) if s.value == "light"),
        "{outcome:?}"
    );
    let created = store
        .mutate_or_create(("app", "lang"), || setting("lang", "en"), |s| s.revision += 1)
        .await
        .unwrap();
    assert_eq!(created.revision, 1);
    let existing = store
        .get_or_create(("app", "theme"), || setting("theme", "never"))
        .await
        .unwrap();
    assert_eq!((existing.value.as_str(), existing.revision), ("light", 1));
}
