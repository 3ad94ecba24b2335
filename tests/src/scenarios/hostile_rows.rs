//! Rows written by other programs, read through derived types: each damaged
//! or foreign cell is a typed error naming its column, never a panic and
//! never a default the row did not hold.

use unified_tables::backend::{Backend, WriteOp};
use unified_tables::{DateTime, ETag, Error, Guid, Row, TableEntity, Value};

use crate::model::Document;
use crate::Env;

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
