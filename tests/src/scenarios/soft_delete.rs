//! Soft deletion: the stamp, the server-side exclusion in every read and
//! query, the views that include deleted rows, and rows written before the
//! type had a stamp.

use std::sync::{Arc, Barrier};

use futures::TryStreamExt;
use unified_tables::backend::Backend;
use unified_tables::layout::NOT_DELETED;
use unified_tables::query::{CmpOp, Filter};
use unified_tables::{Count, DateTime, ETag, Error, QueryOptions, Row, SoftDelete, TableEntity, Value, Visibility};

use crate::Env;

/// A message that is soft-deleted.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct Post {
    #[table(partition_key)]
    pub room: String,
    #[table(row_key)]
    pub id: String,
    pub text: String,
    pub likes: u32,
    #[table(etag)]
    pub etag: Option<ETag>,
    #[table(updated_at)]
    pub updated_at: Option<DateTime>,
    #[table(soft_delete)]
    pub deleted_at: Option<DateTime>,
}

impl Post {
    pub fn new(room: &str, id: &str, text: &str) -> Post {
        Post {
            room: room.into(),
            id: id.into(),
            text: text.into(),
            likes: 0,
            etag: None,
            updated_at: None,
            deleted_at: None,
        }
    }
}

fn ids(posts: &[Post]) -> Vec<&str> {
    posts.iter().map(|p| p.id.as_str()).collect()
}

async fn raw_row(env: &Env, pk: &str, rk: &str) -> Row {
    env.backend()
        .get(&env.table, pk, rk)
        .await
        .unwrap()
        .expect("the row is stored")
}

pub async fn soft_deleted_rows_are_left_out_of_every_read_and_query(env: &Env) {
    let posts = env.tables.store_in::<Post>(&env.table);
    for id in ["a", "b", "c"] {
        posts.create(&mut Post::new("r", id, id)).await.unwrap();
    }
    // A live row always holds the marker: the column is never left out.
    assert_eq!(
        raw_row(env, "r", "a").await.get("DeletedAt"),
        Some(&Value::DateTime(NOT_DELETED))
    );
    assert_eq!(Post::DELETED_COLUMN, "DeletedAt");

    let before = DateTime::now();
    env.reset_counts();
    assert!(posts.soft_delete(("r", "b")).await.unwrap(), "a live row is deleted");
    assert_eq!(env.counts().entity_requests(), 2, "one read, one conditional write");
    let after = DateTime::now();

    // Point reads.
    assert_eq!(posts.get(("r", "b")).await.unwrap(), None);
    assert!(!posts.exists(("r", "b")).await.unwrap());
    assert!(posts.get(("r", "a")).await.unwrap().is_some());
    // Every listing, server-side.
    let all = QueryOptions::partition("r");
    assert_eq!(ids(&posts.query(all.clone()).await.unwrap()), ["a", "c"]);
    assert_eq!(posts.count(all.clone()).await.unwrap(), 2);
    assert_eq!(posts.count_bounded(all.clone(), 10).await.unwrap(), Count::Exact(2));
    let streamed: Vec<Post> = posts.stream(all.clone()).try_collect().await.unwrap();
    let mut streamed = ids(&streamed);
    if !env.sorts_results() {
        // A stream without a limit yields the service's order (none on
        // Cosmos DB for Table): every live row once.
        streamed.sort_unstable();
    }
    assert_eq!(streamed, ["a", "c"]);
    let page = posts.page(all.clone().take(10)).await.unwrap();
    if env.sorts_results() {
        assert_eq!(ids(&page.items), ["a", "c"]);
    } else {
        // Cosmos DB for Table cuts pages at any size up to the asked one
        // (empty ones too, with a cursor): its pages hold every live row once.
        let mut live: Vec<String> = page.items.iter().map(|p| p.id.clone()).collect();
        let mut cursor = page.cursor;
        while let Some(c) = cursor {
            let next = posts.page(all.clone().take(10).after(c)).await.unwrap();
            assert!(next.items.len() <= 10);
            live.extend(next.items.into_iter().map(|p| p.id));
            cursor = next.cursor;
        }
        live.sort_unstable();
        assert_eq!(live, ["a", "c"]);
    }
    assert!(!posts.any(all.clone().row_key_prefix("b")).await.unwrap());
    let typed = posts
        .query(all.clone().filter(Post::filter(|p| p.text.eq("b") | p.text.eq("c"))))
        .await
        .unwrap();
    assert_eq!(ids(&typed), ["c"], "a user filter is combined with the exclusion");

    // The explicit views.
    let everything = posts.including_deleted();
    assert_eq!(everything.visibility(), Visibility::All);
    assert_eq!(ids(&everything.query(all.clone()).await.unwrap()), ["a", "b", "c"]);
    assert_eq!(everything.count(all.clone()).await.unwrap(), 3);
    let deleted = posts.only_deleted();
    assert_eq!(ids(&deleted.query(all.clone()).await.unwrap()), ["b"]);
    assert_eq!(deleted.count(all.clone()).await.unwrap(), 1);
    assert!(deleted.get(("r", "a")).await.unwrap().is_none());
    assert_eq!(posts.only_live().visibility(), Visibility::Live);

    // The stamp is set with the updated stamp, in the same write.
    let b = everything.get(("r", "b")).await.unwrap().unwrap();
    let stamp = b.deleted_at.expect("stamped");
    assert!(before <= stamp && stamp <= after, "{stamp}");
    let updated = b.updated_at.expect("updated stamp");
    assert!(stamp <= updated && updated <= after, "{stamp} {updated}");
    assert_eq!(
        raw_row(env, "r", "b").await.get("DeletedAt"),
        Some(&Value::DateTime(stamp))
    );

    // Deleting again keeps the first stamp; a missing key is not an error.
    assert!(!posts.soft_delete(("r", "b")).await.unwrap());
    assert_eq!(
        everything.get(("r", "b")).await.unwrap().unwrap().deleted_at,
        Some(stamp)
    );
    assert!(!posts.soft_delete(("r", "missing")).await.unwrap());

    // Outcome verbs of the live view do not see the row either.
    let err = posts.mutate(("r", "b"), |p| p.likes += 1).await.unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    // A key held by a soft-deleted row cannot be created again.
    let err = posts.create(&mut Post::new("r", "b", "again")).await.unwrap_err();
    assert!(matches!(err, Error::AlreadyExists { .. }), "{err}");

    // Restore.
    assert!(!posts.restore(("r", "a")).await.unwrap(), "a live row is not restored");
    assert!(posts.restore(("r", "b")).await.unwrap());
    let back = posts.get(("r", "b")).await.unwrap().expect("visible again");
    assert_eq!(back.deleted_at, None);
    assert!(back.updated_at.unwrap() > updated, "restoring sets the updated stamp");
    assert_eq!(
        raw_row(env, "r", "b").await.get("DeletedAt"),
        Some(&Value::DateTime(NOT_DELETED))
    );
    assert_eq!(posts.count(all.clone()).await.unwrap(), 3);
    assert_eq!(deleted.count(all.clone()).await.unwrap(), 0);

    // `delete` stays a hard delete, of live and soft-deleted rows alike.
    assert!(posts.soft_delete(("r", "c")).await.unwrap());
    assert!(posts.delete(("r", "c")).await.unwrap());
    assert!(env.backend().get(&env.table, "r", "c").await.unwrap().is_none());
    assert_eq!(everything.count(all.clone()).await.unwrap(), 2);

    // Whole-entity writes store the stamp as the entity holds it.
    assert!(posts.soft_delete(("r", "a")).await.unwrap());
    let mut kept = everything.get(("r", "a")).await.unwrap().unwrap();
    kept.likes = 9;
    everything.update(&mut kept).await.unwrap();
    assert!(
        posts.get(("r", "a")).await.unwrap().is_none(),
        "saved as read: still deleted"
    );
    posts.upsert(&mut Post::new("r", "a", "fresh")).await.unwrap();
    assert_eq!(
        posts.get(("r", "a")).await.unwrap().unwrap().text,
        "fresh",
        "an upsert of a live entity"
    );

    // A partition delete removes every row, deleted or not.
    assert!(posts.soft_delete(("r", "b")).await.unwrap());
    assert_eq!(posts.delete_partition("r").await.unwrap(), 2);
    assert_eq!(everything.count(all).await.unwrap(), 0);
}

pub async fn page_cursors_are_bound_to_their_view(env: &Env) {
    let posts = env.tables.store_in::<Post>(&env.table);
    for id in ["a", "b", "c", "d"] {
        posts.create(&mut Post::new("r", id, id)).await.unwrap();
    }
    posts.soft_delete(("r", "a")).await.unwrap();
    posts.soft_delete(("r", "c")).await.unwrap();
    let options = QueryOptions::partition("r").take(1);

    // Live rows, one per page.
    let mut seen = Vec::new();
    let mut next = options.clone();
    loop {
        let page = posts.page(next.clone()).await.unwrap();
        seen.extend(page.items.into_iter().map(|p| p.id));
        match page.cursor {
            Some(c) => next = options.clone().after(c),
            None => break,
        }
    }
    if !env.sorts_results() {
        // Cosmos DB for Table: pages in the service's order, of at most one
        // row (or none, with a cursor): every live row once.
        seen.sort();
    }
    assert_eq!(seen, ["b", "d"]);

    let first = posts.including_deleted().page(options.clone()).await.unwrap();
    if env.sorts_results() {
        assert_eq!(ids(&first.items), ["a"]);
    } else {
        assert!(first.items.len() <= 1, "{:?}", ids(&first.items));
    }
    let cursor = first.cursor.expect("more rows");
    let err = posts.page(options.clone().after(cursor.clone())).await.unwrap_err();
    assert!(matches!(err, Error::InvalidCursor(_)), "{err}");
    let second = posts
        .including_deleted()
        .page(options.clone().after(cursor.clone()))
        .await
        .unwrap();
    if env.sorts_results() {
        assert_eq!(ids(&second.items), ["b"]);
    } else {
        // The view of every row resumes from its cursor: its pages from
        // there hold every row the first page did not, once.
        let mut all: Vec<String> = first.items.iter().map(|p| p.id.clone()).collect();
        let mut next = Some(cursor);
        while let Some(c) = next {
            let page = posts.including_deleted().page(options.clone().after(c)).await.unwrap();
            assert!(page.items.len() <= 1);
            all.extend(page.items.into_iter().map(|p| p.id));
            next = page.cursor;
        }
        all.sort();
        assert_eq!(all, ["a", "b", "c", "d"]);
    }
}

pub async fn rows_without_the_stamp_cell_are_hidden_until_marked(env: &Env) {
    let posts = env.tables.store_in::<Post>(&env.table);
    posts
        .create(&mut Post::new("r", "new", "written with the stamp"))
        .await
        .unwrap();
    // A row written before the type had #[table(soft_delete)]: no DeletedAt at all.
    let mut legacy = Row::new("r", "old");
    legacy.insert("Text", Value::String("written before".into()));
    legacy.insert("Likes", Value::Int64(7));
    env.put_raw(legacy).await;
    let all = QueryOptions::partition("r");

    // No comparison matches a missing property on the service, so the live
    // view cannot select the row; point reads agree with queries.
    assert_eq!(ids(&posts.query(all.clone()).await.unwrap()), ["new"]);
    assert_eq!(posts.get(("r", "old")).await.unwrap(), None);
    assert!(!posts.exists(("r", "old")).await.unwrap());
    assert_eq!(posts.only_deleted().count(all.clone()).await.unwrap(), 0);
    // The view of every row shows it, as not deleted.
    let old = posts
        .including_deleted()
        .get(("r", "old"))
        .await
        .unwrap()
        .expect("stored");
    assert_eq!((old.likes, old.deleted_at), (7, None));
    assert_eq!(
        ids(&posts.including_deleted().query(all.clone()).await.unwrap()),
        ["new", "old"]
    );

    // Marking writes the live marker into rows without the cell, and only those.
    let new_etag = raw_row(env, "r", "new").await.etag;
    assert_eq!(posts.mark_rows_without_deletion_stamp(all.clone()).await.unwrap(), 1);
    assert_eq!(
        raw_row(env, "r", "new").await.etag,
        new_etag,
        "a marked row is not written"
    );
    let marked = raw_row(env, "r", "old").await;
    assert_eq!(marked.get("DeletedAt"), Some(&Value::DateTime(NOT_DELETED)));
    assert_eq!(
        marked.get("Likes"),
        Some(&Value::Int64(7)),
        "the Merge keeps the other cells"
    );
    assert_eq!(ids(&posts.query(all.clone()).await.unwrap()), ["new", "old"]);
    assert!(posts.get(("r", "old")).await.unwrap().is_some());
    assert_eq!(posts.mark_rows_without_deletion_stamp(all.clone()).await.unwrap(), 0);

    // A soft delete of an unmarked row works too (the live view cannot see it, the verb can).
    let mut unmarked = Row::new("r", "older");
    unmarked.insert("Text", Value::String("also before".into()));
    env.put_raw(unmarked).await;
    assert!(posts.soft_delete(("r", "older")).await.unwrap());
    assert_eq!(ids(&posts.only_deleted().query(all).await.unwrap()), ["older"]);
}

pub async fn the_exclusion_holds_where_the_service_never_matches_a_missing_property(env: &Env) {
    let posts = env.tables.store_in::<Post>(&env.table);
    posts.create(&mut Post::new("r", "live", "x")).await.unwrap();
    posts.create(&mut Post::new("r", "gone", "x")).await.unwrap();
    posts.soft_delete(("r", "gone")).await.unwrap();
    let mut legacy = Row::new("r", "legacy");
    legacy.insert("Text", Value::String("x".into()));
    env.put_raw(legacy).await;
    let everything = posts.including_deleted();
    let raw = |f: Filter| everything.query(QueryOptions::partition("r").filter(f));

    // The formulation the store sends: present on every row the type writes.
    let live = raw(Filter::eq("DeletedAt", Value::DateTime(NOT_DELETED)))
        .await
        .unwrap();
    assert_eq!(ids(&live), ["live"]);
    let gone = raw(Filter::cmp("DeletedAt", CmpOp::Gt, Value::DateTime(NOT_DELETED)))
        .await
        .unwrap();
    assert_eq!(ids(&gone), ["gone"]);

    // Why a sentinel: on the service (and in memory) `ne` never matches the
    // row without the property, so "no stamp" cannot be selected. Azurite is
    // laxer for some types (Azurite#1929), so only the service's answer is exact.
    let not_gone = raw(Filter::cmp(
        "DeletedAt",
        CmpOp::Ne,
        Value::DateTime(gone[0].deleted_at.unwrap()),
    ))
    .await
    .unwrap();
    if env.is_emulator() {
        assert!(ids(&not_gone).contains(&"live"), "{:?}", ids(&not_gone));
    } else {
        assert_eq!(
            ids(&not_gone),
            ["live"],
            "a missing property never matches, not even ne"
        );
    }
}

pub async fn a_write_that_read_before_a_soft_delete_does_not_bring_the_row_back(env: &Env) {
    let posts = env.tables.store_in::<Post>(&env.table);
    posts.create(&mut Post::new("r", "p", "x")).await.unwrap();
    let barrier = Arc::new(Barrier::new(2));
    let writer = {
        let (posts, barrier) = (posts.clone(), barrier.clone());
        tokio::spawn(async move {
            let mut calls = 0;
            let result = posts
                .mutate(("r", "p"), |p| {
                    calls += 1;
                    if calls == 1 {
                        // Read the live version; wait while the soft delete lands.
                        tokio::task::block_in_place(|| {
                            barrier.wait();
                            barrier.wait();
                        });
                    }
                    p.likes += 1;
                })
                .await;
            (result, calls)
        })
    };
    tokio::task::block_in_place(|| barrier.wait());
    assert!(posts.soft_delete(("r", "p")).await.unwrap());
    tokio::task::block_in_place(|| barrier.wait());
    let (result, calls) = writer.await.unwrap();
    let err = result.unwrap_err();
    assert!(
        matches!(err, Error::NotFound { .. }),
        "the re-read finds the row deleted: {err}"
    );
    assert_eq!(calls, 1, "the intent never ran on the deleted version");
    let stored = posts.including_deleted().get(("r", "p")).await.unwrap().unwrap();
    assert!(stored.deleted_at.is_some(), "the stale body was not written back");
    assert_eq!(stored.likes, 0);
}

pub async fn the_exclusion_counts_against_the_filter_budget(env: &Env) {
    let posts = env.tables.store_in::<Post>(&env.table);
    posts.create(&mut Post::new("r", "a", "a")).await.unwrap();
    // 14 comparisons of the user's, plus the partition: 15, the service's limit.
    let filter = (0..14)
        .map(|i| Filter::cmp("Likes", CmpOp::Ne, Value::Int64(100 + i)))
        .reduce(Filter::and)
        .unwrap();
    let options = QueryOptions::partition("r").filter(filter);
    assert_eq!(posts.including_deleted().count(options.clone()).await.unwrap(), 1);
    env.reset_counts();
    let err = posts.count(options).await.unwrap_err();
    assert!(matches!(err, Error::LimitExceeded { .. }), "{err}");
    assert!(err.to_string().contains("soft-deleted"), "{err}");
    assert_eq!(env.counts().entity_requests(), 0, "refused before sending");
}

/// A key held by a soft-deleted row is taken: `get_or_create` and
/// `mutate_or_create` fail with `AlreadyExists` (as `create` does) naming
/// the row, neither returning the deleted row nor bringing it back, and
/// leave it exactly as it was; after `restore` they read and change it.
pub async fn get_or_create_of_a_soft_deleted_key_is_already_exists_and_changes_nothing(env: &Env) {
    let posts = env.tables.store_in::<Post>(&env.table);
    let mut post = Post::new("r", "a", "original");
    posts.create(&mut post).await.unwrap();
    assert!(posts.soft_delete(("r", "a")).await.unwrap());
    let deleted = posts.including_deleted().get(("r", "a")).await.unwrap().unwrap();
    assert!(deleted.deleted_at.is_some());

    let taken = |err: &Error| matches!(err, Error::AlreadyExists { partition_key, row_key, .. } if partition_key == "r" && row_key == "a");
    let err = posts
        .get_or_create(("r", "a"), || Post::new("r", "a", "fresh"))
        .await
        .unwrap_err();
    assert!(taken(&err), "get_or_create: {err:?}");
    let mut created = 0;
    let err = posts
        .mutate_or_create(
            ("r", "a"),
            || {
                created += 1;
                Post::new("r", "a", "fresh")
            },
            |p| p.likes += 1,
        )
        .await
        .unwrap_err();
    assert!(taken(&err), "mutate_or_create: {err:?}");
    assert_eq!(created, 1, "one insert tried, never retried against the deleted row");
    let after = posts.including_deleted().get(("r", "a")).await.unwrap().unwrap();
    assert_eq!(
        after, deleted,
        "the deleted row is untouched: same text, likes, stamp and ETag"
    );
    assert!(posts.get(("r", "a")).await.unwrap().is_none(), "and still deleted");

    // The remedy: restore the row, then the verbs read and change it.
    assert!(posts.restore(("r", "a")).await.unwrap());
    let got = posts
        .get_or_create(("r", "a"), || Post::new("r", "a", "fresh"))
        .await
        .unwrap();
    assert_eq!((got.text.as_str(), got.deleted_at), ("original", None));
    let liked = posts
        .mutate_or_create(("r", "a"), || Post::new("r", "a", "fresh"), |p| p.likes += 1)
        .await
        .unwrap();
    assert_eq!((liked.text.as_str(), liked.likes), ("original", 1));
    // A key no row holds is created as before.
    let fresh = posts
        .get_or_create(("r", "b"), || Post::new("r", "b", "fresh"))
        .await
        .unwrap();
    assert_eq!(fresh.text, "fresh");
}
