//! `#[alias]` on large values and files: every stored form of the old
//! column reads into the renamed field, and the next write moves it.

use unified_tables::backend::{Backend, WriteOp};
use unified_tables::{BlobContent, Row, Value};

use crate::model::{OldDocument, RenamedDocument};
use crate::rows::raw;
use crate::{mixed_text, noise, Env};

fn old_columns(row: &Row) -> Vec<&str> {
    row.properties
        .keys()
        .map(unified_tables::ColumnName::as_str)
        .filter(|k| k.starts_with("Old"))
        .collect()
}

pub async fn aliases_read_large_values_in_every_form_and_writes_move_them(env: &Env) {
    let old = env.tables.store_in::<OldDocument>(&env.table);
    let new = env.tables.store_in::<RenamedDocument>(&env.table);
    // (row key, characters of the text value, the form the old name takes)
    // Text of mixed 1- to 4-byte characters for the `mixed-` keys, ASCII otherwise.
    let cases: [(&str, usize, &str); 7] = [
        ("inline", 1_000, "OldBody"),
        ("split", 40_000, "OldBody__chunks"),
        ("rows", 1_200_000, "_SplitParts"),
        ("blob", 4_000_000, "OldBody__blob"),
        ("mixed-inline", 1_000, "OldBody"),
        ("mixed-split", 40_000, "OldBody__chunks"),
        ("mixed-rows", 500_000, "_SplitParts"),
    ];
    for (rk, chars, form) in cases {
        let text = |chars: usize, seed: u64| match rk.starts_with("mixed") {
            true => mixed_text(chars, seed),
            false => noise(chars, seed),
        };
        let body = text(chars, chars as u64);
        let lines = vec![text(chars.min(50_000), 7), "b".into()];
        let mut d = OldDocument {
            pk: "p".into(),
            rk: rk.into(),
            old_body: body.clone(),
            old_lines: lines.clone(),
            old_file: Some(BlobContent::from_bytes(rk.as_bytes().to_vec(), "text/plain")),
        };
        old.create(&mut d).await.unwrap_or_else(|e| panic!("{rk}: {e}"));
        assert!(raw(env, rk).await.get(form).is_some(), "{rk}: stored as {form}");

        let mut got = new
            .get(("p", rk))
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("{rk}: read"));
        assert_eq!(got.body, body, "{rk}: the aliased value reads whole");
        assert_eq!(got.lines, lines, "{rk}: the aliased JSON value reads whole");
        let file = got.file.clone().expect("the aliased file");
        assert_eq!(
            file.read_all().await.unwrap(),
            rk.as_bytes(),
            "{rk}: the aliased file opens"
        );

        // The next write stores under the new names and removes every old cell and row.
        got.body.push('!');
        new.update(&mut got).await.unwrap_or_else(|e| panic!("{rk}: {e}"));
        let row = raw(env, rk).await;
        assert!(
            old_columns(&row).is_empty(),
            "{rk}: old cells left: {:?}",
            old_columns(&row)
        );
        assert!(row.get("File__blob").is_some(), "{rk}: the file moves to its new name");
        let again = new.get(("p", rk)).await.unwrap().unwrap();
        assert_eq!(again.body, format!("{body}!"), "{rk}");
        assert_eq!(again.lines, lines, "{rk}");
        assert_eq!(again.file.unwrap().read_all().await.unwrap(), rk.as_bytes(), "{rk}");
    }
    // No continuation row of the old layout is left behind.
    let parts = env.backend().get(&env.table, "p", "rows~0001").await.unwrap();
    let main = raw(env, "rows").await;
    let declared = match main.get("_SplitParts") {
        Some(Value::Int32(n)) => *n,
        _ => 0,
    };
    assert!(declared >= 1 || parts.is_none(), "rows~0001 left without an owner");
}

pub async fn an_aliased_json_value_reads_from_a_gzip_cell(env: &Env) {
    use base64::Engine as _;
    use std::io::Write as _;
    let new = env.tables.store_in::<RenamedDocument>(&env.table);
    let lines = vec!["x".repeat(10), "y".into()];
    let json = serde_json::to_string(&lines).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(json.as_bytes()).unwrap();
    let packed = base64::engine::general_purpose::STANDARD.encode(gz.finish().unwrap());
    new.ensure_created().await.unwrap();
    let row = Row::new("p", "gz")
        .with("Body", Value::String("b".into()))
        .with("OldLines__GZip", Value::String(packed));
    env.backend().execute(&env.table, WriteOp::Insert(row)).await.unwrap();
    let got = new.get(("p", "gz")).await.unwrap().unwrap();
    assert_eq!(got.lines, lines);
}
