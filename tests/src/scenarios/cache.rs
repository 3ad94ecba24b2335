//! The read cache: what it serves, what each write leaves in it, and the
//! coherence rules under forced interleavings.

use std::time::Duration;

use unified_tables::backend::faulty::{FaultTarget, FaultTiming, FaultyBackend};
use unified_tables::backend::Backend;
use unified_tables::{
    BlobContent, CachePolicy, Concurrency, Error, QueryOptions, ReadCache, RetryPolicy, Store, Tables,
};

use crate::gate::{GateBackend, Point};
use crate::model::{Customer, Document, Note};
use crate::Env;

fn cache() -> ReadCache {
    ReadCache::default()
}

fn requests(env: &Env) -> u64 {
    env.counts().entity_requests()
}

/// The requests `f` makes.
async fn cost<F: std::future::Future>(env: &Env, f: F) -> (F::Output, u64) {
    env.reset_counts();
    let out = f.await;
    (out, requests(env))
}

/// A caching store of `Customer` over `backend` (which wraps the env's counted backend).
fn caching_over(env: &Env, backend: impl Backend, cache: ReadCache) -> Store<Customer> {
    // No retry: a failure planned for a write is the write's answer.
    Tables::with_backend(backend)
        .with_retry(RetryPolicy::no_retries())
        .with_cache(cache)
        .store_in::<Customer>(&env.table)
}

pub async fn cached_reads_make_no_requests_and_each_write_leaves_what_it_says(env: &Env) {
    let store = env.cached(cache()).store_in::<Customer>(&env.table);
    let mut a = Customer::new("p", "a", "v1");
    store.create(&mut a).await.unwrap();

    let (got, n) = cost(env, store.get(("p", "a"))).await;
    assert_eq!(n, 0, "a create caches the entity it wrote");
    let got = got.unwrap().unwrap();
    assert_eq!(got.etag, a.etag, "with the version the service returned");
    assert!(got.timestamp.is_some() && got.created_at.is_some());
    let (exists, n) = cost(env, store.exists(("p", "a"))).await;
    assert!(exists.unwrap());
    assert_eq!(n, 0, "exists answers from the cache");

    let mut got = got;
    got.name = "v2".into();
    store.update(&mut got).await.unwrap();
    let (again, n) = cost(env, store.get(("p", "a"))).await;
    assert_eq!(
        (n, again.unwrap().unwrap().name.as_str()),
        (0, "v2"),
        "an update caches"
    );

    let mut blind = Customer::new("p", "a", "v3");
    store.upsert(&mut blind).await.unwrap();
    let (again, n) = cost(env, store.get(("p", "a"))).await;
    assert_eq!(
        (n, again.unwrap().unwrap().name.as_str()),
        (0, "v3"),
        "an upsert caches"
    );

    store.mutate(("p", "a"), |c| c.visits += 1).await.unwrap();
    let (again, n) = cost(env, store.get(("p", "a"))).await;
    assert_eq!(
        (n, again.unwrap().unwrap().visits),
        (0, 1),
        "mutate caches what it wrote"
    );

    store
        .patch(("p", "a"), Customer::update().name("v4".to_owned()))
        .await
        .unwrap();
    let (again, n) = cost(env, store.get(("p", "a"))).await;
    assert_eq!(n, 1, "a patch drops the entity: the next get reads the table");
    let again = again.unwrap().unwrap();
    assert_eq!((again.name.as_str(), again.visits), ("v4", 1));
    let (_, n) = cost(env, store.get(("p", "a"))).await;
    assert_eq!(n, 0, "and caches what it read");

    store.create_batch(&[Customer::new("p", "b", "b")]).await.unwrap();
    let (_, n) = cost(env, store.get(("p", "b"))).await;
    assert_eq!(n, 1, "batches cache nothing");

    assert!(store.delete(("p", "a")).await.unwrap());
    let (gone, n) = cost(env, store.get(("p", "a"))).await;
    assert!(gone.unwrap().is_none());
    assert_eq!(n, 1, "a delete drops the entity; absence is not cached");
    let (gone, n) = cost(env, store.exists(("p", "a"))).await;
    assert_eq!((gone.unwrap(), n), (false, 1));
}

pub async fn whole_partition_lists_are_cached_and_every_write_in_the_partition_drops_them(env: &Env) {
    let store = env.cached(cache()).store_in::<Customer>(&env.table);
    for rk in ["a", "b"] {
        store.create(&mut Customer::new("p", rk, rk)).await.unwrap();
    }
    store.create(&mut Customer::new("q", "z", "z")).await.unwrap();
    let (list, n) = cost(env, store.query(QueryOptions::partition("p"))).await;
    assert_eq!((list.unwrap().len(), n), (2, 1));
    let (list, n) = cost(env, store.query(QueryOptions::partition("p"))).await;
    assert_eq!(
        (list.unwrap().len(), n),
        (2, 0),
        "the second read is served from the cache"
    );

    for bounded in [
        QueryOptions::partition("p").take(5),
        QueryOptions::partition("p").row_key_prefix("a"),
        QueryOptions::partition("p").select_raw(&["name"]),
    ] {
        let (_, n) = cost(env, store.query(bounded)).await;
        assert_eq!(n, 1, "bounded queries always read the table");
    }
    let (_, n) = cost(env, store.count(QueryOptions::partition("p"))).await;
    assert_eq!(n, 1, "counts always read the table");

    store.create(&mut Customer::new("q", "y", "y")).await.unwrap();
    let (_, n) = cost(env, store.query(QueryOptions::partition("p"))).await;
    assert_eq!(n, 0, "a write in another partition leaves the list");
    store.create(&mut Customer::new("p", "c", "c")).await.unwrap();
    let (list, n) = cost(env, store.query(QueryOptions::partition("p"))).await;
    assert_eq!(
        (list.unwrap().len(), n),
        (3, 1),
        "a write in the partition drops its list"
    );
    store.delete(("p", "a")).await.unwrap();
    let (list, n) = cost(env, store.query(QueryOptions::partition("p"))).await;
    assert_eq!((list.unwrap().len(), n), (2, 1), "so does a delete");
}

pub async fn a_read_in_flight_while_a_write_completes_keeps_nothing(env: &Env) {
    let gate = GateBackend::new(env.backend().clone());
    let store = caching_over(env, gate.clone(), cache());
    // Written past the cache: the caching store holds nothing of it yet.
    let plain = env.tables.store_in::<Customer>(&env.table);
    plain.create(&mut Customer::new("p", "a", "old")).await.unwrap();

    let hold = gate.arm(Point::AfterGet);
    let reader = {
        let store = store.clone();
        tokio::spawn(async move { store.get(("p", "a")).await })
    };
    hold.reached.await.expect("the read fetched the old version");
    // While the read holds the old version, a write of the entity completes.
    let mut new = Customer::new("p", "a", "new");
    store.upsert(&mut new).await.unwrap();
    let _ = hold.release.send(());
    let fetched = reader.await.unwrap().unwrap().unwrap();
    assert_eq!(fetched.name, "old", "the read returns what it fetched");

    let (got, _) = cost(env, store.get(("p", "a"))).await;
    assert_eq!(
        got.unwrap().unwrap().name,
        "new",
        "the read did not leave its version in the cache"
    );
}

pub async fn overlapping_writes_leave_nothing_cached(env: &Env) {
    let gate = GateBackend::new(env.backend().clone());
    let store = caching_over(env, gate.clone(), cache());
    store.create(&mut Customer::new("p", "a", "v0")).await.unwrap();

    // The first write has taken effect but not returned when the second runs whole.
    let hold = gate.arm(Point::AfterWrite);
    let first = {
        let store = store.clone();
        tokio::spawn(async move { store.upsert(&mut Customer::new("p", "a", "first")).await })
    };
    hold.reached.await.expect("the first write is in flight");
    store.upsert(&mut Customer::new("p", "a", "second")).await.unwrap();
    let _ = hold.release.send(());
    first.await.unwrap().unwrap();

    let (got, n) = cost(env, store.get(("p", "a"))).await;
    assert_eq!(
        n, 1,
        "neither overlapping write stayed cached: the next get reads the table"
    );
    assert_eq!(got.unwrap().unwrap().name, "second", "the table holds the later write");

    // A write and a delete overlapping: nothing stays cached either.
    let hold = gate.arm(Point::AfterWrite);
    let writer = {
        let store = store.clone();
        tokio::spawn(async move { store.upsert(&mut Customer::new("p", "a", "third")).await })
    };
    hold.reached.await.expect("the write is in flight");
    store.delete(("p", "a")).await.unwrap();
    let _ = hold.release.send(());
    writer.await.unwrap().unwrap();
    let (got, n) = cost(env, store.get(("p", "a"))).await;
    assert_eq!((got.unwrap().map(|c| c.name), n), (None, 1));
}

pub async fn a_failed_or_cancelled_write_drops_the_entity_and_a_refused_one_drops_nothing(env: &Env) {
    let faulty = FaultyBackend::new(env.backend().clone());
    let gate = GateBackend::new(faulty.clone());
    let store = caching_over(env, gate.clone(), cache());
    let lost = || Error::transport("response lost");
    store.create(&mut Customer::new("p", "a", "v0")).await.unwrap();
    let (_, n) = cost(env, store.query(QueryOptions::partition("p"))).await;
    assert_eq!(n, 1, "the partition list is cached");

    // An update whose answer was lost and whose read-back failed: it was applied, its
    // outcome is unknown, and nothing stale stays cached.
    let mut c = store.get(("p", "a")).await.unwrap().unwrap();
    c.name = "v1".into();
    faulty.fail_next(FaultTarget::Write, FaultTiming::After, lost);
    faulty.fail_next(FaultTarget::Get, FaultTiming::Before, lost);
    let err = store.update(&mut c).await.unwrap_err();
    assert!(matches!(err, Error::OutcomeUnknown { .. }), "{err}");
    let (got, n) = cost(env, store.get(("p", "a"))).await;
    assert_eq!((got.unwrap().unwrap().name.as_str(), n), ("v1", 1));
    let (_, n) = cost(env, store.query(QueryOptions::partition("p"))).await;
    assert_eq!(n, 1, "the partition's list was dropped too");

    // A duplicate create (409) may be this call's own retried insert: the entity is dropped.
    let err = store.create(&mut Customer::new("p", "a", "dup")).await.unwrap_err();
    assert!(matches!(err, Error::AlreadyExists { .. }), "{err}");
    let (got, n) = cost(env, store.get(("p", "a"))).await;
    assert_eq!((got.unwrap().unwrap().name.as_str(), n), ("v1", 1));

    // A write that fails before it is sent by the service (503) drops it too.
    faulty.fail_next(FaultTarget::Write, FaultTiming::Before, || {
        Error::service(503, "ServerBusy", "The server is busy.")
    });
    assert!(store.upsert(&mut Customer::new("p", "a", "busy")).await.is_err());
    let (_, n) = cost(env, store.get(("p", "a"))).await;
    assert_eq!(n, 1);

    // A write cancelled while in flight drops it.
    let hold = gate.arm(Point::BeforeWrite);
    let writer = {
        let store = store.clone();
        tokio::spawn(async move { store.upsert(&mut Customer::new("p", "a", "cancelled")).await })
    };
    hold.reached.await.expect("the write is in flight");
    writer.abort();
    let _ = writer.await;
    drop(hold.release);
    let (got, n) = cost(env, store.get(("p", "a"))).await;
    assert_eq!((got.unwrap().unwrap().name.as_str(), n), ("v1", 1), "nothing was sent");

    // A call refused before anything is sent leaves the cached entity.
    let mut no_etag = Customer::new("p", "a", "blind");
    let (err, n) = cost(env, store.update_with(&mut no_etag, Concurrency::Strict)).await;
    assert!(matches!(err, Err(Error::MissingETag { .. })));
    assert_eq!(n, 0);
    let (bad, n) = cost(env, store.upsert(&mut Customer::new("p", "bad/key", "x"))).await;
    assert!(matches!(bad, Err(Error::InvalidKey { .. })));
    assert_eq!(n, 0);
    let (_, n) = cost(env, store.get(("p", "a"))).await;
    assert_eq!(n, 0, "the refused calls dropped nothing");
}

pub async fn delete_partition_evicts_every_listed_row_also_when_it_fails(env: &Env) {
    let faulty = FaultyBackend::new(env.backend().clone());
    let store = caching_over(env, faulty.clone(), cache());
    for rk in ["a", "b", "c"] {
        store.create(&mut Customer::new("p", rk, rk)).await.unwrap();
    }
    faulty.fail_next(FaultTarget::Transaction, FaultTiming::Before, || {
        Error::service(503, "ServerBusy", "The server is busy.")
    });
    assert!(store.delete_partition("p").await.is_err());
    for rk in ["a", "b", "c"] {
        let (got, n) = cost(env, store.get(("p", rk))).await;
        assert!(got.unwrap().is_some(), "{rk} was not deleted");
        assert_eq!(n, 1, "{rk} was listed, so it left the cache");
    }
    assert_eq!(store.delete_partition("p").await.unwrap(), 3);
    for rk in ["a", "b", "c"] {
        assert!(store.get(("p", rk)).await.unwrap().is_none());
    }
}

pub async fn composite_ids_share_one_entry_and_stores_of_a_table_share_entries(env: &Env) {
    let tables = env.cached(cache());
    let notes = tables.store_in::<Note>(&env.table);
    let mut note = Note {
        id: "Room 7|Hello".into(),
        body: "hi".into(),
        created_at: None,
        updated_at: None,
        etag: None,
    };
    notes.create(&mut note).await.unwrap();
    let (got, n) = cost(env, notes.get("room-7|hello")).await;
    assert_eq!((got.unwrap().unwrap().body.as_str(), n), ("hi", 0));
    let (_, n) = cost(env, notes.get(("room-7", "hello"))).await;
    assert_eq!(n, 0, "the id and the keys address one entry");
    let (_, n) = cost(env, notes.get("  ROOM 7|hello ")).await;
    assert_eq!(n, 0, "so does an id normalized to them");

    let other = tables.store_in::<Note>(&env.table);
    let (_, n) = cost(env, other.get("room-7|hello")).await;
    assert_eq!(n, 0, "another store of the same table shares the entry");
    other
        .upsert(&mut Note {
            body: "changed".into(),
            ..note.clone()
        })
        .await
        .unwrap();
    let (got, _) = cost(env, notes.get("room-7|hello")).await;
    assert_eq!(got.unwrap().unwrap().body, "changed", "and sees its writes");

    let elsewhere = tables.store_in::<Note>(env.another_table());
    let (got, n) = cost(env, elsewhere.get("room-7|hello")).await;
    assert!(
        got.unwrap().is_none(),
        "another table never answers with this one's entry"
    );
    assert_eq!(n, 1);

    // Another handle over the same cache and account shares entries too.
    let twin = env.tables.clone().with_cache(tables.cache().unwrap().clone());
    let (_, n) = cost(env, twin.store_in::<Note>(&env.table).get("room-7|hello")).await;
    assert_eq!(n, 0);
}

pub async fn a_disabled_type_is_never_served_but_its_writes_evict(env: &Env) {
    let tables = env.cached(
        ReadCache::builder()
            .policy_for::<Note>(CachePolicy::Disabled)
            .build()
            .unwrap(),
    );
    let notes = tables.store_in::<Note>(&env.table);
    let customers = tables.store_in::<Customer>(&env.table);
    // Note and Customer share the table; a Note row at the customer's keys replaces it.
    customers
        .create(&mut Customer::new("p", "a", "customer"))
        .await
        .unwrap();
    let (_, n) = cost(env, customers.get(("p", "a"))).await;
    assert_eq!(n, 0);
    let mut note = Note {
        id: "p|a".into(),
        body: "note".into(),
        created_at: None,
        updated_at: None,
        etag: None,
    };
    notes.upsert(&mut note).await.unwrap();
    for _ in 0..2 {
        let (_, n) = cost(env, notes.get("p|a")).await;
        assert_eq!(n, 1, "a disabled type always reads the table");
    }
    let (got, n) = cost(env, customers.get(("p", "a"))).await;
    assert_eq!(n, 1, "the disabled type's write evicted the customer");
    assert_eq!(got.unwrap().unwrap().name, "", "the row is the note's now");
}

pub async fn absolute_entries_expire_and_sliding_entries_live_while_read(env: &Env) {
    let ttl = Duration::from_millis(1500);
    let absolute = env
        .cached(ReadCache::builder().policy(CachePolicy::Absolute(ttl)).build().unwrap())
        .store_in::<Customer>(&env.table);
    absolute.create(&mut Customer::new("p", "a", "a")).await.unwrap();
    let (_, n) = cost(env, absolute.get(("p", "a"))).await;
    assert_eq!(n, 0);
    tokio::time::sleep(ttl + Duration::from_millis(300)).await;
    let (_, n) = cost(env, absolute.get(("p", "a"))).await;
    assert_eq!(n, 1, "an absolute entry is gone after its ttl");

    let sliding = env
        .cached(ReadCache::builder().policy(CachePolicy::Sliding(ttl)).build().unwrap())
        .store_in::<Customer>(&env.table);
    sliding.create(&mut Customer::new("p", "b", "b")).await.unwrap();
    for _ in 0..4 {
        tokio::time::sleep(ttl / 3).await;
        let (_, n) = cost(env, sliding.get(("p", "b"))).await;
        assert_eq!(n, 0, "a sliding entry lives while it is read within its ttl");
    }
    tokio::time::sleep(ttl + Duration::from_millis(300)).await;
    let (_, n) = cost(env, sliding.get(("p", "b"))).await;
    assert_eq!(n, 1, "and goes once it is not");
}

pub async fn large_values_are_cached_assembled_and_a_gone_file_drops_the_entry(env: &Env) {
    let tables = env.cached(cache());
    let docs = tables.store_in::<Document>(&env.table);
    let mut d = Document::new("p", "d");
    d.body = crate::noise(200_000, 7); // split cells
    d.attachment = Some(BlobContent::from_bytes(b"file bytes".to_vec(), "text/plain"));
    docs.create(&mut d).await.unwrap();

    let (got, n) = cost(env, docs.get(("p", "d"))).await;
    let got = got.unwrap().unwrap();
    assert_eq!(n, 0, "the entity is cached whole");
    assert_eq!(env.counts().blob_requests(), 0);
    assert_eq!(got.body, d.body);
    let file = got.attachment.clone().unwrap();
    assert_eq!(file.read_all().await.unwrap(), b"file bytes");

    // The file's blob disappears behind the store's back (another writer released it).
    let raw = env.backend().get(&env.table, "p", "d").await.unwrap().unwrap();
    let container = crate::blob_options().container().to_owned();
    for path in unified_tables::layout::blob_paths(&raw) {
        env.blobs
            .as_ref()
            .unwrap()
            .delete(&container, &path, Default::default())
            .await
            .unwrap();
    }
    let err = file.read_all().await.unwrap_err();
    assert!(matches!(err, Error::Integrity { .. }), "{err}");
    let (_, n) = cost(env, docs.get(("p", "d"))).await;
    assert!(n >= 1, "the integrity failure dropped the cached entity");
}

pub async fn a_type_that_is_not_clone_is_never_cached(env: &Env) {
    #[derive(unified_tables::TableEntity, Debug)]
    struct Plain {
        #[table(partition_key)]
        pk: String,
        #[table(row_key)]
        rk: String,
        n: i64,
    }
    let store = env.cached(cache()).store_in::<Plain>(&env.table);
    let mut p = Plain {
        pk: "p".into(),
        rk: "a".into(),
        n: 1,
    };
    store.upsert(&mut p).await.unwrap();
    for _ in 0..2 {
        let (got, n) = cost(env, store.get(("p", "a"))).await;
        assert_eq!((got.unwrap().unwrap().n, n), (1, 1));
    }
}

/// Handles start without a read cache: of two handles over one table, one
/// writes and the other reads the new version at once, every read a request
/// to the table; a handle caches only when given a `ReadCache`.
pub async fn a_handle_reads_every_write_at_once_unless_given_a_cache(env: &Env) {
    assert!(Tables::memory().cache().is_none(), "no cache unless asked for");
    let writer_db = Tables::with_backend(env.backend().clone());
    let reader_db = Tables::with_backend(env.backend().clone());
    assert!(writer_db.cache().is_none() && reader_db.cache().is_none());
    let writer = writer_db.store_in::<Customer>(&env.table);
    let reader = reader_db.store_in::<Customer>(&env.table);
    let mut c = Customer::new("p", "a", "v1");
    writer.create(&mut c).await.unwrap();

    for _ in 0..2 {
        let (got, n) = cost(env, reader.get(("p", "a"))).await;
        assert_eq!(
            (got.unwrap().unwrap().name.as_str(), n),
            ("v1", 1),
            "every read asks the table"
        );
    }
    let (listed, n) = cost(env, reader.query(QueryOptions::partition("p"))).await;
    assert_eq!((listed.unwrap().len(), n), (1, 1));

    c.name = "v2".into();
    writer.update(&mut c).await.unwrap();
    let got = reader.get(("p", "a")).await.unwrap().unwrap();
    assert_eq!(
        (got.name.as_str(), got.etag.as_ref()),
        ("v2", c.etag.as_ref()),
        "the other handle's write, at once"
    );
    let listed = reader.query(QueryOptions::partition("p")).await.unwrap();
    assert_eq!(listed[0].name, "v2", "the partition's list too");
    // A write by the reading handle is seen by the writing one as well.
    let mut mine = got;
    mine.name = "v3".into();
    reader.update(&mut mine).await.unwrap();
    assert_eq!(writer.get(("p", "a")).await.unwrap().unwrap().name, "v3");
    assert!(writer.delete(("p", "a")).await.unwrap());
    assert!(reader.get(("p", "a")).await.unwrap().is_none(), "a delete, at once");
    assert!(!reader.exists(("p", "a")).await.unwrap());

    // Given a cache, a handle serves its reads from memory.
    let cached = env.cached(cache()).store_in::<Customer>(&env.table);
    let mut d = Customer::new("p", "b", "cached");
    cached.create(&mut d).await.unwrap();
    let (got, n) = cost(env, cached.get(("p", "b"))).await;
    assert_eq!((got.unwrap().unwrap().name.as_str(), n), ("cached", 0));
}
