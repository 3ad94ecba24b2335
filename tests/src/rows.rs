//! Raw rows of a scenario's table in partition `p`, read and written past
//! the store: how scenarios look at what is stored and damage it.

use unified_tables::backend::{Backend, UpdateMode, WriteOp};
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
