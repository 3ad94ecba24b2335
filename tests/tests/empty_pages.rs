//! The service may return an empty page that still carries a token.
//! The in-memory backend can be told to do so on every n-th page; every
//! reader must keep going until the token is gone.

use futures::TryStreamExt;
use unified_tables::backend::memory::MemoryBackend;
use unified_tables::{QueryOptions, Tables};
use unified_tables_tests::model::Item;

async fn seeded(n: i64) -> unified_tables::Store<Item> {
    let tables = Tables::with_backend(MemoryBackend::new().page_quirks(2));
    let store = tables.store_in::<Item>("Items");
    store
        .create_batch(&(0..n).map(|i| Item::new("p", i)).collect::<Vec<_>>())
        .await
        .unwrap();
    store
}

#[tokio::test]
async fn query_stream_count_and_any_continue_past_empty_pages() {
    let store = seeded(2_500).await;
    assert_eq!(store.query(QueryOptions::partition("p")).await.unwrap().len(), 2_500);
    let streamed: Vec<Item> = store.stream(QueryOptions::partition("p")).try_collect().await.unwrap();
    assert_eq!(streamed.len(), 2_500);
    assert_eq!(store.count(QueryOptions::partition("p")).await.unwrap(), 2_500);
    assert!(store.any(QueryOptions::partition("p")).await.unwrap());
}

#[tokio::test]
async fn an_empty_page_with_a_cursor_is_not_the_end() {
    let store = seeded(250).await;
    let mut options = QueryOptions::partition("p").take(100);
    let (mut seen, mut empty_pages) = (Vec::new(), 0);
    loop {
        let page = store.page(options.clone()).await.unwrap();
        if page.items.is_empty() && page.cursor.is_some() {
            empty_pages += 1;
        }
        seen.extend(page.items.into_iter().map(|i| i.n));
        match page.cursor {
            Some(c) => options = options.after(c),
            None => break,
        }
    }
    assert!(empty_pages > 0, "the quirk produced empty pages");
    assert_eq!(seen, (0..250).collect::<Vec<_>>());
}
