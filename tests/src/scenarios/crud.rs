//! Create, read, update, upsert, delete, ETags, stamps and request counts.

use unified_tables::backend::{Backend, WriteOp};
use unified_tables::{Concurrency, Error, QueryOptions, StoreOptions, Value};

use crate::model::{Customer, Note, RawNote, Renamed};
use crate::Env;

pub async fn create_then_get_returns_the_entity_with_its_etag(env: &Env) {
    let store = env.tables.store_in::<Customer>(&env.table);
    let mut alice = Customer::new("eu", "alice@example.com", "Alice");
    alice.visits = 3;
    alice.balance = 12.5;
    let etag = store.create(&mut alice).await.expect("create");
    assert_eq!(
        alice.etag.as_ref(),
        Some(&etag),
        "create records the new ETag on the entity"
    );
    assert!(
        alice.created_at.is_some() && alice.created_at == alice.updated_at,
        "create stamps both"
    );

    let got = store
        .get(("eu", "alice@example.com"))
        .await
        .expect("get")
        .expect("stored");
    assert_eq!(got.etag.as_ref(), Some(&etag), "the read carries the stored version");
    assert!(got.timestamp.is_some(), "the read carries the service Timestamp");
    assert_eq!((got.name.as_str(), got.visits, got.balance), ("Alice", 3, 12.5));
    assert_eq!(got.created_at, alice.created_at);
    assert!(store.exists(("eu", "alice@example.com")).await.unwrap());
    assert!(!store.exists(("eu", "bob@example.com")).await.unwrap());
    assert!(store.get(("eu", "bob@example.com")).await.unwrap().is_none());
}

pub async fn create_of_an_existing_key_is_already_exists(env: &Env) {
    let store = env.tables.store_in::<Customer>(&env.table);
    store.create(&mut Customer::new("eu", "a", "first")).await.unwrap();
    let mut second = Customer::new("eu", "a", "second");
    let err = store.create(&mut second).await.unwrap_err();
    assert!(matches!(err, Error::AlreadyExists { .. }), "{err}");
    assert!(second.etag.is_none(), "a failed write leaves the entity as it was");
    assert_eq!(store.get(("eu", "a")).await.unwrap().unwrap().name, "first");
}

pub async fn update_is_conditional_on_the_etag_read(env: &Env) {
    let store = env.tables.store_in::<Customer>(&env.table);
    store.create(&mut Customer::new("eu", "a", "v0")).await.unwrap();
    let mut first = store.get(("eu", "a")).await.unwrap().unwrap();
    let mut second = first.clone();

    first.name = "v1".into();
    let new_etag = store.update(&mut first).await.expect("first writer wins");
    assert_ne!(Some(&new_etag), second.etag.as_ref(), "the ETag changes on update");

    second.name = "v2".into();
    let err = store.update(&mut second).await.unwrap_err();
    assert!(matches!(err, Error::Conflict { .. }), "{err}");
    assert_eq!(
        store.get(("eu", "a")).await.unwrap().unwrap().name,
        "v1",
        "the stale write stored nothing"
    );

    // Updating with the fresh ETag works again.
    let mut fresh = store.get(("eu", "a")).await.unwrap().unwrap();
    fresh.visits = 7;
    store.update(&mut fresh).await.unwrap();
    assert_eq!(store.get(("eu", "a")).await.unwrap().unwrap().visits, 7);
}

pub async fn update_without_an_etag_is_refused_before_sending(env: &Env) {
    let store = env.tables.store_in::<Customer>(&env.table);
    store.create(&mut Customer::new("eu", "a", "v0")).await.unwrap();
    env.reset_counts();
    for mode in [Concurrency::Auto, Concurrency::Strict] {
        let mut no_etag = Customer::new("eu", "a", "blind");
        let err = store.update_with(&mut no_etag, mode).await.unwrap_err();
        assert!(matches!(err, Error::MissingETag { .. }), "{mode:?}: {err}");
        assert!(
            err.to_string().contains("LastWriterWins"),
            "the message names the alternative: {err}"
        );
    }
    assert_eq!(env.counts().entity_requests(), 0, "a refused update sends nothing");
    assert_eq!(store.get(("eu", "a")).await.unwrap().unwrap().name, "v0");
}

pub async fn update_modes_spell_out_last_writer_wins(env: &Env) {
    let store = env.tables.store_in::<Customer>(&env.table);
    store.create(&mut Customer::new("eu", "a", "v0")).await.unwrap();
    let mut stale = store.get(("eu", "a")).await.unwrap().unwrap();
    let mut newer = stale.clone();
    newer.name = "v1".into();
    store.update(&mut newer).await.unwrap();

    // LastWriterWins ignores the (stale) ETag.
    stale.name = "forced".into();
    store
        .update_with(&mut stale, Concurrency::LastWriterWins)
        .await
        .expect("overwrite");
    assert_eq!(store.get(("eu", "a")).await.unwrap().unwrap().name, "forced");

    // Auto without an ETag overwrites only when the option allows it; Strict never does.
    let lenient = env
        .with_options(StoreOptions {
            implicit_last_writer_wins: true,
            ..StoreOptions::default()
        })
        .store_in::<Customer>(&env.table);
    let mut blind = Customer::new("eu", "a", "implicit");
    lenient
        .update_with(&mut blind, Concurrency::Auto)
        .await
        .expect("implicit last writer wins");
    let mut blind = Customer::new("eu", "a", "strict");
    let err = lenient.update_with(&mut blind, Concurrency::Strict).await.unwrap_err();
    assert!(matches!(err, Error::MissingETag { .. }), "{err}");
    assert_eq!(store.get(("eu", "a")).await.unwrap().unwrap().name, "implicit");
}

pub async fn update_of_a_missing_entity_is_not_found(env: &Env) {
    let store = env.tables.store_in::<Customer>(&env.table);
    let mut ghost = Customer::new("eu", "ghost", "x");
    let err = store
        .update_with(&mut ghost, Concurrency::LastWriterWins)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    assert!(!store.exists(("eu", "ghost")).await.unwrap(), "update never creates");
}

pub async fn upsert_keeps_a_caller_created_stamp(env: &Env) {
    let store = env.tables.store_in::<Customer>(&env.table);
    let created = unified_tables::DateTime::parse("2020-01-02T03:04:05.0000006Z").unwrap();
    let mut c = Customer::new("eu", "a", "v0");
    c.created_at = Some(created);
    env.reset_counts();
    store.upsert(&mut c).await.expect("upsert inserts");
    assert_eq!(env.counts().entity_requests(), 1, "a plain upsert is one round trip");
    let got = store.get(("eu", "a")).await.unwrap().unwrap();
    assert_eq!(got.created_at, Some(created), "a caller-supplied created stamp is kept");
    assert!(got.updated_at.unwrap() > created);

    let mut fresh = Customer::new("eu", "b", "v0");
    store.upsert(&mut fresh).await.unwrap();
    assert!(fresh.created_at.is_some(), "an unset created stamp is set to now");

    // Upsert replaces: no ETag needed, columns not sent are gone.
    let mut replace = Customer::new("eu", "a", "v1");
    store.upsert(&mut replace).await.expect("upsert replaces");
    let got = store.get(("eu", "a")).await.unwrap().unwrap();
    assert_eq!(got.name, "v1");
}

pub async fn delete_is_idempotent_and_delete_entity_is_conditional(env: &Env) {
    let store = env.tables.store_in::<Customer>(&env.table);
    let mut c = Customer::new("eu", "a", "v0");
    store.create(&mut c).await.unwrap();
    let mut newer = store.get(("eu", "a")).await.unwrap().unwrap();
    newer.visits = 1;
    store.update(&mut newer).await.unwrap();

    let err = store.delete_entity(&c).await.unwrap_err();
    assert!(
        matches!(err, Error::Conflict { .. }),
        "a delete with a stale ETag: {err}"
    );
    assert!(store.exists(("eu", "a")).await.unwrap());
    store.delete_entity(&newer).await.expect("delete with the current ETag");
    let err = store.delete_entity(&newer).await.unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");

    store.create(&mut Customer::new("eu", "b", "v0")).await.unwrap();
    assert!(store.delete(("eu", "b")).await.unwrap(), "deleted");
    assert!(
        !store.delete(("eu", "b")).await.unwrap(),
        "deleting again is not an error"
    );
    assert!(!store.exists(("eu", "b")).await.unwrap());
}

pub async fn every_write_changes_the_etag_and_raises_the_timestamp(env: &Env) {
    let store = env.tables.store_in::<Customer>(&env.table);
    let mut c = Customer::new("eu", "a", "v0");
    let mut etags = vec![store.create(&mut c).await.unwrap()];
    let mut stamps = vec![store.get(("eu", "a")).await.unwrap().unwrap().timestamp.unwrap()];
    for i in 0..3 {
        c.visits = i;
        etags.push(store.update(&mut c).await.unwrap());
        stamps.push(store.get(("eu", "a")).await.unwrap().unwrap().timestamp.unwrap());
        etags.push(store.upsert(&mut c).await.unwrap());
        c.etag = Some(etags.last().unwrap().clone());
        stamps.push(store.get(("eu", "a")).await.unwrap().unwrap().timestamp.unwrap());
    }
    let distinct: std::collections::HashSet<_> = etags.iter().collect();
    assert_eq!(distinct.len(), etags.len(), "every write gives a new ETag: {etags:?}");
    assert!(
        stamps.windows(2).all(|w| w[0] < w[1]),
        "the Timestamp rises with every write: {stamps:?}"
    );
}

pub async fn composite_ids_are_normalized_and_restored(env: &Env) {
    let notes = env.tables.store_in::<Note>(&env.table);
    let mut n = Note {
        id: "  Team A | Row One ".into(),
        body: "hello".into(),
        created_at: None,
        updated_at: None,
        etag: None,
    };
    notes.create(&mut n).await.unwrap();
    // The raw row: keys from the normalized id, and the Id column as data.
    let row = env
        .backend()
        .get(&env.table, "team-a-", "-row-one")
        .await
        .unwrap()
        .expect("normalized keys");
    assert_eq!(row.get("Id"), Some(&Value::String("team-a-|-row-one".into())));
    // Lookups by id normalize too; the id comes back normalized.
    let got = notes
        .get("TEAM A | ROW ONE")
        .await
        .unwrap()
        .expect("found by a differently written id");
    assert_eq!(got.id, "team-a-|-row-one");
    // A lone id is used for both keys and comes back as itself.
    let mut solo = Note {
        id: "Solo".into(),
        body: "x".into(),
        created_at: None,
        updated_at: None,
        etag: None,
    };
    notes.create(&mut solo).await.unwrap();
    assert!(env.backend().get(&env.table, "solo", "solo").await.unwrap().is_some());
    assert_eq!(notes.get("solo").await.unwrap().unwrap().id, "solo");
    // As-written ids keep their case and spaces.
    let raw = env.tables.store_in::<RawNote>(&env.table);
    let mut r = RawNote {
        id: "Mixed Case|Row".into(),
        body: "y".into(),
        etag: None,
    };
    raw.create(&mut r).await.unwrap();
    assert_eq!(raw.get("Mixed Case|Row").await.unwrap().unwrap().id, "Mixed Case|Row");
    // Rows written by older .NET versions name the stamps Created / Modified.
    let created = unified_tables::DateTime::parse("2019-05-06T07:08:09Z").unwrap();
    let legacy = unified_tables::Row::new("legacy", "row")
        .with("Body", Value::String("old".into()))
        .with("Created", Value::DateTime(created))
        .with("Modified", Value::DateTime(created));
    env.backend()
        .execute(&env.table, WriteOp::Insert(legacy))
        .await
        .unwrap();
    let old = notes.get("legacy|row").await.unwrap().unwrap();
    assert_eq!(
        old.id, "legacy|row",
        "the id is rebuilt from the keys when no Id column exists"
    );
    assert_eq!((old.created_at, old.updated_at), (Some(created), Some(created)));
}

pub async fn aliases_are_read_when_the_canonical_column_is_absent(env: &Env) {
    let store = env.tables.store_in::<Renamed>(&env.table);
    let old = unified_tables::Row::new("p", "old")
        .with("FullName", Value::String("Old Name".into()))
        .with("OldTags__Json", Value::String("[\"x\"]".into()));
    // The old column in its compressed form: base64 of gzip over the JSON.
    let gz = {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(b"[\"g\"]").unwrap();
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, enc.finish().unwrap())
    };
    let zipped = unified_tables::Row::new("p", "zipped")
        .with("Name", Value::String("Z".into()))
        .with("OldTags__GZip", Value::String(gz));
    let both = unified_tables::Row::new("p", "both")
        .with("FullName", Value::String("Old Name".into()))
        .with("Name", Value::String("New Name".into()));
    env.backend().create_table(&env.table).await.unwrap();
    for row in [old, zipped, both] {
        env.backend().execute(&env.table, WriteOp::Insert(row)).await.unwrap();
    }
    let got = store.get(("p", "old")).await.unwrap().unwrap();
    assert_eq!(
        (got.name.as_str(), got.tags.clone()),
        ("Old Name", vec!["x".to_owned()])
    );
    assert_eq!(
        store.get(("p", "both")).await.unwrap().unwrap().name,
        "New Name",
        "the canonical column wins"
    );
    // Writes use the canonical column only.
    let mut e = store.get(("p", "old")).await.unwrap().unwrap();
    e.name = "Rewritten".into();
    let mut e2 = e.clone();
    store.upsert(&mut e2).await.unwrap();
    let row = env.backend().get(&env.table, "p", "old").await.unwrap().unwrap();
    assert_eq!(row.get("Name"), Some(&Value::String("Rewritten".into())));
    assert_eq!(row.get("FullName"), None, "the old column is gone after a replace");
    assert!(row.get("Tags__Json").is_some() && row.get("OldTags__Json").is_none());
}

pub async fn tables_are_created_on_first_use_and_tolerate_racing_creators(env: &Env) {
    let name = env.another_table();
    // Several independent Tables (no shared "created" memory) race to create one table.
    let racers: Vec<_> = (0..4)
        .map(|i| {
            let tables = unified_tables::Tables::with_backend(env.backend().clone());
            let name = name.clone();
            tokio::spawn(async move {
                let store = tables.store_in::<Customer>(&name);
                store.create(&mut Customer::new("eu", &format!("r{i}"), "x")).await
            })
        })
        .collect();
    for r in racers {
        r.await.unwrap().expect("every racer's first write succeeds");
    }
    let store = env.tables.store_in::<Customer>(&name);
    store
        .ensure_created()
        .await
        .expect("ensure_created on an existing table");
    assert_eq!(store.count(unified_tables::QueryOptions::all()).await.unwrap(), 4);
    let err = env
        .tables
        .store_in::<Customer>("bad-name")
        .ensure_created()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Config { .. }), "{err}");
    env.backend().delete_table(&name).await.unwrap();
}

pub async fn request_counts_are_at_their_minimum(env: &Env) {
    let store = env.tables.store_in::<Customer>(&env.table);
    store.ensure_created().await.unwrap();
    let mut c = Customer::new("eu", "a", "v0");
    let measure = |what: &str, expected: u64| {
        let got = env.counts().entity_requests();
        assert_eq!(got, expected, "{what}: {got} round trips, expected {expected}");
        env.reset_counts();
    };
    env.reset_counts();
    store.create(&mut c).await.unwrap();
    measure("create", 1);
    store.get(("eu", "a")).await.unwrap();
    measure("point read", 1);
    store.upsert(&mut c).await.unwrap();
    measure("plain upsert", 1);
    store.update(&mut c).await.unwrap();
    measure("update", 1);
    store.delete(("eu", "a")).await.unwrap();
    measure("delete", 1);
}

/// Partition arguments and row-key prefixes of id-keyed types are normalized
/// as ids are, so a partition written as a person would type it finds the
/// rows its ids were stored under; the append log reads the same way.
pub async fn partition_arguments_of_id_keyed_types_are_normalized(env: &Env) {
    let notes = env.tables.store_in::<Note>(&env.table);
    for (id, body) in [("Room 7|First Note", "a"), ("Room 7|Second", "b"), ("Room 8|x", "c")] {
        let mut n = Note {
            id: id.into(),
            body: body.into(),
            created_at: None,
            updated_at: None,
            etag: None,
        };
        notes.create(&mut n).await.unwrap();
    }
    let room = notes.query(QueryOptions::partition("Room 7")).await.unwrap();
    assert_eq!(room.iter().map(|n| n.body.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    let prefixed = notes
        .query(QueryOptions::partition(" ROOM 7 ").row_key_prefix("First "))
        .await
        .unwrap();
    assert_eq!(prefixed.len(), 1, "the prefix is normalized too");
    assert_eq!(notes.count(QueryOptions::partition("Room 7")).await.unwrap(), 2);

    let mut event = Note {
        id: String::new(),
        body: "logged".into(),
        created_at: None,
        updated_at: None,
        etag: None,
    };
    notes.append("Room 9", &mut event, None).await.unwrap();
    let recent = notes.recent("Room 9", 5, None).await.unwrap();
    assert_eq!(
        recent.len(),
        1,
        "the log of an id-keyed type reads by the partition as written"
    );
}
