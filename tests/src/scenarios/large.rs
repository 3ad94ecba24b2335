//! Large values: every tier boundary, integrity, refusals, files.

use futures::TryStreamExt;
use unified_tables::backend::blob::BlobCondition;
use unified_tables::backend::{Backend, WriteOp};
use unified_tables::{BlobContent, Error, QueryOptions, Row, Value};

use crate::model::Document;
use crate::rows::{part_count, raw};
use crate::{mixed_text, noise, Env};

pub async fn every_tier_boundary_round_trips(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    let budget = env.profile().transaction_body_budget();
    let threshold = unified_tables::BlobOptions::DEFAULT_THRESHOLD_BYTES;
    // The last tier boundary is the offload threshold where one transaction
    // holds more than it (Table Storage), else the transaction budget
    // (Cosmos DB for Table: 2 MB less framing), past which a value goes to a
    // blob whatever the threshold.
    let (edge, edge_tier, blob, blob_tier) = if budget > threshold {
        (
            threshold,
            "continuation rows, at the offload threshold",
            threshold + 1,
            "a blob, one byte over the threshold",
        )
    } else {
        (
            budget * 9 / 10,
            "continuation rows, within the transaction budget",
            budget + 1,
            "a blob, one byte over the transaction budget",
        )
    };
    let cases: Vec<(&str, usize, &str)> = vec![
        ("inline", 32_767, "one cell"),
        ("split", 32_768, "split cells on the main row"),
        ("rows", 1_200_000, "continuation rows"),
        ("edge", edge, edge_tier),
        ("blob", blob, blob_tier),
    ];
    for (rk, chars, tier) in &cases {
        let mut d = Document::new("p", rk);
        d.body = noise(*chars, *chars as u64);
        store.create(&mut d).await.unwrap_or_else(|e| panic!("{tier}: {e}"));
        let got = store.get(("p", *rk)).await.unwrap().unwrap();
        assert!(got.same(&d), "{tier}: the value came back changed");
        let row = raw(env, rk).await;
        match *rk {
            "inline" => assert!(row.get("Body").is_some() && row.get("Body__chunks").is_none(), "{tier}"),
            "split" => {
                assert_eq!(row.get("Body__chunks"), Some(&Value::Int32(2)), "{tier}");
                assert_eq!(row.get("Body__enc"), Some(&Value::String("text".into())));
                assert_eq!(part_count(&row), 0);
            }
            "rows" | "edge" => {
                assert!(part_count(&row) >= 1, "{tier}: {}", part_count(&row));
                let cont = env
                    .backend()
                    .get(&env.table, "p", "rows~0001")
                    .await
                    .unwrap()
                    .expect("~0001");
                assert_eq!(cont.get("_SplitOf"), Some(&Value::String("rows".into())));
                assert_eq!(cont.get("_SplitIndex"), Some(&Value::Int32(1)));
            }
            _ => {
                assert!(
                    row.get("Body__blob").is_some() && row.get("Body__chunks").is_none(),
                    "{tier}"
                );
            }
        }
    }
    // Binary and gzip encodings, JSON values, just below and above one cell.
    for (rk, bytes) in [
        ("bin-inline", 65_535usize),
        ("bin-split", 65_536),
        ("bin-rows", 2_000_000),
    ] {
        let mut d = Document::new("p", rk);
        d.data = noise(bytes, 9).into_bytes();
        d.notes = Some("note ".repeat(bytes / 5));
        d.lines = (0..bytes / 20).map(|i| format!("line {i}")).collect();
        store.create(&mut d).await.unwrap_or_else(|e| panic!("{rk}: {e}"));
        assert!(store.get(("p", rk)).await.unwrap().unwrap().same(&d), "{rk}");
    }
    // Mixed 1- to 4-byte text at every tier: its escaped size (about 4 bytes a
    // character in a request body) decides rows and offload.
    let mixed: [(&str, usize, &str); 4] = [
        ("mixed-inline", 14_000, "Body"),
        ("mixed-split", 60_000, "Body__chunks"),
        ("mixed-rows", crate::rows::scaled_to_budget(env, 500_000), "_SplitParts"),
        ("mixed-blob", 1_500_000, "Body__blob"),
    ];
    for (rk, chars, form) in mixed {
        let mut d = Document::new("p", rk);
        d.body = mixed_text(chars, chars as u64);
        d.notes = Some(mixed_text(chars.min(100_000), 5));
        store.create(&mut d).await.unwrap_or_else(|e| panic!("{rk}: {e}"));
        assert!(raw(env, rk).await.get(form).is_some(), "{rk}: stored as {form}");
        assert!(store.get(("p", rk)).await.unwrap().unwrap().same(&d), "{rk}");
    }
    let row = raw(env, "bin-split").await;
    assert_eq!(row.get("Data__enc"), Some(&Value::String("binary".into())));
    // A value that never leaves the table: just within one transaction it is stored in rows.
    let mut d = Document::new("p", "local");
    // 3.7 MB on Table Storage (4 MiB less framing), as much of the Cosmos budget.
    d.local = noise(crate::rows::scaled_to_budget(env, 3_700_000), 77);
    store
        .create(&mut d)
        .await
        .expect("fits one transaction (its budget less framing)");
    assert!(store.get(("p", "local")).await.unwrap().unwrap().same(&d));
    assert!(raw(env, "local").await.get("Local__blob").is_none());
    // Queries and counts see entities, never continuation rows.
    let all = store.query(QueryOptions::partition("p")).await.unwrap();
    let entities = cases.len() + mixed.len() + 4;
    assert_eq!(all.len(), entities);
    assert_eq!(
        store.count(QueryOptions::partition("p")).await.unwrap(),
        entities as u64
    );
    let streamed: Vec<Document> = store.stream(QueryOptions::partition("p")).try_collect().await.unwrap();
    assert_eq!(streamed.len(), entities);
}

pub async fn many_values_that_each_fit_move_to_split_form(env: &Env) {
    #[derive(unified_tables::TableEntity, Debug, PartialEq, Clone)]
    struct Wide {
        #[table(partition_key)]
        pk: String,
        #[table(row_key)]
        rk: String,
        #[table(split = "text")]
        a: String,
        #[table(split = "text")]
        b: String,
        #[table(split = "text")]
        c: String,
        #[table(split = "text")]
        d: String,
        #[table(split = "text")]
        e: String,
        #[table(split = "text")]
        f: String,
        #[table(split = "text")]
        g: String,
        #[table(split = "text")]
        h: String,
        #[table(split = "text")]
        i: String,
        #[table(split = "text")]
        j: String,
        #[table(split = "text")]
        k: String,
        #[table(split = "text")]
        l: String,
        #[table(split = "text")]
        m: String,
        #[table(split = "text")]
        n: String,
        #[table(split = "text")]
        o: String,
        #[table(split = "text")]
        p: String,
        #[table(split = "text")]
        q: String,
        #[table(split = "text")]
        r: String,
    }
    // One value per column, from `cell(1)` to `cell(18)`.
    let wide = |rk: &str, cell: &dyn Fn(u64) -> String| Wide {
        pk: "p".into(),
        rk: rk.into(),
        a: cell(1),
        b: cell(2),
        c: cell(3),
        d: cell(4),
        e: cell(5),
        f: cell(6),
        g: cell(7),
        h: cell(8),
        i: cell(9),
        j: cell(10),
        k: cell(11),
        l: cell(12),
        m: cell(13),
        n: cell(14),
        o: cell(15),
        p: cell(16),
        q: cell(17),
        r: cell(18),
    };
    let mut w = wide("wide", &|i| noise(30_000, i));
    let store = env.tables.store_in::<Wide>(&env.table);
    store
        .create(&mut w)
        .await
        .expect("18 cells of 30,000 chars (1.08 MB) fit once some move to split form");
    let row = raw(env, "wide").await;
    let moved = row.properties.keys().filter(|k| k.ends_with("__chunks")).count();
    let kept = [
        "A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L", "M", "N", "O", "P", "Q", "R",
    ]
    .iter()
    .filter(|c| row.get(c).is_some())
    .count();
    assert!(
        moved >= 1 && kept >= 1 && moved + kept == 18,
        "moved {moved}, kept {kept}: only as many as needed"
    );
    assert_eq!(store.get(("p", "wide")).await.unwrap().unwrap(), w);

    // 18 cells of 14,000 mixed characters: 560 KB stored, but 1.03 MB in a
    // request body once escaped, over one row's body: some move to split form.
    let mut m = wide("wide-mixed", &|i| mixed_text(14_000, i));
    store
        .create(&mut m)
        .await
        .expect("cells within one entity's size, over one row's body escaped, fit once some move");
    let row = raw(env, "wide-mixed").await;
    assert!(row.properties.keys().any(|k| k.ends_with("__chunks")), "some moved");
    assert_eq!(store.get(("p", "wide-mixed")).await.unwrap().unwrap(), m);
}

pub async fn replacing_and_deleting_remove_the_old_parts(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    let mut d = Document::new("p", "doc");
    d.body = noise(1_500_000, 1);
    store.create(&mut d).await.unwrap();
    let parts = part_count(&raw(env, "doc").await);
    assert!(parts >= 1);
    // Shrink: continuation rows go in the same transaction.
    d.body = "short".into();
    store.update(&mut d).await.unwrap();
    assert_eq!(part_count(&raw(env, "doc").await), -1, "no split value left");
    for i in 1..=parts {
        assert!(
            env.backend()
                .get(&env.table, "p", &format!("doc~{i:04}"))
                .await
                .unwrap()
                .is_none(),
            "~{i:04} removed"
        );
    }
    // Grow again, then delete: every row goes.
    d.body = noise(1_500_000, 2);
    store.upsert(&mut d).await.unwrap();
    assert!(store.delete(("p", "doc")).await.unwrap());
    let left = crate::rows::all_rows(env, &env.table, &Default::default()).await;
    assert!(left.is_empty(), "{left:?}");
    assert!(!store.delete(("p", "doc")).await.unwrap());
}

pub async fn damage_is_detected_on_read(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    let b = env.backend();
    // A flipped byte in a chunk.
    let mut d = Document::new("p", "flip");
    d.data = noise(100_000, 3).into_bytes();
    store.create(&mut d).await.unwrap();
    let mut row = raw(env, "flip").await;
    if let Some(Value::Binary(bytes)) = row.properties.get_mut("Data__c1") {
        bytes[10] ^= 0x40;
    }
    b.execute(
        &env.table,
        WriteOp::Upsert {
            row,
            mode: unified_tables::backend::UpdateMode::Replace,
        },
    )
    .await
    .unwrap();
    let err = store.get(("p", "flip")).await.unwrap_err();
    assert!(
        matches!(&err, Error::Integrity { column, .. } if column == "Data"),
        "{err}"
    );
    // A missing chunk cell.
    let mut d = Document::new("p", "chunk");
    d.body = noise(100_000, 4);
    store.create(&mut d).await.unwrap();
    let mut row = raw(env, "chunk").await;
    row.properties.remove("Body__c0");
    b.execute(
        &env.table,
        WriteOp::Upsert {
            row,
            mode: unified_tables::backend::UpdateMode::Replace,
        },
    )
    .await
    .unwrap();
    assert!(matches!(store.get(("p", "chunk")).await, Err(Error::Integrity { .. })));
    // A missing continuation row.
    let mut d = Document::new("p", "cont");
    d.body = noise(1_500_000, 5);
    store.create(&mut d).await.unwrap();
    b.execute(
        &env.table,
        WriteOp::Delete {
            partition_key: "p".into(),
            row_key: "cont~0001".into(),
            condition: unified_tables::backend::IfMatch::Any,
        },
    )
    .await
    .unwrap();
    assert!(matches!(store.get(("p", "cont")).await, Err(Error::Integrity { .. })));
    // A missing blob.
    let mut d = Document::new("p", "blob");
    d.body = noise(3_200_000, 6);
    store.create(&mut d).await.unwrap();
    let reference: serde_json::Value = serde_json::from_str(
        raw(env, "blob")
            .await
            .get("Body__blob")
            .and_then(Value::as_str)
            .unwrap(),
    )
    .unwrap();
    let path = reference["path"].as_str().unwrap().to_owned();
    let blobs = env.blobs.as_ref().unwrap();
    blobs
        .delete(crate::blob_options().container(), &path, BlobCondition::None)
        .await
        .unwrap();
    let err = store.get(("p", "blob")).await.unwrap_err();
    assert!(
        matches!(&err, Error::Integrity { reason, .. } if reason.contains("missing")),
        "{err}"
    );
    // Damaged rows stay deletable.
    for rk in ["flip", "chunk", "cont", "blob"] {
        assert!(store.delete(("p", rk)).await.unwrap(), "{rk}");
    }
}

pub async fn values_that_cannot_be_stored_are_refused_before_anything_is_written(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    store.ensure_created().await.unwrap();
    env.reset_counts();
    // offload = "never" and too large for one transaction.
    let mut d = Document::new("p", "never");
    d.local = noise(4_500_000, 7);
    let err = store.create(&mut d).await.unwrap_err();
    assert!(
        matches!(&err, Error::OversizedValue { column, reason, .. } if column == "Local" && reason.contains("never")),
        "{err}"
    );
    // No blob store configured.
    let plain = unified_tables::Tables::with_backend(env.backend().clone()).store_in::<Document>(&env.table);
    let mut d = Document::new("p", "noblobs");
    d.body = noise(5_000_000, 8);
    let err = plain.create(&mut d).await.unwrap_err();
    if env.profile().has_blobs() {
        assert!(
            matches!(&err, Error::OversizedValue { column, .. } if column == "Body"),
            "{err}"
        );
    } else {
        // Cosmos DB for Table keeps no blobs: a type whose values may go to
        // one is refused by the store of a handle without a blob account,
        // whatever the value, naming the field and the fix.
        assert_blob_tier_refused(&err);
        let err = plain.create(&mut Document::new("p", "small")).await.unwrap_err();
        assert_blob_tier_refused(&err);
    }
    // Keys with the continuation shape, or too long to carry it.
    for rk in ["a~0001", &"k".repeat(481)] {
        let err = store.create(&mut Document::new("p", rk)).await.unwrap_err();
        assert!(matches!(err, Error::InvalidKey { .. }), "{err}");
    }
    assert_eq!(env.counts().entity_requests(), 0, "nothing was sent");
    assert!(
        store.create(&mut Document::new("p", "a~b")).await.is_ok(),
        "other `~` keys are fine"
    );
}

pub async fn a_foreign_row_at_a_continuation_key_fails_the_write(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    store.ensure_created().await.unwrap();
    env.backend()
        .execute(
            &env.table,
            WriteOp::Insert(Row::new("p", "doc~0001").with("Other", Value::Int32(1))),
        )
        .await
        .unwrap();
    let mut d = Document::new("p", "doc");
    d.body = noise(1_500_000, 9);
    let err = store.create(&mut d).await.unwrap_err();
    assert!(
        matches!(&err, Error::InvalidKey { key, .. } if key == "doc~0001"),
        "{err}"
    );
    assert!(
        env.backend().get(&env.table, "p", "doc").await.unwrap().is_none(),
        "nothing written"
    );
    let foreign = env.backend().get(&env.table, "p", "doc~0001").await.unwrap().unwrap();
    assert_eq!(
        foreign.get("Other"),
        Some(&Value::Int32(1)),
        "the foreign row is left as it was"
    );
}

pub async fn files_are_blobs_read_lazily(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    let bytes = noise(5_000_000, 10).into_bytes();
    let mut d = Document::new("p", "file");
    d.attachment = Some(BlobContent::from_bytes(bytes.clone(), "application/pdf"));
    store.create(&mut d).await.unwrap();
    let written = d.attachment.as_ref().unwrap();
    assert_eq!(written.len(), Some(bytes.len() as u64));
    assert_eq!(
        written.sha256().map(str::len),
        Some(64),
        "the hash is known after the write"
    );

    let got = store.get(("p", "file")).await.unwrap().unwrap();
    let content = got.attachment.clone().expect("a reference");
    assert_eq!(content.content_type(), Some("application/pdf"));
    assert_eq!(content.read_all().await.unwrap(), bytes, "streamed and checked");
    let chunks: Vec<Vec<u8>> = content.open().try_collect().await.unwrap();
    assert!(chunks.len() >= 2, "read lazily, in chunks");

    // A content taken from one entity and written into another gets its own blob.
    let mut other = Document::new("p", "copy");
    other.attachment = got.attachment.clone();
    store.create(&mut other).await.unwrap();
    let copy = store.get(("p", "copy")).await.unwrap().unwrap().attachment.unwrap();
    let (a, b) = (
        content.reference().unwrap().path.clone(),
        copy.reference().unwrap().path.clone(),
    );
    assert_ne!(a, b);
    assert!(b.contains("/copy/"), "{b}");
    // A blob gone since the read is an integrity error, never partial data.
    env.blobs
        .as_ref()
        .unwrap()
        .delete(crate::blob_options().container(), &a, BlobCondition::None)
        .await
        .unwrap();
    let err = content.read_all().await.unwrap_err();
    assert!(
        matches!(&err, Error::Integrity { reason, .. } if reason.contains("may have changed")),
        "{err}"
    );
    assert_eq!(copy.read_all().await.unwrap(), bytes, "the copy has its own blob");
    // An empty file round-trips.
    let mut empty = Document::new("p", "empty");
    empty.attachment = Some(BlobContent::from_bytes(Vec::new(), "text/plain"));
    store.create(&mut empty).await.unwrap();
    let got = store.get(("p", "empty")).await.unwrap().unwrap().attachment.unwrap();
    assert_eq!(got.read_all().await.unwrap(), Vec::<u8>::new());
}

pub async fn racing_writers_and_readers_never_mix_versions(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    let versions = [noise(700_000, 11), noise(900_000, 12)];
    let mut d = Document::new("p", "hot");
    d.body = versions[0].clone();
    store.create(&mut d).await.unwrap();
    let writer = {
        let (store, versions) = (store.clone(), versions.clone());
        tokio::spawn(async move {
            for i in 0..6 {
                let mut d = Document::new("p", "hot");
                d.body = versions[i % 2].clone();
                store.upsert(&mut d).await.expect("last writer wins");
            }
        })
    };
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let (store, versions) = (store.clone(), versions.clone());
            tokio::spawn(async move {
                for _ in 0..6 {
                    match store.get(("p", "hot")).await {
                        Ok(Some(d)) => assert!(d.body == versions[0] || d.body == versions[1], "a mixed value"),
                        Ok(None) => panic!("the row never disappears"),
                        Err(Error::Conflict { .. }) => {} // changed during each of its 5 attempts: nothing mixed
                        Err(e) => panic!("{e}"),
                    }
                }
            })
        })
        .collect();
    writer.await.unwrap();
    for r in readers {
        r.await.unwrap();
    }
}

fn blob_path(row: &Row, column: &str) -> String {
    let json = row
        .get(&format!("{column}__blob"))
        .and_then(Value::as_str)
        .expect("a blob reference");
    serde_json::from_str::<serde_json::Value>(json).unwrap()["path"]
        .as_str()
        .unwrap()
        .to_owned()
}

pub async fn released_blobs_are_cleaned_after_the_grace_and_orphans_swept(env: &Env) {
    let blobs = env.blobs.clone().expect("a blob backend");
    let container = crate::blob_options().container().to_owned();
    // With the default grace (5 minutes) a replaced blob is left for the sweep.
    let store = env.tables.store_in::<Document>(&env.table);
    let mut d = Document::new("p", "kept");
    d.body = noise(3_200_000, 20);
    store.create(&mut d).await.unwrap();
    let first = blob_path(&raw(env, "kept").await, "Body");
    d.body = noise(3_200_000, 21);
    store.update(&mut d).await.unwrap();
    let second = blob_path(&raw(env, "kept").await, "Body");
    assert_ne!(first, second);
    assert!(
        blobs.properties(&container, &first).await.unwrap().is_some(),
        "younger than the grace: kept"
    );

    // With no grace, a replace deletes the old blob once it is a second old (Last-Modified has 1 s resolution).
    let eager = crate::eager_tables(env).store_in::<Document>(&env.table);
    let mut e = Document::new("p", "eager");
    e.body = noise(3_200_000, 22);
    eager.create(&mut e).await.unwrap();
    let old = blob_path(&raw(env, "eager").await, "Body");
    tokio::time::sleep(std::time::Duration::from_millis(2_100)).await;
    e.body = noise(3_200_000, 23);
    eager.update(&mut e).await.unwrap();
    assert!(
        blobs.properties(&container, &old).await.unwrap().is_none(),
        "released and old enough: deleted"
    );

    // The sweep removes exactly the orphans: not referenced, old enough, of the offload shape.
    let foreign = format!("{}/p/kept/notes.txt", env.table);
    blobs
        .put(&container, &foreign, b"not ours".to_vec(), Default::default())
        .await
        .unwrap();
    let young = store
        .sweep_orphan_blobs("p", std::time::Duration::from_secs(3_600))
        .await
        .unwrap();
    assert_eq!(young.deleted, 0, "nothing is old enough");
    let report = store.sweep_orphan_blobs("p", std::time::Duration::ZERO).await.unwrap();
    assert_eq!(report.deleted, 1, "{report:?}");
    assert!(
        blobs.properties(&container, &first).await.unwrap().is_none(),
        "the orphan is gone"
    );
    assert!(
        blobs.properties(&container, &second).await.unwrap().is_some(),
        "the referenced blob stays"
    );
    assert!(
        blobs.properties(&container, &foreign).await.unwrap().is_some(),
        "a blob of another shape stays"
    );
    assert_eq!(store.get(("p", "kept")).await.unwrap().unwrap().body, d.body);
    // Table-wide: another partition's orphan.
    let mut q = Document::new("q", "x");
    q.body = noise(3_200_000, 24);
    store.create(&mut q).await.unwrap();
    let orphan = blob_path(&raw_in(env, "q", "x").await, "Body");
    env.backend()
        .execute(
            &env.table,
            WriteOp::Delete {
                partition_key: "q".into(),
                row_key: "x".into(),
                condition: unified_tables::backend::IfMatch::Any,
            },
        )
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    let all = store.sweep_all_orphan_blobs(std::time::Duration::ZERO).await.unwrap();
    assert!(all.deleted >= 1, "{all:?}");
    assert!(blobs.properties(&container, &orphan).await.unwrap().is_none());
}

async fn raw_in(env: &Env, pk: &str, rk: &str) -> Row {
    env.backend().get(&env.table, pk, rk).await.unwrap().expect("row")
}

pub async fn leftover_continuation_rows_are_never_returned_and_are_reclaimed(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    let mut d = Document::new("p", "doc");
    d.body = noise(1_500_000, 30);
    store.create(&mut d).await.unwrap();
    // Another writer deletes only the main row: its continuation rows are left over.
    env.backend()
        .execute(
            &env.table,
            WriteOp::Delete {
                partition_key: "p".into(),
                row_key: "doc".into(),
                condition: unified_tables::backend::IfMatch::Any,
            },
        )
        .await
        .unwrap();
    assert!(env.backend().get(&env.table, "p", "doc~0001").await.unwrap().is_some());
    assert!(store.get(("p", "doc")).await.unwrap().is_none());
    assert!(
        store.query(QueryOptions::partition("p")).await.unwrap().is_empty(),
        "leftovers are not entities"
    );
    assert_eq!(store.count(QueryOptions::partition("p")).await.unwrap(), 0);
    // A new write of the same key takes the leftover keys back.
    let mut again = Document::new("p", "doc");
    again.body = noise(1_500_000, 31);
    store.create(&mut again).await.expect("leftovers are reclaimed");
    assert_eq!(store.get(("p", "doc")).await.unwrap().unwrap().body, again.body);
    // A partition delete never separates a main row from its parts.
    store
        .create(&mut {
            let mut e = Document::new("p", "other");
            e.body = noise(1_200_000, 32);
            e
        })
        .await
        .unwrap();
    assert_eq!(store.delete_partition("p").await.unwrap(), 2);
    let left = crate::rows::all_rows(env, &env.table, &Default::default()).await;
    assert!(
        left.is_empty(),
        "{:?}",
        left.iter().map(|r| &r.row_key).collect::<Vec<_>>()
    );
}

pub async fn a_reader_is_spooled_once(env: &Env) {
    struct Once(std::io::Cursor<Vec<u8>>, bool);
    impl std::io::Read for Once {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.read(buf)?;
            if n == 0 {
                assert!(!self.1, "a forward-only reader is read to its end once");
                self.1 = true;
            }
            Ok(n)
        }
    }
    let bytes = noise(300_000, 40).into_bytes();
    let content = BlobContent::from_reader(Once(std::io::Cursor::new(bytes.clone()), false), "text/csv").unwrap();
    assert_eq!(content.len(), Some(300_000));
    let store = env.tables.store_in::<Document>(&env.table);
    // Two writes of the same content (a retry) store the same bytes.
    for rk in ["first", "second"] {
        let mut d = Document::new("p", rk);
        d.attachment = Some(content.clone());
        store.create(&mut d).await.unwrap();
        let got = store.get(("p", rk)).await.unwrap().unwrap().attachment.unwrap();
        assert_eq!(got.read_all().await.unwrap(), bytes, "{rk}");
        assert_eq!(got.content_type(), Some("text/csv"));
    }
}

pub async fn projections_of_large_values_read_them_whole(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    let mut d = Document::new("p", "doc");
    d.title = "T".into();
    d.body = noise(1_300_000, 50);
    store.create(&mut d).await.unwrap();
    let got = store
        .query(QueryOptions::partition("p").select(Document::projection(|c| [c.body.col()])))
        .await
        .unwrap();
    assert_eq!(got.len(), 1, "continuation rows are not entities, even in a projection");
    assert_eq!(got[0].body, d.body, "a selected large value comes back whole");
    let titles = store
        .query(QueryOptions::partition("p").select(Document::projection(|c| [c.title.col()])))
        .await
        .unwrap();
    assert_eq!(titles.len(), 1);
    assert_eq!(
        (titles[0].title.as_str(), titles[0].body.as_str()),
        ("T", ""),
        "unselected fields at their defaults"
    );
}

pub async fn batches_pack_whole_entities_into_transactions(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    store.ensure_created().await.unwrap();
    let docs: Vec<Document> = (0..30)
        .map(|i| {
            let mut d = Document::new("p", &format!("d{i:02}"));
            d.body = match i % 3 {
                0 => format!("small {i}"),
                1 => noise(40_000, i),  // split cells on the main row
                _ => noise(400_000, i), // continuation rows
            };
            d
        })
        .collect();
    env.reset_counts();
    assert_eq!(store.create_batch(&docs).await.unwrap(), 30);
    let c = env.counts();
    assert!(
        c.transactions + c.writes < 30,
        "whole entities share transactions: {c:?}"
    );
    for d in &docs {
        assert!(
            store.get(("p", d.rk.as_str())).await.unwrap().unwrap().same(d),
            "{}",
            d.rk
        );
    }
    // Upserts shrink every entity: their stale continuation rows go in the same transactions.
    let small: Vec<Document> = docs
        .iter()
        .map(|d| Document {
            body: "x".into(),
            ..d.clone()
        })
        .collect();
    assert_eq!(store.upsert_batch(&small).await.unwrap(), 30);
    let rows = crate::rows::all_rows(env, &env.table, &Default::default()).await;
    assert_eq!(rows.len(), 30, "only main rows are left");
    assert_eq!(store.count(QueryOptions::partition("p")).await.unwrap(), 30);
    // A repeated key is refused before anything is written; so is a continuation-shaped key.
    let twice = vec![Document::new("p", "again"), Document::new("p", "again")];
    assert!(matches!(
        store.create_batch(&twice).await,
        Err(Error::InvalidKey { .. })
    ));
    let shaped = vec![Document::new("p", "fine"), Document::new("p", "bad~0001")];
    assert!(matches!(
        store.create_batch(&shaped).await,
        Err(Error::InvalidKey { .. })
    ));
    assert!(
        !store.exists(("p", "fine")).await.unwrap(),
        "nothing of a refused batch is written"
    );
    // An existing key fails its transaction; earlier transactions stay committed.
    let mut clash: Vec<Document> = (0..3).map(|i| Document::new("q", &format!("c{i}"))).collect();
    clash.push(Document::new("p", "d00"));
    let err = store.create_batch(&clash).await.unwrap_err();
    assert!(
        matches!(&err, Error::BatchFailed { committed: 3, row_key, .. } if row_key == "d00"),
        "{err}"
    );
}

/// The refusal of a store of `Document` on a Cosmos DB for Table handle
/// without a blob account: `Error::Config` naming a field with a blob tier
/// and the ways out.
pub fn assert_blob_tier_refused(err: &Error) {
    assert!(
        matches!(err, Error::Config { message, .. }
            if message.contains("may store its value in a blob")
                && (message.contains("`body`") || message.contains("`notes`") || message.contains("`data`")
                    || message.contains("`lines`") || message.contains("`attachment`"))
                && message.contains("Tables::with_blobs")
                && message.contains("offload = \"never\"")),
        "{err}"
    );
}
