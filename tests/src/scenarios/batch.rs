//! Batch writes and partition deletes.

use unified_tables::{Error, QueryOptions};

use crate::model::Item;
use crate::Env;

pub async fn create_batch_packs_transactions_of_100(env: &Env) {
    let store = env.tables.store_in::<Item>(&env.table);
    store.ensure_created().await.unwrap();
    let items: Vec<Item> = (0..250).map(|i| Item::new("p", i)).collect();
    env.reset_counts();
    assert_eq!(store.create_batch(&items).await.unwrap(), 250);
    assert_eq!(
        env.counts().transactions,
        3,
        "a 250-row single-partition batch is 3 transactions"
    );
    assert_eq!(env.counts().entity_requests(), 3);
    assert_eq!(store.count(QueryOptions::partition("p")).await.unwrap(), 250);

    // Several partitions: grouped, each packed on its own.
    let mixed: Vec<Item> = (0..30)
        .map(|i| Item::new(if i % 3 == 0 { "a" } else { "b" }, i))
        .collect();
    env.reset_counts();
    store.create_batch(&mixed).await.unwrap();
    assert_eq!(env.counts().transactions, 2);
    assert_eq!(store.count(QueryOptions::partition("a")).await.unwrap(), 10);
}

pub async fn create_batch_refuses_a_repeated_key_before_writing(env: &Env) {
    let store = env.tables.store_in::<Item>(&env.table);
    store.ensure_created().await.unwrap();
    let mut items: Vec<Item> = (0..150).map(|i| Item::new("p", i)).collect();
    items.push(Item::new("p", 3));
    env.reset_counts();
    let err = store.create_batch(&items).await.unwrap_err();
    assert!(matches!(&err, Error::InvalidKey { key, .. } if key == "00003"), "{err}");
    assert!(
        err.to_string().contains("150"),
        "the message names both positions: {err}"
    );
    assert_eq!(env.counts().entity_requests(), 0, "nothing was sent");
}

pub async fn a_failed_transaction_keeps_earlier_ones_and_names_the_entity(env: &Env) {
    let store = env.tables.store_in::<Item>(&env.table);
    store.create(&mut Item::new("p", 150)).await.unwrap();
    let items: Vec<Item> = (0..250).map(|i| Item::new("p", i)).collect();
    let err = store.create_batch(&items).await.unwrap_err();
    match &err {
        Error::BatchFailed {
            committed,
            partition_key,
            row_key,
            source,
        } => {
            assert_eq!(
                (*committed, partition_key.as_str(), row_key.as_str()),
                (100, "p", "00150"),
                "{err}"
            );
            assert!(matches!(**source, Error::AlreadyExists { .. }), "{err}");
        }
        other => panic!("expected BatchFailed, got {other}"),
    }
    // The first transaction (0..100) committed; the failing one (100..200) applied nothing; the last was not sent.
    assert_eq!(store.count(QueryOptions::partition("p")).await.unwrap(), 101);
    assert!(store.exists(("p", "00099")).await.unwrap());
    assert!(!store.exists(("p", "00100")).await.unwrap());
}

pub async fn upsert_batch_replaces_and_inserts(env: &Env) {
    let store = env.tables.store_in::<Item>(&env.table);
    store
        .create_batch(&(0..50).map(|i| Item::new("p", i)).collect::<Vec<_>>())
        .await
        .unwrap();
    let updated: Vec<Item> = (25..125)
        .map(|i| {
            let mut it = Item::new("p", i);
            it.n = -i;
            it
        })
        .collect();
    assert_eq!(store.upsert_batch(&updated).await.unwrap(), 100);
    let all = store.query(QueryOptions::partition("p")).await.unwrap();
    assert_eq!(all.len(), 125);
    assert_eq!(all[24].n, 24);
    assert_eq!(all[25].n, -25);
    assert_eq!(all[124].n, -124);
}

pub async fn delete_partition_deletes_in_transactions(env: &Env) {
    let store = env.tables.store_in::<Item>(&env.table);
    store
        .create_batch(&(0..250).map(|i| Item::new("p", i)).collect::<Vec<_>>())
        .await
        .unwrap();
    store
        .create_batch(&(0..5).map(|i| Item::new("q", i)).collect::<Vec<_>>())
        .await
        .unwrap();
    env.reset_counts();
    assert_eq!(store.delete_partition("p").await.unwrap(), 250);
    assert_eq!(env.counts().transactions, 3);
    assert_eq!(store.count(QueryOptions::partition("p")).await.unwrap(), 0);
    assert_eq!(
        store.count(QueryOptions::partition("q")).await.unwrap(),
        5,
        "other partitions untouched"
    );
    assert_eq!(store.delete_partition("p").await.unwrap(), 0, "calling again is safe");
}

pub async fn create_batch_respects_the_request_size_budget(env: &Env) {
    #[derive(unified_tables::TableEntity, Debug)]
    struct Quoted {
        #[table(partition_key)]
        pk: String,
        #[table(row_key)]
        rk: String,
        text: String,
    }
    let store = env.tables.store_in::<Quoted>(&env.table);
    store.ensure_created().await.unwrap();
    // 30,000 quotes: 60 KB of stored text, 60 KB of wire JSON once escaped (`\"`);
    // 100 of them are over the 4 MiB request limit, so the batch needs more than one transaction.
    let rows: Vec<Quoted> = (0..100)
        .map(|i| Quoted {
            pk: "p".into(),
            rk: format!("{i:03}"),
            text: "\"".repeat(30_000),
        })
        .collect();
    env.reset_counts();
    store
        .create_batch(&rows)
        .await
        .expect("packed within the request limit");
    assert!(env.counts().transactions >= 2, "{:?}", env.counts());
    assert_eq!(store.count(QueryOptions::partition("p")).await.unwrap(), 100);
    assert_eq!(store.get(("p", "042")).await.unwrap().unwrap().text.len(), 30_000);
}

/// Line and paragraph separators (U+2028, U+2029) inside values travel in a
/// batch as they do in a single insert, and read back unchanged.
pub async fn line_separators_survive_a_batch(env: &Env) {
    let store = env.tables.store_in::<crate::model::Customer>(&env.table);
    let names: Vec<String> = (0..30)
        .map(|i| format!("line\u{2028}{i}\u{2029}paragraph \u{2028}\u{2028}"))
        .collect();
    let batch: Vec<_> = names
        .iter()
        .enumerate()
        .map(|(i, n)| crate::model::Customer::new("p", &format!("c{i:02}"), n))
        .collect();
    assert_eq!(store.create_batch(&batch).await.unwrap(), 30);
    assert_eq!(store.upsert_batch(&batch).await.unwrap(), 30);
    for (i, n) in names.iter().enumerate() {
        let got = store.get(("p", format!("c{i:02}"))).await.unwrap().unwrap();
        assert_eq!(&got.name, n, "c{i:02}");
    }
}
