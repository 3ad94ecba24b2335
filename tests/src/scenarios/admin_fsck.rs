//! `Admin::fsck` finds each kind of planted damage, and its repair does
//! only what it promises: leftover continuation rows and orphan blobs
//! older than the grace go; a damaged entity's rows and blobs stay; a blob
//! written while the check runs is never taken for an old orphan.

use std::time::Duration;

use futures::TryStreamExt;
use unified_tables::admin::{Admin, Damage, Finding, FsckOptions};
use unified_tables::backend::blob::{BlobBackend, BlobCondition, PutOptions};
use unified_tables::backend::{Backend, IfMatch, UpdateMode, WriteOp};
use unified_tables::{BlobContent, Row, Tables, Value};

use crate::gate::{GateBackend, Point};
use crate::model::Document;
use crate::{blob_options, eager_tables, noise, Env};

async fn raw(env: &Env, rk: &str) -> Row {
    env.backend().get(&env.table, "p", rk).await.unwrap().expect("row")
}

async fn put(env: &Env, row: Row) {
    let op = WriteOp::Upsert {
        row,
        mode: UpdateMode::Replace,
    };
    env.backend().execute(&env.table, op).await.unwrap();
}

fn blob_path(row: &Row, cell: &str) -> String {
    let json: serde_json::Value = serde_json::from_str(row.get(cell).and_then(Value::as_str).unwrap()).unwrap();
    json["path"].as_str().unwrap().to_owned()
}

fn damage_of<'f>(findings: &'f [Finding], rk: &str) -> &'f [Damage] {
    findings
        .iter()
        .find_map(|f| match f {
            Finding::Damaged { row_key, damage, .. } if row_key == rk => Some(damage.as_slice()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no damage found for {rk}: {findings:#?}"))
}

pub async fn fsck_finds_each_kind_of_planted_damage_and_repairs_only_what_is_safe(env: &Env) {
    let tables = eager_tables(env);
    let docs = tables.store_in::<Document>(&env.table);
    let blobs = env.blobs.as_ref().expect("a blob backend");
    let container = blob_options().container().to_owned();
    let make = |rk: &'static str, body: String| {
        let mut d = Document::new("p", rk);
        d.body = body;
        d
    };
    for (rk, size) in [
        ("fine", 10),
        ("chunk", 100_000),
        ("extra", 100_000),
        ("manifest", 100_000),
        ("changed", 100_000),
        ("cont", 1_300_000),
        ("dangling", 3_200_000),
        ("blobchanged", 3_200_000),
    ] {
        docs.create(&mut make(rk, noise(size, size as u64))).await.unwrap();
    }
    let admin = Admin::new(&tables, &env.table).unwrap();
    assert!(admin.fsck(FsckOptions::default()).await.unwrap().is_clean());

    // Plant one kind of damage per entity.
    let mut row = raw(env, "chunk").await;
    row.properties.remove("Body__c1");
    put(env, row).await;
    let mut row = raw(env, "extra").await;
    row.insert("Body__c7", Value::String("x".into()));
    put(env, row).await;
    let mut row = raw(env, "manifest").await;
    row.insert("Body__enc", Value::Int32(5));
    put(env, row).await;
    let mut row = raw(env, "changed").await;
    row.insert("Body__c0", Value::String(noise(32_000, 99)));
    put(env, row).await;
    let delete = |rk: &str| WriteOp::Delete {
        partition_key: "p".into(),
        row_key: rk.into(),
        condition: IfMatch::Any,
    };
    env.backend().execute(&env.table, delete("cont~0001")).await.unwrap();
    let dangling = blob_path(&raw(env, "dangling").await, "Body__blob");
    blobs.delete(&container, &dangling, BlobCondition::None).await.unwrap();
    let changed = blob_path(&raw(env, "blobchanged").await, "Body__blob");
    blobs
        .put(&container, &changed, b"other bytes".to_vec(), PutOptions::default())
        .await
        .unwrap();
    // A leftover continuation row, and an orphan blob.
    let leftover = Row::new("p", "gone~0001")
        .with("_SplitOf", Value::String("gone".into()))
        .with("_SplitIndex", Value::Int32(1))
        .with("Body__c1", Value::String("x".into()));
    put(env, leftover).await;
    let orphan = format!("{}/p/gone/Body/{}", env.table, "a".repeat(64));
    blobs
        .put(&container, &orphan, b"orphan".to_vec(), PutOptions::default())
        .await
        .unwrap();

    let before: Vec<Row> = {
        let mut rows = Vec::new();
        for rk in [
            "chunk",
            "extra",
            "manifest",
            "changed",
            "cont",
            "dangling",
            "blobchanged",
        ] {
            rows.push(raw(env, rk).await);
        }
        rows
    };
    let report = admin.fsck(FsckOptions::default()).await.unwrap();
    let f = &report.findings;
    assert!(
        matches!(damage_of(f, "chunk"), [Damage::MissingChunk { index: 1, .. }]),
        "{f:#?}"
    );
    assert!(
        matches!(damage_of(f, "extra"), [Damage::ExtraChunk { index: 7, .. }]),
        "{f:#?}"
    );
    assert!(
        matches!(damage_of(f, "manifest"), [Damage::MalformedManifest { .. }]),
        "{f:#?}"
    );
    assert!(
        matches!(damage_of(f, "changed"), [Damage::ChangedValue { .. }]),
        "{f:#?}"
    );
    assert!(
        matches!(damage_of(f, "cont"), [Damage::MissingContinuationRow { index: 1 }]),
        "{f:#?}"
    );
    assert!(
        matches!(damage_of(f, "dangling"), [Damage::DanglingBlob { .. }]),
        "{f:#?}"
    );
    assert!(
        matches!(damage_of(f, "blobchanged"), [Damage::ChangedBlob { .. }]),
        "{f:#?}"
    );
    assert!(f.iter().any(|x| matches!(x, Finding::Leftover { row_key, owner, repaired: false, .. } if row_key == "gone~0001" && owner == "gone")));
    assert!(f
        .iter()
        .any(|x| matches!(x, Finding::OrphanBlob { path, repaired: false, .. } if *path == orphan)));
    assert!(!f
        .iter()
        .any(|x| matches!(x, Finding::Damaged { row_key, .. } if row_key == "fine")));
    assert_eq!(f.len(), 9, "{f:#?}");

    // The repair: the orphan is older than the (zero) grace once the blob clock moves.
    env.pass_blob_service_time(Duration::from_secs(2)).await;
    // What the sweep would delete: the orphan only (a changed blob is still referenced).
    let listed = admin.orphan_blobs(None, Duration::from_secs(1)).await.unwrap();
    assert_eq!(
        listed.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>(),
        [orphan.as_str()]
    );
    let repair = FsckOptions {
        repair: true,
        ..FsckOptions::default()
    };
    let repaired = admin.fsck(repair).await.unwrap();
    assert_eq!(repaired.repaired, 2, "{:#?}", repaired.findings);
    assert!(env.backend().get(&env.table, "p", "gone~0001").await.unwrap().is_none());
    assert!(blobs.properties(&container, &orphan).await.unwrap().is_none());
    // Damaged entities are untouched: their rows and their (changed) blob.
    for (i, rk) in [
        "chunk",
        "extra",
        "manifest",
        "changed",
        "cont",
        "dangling",
        "blobchanged",
    ]
    .iter()
    .enumerate()
    {
        let now = raw(env, rk).await;
        assert_eq!(now.etag, before[i].etag, "{rk} was not rewritten");
    }
    assert!(blobs.properties(&container, &changed).await.unwrap().is_some());
    let after = admin.fsck(FsckOptions::default()).await.unwrap();
    assert_eq!(
        after.findings.len(),
        7,
        "only the damaged entities remain: {:#?}",
        after.findings
    );
    assert!(after.findings.iter().all(|x| matches!(x, Finding::Damaged { .. })));
}

pub async fn fsck_of_one_partition_reads_only_it(env: &Env) {
    let docs = env.tables.store_in::<Document>(&env.table);
    for pk in ["a", "b"] {
        let mut d = Document::new(pk, "x");
        d.body = noise(1_300_000, 3);
        docs.create(&mut d).await.unwrap();
    }
    let mut row = env.backend().get(&env.table, "b", "x").await.unwrap().unwrap();
    row.properties.remove("Body__c0");
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
    let admin = Admin::new(&env.tables, &env.table).unwrap();
    let only_a = FsckOptions {
        partition: Some("a".into()),
        ..FsckOptions::default()
    };
    let report = admin.fsck(only_a).await.unwrap();
    assert!(report.is_clean(), "{:#?}", report.findings);
    assert_eq!(report.entities, 1);
    let all = admin.fsck(FsckOptions::default()).await.unwrap();
    assert_eq!(all.findings.len(), 1, "{:#?}", all.findings);
}

/// The orphan cutoff of a repair is taken before the scan starts: a blob
/// written while the scan runs (here: the entity's new file, given after
/// the scan read the entity's old version) is younger than the cutoff
/// however long the scan takes, so the repair never deletes it.
pub async fn fsck_repair_keeps_a_blob_written_during_the_scan(env: &Env) {
    let grace = Duration::from_secs(1);
    let blobs = env.blobs.clone().expect("a blob backend");
    let container = blob_options().container().to_owned();
    let docs = env.tables.store_in::<Document>(&env.table);
    let mut doc = Document::new("p", "doc");
    doc.attachment = Some(BlobContent::from_bytes(b"the first file".to_vec(), "text/plain"));
    docs.create(&mut doc).await.unwrap();
    let old = blob_path(&raw(env, "doc").await, "Attachment__blob");

    // The fsck's table requests go through a gate; its first page is held once read.
    let gate = GateBackend::new(env.backend().clone());
    let gated = Tables::with_backend(gate.clone())
        .without_cache()
        .with_blobs(blobs.clone(), blob_options().with_cleanup_grace(grace));
    let admin = Admin::new(&gated, &env.table).unwrap();
    let hold = gate.arm(Point::AfterQuery);
    let repair = FsckOptions {
        partition: Some("p".into()),
        repair: true,
        ..FsckOptions::default()
    };
    let fsck = tokio::spawn(async move { admin.fsck(repair).await });
    hold.reached.await.expect("the scan's first page is read");

    // Meanwhile the entity gets a new file, and more than the grace passes.
    let mut doc = docs.get(("p", "doc")).await.unwrap().expect("the document");
    doc.attachment = Some(BlobContent::from_bytes(b"the second file".to_vec(), "text/plain"));
    docs.update(&mut doc).await.unwrap();
    let new = blob_path(&raw(env, "doc").await, "Attachment__blob");
    assert_ne!(old, new, "a new file is a new blob");
    env.pass_blob_service_time(grace * 3).await;
    drop(hold.release);

    let report = fsck.await.unwrap().unwrap();
    assert!(
        !report
            .findings
            .iter()
            .any(|f| matches!(f, Finding::OrphanBlob { path, repaired: true, .. } if *path == new)),
        "the live blob was deleted: {:#?}",
        report.findings
    );
    assert!(
        blobs.properties(&container, &new).await.unwrap().is_some(),
        "the live blob is kept"
    );
    let back = docs.get(("p", "doc")).await.unwrap().expect("the document");
    let file: Vec<Vec<u8>> = back.attachment.expect("a file").open().try_collect().await.unwrap();
    assert_eq!(file.concat(), b"the second file");
}
