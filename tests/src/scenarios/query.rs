//! Ordering, partitions, paging, projections, counting.

use unified_tables::backend::QueryRequest;
use unified_tables::query::Filter;
use unified_tables::{Backend, QueryOptions, Row, Value, WriteOp};

use crate::model::{Customer, Item};
use crate::Env;

/// Writes `n` items into one partition with raw transactions of 100.
pub async fn seed_items(env: &Env, pk: &str, n: i64) {
    let b = env.backend();
    b.create_table(&env.table).await.unwrap();
    let ops: Vec<WriteOp> = (0..n)
        .map(|i| {
            WriteOp::Insert(
                Row::new(pk, format!("{i:05}"))
                    .with("N", Value::Int64(i))
                    .with("Pad", Value::String("p".repeat(20))),
            )
        })
        .collect();
    for chunk in ops.chunks(100) {
        b.transaction(&env.table, chunk.to_vec()).await.unwrap();
    }
}

pub async fn rows_come_back_in_key_order(env: &Env) {
    let store = env.tables.store_in::<Customer>(&env.table);
    // UTF-16 code-unit order: U+1F600 (surrogates D83D..) sorts before U+FFFD, unlike code-point order.
    let keys = ["b", "a", "B", "\u{FFFD}", "\u{1F600}", "é", "a~", "aa", "0", "Z"];
    for k in keys {
        store.create(&mut Customer::new("p", k, k)).await.unwrap();
    }
    store
        .create(&mut Customer::new("o", "z", "other partition"))
        .await
        .unwrap();
    let got: Vec<String> = store
        .query(QueryOptions::partition("p"))
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.email)
        .collect();
    let mut expected: Vec<String> = keys.iter().map(|s| s.to_string()).collect();
    expected.sort_by(|a, b| unified_tables::cmp_utf16(a, b));
    assert_eq!(got, expected);
    assert_eq!(
        expected.iter().position(|k| k == "\u{1F600}").unwrap() + 1,
        expected.iter().position(|k| k == "\u{FFFD}").unwrap()
    );
    let all = store.query(QueryOptions::all()).await.unwrap();
    assert_eq!(
        all.first().map(|c| c.region.as_str()),
        Some("o"),
        "partitions in order too"
    );
    assert_eq!(all.len(), keys.len() + 1);
}

pub async fn a_partition_query_reads_only_that_partition(env: &Env) {
    let store = env.tables.store_in::<Customer>(&env.table);
    for pk in ["a", "b", "b'c", "c"] {
        for rk in ["1", "2"] {
            store.create(&mut Customer::new(pk, rk, pk)).await.unwrap();
        }
    }
    for pk in ["a", "b", "b'c", "c"] {
        let got = store.query(QueryOptions::partition(pk)).await.unwrap();
        assert_eq!(got.len(), 2, "{pk}");
        assert!(got.iter().all(|c| c.region == pk && c.etag.is_some()));
    }
    assert!(store
        .query(QueryOptions::partition("missing"))
        .await
        .unwrap()
        .is_empty());
    let two = store.query(QueryOptions::all().take(3)).await.unwrap();
    assert_eq!(two.len(), 3, "take bounds the total");
}

pub async fn paging_follows_continuations_across_1000_row_pages(env: &Env) {
    seed_items(env, "p", 2_500).await;
    let b = env.backend();
    // Raw paging: pages of at most 1000, resumable from the continuation.
    let request = QueryRequest {
        filter: Some(Filter::eq("PartitionKey", Value::String("p".into()))),
        ..Default::default()
    };
    let mut seen = Vec::new();
    let mut continuation = None;
    let mut pages = 0;
    loop {
        let page = b.query(&env.table, &request, continuation.as_ref()).await.unwrap();
        assert!(page.rows.len() <= 1000);
        pages += 1;
        seen.extend(page.rows.iter().map(|r| r.row_key.clone()));
        match page.continuation {
            Some(c) => continuation = Some(c),
            None => break,
        }
    }
    assert!(pages >= 3);
    assert_eq!(seen.len(), 2_500);
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "no row twice, in order");

    // Through the store: 2,500 rows of one partition in 3 round trips.
    let store = env.tables.store_in::<Item>(&env.table);
    env.reset_counts();
    let items = store.query(QueryOptions::partition("p")).await.unwrap();
    assert_eq!(items.len(), 2_500);
    assert_eq!(env.counts().queries, 3, "a 2500-row partition read is 3 requests");
    assert!(items.iter().enumerate().all(|(i, it)| it.n == i as i64));

    // $top is a page size: 250 per page.
    let top = QueryRequest {
        top: Some(250),
        ..request.clone()
    };
    let first = b.query(&env.table, &top, None).await.unwrap();
    assert_eq!(first.rows.len(), 250);
    let resumed = b.query(&env.table, &top, first.continuation.as_ref()).await.unwrap();
    assert_eq!(
        resumed.rows.first().map(|r| r.row_key.as_str()),
        Some("00250"),
        "resumes where it stopped"
    );
}

pub async fn select_returns_only_the_named_properties(env: &Env) {
    let store = env.tables.store_in::<Customer>(&env.table);
    let mut c = Customer::new("p", "r", "Name");
    c.visits = 5;
    store.create(&mut c).await.unwrap();
    let request = QueryRequest {
        select: Some(vec!["Visits".into(), "Missing".into()]),
        ..Default::default()
    };
    let page = unified_tables::Backend::query(env.backend(), &env.table, &request, None)
        .await
        .unwrap();
    let row = &page.rows[0];
    assert_eq!(
        (row.partition_key.as_str(), row.row_key.as_str()),
        ("p", "r"),
        "keys always come back"
    );
    assert!(row.etag.is_some() && row.timestamp.is_some());
    assert_eq!(row.get("Visits"), Some(&Value::Int64(5)));
    assert_eq!(row.get("Name"), None, "unselected properties are not returned");
    assert_eq!(
        row.get("Missing"),
        None,
        "a selected property the row lacks is absent (null on the service)"
    );
}

pub async fn count_reads_keys_only(env: &Env) {
    seed_items(env, "p", 1_234).await;
    seed_items(env, "q", 10).await;
    let store = env.tables.store_in::<Item>(&env.table);
    env.reset_counts();
    assert_eq!(store.count(QueryOptions::partition("p")).await.unwrap(), 1_234);
    assert_eq!(env.counts().queries, 2);
    assert_eq!(store.count(QueryOptions::all()).await.unwrap(), 1_244);
    assert_eq!(store.count(QueryOptions::partition("none")).await.unwrap(), 0);
}

pub async fn row_key_prefix_reads_the_canonical_range(env: &Env) {
    let store = env.tables.store_in::<Customer>(&env.table);
    for rk in ["ab", "abc", "abd", "ac", "a", "b", "ab\u{FFFF}", "ab'x"] {
        store.create(&mut Customer::new("p", rk, rk)).await.unwrap();
    }
    let got: Vec<String> = store
        .query(QueryOptions::partition("p").row_key_prefix("ab"))
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.email)
        .collect();
    assert_eq!(got, vec!["ab", "ab'x", "abc", "abd", "ab\u{FFFF}"]);
    let err = store.query(QueryOptions::all().row_key_prefix("ab")).await.unwrap_err();
    assert!(err.to_string().contains("partition"), "{err}");
}
