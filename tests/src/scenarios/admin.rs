//! The operator's toolbox (`unified_tables::admin`): export then import
//! round-trips every field form and tier, compared through typed stores;
//! the copy owns its blobs; re-running an import does not write twice; a
//! throttled or lost answer does not stop an import.

use futures::TryStreamExt;
use unified_tables::admin::{Admin, ExportOptions, ImportMode, ImportOptions, Read, Tier};
use unified_tables::backend::faulty::{FaultTarget, FaultTiming, FaultyBackend};
use unified_tables::{BlobContent, Error, QueryOptions, Tables, Value};

use crate::model::{Document, Everything};
use crate::{blob_options, mixed_text, noise, unique_table, Env};

/// A fresh directory for one export (removed by the caller).
pub fn scratch_dir(hint: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(unique_table(hint));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// Documents with a value in every tier: inline, split on the main row,
/// on continuation rows, offloaded to a blob, and a file.
fn documents() -> Vec<Document> {
    let mut out = Vec::new();
    let mut small = Document::new("p", "small");
    small.body = "short".into();
    small.lines = vec!["a".into(), "b".into()];
    out.push(small);
    let mut split = Document::new("p", "split");
    split.body = mixed_text(40_000, 1);
    split.notes = Some(noise(120_000, 2));
    split.data = noise(90_000, 3).into_bytes();
    split.lines = (0..5_000).map(|i| format!("line {i}")).collect();
    out.push(split);
    let mut rows = Document::new("p", "rows");
    rows.body = noise(1_300_000, 4);
    rows.local = mixed_text(30_000, 5);
    out.push(rows);
    let mut blob = Document::new("q", "blob");
    blob.body = noise(3_200_000, 6);
    blob.attachment = Some(BlobContent::from_bytes(
        noise(70_000, 7).into_bytes(),
        "application/pdf",
    ));
    out.push(blob);
    out
}

async fn file_bytes(content: &Option<BlobContent>) -> Option<Vec<u8>> {
    let content = content.as_ref()?;
    let chunks: Vec<Vec<u8>> = content.open().try_collect().await.expect("the file reads");
    Some(chunks.concat())
}

pub async fn export_then_import_round_trips_every_field_form_and_tier(env: &Env) {
    let docs = env.tables.store_in::<Document>(&env.table);
    for mut d in documents() {
        docs.create(&mut d).await.unwrap();
    }
    let everything = env.tables.store_in::<Everything>(&env.table);
    let mut sample = Everything::sample("r", "every");
    everything.create(&mut sample).await.unwrap();

    let source = Admin::new(&env.tables, &env.table).unwrap();
    // The logical entity: values whole, their tiers named.
    let Some(Read::Whole(rows)) = source.get("p", "rows").await.unwrap() else {
        panic!("the entity reads whole")
    };
    assert_eq!(
        rows.row.get("Body").and_then(Value::as_str).map(str::len),
        Some(1_300_000)
    );
    assert!(rows.raw.len() > 1, "its continuation rows are listed raw");
    let tier = |c: &str| rows.large.iter().find(|v| v.column == c).map(|v| v.tier);
    assert_eq!(tier("Body"), Some(Tier::Continuation));

    let stats = source.stats(None, None).await.unwrap();
    assert_eq!((stats.entities, stats.partitions), (5, 3));
    assert!(stats.large.contains_key(&Tier::Split) && stats.large.contains_key(&Tier::Blob));
    assert_eq!(stats.blobs, 2, "the offloaded body and the file");

    let dir = scratch_dir("export");
    let exported = source.export(&dir, ExportOptions::default()).await.unwrap();
    assert_eq!(exported.entities, 5);
    assert!(exported.manifest.complete && exported.manifest.blobs == 2);
    let line = std::fs::read_to_string(dir.join(&exported.manifest.files[0].name)).unwrap();
    assert!(
        line.contains(r#""Big@odata.type":"Edm.Int64""#),
        "the service's annotations"
    );

    let target_table = env.another_table();
    let target = Admin::new(&env.tables, &target_table).unwrap();
    let imported = target.import(&dir, ImportOptions::default()).await.unwrap();
    assert_eq!((imported.written, imported.skipped), (5, 0));

    let copies = env.tables.store_in::<Document>(&target_table);
    for d in documents() {
        let back = copies.get(("p", d.rk.as_str())).await;
        let back = match back.unwrap() {
            Some(b) => b,
            None => copies.get(("q", d.rk.as_str())).await.unwrap().expect("imported"),
        };
        assert!(back.same(&d), "{}: the values differ", d.rk);
        assert_eq!(
            file_bytes(&back.attachment).await,
            file_bytes(&d.attachment).await,
            "{}",
            d.rk
        );
        if let Some(file) = &back.attachment {
            let path = &file.reference().unwrap().path;
            assert!(
                path.starts_with(&format!("{target_table}/")),
                "the copy owns its blob: {path}"
            );
        }
    }
    let every = env.tables.store_in::<Everything>(&target_table);
    let back = every.get(("r", "every")).await.unwrap().expect("imported");
    assert!(back.same_values(&sample));
    // The copy's own blobs: deleting the source's leaves the copy whole.
    docs.delete(("q", "blob")).await.unwrap();
    let blob = copies.get(("q", "blob")).await.unwrap().expect("the copy");
    assert_eq!(blob.body.len(), 3_200_000);

    // Importing again: `insert` refuses (and keeps its position), `skip` skips
    // every entity, `replace` writes them again.
    let again = target.import(&dir, ImportOptions::default()).await.unwrap_err();
    assert!(matches!(&again, Error::Transaction { .. }), "{again}");
    let unfinished = target.import(&dir, ImportOptions::default()).await.unwrap_err();
    assert!(
        matches!(&unfinished, Error::Archive { reason, .. } if reason.contains("resume")),
        "{unfinished}"
    );
    let skip = ImportOptions {
        mode: ImportMode::Skip,
        resume: true,
        ..ImportOptions::default()
    };
    let skipped = target.import(&dir, skip).await.unwrap();
    assert_eq!((skipped.written, skipped.skipped), (0, 5));
    let replace = ImportOptions {
        mode: ImportMode::Replace,
        ..ImportOptions::default()
    };
    let replaced = target.import(&dir, replace).await.unwrap();
    assert_eq!(replaced.written, 5);
    assert!(target.fsck(Default::default()).await.unwrap().is_clean());
    let _ = std::fs::remove_dir_all(&dir);
}

pub async fn a_damaged_export_is_refused_before_anything_is_written(env: &Env) {
    let docs = env.tables.store_in::<Document>(&env.table);
    let mut d = Document::new("p", "one");
    d.body = noise(100_000, 11);
    docs.create(&mut d).await.unwrap();
    let source = Admin::new(&env.tables, &env.table).unwrap();
    let dir = scratch_dir("damaged");
    let exported = source.export(&dir, ExportOptions::default()).await.unwrap();
    // A second export into the same directory is refused; resume finds it complete.
    assert!(matches!(
        source.export(&dir, ExportOptions::default()).await,
        Err(Error::Archive { .. })
    ));
    let file = dir.join(&exported.manifest.files[0].name);
    let text = std::fs::read_to_string(&file).unwrap().replace("\"p\"", "\"x\"");
    std::fs::write(&file, text).unwrap();
    let target_table = env.another_table();
    let target = Admin::new(&env.tables, &target_table).unwrap();
    let err = target.import(&dir, ImportOptions::default()).await.unwrap_err();
    assert!(
        matches!(&err, Error::Archive { reason, .. } if reason.contains("SHA-256")),
        "{err}"
    );
    let stats = target.stats(None, None).await.unwrap();
    assert_eq!(stats.rows, 0, "nothing was written");
    let _ = std::fs::remove_dir_all(&dir);
}

/// An import's transactions are sent as the store sends its writes: one
/// refused as not processed (503 `ServerBusy`) is sent again after the
/// backoff, one whose answer was lost is settled by its write token, and
/// the import finishes with every entity written once.
pub async fn an_import_rides_out_a_throttled_and_a_lost_answer(env: &Env) {
    let docs = env.tables.store_in::<Document>(&env.table);
    let many: Vec<Document> = (0..250)
        .map(|i| {
            let mut d = Document::new("p", &format!("{i:04}"));
            d.body = mixed_text(200, i);
            d
        })
        .collect();
    docs.create_batch(&many).await.unwrap();
    let dir = scratch_dir("throttled");
    let source = Admin::new(&env.tables, &env.table).unwrap();
    source.export(&dir, ExportOptions::default()).await.unwrap();

    // The import's second transaction is refused as not processed; its next
    // attempt is applied and its answer lost.
    let faulty = FaultyBackend::new(env.backend().clone());
    let blobs = env.blobs.clone().expect("a blob backend");
    let tables = Tables::with_backend(faulty.clone())
        .without_cache()
        .with_blobs(blobs, blob_options());
    faulty.fail_after(FaultTarget::Transaction, 1, FaultTiming::Before, || {
        Error::service(503, "ServerBusy", "The server is busy.")
    });
    faulty.fail_next(FaultTarget::Transaction, FaultTiming::After, || {
        Error::transport("the answer was lost")
    });
    let target_table = env.another_table();
    let target = Admin::new(&tables, &target_table).unwrap();
    let imported = target.import(&dir, ImportOptions::default()).await.unwrap();
    assert_eq!(faulty.pending(), 0, "both faults fired");
    assert_eq!((imported.written, imported.skipped), (250, 0));
    let copies = env.tables.store_in::<Document>(&target_table);
    let back = copies.query(QueryOptions::partition("p")).await.unwrap();
    assert_eq!(back.len(), 250, "every entity once");
    assert!(
        back.iter().zip(&many).all(|(b, d)| b.same(d)),
        "the values are the same"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
