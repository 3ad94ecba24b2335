//! Reads of split values: continuation rows fetched together with the main
//! row when the handle last saw the entity with them, gzip unpacked and
//! hashed as the rows arrive, and every damage still `Error::Integrity`.

use std::time::Duration;

use unified_tables::backend::counting::Counts;
use unified_tables::backend::{Backend, IfMatch, WriteOp};
use unified_tables::layout::{
    blob_cell, chunk_cell, continuation_key, len_cell, parse_split_cell, sha256_cell, SplitCell, SPLIT_INDEX, SPLIT_OF,
    SPLIT_PARTS,
};
use unified_tables::{sha256_hex, Error, Row, Store, Tables, Value};

use crate::gate::{GateBackend, Point};
use crate::model::Document;
use crate::rows::put_back;
use crate::{blob_options, noise, Env};

/// The most continuation rows a read fetches by point reads (more take one range query).
const POINT_READS: usize = 8;

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
    let parts = match main.get(SPLIT_PARTS) {
        Some(Value::Int32(n)) => *n as usize,
        _ => 0,
    };
    let mut rows = vec![main];
    for i in 1..=parts {
        let key = continuation_key(rk, i);
        rows.push(b.get(&env.table, "p", &key).await.unwrap().expect("continuation row"));
    }
    rows
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
            let index = match parse_split_cell(k) {
                Some(("Notes", SplitCell::Chunk(i))) => Some(i),
                _ => None,
            };
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
    rows[in_row].insert(chunk_cell("Notes", index), Value::Binary(chunks[last].2.clone()));
    rows[0].insert(sha256_cell("Notes"), Value::String(sha256_hex(&stored)));
    rows[0].insert(len_cell("Notes"), Value::Int64(stored.len() as i64));
    for row in rows {
        put_back(env, row).await;
    }
}

pub async fn continuation_rows_are_read_with_the_main_row_when_the_handle_saw_them(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    // Sizes within one transaction: 1.5 and 2.6 MB on Table Storage (4 MiB),
    // 1.0 and 1.5 MB on Cosmos DB for Table (2 MB), where more is a blob.
    let roomy = env.profile().transaction_body_budget() > 3_000_000;
    let (big_chars, bigger_chars) = if roomy {
        (1_500_000, 2_600_000)
    } else {
        (1_000_000, 1_500_000)
    };
    let big = |rk: &str, seed: u64| {
        let mut d = Document::new("p", rk);
        d.body = noise(big_chars, seed);
        d
    };
    let mut doc = big("big", 80);
    store.create(&mut doc).await.unwrap();
    store.create(&mut Document::new("p", "small")).await.unwrap();
    let parts = stored_rows(env, "big").await.len() - 1;
    assert!(
        (2..=POINT_READS).contains(&parts),
        "the body takes {parts} continuation rows"
    );
    env.reset_counts();
    // One point read for the main row and one for each continuation row; no range query.
    let main_and_parts = Counts {
        gets: 1 + parts as u64,
        ..Counts::default()
    };
    let one_get = Counts {
        gets: 1,
        ..Counts::default()
    };
    // This handle wrote it with continuation rows: their reads go with the point read.
    assert!(store.get(("p", "big")).await.unwrap().unwrap().same(&doc));
    measure(env, "read of an entity written with continuation rows", main_and_parts);
    assert!(store
        .get(("p", "small"))
        .await
        .unwrap()
        .unwrap()
        .same(&Document::new("p", "small")));
    measure(env, "read of an entity without them", one_get);
    // A handle that has not seen the entity reads them after the point read: the same requests.
    let other = fresh_handle(env);
    other.ensure_created().await.unwrap();
    env.reset_counts();
    assert!(other.get(("p", "big")).await.unwrap().unwrap().same(&doc));
    measure(env, "first read through another handle", main_and_parts);
    // Another writer shrinks it: the guess costs reads that find nothing, once.
    doc.body = "short".into();
    other.update(&mut doc).await.unwrap();
    env.reset_counts();
    assert!(store.get(("p", "big")).await.unwrap().unwrap().same(&doc));
    measure(env, "read after another writer shrank the entity", main_and_parts);
    assert!(store.get(("p", "big")).await.unwrap().unwrap().same(&doc));
    measure(env, "the next read", one_get);
    // Another writer grows it past what the handle last saw: the rows the guess did not cover are read after it.
    let mut grown = big("big", 79);
    grown.etag = doc.etag.clone();
    other.update(&mut grown).await.unwrap();
    assert!(store.get(("p", "big")).await.unwrap().unwrap().same(&grown));
    let mut bigger = grown.clone();
    bigger.body = noise(bigger_chars, 78);
    other.update(&mut bigger).await.unwrap();
    let more = stored_rows(env, "big").await.len() - 1;
    assert!(
        more > parts && more <= POINT_READS,
        "the bigger body takes {more} continuation rows"
    );
    env.reset_counts();
    assert!(store.get(("p", "big")).await.unwrap().unwrap().same(&bigger));
    let main_and_more = Counts {
        gets: 1 + more as u64,
        ..Counts::default()
    };
    measure(
        env,
        "read of a version with more rows than the handle saw",
        main_and_more,
    );
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
    measure(env, "read of a main row deleted by another writer", main_and_parts);
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

pub async fn a_value_over_more_rows_than_point_reads_cover_takes_one_range_query(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    let doc = big("wide", 85);
    store.create(&mut doc.clone()).await.unwrap();
    // The same chunks spread over more continuation rows than point reads cover, as another
    // writer may lay them out: the main row keeps the manifest, each row a few chunks.
    let rows = stored_rows(env, "wide").await;
    let mut main = rows[0].clone();
    let mut chunks: Vec<(String, Value)> = Vec::new();
    for row in &rows {
        for (k, v) in &row.properties {
            if matches!(parse_split_cell(k), Some(("Body", SplitCell::Chunk(_)))) {
                chunks.push((k.to_string(), v.clone()));
            }
        }
    }
    for (k, _) in &chunks {
        main.properties.remove(k.as_str());
    }
    let wide = POINT_READS + 2;
    assert!(chunks.len() >= wide, "{} chunks", chunks.len());
    for row in &rows[1..] {
        env.backend()
            .execute(
                &env.table,
                WriteOp::Delete {
                    partition_key: "p".into(),
                    row_key: row.row_key.clone(),
                    condition: IfMatch::Any,
                },
            )
            .await
            .unwrap();
    }
    main.insert(SPLIT_PARTS, Value::Int32(wide as i32));
    let per_row = chunks.len().div_ceil(wide);
    for (i, part) in chunks.chunks(per_row).enumerate() {
        let mut row = Row::new("p", continuation_key("wide", i + 1));
        row.insert(SPLIT_OF, Value::String("wide".into()));
        row.insert(SPLIT_INDEX, Value::Int32(i as i32 + 1));
        for (k, v) in part {
            row.insert(k.as_str(), v.clone());
        }
        put_back(env, row).await;
    }
    assert_eq!(chunks.len().div_ceil(per_row), wide, "every row holds chunks");
    main.etag = None;
    put_back(env, main).await;
    let one_of_each = Counts {
        gets: 1,
        queries: 1,
        query_starts: 1,
        ..Counts::default()
    };
    // Read after the point read by a handle that has not seen it, then beside it by one that has.
    let other = fresh_handle(env);
    other.ensure_created().await.unwrap();
    env.reset_counts();
    assert!(other.get(("p", "wide")).await.unwrap().unwrap().same(&doc));
    measure(env, "first read of the wide layout", one_of_each);
    assert!(other.get(("p", "wide")).await.unwrap().unwrap().same(&doc));
    measure(env, "the read beside the point read", one_of_each);
}

pub async fn a_read_whose_continuation_rows_are_in_flight_never_mixes_versions(env: &Env) {
    let gate = GateBackend::new(env.backend().clone());
    let tables = Tables::with_backend(gate.clone())
        .without_cache()
        .with_blobs(env.blobs.clone().expect("a blob backend"), blob_options());
    let store = tables.store_in::<Document>(&env.table);
    let mut first = big("doc", 84);
    store.create(&mut first).await.unwrap();
    let parts = stored_rows(env, "doc").await.len() - 1;
    // The read's point read has its answer (the first version) and the reads
    // of its continuation rows have not been sent: all are in flight at once,
    // and held there.
    let get = gate.arm(Point::AfterGet);
    let rows: Vec<_> = (0..parts).map(|_| gate.arm(Point::BeforeContinuationGet)).collect();
    let reader = {
        let store = store.clone();
        tokio::spawn(async move { store.get(("p", "doc")).await })
    };
    let (mut releases, mut reached) = (Vec::new(), vec![get.reached]);
    releases.push(get.release);
    for row in rows {
        reached.push(row.reached);
        releases.push(row.release);
    }
    let all = futures::future::join_all(reached);
    let all_reached = tokio::time::timeout(Duration::from_secs(30), all)
        .await
        .expect("the point read and the continuation rows' reads are sent together");
    assert!(all_reached.iter().all(Result::is_ok), "every read reached its point");
    // A replace lands between them: the continuation rows read are the second version's.
    let mut second = first.clone();
    second.body = noise(1_400_000, 82);
    env.tables
        .store_in::<Document>(&env.table)
        .update(&mut second)
        .await
        .unwrap();
    for release in releases.into_iter().rev() {
        let _ = release.send(());
    }
    let read = reader.await.unwrap().unwrap().unwrap();
    assert!(read.same(&second), "the read is the second version whole");
}

pub async fn damaged_gzip_is_integrity_while_it_streams(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    let mut notes = Document::new("p", "notes");
    // 2 MB of text: over one entity in gzip and within one transaction
    // (on Cosmos DB for Table, two thirds of its budget: 1.3 MB, 1 MB of gzip).
    notes.notes = Some(noise(
        2_000_000.min(env.profile().transaction_body_budget() * 2 / 3),
        83,
    ));
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

/// Text of characters one to four bytes long, `chars` of them: the bytes
/// of a gzip step or a blob download piece end inside a character.
fn mixed_text(chars: usize, seed: u64) -> String {
    use rand::{Rng, SeedableRng};
    const ALPHABET: [char; 8] = ['a', 'é', '日', '🎉', 'z', 'ß', '語', '𝄞'];
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..chars).map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())]).collect()
}

/// Text whose bytes a read receives cut inside characters (gzip unpacked
/// in steps, over continuation rows, blobs downloaded in pieces) reads back
/// whole, through a handle that saw it and one that did not.
pub async fn text_cut_inside_characters_reads_back_on_every_path(env: &Env) {
    let blobs = env.blobs.clone().expect("a blob backend");
    let in_blobs = blob_options().with_threshold_bytes(0).unwrap();
    let handles = [
        (env.tables.store_in::<Document>(&env.table), fresh_handle(env), "rows"),
        (
            env.tables
                .clone()
                .with_blobs(blobs.clone(), in_blobs.clone())
                .store_in::<Document>(&env.table),
            Tables::with_backend(env.backend().clone())
                .without_cache()
                .with_blobs(blobs, in_blobs)
                .store_in::<Document>(&env.table),
            "blobs",
        ),
    ];
    for (at, (store, fresh, layout)) in handles.into_iter().enumerate() {
        let rk = format!("chars-{layout}");
        let mut doc = Document::new("p", &rk);
        doc.body = mixed_text(300_000, 90 + at as u64);
        doc.notes = Some(mixed_text(400_000, 92 + at as u64));
        store.create(&mut doc).await.unwrap();
        let rows = stored_rows(env, &rk).await;
        let in_blob = rows[0].get(&blob_cell("Body")).is_some();
        assert_eq!(in_blob, layout == "blobs", "{layout}: where the body went");
        if layout == "rows" {
            assert!(rows.len() > 1, "the body and notes take continuation rows");
        }
        for reader in [store, fresh] {
            let read = reader.get(("p", rk.as_str())).await.unwrap().expect("the document");
            assert!(
                read.body == doc.body && read.notes == doc.notes,
                "{layout}: the text reads back whole"
            );
        }
    }
}
