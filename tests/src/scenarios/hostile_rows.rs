//! Rows written by other programs, read through derived types: each damaged
//! or foreign cell is a typed error naming its column, never a panic and
//! never a default the row did not hold.

use unified_tables::backend::blob::PutOptions;
use unified_tables::backend::{Backend, UpdateMode, WriteOp};
use unified_tables::layout::{blob_cell, chunk_cell, chunks_cell, enc_cell, len_cell, sha256_cell, BlobRef};
use unified_tables::{sha256_hex, DateTime, ETag, Error, Guid, Row, TableEntity, Value};

use crate::model::Document;
use crate::{blob_options, Env};

/// An entity with a date, a GUID and a JSON-stored list.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct Typed {
    #[table(partition_key)]
    pub pk: String,
    #[table(row_key)]
    pub rk: String,
    pub when: DateTime,
    pub id: Guid,
    pub tags: Vec<String>,
    #[table(etag)]
    pub etag: Option<ETag>,
}

async fn put(env: &Env, row: Row) {
    env.backend().execute(&env.table, WriteOp::Insert(row)).await.unwrap();
}

fn decode_error_on(err: &Error, wanted: &str) -> bool {
    matches!(err, Error::Decode { column, .. } if column.starts_with(wanted))
}

pub async fn foreign_cells_are_typed_errors_naming_the_column(env: &Env) {
    let store = env.tables.store_in::<Typed>(&env.table);
    store.ensure_created().await.unwrap();
    let good = || {
        Row::new("p", "x")
            .with("When", Value::DateTime(DateTime::from_unix_nanos(0)))
            .with("Id", Value::String("a8098c1a-f86e-11da-bd1a-00112444be1e".into()))
    };
    let cases: [(&str, &str, Value); 4] = [
        (
            "date",
            "When",
            Value::String("2024-01-01T00:00:00+99999999999:00".into()),
        ),
        (
            "guid",
            "Id",
            Value::String("+a8098c1a-f86e-11da-bd1a-00112444be1e".into()),
        ),
        (
            "guid-signs",
            "Id",
            Value::String("a8098c1a-+86e-11da-bd1a-00112444be1e".into()),
        ),
        ("list", "Tags", Value::Int32(7)),
    ];
    for (rk, column, cell) in cases {
        let mut row = good().with(column, cell);
        row.row_key = rk.into();
        put(env, row).await;
        let err = store.get(("p", rk)).await.unwrap_err();
        assert!(decode_error_on(&err, column), "{rk}: {err}");
    }
}

pub async fn a_utf16_value_with_an_odd_length_is_integrity(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    store.ensure_created().await.unwrap();
    let bytes = vec![0x41, 0x00, 0x42];
    let row = Row::new("p", "odd")
        .with("Title", Value::String("t".into()))
        .with("Body__chunks", Value::Int32(1))
        .with("Body__c0", Value::Binary(bytes.clone()))
        .with("Body__enc", Value::String("utf16le".into()))
        .with("Body__sha256", Value::String(unified_tables::sha256_hex(&bytes)))
        .with("Body__len", Value::Int64(3));
    put(env, row).await;
    let err = store.get(("p", "odd")).await.unwrap_err();
    assert!(
        matches!(&err, Error::Integrity { column, .. } if column == "Body"),
        "{err}"
    );
}

/// A small gzip value whose hash matches but which unpacks past the bound
/// the crate documents is refused as damage, not unpacked without limit.
pub async fn a_gzip_value_that_unpacks_without_bound_is_integrity(env: &Env) {
    use std::io::Write as _;
    let store = env.tables.store_in::<Document>(&env.table);
    store.ensure_created().await.unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..257 {
        gz.write_all(&zeros).unwrap();
    }
    let packed = gz.finish().unwrap();
    let mut row = Row::new("p", "bomb")
        .with("Title", Value::String("t".into()))
        .with("Notes__enc", Value::String("gzip".into()))
        .with("Notes__sha256", Value::String(unified_tables::sha256_hex(&packed)))
        .with("Notes__len", Value::Int64(packed.len() as i64));
    let chunks: Vec<&[u8]> = packed.chunks(64_000).collect();
    row.insert("Notes__chunks", Value::Int32(chunks.len() as i32));
    for (i, c) in chunks.iter().enumerate() {
        row.insert(format!("Notes__c{i}"), Value::Binary(c.to_vec()));
    }
    put(env, row).await;
    let err = store.get(("p", "bomb")).await.unwrap_err();
    assert!(
        matches!(&err, Error::Integrity { column, .. } if column == "Notes"),
        "{err}"
    );
}

/// A file's reference cell that is not text is a decode error naming the
/// cell, never a file-less entity that a save would write back without it.
pub async fn a_file_reference_that_is_not_text_is_a_decode_error(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    store.ensure_created().await.unwrap();
    let row = Row::new("p", "file")
        .with("Title", Value::String("t".into()))
        .with("Attachment__blob", Value::Int32(7));
    put(env, row).await;
    let err = store.get(("p", "file")).await.unwrap_err();
    assert!(decode_error_on(&err, "Attachment__blob"), "{err}");
}

/// A row of another writer holding `Body` as the split cells `chunks`, stored under `encoding`.
fn split_body(rk: &str, encoding: &str, chunks: &[&[u8]]) -> Row {
    let stored = chunks.concat();
    let mut row = Row::new("p", rk)
        .with("Title", Value::String("t".into()))
        .with(chunks_cell("Body"), Value::Int32(chunks.len() as i32))
        .with(enc_cell("Body"), Value::String(encoding.into()))
        .with(sha256_cell("Body"), Value::String(sha256_hex(&stored)))
        .with(len_cell("Body"), Value::Int64(stored.len() as i64));
    for (i, chunk) in chunks.iter().enumerate() {
        row.insert(chunk_cell("Body", i), Value::Binary(chunk.to_vec()));
    }
    row
}

fn gzipped(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

fn not_utf8_on_body(err: &Error) -> bool {
    matches!(err, Error::Integrity { column, reason } if column == "Body" && reason.contains("UTF-8"))
}

/// A text column whose stored bytes (whole, hash and length right) are
/// not UTF-8 is refused as damage naming the column, wherever the bad byte
/// lies: in split chunks (a character cut between two chunks and never
/// completed, a byte no character starts with, a value ending inside a
/// character), in gzip unpacked in steps, and in a blob.
pub async fn stored_text_that_is_not_utf8_is_integrity(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    store.ensure_created().await.unwrap();
    let long_then_bad = [vec![b'a'; 300_000], b"\xE6\x97x".to_vec()].concat();
    let packed = [gzipped(&long_then_bad), gzipped(b"ends inside \xF0\x9F\x8E")];
    let cases: [(&str, &str, Vec<&[u8]>); 5] = [
        ("cut", "binary", vec![b"caf\xC3", b"x"]),
        ("bad-byte", "text", vec![b"fine", b"\xFF"]),
        ("cut-at-end", "binary", vec![b"fine \xE6\x97"]),
        ("gzip", "gzip", packed[0].chunks(64_000).collect()),
        ("gzip-cut-at-end", "gzip", vec![&packed[1]]),
    ];
    for (rk, encoding, chunks) in cases {
        put(env, split_body(rk, encoding, &chunks)).await;
        let err = store.get(("p", rk)).await.unwrap_err();
        assert!(not_utf8_on_body(&err), "{rk}: {err}");
    }
    // A character cut between two chunks and completed in the next is text.
    put(env, split_body("whole", "binary", &[b"caf\xC3", b"\xA9"])).await;
    assert_eq!(store.get(("p", "whole")).await.unwrap().unwrap().body, "café");

    // A value in a blob: stored by the library, then its bytes replaced by another writer's.
    let blobs = env.blobs.clone().expect("a blob backend");
    let options = blob_options().with_threshold_bytes(0).unwrap();
    let store = env
        .tables
        .clone()
        .with_blobs(blobs.clone(), options.clone())
        .store_in::<Document>(&env.table);
    let mut doc = Document::new("p", "blob");
    doc.body = "é".repeat(40_000);
    store.create(&mut doc).await.unwrap();
    let mut row = env
        .backend()
        .get(&env.table, "p", "blob")
        .await
        .unwrap()
        .expect("the row");
    let cell = blob_cell("Body");
    let json = row
        .get(&cell)
        .and_then(Value::as_str)
        .expect("the body went to a blob")
        .to_owned();
    let mut reference = BlobRef::parse(&cell, &json).unwrap();
    let bad = [doc.body.as_bytes(), b"\xC3("].concat();
    blobs
        .put(options.container(), &reference.path, bad.clone(), PutOptions::default())
        .await
        .unwrap();
    reference.sha256 = sha256_hex(&bad);
    reference.length = bad.len() as u64;
    row.insert(cell, Value::String(reference.to_cell()));
    row.etag = None;
    let replace = WriteOp::Upsert {
        row,
        mode: UpdateMode::Replace,
    };
    env.backend().execute(&env.table, replace).await.unwrap();
    let err = store.get(("p", "blob")).await.unwrap_err();
    assert!(not_utf8_on_body(&err), "blob: {err}");
}
