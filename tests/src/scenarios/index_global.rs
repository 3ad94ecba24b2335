//! Global secondary indexes: kept by intents and the applier after every
//! write verb, read repair on lookups, intents left by a crash finished by
//! the operator's job, and the reservation protocol of global unique values
//! under writers racing, stalling and dying.

use std::time::Duration;

use unified_tables::index::rows::{index_row, intent_row, set_reservation};
use unified_tables::{DateTime, ETag, Error, Key, StoreOptions, TableEntity, Tables};

use crate::gate::{GateBackend, Point};
use crate::index_model::{all_rows, assert_indexes_match, intents};
use crate::Env;

/// An account of a tenant: a global index on its country that carries the
/// name, and a handle unique across tenants.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct Account {
    #[table(partition_key)]
    pub tenant: String,
    #[table(row_key)]
    pub id: String,
    #[index(global, project(name))]
    pub country: String,
    #[unique(global, protocol = "reserve")]
    pub handle: String,
    pub name: String,
    #[table(etag)]
    pub etag: Option<ETag>,
}

impl Account {
    pub fn new(tenant: &str, id: &str, country: &str, handle: &str) -> Account {
        Account {
            tenant: tenant.into(),
            id: id.into(),
            country: country.into(),
            handle: handle.into(),
            name: format!("account {id}"),
            etag: None,
        }
    }
}

async fn settled(env: &Env, store: &unified_tables::Store<Account>, when: &str) {
    store.settle_indexes().await;
    assert_indexes_match(env.backend(), &env.table, Account::INDEXES, when).await;
    let left = intents(&all_rows(env.backend(), &env.table).await);
    assert_eq!(left, 0, "{when}: every intent applied");
}

fn ids(found: &[Account]) -> Vec<String> {
    found.iter().map(|a| format!("{}/{}", a.tenant, a.id)).collect()
}

pub async fn global_indexes_every_verb_keeps_them_after_the_applier(env: &Env) {
    let store = env.tables.store_in::<Account>(&env.table);
    let mut a = Account::new("t1", "a", "UA", "ann");
    store.create(&mut a).await.unwrap();
    store.create(&mut Account::new("t2", "b", "UA", "bob")).await.unwrap();
    store.create(&mut Account::new("t3", "c", "PL", "cy")).await.unwrap();
    settled(env, &store, "after creates in three partitions").await;
    assert_eq!(
        ids(&Account::find_by_country(&store, "UA").await.unwrap()),
        ["t1/a", "t2/b"]
    );
    assert_eq!(
        Account::get_by_handle(&store, "bob")
            .await
            .unwrap()
            .map(|a| a.id)
            .as_deref(),
        Some("b")
    );

    a.country = "PL".into();
    a.handle = "anna".into();
    store.update(&mut a).await.unwrap();
    settled(env, &store, "after an update of both values").await;
    assert!(
        Account::get_by_handle(&store, "ann").await.unwrap().is_none(),
        "the old value is released"
    );
    assert_eq!(
        ids(&Account::find_by_country(&store, "PL").await.unwrap()),
        ["t1/a", "t3/c"]
    );

    store.upsert(&mut Account::new("t2", "b", "DE", "bob")).await.unwrap();
    store.patch(("t3", "c"), Account::update().name("Cy")).await.unwrap();
    store.patch(("t3", "c"), Account::update().country("DE")).await.unwrap();
    store.mutate(("t2", "b"), |x| x.handle = "robert".into()).await.unwrap();
    settled(env, &store, "after upsert, patches and mutate").await;
    let de = Account::find_by_country(&store, "DE").await.unwrap();
    assert_eq!(ids(&de), ["t2/b", "t3/c"]);
    assert_eq!(de[1].name, "Cy");

    store
        .create_batch(
            &(0..30)
                .map(|i| Account::new("t4", &format!("x{i:02}"), "FR", &format!("x{i}")))
                .collect::<Vec<_>>(),
        )
        .await
        .unwrap();
    store
        .upsert_batch(
            &(0..10)
                .map(|i| Account::new("t4", &format!("x{i:02}"), "IT", &format!("x{i}")))
                .collect::<Vec<_>>(),
        )
        .await
        .unwrap();
    settled(env, &store, "after batches").await;
    assert_eq!(Account::find_by_country(&store, "FR").await.unwrap().len(), 20);
    assert_eq!(
        store
            .index(Account::BY_COUNTRY)
            .range("E".."G")
            .take(5)
            .await
            .unwrap()
            .len(),
        5
    );

    store.delete(("t2", "b")).await.unwrap();
    assert_eq!(store.delete_partition("t4").await.unwrap(), 30);
    settled(env, &store, "after deletes").await;
    assert!(Account::get_by_handle(&store, "robert").await.unwrap().is_none());
    store
        .create(&mut Account::new("t5", "d", "UA", "robert"))
        .await
        .unwrap();
    settled(env, &store, "after a freed value was taken").await;
}

pub async fn global_lookups_drop_stale_hits_and_the_job_finishes_a_crashed_write(env: &Env) {
    let store = env.tables.store_in::<Account>(&env.table);
    store.create(&mut Account::new("t1", "a", "UA", "ann")).await.unwrap();
    store.settle_indexes().await;

    // A writer died after its entity's transaction: the entity and its intent, no index rows.
    let moved = Account::new("t1", "a", "PL", "ann")
        .to_row(&Default::default())
        .unwrap();
    let keys = |acc: &Account| -> Vec<(String, String)> {
        let row = acc.to_row(&Default::default()).unwrap();
        Account::INDEXES
            .iter()
            .filter_map(|d| index_row(d, &row).unwrap())
            .map(|r| (r.partition_key, r.row_key))
            .collect()
    };
    let mut touched = keys(&Account::new("t1", "a", "UA", "ann"));
    touched.extend(keys(&Account::new("t1", "a", "PL", "ann")));
    env.put_raw(moved).await;
    env.put_raw(intent_row("t1", "a", "crashed", &touched).expect("an intent"))
        .await;

    // Until applied, a lookup never answers an entity that does not hold the value.
    assert!(
        Account::find_by_country(&store, "UA").await.unwrap().is_empty(),
        "the stale hit is dropped"
    );
    // A stale unique row names an entity that moved on: no answer.
    let stale = index_row(
        &Account::INDEXES[1],
        &Account::new("t9", "ghost", "UA", "ghosty")
            .to_row(&Default::default())
            .unwrap(),
    )
    .unwrap()
    .unwrap();
    env.put_raw(stale).await;
    assert!(Account::get_by_handle(&store, "ghosty").await.unwrap().is_none());

    let report = store.apply_index_intents(None).await.unwrap();
    assert_eq!((report.found, report.applied, report.left), (1, 1, 0), "{report:?}");
    assert_eq!(Account::find_by_country(&store, "PL").await.unwrap().len(), 1);
    let again = store.apply_index_intents(None).await.unwrap();
    assert_eq!(again.found, 0, "applying is done once");
    // The stale unique row blocks nothing: its entity does not hold the value.
    store
        .create(&mut Account::new("t2", "b", "UA", "ghosty"))
        .await
        .unwrap();
    store.settle_indexes().await;
    assert_eq!(
        Account::get_by_handle(&store, "ghosty")
            .await
            .unwrap()
            .map(|a| a.id)
            .as_deref(),
        Some("b")
    );
    assert_indexes_match(env.backend(), &env.table, Account::INDEXES, "after the job").await;
}

pub async fn global_unique_racing_writers_on_one_value_leave_one_holder(env: &Env) {
    let gate = GateBackend::new(env.backend().clone());
    let held = Tables::with_backend(gate.clone()).store_in::<Account>(&env.table);
    let store = env.tables.store_in::<Account>(&env.table);

    // The first writer is held before its reservation; the second reserves, writes and confirms.
    let hold = gate.arm(Point::BeforeWrite);
    let first = tokio::spawn({
        let held = held.clone();
        async move { held.create(&mut Account::new("t1", "a", "UA", "same")).await }
    });
    hold.reached.await.expect("the first reservation is about to be sent");
    store.create(&mut Account::new("t2", "b", "UA", "same")).await.unwrap();
    let _ = hold.release.send(());
    let err = first.await.unwrap().unwrap_err();
    assert!(
        matches!(&err, Error::UniqueViolation { holder, .. } if **holder == Key::new("t2", "b")),
        "{err}"
    );
    assert!(
        store.get(("t1", "a")).await.unwrap().is_none(),
        "the refused writer stored nothing"
    );

    // The first writer holds a fresh reservation and is held before its entity's write:
    // the second finds the value reserved.
    let reserve = gate.arm(Point::BeforeWrite);
    let write = gate.arm(Point::BeforeWrite);
    let first = tokio::spawn({
        let held = held.clone();
        async move { held.create(&mut Account::new("t1", "c", "UA", "next")).await }
    });
    reserve.reached.await.expect("the reservation");
    let _ = reserve.release.send(());
    write.reached.await.expect("the entity's write, after its reservation");
    let err = store
        .create(&mut Account::new("t2", "d", "UA", "next"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::UniqueViolation { .. }), "{err}");
    let _ = write.release.send(());
    first.await.unwrap().unwrap();
    assert_eq!(
        Account::get_by_handle(&store, "next")
            .await
            .unwrap()
            .map(|a| a.id)
            .as_deref(),
        Some("c")
    );

    // Many writers at once: exactly one holds the value.
    let tasks: Vec<_> = (0..6)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .create(&mut Account::new(&format!("m{i}"), "x", "UA", "many"))
                    .await
            })
        })
        .collect();
    let mut won = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => won += 1,
            Err(Error::UniqueViolation { .. } | Error::Conflict { .. }) => {}
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(won, 1);
    store.settle_indexes().await;
    held.settle_indexes().await;
    let holders: Vec<_> = all_rows(env.backend(), &env.table)
        .await
        .into_iter()
        .filter(|r| {
            r.get("Handle").and_then(|v| v.as_str()) == Some("many") && !unified_tables::layout::is_index_row(r)
        })
        .collect();
    assert_eq!(holders.len(), 1, "one entity holds the value");
    assert_indexes_match(env.backend(), &env.table, Account::INDEXES, "after the races").await;
}

pub async fn global_unique_reservations_of_stalled_or_dead_writers_expire(env: &Env) {
    let options = StoreOptions {
        unique_reservation_timeout: Duration::from_millis(400),
        ..StoreOptions::default()
    };
    let gate = GateBackend::new(env.backend().clone());
    let held = Tables::with_backend(gate.clone())
        .with_options(options.clone())
        .store_in::<Account>(&env.table);
    let store = env.with_options(options).store_in::<Account>(&env.table);

    // A writer that died after reserving blocks the value for the timeout only.
    let mut dead = index_row(
        &Account::INDEXES[1],
        &Account::new("t9", "dead", "UA", "once")
            .to_row(&Default::default())
            .unwrap(),
    )
    .unwrap()
    .unwrap();
    set_reservation(&mut dead, DateTime::now(), false);
    store.ensure_created().await.unwrap();
    env.put_raw(dead).await;
    let err = store
        .create(&mut Account::new("t1", "a", "UA", "once"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::UniqueViolation { .. }),
        "a young reservation holds: {err}"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    store.create(&mut Account::new("t1", "a", "UA", "once")).await.unwrap();

    // A writer stalled between its reservation and its write past the timeout is
    // overtaken; when its write lands, it loses the value and is written back.
    // Its applier runs in between, while the entity still stands, and adds the
    // entity's other global index row (country): the write-back removes it.
    let reserve = gate.arm(Point::BeforeWrite);
    let write = gate.arm(Point::BeforeWrite);
    let stalled = tokio::spawn({
        let held = held.clone();
        async move { held.create(&mut Account::new("t1", "s", "UA", "slow")).await }
    });
    reserve.reached.await.expect("the reservation");
    let _ = reserve.release.send(());
    write.reached.await.expect("the entity's write");
    tokio::time::sleep(Duration::from_millis(500)).await;
    store.create(&mut Account::new("t2", "f", "UA", "slow")).await.unwrap();
    let applier = gate.arm(Point::AfterGet);
    let confirm = gate.arm(Point::BeforeWrite);
    let _ = write.release.send(());
    applier.reached.await.expect("the applier read the write's intent");
    confirm.reached.await.expect("the confirmation");
    let _ = applier.release.send(());
    held.settle_indexes().await;
    assert!(
        all_rows(env.backend(), &env.table)
            .await
            .iter()
            .any(|r| r.partition_key.starts_with("~ix|country|UA") && r.row_key.starts_with("t1!s")),
        "the applier added the country row of the entity that still stands"
    );
    let _ = confirm.release.send(());
    let err = stalled.await.unwrap().unwrap_err();
    assert!(matches!(err, Error::UniqueViolation { .. }), "{err}");
    assert!(
        store.get(("t1", "s")).await.unwrap().is_none(),
        "the overtaken write was taken back"
    );
    assert_eq!(
        Account::get_by_handle(&store, "slow")
            .await
            .unwrap()
            .map(|a| a.id)
            .as_deref(),
        Some("f")
    );
    store.settle_indexes().await;
    held.settle_indexes().await;
    assert_indexes_match(env.backend(), &env.table, Account::INDEXES, "after the takeover").await;
}
