//! Reads that follow page tokens fetch the next page while they decode the
//! current one, and fetch no page their limit makes needless.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::TryStreamExt;
use unified_tables::backend::{Backend, Page, PageAnswer, PageToken, QueryRequest, WriteOp, WriteOutcome};
use unified_tables::{QueryOptions, Result, Row};

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

/// A backend that notes how many rows each query page it answered held, in
/// the order the pages were asked for: where the service cuts its pages at
/// random (Cosmos DB for Table), how a scenario learns which page brought
/// the first row.
#[derive(Debug)]
struct PageLog<B> {
    inner: B,
    sizes: Arc<Mutex<Vec<usize>>>,
}

#[async_trait]
impl<B: Backend> Backend for PageLog<B> {
    async fn create_table(&self, table: &str) -> Result<()> {
        self.inner.create_table(table).await
    }

    async fn delete_table(&self, table: &str) -> Result<()> {
        self.inner.delete_table(table).await
    }

    async fn get(&self, table: &str, partition_key: &str, row_key: &str) -> Result<Option<Row>> {
        self.inner.get(table, partition_key, row_key).await
    }

    async fn execute(&self, table: &str, op: WriteOp) -> Result<WriteOutcome> {
        self.inner.execute(table, op).await
    }

    async fn transaction(&self, table: &str, ops: Vec<WriteOp>) -> Result<Vec<WriteOutcome>> {
        self.inner.transaction(table, ops).await
    }

    async fn query(&self, table: &str, request: &QueryRequest, token: Option<&PageToken>) -> Result<Page> {
        let page = self.inner.query(table, request, token).await?;
        self.sizes.lock().unwrap().push(page.rows.len());
        Ok(page)
    }

    async fn query_body(&self, table: &str, request: &QueryRequest, token: Option<&PageToken>) -> Result<PageAnswer> {
        let page = self.inner.query_body(table, request, token).await?.into_page()?;
        self.sizes.lock().unwrap().push(page.rows.len());
        Ok(PageAnswer::Rows(page))
    }

    fn profile(&self) -> unified_tables::service::ServiceProfile {
        self.inner.profile()
    }
}

pub async fn a_stream_asks_for_the_next_page_before_it_yields_the_first_entity(env: &Env) {
    if !env.sorts_results() {
        return the_next_page_is_asked_for_before_the_first_entity_in_service_order(env).await;
    }
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
        if env.sorts_results() {
            // A page read ahead would be asked for at once: a short wait shows there is none.
            assert_eq!(
                until_queries(env, pages + 1, Duration::from_millis(300)).await,
                pages,
                "take({take})"
            );
        } else {
            // Cosmos DB for Table: a bounded query reads every match to order
            // it (one query followed to its last page, which has no token),
            // then asks for nothing more.
            assert!(
                items.iter().enumerate().all(|(i, it)| it.n == i as i64),
                "take({take}) in key order"
            );
            let pages_read = env.counter.counts().queries;
            assert_eq!(
                until_queries(env, 2, Duration::from_millis(300)).await,
                1,
                "take({take})"
            );
            assert_eq!(
                env.counter.counts().queries,
                pages_read,
                "take({take}): no page after the last"
            );
        }
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

/// Cosmos DB for Table: the stream yields the service's order, and the
/// service cuts pages at random sizes (empty ones included). The pages
/// asked for before the first entity comes are those up to the first one
/// with a row; read ahead asks for one more while that entity is read.
async fn the_next_page_is_asked_for_before_the_first_entity_in_service_order(env: &Env) {
    seed_items(env, "p", 2_100).await;
    let sizes = Arc::new(Mutex::new(Vec::new()));
    let logged = PageLog {
        inner: env.counter.clone(),
        sizes: sizes.clone(),
    };
    let tables = unified_tables::Tables::with_backend(logged).without_cache();
    let store = tables.store_in::<Item>(&env.table);
    env.reset_counts();
    let mut stream = store.stream(QueryOptions::partition("p"));
    let first = stream.try_next().await.unwrap().expect("a first entity");
    assert!((0..2_100).contains(&first.n));
    let wait = Duration::from_secs(10);
    let mut asked = 0;
    let mut needed = 0;
    for _ in 0..wait.as_millis().div_ceil(10) {
        let log = sizes.lock().unwrap().clone();
        needed = log.iter().position(|n| *n > 0).expect("a page with the first entity") + 1;
        asked = log.len();
        if asked > needed {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        asked,
        needed + 1,
        "the page after the first entity's is on its way while it is read: {:?}",
        sizes.lock().unwrap()
    );
    let rest: Vec<Item> = stream.try_collect().await.unwrap();
    let mut ns: Vec<i64> = std::iter::once(first.n).chain(rest.iter().map(|i| i.n)).collect();
    ns.sort_unstable();
    assert_eq!(ns, (0..2_100).collect::<Vec<i64>>(), "every item once");
    let log = sizes.lock().unwrap().clone();
    assert_eq!(log.iter().sum::<usize>(), 2_100, "each page once: {log:?}");
    assert_eq!(env.counts().queries, 1, "one query started");
    assert_eq!(env.counter.counts().queries, log.len() as u64);
}
