//! The operator's copy (`admin::copy`, what `unified-tables copy` runs)
//! from Table Storage to Cosmos DB for Table and back, in memory: a table of
//! a few hundred entities over several partitions, with values split on
//! their main row, on continuation rows and offloaded to blobs, and files,
//! arrives on the Cosmos profile (rows in no order, random page cuts, its
//! 2 MB transactions) with every entity once and the same values, its
//! export records the same entities, values and blobs as the source's,
//! fsck finds it clean, and it comes back to a fresh Table Storage table
//! the same. A row the Cosmos profile refuses (a RowKey over 255 bytes, a
//! column named `id`) stops the copy into it at that row, with an error
//! naming the key or the column.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use futures::TryStreamExt;
use serde_json::{Map, Value as Json};
use unified_tables::admin::{self, Admin, ArchiveManifest, ExportOptions, FsckOptions, ImportOptions, Tier};
use unified_tables::backend::Backend as _;
use unified_tables::service::ServiceProfile;
use unified_tables::{BlobContent, QueryOptions, Row, Value};
use unified_tables_tests::model::Document;
use unified_tables_tests::{cosmos_env, memory_env, mixed_text, noise, unique_table, Env};

/// The partitions of the copied table.
const PARTITIONS: [&str; 4] = ["a", "b", "c", "d"];
/// Small documents per partition.
const SMALL: usize = 70;

/// A fresh directory for one copy's export (removed by the test).
fn scratch(hint: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(unique_table(hint));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// The documents: `SMALL` small ones in each partition, and one of each
/// large tier: split on its main row (with a gzip list and binary data),
/// on continuation rows (a 1 MB body: under the Cosmos transaction budget
/// of 2 MB less 64 KiB, so split there too), offloaded to a blob (3.2 MB),
/// and files beside them.
fn documents() -> Vec<Document> {
    let mut out = Vec::new();
    for (p, partition) in PARTITIONS.iter().enumerate() {
        for i in 0..SMALL {
            let mut d = Document::new(partition, &format!("small{i:03}"));
            d.title = format!("document {i} of {partition}");
            d.body = mixed_text(40 + i, (p * 1000 + i) as u64);
            d.lines = vec![format!("line {i}"), "second".into()];
            out.push(d);
        }
    }
    let mut split = Document::new("a", "large-split");
    split.body = mixed_text(40_000, 1);
    split.notes = Some(noise(120_000, 2));
    split.data = noise(90_000, 3).into_bytes();
    split.lines = (0..5_000).map(|i| format!("line {i}")).collect();
    out.push(split);
    let mut rows = Document::new("b", "large-rows");
    rows.body = noise(1_000_000, 4);
    rows.local = mixed_text(30_000, 5);
    out.push(rows);
    let mut blob = Document::new("c", "large-blob");
    blob.body = noise(3_200_000, 6);
    blob.attachment = Some(BlobContent::from_bytes(
        noise(70_000, 7).into_bytes(),
        "application/pdf",
    ));
    out.push(blob);
    let mut file = Document::new("d", "large-file");
    file.notes = Some(noise(200_000, 8));
    file.attachment = Some(BlobContent::from_bytes(noise(150_000, 9).into_bytes(), "text/plain"));
    out.push(file);
    out
}

async fn file_bytes(content: &Option<BlobContent>) -> Option<Vec<u8>> {
    let content = content.as_ref()?;
    let chunks: Vec<Vec<u8>> = content.open().try_collect().await.expect("the file reads");
    Some(chunks.concat())
}

/// Every entity of `env`'s table by key, checking each key comes once.
async fn entities(env: &Env, table: &str) -> BTreeMap<(String, String), Document> {
    let store = env.tables.store_in::<Document>(table);
    let all = store.query(QueryOptions::all()).await.expect("the table reads");
    let n = all.len();
    let by_key: BTreeMap<_, _> = all.into_iter().map(|d| ((d.pk.clone(), d.rk.clone()), d)).collect();
    assert_eq!(by_key.len(), n, "{table}: every entity once");
    by_key
}

/// Checks `copied` holds exactly `expected`'s keys, with the same values and files.
async fn assert_same(side: &str, copied: &BTreeMap<(String, String), Document>, expected: &[Document]) {
    let keys: BTreeSet<_> = copied.keys().cloned().collect();
    let wanted: BTreeSet<_> = expected.iter().map(|d| (d.pk.clone(), d.rk.clone())).collect();
    assert_eq!(keys, wanted, "{side}: the same keys");
    for d in expected {
        let back = &copied[&(d.pk.clone(), d.rk.clone())];
        assert!(back.same(d), "{side}: {}/{}: the values differ", d.pk, d.rk);
        assert_eq!(
            file_bytes(&back.attachment).await,
            file_bytes(&d.attachment).await,
            "{side}: {}/{}: the file differs",
            d.pk,
            d.rk
        );
    }
}

/// What an export records of its table's content, whichever table and
/// service it was taken from: each line's properties, large values' tiers,
/// encodings and SHA-256, in file order, without the service's Timestamp
/// and the blob references' cells (blob paths name their table; the
/// blobs themselves are compared by the files `blobs/` holds, each named
/// by its SHA-256).
fn content(dir: &Path, manifest: &ArchiveManifest) -> Vec<Map<String, Json>> {
    let mut out = Vec::new();
    for file in &manifest.files {
        let text = std::fs::read_to_string(dir.join(&file.name)).expect("a data file");
        for line in text.lines().filter(|l| !l.is_empty()) {
            let mut obj: Map<String, Json> = serde_json::from_str(line).expect("a JSON line");
            obj.retain(|k, _| !k.starts_with("Timestamp") && !k.contains("__blob"));
            out.push(obj);
        }
    }
    out
}

/// The names of the export's blob files (their SHA-256).
fn blob_files(dir: &Path) -> BTreeSet<String> {
    match std::fs::read_dir(dir.join("blobs")) {
        Ok(entries) => entries
            .map(|e| e.expect("a blob file").file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with('.'))
            .collect(),
        Err(_) => BTreeSet::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_copied_to_cosmos_and_back_is_the_same_table() {
    let storage = memory_env("tocosmos");
    let cosmos = cosmos_env("tocosmos");
    let back = memory_env("fromcosmos");
    assert_eq!(cosmos.profile(), ServiceProfile::CosmosTable);
    assert_eq!(storage.profile(), ServiceProfile::TableStorage);

    let docs = documents();
    let source = storage.tables.store_in::<Document>(&storage.table);
    for p in PARTITIONS {
        let small: Vec<Document> = docs
            .iter()
            .filter(|d| d.pk == p && d.rk.starts_with("small"))
            .cloned()
            .collect();
        source.create_batch(&small).await.unwrap();
    }
    for d in docs.iter().filter(|d| d.rk.starts_with("large")) {
        source.create(&mut d.clone()).await.unwrap();
    }
    let from = Admin::new(&storage.tables, &storage.table).unwrap();
    let stats = from.stats(None, None).await.unwrap();
    assert_eq!(stats.entities, docs.len() as u64);
    assert_eq!(stats.partitions, PARTITIONS.len() as u64);
    for tier in [Tier::Split, Tier::Continuation, Tier::Blob] {
        assert!(
            stats.large.contains_key(&tier),
            "the source holds {tier:?} values: {stats:?}"
        );
    }
    assert!(stats.continuation_rows > 0 && stats.blobs >= 3, "{stats:?}");

    // Table Storage -> Cosmos DB for Table.
    let to_cosmos = scratch("tocosmos");
    let into = Admin::new(&cosmos.tables, &cosmos.table).unwrap();
    let imported = admin::copy(
        &from,
        &into,
        &to_cosmos,
        ExportOptions::default(),
        ImportOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!((imported.written, imported.skipped), (docs.len() as u64, 0));
    assert!(!imported.interrupted);
    assert_same("cosmos", &entities(&cosmos, &cosmos.table).await, &docs).await;
    let on_cosmos = into.stats(None, None).await.unwrap();
    assert_eq!(on_cosmos.entities, docs.len() as u64);
    for tier in [Tier::Split, Tier::Continuation, Tier::Blob] {
        assert!(
            on_cosmos.large.contains_key(&tier),
            "the copy on Cosmos holds {tier:?} values: {on_cosmos:?}"
        );
    }
    assert!(on_cosmos.continuation_rows > 0, "{on_cosmos:?}");
    assert_eq!(on_cosmos.blobs, stats.blobs, "the copy on Cosmos has blobs of its own");
    let fsck = into.fsck(FsckOptions::default()).await.unwrap();
    assert!(fsck.is_clean(), "fsck on Cosmos: {:?}", fsck.findings);
    assert_eq!(fsck.entities, docs.len() as u64);

    // Cosmos DB for Table -> a fresh Table Storage table.
    let from_cosmos = scratch("fromcosmos");
    let home = Admin::new(&back.tables, &back.table).unwrap();
    let imported = admin::copy(
        &into,
        &home,
        &from_cosmos,
        ExportOptions::default(),
        ImportOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!((imported.written, imported.skipped), (docs.len() as u64, 0));
    assert_same("back on storage", &entities(&back, &back.table).await, &docs).await;
    assert!(home.fsck(FsckOptions::default()).await.unwrap().is_clean());
    let last = scratch("last");
    home.export(&last, ExportOptions::default()).await.unwrap();

    // The three exports record the same content: entities, rows of a
    // storage table, data, blobs; every data file's SHA-256 checks.
    let manifests: Vec<ArchiveManifest> = [&to_cosmos, &from_cosmos, &last]
        .iter()
        .map(|d| ArchiveManifest::read(d).unwrap())
        .collect();
    for (dir, m) in [&to_cosmos, &from_cosmos, &last].iter().zip(&manifests) {
        assert!(m.complete, "{}", dir.display());
        assert_eq!(m.entities, docs.len() as u64);
        assert_eq!(
            m.files.iter().map(|f| f.entities).sum::<u64>(),
            m.entities,
            "{}",
            dir.display()
        );
        for f in &m.files {
            assert_eq!(f.sha256.len(), 64, "{}: {}", dir.display(), f.name);
        }
    }
    assert_eq!(
        manifests[0].rows, manifests[2].rows,
        "the same rows on both storage tables"
    );
    assert_eq!(
        (manifests[1].blobs, manifests[1].blob_bytes),
        (manifests[0].blobs, manifests[0].blob_bytes)
    );
    assert_eq!(
        (manifests[2].blobs, manifests[2].blob_bytes),
        (manifests[0].blobs, manifests[0].blob_bytes)
    );
    let blobs = blob_files(&to_cosmos);
    assert_eq!(blobs.len() as u64, manifests[0].blobs);
    assert_eq!(blob_files(&from_cosmos), blobs, "the same blob digests from Cosmos");
    assert_eq!(blob_files(&last), blobs, "the same blob digests back on storage");
    let source_content = content(&to_cosmos, &manifests[0]);
    assert_eq!(source_content.len(), docs.len());
    assert!(
        source_content
            .iter()
            .any(|e| e.keys().any(|k| k.ends_with(admin::LARGE_ANNOTATION))),
        "the large values' digests are recorded"
    );
    assert!(
        content(&from_cosmos, &manifests[1]) == source_content,
        "the export of the Cosmos table records what the source's does"
    );
    assert!(
        content(&last, &manifests[2]) == source_content,
        "the export of the table back on storage records what the source's does"
    );

    for dir in [to_cosmos, from_cosmos, last] {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Copies a storage table holding `bad` (in partition `m`, between good
/// entities in partitions `a` and `z`) into a fresh Cosmos table: the
/// error, and the keys of the rows the Cosmos table then holds.
async fn copy_with(bad: Row) -> (unified_tables::Error, BTreeSet<(String, String)>) {
    let storage = memory_env("refused");
    let cosmos = cosmos_env("refused");
    let store = storage.tables.store_in::<Document>(&storage.table);
    for p in ["a", "z"] {
        let good: Vec<Document> = (0..150).map(|i| Document::new(p, &format!("good{i:03}"))).collect();
        store.create_batch(&good).await.unwrap();
    }
    storage.put_raw(bad).await;
    let dir = scratch("refused");
    let from = Admin::new(&storage.tables, &storage.table).unwrap();
    let into = Admin::new(&cosmos.tables, &cosmos.table).unwrap();
    let err = admin::copy(&from, &into, &dir, ExportOptions::default(), ImportOptions::default())
        .await
        .expect_err("the copy into Cosmos is refused");
    let _ = std::fs::remove_dir_all(&dir);
    // What the Cosmos table holds, read raw (a refused copy may not even have created it).
    let mut keys = BTreeSet::new();
    if let Ok(mut page) = cosmos.backend().query(&cosmos.table, &Default::default(), None).await {
        loop {
            keys.extend(page.rows.iter().map(|r| (r.partition_key.clone(), r.row_key.clone())));
            let Some(next) = page.next.take() else { break };
            page = cosmos
                .backend()
                .query(&cosmos.table, &Default::default(), Some(&next))
                .await
                .expect("the next page");
        }
    }
    (err, keys)
}

/// The refused row and every entity after it in the export are not in the
/// Cosmos table. (The import checks a row against the target's service as
/// it plans it: the transactions of the partitions before it are written.)
fn assert_stopped_at_the_refused_row(keys: &BTreeSet<(String, String)>, bad: (&str, &str), text: &str) {
    assert!(
        !keys.contains(&(bad.0.to_owned(), bad.1.to_owned())),
        "the refused row is not written ({text})"
    );
    assert!(
        keys.iter().all(|(p, _)| p.as_str() < bad.0),
        "nothing after the refused row is written ({text}): {:?}",
        keys.iter()
            .filter(|(p, _)| p.as_str() >= bad.0)
            .take(3)
            .collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_key_over_255_bytes_stops_the_copy_into_cosmos_at_that_row() {
    let key = format!("long{}", "k".repeat(300));
    let bad = Row::new("m", key.clone()).with("Title", Value::String("too long a key for Cosmos".into()));
    let (err, keys) = copy_with(bad).await;
    let text = err.to_string();
    assert!(
        text.contains("RowKey") && text.contains("255") && text.contains(&key[..40]),
        "the error names the row and the limit: {text}"
    );
    assert_stopped_at_the_refused_row(&keys, ("m", &key), &text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_column_named_id_stops_the_copy_into_cosmos_at_that_row() {
    let bad = Row::new("m", "with-id")
        .with("Title", Value::String("a column Cosmos keeps for itself".into()))
        .with("id", Value::String("42".into()));
    let (err, keys) = copy_with(bad).await;
    let text = err.to_string();
    assert!(
        text.contains("`id`") && text.contains("Cosmos") && text.contains("with-id"),
        "the error names the column and the row: {text}"
    );
    assert_stopped_at_the_refused_row(&keys, ("m", "with-id"), &text);
}
