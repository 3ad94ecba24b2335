//! Large values of non-ASCII text: carried intact in request bodies, and
//! planned within the body limits counted on the escaped JSON the service
//! reads (six bytes per non-ASCII UTF-16 unit).

use unified_tables::backend::{Backend, WriteOp};
use unified_tables::{Error, Row, Tables, Value};

use crate::model::Document;
use crate::rows::{part_count, raw};
use crate::{cyrillic_text, emoji_text, mixed_text, Env};

/// Twenty entities of mixed 1- to 4-byte text, written and read back at
/// once: every character comes back as written (a storage emulator that
/// reads raw UTF-8 bodies in pieces once stored U+FFFD for characters cut
/// between two pieces, and the entity then read as `Error::Integrity`).
pub async fn mixed_text_in_large_bodies_reads_back_unchanged(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    let mut written = Vec::new();
    for i in 0..20u64 {
        let mut d = Document::new("p", &format!("mixed{i:02}"));
        d.title = mixed_text(20_000, 1_000 + i);
        d.body = mixed_text(150_000, 2_000 + i);
        store
            .upsert(&mut d)
            .await
            .unwrap_or_else(|e| panic!("mixed{i:02}: {e}"));
        written.push(d);
    }
    for d in &written {
        let got = store
            .get(("p", d.rk.as_str()))
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", d.rk))
            .unwrap_or_else(|| panic!("{}: missing", d.rk));
        assert!(got.title == d.title, "{}: the plain cell came back changed", d.rk);
        assert!(got.body == d.body, "{}: the split value came back changed", d.rk);
    }
}

/// Text whose UTF-8 form fit one transaction but whose escaped form does
/// not is offloaded, or refused before anything is sent when it cannot be;
/// text whose escaped form fits stays in continuation rows.
pub async fn mostly_non_ascii_values_are_planned_on_their_escaped_size(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    store.ensure_created().await.unwrap();
    // 3.0 MB of UTF-8 (under the 3 MiB offload threshold and the 4 MiB
    // transaction), 9 MB escaped: offloaded.
    let mut cyr = Document::new("p", "cyrillic");
    cyr.body = cyrillic_text(1_500_000, 1);
    // 2.8 MB of UTF-8, 8.4 MB escaped: offloaded.
    let mut emoji = Document::new("p", "emoji");
    emoji.body = emoji_text(700_000, 2);
    for d in [&mut cyr, &mut emoji] {
        store.create(d).await.unwrap_or_else(|e| panic!("{}: {e}", d.rk));
        let row = raw(env, &d.rk).await;
        assert!(row.get("Body__blob").is_some(), "{}: offloaded", d.rk);
        assert_eq!(part_count(&row), -1, "{}: no continuation rows", d.rk);
        let got = store.get(("p", d.rk.as_str())).await.unwrap().unwrap();
        assert!(got.same(d), "{}: the value came back changed", d.rk);
    }
    // 3.0 MB escaped: continuation rows, each within the per-row body budget
    // (on Cosmos DB for Table, whose transactions hold 2 MB, as much of its
    // budget: 1.4 MB escaped, over one entity).
    let mut rows = Document::new("p", "rows");
    rows.body = cyrillic_text(crate::rows::scaled_to_budget(env, 500_000), 3);
    let mut astral = Document::new("p", "astral");
    astral.body = emoji_text(crate::rows::scaled_to_budget(env, 250_000), 4);
    let least_parts = if env.profile().transaction_body_budget() > 3_000_000 {
        3
    } else {
        1
    };
    for d in [&mut rows, &mut astral] {
        store.create(d).await.unwrap_or_else(|e| panic!("{}: {e}", d.rk));
        let row = raw(env, &d.rk).await;
        assert!(row.get("Body__blob").is_none(), "{}: kept in the table", d.rk);
        assert!(
            part_count(&row) >= least_parts,
            "{}: {} continuation rows",
            d.rk,
            part_count(&row)
        );
        let got = store.get(("p", d.rk.as_str())).await.unwrap().unwrap();
        assert!(got.same(d), "{}: the value came back changed", d.rk);
    }

    // Where the value cannot be offloaded, the write is refused before sending.
    env.reset_counts();
    let mut never = Document::new("p", "never");
    never.local = cyrillic_text(1_500_000, 5);
    let err = store.create(&mut never).await.unwrap_err();
    assert!(
        matches!(&err, Error::OversizedValue { column, .. } if column == "Local"),
        "{err}"
    );
    let plain = Tables::with_backend(env.backend().clone()).store_in::<Document>(&env.table);
    let mut no_blobs = Document::new("p", "noblobs");
    no_blobs.body = emoji_text(700_000, 6);
    let err = plain.create(&mut no_blobs).await.unwrap_err();
    if env.profile().has_blobs() {
        assert!(
            matches!(&err, Error::OversizedValue { column, .. } if column == "Body"),
            "{err}"
        );
    } else {
        // Cosmos DB for Table keeps no blobs: the store of a handle without a
        // blob account refuses the type, naming the field and the fix.
        super::large::assert_blob_tier_refused(&err);
    }
    assert_eq!(env.counts().entity_requests(), 0, "nothing was sent");
}

/// A transaction is measured as the service reads it: 30 rows of 30,000
/// Cyrillic characters are 1.8 MB of UTF-8 but 5.4 MB of escaped JSON, over
/// the 4 MiB request limit, on both backends.
pub async fn a_transaction_is_measured_on_its_escaped_body(env: &Env) {
    env.backend().create_table(&env.table).await.unwrap();
    let cell = cyrillic_text(30_000, 7);
    let ops: Vec<WriteOp> = (0..30)
        .map(|i| WriteOp::Insert(Row::new("p", format!("r{i:02}")).with("Text", Value::String(cell.clone()))))
        .collect();
    let Err(err) = env.backend().transaction(&env.table, ops).await else {
        panic!("a 5.4 MB body was accepted");
    };
    assert_eq!(err.service_code().map(|(status, _)| status), Some(413), "{err:?}");
    assert!(
        env.backend().get(&env.table, "p", "r00").await.unwrap().is_none(),
        "nothing stored"
    );
    // Ten such rows (1.8 MB escaped) are one transaction.
    let ops: Vec<WriteOp> = (0..10)
        .map(|i| WriteOp::Insert(Row::new("p", format!("r{i:02}")).with("Text", Value::String(cell.clone()))))
        .collect();
    env.backend().transaction(&env.table, ops).await.unwrap();
    let back = env.backend().get(&env.table, "p", "r09").await.unwrap().unwrap();
    assert_eq!(back.get("Text"), Some(&Value::String(cell)));
}
