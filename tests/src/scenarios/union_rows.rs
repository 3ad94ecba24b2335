//! Union (polymorphic) tables in bulk: batches packed into transactions,
//! pages and streams of a mixed partition, rows shared with `Store<T>` and
//! with .NET's polymorphic store.

use futures::TryStreamExt;
use unified_tables::layout::TYPE_NAME;
use unified_tables::{DateTime, Error, Row, TableEntity, UnionEntry, UnionQuery, UnionWrite, Value};

use super::union::{at, events, placed, shipped, Address, OrderEvent, OrderPlaced, DOTNET_PLACED, DOTNET_SHIPPED};
use crate::Env;

/// A mixed partition: items of every variant, and a marker every seventh row.
fn mixed(n: usize) -> Vec<(String, Option<OrderEvent>)> {
    (0..n)
        .map(|i| {
            let item = match i % 7 {
                0 => None,
                1 | 4 => Some(placed(i as f64)),
                2 | 5 => Some(shipped(&format!("carrier-{i}"))),
                _ => Some(OrderEvent::Cancelled),
            };
            (format!("{i:09}"), item)
        })
        .collect()
}

fn writes<'a>(pk: &str, rows: &'a [(String, Option<OrderEvent>)]) -> Vec<UnionWrite<'a, OrderEvent>> {
    rows.iter()
        .map(|(rk, item)| match item {
            Some(item) => UnionWrite::item((pk, rk.as_str()), item),
            None => UnionWrite::marker((pk, rk.as_str())).column("_IsCommitted", Value::Bool(rk.ends_with('7'))),
        })
        .collect()
}

fn same(entries: &[UnionEntry<OrderEvent>], rows: &[(String, Option<OrderEvent>)]) {
    assert_eq!(entries.len(), rows.len());
    for (entry, (rk, item)) in entries.iter().zip(rows) {
        assert_eq!((&entry.key.row_key, &entry.item), (rk, item));
    }
}

pub async fn union_batches_of_250_mixed_items_take_3_transactions(env: &Env) {
    let store = events(env).await;
    let rows = mixed(250);
    assert_eq!(store.insert_batch(writes("agg", &rows)).await.unwrap(), 250);
    assert_eq!(
        env.counts().transactions,
        3,
        "250 rows of one partition are 3 transactions"
    );
    assert_eq!(env.counts().entity_requests(), 3);
    same(&store.query("agg").await.unwrap(), &rows);

    // Upserts pack the same way and replace.
    let replaced: Vec<(String, Option<OrderEvent>)> = rows
        .iter()
        .map(|(rk, _)| (rk.clone(), Some(OrderEvent::Cancelled)))
        .collect();
    env.reset_counts();
    assert_eq!(store.upsert_batch(writes("agg", &replaced)).await.unwrap(), 250);
    assert_eq!(env.counts().transactions, 3);
    same(&store.query("agg").await.unwrap(), &replaced);

    // Partitions are grouped, each packed on its own; a partition of one is one request.
    let spread = mixed(121);
    let mut batch = writes("a", &spread[..120]);
    batch.extend(writes("b", &spread[120..]));
    env.reset_counts();
    store.insert_batch(batch).await.unwrap();
    assert_eq!((env.counts().transactions, env.counts().writes), (2, 1));

    // A failing transaction names the row; those before it stay committed.
    let more = mixed(260);
    let err = store.insert_batch(writes("a", &more)).await.unwrap_err();
    assert!(
        matches!(&err, Error::BatchFailed { committed: 0, row_key, .. } if row_key == "000000000"),
        "{err}"
    );
}

pub async fn union_pages_through_a_mixed_partition(env: &Env) {
    let store = events(env).await;
    let rows = mixed(25);
    store.insert_batch(writes("agg", &rows)).await.unwrap();
    store.insert(("other", "0001"), &placed(1.0)).await.unwrap();

    let mut query = UnionQuery::partition("agg").take(10);
    let mut seen = Vec::new();
    let mut pages = 0;
    env.reset_counts();
    loop {
        let page = store.page(query.clone()).await.unwrap();
        pages += 1;
        assert!(page.entries.len() <= 10);
        seen.extend(page.entries);
        match page.cursor {
            Some(next) => query = query.after(next),
            None => break,
        }
    }
    if env.sorts_results() {
        assert_eq!(env.counts().queries, pages);
    } else {
        // Cosmos DB for Table: one query, a service page per store page, in
        // the service's order (of any size up to 10, empty ones included).
        assert_eq!(env.counts().queries, 1);
        assert_eq!(env.counter.counts().queries, pages);
        seen.sort_by(|a, b| a.key.row_key.cmp(&b.key.row_key));
    }
    assert!(pages >= 3);
    same(&seen, &rows);

    // A cursor belongs to its query.
    let first = store.page(UnionQuery::partition("agg").take(10)).await.unwrap();
    let cursor = first.cursor.clone().expect("more pages");
    let err = store
        .page(UnionQuery::partition("other").take(10).after(cursor.clone()))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidCursor(_)), "{err}");
    let err = store
        .query(UnionQuery::partition("agg").after(cursor))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidCursor(_)), "{err}");

    // Streams and limits.
    let mut streamed: Vec<_> = store.stream("agg").try_collect().await.unwrap();
    if !env.sorts_results() {
        // A stream without a limit yields the service's order: every entry once.
        streamed.sort_by(|a, b| a.key.row_key.cmp(&b.key.row_key));
    }
    same(&streamed, &rows);
    let five: Vec<_> = store
        .stream(UnionQuery::partition("agg").take(5))
        .try_collect()
        .await
        .unwrap();
    same(&five, &rows[..5]);
    same(
        &store
            .query(UnionQuery::partition("agg").row_key_prefix("00000001"))
            .await
            .unwrap(),
        &rows[10..20],
    );

    // Typed filters on system columns and keys.
    let committed = store
        .query(UnionQuery::partition("agg").filter(|c| c.system::<bool>("_IsCommitted").eq(true)))
        .await
        .unwrap();
    let keys: Vec<&str> = committed.iter().map(|e| e.key.row_key.as_str()).collect();
    assert_eq!(keys, ["000000007"]);
    let cancelled = store
        .query(UnionQuery::partition("agg").filter(|c| c.type_name.eq("Cancelled") & c.row_key.lt("000000010")))
        .await
        .unwrap();
    assert!(cancelled.iter().all(|e| e.item == Some(OrderEvent::Cancelled)));
    assert_eq!(cancelled.len(), 2, "rows 3 and 6");

    // A payload column is not a union filter: refused before sending.
    env.reset_counts();
    let err = store
        .query(UnionQuery::partition("agg").filter(|c| c.system::<f64>("Amount").eq(1.0)))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidValue { column, .. } if column == "Amount"),
        "{err}"
    );
    let err = store
        .stream(UnionQuery::partition("agg").filter(|c| c.system::<f64>("Amount").eq(1.0)))
        .try_collect::<Vec<_>>()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidValue { .. }), "{err}");
    assert_eq!(env.counts().entity_requests(), 0);
}

/// The placed event as an entity of its own, sharing the union's columns.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct PlacedRow {
    #[table(partition_key)]
    pub order: String,
    #[table(row_key)]
    pub sequence: String,
    pub amount: f64,
    pub lines: Vec<String>,
    pub placed_at: DateTime,
}

pub async fn union_rows_are_readable_by_the_payload_type(env: &Env) {
    let store = events(env).await;
    let event = placed(7.25);
    store.insert(("order-9", "0001"), &event).await.unwrap();
    let rows = env.tables.store_in::<PlacedRow>(&env.table);
    let read = rows.get(("order-9", "0001")).await.unwrap().expect("the row");
    let OrderEvent::Placed(payload) = event else {
        unreachable!()
    };
    assert_eq!(
        (read.amount, read.lines, read.placed_at),
        (payload.amount, payload.lines, payload.placed_at),
        "the token is a system column the entity type ignores"
    );

    // A row Store<T> wrote has no token: the union reads it as a marker.
    let mut plain = PlacedRow {
        order: "order-9".into(),
        sequence: "0002".into(),
        amount: 1.0,
        lines: vec![],
        placed_at: at("2024-01-01T00:00:00Z"),
    };
    rows.create(&mut plain).await.unwrap();
    let entry = store.get(("order-9", "0002")).await.unwrap().unwrap();
    assert!(entry.is_marker() && entry.item.is_none());
}

pub async fn union_reads_the_rows_dotnet_writes(env: &Env) {
    let store = events(env).await;
    // As .NET's polymorphic store writes them by default: the assembly-qualified
    // name in _TypeName, the serializer's columns (decimal as Double, a list as
    // camelCase JSON, a nested object flattened), and a marker with no token.
    let golden = [
        Row::new("tx-42", "000000001")
            .with(TYPE_NAME, Value::String(DOTNET_PLACED.into()))
            .with("Amount", Value::Double(19.99))
            .with("Lines__Json", Value::String(r#"["pen","paper"]"#.into()))
            .with("PlacedAt", Value::DateTime(at("2024-05-01T10:00:00Z"))),
        Row::new("tx-42", "000000002")
            .with(TYPE_NAME, Value::String(DOTNET_SHIPPED.into()))
            .with("Carrier", Value::String("Nova Poshta".into()))
            .with("To_City", Value::String("Odesa".into()))
            .with("To_Zip", Value::String("65000".into())),
        Row::new("tx-42", "FlagEntity").with("_IsCommitted", Value::Bool(false)),
    ];
    for row in golden {
        env.put_raw(row).await;
    }
    let entries = store.query("tx-42").await.unwrap();
    assert_eq!(entries.len(), 3);
    assert_eq!(
        entries[0].item,
        Some(OrderEvent::Placed(OrderPlaced {
            amount: 19.99,
            lines: vec!["pen".into(), "paper".into()],
            placed_at: at("2024-05-01T10:00:00Z"),
        }))
    );
    assert_eq!(
        entries[1].item,
        Some(OrderEvent::Shipped {
            carrier: "Nova Poshta".into(),
            to: Address {
                city: "Odesa".into(),
                zip: Some("65000".into()),
            },
            arrives: None,
        })
    );
    assert_eq!(entries[1].token.as_deref(), Some(DOTNET_SHIPPED));
    assert!(entries[2].is_marker());
    assert_eq!(entries[2].column("_IsCommitted"), Some(&Value::Bool(false)));

    // The commit flag flips as .NET's MergeColumnsAsync would flip it.
    store
        .merge_columns(("tx-42", "FlagEntity"), [("_IsCommitted", Value::Bool(true))])
        .await
        .unwrap();
    let flag = store.get(("tx-42", "FlagEntity")).await.unwrap().unwrap();
    assert_eq!(flag.column("_IsCommitted"), Some(&Value::Bool(true)));
}
