//! `Store::converge`: old rows rewritten in the form the type writes today,
//! a dry run that changes nothing, a resumable position, a rate limit,
//! concurrent writers that lose no update, and a throttled rewrite sent again.

use std::time::Instant;

use futures::TryStreamExt;
use unified_tables::backend::faulty::{FaultTarget, FaultTiming, FaultyBackend};
use unified_tables::backend::Backend;
use unified_tables::{ConvergeOptions, ConvergeStep, Converged};
use unified_tables::{ETag, Error, Key, Row, TableEntity, Tables, Value};

use crate::gate::{GateBackend, Point};
use crate::Env;

/// A counter whose column was once called `Hits`.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct Counter {
    #[table(partition_key)]
    pub pk: String,
    #[table(row_key)]
    pub rk: String,
    #[alias("Hits")]
    pub count: i64,
    #[table(etag)]
    pub etag: Option<ETag>,
}

async fn put_raw(env: &Env, row: Row) {
    env.backend().create_table(&env.table).await.unwrap();
    env.put_raw(row).await;
}

async fn etag(env: &Env, rk: &str) -> ETag {
    let row = env.backend().get(&env.table, "p", rk).await.unwrap().expect("row");
    row.etag.expect("an etag")
}

fn outcome<'s>(steps: &'s [ConvergeStep], rk: &str) -> &'s Converged {
    &steps.iter().find(|s| s.position.row_key == rk).expect("a step").outcome
}

pub async fn converge_rewrites_old_rows_and_a_dry_run_changes_nothing(env: &Env) {
    let store = env.tables.store_in::<Counter>(&env.table);
    for i in 0..4 {
        put_raw(env, Row::new("p", format!("old{i}")).with("Hits", Value::Int64(i))).await;
    }
    put_raw(
        env,
        Row::new("p", "foreign")
            .with("Count", Value::Int64(1))
            .with("Other", Value::Int32(2)),
    )
    .await;
    store
        .create(&mut Counter {
            pk: "p".into(),
            rk: "new".into(),
            count: 9,
            etag: None,
        })
        .await
        .unwrap();
    let before = etag(env, "old0").await;

    let dry = ConvergeOptions {
        dry_run: true,
        ..ConvergeOptions::default()
    };
    let steps: Vec<ConvergeStep> = store.converge(dry).try_collect().await.unwrap();
    assert_eq!(steps.len(), 6);
    assert!(matches!(outcome(&steps, "old0"), Converged::WouldRewrite(why) if why.contains("Count")));
    assert!(matches!(outcome(&steps, "foreign"), Converged::Skipped(why) if why.contains("Other")));
    assert_eq!(outcome(&steps, "new"), &Converged::Unchanged);
    assert_eq!((steps[5].rewritten, steps[5].skipped), (4, 1));
    assert_eq!(etag(env, "old0").await, before, "a dry run writes nothing");

    // Resumed after the first old row, at most 20 rewrites a second.
    let resumed = ConvergeOptions {
        after: Some(Key::new("p", "old0")),
        max_rewrites_per_second: Some(20),
        ..ConvergeOptions::default()
    };
    let started = Instant::now();
    let steps: Vec<ConvergeStep> = store.converge(resumed).try_collect().await.unwrap();
    assert!(started.elapsed().as_millis() >= 100, "three rewrites at 20 a second");
    assert_eq!(steps.first().map(|s| s.position.row_key.as_str()), Some("old1"));
    assert_eq!(steps.last().map(|s| s.rewritten), Some(3));
    assert_eq!(etag(env, "old0").await, before, "before the position: untouched");
    let row = env.backend().get(&env.table, "p", "old2").await.unwrap().unwrap();
    assert_eq!((row.get("Count"), row.get("Hits")), (Some(&Value::Int64(2)), None));

    // The whole table: the one left is rewritten, then nothing differs.
    let steps: Vec<ConvergeStep> = store.converge(ConvergeOptions::default()).try_collect().await.unwrap();
    assert!(matches!(outcome(&steps, "old0"), Converged::Rewritten(_)));
    assert_eq!(steps.last().map(|s| s.rewritten), Some(1));
    let again: Vec<ConvergeStep> = store.converge(ConvergeOptions::default()).try_collect().await.unwrap();
    assert_eq!(again.last().map(|s| (s.rewritten, s.skipped)), Some((0, 1)));
    let foreign = env.backend().get(&env.table, "p", "foreign").await.unwrap().unwrap();
    assert_eq!(
        foreign.get("Other"),
        Some(&Value::Int32(2)),
        "a row with foreign columns is never rewritten"
    );
}

pub async fn converge_loses_no_concurrent_update(env: &Env) {
    put_raw(env, Row::new("p", "c").with("Hits", Value::Int64(10))).await;
    let gate = GateBackend::new(env.backend().clone());
    let gated = Tables::with_backend(gate.clone()).store_in::<Counter>(&env.table);
    let writer = env.tables.store_in::<Counter>(&env.table);

    // The converge's rewrite is held just before it is sent; meanwhile another writer adds one.
    let hold = gate.arm(Point::BeforeWrite);
    let run = tokio::spawn(async move {
        gated
            .converge(ConvergeOptions::default())
            .try_collect::<Vec<ConvergeStep>>()
            .await
    });
    hold.reached.await.expect("the rewrite is about to be sent");
    writer.mutate(("p", "c"), |c| c.count += 1).await.unwrap();
    let _ = hold.release.send(());
    let steps = run.await.unwrap().unwrap();
    // Its write found the row changed: read again, the new version needs no rewrite.
    assert_eq!(steps[0].outcome, Converged::Unchanged, "{steps:?}");
    let now = writer.get(("p", "c")).await.unwrap().unwrap();
    assert_eq!(now.count, 11, "the concurrent update survived the rewrite");
    let row = env.backend().get(&env.table, "p", "c").await.unwrap().unwrap();
    assert!(row.get("Hits").is_none(), "converged: {row:?}");
}

/// Convergence rewrites through the store's write pipeline: a rewrite
/// refused as not processed (503 `ServerBusy`) is sent again after the
/// retry policy's backoff, one whose answer was lost is settled by its
/// write token, and the run finishes with every row converged once.
pub async fn converge_rides_out_a_throttled_rewrite(env: &Env) {
    for i in 0..3 {
        put_raw(env, Row::new("p", format!("old{i}")).with("Hits", Value::Int64(i))).await;
    }
    let faulty = FaultyBackend::new(env.backend().clone());
    let store = Tables::with_backend(faulty.clone())
        .without_cache()
        .store_in::<Counter>(&env.table);
    faulty.fail_after(FaultTarget::Write, 1, FaultTiming::Before, || {
        Error::service(503, "ServerBusy", "The server is busy.")
    });
    faulty.fail_after(FaultTarget::Write, 1, FaultTiming::After, || {
        Error::transport("the answer was lost")
    });
    let steps: Vec<ConvergeStep> = store.converge(ConvergeOptions::default()).try_collect().await.unwrap();
    assert_eq!(faulty.pending(), 0, "both faults fired");
    assert_eq!(
        steps.last().map(|s| (s.checked, s.rewritten)),
        Some((3, 3)),
        "{steps:?}"
    );
    for i in 0..3 {
        let row = env
            .backend()
            .get(&env.table, "p", &format!("old{i}"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!((row.get("Count"), row.get("Hits")), (Some(&Value::Int64(i)), None));
    }
}
