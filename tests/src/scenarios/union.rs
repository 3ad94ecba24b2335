//! Union (polymorphic) tables: every variant round trips, marker rows commit
//! with their items, the column merge, unknown and legacy tokens.

use unified_tables::backend::Backend;
use unified_tables::layout::{TYPE_NAME, WRITE_TOKEN, WRITE_TOKEN_CHARS};
use unified_tables::{DateTime, Error, Row, TableRecord, TableUnion, UnionStore, UnionWrite, Value};

use crate::Env;

/// .NET's assembly-qualified name of the shipped event, as its polymorphic store writes it.
pub const DOTNET_SHIPPED: &str =
    "Shop.Events.OrderShipped, Shop.Events, Version=1.0.0.0, Culture=neutral, PublicKeyToken=null";
/// .NET's assembly-qualified name of the placed event.
pub const DOTNET_PLACED: &str =
    "Shop.Events.OrderPlaced, Shop.Events, Version=1.0.0.0, Culture=neutral, PublicKeyToken=null";

/// A payload record: `Amount`, `Lines__Json`, `PlacedAt`.
#[derive(TableRecord, Debug, Clone, PartialEq)]
pub struct OrderPlaced {
    pub amount: f64,
    pub lines: Vec<String>,
    pub placed_at: DateTime,
}

/// A record nested in a variant's named fields: `To_City`, `To_Zip`.
#[derive(TableRecord, Debug, Clone, PartialEq)]
pub struct Address {
    pub city: String,
    pub zip: Option<String>,
}

/// Every payload shape: a record, named fields under a tag with older
/// tokens, no payload at all.
#[derive(TableUnion, Debug, Clone, PartialEq)]
pub enum OrderEvent {
    #[table(also = ["Shop.Events.OrderPlaced, Shop.Events, Version=1.0.0.0, Culture=neutral, PublicKeyToken=null"])]
    Placed(OrderPlaced),
    #[table(tag = "OrderShipped", also = ["Shipped", "Shop.Events.OrderShipped, Shop.Events, Version=1.0.0.0, Culture=neutral, PublicKeyToken=null"])]
    Shipped {
        carrier: String,
        #[table(flatten)]
        to: Address,
        #[table(rename = "Eta")]
        arrives: Option<DateTime>,
    },
    Cancelled,
}

/// The same table read with a catch-all.
#[derive(TableUnion, Debug, Clone, PartialEq)]
pub enum AnyOrderEvent {
    Placed(OrderPlaced),
    #[table(other)]
    Other(Row),
}

pub fn at(text: &str) -> DateTime {
    DateTime::parse(text).expect("a date")
}

pub fn placed(amount: f64) -> OrderEvent {
    OrderEvent::Placed(OrderPlaced {
        amount,
        lines: vec!["pen".into(), "ink \u{2014} blue".into()],
        placed_at: at("2024-05-01T10:00:00Z"),
    })
}

pub fn shipped(carrier: &str) -> OrderEvent {
    OrderEvent::Shipped {
        carrier: carrier.into(),
        to: Address {
            city: "Lviv".into(),
            zip: None,
        },
        arrives: Some(at("2024-05-03T12:30:00Z")),
    }
}

/// The union store of the scenario's table, created, with the counts reset.
pub async fn events(env: &Env) -> UnionStore<OrderEvent> {
    let store = env.tables.union_store::<OrderEvent>(&env.table);
    store.ensure_created().await.unwrap();
    env.reset_counts();
    store
}

async fn raw(env: &Env, pk: &str, rk: &str) -> Row {
    env.backend().get(&env.table, pk, rk).await.unwrap().expect("the row")
}

pub async fn union_every_variant_round_trips(env: &Env) {
    let store = events(env).await;
    let all = [placed(12.5), shipped("DHL"), OrderEvent::Cancelled];
    for (i, event) in all.iter().enumerate() {
        let etag = store.insert(("order-1", format!("{i:09}")), event).await.unwrap();
        assert!(!etag.as_str().is_empty());
    }
    assert_eq!(env.counts().writes, 3, "one request per insert");

    // Each read is the variant written, with its canonical token, ETag and Timestamp.
    for (i, event) in all.iter().enumerate() {
        let entry = store
            .get(("order-1", format!("{i:09}")))
            .await
            .unwrap()
            .expect("stored");
        assert_eq!(entry.item.as_ref(), Some(event));
        assert_eq!(entry.token.as_deref(), event.token());
        assert!(!entry.is_marker() && entry.columns.is_empty());
        assert!(entry.timestamp.is_some() && !entry.etag.as_str().is_empty());
    }
    let listed = store.query("order-1").await.unwrap();
    let items: Vec<OrderEvent> = listed.into_iter().filter_map(|e| e.item).collect();
    assert_eq!(items, all);

    // The rows as stored: the token, the payload's columns as a record's would be.
    let row = raw(env, "order-1", "000000001").await;
    assert_eq!(row.get(TYPE_NAME), Some(&Value::String("OrderShipped".into())));
    assert_eq!(row.get("Carrier"), Some(&Value::String("DHL".into())));
    assert_eq!(row.get("To_City"), Some(&Value::String("Lviv".into())));
    assert_eq!(row.get("Eta"), Some(&Value::DateTime(at("2024-05-03T12:30:00Z"))));
    assert!(row.get("To_Zip").is_none(), "None is no column");
    let row = raw(env, "order-1", "000000000").await;
    assert_eq!(row.get("Amount"), Some(&Value::Double(12.5)));
    assert!(row.get("Lines__Json").is_some());
    let row = raw(env, "order-1", "000000002").await;
    assert_eq!(
        row.properties.len(),
        2,
        "a unit variant stores its type token and the write token only"
    );
    assert!(matches!(row.get(WRITE_TOKEN), Some(Value::String(t)) if t.len() == WRITE_TOKEN_CHARS));

    // Verbatim keys: a different case is a different row.
    assert!(store.get(("Order-1", "000000000")).await.unwrap().is_none());
    let err = store.insert(("order-1", "000000000"), &placed(1.0)).await.unwrap_err();
    assert!(matches!(err, Error::AlreadyExists { .. }), "{err}");
    store
        .upsert(("order-1", "000000000"), &OrderEvent::Cancelled)
        .await
        .unwrap();
    let entry = store.get(("order-1", "000000000")).await.unwrap().unwrap();
    assert_eq!(entry.item, Some(OrderEvent::Cancelled));
    assert!(
        raw(env, "order-1", "000000000").await.get("Amount").is_none(),
        "an upsert replaces the row"
    );
    assert!(store.delete(("order-1", "000000000")).await.unwrap());
    assert!(
        !store.delete(("order-1", "000000000")).await.unwrap(),
        "deletes are idempotent"
    );

    // Refusals send nothing.
    env.reset_counts();
    let err = store
        .insert(("order/1", "x"), &OrderEvent::Cancelled)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidKey { .. }), "{err}");
    let huge = OrderEvent::Shipped {
        carrier: crate::noise(40_000, 1),
        to: Address {
            city: "y".into(),
            zip: None,
        },
        arrives: None,
    };
    let err = store.insert(("order-1", "huge"), &huge).await.unwrap_err();
    assert!(err.is_refusal(), "{err}");
    assert_eq!(env.counts().entity_requests(), 0, "nothing was sent");
}

pub async fn union_marker_rows_commit_with_their_items_or_not_at_all(env: &Env) {
    let store = events(env).await;
    let (first, second) = (placed(10.0), shipped("UPS"));
    store
        .insert_batch(vec![
            UnionWrite::item(("tx-1", "0001"), &first),
            UnionWrite::item(("tx-1", "0002"), &second),
            UnionWrite::marker(("tx-1", "flag"))
                .column("_IsCommitted", Value::Bool(false))
                .column("_Attempts", Value::Int32(1)),
        ])
        .await
        .unwrap();
    assert_eq!(env.counts().transactions, 1, "items and marker in one transaction");
    assert_eq!(env.counts().entity_requests(), 1);

    let marker = store.get(("tx-1", "flag")).await.unwrap().expect("the marker");
    assert!(marker.is_marker() && marker.item.is_none() && marker.token.is_none());
    assert_eq!(marker.column("_IsCommitted"), Some(&Value::Bool(false)));
    assert_eq!(marker.column("_Attempts"), Some(&Value::Int32(1)));
    let stored = raw(env, "tx-1", "flag").await;
    assert!(
        stored.properties.keys().all(|k| k.starts_with('_')) && stored.get(TYPE_NAME).is_none(),
        "a marker row holds system columns only: {:?}",
        stored.properties.keys().collect::<Vec<_>>()
    );
    let entries = store.query("tx-1").await.unwrap();
    assert_eq!(entries.len(), 3);
    assert_eq!(entries[0].item.as_ref(), Some(&first));
    assert_eq!(entries[1].item.as_ref(), Some(&second));

    // A transaction with one failing row applies nothing: not the new items, not the marker.
    let later = OrderEvent::Cancelled;
    let err = store
        .insert_batch(vec![
            UnionWrite::item(("tx-2", "0001"), &later),
            UnionWrite::item(("tx-2", "0002"), &later),
            UnionWrite::marker(("tx-2", "flag")).column("_IsCommitted", Value::Bool(false)),
        ])
        .await;
    assert!(err.is_ok());
    let err = store
        .insert_batch(vec![
            UnionWrite::item(("tx-2", "0003"), &later),
            UnionWrite::item(("tx-2", "0001"), &later),
            UnionWrite::marker(("tx-2", "flag2")).column("_IsCommitted", Value::Bool(false)),
        ])
        .await
        .unwrap_err();
    match &err {
        Error::BatchFailed {
            committed,
            row_key,
            source,
            ..
        } => {
            assert_eq!((*committed, row_key.as_str()), (0, "0001"), "{err}");
            assert!(matches!(**source, Error::AlreadyExists { .. }), "{err}");
        }
        other => panic!("expected BatchFailed, got {other}"),
    }
    assert!(store.get(("tx-2", "0003")).await.unwrap().is_none(), "all or nothing");
    assert!(store.get(("tx-2", "flag2")).await.unwrap().is_none(), "all or nothing");

    // A bad system column, or a key twice, refuses the whole batch before sending.
    env.reset_counts();
    let err = store
        .insert_batch(vec![
            UnionWrite::item(("tx-3", "0001"), &later),
            UnionWrite::marker(("tx-3", "flag")).column("IsCommitted", Value::Bool(false)),
        ])
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidValue { column, .. } if column == "IsCommitted"),
        "{err}"
    );
    let err = store
        .insert_batch(vec![
            UnionWrite::item(("tx-3", "0001"), &later),
            UnionWrite::marker(("tx-3", "flag")).column(TYPE_NAME, Value::String("Forged".into())),
        ])
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidValue { column, .. } if column == TYPE_NAME),
        "{err}"
    );
    let err = store
        .insert_batch(vec![
            UnionWrite::item(("tx-3", "0001"), &later),
            UnionWrite::item(("tx-3", "0001"), &later),
        ])
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidKey { .. }), "{err}");
    assert_eq!(env.counts().entity_requests(), 0, "nothing was sent");
    assert!(store.query("tx-3").await.unwrap().is_empty());
}

pub async fn union_merge_columns_with_and_without_an_etag(env: &Env) {
    let store = events(env).await;
    let event = placed(3.0);
    store
        .insert_batch(vec![
            UnionWrite::item(("tx", "0001"), &event),
            UnionWrite::marker(("tx", "flag"))
                .column("_IsCommitted", Value::Bool(false))
                .column("_Attempts", Value::Int32(1)),
        ])
        .await
        .unwrap();
    let before = store.get(("tx", "flag")).await.unwrap().unwrap();

    // Without an ETag: merged into whatever is stored; other columns are kept.
    env.reset_counts();
    let etag = store
        .merge_columns(("tx", "flag"), [("_IsCommitted", Value::Bool(true))])
        .await
        .unwrap();
    assert_eq!(env.counts().writes, 1, "one request, no read");
    assert_ne!(etag, before.etag);
    let after = store.get(("tx", "flag")).await.unwrap().unwrap();
    assert_eq!(after.column("_IsCommitted"), Some(&Value::Bool(true)));
    assert_eq!(after.column("_Attempts"), Some(&Value::Int32(1)));
    assert_eq!(after.etag, etag);

    // With an ETag: a stale one is a conflict and changes nothing; the current one wins.
    let err = store
        .merge_columns_if(("tx", "flag"), [("_Attempts", Value::Int32(9))], &before.etag)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Conflict { .. }), "{err}");
    assert_eq!(
        store.get(("tx", "flag")).await.unwrap().unwrap().column("_Attempts"),
        Some(&Value::Int32(1))
    );
    store
        .merge_columns_if(("tx", "flag"), [("_Attempts", Value::Int32(2))], &etag)
        .await
        .unwrap();
    assert_eq!(
        store.get(("tx", "flag")).await.unwrap().unwrap().column("_Attempts"),
        Some(&Value::Int32(2))
    );

    // Into an item's row: the item is untouched, the column is added.
    store
        .merge_columns(("tx", "0001"), [("_Published", Value::Bool(true))])
        .await
        .unwrap();
    let entry = store.get(("tx", "0001")).await.unwrap().unwrap();
    assert_eq!(entry.item, Some(event));
    assert_eq!(entry.column("_Published"), Some(&Value::Bool(true)));

    // A missing row, a payload column, the token, a wildcard ETag: refused.
    let err = store
        .merge_columns(("tx", "absent"), [("_IsCommitted", Value::Bool(true))])
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    env.reset_counts();
    for bad in ["Amount", TYPE_NAME, "_Split Parts"] {
        let err = store
            .merge_columns(("tx", "0001"), [(bad, Value::Double(1.0))])
            .await
            .unwrap_err();
        assert!(
            matches!(&err, Error::InvalidValue { column, .. } if column == bad),
            "{err}"
        );
    }
    let err = store
        .merge_columns_if(
            ("tx", "flag"),
            [("_A", Value::Bool(true))],
            &unified_tables::ETag::new("*"),
        )
        .await
        .unwrap_err();
    assert!(err.is_refusal(), "{err}");
    assert_eq!(env.counts().entity_requests(), 0, "nothing was sent");
}

pub async fn union_unknown_tokens_fail_or_reach_the_catch_all(env: &Env) {
    let store = events(env).await;
    store.insert(("o", "0001"), &placed(1.0)).await.unwrap();
    let foreign = Row::new("o", "0002")
        .with(
            TYPE_NAME,
            Value::String("Shop.Events.OrderRefunded, Shop.Events".into()),
        )
        .with("Amount", Value::Double(4.0))
        .with("_Audited", Value::Bool(true));
    env.put_raw(foreign.clone()).await;

    // Without a catch-all: a typed error naming the token and the table, on every read.
    let err = store.get(("o", "0002")).await.unwrap_err();
    match &err {
        Error::UnknownType {
            table, token, row_key, ..
        } => {
            assert_eq!(
                (table.as_str(), token.as_str(), row_key.as_str()),
                (env.table.as_str(), "Shop.Events.OrderRefunded, Shop.Events", "0002")
            );
        }
        other => panic!("expected UnknownType, got {other}"),
    }
    let text = err.to_string();
    assert!(
        text.contains("OrderRefunded") && text.contains(&env.table) && text.contains("`OrderShipped`"),
        "{text}"
    );
    let err = store.query("o").await.unwrap_err();
    assert!(matches!(err, Error::UnknownType { .. }), "{err}");

    // With a catch-all: the raw row, columns intact; known tokens still decode.
    let any = env.tables.union_store::<AnyOrderEvent>(&env.table);
    let entries = any.query("o").await.unwrap();
    assert!(matches!(entries[0].item, Some(AnyOrderEvent::Placed(_))));
    let Some(AnyOrderEvent::Other(row)) = &entries[1].item else {
        panic!("the catch-all holds the row: {:?}", entries[1].item)
    };
    assert_eq!(row.get("Amount"), Some(&Value::Double(4.0)));
    assert_eq!(
        entries[1].token.as_deref(),
        Some("Shop.Events.OrderRefunded, Shop.Events")
    );
    assert_eq!(entries[1].column("_Audited"), Some(&Value::Bool(true)));

    // Written back, the raw row keeps its token and columns.
    let item = entries[1].item.clone().unwrap();
    assert!(
        row.get(WRITE_TOKEN).is_none(),
        "the store's own cell is no column of the row"
    );
    any.insert(("o", "copy"), &item).await.unwrap();
    let mut copy = raw(env, "o", "copy").await;
    assert!(
        copy.properties.remove(WRITE_TOKEN).is_some(),
        "the copy's write carried a token"
    );
    assert_eq!(copy.properties, foreign.properties);
}

pub async fn union_legacy_tokens_are_read_and_rewritten_canonical(env: &Env) {
    let store = events(env).await;
    let legacy = Row::new("o", "0001")
        .with(TYPE_NAME, Value::String("Shipped".into()))
        .with("Carrier", Value::String("DPD".into()))
        .with("To_City", Value::String("Kyiv".into()));
    env.put_raw(legacy).await;

    let entry = store.get(("o", "0001")).await.unwrap().unwrap();
    assert_eq!(entry.token.as_deref(), Some("Shipped"), "the token as stored");
    assert_eq!(OrderEvent::canonical_token("Shipped"), Some("OrderShipped"));
    let item = entry
        .item
        .expect("read as the variant that also accepts the legacy token");
    assert_eq!(
        item,
        OrderEvent::Shipped {
            carrier: "DPD".into(),
            to: Address {
                city: "Kyiv".into(),
                zip: None
            },
            arrives: None,
        }
    );

    // The next write of the item stores the canonical token.
    store.upsert(("o", "0001"), &item).await.unwrap();
    assert_eq!(
        raw(env, "o", "0001").await.get(TYPE_NAME),
        Some(&Value::String("OrderShipped".into()))
    );
    let again = store.get(("o", "0001")).await.unwrap().unwrap();
    assert_eq!((again.token.as_deref(), again.item), (Some("OrderShipped"), Some(item)));
}
