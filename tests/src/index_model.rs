//! The index as a model: every index row the entities of a table need,
//! rebuilt from the entities alone, compared with the index rows stored.

use std::collections::BTreeMap;

use unified_tables::backend::{Backend, QueryRequest};
use unified_tables::index::rows::{index_row, is_intent};
use unified_tables::index::IndexDef;
use unified_tables::layout::{is_index_key, is_index_row, SPLIT_OF};
use unified_tables::{Row, Value};

/// An index row as compared: its keys and its cells.
pub type IndexRows = BTreeMap<(String, String), BTreeMap<String, Value>>;

/// Every row of a table (all pages).
pub async fn all_rows(backend: &dyn Backend, table: &str) -> Vec<Row> {
    let request = QueryRequest {
        filter: None,
        select: None,
        top: Some(1000),
    };
    let mut out = Vec::new();
    let mut token = None;
    loop {
        let page = backend.query(table, &request, token.as_ref()).await.expect("a page");
        out.extend(page.rows);
        match page.next {
            Some(next) => token = Some(next),
            None => return out,
        }
    }
}

fn cells(row: &Row) -> BTreeMap<String, Value> {
    row.properties
        .iter()
        .filter(|(n, _)| {
            n.as_str() != "_IndexReservedAt" && n.as_str() != "_IndexConfirmed" && n.as_str() != "_WriteToken"
        })
        .map(|(n, v)| (n.to_string(), v.clone()))
        .collect()
}

/// The index rows `defs` need for the entities among `rows`.
pub fn expected(defs: &[IndexDef], rows: &[Row]) -> IndexRows {
    let mut out = IndexRows::new();
    for row in rows {
        let entity = row.get(SPLIT_OF).is_none()
            && !is_index_row(row)
            && !is_index_key(&row.row_key)
            && !is_index_key(&row.partition_key);
        if !entity {
            continue;
        }
        for def in defs {
            if let Some(ix) = index_row(def, row).expect("an index row") {
                out.insert((ix.partition_key.clone(), ix.row_key.clone()), cells(&ix));
            }
        }
    }
    out
}

/// The index rows stored among `rows` (intents left out).
pub fn stored(rows: &[Row]) -> IndexRows {
    rows.iter()
        .filter(|r| is_index_row(r) && !is_intent(r))
        .map(|r| ((r.partition_key.clone(), r.row_key.clone()), cells(r)))
        .collect()
}

/// The intents stored among `rows`.
pub fn intents(rows: &[Row]) -> usize {
    rows.iter().filter(|r| is_intent(r)).count()
}

/// Index rows that differ between the model and the table: missing,
/// stale (other cells) or extra, each named.
pub fn divergence(defs: &[IndexDef], rows: &[Row]) -> Vec<String> {
    let want = expected(defs, rows);
    let have = stored(rows);
    let mut out = Vec::new();
    for (k, cells) in &want {
        match have.get(k) {
            None => out.push(format!("missing {k:?}")),
            Some(c) if c != cells => out.push(format!("stale {k:?}: {c:?} instead of {cells:?}")),
            Some(_) => {}
        }
    }
    for k in have.keys().filter(|k| !want.contains_key(*k)) {
        out.push(format!("extra {k:?}"));
    }
    out
}

/// Panics naming every index row the table holds wrongly for `defs`.
pub async fn assert_indexes_match(backend: &dyn Backend, table: &str, defs: &[IndexDef], when: &str) {
    let rows = all_rows(backend, table).await;
    let wrong = divergence(defs, &rows);
    assert!(
        wrong.is_empty(),
        "{when}: the index rows differ from the entities:\n{}",
        wrong.join("\n")
    );
}
