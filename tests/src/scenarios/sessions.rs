//! The tower-sessions store (`unified_tables::web::sessions`): records round
//! trip, creates never overwrite (also when two race on one id), expiry is
//! enforced on read and by a sweep that spares refreshed records, deletes
//! hold against later saves, the read cache is bypassed, data of any size is
//! stored or refused by name, and hostile ids never reach the table.

use std::collections::HashMap;

use serde_json::{json, Value as Json};
use time::{Duration, OffsetDateTime};
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{Error as StoreError, ExpiredDeletion, SessionStore};
use unified_tables::backend::faulty::{FaultTarget, FaultTiming, FaultyBackend};
use unified_tables::backend::{Backend, QueryRequest};
use unified_tables::layout::{
    blob_cell, json_cell, SESSION_DATA_COLUMN, SESSION_EXPIRY_COLUMN, SESSION_ROW_KEY, SPLIT_PARTS,
};
use unified_tables::web::sessions::{ExpiredSweep, TableSessionStore};
use unified_tables::{ReadCache, Row, Tables, Value};

use crate::gate::{GateBackend, Point};
use crate::Env;

/// `tables` with the blob account of `env` (as `env.tables` has it).
fn with_env_blobs(env: &Env, tables: Tables) -> Tables {
    tables.with_blobs(env.blobs.clone().expect("a blob backend"), crate::blob_options())
}

fn sessions(env: &Env) -> TableSessionStore {
    TableSessionStore::new(&env.tables, &env.table).expect("a valid table name")
}

/// Now plus `minutes`, at a whole second (so the stored expiry is exact).
fn in_minutes(minutes: i64) -> OffsetDateTime {
    OffsetDateTime::now_utc().replace_nanosecond(0).expect("0 ns") + Duration::minutes(minutes)
}

fn record(data: Json, expiry_date: OffsetDateTime) -> Record {
    let Json::Object(map) = data else {
        panic!("session data is an object")
    };
    Record {
        id: Id::default(),
        data: map.into_iter().collect(),
        expiry_date,
    }
}

async fn raw_row(env: &Env, id: &Id) -> Option<Row> {
    env.backend()
        .get(&env.table, &id.to_string(), SESSION_ROW_KEY)
        .await
        .expect("a raw read")
}

/// Every row of the table, read past the store.
async fn raw_rows(env: &Env) -> Vec<Row> {
    let request = QueryRequest {
        filter: None,
        select: None,
        top: None,
    };
    let mut rows = Vec::new();
    let mut token = None;
    loop {
        let page = env
            .backend()
            .query(&env.table, &request, token.as_ref())
            .await
            .expect("a raw query");
        rows.extend(page.rows);
        match page.next {
            Some(next) => token = Some(next),
            None => return rows,
        }
    }
}

/// Asserts that an error message says each of `parts`.
fn assert_says(message: &str, parts: &[&str]) {
    for part in parts {
        assert!(message.contains(part), "the message should say `{part}`: {message}");
    }
}

fn sweep_counts(sweep: ExpiredSweep) -> (usize, usize) {
    (sweep.deleted, sweep.spared)
}

pub async fn a_session_record_round_trips_and_save_replaces_it(env: &Env) {
    let store = sessions(env);
    let data = json!({
        "user": "alice",
        "cart": [1, 2, {"sku": "ä-42", "qty": 3}],
        "nested": {"City": "Lviv", "city": "lower-case twin", "deep": {"x": null, "big": 9007199254740993u64}},
        "unicode": "emoji 🎉 and \"quotes\" and 'apostrophes' / # ?",
        "f": 1.5,
    });
    let mut rec = record(data, in_minutes(30));
    store.create(&mut rec).await.unwrap();
    let loaded = store.load(&rec.id).await.unwrap().expect("a live session loads");
    assert_eq!(loaded, rec, "the record comes back as created");

    let row = raw_row(env, &rec.id).await.expect("one row per session");
    assert_eq!(
        row.partition_key,
        rec.id.to_string(),
        "keyed by the id as tower-sessions prints it"
    );
    assert!(
        matches!(row.get(SESSION_EXPIRY_COLUMN), Some(Value::DateTime(_))),
        "{row:?}"
    );

    // Save replaces data and expiry.
    let mut changed = loaded.clone();
    changed.data.insert("user".into(), json!("bob"));
    changed.data.remove("cart");
    changed.expiry_date = in_minutes(90);
    store.save(&changed).await.unwrap();
    assert_eq!(store.load(&rec.id).await.unwrap(), Some(changed));

    // The requests each operation takes (the README's table).
    let mut other = record(json!({"n": 1}), in_minutes(30));
    env.reset_counts();
    store.create(&mut other).await.unwrap();
    assert_eq!(env.counts().entity_requests(), 1, "create: one insert");
    env.reset_counts();
    store.load(&other.id).await.unwrap().unwrap();
    assert_eq!(env.counts().entity_requests(), 1, "load: one point read");
    env.reset_counts();
    store.save(&other).await.unwrap();
    assert_eq!(
        env.counts().entity_requests(),
        2,
        "save: a read of the main row and the replace"
    );
    env.reset_counts();
    store.delete(&other.id).await.unwrap();
    assert_eq!(
        env.counts().entity_requests(),
        2,
        "delete: a read of the main row and the delete"
    );

    // The expiry is kept at the service's precision, 100 ns (truncated).
    let mut fine = record(json!({}), in_minutes(30) + Duration::nanoseconds(123_456_789));
    store.create(&mut fine).await.unwrap();
    let loaded = store.load(&fine.id).await.unwrap().unwrap();
    assert_eq!(
        loaded.expiry_date,
        fine.expiry_date - Duration::nanoseconds(89),
        "the expiry keeps 100 ns"
    );
    // An expiry past what the service stores is kept as its last instant.
    let far = OffsetDateTime::new_utc(
        time::Date::from_calendar_date(9999, time::Month::December, 31).unwrap(),
        time::Time::from_hms_nano(23, 59, 59, 999_999_999).unwrap(),
    );
    let mut forever = record(json!({"k": 1}), far);
    store.create(&mut forever).await.unwrap();
    let loaded = store.load(&forever.id).await.unwrap().expect("a far expiry is live");
    assert_eq!(loaded.expiry_date, far - Duration::nanoseconds(99));
}

pub async fn session_create_never_overwrites_an_existing_id(env: &Env) {
    let store = sessions(env);
    let mut first = record(json!({"owner": "first"}), in_minutes(30));
    store.create(&mut first).await.unwrap();
    let taken = first.id;

    let mut second = record(json!({"owner": "second"}), in_minutes(30));
    second.id = taken;
    store.create(&mut second).await.unwrap();
    assert_ne!(second.id, taken, "a colliding create draws a new id");
    assert_eq!(store.load(&taken).await.unwrap().unwrap().data["owner"], json!("first"));
    assert_eq!(
        store.load(&second.id).await.unwrap().unwrap().data["owner"],
        json!("second")
    );

    // An expired record still holds its id until it is deleted: a create does not take it over.
    let mut old = record(json!({"owner": "old"}), in_minutes(-5));
    store.create(&mut old).await.unwrap();
    let mut newer = record(json!({"owner": "newer"}), in_minutes(30));
    newer.id = old.id;
    store.create(&mut newer).await.unwrap();
    assert_ne!(newer.id, old.id);
    let row = raw_row(env, &old.id).await.expect("the expired row is untouched");
    assert!(row
        .properties
        .iter()
        .any(|(_, v)| matches!(v, Value::String(s) if s.contains("old"))));
    assert_eq!(raw_rows(env).await.len(), 4, "four creates, four rows");
}

pub async fn two_session_creates_racing_on_one_id_both_keep_their_data(env: &Env) {
    let gate = GateBackend::new(env.backend().clone());
    // With the environment's blobs: session data may go to a blob, which a
    // Cosmos DB for Table handle without a blob account refuses.
    let store = TableSessionStore::new(&with_env_blobs(env, Tables::with_backend(gate.clone())), &env.table).unwrap();
    store.load(&Id::default()).await.unwrap(); // the table exists before the race
    let id = Id::default();
    let holds = [gate.arm(Point::BeforeWrite), gate.arm(Point::BeforeWrite)];
    let tasks: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|owner| {
            let store = store.clone();
            let mut rec = record(json!({ "owner": owner }), in_minutes(30));
            rec.id = id;
            tokio::spawn(async move { store.create(&mut rec).await.map(|()| rec) })
        })
        .collect();
    let mut releases = Vec::new();
    for hold in holds {
        hold.reached
            .await
            .expect("both inserts are at the point of sending, with the same id");
        releases.push(hold.release);
    }
    drop(releases);
    let mut created = Vec::new();
    for task in tasks {
        created.push(task.await.unwrap().expect("both creates succeed"));
    }
    let kept: Vec<_> = created.iter().filter(|r| r.id == id).collect();
    assert_eq!(kept.len(), 1, "exactly one keeps the id; the other drew a new one");
    for rec in &created {
        let loaded = store.load(&rec.id).await.unwrap().expect("both sessions are stored");
        assert_eq!(
            loaded.data, rec.data,
            "each session holds its own data: none was overwritten"
        );
    }
    assert_eq!(raw_rows(env).await.len(), 2);
}

pub async fn an_expired_session_reads_as_absent(env: &Env) {
    let store = sessions(env);
    let mut gone = record(json!({"user": "alice"}), in_minutes(-1));
    store.create(&mut gone).await.unwrap();
    assert_eq!(store.load(&gone.id).await.unwrap(), None, "past its expiry: absent");
    assert!(raw_row(env, &gone.id).await.is_some(), "still stored until the sweep");

    let mut live = record(json!({"user": "bob"}), in_minutes(1));
    store.create(&mut live).await.unwrap();
    assert!(store.load(&live.id).await.unwrap().is_some());
    // Saved with an expiry that has passed (tower-sessions does this on a zero max age): absent at once.
    live.expiry_date = OffsetDateTime::now_utc() - Duration::milliseconds(1);
    store.save(&live).await.unwrap();
    assert_eq!(store.load(&live.id).await.unwrap(), None);

    // Expiring while it is stored: live now, absent once its moment passes.
    let mut soon = record(json!({}), OffsetDateTime::now_utc() + Duration::milliseconds(1500));
    store.create(&mut soon).await.unwrap();
    assert!(store.load(&soon.id).await.unwrap().is_some());
    tokio::time::sleep(std::time::Duration::from_millis(1600)).await;
    assert_eq!(store.load(&soon.id).await.unwrap(), None);
}

pub async fn the_session_sweep_deletes_expired_records_and_nothing_else(env: &Env) {
    let store = sessions(env);
    let mut expired = Vec::new();
    for i in 0..5 {
        let mut rec = record(json!({ "i": i }), in_minutes(-1 - i));
        store.create(&mut rec).await.unwrap();
        expired.push(rec);
    }
    // One expired record with data that spans continuation rows: deleted whole.
    let mut big = record(json!({ "blob": noise(2_000_000) }), in_minutes(-1));
    store.create(&mut big).await.unwrap();
    expired.push(big);
    let mut live = Vec::new();
    for i in 0..3 {
        let mut rec = record(json!({ "i": i }), in_minutes(10 + i));
        store.create(&mut rec).await.unwrap();
        live.push(rec);
    }
    // A row of another kind in the same table, without an expiry: never the sweep's.
    let mut foreign = Row::new("foreign", "row");
    foreign.insert("Note", Value::String("not a session".into()));
    env.put_raw(foreign).await;

    env.reset_counts();
    let swept = store.sweep_expired().await.unwrap();
    assert_eq!(sweep_counts(swept), (6, 0));
    assert_eq!(
        env.counts().entity_requests(),
        1 + 2 * 6,
        "one query, then a read and a delete per expired record"
    );
    for rec in &expired {
        assert!(raw_row(env, &rec.id).await.is_none(), "an expired record is deleted");
    }
    for rec in &live {
        assert_eq!(
            store.load(&rec.id).await.unwrap().as_ref(),
            Some(rec),
            "a live record is kept"
        );
    }
    let left = raw_rows(env).await;
    assert_eq!(
        left.len(),
        4,
        "the live records and the foreign row, no continuation rows: {left:?}"
    );

    // Through the trait, as continuously_delete_expired runs it: nothing left to delete.
    store.delete_expired().await.unwrap();
    assert_eq!(sweep_counts(store.sweep_expired().await.unwrap()), (0, 0));

    // The host's periodic task sweeps on its own.
    let mut later = record(json!({}), in_minutes(-1));
    store.create(&mut later).await.unwrap();
    let task = tokio::spawn(
        store
            .clone()
            .continuously_delete_expired(std::time::Duration::from_millis(200)),
    );
    let mut waited = 0;
    while raw_row(env, &later.id).await.is_some() {
        assert!(waited < 100, "the periodic sweep deleted the expired record");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        waited += 1;
    }
    task.abort();
}

/// Runs a sweep of `sweeper` held at `point` (the next request to reach it),
/// runs `meanwhile` while it is held, then lets it finish and returns what it did.
async fn sweep_held_at<B: Backend>(
    gate: &GateBackend<B>,
    sweeper: &TableSessionStore,
    point: Point,
    meanwhile: impl std::future::Future<Output = ()>,
) -> ExpiredSweep {
    let hold = gate.arm(point);
    let sweep = {
        let sweeper = sweeper.clone();
        tokio::spawn(async move { sweeper.sweep_expired().await })
    };
    hold.reached.await.expect("the sweep reached the point");
    meanwhile.await;
    drop(hold.release);
    sweep.await.unwrap().unwrap()
}

pub async fn the_session_sweep_spares_a_record_refreshed_while_it_runs(env: &Env) {
    let store = sessions(env);
    let gate = GateBackend::new(env.backend().clone());
    // With the scenario's blob account: Cosmos DB for Table refuses a session store without one.
    let blobs = env.blobs.clone().expect("a blob account");
    let gated = Tables::with_backend(gate.clone()).with_blobs(blobs, crate::blob_options());
    let sweeper = TableSessionStore::new(&gated, &env.table).unwrap();
    // Refreshed after the sweep's query listed it, before its delete read the row;
    // and at the last moment, after the delete checked the row, before it was sent.
    let points = [
        (Point::AfterRows, "spared, not deleted"),
        (
            Point::BeforeWrite,
            "the delete is conditional on the ETag the sweep read",
        ),
    ];
    for (point, why) in points {
        let mut rec = record(json!({"v": 1}), in_minutes(-1));
        store.create(&mut rec).await.unwrap();
        rec.data.insert("v".into(), json!(2));
        rec.expiry_date = in_minutes(30);
        let swept = sweep_held_at(&gate, &sweeper, point, async {
            store.save(&rec).await.unwrap();
        })
        .await;
        assert_eq!(sweep_counts(swept), (0, 1), "{point:?}: {why}");
        assert_eq!(store.load(&rec.id).await.unwrap(), Some(rec.clone()), "{point:?}");
    }

    // Deleted by someone else meanwhile: spared too, not a failure.
    let mut raced = record(json!({}), in_minutes(-1));
    store.create(&mut raced).await.unwrap();
    let swept = sweep_held_at(&gate, &sweeper, Point::AfterRows, async {
        store.delete(&raced.id).await.unwrap();
    })
    .await;
    assert_eq!(sweep_counts(swept), (0, 1));

    // Not refreshed while a sweep was held: deleted, and the refreshed ones kept.
    let mut plain = record(json!({}), in_minutes(-1));
    store.create(&mut plain).await.unwrap();
    let swept = sweep_held_at(&gate, &sweeper, Point::AfterRows, async {}).await;
    assert_eq!(sweep_counts(swept), (1, 0));
    assert!(raw_row(env, &plain.id).await.is_none());
    assert_eq!(raw_rows(env).await.len(), 2, "the two refreshed records");
}

pub async fn a_deleted_session_stays_deleted_when_a_later_save_comes(env: &Env) {
    let store = sessions(env);
    let mut rec = record(json!({"user": "alice"}), in_minutes(30));
    store.create(&mut rec).await.unwrap();
    store.delete(&rec.id).await.unwrap();
    assert_eq!(store.load(&rec.id).await.unwrap(), None);
    assert!(raw_row(env, &rec.id).await.is_none(), "the row is gone");
    store
        .delete(&rec.id)
        .await
        .expect("deleting a missing session is not an error");

    // A request that loaded the session before it was revoked saves at its end: it stays revoked.
    store
        .save(&rec)
        .await
        .expect("the save of a revoked session succeeds quietly");
    assert_eq!(store.load(&rec.id).await.unwrap(), None);
    assert!(raw_rows(env).await.is_empty(), "nothing was recreated");

    // Deleting a large record removes its continuation rows too.
    let mut big = record(json!({ "blob": noise(over_one_entity(env)) }), in_minutes(30));
    store.create(&mut big).await.unwrap();
    assert!(raw_rows(env).await.len() > 1, "stored over continuation rows");
    store.delete(&big.id).await.unwrap();
    assert!(raw_rows(env).await.is_empty());
}

pub async fn sessions_bypass_the_read_cache(env: &Env) {
    let cached = env.cached(ReadCache::default());
    assert!(cached.cache().is_some());
    let store = TableSessionStore::new(&cached, &env.table).unwrap();
    let mut rec = record(json!({"user": "alice"}), in_minutes(30));
    store.create(&mut rec).await.unwrap();
    for _ in 0..3 {
        env.reset_counts();
        assert!(store.load(&rec.id).await.unwrap().is_some());
        assert_eq!(env.counts().entity_requests(), 1, "every load reads the table");
    }

    // Revoked through another handle (another process): gone at the next load.
    let elsewhere = TableSessionStore::new(&env.cached(ReadCache::default()), &env.table).unwrap();
    elsewhere.delete(&rec.id).await.unwrap();
    assert_eq!(
        store.load(&rec.id).await.unwrap(),
        None,
        "a revoked session is gone at once"
    );

    // Changed past the store (a raw write): the next load sees the change.
    let mut rec = record(json!({"role": "admin"}), in_minutes(30));
    store.create(&mut rec).await.unwrap();
    assert!(store.load(&rec.id).await.unwrap().is_some());
    let mut row = raw_row(env, &rec.id).await.unwrap();
    row.insert(
        SESSION_EXPIRY_COLUMN,
        Value::DateTime(unified_tables::DateTime::from(in_minutes(-1))),
    );
    env.put_raw(row).await;
    assert_eq!(
        store.load(&rec.id).await.unwrap(),
        None,
        "expired by another writer: absent at once"
    );
}

/// How many characters of [`noise`] take continuation rows (over one
/// entity) and fit one transaction: 2,000,000 on Table Storage (4 MiB),
/// seven tenths of the budget on a service whose transactions hold less
/// (Cosmos DB for Table: 2 MB; about 1 MB of gzip, 1.4 MB in the body).
fn over_one_entity(env: &Env) -> usize {
    2_000_000.min(env.profile().transaction_body_budget() * 7 / 10)
}

/// `n` characters of text gzip cannot shrink much.
fn noise(n: usize) -> String {
    use rand::Rng;
    let mut rng = rand::thread_rng();
    (0..n)
        .map(|_| rng.sample(rand::distributions::Alphanumeric) as char)
        .collect()
}

pub async fn large_session_data_is_stored_at_any_size_or_refused_by_name(env: &Env) {
    let store = sessions(env);

    // Over one cell: split cells and continuation rows, in the table alone.
    let mut medium = record(json!({ "payload": noise(over_one_entity(env)) }), in_minutes(30));
    store.create(&mut medium).await.unwrap();
    assert_eq!(store.load(&medium.id).await.unwrap().as_ref(), Some(&medium));
    let row = raw_row(env, &medium.id).await.unwrap();
    assert!(
        matches!(row.get(SPLIT_PARTS), Some(Value::Int32(n)) if *n > 0),
        "continuation rows: {:?}",
        row.properties.keys().collect::<Vec<_>>()
    );

    // Over one transaction: a blob.
    let mut large = record(json!({ "payload": noise(5 * 1024 * 1024) }), in_minutes(30));
    store.create(&mut large).await.unwrap();
    assert_eq!(store.load(&large.id).await.unwrap().as_ref(), Some(&large));
    let row = raw_row(env, &large.id).await.unwrap();
    assert!(
        row.get(&blob_cell(SESSION_DATA_COLUMN)).is_some(),
        "offloaded to a blob"
    );
    // A save that shrinks it back into the row.
    large.data = HashMap::from([("payload".to_owned(), json!("small"))]);
    store.save(&large).await.unwrap();
    assert_eq!(store.load(&large.id).await.unwrap().as_ref(), Some(&large));
    assert!(raw_row(env, &large.id)
        .await
        .unwrap()
        .get(&blob_cell(SESSION_DATA_COLUMN))
        .is_none());
    // The blob it no longer references is young: left for the orphan sweep, which deletes it.
    let young = store
        .sweep_orphan_blobs(std::time::Duration::from_secs(3600))
        .await
        .unwrap();
    assert_eq!((young.examined, young.deleted), (1, 0), "the save left the young blob");
    env.pass_blob_service_time(std::time::Duration::from_secs(2)).await;
    let report = store
        .sweep_orphan_blobs(std::time::Duration::from_secs(1))
        .await
        .unwrap();
    assert_eq!(report.deleted, 1, "the released blob is swept");
    assert_eq!(store.load(&large.id).await.unwrap().as_ref(), Some(&large));

    // Without a blob store, data over one transaction is refused by name, and nothing is stored.
    let no_blobs = TableSessionStore::new(&env.tables.clone().without_blobs(), &env.table).unwrap();
    let mut refused = record(json!({ "payload": noise(5 * 1024 * 1024) }), in_minutes(30));
    let err = no_blobs.create(&mut refused).await.unwrap_err();
    let StoreError::Encode(message) = &err else {
        panic!("an encode error: {err:?}")
    };
    if env.profile().has_blobs() {
        assert_says(
            message,
            &[
                "creating a session",
                &env.table,
                SESSION_DATA_COLUMN,
                "over the limit",
                "blob",
            ],
        );
    } else {
        // Cosmos DB for Table keeps no blobs: a session store of a handle
        // without a blob account is refused whatever the data, naming the
        // field and the fix, and stores nothing.
        assert_says(
            message,
            &[
                "creating a session",
                &env.table,
                "field `data`",
                "keeps no blobs",
                "Tables::with_blobs",
            ],
        );
        let mut small = record(json!({ "user": "alice" }), in_minutes(30));
        let err = no_blobs.create(&mut small).await.unwrap_err();
        assert!(
            matches!(&err, StoreError::Encode(m) if m.contains("keeps no blobs")),
            "{err:?}"
        );
        assert!(raw_row(env, &small.id).await.is_none(), "nothing stored");
        let err = no_blobs.load(&medium.id).await.unwrap_err();
        assert!(err.to_string().contains("keeps no blobs"), "{err:?}");
    }
    assert!(
        !message.contains(&refused.id.to_string()),
        "no session id in messages: {message}"
    );
    if env.profile().has_blobs() {
        assert_eq!(no_blobs.load(&refused.id).await.unwrap(), None);
    }
    assert!(raw_row(env, &refused.id).await.is_none(), "nothing stored");
    // A save of such data is refused the same way, and leaves the stored record as it was.
    let mut kept = medium.clone();
    kept.data.insert("payload".into(), json!(noise(5 * 1024 * 1024)));
    assert!(matches!(no_blobs.save(&kept).await, Err(StoreError::Encode(_))));
    assert_eq!(store.load(&medium.id).await.unwrap().as_ref(), Some(&medium));
}

pub async fn session_errors_say_what_failed_and_never_hold_the_id(env: &Env) {
    let store = sessions(env);
    let rec = record(json!({"user": "alice"}), in_minutes(30));
    let id = rec.id.to_string();
    assert_eq!(
        store.load(&rec.id).await.unwrap(),
        None,
        "nothing there yet (and the table exists)"
    );
    // A record damaged by another writer: data that is not JSON.
    let mut row = Row::new(&id, SESSION_ROW_KEY);
    row.insert(
        SESSION_EXPIRY_COLUMN,
        Value::DateTime(unified_tables::DateTime::from(in_minutes(30))),
    );
    row.insert(json_cell(SESSION_DATA_COLUMN), Value::String("{not json".into()));
    env.put_raw(row).await;
    let err = store.load(&rec.id).await.unwrap_err();
    let StoreError::Decode(message) = &err else {
        panic!("a decode error: {err:?}")
    };
    assert_says(message, &["loading a session", &env.table, SESSION_DATA_COLUMN]);
    assert!(!message.contains(&id), "no session id in messages: {message}");

    // The service failing: a backend error naming the operation, the table and the service's answer.
    let faulty = FaultyBackend::new(env.backend().clone());
    let flaky = TableSessionStore::new(
        &with_env_blobs(env, Tables::with_backend(faulty.clone()))
            .with_retry(unified_tables::RetryPolicy::no_retries()),
        &env.table,
    )
    .unwrap();
    let mut live = record(json!({}), in_minutes(30));
    flaky.create(&mut live).await.unwrap();
    faulty.fail_next(FaultTarget::Get, FaultTiming::Before, || {
        unified_tables::Error::service(503, "ServerBusy", "The server is busy.")
    });
    let err = flaky.load(&live.id).await.unwrap_err();
    let StoreError::Backend(message) = &err else {
        panic!("a backend error: {err:?}")
    };
    assert_says(message, &["loading a session", &env.table, "503 ServerBusy"]);
    faulty.fail_next(FaultTarget::Write, FaultTiming::Before, || {
        unified_tables::Error::service(503, "ServerBusy", "The server is busy.")
    });
    let err = flaky.delete(&live.id).await.unwrap_err();
    assert!(
        matches!(&err, StoreError::Backend(m) if m.contains("deleting a session") && !m.contains(&live.id.to_string())),
        "{err:?}"
    );
    assert!(
        flaky.load(&live.id).await.unwrap().is_some(),
        "the failed delete deleted nothing"
    );
}

/// One HTTP/1.1 request over a fresh connection: the status line, the
/// `Set-Cookie` id (if any) and the body.
async fn http_get(address: std::net::SocketAddr, cookie: Option<&str>) -> (String, Option<String>, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut socket = tokio::net::TcpStream::connect(address).await.expect("connect");
    let cookie = cookie.map(|c| format!("Cookie: id={c}\r\n")).unwrap_or_default();
    let request = format!("GET / HTTP/1.1\r\nHost: test\r\n{cookie}Connection: close\r\n\r\n");
    socket.write_all(request.as_bytes()).await.expect("send");
    let mut answer = String::new();
    socket.read_to_string(&mut answer).await.expect("receive");
    let (head, body) = answer.split_once("\r\n\r\n").expect("a response head");
    let status = head.lines().next().unwrap_or_default().to_owned();
    let set_cookie = head
        .lines()
        .filter_map(|l| l.strip_prefix("set-cookie: id="))
        .map(|v| v.split(';').next().unwrap_or_default().to_owned())
        .next();
    (status, set_cookie, body.to_owned())
}

pub async fn hostile_session_ids_never_reach_the_table(env: &Env) {
    use axum::{routing::get, Router};
    use tower_sessions::{Session, SessionManagerLayer};

    async fn count(session: Session) -> String {
        let n = session.get::<u64>("n").await.expect("the store answers").unwrap_or(0) + 1;
        session.insert("n", n).await.expect("the store answers");
        n.to_string()
    }

    let store = sessions(env);
    let app = Router::new()
        .route("/", get(count))
        .layer(SessionManagerLayer::new(store.clone()).with_secure(false));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    // A fresh session, then the same one again.
    let (status, cookie, body) = http_get(address, None).await;
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    assert_eq!(body, "1");
    let cookie = cookie.expect("a session cookie");
    assert_eq!(http_get(address, Some(&cookie)).await.2, "2");

    // Cookie values a client can send that are no id: each starts a fresh session, never an error.
    let valid = Id::default().to_string();
    let hostile = [
        "../../etc/passwd".to_owned(),
        "a/b".to_owned(),
        "a#b?c".to_owned(),
        "a\\b".to_owned(),
        "%2F%23%3F".to_owned(),
        valid.replacen(|_: char| true, "/", 1),
        valid.replacen(|_: char| true, "+", 1),
        format!("{valid}="),
        format!("{valid}A"),
        valid[..21].to_owned(),
        "A".repeat(4000),
        String::new(),
        "\"quoted\"".to_owned(),
    ];
    for value in &hostile {
        let (status, fresh, body) = http_get(address, Some(value)).await;
        assert!(status.starts_with("HTTP/1.1 200"), "cookie {value:?}: {status}");
        assert_eq!(body, "1", "cookie {value:?} starts a fresh session");
        let fresh = fresh.expect("a new session cookie");
        assert_ne!(&fresh, value);
        assert!(fresh.parse::<Id>().is_ok(), "{fresh}");
    }
    // A well-formed id that names no session: a fresh session too (tower-sessions warns of it).
    let (_, fresh, body) = http_get(address, Some(&Id::default().to_string())).await;
    assert_eq!((body.as_str(), fresh.is_some()), ("1", true));
    server.abort();

    // Every row is keyed by a well-formed id: 1 + hostile + 1 sessions.
    let rows = raw_rows(env).await;
    assert_eq!(rows.len(), hostile.len() + 2);
    for row in &rows {
        assert!(row.partition_key.parse::<Id>().is_ok(), "{}", row.partition_key);
        assert_eq!(row.row_key, SESSION_ROW_KEY);
    }

    // Ids at the edges of their range, and ids whose text holds `-` and `_`, are keys like any other.
    let mut edges: Vec<Id> = [0, 1, -1, i128::MIN, i128::MAX].map(Id).to_vec();
    edges.extend(
        std::iter::repeat_with(Id::default)
            .filter(|id| {
                let t = id.to_string();
                t.contains('-') && t.contains('_')
            })
            .take(2),
    );
    for (i, id) in edges.iter().enumerate() {
        let mut rec = record(json!({ "i": i }), in_minutes(30));
        rec.id = *id;
        store.create(&mut rec).await.unwrap();
        assert_eq!(rec.id, *id, "no collision");
        assert_eq!(store.load(id).await.unwrap(), Some(rec));
        store.delete(id).await.unwrap();
        assert_eq!(store.load(id).await.unwrap(), None);
    }

    // Ids whose texts differ only in letter case are two sessions: keys compare exactly.
    let upper = std::iter::repeat_with(Id::default)
        .find(|id| id.to_string().starts_with(|c: char| c.is_ascii_uppercase()))
        .unwrap();
    let text = upper.to_string();
    let lower: Id = format!("{}{}", text[..1].to_ascii_lowercase(), &text[1..])
        .parse()
        .unwrap();
    assert_ne!(upper, lower);
    let mut a = record(json!({"who": "upper"}), in_minutes(30));
    a.id = upper;
    store.create(&mut a).await.unwrap();
    assert_eq!(
        store.load(&lower).await.unwrap(),
        None,
        "the other casing is not this session"
    );
    let mut b = record(json!({"who": "lower"}), in_minutes(30));
    b.id = lower;
    store.create(&mut b).await.unwrap();
    assert_eq!(b.id, lower, "no collision with the other casing");
    assert_eq!(store.load(&upper).await.unwrap().unwrap().data["who"], json!("upper"));
    assert_eq!(store.load(&lower).await.unwrap().unwrap().data["who"], json!("lower"));
}
