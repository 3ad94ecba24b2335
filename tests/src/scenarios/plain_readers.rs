//! Split cells are reassembled by any reader: a type whose fields are not
//! `split` reads a value split on the main row (every encoding), checked
//! against its hash; a value on continuation rows stays an error naming the
//! column and the remedy; a write back follows the oversized-cell policy;
//! and a manifest that lies about its chunks is damage for a split-aware type.

use unified_tables::layout::{chunk_cell, chunks_cell, enc_cell, len_cell, sha256_cell};
use unified_tables::{sha256_hex, Error, QueryOptions, Row, Value};

use crate::model::{Document, PlainDocument};
use crate::rows::{put_back, raw};
use crate::{noise, Env};

/// A row holding `text` as a split value `Body` stored as UTF-16LE (as the
/// .NET library may store text), in two chunks.
fn utf16_row(rk: &str, text: &str) -> Row {
    let stored: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
    let half = (stored.len() / 2) & !1;
    Row::new("p", rk)
        .with("Title", Value::String("utf16".into()))
        .with(chunks_cell("Body"), Value::Int32(2))
        .with(chunk_cell("Body", 0), Value::Binary(stored[..half].to_vec()))
        .with(chunk_cell("Body", 1), Value::Binary(stored[half..].to_vec()))
        .with(enc_cell("Body"), Value::String("utf16le".into()))
        .with(sha256_cell("Body"), Value::String(sha256_hex(&stored)))
        .with(len_cell("Body"), Value::Int64(stored.len() as i64))
}

pub async fn a_plain_field_reads_a_value_split_on_the_main_row(env: &Env) {
    let split = env.tables.store_in::<Document>(&env.table);
    let plain = env.tables.store_in::<PlainDocument>(&env.table);
    // text, gzip and binary, each split on the main row (over one cell, under one row).
    let mut d = Document::new("p", "main");
    d.body = noise(40_000, 1);
    d.notes = Some(noise(90_000, 2));
    d.data = noise(100_000, 3).into_bytes();
    split.create(&mut d).await.unwrap();
    let row = raw(env, "main").await;
    for column in ["Body", "Notes", "Data"] {
        assert!(row.get(&chunks_cell(column)).is_some(), "{column} is split");
    }
    assert_eq!(row.get(&enc_cell("Notes")), Some(&Value::String("gzip".into())));
    let got = plain.get(("p", "main")).await.unwrap().expect("the row");
    assert_eq!(got.body, d.body, "text");
    assert_eq!(got.notes, d.notes, "gzip");
    assert_eq!(got.data, d.data, "binary");
    // UTF-16LE, as another writer of the format stores text.
    let text = noise(30_000, 4);
    put_back(env, utf16_row("utf16", &text)).await;
    assert_eq!(plain.get(("p", "utf16")).await.unwrap().unwrap().body, text);
    // A listing of the partition reads them all, not failing on one.
    let all = plain.query(QueryOptions::partition("p")).await.unwrap();
    assert_eq!(all.len(), 2, "{:?}", all.iter().map(|d| &d.rk).collect::<Vec<_>>());
    // The hash is checked: a changed chunk is damage, for the plain reader too.
    let mut row = raw(env, "main").await;
    if let Some(Value::String(s)) = row.properties.get_mut(&chunk_cell("Body", 1)) {
        s.replace_range(0..1, if s.starts_with('A') { "B" } else { "A" });
    }
    put_back(env, row).await;
    let err = plain.get(("p", "main")).await.unwrap_err();
    assert!(
        matches!(&err, Error::Integrity { column, .. } if column == "Body"),
        "{err}"
    );
}

pub async fn a_plain_field_refuses_a_value_on_continuation_rows_or_an_incomplete_group(env: &Env) {
    let split = env.tables.store_in::<Document>(&env.table);
    let plain = env.tables.store_in::<PlainDocument>(&env.table);
    let mut d = Document::new("p", "rows");
    d.body = noise(1_500_000, 5);
    split.create(&mut d).await.unwrap();
    let err = plain.get(("p", "rows")).await.unwrap_err();
    assert!(
        matches!(&err, Error::Decode { column, .. } if column == "Body__chunks"),
        "{err}"
    );
    assert!(err.to_string().contains("split"), "names the remedy: {err}");
    // A group whose count is not the chunks present is not taken as a split value.
    let mut d = Document::new("p", "short");
    d.body = noise(100_000, 6);
    split.create(&mut d).await.unwrap();
    let mut row = raw(env, "short").await;
    row.insert(chunks_cell("Body"), Value::Int32(2));
    put_back(env, row).await;
    let err = plain.get(("p", "short")).await.unwrap_err();
    assert!(matches!(&err, Error::Decode { .. }), "{err}");
}

pub async fn a_plain_reader_writing_a_split_value_back_follows_the_oversized_cell_policy(env: &Env) {
    let split = env.tables.store_in::<Document>(&env.table);
    let plain = env.tables.store_in::<PlainDocument>(&env.table);
    let mut d = Document::new("p", "back");
    d.body = noise(40_000, 7);
    split.create(&mut d).await.unwrap();
    let before = raw(env, "back").await;
    let mut got = plain.get(("p", "back")).await.unwrap().unwrap();
    got.title = "changed".into();
    // The value is over one cell: the default policy refuses it, and nothing is stored.
    let err = plain.update(&mut got).await.unwrap_err();
    assert!(
        matches!(&err, Error::OversizedValue { column, .. } if column.starts_with("Body")),
        "{err}"
    );
    let after = raw(env, "back").await;
    assert_eq!(after.etag, before.etag, "nothing was written");
    assert_eq!(split.get(("p", "back")).await.unwrap().unwrap().body, d.body);
}

pub async fn a_manifest_that_lies_about_its_chunks_is_damage(env: &Env) {
    let split = env.tables.store_in::<Document>(&env.table);
    for (rk, chars) in [("main", 100_000), ("rows", 1_500_000)] {
        let mut d = Document::new("p", rk);
        d.body = noise(chars, 8);
        split.create(&mut d).await.unwrap();
        let row = raw(env, rk).await;
        let Some(Value::Int32(count)) = row.get(&chunks_cell("Body")).cloned() else {
            panic!("{rk}: a chunk count");
        };
        for lie in [count - 1, count + 1] {
            let mut row = raw(env, rk).await;
            row.insert(chunks_cell("Body"), Value::Int32(lie));
            put_back(env, row).await;
            let err = split.get(("p", rk)).await.unwrap_err();
            assert!(
                matches!(&err, Error::Integrity { column, .. } if column == "Body"),
                "{rk}, count {lie} of {count}: {err}"
            );
        }
    }
}
