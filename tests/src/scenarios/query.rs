//! Ordering, partitions, paging, projections, counting.

use unified_tables::backend::QueryRequest;
use unified_tables::backend::{Backend, WriteOp};
use unified_tables::query::Filter;
use unified_tables::{QueryOptions, Row, Value};

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
        match page.next {
            Some(c) => continuation = Some(c),
            None => break,
        }
    }
    assert!(pages >= 3);
    assert_eq!(seen.len(), 2_500);
    if env.sorts_results() {
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "no row twice, in order");
    } else {
        // Cosmos DB for Table returns rows in no order: every row once.
        seen.sort();
        let expected: Vec<String> = (0..2_500).map(|i| format!("{i:05}")).collect();
        assert_eq!(seen, expected, "every row once");
    }

    // Through the store: 2,500 rows of one partition in 3 round trips.
    let store = env.tables.store_in::<Item>(&env.table);
    env.reset_counts();
    let items = store.query(QueryOptions::partition("p")).await.unwrap();
    assert_eq!(items.len(), 2_500);
    if env.sorts_results() {
        assert_eq!(env.counts().queries, 3, "a 2500-row partition read is 3 requests");
    } else {
        // The service cuts pages where it likes: one query, followed to its end
        // (pages of at most 1000 rows, so at least 3 of them).
        assert_eq!(env.counts().queries, 1, "one query started");
        assert!(env.counter.counts().queries >= 3, "{:?}", env.counter.counts());
    }
    assert!(items.iter().enumerate().all(|(i, it)| it.n == i as i64), "in key order");

    // $top is a page size: 250 per page.
    let top = QueryRequest {
        top: Some(250),
        ..request.clone()
    };
    let first = b.query(&env.table, &top, None).await.unwrap();
    if env.sorts_results() {
        assert_eq!(first.rows.len(), 250);
        let resumed = b.query(&env.table, &top, first.next.as_ref()).await.unwrap();
        assert_eq!(
            resumed.rows.first().map(|r| r.row_key.as_str()),
            Some("00250"),
            "resumes where it stopped"
        );
    } else {
        // Cosmos DB for Table: $top bounds a page, which may hold fewer rows
        // (or none) and still carry a token; resuming from it brings exactly
        // the rows the first page did not.
        assert!(first.rows.len() <= 250, "{}", first.rows.len());
        let next = first.next.clone().expect("2500 rows do not fit in 250");
        let rest = crate::rows::rows_after(env, &env.table, &top, Some(next)).await;
        let mut keys: Vec<String> = first.rows.iter().chain(&rest).map(|r| r.row_key.clone()).collect();
        keys.sort();
        let expected: Vec<String> = (0..2_500).map(|i| format!("{i:05}")).collect();
        assert_eq!(keys, expected, "resumes where it stopped: every row once");
    }
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
    // Every page of the request (a service may cut its pages anywhere, empty ones included).
    let rows = crate::rows::all_rows(env, &env.table, &request).await;
    let row = &rows[0];
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
    if env.sorts_results() {
        assert_eq!(env.counts().queries, 2);
    } else {
        // One query, in pages the service cuts (of at most 1000 rows).
        assert_eq!(env.counts().queries, 1);
        assert!(env.counter.counts().queries >= 2, "{:?}", env.counter.counts());
    }
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
}

pub async fn pages_carry_a_cursor_bound_to_their_query(env: &Env) {
    seed_items(env, "p", 250).await;
    let store = env.tables.store_in::<Item>(&env.table);
    let mut options = QueryOptions::partition("p").take(100);
    let mut seen = Vec::new();
    let mut pages = 0;
    let mut second_cursor = None;
    let mut first_len = 0;
    loop {
        let page = store.page(options.clone()).await.unwrap();
        pages += 1;
        assert!(page.items.len() <= 100);
        if pages == 1 {
            first_len = page.items.len();
        }
        seen.extend(page.items.iter().map(|i| i.n));
        match page.cursor {
            Some(c) => {
                if pages == 1 {
                    second_cursor = Some(c.clone());
                }
                options = options.after(c);
            }
            None => break,
        }
    }
    if env.sorts_results() {
        assert_eq!(seen, (0..250).collect::<Vec<i64>>());
    } else {
        // Cosmos DB for Table: pages in the service's order, of any size up
        // to 100 (empty ones too): every item once.
        let mut sorted = seen.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..250).collect::<Vec<i64>>(), "every item once");
    }
    assert!(pages >= 3);
    let cursor = second_cursor.unwrap();
    // Resuming from a saved cursor (as text, as a client would send it back).
    let text = cursor.to_string();
    let resumed = store
        .page(QueryOptions::partition("p").take(100).after(text.parse().unwrap()))
        .await
        .unwrap();
    if env.sorts_results() {
        assert_eq!(resumed.items.first().map(|i| i.n), Some(100));
    } else {
        // The same place in the same order; the service cuts this page anew.
        let got: Vec<i64> = resumed.items.iter().map(|i| i.n).collect();
        assert_eq!(
            got,
            seen[first_len..first_len + got.len()],
            "resumes where the first page stopped"
        );
        assert!(got.len() == 250 - first_len || resumed.cursor.is_some());
    }
    // Another query, another page size, a damaged cursor: refused.
    for other in [
        QueryOptions::partition("q").take(100),
        QueryOptions::partition("p").take(50),
    ] {
        let err = store.page(other.after(cursor.clone())).await.unwrap_err();
        assert!(matches!(err, unified_tables::Error::InvalidCursor(_)), "{err}");
    }
    let mut damaged = text.clone();
    damaged.replace_range(2..3, if &text[2..3] == "A" { "B" } else { "A" });
    let err = store
        .page(QueryOptions::partition("p").take(100).after(damaged.parse().unwrap()))
        .await
        .unwrap_err();
    assert!(matches!(err, unified_tables::Error::InvalidCursor(_)), "{err}");
}

pub async fn streams_read_page_by_page(env: &Env) {
    use futures::TryStreamExt;
    seed_items(env, "p", 2_100).await;
    let store = env.tables.store_in::<Item>(&env.table);
    env.reset_counts();
    let all: Vec<Item> = store.stream(QueryOptions::partition("p")).try_collect().await.unwrap();
    assert_eq!(all.len(), 2_100);
    if env.sorts_results() {
        assert!(all.windows(2).all(|w| w[0].n + 1 == w[1].n));
        assert_eq!(env.counts().queries, 3);
    } else {
        // Cosmos DB for Table: a stream without a limit yields the service's
        // order (every item once), from one query in the pages the service cuts.
        let mut ns: Vec<i64> = all.iter().map(|i| i.n).collect();
        ns.sort_unstable();
        assert_eq!(ns, (0..2_100).collect::<Vec<i64>>(), "every item once");
        assert_eq!(env.counts().queries, 1);
        assert!(env.counter.counts().queries >= 3, "{:?}", env.counter.counts());
    }
    let first: Vec<Item> = store
        .stream(QueryOptions::partition("p").take(5))
        .try_collect()
        .await
        .unwrap();
    assert_eq!(first.iter().map(|i| i.n).collect::<Vec<_>>(), vec![0, 1, 2, 3, 4]);
}

pub async fn bounded_counts_and_any(env: &Env) {
    seed_items(env, "p", 1_234).await;
    let store = env.tables.store_in::<Item>(&env.table);
    let c = store.count_bounded(QueryOptions::partition("p"), 1_000).await.unwrap();
    assert_eq!(c, unified_tables::Count::AtLeast(1_000));
    assert_eq!(c.to_string(), "1000+");
    let c = store.count_bounded(QueryOptions::partition("p"), 5_000).await.unwrap();
    assert_eq!(
        (c, c.to_string()),
        (unified_tables::Count::Exact(1_234), "1234".to_owned())
    );
    assert!(store.any(QueryOptions::partition("p")).await.unwrap());
    assert!(!store.any(QueryOptions::partition("nobody")).await.unwrap());
}

pub async fn select_reads_only_the_named_fields(env: &Env) {
    let store = env.tables.store_in::<crate::model::Everything>(&env.table);
    let mut e = crate::model::Everything::sample("p", "r");
    store.create(&mut e).await.unwrap();
    let got = store
        .query(QueryOptions::partition("p").select_raw(&["text", "Big", "tags", "address", "status", "extra"]))
        .await
        .unwrap()
        .remove(0);
    assert_eq!(
        (got.text.as_str(), got.big, &got.tags),
        (e.text.as_str(), e.big, &e.tags)
    );
    assert_eq!(got.address, e.address, "a flattened field selects all its columns");
    assert_eq!(
        (got.small, got.flag, got.double),
        (0, false, 0.0),
        "unselected fields are at their defaults"
    );
    assert!(got.etag.is_some());
    // A required field with no default (a JSON-stored struct) must be selected, and the error says so.
    let err = store
        .query(QueryOptions::partition("p").select_raw(&["text", "status"]))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, unified_tables::Error::Decode { column, .. } if column.starts_with("Extra")),
        "{err}"
    );
    let err = store
        .query(QueryOptions::partition("p").select_raw(&["nope"]))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("nope"), "{err}");
}

/// A cursor belongs to `page`: the readers that start from the beginning
/// refuse it instead of silently ignoring it.
pub async fn a_cursor_outside_page_is_refused(env: &Env) {
    let store = env.tables.store_in::<Item>(&env.table);
    let items: Vec<Item> = (0..5).map(|i| Item::new("p", i)).collect();
    store.create_batch(&items).await.unwrap();
    let first = store.page(QueryOptions::partition("p").take(2)).await.unwrap();
    let cursor = first.cursor.expect("more pages");
    let with_cursor = || QueryOptions::partition("p").take(2).after(cursor.clone());
    let err = store.query(with_cursor()).await.unwrap_err();
    assert!(matches!(err, unified_tables::Error::InvalidCursor(_)), "{err}");
    assert!(store.count(with_cursor()).await.is_err());
    assert!(store.any(with_cursor()).await.is_err());
    let next = store.page(with_cursor()).await.unwrap();
    if env.sorts_results() {
        assert_eq!(next.items.len(), 2, "page still continues after it");
    } else {
        // Cosmos DB for Table cuts pages at any size up to the asked one:
        // the next page holds at most 2 items, none of the first page's.
        assert!(next.items.len() <= 2, "{}", next.items.len());
        assert!(
            next.items.iter().all(|i| first.items.iter().all(|f| f.n != i.n)),
            "page still continues after it"
        );
    }
}
