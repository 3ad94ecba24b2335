//! Large values at their edges: continuation keys addressed directly, damaged
//! rows, references shared between types, files written back after a release.

use futures::TryStreamExt;
use unified_tables::backend::{Backend, IfMatch, WriteOp};
use unified_tables::{BlobContent, Error, Value};

use crate::model::Document;
use crate::rows::{part_count, raw};
use crate::{mixed_text, noise, Env};

/// `get` and `exists` of a continuation row's key return the continuation row
/// as an entity; reads must never return continuation rows.
pub async fn a_point_read_never_returns_a_continuation_row(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    let mut d = Document::new("p", "rows");
    // 1.9 MB escaped: continuation rows (within a fifth of the transaction
    // budget on Cosmos DB for Table, whose transactions hold 2 MB: 1.5 MB).
    let chars = 500_000.min(env.profile().transaction_body_budget() / 5);
    d.body = mixed_text(chars, 1);
    store.create(&mut d).await.unwrap();
    assert!(part_count(&raw(env, "rows").await) >= 1);
    let got = store.get(("p", "rows~0001")).await;
    assert!(
        matches!(got, Ok(None)),
        "a continuation row came back as an entity: {:?}",
        got.map(|o| o.map(|e| e.rk))
    );
    assert!(
        !store.exists(("p", "rows~0001")).await.unwrap(),
        "exists of a continuation row"
    );
}

/// `delete` of a continuation row's key deletes that row and damages the entity
/// it belongs to (it should be a no-op).
pub async fn deleting_a_continuation_key_leaves_the_entity_whole(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    let mut d = Document::new("p", "rows");
    d.body = noise(1_200_000, 2);
    store.create(&mut d).await.unwrap();
    let deleted = store.delete(("p", "rows~0001")).await;
    let read = store.get(("p", "rows")).await;
    assert!(
        matches!(&read, Ok(Some(e)) if e.body == d.body),
        "delete({:?}) of a continuation key damaged the entity: {:?}",
        deleted,
        read.map(|o| o.map(|e| e.body.len()))
    );
}

/// A split value whose manifest cell is gone reads back as an empty value
/// instead of `Error::Integrity`.
pub async fn a_split_value_without_its_manifest_is_integrity(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    let mut d = Document::new("p", "split");
    d.body = noise(100_000, 3);
    store.create(&mut d).await.unwrap();
    let mut row = raw(env, "split").await;
    assert!(row.get("Body__c0").is_some());
    row.take("Body__chunks");
    env.put_raw(row).await;
    let got = store.get(("p", "split")).await;
    assert!(
        matches!(&got, Err(Error::Integrity { .. })),
        "damaged split value read as {:?}",
        got.map(|o| o.map(|e| e.body.len()))
    );
}

/// Shrinking an entity one of whose continuation rows is already gone retries
/// the 404 of the stale-row delete as a lost race and ends in `Conflict`.
pub async fn shrinking_an_entity_with_a_missing_continuation_row_succeeds(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    let mut d = Document::new("p", "shrink");
    d.body = noise(1_200_000, 4);
    store.create(&mut d).await.unwrap();
    let parts = part_count(&raw(env, "shrink").await);
    assert!(parts >= 1);
    env.backend()
        .execute(
            &env.table,
            WriteOp::Delete {
                partition_key: "p".into(),
                row_key: format!("shrink~{parts:04}"),
                condition: IfMatch::Any,
            },
        )
        .await
        .unwrap();
    let mut small = Document::new("p", "shrink");
    small.body = "small".into();
    let r = store.upsert(&mut small).await;
    assert!(r.is_ok(), "upsert over a damaged entity: {r:?}");
    assert_eq!(store.get(("p", "shrink")).await.unwrap().unwrap().body, "small");
}

/// The sweep collects references only from the store's own columns, so it
/// deletes a blob another entity type on the same table still references.
pub async fn the_sweep_keeps_blobs_referenced_by_another_type_on_the_table(env: &Env) {
    #[derive(unified_tables::TableEntity, Debug, Clone)]
    struct Memo {
        #[table(partition_key)]
        pk: String,
        #[table(row_key)]
        rk: String,
        #[blob_content]
        scan: Option<BlobContent>,
    }
    let memos = env.tables.store_in::<Memo>(&env.table);
    let docs = env.tables.store_in::<Document>(&env.table);
    let bytes = b"a scanned memo".to_vec();
    let mut m = Memo {
        pk: "p".into(),
        rk: "m".into(),
        scan: Some(BlobContent::from_bytes(bytes.clone(), "image/png")),
    };
    memos.create(&mut m).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    let report = docs.sweep_orphan_blobs("p", std::time::Duration::ZERO).await.unwrap();
    let got = memos.get(("p", "m")).await.unwrap().unwrap();
    let read = got.scan.unwrap().read_all().await;
    assert!(
        matches!(&read, Ok(b) if *b == bytes),
        "the sweep ({report:?}) deleted a referenced blob: {read:?}"
    );
}

/// A file reference whose length is 0 while the blob holds bytes panics in
/// `BlobContent::open` (u64 subtraction overflow) instead of `Error::Integrity`.
pub async fn a_damaged_file_reference_is_integrity_not_a_panic(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    let mut d = Document::new("p", "file");
    d.attachment = Some(BlobContent::from_bytes(b"0123456789".to_vec(), "text/plain"));
    store.create(&mut d).await.unwrap();
    let mut row = raw(env, "file").await;
    let json = row.get("Attachment__blob").and_then(Value::as_str).unwrap().to_owned();
    let mut r: serde_json::Value = serde_json::from_str(&json).unwrap();
    r["length"] = 0.into();
    row.insert("Attachment__blob", Value::String(r.to_string()));
    env.put_raw(row).await;
    let got = store.get(("p", "file")).await.unwrap().unwrap();
    let content = got.attachment.unwrap();
    let handle = tokio::spawn(async move { content.open().try_collect::<Vec<Vec<u8>>>().await });
    let outcome = handle.await;
    assert!(
        matches!(&outcome, Ok(Err(Error::Integrity { .. }))),
        "open() of a damaged reference: {:?}",
        outcome.map(|r| r.map(|parts| parts.concat().len()))
    );
}

/// Writing back an entity whose file blob a later replace released stores a
/// row whose file can never be read (the own-path reuse neither checks nor
/// touches the blob).
pub async fn writing_back_a_released_file_does_not_store_a_dangling_reference(env: &Env) {
    let blobs = env.blobs.clone().expect("a blob backend");
    let container = crate::blob_options().container().to_owned();
    let eager = crate::eager_tables(env).store_in::<Document>(&env.table);
    let mut d = Document::new("p", "f");
    d.attachment = Some(BlobContent::from_bytes(b"first file".to_vec(), "text/plain"));
    eager.create(&mut d).await.unwrap();
    let mut stale = eager.get(("p", "f")).await.unwrap().unwrap();
    let first = stale.attachment.as_ref().unwrap().reference().unwrap().path.clone();
    tokio::time::sleep(std::time::Duration::from_millis(2_100)).await;
    d.attachment = Some(BlobContent::from_bytes(b"second file".to_vec(), "text/plain"));
    eager.update(&mut d).await.unwrap();
    assert!(
        blobs.properties(&container, &first).await.unwrap().is_none(),
        "precondition: the first file was released"
    );
    let written = eager.upsert(&mut stale).await;
    if written.is_ok() {
        let got = eager.get(("p", "f")).await.unwrap().unwrap();
        let read = got.attachment.unwrap().read_all().await;
        assert!(
            read.is_ok(),
            "the upsert succeeded and stored a reference to a deleted blob: {read:?}"
        );
    }
}

/// A main row whose part count was damaged (raised past what one transaction
/// holds, or to `i32::MAX`) is still deleted, with its real continuation rows,
/// in a bounded number of requests.
pub async fn an_entity_with_a_damaged_part_count_stays_deletable(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    for (rk, parts) in [("d150", 150), ("dmax", i32::MAX)] {
        let mut d = Document::new("p", rk);
        d.body = noise(1_200_000, 3);
        store.create(&mut d).await.unwrap();
        let mut row = raw(env, rk).await;
        let real = part_count(&row);
        assert!(real >= 1, "{rk}: the value has continuation rows");
        row.insert("_SplitParts", Value::Int32(parts));
        env.put_raw(row).await;
        env.reset_counts();
        assert!(store.delete(("p", rk)).await.unwrap(), "{rk}: deleted");
        assert!(
            env.counts().entity_requests() <= 8,
            "{rk}: a bounded number of requests, not one per claimed part: {:?}",
            env.counts()
        );
        assert!(store.get(("p", rk)).await.unwrap().is_none(), "{rk}");
        for index in 1..=real {
            let key = format!("{rk}~{index:04}");
            assert!(
                env.backend().get(&env.table, "p", &key).await.unwrap().is_none(),
                "{rk}: continuation row {key} deleted too"
            );
        }
    }
}

/// A reference cell that is not text is damage, never an empty value.
pub async fn a_reference_cell_that_is_not_text_is_integrity(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    let mut d = Document::new("p", "ref");
    store.create(&mut d).await.unwrap();
    let row = raw(env, "ref").await.with("Body__blob", Value::Int32(7));
    env.put_raw(row).await;
    let err = store.get(("p", "ref")).await.unwrap_err();
    assert!(
        matches!(&err, Error::Integrity { column, .. } if column == "Body"),
        "{err}"
    );
}

/// A value that would go to a blob whose name the service refuses (long
/// keys) is refused before anything is uploaded or written.
pub async fn a_blob_name_over_the_service_limit_is_refused_before_writing(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    let pk = "k".repeat(1000);
    let mut d = Document::new(&pk, "r");
    d.body = noise(3_200_000, 5);
    let err = store.create(&mut d).await.unwrap_err();
    assert!(
        matches!(
            &err,
            Error::InvalidKey {
                which: unified_tables::KeyKind::PartitionKey,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("blob"), "{err}");
    assert!(env.backend().get(&env.table, &pk, "r").await.unwrap().is_none());
}

/// A type that does not mark a field `split` meets that column stored as a
/// large value on continuation rows or in a blob: the read fails naming the cell and
/// the remedy, never returning an empty value that a save would write back.
pub async fn a_large_value_under_an_unsplit_field_fails_the_read(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    let unsplit = env.tables.store_in::<crate::model::UnsplitDocument>(&env.table);
    // (A value split on the main row alone is read by any reader: see `plain_readers`.)
    for (rk, chars, cell) in [("rows", 1_500_000, "Body__chunks"), ("blob", 3_200_000, "Body__blob")] {
        let mut d = Document::new("p", rk);
        d.body = noise(chars, 9);
        store.create(&mut d).await.unwrap();
        assert!(raw(env, rk).await.get(cell).is_some(), "{rk}: stored as {cell}");
        let err = unsplit.get(("p", rk)).await.unwrap_err();
        assert!(
            matches!(&err, Error::Decode { column, .. } if column == cell),
            "{rk}: {err}"
        );
        assert!(err.to_string().contains("split"), "{rk}: names the remedy: {err}");
        // The stored value is untouched.
        let again = store.get(("p", rk)).await.unwrap().unwrap();
        assert_eq!(again.body, d.body, "{rk}");
    }
}
