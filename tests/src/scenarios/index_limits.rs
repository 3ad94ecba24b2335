//! Index rows and intents within the service's limits: a write whose index
//! row or intent the service would refuse (a key over 1 KiB, a row over
//! 1 MiB, a transaction over 4 MiB) is refused before anything is sent,
//! naming the index and its field, on every backend; nothing is stored.

use unified_tables::service::MAX_ENTITY_BYTES;
use unified_tables::{EncodeOptions, Error, TableEntity};

use crate::index_model::all_rows;
use crate::Env;

/// A handle with a unique global value and a global nickname index.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct Handle {
    #[table(partition_key)]
    pub site: String,
    #[table(row_key)]
    pub id: String,
    #[unique(global, protocol = "reserve")]
    pub email: String,
    #[index(global)]
    pub nick: String,
}

/// A sheet whose kind index copies every column into its rows.
#[derive(TableEntity, Debug, Clone, PartialEq, Default)]
pub struct Sheet {
    #[table(partition_key)]
    pub book: String,
    #[table(row_key)]
    pub id: String,
    #[index(project(all))]
    pub kind: String,
    pub c0: String,
    pub c1: String,
    pub c2: String,
    pub c3: String,
    pub c4: String,
    pub c5: String,
    pub c6: String,
    pub c7: String,
    pub c8: String,
    pub c9: String,
    pub c10: String,
    pub c11: String,
    pub c12: String,
    pub c13: String,
    pub c14: String,
    pub c15: String,
}

impl Sheet {
    fn cells(&mut self) -> [&mut String; 16] {
        [
            &mut self.c0,
            &mut self.c1,
            &mut self.c2,
            &mut self.c3,
            &mut self.c4,
            &mut self.c5,
            &mut self.c6,
            &mut self.c7,
            &mut self.c8,
            &mut self.c9,
            &mut self.c10,
            &mut self.c11,
            &mut self.c12,
            &mut self.c13,
            &mut self.c14,
            &mut self.c15,
        ]
    }
}

async fn assert_nothing_stored(env: &Env, when: &str) {
    let rows = all_rows(env.backend(), &env.table).await;
    assert!(rows.is_empty(), "{when}: nothing is stored, found {rows:?}");
}

pub async fn index_limits_a_value_too_long_for_a_key_is_refused_by_index_and_field(env: &Env) {
    let store = env.tables.store_in::<Handle>(&env.table);
    let handle = |email: String, nick: String| Handle {
        site: "s".into(),
        id: "h".into(),
        email,
        nick,
    };
    // The unique global value: its reservation's PartitionKey.
    let err = store
        .create(&mut handle("e".repeat(1100), "n".into()))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidValue { column, reason } if column == "Email" && reason.contains("index `email`")),
        "{err}"
    );
    assert!(err.is_refusal(), "{err}");
    // The global value: its row's PartitionKey.
    let err = store
        .create(&mut handle("a@x".into(), "n".repeat(1100)))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidValue { column, reason } if column == "Nick" && reason.contains("index `nick`")),
        "{err}"
    );
    store.settle_indexes().await;
    assert_nothing_stored(env, "after values too long for a key").await;

    // A RowKey that fits the entity's row but not its intent's, which holds it.
    let mut long = handle("b@x".into(), "n".into());
    long.id = "r".repeat(1000);
    let err = store.create(&mut long).await.unwrap_err();
    assert!(
        matches!(&err, Error::InvalidKey { reason, .. } if reason.contains("`nick`") && reason.contains("intent")),
        "{err}"
    );
    assert!(err.is_refusal(), "{err}");
    store.settle_indexes().await;
    assert_nothing_stored(env, "after a RowKey too long for an intent").await;

    // A shorter RowKey is taken (Azurite takes keys of about 500 characters at most),
    // except on Cosmos DB for Table, whose RowKeys hold at most 255 bytes: refused
    // before anything is sent.
    long.id = "r".repeat(400);
    if !env.sorts_results() {
        let err = store.create(&mut long).await.unwrap_err();
        assert!(
            matches!(&err, Error::InvalidKey { reason, .. } if reason.contains("255 bytes")),
            "{err}"
        );
        store.settle_indexes().await;
        assert_nothing_stored(env, "after a RowKey too long for Cosmos DB for Table").await;
        long.id = "r".repeat(200);
    }
    store.create(&mut long).await.unwrap();
    store.settle_indexes().await;
    assert!(Handle::get_by_email(&store, "b@x").await.unwrap().is_some());
}

pub async fn index_limits_a_projection_past_a_row_or_a_transaction_is_refused_by_index(env: &Env) {
    let store = env.tables.store_in::<Sheet>(&env.table);

    // An entity just inside 1 MiB: its index row, which adds the index's own cells, is not.
    let mut big = Sheet {
        book: "b".into(),
        id: "1".into(),
        kind: "k".into(),
        ..Sheet::default()
    };
    for cell in big.cells().into_iter().take(15) {
        *cell = "x".repeat(32_760);
    }
    let size = big.to_row(&EncodeOptions::default()).unwrap().stored_size();
    // The entity with its write token (78 bytes) stays 2 bytes inside the limit.
    big.c15 = "y".repeat((MAX_ENTITY_BYTES - size - 80) / 2);
    assert!(big.c15.len() <= 32_767, "one cell holds it as text");
    let err = store.create(&mut big.clone()).await.unwrap_err();
    assert!(
        matches!(&err, Error::LimitExceeded { limit: "EntityTooLarge", detail } if detail.contains("index `kind` on `Kind`")),
        "{err}"
    );
    assert!(err.is_refusal(), "{err}");
    assert_nothing_stored(env, "after an index row over 1 MiB").await;

    // Each row within 1 MiB, the transaction with its index row over 4 MiB
    // (non-ASCII text is sent escaped, six bytes a character).
    let mut wide = Sheet {
        book: "b".into(),
        id: "2".into(),
        kind: "k".into(),
        ..Sheet::default()
    };
    for cell in wide.cells().into_iter().take(15) {
        *cell = "é".repeat(30_000);
    }
    let err = store.create(&mut wide.clone()).await.unwrap_err();
    assert!(
        matches!(&err, Error::LimitExceeded { limit: "RequestBodyTooLarge", detail } if detail.contains("index `kind`")),
        "{err}"
    );
    assert_nothing_stored(env, "after a transaction over 4 MiB").await;

    // Smaller, both are taken.
    for cell in wide.cells().into_iter().take(15) {
        *cell = "é".repeat(10_000);
    }
    store.create(&mut wide).await.unwrap();
    assert_eq!(Sheet::find_by_kind(&store, "b", "k").await.unwrap().len(), 1);
}
