//! Reads that follow page tokens fetch the next page while they decode the
//! current one, and fetch no page their limit makes needless.

use std::time::Duration;

use futures::TryStreamExt;
use unified_tables::QueryOptions;

use super::query::seed_items;
use crate::model::Item;
use crate::Env;

/// Waits until the backend has been asked for `n` queries, or `patience`
/// has passed, and returns how many it was asked for.
async fn until_queries(env: &Env, n: u64, patience: Duration) -> u64 {
    for _ in 0..patience.as_millis().div_ceil(10) {
        if env.counts().queries >= n {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    env.counts().queries
}

pub async fn a_stream_asks_for_the_next_page_before_it_yields_the_first_entity(env: &Env) {
    seed_items(env, "p", 2_100).await;
    let store = env.tables.store_in::<Item>(&env.table);
    env.reset_counts();
    let mut stream = store.stream(QueryOptions::partition("p"));
    let first = stream.try_next().await.unwrap().expect("a first entity");
    assert_eq!(first.n, 0);
    // The second page is on its way while the first is read: two requests,
    // though only one entity has been taken.
    assert_eq!(until_queries(env, 2, Duration::from_secs(10)).await, 2);
    let rest: Vec<Item> = stream.try_collect().await.unwrap();
    assert_eq!(rest.len(), 2_099);
    assert!(rest.windows(2).all(|w| w[0].n + 1 == w[1].n), "order kept across pages");
    assert_eq!(env.counts().queries, 3, "each page once");
}

pub async fn bounded_reads_fetch_no_page_their_limit_makes_needless(env: &Env) {
    seed_items(env, "p", 2_500).await;
    let store = env.tables.store_in::<Item>(&env.table);
    for (take, pages) in [(1_000, 1), (1_500, 2), (2_000, 2), (2_001, 3)] {
        env.reset_counts();
        let items = store.query(QueryOptions::partition("p").take(take)).await.unwrap();
        assert_eq!(items.len(), take);
        // A page read ahead would be asked for at once: a short wait shows there is none.
        assert_eq!(
            until_queries(env, pages + 1, Duration::from_millis(300)).await,
            pages,
            "take({take})"
        );
    }
    env.reset_counts();
    let five: Vec<Item> = store
        .stream(QueryOptions::partition("p").take(5))
        .try_collect()
        .await
        .unwrap();
    assert_eq!(five.len(), 5);
    assert!(store.any(QueryOptions::partition("p")).await.unwrap());
    assert_eq!(
        until_queries(env, 3, Duration::from_millis(300)).await,
        2,
        "one page for the stream, one for any"
    );
}
