//! Reads of split values: continuation rows fetched together with the main
//! row when the handle last saw the entity with them, gzip unpacked and
//! hashed as the rows arrive, and every damage still `Error::Integrity`.

use std::time::Duration;

use unified_tables::backend::counting::Counts;
use unified_tables::backend::{Backend, IfMatch, UpdateMode, WriteOp};
use unified_tables::{sha256_hex, Error, Row, Store, Tables, Value};

use crate::gate::{GateBackend, Point};
use crate::model::Document;
use crate::{blob_options, noise, Env};

/// Asserts the counts since the last reset are exactly `expected`, then resets them.
fn measure(env: &Env, what: &str, expected: Counts) {
    let got = env.counts();
    assert_eq!(got, expected, "{what}: got {got:#?}");
    env.reset_counts();
}

/// A document whose body takes continuation rows.
fn big(rk: &str, seed: u64) -> Document {
    let mut d = Document::new("p", rk);
    d.body = noise(1_500_000, seed);
    d
}

/// Another handle over the same table and blobs, with no history of its own.
fn fresh_handle(env: &Env) -> Store<Document> {
    Tables::with_backend(env.backend().clone())
        .without_cache()
        .with_blobs(env.blobs.clone().expect("a blob backend"), blob_options())
        .store_in::<Document>(&env.table)
}

/// The main row and the continuation rows of `rk`, as stored.
async fn stored_rows(env: &Env, rk: &str) -> Vec<Row> {
    let b = env.backend();
    let main = b.get(&env.table, "p", rk).await.unwrap().expect("main row");
    let parts = match main.get("_SplitParts") {
        Some(Value::Int32(n)) => *n as usize,
        _ => 0,
    };
    let mut rows = vec![main];
    for i in 1..=parts {
        let key = unified_tables::layout::continuation_key(rk, i);
        rows.push(b.get(&env.table, "p", &key).await.unwrap().expect("continuation row"));
    }
    rows
}

async fn put_back(env: &Env, row: Row) {
    env.backend()
        .execute(
            &env.table,
            WriteOp::Upsert {
                row,
                mode: UpdateMode::Replace,
            },
        )
        .await
        .unwrap();
}

/// Writes `notes`, then rewrites its stored gzip with `damage` and a
/// manifest that agrees with it, so that only the gzip stream can tell.
async fn damage_notes(env: &Env, notes: &Document, damage: fn(&mut Vec<u8>)) {
    let store = env.tables.store_in::<Document>(&env.table);
    store.upsert(&mut notes.clone()).await.unwrap();
    let mut rows = stored_rows(env, "notes").await;
    assert!(rows.len() > 1, "the notes take continuation rows");
    // (chunk index, row holding it, bytes)
    let mut chunks: Vec<(usize, usize, Vec<u8>)> = Vec::new();
    for (at, row) in rows.iter().enumerate() {
        for (k, v) in &row.properties {
            let index = k.strip_prefix("Notes__c").and_then(|i| i.parse::<usize>().ok());
            if let (Some(i), Value::Binary(b)) = (index, v) {
                chunks.push((i, at, b.clone()));
            }
        }
    }
    chunks.sort_by_key(|c| c.0);
    let last = chunks.len() - 1;
    let (index, in_row) = (chunks[last].0, chunks[last].1);
    assert!(in_row > 0, "the last chunk is on a continuation row");
    damage(&mut chunks[last].2);
    let stored: Vec<u8> = chunks.iter().flat_map(|c| c.2.clone()).collect();
    rows[in_row].insert(format!("Notes__c{index}"), Value::Binary(chunks[last].2.clone()));
    rows[0].insert("Notes__sha256", Value::String(sha256_hex(&stored)));
    rows[0].insert("Notes__len", Value::Int64(stored.len() as i64));
    for row in rows {
        put_back(env, row).await;
    }
}

pub async fn continuation_rows_are_read_with_the_main_row_when_the_handle_saw_them(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    let mut doc = big("big", 80);
    store.create(&mut doc).await.unwrap();
    store.create(&mut Document::new("p", "small")).await.unwrap();
    env.reset_counts();
    let one_of_each = Counts {
        gets: 1,
        queries: 1,
        ..Counts::default()
    };
    let one_get = Counts {
        gets: 1,
        ..Counts::default()
    };
    // This handle wrote it with continuation rows: the range query goes with the point read.
    assert!(store.get(("p", "big")).await.unwrap().unwrap().same(&doc));
    measure(env, "read of an entity written with continuation rows", one_of_each);
    assert!(store
        .get(("p", "small"))
        .await
        .unwrap()
        .unwrap()
        .same(&Document::new("p", "small")));
    measure(env, "read of an entity without them", one_get);
    // A handle that has not seen the entity sends the range query after the point read: the same requests.
    let other = fresh_handle(env);
    other.ensure_created().await.unwrap();
    env.reset_counts();
    assert!(other.get(("p", "big")).await.unwrap().unwrap().same(&doc));
    measure(env, "first read through another handle", one_of_each);
    // Another writer shrinks it: the guess costs one range query that finds nothing, once.
    doc.body = "short".into();
    other.update(&mut doc).await.unwrap();
    env.reset_counts();
    assert!(store.get(("p", "big")).await.unwrap().unwrap().same(&doc));
    measure(env, "read after another writer shrank the entity", one_of_each);
    assert!(store.get(("p", "big")).await.unwrap().unwrap().same(&doc));
    measure(env, "the next read", one_get);
    // The main row gone under the handle: `None`, its leftover continuation rows read along and left out.
    store.create(&mut big("gone", 81)).await.unwrap();
    env.backend()
        .execute(
            &env.table,
            WriteOp::Delete {
                partition_key: "p".into(),
                row_key: "gone".into(),
                condition: IfMatch::Any,
            },
        )
        .await
        .unwrap();
    env.reset_counts();
    assert!(store.get(("p", "gone")).await.unwrap().is_none());
    measure(env, "read of a main row deleted by another writer", one_of_each);
    assert!(store.get(("p", "gone")).await.unwrap().is_none());
    measure(env, "the next read", one_get);
    // A continuation row missing when the rows are read together is Integrity.
    store.create(&mut big("torn", 82)).await.unwrap();
    env.backend()
        .execute(
            &env.table,
            WriteOp::Delete {
                partition_key: "p".into(),
                row_key: "torn~0001".into(),
                condition: IfMatch::Any,
            },
        )
        .await
        .unwrap();
    let err = store.get(("p", "torn")).await.unwrap_err();
    assert!(
        matches!(&err, Error::Integrity { reason, .. } if reason.contains("continuation row 1 of")),
        "{err}"
    );
}

pub async fn a_read_whose_continuation_rows_are_in_flight_never_mixes_versions(env: &Env) {
    let gate = GateBackend::new(env.backend().clone());
    let tables = Tables::with_backend(gate.clone())
        .without_cache()
        .with_blobs(env.blobs.clone().expect("a blob backend"), blob_options());
    let store = tables.store_in::<Document>(&env.table);
    let mut first = big("doc", 84);
    store.create(&mut first).await.unwrap();
    // The read's point read has its answer (the first version) and its range
    // query has not been sent: both are in flight at once, and held there.
    let get = gate.arm(Point::AfterGet);
    let query = gate.arm(Point::BeforeQuery);
    let reader = {
        let store = store.clone();
        tokio::spawn(async move { store.get(("p", "doc")).await })
    };
    let both = async {
        get.reached.await.unwrap();
        query.reached.await.unwrap();
    };
    tokio::time::timeout(Duration::from_secs(30), both)
        .await
        .expect("the point read and the range query are sent together");
    // A replace lands between them: the range query reads the second version's rows.
    let mut second = first.clone();
    second.body = noise(1_400_000, 82);
    env.tables
        .store_in::<Document>(&env.table)
        .update(&mut second)
        .await
        .unwrap();
    let _ = query.release.send(());
    let _ = get.release.send(());
    let read = reader.await.unwrap().unwrap().unwrap();
    assert!(read.same(&second), "the read is the second version whole");
}

pub async fn damaged_gzip_is_integrity_while_it_streams(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    let mut notes = Document::new("p", "notes");
    notes.notes = Some(noise(2_000_000, 83));
    let flip: fn(&mut Vec<u8>) = |b| {
        let at = b.len() / 2;
        b[at] ^= 0x5A;
    };
    let truncate: fn(&mut Vec<u8>) = |b| b.truncate(b.len().saturating_sub(6));
    for (what, damage) in [("a changed byte", flip), ("a cut trailer", truncate)] {
        damage_notes(env, &notes, damage).await;
        // Read together with the main row (the type's last entity had continuation rows), then after it.
        let readers = [store.clone(), fresh_handle(env)];
        for (how, reader) in ["together", "after"].iter().zip(readers) {
            let err = reader.get(("p", "notes")).await.unwrap_err();
            assert!(
                matches!(&err, Error::Integrity { column, reason } if column == "Notes" && reason.contains("gzip")),
                "{what}, rows read {how}: {err}"
            );
        }
    }
    // The undamaged value reads back, both ways.
    store.upsert(&mut notes.clone()).await.unwrap();
    for reader in [store.clone(), fresh_handle(env)] {
        assert!(reader.get(("p", "notes")).await.unwrap().unwrap().same(&notes));
    }
}
