//! Raw rows of a scenario's table in partition `p`, read and written past
//! the store: how scenarios look at what is stored and damage it.

use unified_tables::backend::{Backend, PageToken, QueryRequest, UpdateMode, WriteOp};
use unified_tables::{Row, Value};

use crate::Env;

/// The stored main row `rk` of partition `p` (panics when there is none).
pub async fn raw(env: &Env, rk: &str) -> Row {
    env.backend().get(&env.table, "p", rk).await.unwrap().expect("main row")
}

/// Stores `row` as it is, replacing any row at its keys.
pub async fn put_back(env: &Env, row: Row) {
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
}

/// The continuation rows a main row declares (`_SplitParts`), or -1 when the cell is absent.
pub fn part_count(row: &Row) -> i32 {
    match row.get("_SplitParts") {
        Some(Value::Int32(n)) => *n,
        _ => -1,
    }
}

/// Every row `request` matches in `table`, following the service's page
/// tokens to the end (a service may cut pages anywhere, empty ones
/// included), in the order the pages bring them.
pub async fn all_rows(env: &Env, table: &str, request: &QueryRequest) -> Vec<Row> {
    rows_after(env, table, request, None).await
}

/// The rows of `request` from `token` on (from the start when `None`),
/// following the page tokens to the end.
pub async fn rows_after(env: &Env, table: &str, request: &QueryRequest, token: Option<PageToken>) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut token = token;
    loop {
        let page = env.backend().query(table, request, token.as_ref()).await.unwrap();
        rows.extend(page.rows);
        match page.next {
            Some(next) => token = Some(next),
            None => return rows,
        }
    }
}

/// `n`, a size chosen against Table Storage's transaction body budget,
/// scaled to the budget of `env`'s service: the same `n` on Table Storage,
/// less on a service whose transactions hold less (Cosmos DB for Table).
pub fn scaled_to_budget(env: &Env, n: usize) -> usize {
    use unified_tables::service::ServiceProfile;
    let budget = env.profile().transaction_body_budget();
    let table_storage = ServiceProfile::TableStorage.transaction_body_budget();
    if budget == table_storage {
        n
    } else {
        (n as u128 * budget as u128 / table_storage as u128) as usize
    }
}
