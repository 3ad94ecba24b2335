//! The floors under the index figures: the same requests the store makes
//! for an indexed write, a lookup and a build, made raw through the backend
//! (the cells the store writes, built by hand), so each figure shows what
//! the backend itself charges beside what the library adds.

use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use unified_tables::backend::{PageToken, QueryRequest, UpdateMode, WriteOp};
use unified_tables::layout::{
    index_key_prefix, INDEX_OF, INDEX_ON, INDEX_PREFIX, INDEX_PREFIX_END, INDEX_ROW, INDEX_VALUE_END,
};
use unified_tables::query::{CmpOp, Filter};
use unified_tables::service::next_prefix;
use unified_tables::{Row, Tables, Value};

use crate::common::{fresh_table, Failure};
use crate::index::{PARTITION, WANTED};

/// The floor under the indexed create: `n` raw two-row transactions (an
/// entity's row and its index row, the cells the store writes) against `n` raw
/// inserts of the entity's row alone, through the backend without the store.
pub(crate) async fn raw_writes(db: &Tables, n: usize) -> Result<(Duration, Duration), Failure> {
    let table = fresh_table("IndexFloor");
    db.backend().create_table(&table).await?;
    let row = |rk: String, label: &str| {
        let mut row = Row::new(PARTITION, rk);
        row.insert("Value", Value::Int64(7));
        row.insert("Label", Value::String(label.to_owned()));
        row
    };
    let started = Instant::now();
    for i in 0..n {
        db.backend()
            .execute(&table, WriteOp::Insert(row(format!("a{i:07}"), "x")))
            .await?;
    }
    let single = started.elapsed();
    let started = Instant::now();
    for i in 0..n {
        let entity = row(format!("b{i:07}"), "x");
        let index = raw_index_row(&entity).ok_or("an index row")?;
        let ops = vec![WriteOp::Insert(entity), WriteOp::Insert(index)];
        db.backend().transaction(&table, ops).await?;
    }
    let pair = started.elapsed();
    db.backend().delete_table(&table).await?;
    Ok((pair, single))
}

/// Entities only, as a plain reader asks: rows outside the index rows' keys.
pub(crate) fn entities_only() -> Filter {
    let text = |s: &str| Value::String(s.to_owned());
    Filter::cmp("RowKey", CmpOp::Lt, text(INDEX_PREFIX)).or(Filter::cmp("RowKey", CmpOp::Ge, text(INDEX_PREFIX_END)))
}

/// Every row of `request`, page by page, raw.
pub(crate) async fn raw_query(db: &Tables, table: &str, request: &QueryRequest) -> Result<Vec<Row>, Failure> {
    let mut out = Vec::new();
    let mut token: Option<PageToken> = None;
    loop {
        let page = db.backend().query(table, request, token.as_ref()).await?;
        out.extend(page.rows);
        match page.next {
            Some(t) => token = Some(t),
            None => return Ok(out),
        }
    }
}

/// The lookup's requests made raw: the range of the index rows of
/// [`WANTED`], then a point read of each entity, 16 at a time.
pub(crate) async fn raw_lookup(db: &Tables, table: &str, partition: &str) -> Result<Vec<Row>, Failure> {
    let text = |s: &str| Value::String(s.to_owned());
    let start = format!("{}{WANTED}{INDEX_VALUE_END}", index_key_prefix("label"));
    let end = next_prefix(&start).ok_or("an index range has an end")?;
    let request = QueryRequest {
        filter: Some(
            Filter::eq("PartitionKey", text(partition))
                .and(Filter::cmp("RowKey", CmpOp::Ge, text(&start)))
                .and(Filter::cmp("RowKey", CmpOp::Lt, text(&end))),
        ),
        select: None,
        top: Some(1000),
    };
    let hits = raw_query(db, table, &request).await?;
    let entities: Vec<Option<Row>> = futures::stream::iter(hits)
        .map(|hit| async move {
            let row_key = hit
                .get(INDEX_ROW)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            db.backend().get(table, partition, &row_key).await
        })
        .buffer_unordered(16)
        .try_collect()
        .await?;
    Ok(entities.into_iter().flatten().collect())
}

/// The filtered partition query made raw, leaving out the index rows as a
/// plain reader of the table does.
pub(crate) async fn raw_filtered(db: &Tables, table: &str, partition: &str) -> Result<Vec<Row>, Failure> {
    let request = QueryRequest {
        filter: Some(
            Filter::eq("PartitionKey", Value::String(partition.to_owned()))
                .and(entities_only())
                .and(Filter::eq("Label", Value::String(WANTED.into()))),
        ),
        select: None,
        top: Some(1000),
    };
    raw_query(db, table, &request).await
}

/// The index row of `entity` as the build writes it, built by hand.
pub(crate) fn raw_index_row(entity: &Row) -> Option<Row> {
    let label = entity.get("Label")?.as_str()?.to_owned();
    let key = format!(
        "{}{label}{INDEX_VALUE_END}{}",
        index_key_prefix("label"),
        entity.row_key
    );
    let mut row = Row::new(entity.partition_key.clone(), key);
    row.insert(INDEX_OF, Value::String("label".into()));
    row.insert(INDEX_ON, Value::String("Label".into()));
    row.insert(INDEX_ROW, Value::String(entity.row_key.clone()));
    row.insert("Label", Value::String(label));
    Some(row)
}

/// A raw scan of `table`, page by page, each page's index rows upserted
/// into it in raw transactions of 100 (as the build writes them, beside
/// their entities, where the scan's filter passes over them): the time and
/// the rows written.
pub(crate) async fn raw_build(db: &Tables, table: &str) -> Result<(Duration, u64), Failure> {
    let request = QueryRequest {
        filter: Some(entities_only()),
        select: None,
        top: Some(1000),
    };
    let started = Instant::now();
    let mut token: Option<PageToken> = None;
    let mut written = 0;
    loop {
        let page = db.backend().query(table, &request, token.as_ref()).await?;
        let rows: Vec<Row> = page.rows.iter().filter_map(raw_index_row).collect();
        for chunk in rows.chunks(100) {
            let ops = chunk
                .iter()
                .map(|row| WriteOp::Upsert {
                    row: row.clone(),
                    mode: UpdateMode::Replace,
                })
                .collect();
            db.backend().transaction(table, ops).await?;
            written += chunk.len() as u64;
        }
        match page.next {
            Some(t) => token = Some(t),
            None => return Ok((started.elapsed(), written)),
        }
    }
}
